"""The lean HTTP client's response parsing, fed bytes as a server would send them (split anywhere)."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from eval_harness.providers._transport import (
    ConnectionDropped,
    ConnectionPool,
    MalformedResponse,
    RawResponse,
    ReadTimedOut,
    ResponseHead,
    StaleConnection,
    _Connection,
)

HOSTED = (
    b"HTTP/1.1 200 OK\r\n"
    b"Date: Sun, 29 Nov 2026 21:14:03 GMT\r\n"
    b"Content-Type: application/json\r\n"
    b"Content-Length: 11\r\n"
    b"Connection: keep-alive\r\n"
    b"Set-Cookie: a=1; path=/\r\n"
    b"x-ratelimit-remaining-requests:   9999  \r\n"
    b"set-cookie: b=2\r\n"
    b"X-Request-ID: req_abc\r\n"
    b"\r\n"
    b'{"ok": true}'
)


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True


async def exchange(*chunks: bytes) -> tuple[RawResponse | BaseException, bool]:
    """Send one request on a fresh connection, feed ``chunks`` as the response; the response (or error) and
    whether the connection was closed."""
    loop = asyncio.get_running_loop()
    connection = _Connection(loop, memoryview(bytearray(64 * 1024)))
    transport = _Transport()
    connection.connection_made(transport)
    pending = asyncio.ensure_future(connection.round_trip(b"POST / HTTP/1.1\r\n\r\n"))
    await asyncio.sleep(0)
    for chunk in chunks:
        connection.data_received(chunk)
    if not pending.done():
        connection.connection_lost(None)
    try:
        return await pending, transport.closed
    except Exception as exc:  # the test inspects it
        return exc, transport.closed


async def test_headers_are_looked_up_by_any_case_and_repeated_ones_joined() -> None:
    response, _ = await exchange(HOSTED)
    assert isinstance(response, RawResponse)
    assert response.status == 200
    assert response.body == b'{"ok": true'  # exactly Content-Length (11) bytes; the extra byte is not body
    headers = response.headers
    assert headers.get("x-request-id") == headers["X-Request-Id"] == "req_abc"
    assert headers.get("x-ratelimit-remaining-requests") == "9999"  # surrounding blanks stripped
    assert headers.get("set-cookie") == "a=1; path=/, b=2"
    assert headers.get("retry-after") is None and headers.get("retry-after", "none") == "none"
    assert "content-type" in headers and len(headers) == 7  # eight lines, set-cookie twice
    assert dict(headers)["date"] == "Sun, 29 Nov 2026 21:14:03 GMT"


async def test_bytes_beyond_the_declared_length_close_the_connection() -> None:
    # A keep-alive connection must not be reused when the server sent more than it declared.
    _, closed = await exchange(HOSTED)
    assert closed


@pytest.mark.parametrize("cut", [1, 17, 40, len(HOSTED) - 3])
async def test_a_response_split_anywhere_parses_the_same(cut: int) -> None:
    exact = HOSTED[:-1]  # the declared 11 bytes of body, nothing more
    response, closed = await exchange(exact[:cut], exact[cut:])
    assert isinstance(response, RawResponse) and not closed
    assert response.body == b'{"ok": true' and response.headers.get("x-request-id") == "req_abc"


async def test_chunked_bodies_and_interim_responses() -> None:
    response, _ = await exchange(
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n"
    )
    assert isinstance(response, RawResponse)
    assert response.status == 200 and response.body == b"hello world"


async def test_connection_close_and_read_until_close() -> None:
    response, closed = await exchange(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npartial body")
    assert isinstance(response, RawResponse) and closed
    assert response.body == b"partial body"


async def test_garbage_is_a_malformed_response() -> None:
    error, closed = await exchange(b"<html>Bad Gateway</html>\r\n\r\n")
    assert isinstance(error, MalformedResponse) and closed
    error, _ = await exchange(b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n")
    assert isinstance(error, MalformedResponse) and "Content-Length" in str(error)


def test_a_line_without_a_colon_is_ignored() -> None:
    head = ResponseHead(b"x-a: 1\r\nnot a header\r\nx-b: 2")
    assert head.pairs() == [(b"x-a", b"1"), (b"x-b", b"2")]
    assert head.get("x-b") == "2" and len(head) == 2


class _TricklingServer:
    """A loopback server that answers each request with ``pieces``, pausing ``pause_s`` before each, and then
    holds the connection open until closed: only the client's read timeout can end a stalled answer."""

    def __init__(self, pause_s: float, pieces: list[bytes]) -> None:
        self.pause_s = pause_s
        self.pieces = pieces
        self.done = asyncio.Event()
        self.handlers: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> int:
        self.server = await asyncio.start_server(self._answer, "127.0.0.1", 0)
        return int(self.server.sockets[0].getsockname()[1])

    async def __aexit__(self, *exc: object) -> None:
        self.done.set()
        await asyncio.gather(*self.handlers)
        self.server.close()
        await self.server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        try:
            await reader.readuntil(b"\r\n\r\n")
            for piece in self.pieces:
                await asyncio.sleep(self.pause_s)
                writer.write(piece)
                await writer.drain()
            await self.done.wait()
        except ConnectionError:
            pass  # the client gave up and closed
        finally:
            writer.close()


async def test_the_read_timeout_bounds_silence_not_the_whole_answer() -> None:
    body = b"0123456789"
    pieces = [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", *(body[i : i + 2] for i in range(0, 10, 2))]
    pool = ConnectionPool(2, connect_timeout=1.0, read_timeout=0.3)
    async with _TricklingServer(0.1, pieces) as port:  # 0.6 s in all, never 0.3 s silent
        response = await pool.exchange(("http", "127.0.0.1", port), b"GET / HTTP/1.1\r\n\r\n")
        await pool.aclose()
    assert response.status == 200 and response.body == body


async def test_a_silent_answer_fails_once_silent_for_the_read_timeout() -> None:
    pool = ConnectionPool(2, connect_timeout=1.0, read_timeout=0.2)
    loop = asyncio.get_running_loop()
    async with _TricklingServer(0.05, [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01"]) as port:
        started = loop.time()
        with pytest.raises(ReadTimedOut, match=r"no data for 0\.2s"):
            await pool.exchange(("http", "127.0.0.1", port), b"GET / HTTP/1.1\r\n\r\n")
        elapsed = loop.time() - started
        await pool.aclose()
    # the silence is counted from the last byte (at 0.05 s or later), on the loop's clock that the watchdog reads:
    # a lower bound no load can break (how soon after the timeout it fails is the bench's business, not a test's)
    assert elapsed >= 0.05 + 0.2


async def test_content_length_repeated_identical_is_one_length_anything_else_is_malformed() -> None:
    response, _ = await exchange(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nok")
    assert isinstance(response, RawResponse) and response.body == b"ok"
    for bad in (b"2, 3", b"\xb2", b"-1", b""):
        error, _ = await exchange(b"HTTP/1.1 200 OK\r\nContent-Length: " + bad + b"\r\n\r\nok")
        assert isinstance(error, MalformedResponse), bad


async def test_blanks_before_a_colon_are_read_as_a_lenient_client_would() -> None:
    response, _ = await exchange(b"HTTP/1.1 200 OK\r\nContent-Length : 2\r\nX-Request-Id\t: r1 \x0b\r\n\r\nok")
    assert isinstance(response, RawResponse) and response.body == b"ok"
    head = response.headers
    assert head.get("x-request-id") == "r1" and head["content-length"] == "2"
    assert dict(head) == {"content-length": "2", "x-request-id": "r1"}  # lookups and iteration agree


async def test_closing_the_pool_keeps_the_read_timeout_of_answers_in_flight() -> None:
    pool = ConnectionPool(2, connect_timeout=1.0, read_timeout=0.2)
    async with _TricklingServer(0.01, [b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01"]) as port:
        pending = asyncio.ensure_future(pool.exchange(("http", "127.0.0.1", port), b"GET / HTTP/1.1\r\n\r\n"))
        await asyncio.sleep(0.05)
        await pool.aclose()
        with pytest.raises(ReadTimedOut):
            await asyncio.wait_for(pending, 2)


class _LoopbackServer:
    """A server on 127.0.0.1 for the length of an ``async with`` (its port), answering each connection with
    ``_answer``; ``requests`` counts what the subclass counts."""

    ssl_context: ssl.SSLContext | None = None

    async def __aenter__(self) -> int:
        self.requests = 0
        self.server = await asyncio.start_server(self._answer, "127.0.0.1", 0, ssl=self.ssl_context)
        return int(self.server.sockets[0].getsockname()[1])

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._serve(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed first
        finally:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


class _BulkServer(_LoopbackServer):
    """A loopback server (TLS when given a context) answering every request on a connection with the same
    large chunked body, in pieces smaller and larger than the client's read buffer; with ``overrun``, one
    ``Content-Length`` answer followed by that many bytes the response did not declare."""

    def __init__(self, body: bytes, ssl_context: ssl.SSLContext | None = None, overrun: int = 0) -> None:
        self.body = body
        self.ssl_context = ssl_context
        self.overrun = overrun

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.overrun:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(self.body), self.body))
            writer.write(b"J" * self.overrun)
            await writer.drain()
            return
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            for start, size in ((0, 7), (7, 100_000), (100_007, len(self.body))):
                piece = self.body[start : start + size]
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()


def _big_body() -> bytes:
    return bytes(range(256)) * 1200  # 307,200 bytes: several reads of the 64 KiB buffer


async def test_large_bodies_on_concurrent_connections_arrive_whole() -> None:
    """The pool's connections share one read buffer: interleaved reads must not mix their bytes."""
    body = _big_body()
    pool = ConnectionPool(4, connect_timeout=1.0, read_timeout=5.0)
    async with _BulkServer(body) as port:
        origin = ("http", "127.0.0.1", port)
        responses = await asyncio.gather(*(pool.exchange(origin, b"GET / HTTP/1.1\r\n\r\n") for _ in range(8)))
        await pool.aclose()
    assert [r.body == body for r in responses] == [True] * 8


def _self_signed(tmp_path: Path) -> Path:
    """A certificate for 127.0.0.1 and its key in one PEM file, made by the openssl command."""
    pem = tmp_path / "loopback.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(pem), "-out", str(pem)],
        check=True, capture_output=True,
    )  # fmt: skip
    return pem


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
async def test_tls_answers_arrive_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pem = _self_signed(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(pem)
    monkeypatch.setenv("SSL_CERT_FILE", str(pem))  # the pool trusts this certificate and no other
    body = _big_body()
    pool = ConnectionPool(2, connect_timeout=5.0, read_timeout=5.0)
    async with _BulkServer(body, server_context) as port:
        origin = ("https", "127.0.0.1", port)
        first = await pool.exchange(origin, b"GET / HTTP/1.1\r\n\r\n")
        second = await pool.exchange(origin, b"GET / HTTP/1.1\r\n\r\n")  # the same kept-alive connection
        await pool.aclose()
    assert first.status == second.status == 200 and first.body == second.body == body


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
async def test_bytes_beyond_a_tls_answer_never_replace_its_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing a TLS connection reads what is still buffered; bytes after a complete answer (more than the
    read buffer holds) must not be taken for that answer's body."""
    pem = _self_signed(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(pem)
    monkeypatch.setenv("SSL_CERT_FILE", str(pem))
    body = b"B" * 1000
    pool = ConnectionPool(2, connect_timeout=5.0, read_timeout=5.0)
    async with _BulkServer(body, server_context, overrun=300_000) as port:
        bodies = [(await pool.exchange(("https", "127.0.0.1", port), b"GET / HTTP/1.1\r\n\r\n")).body for _ in range(5)]
        await pool.aclose()
    assert bodies == [body] * 5


class _ClosingServer(_LoopbackServer):
    """A loopback server that answers each connection's first request with a chunked body and then closes it,
    without a ``Connection: close`` header: what llama.cpp's server does after a streamed answer."""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.requests += 1
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nTransfer-Encoding: chunked\r\n\r\n")
        writer.write(b"5\r\nhello\r\n0\r\n\r\n")
        await writer.drain()


async def test_a_pooled_connection_the_server_closed_after_its_answer_is_not_reused() -> None:
    # the server's FIN is in the kernel before the next request, but the loop has not read it yet: reusing the
    # connection sent the request into a closed socket (StaleConnection: 24 of 40 llama.cpp streamed samples
    # retried, 19 of 40 failed under --max-retries 0)
    pool = ConnectionPool(1, connect_timeout=1.0, read_timeout=5.0)
    async with _ClosingServer() as port:
        origin = ("http", "127.0.0.1", port)
        for _ in range(20):
            response = await pool.exchange(origin, b"POST / HTTP/1.1\r\n\r\n")
            assert response.body == b"hello"
        await pool.aclose()


class _HangUpOnSecondRequestServer(_LoopbackServer):
    """Answers the first request of each connection and keeps it alive, then closes it on the second request
    without a byte of answer: at once, a keep-alive connection that died while the request was on its way;
    after ``work_s``, a worker that crashed mid-generation (the server saw it: sending it again could bill twice)."""

    def __init__(self, work_s: float = 0.0) -> None:
        self.work_s = work_s

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        self.requests += 1
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        await reader.readuntil(b"\r\n\r\n")
        self.requests += 1
        await asyncio.sleep(self.work_s)


async def test_a_request_a_kept_alive_connection_dropped_unanswered_goes_once_more_on_a_fresh_one() -> None:
    pool = ConnectionPool(1, connect_timeout=1.0, read_timeout=5.0)
    server = _HangUpOnSecondRequestServer()
    async with server as port:
        origin = ("http", "127.0.0.1", port)
        first = await pool.exchange(origin, b"POST / HTTP/1.1\r\n\r\n")
        second = await pool.exchange(origin, b"POST / HTTP/1.1\r\n\r\n")  # reused, dropped, sent again fresh
        await pool.aclose()
    assert (first.body, second.body) == (b"ok", b"ok")
    assert server.requests == 3  # the dropped one, then the same request on a new connection


class _HangUpServer(_LoopbackServer):
    """Reads each request and closes the connection without answering."""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        self.requests += 1


async def test_a_fresh_connection_dropped_unanswered_is_not_sent_again() -> None:
    pool = ConnectionPool(1, connect_timeout=1.0, read_timeout=5.0)
    server = _HangUpServer()
    async with server as port:
        with pytest.raises(ConnectionDropped) as raised:
            await pool.exchange(("http", "127.0.0.1", port), b"POST / HTTP/1.1\r\n\r\n")
        await pool.aclose()
    assert not isinstance(raised.value, StaleConnection)  # the gateway's retries decide, counted
    assert server.requests == 1


async def test_a_request_dropped_after_the_server_worked_on_it_is_left_to_the_counted_retries() -> None:
    pool = ConnectionPool(1, connect_timeout=1.0, read_timeout=5.0)
    server = _HangUpOnSecondRequestServer(work_s=0.5)
    async with server as port:
        origin = ("http", "127.0.0.1", port)
        await pool.exchange(origin, b"POST / HTTP/1.1\r\n\r\n")
        with pytest.raises(StaleConnection) as raised:
            await pool.exchange(origin, b"POST / HTTP/1.1\r\n\r\n")
        await pool.aclose()
    # the server worked 0.5 s before it hung up: past the 0.25 s within which a drop is taken for a close that
    # crossed the request (a threshold of the classification, not a speed; the measured time cannot be shorter)
    assert raised.value.after_s >= 0.5 - 0.01
    assert server.requests == 2  # not sent again unasked
