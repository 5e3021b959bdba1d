"""A lean HTTP/1.1 client pool: asyncio protocols and an O(1) connection pool.

Why not httpx's default transport: httpcore's pool checks every pooled connection for readability (a
``getpeername`` system call each) for every request it assigns, which at 64 requests in flight costs ~20 ms
of CPU per request, so a 64-wide run became CPU-bound at 7x its physical limit (bench/throughput.py,
"httpx" rows). No library in our set offers another asyncio HTTP pool. It speaks only what LLM APIs need:
HTTP/1.1 over TCP or TLS, Content-Length, chunked and read-until-close bodies, keep-alive. No proxies and
no HTTP/2: ``--model-arg http_transport=httpx`` selects httpx for those. ``_wires.PooledWire`` uses it
directly; ``_httpx_pool.PooledTransport`` puts it under an ``httpx.AsyncClient``.

Timeouts: ``connect`` bounds the TCP/TLS handshake and ``read`` the longest silence while a response is
awaited; one periodic check per pool enforces ``read`` (a timer per request costs a handle and two heap
operations on every request), so a silent connection fails at most a quarter of the timeout (at most 1 s)
after the timeout. A pooled connection is checked before it is reused: one whose socket
is readable while idle holds the server's FIN (or bytes nobody asked for) and is closed instead. A request on a
keep-alive connection that still closes before any byte of the response came back (the server closed it
while the request was on its way: llama.cpp's server closes a connection a moment after a streamed answer,
and 4 of 40 such requests met it after the check) within 0.25 s of the request is sent once more on a fresh
connection, as curl and browsers do, and not counted as a retry: a close that soon crossed the request on
the wire (the server log of that audit showed each such request reaching it exactly once). A later close
(the server may have worked on the request) raises ``StaleConnection``, and a fresh connection that fails
the same way ``ConnectionDropped``: the gateway retries either, counted (``--max-retries``).

Size: a response body longer than ``max_body`` bytes (``MAX_RESPONSE_BYTES`` by default) fails with
``ResponseTooLarge`` as soon as its head announces it (Content-Length, a chunk's size) or its bytes pass the
bound, and its connection is aborted, never reused: without a bound, a server that sends forever (or a
proxy's loop) grew the process at wire speed until the timeout, ~5 GB in 20 s for one request.
"""

from __future__ import annotations

import asyncio
import os
import select
import ssl
from collections import deque
from collections.abc import Iterator, Mapping
from typing import NamedTuple, TypeVar, overload

_MAX_HEAD_BYTES = 64 * 1024
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""The default bound of a response body, with room to spare for any real answer: the longest, 128k output
tokens streamed as Chat Completions events (~290 bytes each, one a token), is ~36 MiB, past 32 MiB; the same
answer unstreamed ~1 MiB. A body past it costs at most about twice this much memory per request in flight."""
_READ_CHUNK = 64 * 1024
Origin = tuple[str, str, int]


class TransportError(Exception):
    """A request failed below HTTP: the connection, the framing or a timeout."""

    head: ResponseHead | None = None
    """The response's head when the failure came after it (a body cut off): its request id is still the server's."""


class ConnectFailed(TransportError):
    """The TCP/TLS connection could not be made."""


class TLSRefused(TransportError):
    """The TLS handshake failed for good (``tls_refusal`` says why): a retry would fail the same way."""


class ConnectTimedOut(TransportError):
    """The TCP/TLS handshake took longer than the connect timeout."""


class ReadTimedOut(TransportError):
    """No byte of the response arrived for longer than the read timeout."""


class ConnectionDropped(TransportError):
    """The server closed or reset the connection before the response ended."""


class StaleConnection(ConnectionDropped):
    """A kept-alive connection closed before any byte of the response came back, ``after_s`` seconds after
    the request was written: at once, the server had just closed it as idle and never saw the request; later,
    it may have processed it, so a retry is the caller's to count and to bound (``--max-retries``)."""

    def __init__(self, message: str, after_s: float = 0.0) -> None:
        super().__init__(message)
        self.after_s = after_s


# A close this soon after the request was written crossed it on the wire (a server closing an idle
# connection); later, the server may have worked on the request (a worker that crashed mid-generation, a proxy
# timeout), and sending it again unasked could bill it twice.
_CROSSED_S = 0.25


class MalformedResponse(TransportError):
    """The bytes received are not an HTTP/1.x response."""


class ResponseTooLarge(TransportError):
    """The response body is longer than the pool's ``max_body``, announced or as received."""

    def __init__(self, limit: int, status: int, how: str) -> None:
        super().__init__(too_large(limit, status, how))
        self.limit, self.status, self.how = limit, status, how


RAISE_THE_LIMIT = "; --model-arg max_response_bytes=N raises the limit (a resume may give it)"
"""How ``too_large`` says the limit is raised, for the model (a judge's provider says it its own way)."""


def too_large(limit: int, status: int, how: str, *, settable: bool = True) -> str:
    """The message of a body over ``limit`` bytes: ``response body over 64 MiB (HTTP 200, Content-Length 9e9)``,
    and how to raise it where a model arg can (``settable``)."""
    size = f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit} bytes"
    hint = RAISE_THE_LIMIT if settable else ""
    return f"response body over {size} (HTTP {status}, {how}){hint}"


_T = TypeVar("_T")
_CONTENT_LENGTH = b"\r\ncontent-length:"
_TRANSFER_ENCODING = b"\r\ntransfer-encoding:"
_CONNECTION = b"\r\nconnection:"


class ResponseHead(Mapping[str, str]):
    """A response's header lines, looked up by lower-case name; a repeated header's values joined by ", ".

    Why not a dict: building one decodes and splits every line (a hosted API sends ~20; ~8 µs each
    response), while a successful response is asked for two or three headers. A lookup here is one search
    of the lower-cased lines; iterating parses them all once. A line without a colon is not a header and
    is ignored, as curl and browsers do, rather than checked on every response.
    """

    __slots__ = ("_block", "_lowered", "_odd", "_parsed")

    def __init__(self, block: bytes) -> None:
        self._block = block  # the lines after the status line, separated by CRLF
        self._lowered = b"\r\n" + block.lower()
        # RFC 9112 forbids blanks between a name and its colon, but a lenient reader accepts them: only then
        # does a lookup need the parsed lines.
        self._odd = b" :" in block or b"\t:" in block
        self._parsed: dict[str, str] | None = None

    @overload
    def get(self, name: str, /) -> str | None: ...
    @overload
    def get(self, name: str, default: str, /) -> str: ...
    @overload
    def get(self, name: str, default: _T, /) -> str | _T: ...
    def get(self, name: str, default: object = None, /) -> object:
        value = self.lookup(b"\r\n" + name.lower().encode("latin-1") + b":")
        return default if value is None else value

    def lookup(self, key: bytes) -> str | None:
        """The value of the header whose lower-case ``key`` is ``b"\\r\\n" + name + b":"``, or None."""
        lowered = self._lowered
        found = lowered.find(key)
        if found < 0:
            if self._odd:  # a name with blanks before its colon: ask the parsed lines
                return self._all().get(key[2:-1].decode("latin-1"))
            return None
        values = []
        while found >= 0:
            start = found + len(key)
            end = lowered.find(b"\r\n", start)
            end = len(lowered) if end < 0 else end
            values.append(self._block[start - 2 : end - 2].strip().decode("latin-1"))
            found = lowered.find(key, end)
        return values[0] if len(values) == 1 else ", ".join(values)

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def _all(self) -> dict[str, str]:
        if self._parsed is None:
            parsed: dict[str, str] = {}
            for name, value in self.pairs():
                key = name.decode("latin-1").lower()
                text = value.decode("latin-1")
                parsed[key] = f"{parsed[key]}, {text}" if key in parsed else text
            self._parsed = parsed
        return self._parsed

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def pairs(self) -> list[tuple[bytes, bytes]]:
        """Every header line as (name, value), in order, as sent; a line without a colon is left out."""
        if not self._block:
            return []
        split = (line.partition(b":") for line in self._block.split(b"\r\n"))
        return [(name.strip(), value.strip()) for name, colon, value in split if colon]

    def __repr__(self) -> str:
        return f"ResponseHead({self._all()!r})"


class RawResponse(NamedTuple):
    """A whole response: status, header lines, body as received."""

    status: int
    headers: ResponseHead
    body: bytes


def origin_of(scheme: str, host: str, port: int | None) -> Origin:
    """The pool key of a URL: scheme, host and port (defaulted from the scheme)."""
    return (scheme, host, port or (443 if scheme == "https" else 80))


class _Connection(asyncio.BufferedProtocol):
    """One keep-alive connection; parses exactly one response at a time.

    A buffered protocol: asyncio receives into ``read_buffer`` (shared by the pool's connections, which
    are read one at a time on one loop) instead of into a new 256 KiB ``bytes`` per read, whose allocation
    and shrinking cost ~20 µs, twice the system call itself, for a 1 KB answer.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, read_buffer: memoryview, max_body: int = MAX_RESPONSE_BYTES
    ) -> None:
        self._loop = loop
        self._read_buffer = read_buffer
        self._max_body = max_body
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.received_any = False  # a stale keep-alive socket never gets a byte back
        self._buffer = bytearray()
        self._waiter: asyncio.Future[RawResponse] | None = None
        self._status = 0
        self._headers: ResponseHead | None = None
        self._framing = ""  # "length" | "chunked" | "close"
        self._remaining = 0
        self._body = bytearray()
        self._keep_alive = True
        self.last_activity = 0.0

    # asyncio.Protocol callbacks -------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        self.data_received(self._read_buffer[:nbytes])

    def data_received(self, data: bytes | memoryview) -> None:
        if self.closed or self._waiter is None or self._waiter.done():
            self.close()  # bytes nobody asked for: the connection cannot be trusted any more
            return
        self.received_any = True
        self.last_activity = self._loop.time()
        self._buffer += data
        try:
            self._parse()
        except ResponseTooLarge as exc:
            self.abort()  # not close: closing a TLS connection reads on what the server still sends
            self._fail(exc)
        except MalformedResponse as exc:
            self._fail(exc)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._waiter is None or self._waiter.done():
            return
        if self._headers is not None and self._framing == "close":
            self._body += self._buffer
            self._finish(keep_alive=False)
        elif exc is not None:
            self._fail(ConnectionDropped(f"connection lost: {exc}"))
        else:
            self._fail(ConnectionDropped("server closed the connection before the response ended"))

    # request/response -----------------------------------------------------------------------------------
    async def round_trip(self, data: bytes) -> RawResponse:
        """Send one serialized request and read its whole response (the pool enforces the read timeout)."""
        if self.closed or self.transport is None or self.transport.is_closing():
            raise ConnectionDropped("connection closed")
        self._waiter = self._loop.create_future()
        self._status = 0
        self._headers = None
        self._framing = ""
        self._body = bytearray()
        self._keep_alive = True
        self.received_any = False
        self.last_activity = self._loop.time()
        try:
            self.transport.write(data)
            return await self._waiter
        finally:
            self._waiter = None

    def time_out(self, read_timeout: float) -> None:
        """The response has been silent for ``read_timeout`` seconds: fail it."""
        self._fail(ReadTimedOut(f"no data for {read_timeout:g}s"))

    def _fail(self, exc: Exception) -> None:
        if self._headers is not None and isinstance(exc, TransportError):
            exc.head = self._headers
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(exc)
        self.close()

    def _finish(self, keep_alive: bool) -> None:
        assert self._headers is not None and self._waiter is not None
        if not self._waiter.done():
            self._waiter.set_result(RawResponse(self._status, self._headers, bytes(self._body)))
        self._body = bytearray()  # a parked connection would hold its last body (up to max_body) until reused
        # Closed only after the answer is settled: closing a TLS connection reads what it still holds, and
        # those bytes (beyond the answer) arrive here as data nobody asked for, not as this answer's body.
        if not (keep_alive and self._keep_alive):
            self.close()

    def close(self) -> None:
        """Close the socket (idempotent)."""
        self.closed = True
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def abort(self) -> None:
        """Close the socket at once: a TLS connection's ``close`` sends its close-notify and waits for the
        loop to finish, and a pool closed as its loop ends would leave the socket open (ResourceWarning)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    # parsing --------------------------------------------------------------------------------------------
    def _parse(self) -> None:
        if self._headers is None and not self._parse_head():
            return
        if self._framing == "length":
            if len(self._buffer) >= self._remaining:
                leftover = len(self._buffer) > self._remaining
                # the buffer itself when it is exactly the body: a large body is not copied once more
                self._body = self._buffer[: self._remaining] if leftover else self._buffer
                self._buffer = bytearray()
                self._finish(keep_alive=not leftover)
        elif self._framing == "chunked":
            self._parse_chunks()
        else:  # read until the server closes
            self._body += self._buffer
            self._buffer = bytearray()
            if len(self._body) > self._max_body:
                raise ResponseTooLarge(self._max_body, self._status, "bytes received")

    def _parse_head(self) -> bool:
        while True:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > _MAX_HEAD_BYTES:
                    raise MalformedResponse("response head too large")
                return False
            status_line, _, block = bytes(self._buffer[:end]).partition(b"\r\n")
            del self._buffer[: end + 4]
            version, _, rest = status_line.partition(b" ")
            code = rest[:3]
            if not version.startswith(b"HTTP/1.") or not code.isdigit():
                raise MalformedResponse(f"malformed status line {status_line[:80]!r}")
            status = int(code)
            if status >= 200:
                break  # 1xx responses (100 Continue) are interim: the real one follows
        headers = ResponseHead(block)
        length_text = headers.lookup(_CONTENT_LENGTH)
        length: int | None = None
        if length_text is not None:
            length = _content_length(length_text)
        chunked = "chunked" in (headers.lookup(_TRANSFER_ENCODING) or "").lower()
        keep_alive = version == b"HTTP/1.1"
        token = (headers.lookup(_CONNECTION) or "").lower()
        if "close" in token:
            keep_alive = False
        elif "keep-alive" in token:
            keep_alive = True
        self._status = status
        self._headers = headers
        self._keep_alive = keep_alive
        if status in (204, 304):
            self._framing, self._remaining = "length", 0
        elif chunked:
            self._framing = "chunked"
        elif length is not None:
            if length > self._max_body:
                raise ResponseTooLarge(self._max_body, status, f"Content-Length {length}")
            self._framing, self._remaining = "length", length
        else:
            self._framing = "close"
        return True

    def _parse_chunks(self) -> None:
        buffer = self._buffer
        pos = 0
        while True:
            line_end = buffer.find(b"\r\n", pos)
            if line_end < 0:
                if len(buffer) - pos > _MAX_HEAD_BYTES:  # a size line that never ends would be buffered for ever
                    raise MalformedResponse("chunk size line too long")
                break
            size_text = bytes(buffer[pos:line_end]).split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise MalformedResponse(f"bad chunk size {size_text[:20]!r}") from None
            if size == 0:
                # the last chunk: optional trailer lines, then an empty line
                end = buffer.find(b"\r\n\r\n", line_end)
                if end < 0:
                    if len(buffer) - line_end > _MAX_HEAD_BYTES:
                        raise MalformedResponse("chunk trailers too large")
                    break
                leftover = len(buffer) > end + 4
                self._buffer = bytearray()
                self._finish(keep_alive=not leftover)
                return
            if size > self._max_body - len(self._body):  # refused before its bytes are buffered
                raise ResponseTooLarge(self._max_body, self._status, "bytes received")
            data_start = line_end + 2
            data_end = data_start + size
            if len(buffer) < data_end + 2:
                break
            self._body += buffer[data_start:data_end]
            pos = data_end + 2
        if pos:  # drop what has been consumed so the buffer does not grow with the body
            del buffer[:pos]


def _readable(transport: asyncio.Transport) -> bool:
    """Whether the kernel holds bytes or an end of stream the loop has not read yet: a server that closes a
    connection right after its answer (llama.cpp's after a streamed one, with no ``Connection: close``) has its
    FIN there before the next request, and a request sent into it fails with no byte back. One ``poll`` of
    this socket (~1 µs), not httpcore's check of every pooled connection per request."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


def _content_length(text: str) -> int:
    """The body length a Content-Length value states; repeated identical values ("2, 2") are one length (RFC
    9110 8.6); anything but ASCII digits is malformed."""
    if text.isascii() and text.isdigit():  # the common case, a single number, needs no splitting
        return int(text)
    values = {value.strip() for value in text.split(",")}
    value = values.pop()
    if values or not (value.isascii() and value.isdigit()):
        raise MalformedResponse(f"invalid Content-Length {text[:20]!r}")
    return int(value)


class ConnectionPool:
    """Keep-alive connections to any origin; at most ``max_connections`` requests on the wire at once."""

    def __init__(
        self,
        max_connections: int,
        connect_timeout: float | None,
        read_timeout: float | None,
        max_body: int = MAX_RESPONSE_BYTES,
    ) -> None:
        self.max_connections = max_connections
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_body = max_body
        self._slots: asyncio.Semaphore | None = None
        self._idle: dict[Origin, deque[_Connection]] = {}
        self._ssl: ssl.SSLContext | None = None
        self._closed = False
        self._awaiting: set[_Connection] = set()  # connections with a response outstanding
        self._watchdog: asyncio.Task[None] | None = None
        self._read_buffer = memoryview(bytearray(_READ_CHUNK))

    def _ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            cafile = os.environ.get("SSL_CERT_FILE")
            if cafile is None:
                import certifi

                cafile = certifi.where()
            self._ssl = ssl.create_default_context(cafile=cafile)
        return self._ssl

    async def exchange(self, origin: Origin, data: bytes) -> RawResponse:
        """Send ``data`` (a whole serialized request) to ``origin`` on a pooled connection; read the response."""
        if self._closed:
            raise RuntimeError("the connection pool is closed")
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_connections)
        slots = self._slots
        await slots.acquire()
        try:
            connection, reused = self._idle_connection(origin)
            try:
                return await self._round_trip(origin, connection, data)
            except StaleConnection as exc:
                if not reused or exc.after_s > _CROSSED_S:
                    raise
                return await self._round_trip(origin, None, data)  # once more, on a fresh connection
        finally:
            slots.release()

    async def _round_trip(self, origin: Origin, connection: _Connection | None, data: bytes) -> RawResponse:
        """One request on ``connection`` (a pooled one) or on a new one (None); parks it again after."""
        reused = connection is not None
        if connection is None:
            connection = await self._connect(origin)
        self._watch(connection)
        try:
            response = await connection.round_trip(data)
        except ConnectionDropped as exc:
            connection.close()
            if reused and not connection.received_any:
                # no byte came back, so its last activity is the request's write
                after = asyncio.get_running_loop().time() - connection.last_activity
                raise StaleConnection(
                    f"a kept-alive connection closed before the response began ({exc})", after_s=after
                ) from None
            raise
        except BaseException:
            connection.close()
            raise
        finally:
            self._awaiting.discard(connection)
        self._park(origin, connection)
        return response

    def _watch(self, connection: _Connection) -> None:
        if self.read_timeout is None:
            return
        self._awaiting.add(connection)
        if self._watchdog is None or self._watchdog.done():
            self._watchdog = asyncio.get_running_loop().create_task(self._fail_silent(self.read_timeout))

    async def _fail_silent(self, read_timeout: float) -> None:
        """Fail each response silent for ``read_timeout``; ends when no response is outstanding."""
        loop = asyncio.get_running_loop()
        slack = min(1.0, read_timeout / 4)
        while self._awaiting:
            await asyncio.sleep(slack)
            now = loop.time()
            for connection in [c for c in self._awaiting if now - c.last_activity >= read_timeout]:
                self._awaiting.discard(connection)
                connection.time_out(read_timeout)

    def _idle_connection(self, origin: Origin) -> tuple[_Connection | None, bool]:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            transport = connection.transport
            if connection.closed or transport is None or transport.is_closing():
                continue
            if _readable(transport):  # an idle socket with something to read holds the server's FIN (or junk)
                connection.close()
                continue
            return connection, True
        return None, False

    def _park(self, origin: Origin, connection: _Connection) -> None:
        if connection.closed or self._closed:
            connection.close()
            return
        idle = self._idle.setdefault(origin, deque())
        if len(idle) >= self.max_connections:
            connection.close()
        else:
            idle.append(connection)

    async def _connect(self, origin: Origin) -> _Connection:
        scheme, host, port = origin
        loop = asyncio.get_running_loop()
        ssl_context = self._ssl_context() if scheme == "https" else None
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, protocol = await loop.create_connection(
                    lambda: _Connection(loop, self._read_buffer, self.max_body),
                    host,
                    port,
                    ssl=ssl_context,
                    server_hostname=host if ssl_context is not None else None,
                )
        except TimeoutError:
            raise ConnectTimedOut(f"connecting to {host}:{port} took over {self.connect_timeout:g}s") from None
        except ssl.SSLError as exc:  # before OSError, its base: most handshake failures are for good
            refusal = tls_refusal(exc, host, port)
            if refusal is not None:
                raise TLSRefused(refusal) from None
            raise ConnectFailed(f"cannot connect to {host}:{port}: {exc}") from None
        except OSError as exc:
            raise ConnectFailed(f"cannot connect to {host}:{port}: {exc.strerror or exc}") from None
        return protocol

    async def aclose(self) -> None:
        """Close idle connections; connections in use close when their response is read."""
        self._closed = True
        if self._watchdog is not None and not self._awaiting:
            self._watchdog.cancel()  # else it ends by itself once the answers in flight are in
        for idle in self._idle.values():
            while idle:
                idle.pop().abort()  # idle: nothing is being written that an abort could cut
        self._idle.clear()


_UNKNOWN_ISSUER = frozenset({18, 19, 20, 21})
"""OpenSSL's verify codes for a certificate whose issuer is not in the trusted bundle: self-signed (18, 19),
unable to get the local issuer (20), unable to verify the first certificate (21)."""


def tls_refusal(error: ssl.SSLError, host: str, port: int) -> str | None:
    """What a TLS handshake failure that no retry changes means for the user, or None for one that may pass
    (the connection reset mid-handshake, an overloaded proxy's EOF)."""
    if isinstance(error, ssl.SSLCertVerificationError):
        why = error.verify_message or error.reason or "not verified"
        hint = (
            "; if the server is yours, name the CA bundle that signed it in SSL_CERT_FILE"
            if error.verify_code in _UNKNOWN_ISSUER
            else ""
        )
        return f"TLS: the certificate of {host}:{port} is not trusted ({why}){hint}"
    if error.reason in ("WRONG_VERSION_NUMBER", "HTTP_REQUEST", "RECORD_LAYER_FAILURE"):
        return f"TLS: {host}:{port} does not answer in TLS ({error.reason}): is the base URL http://, not https://?"
    return None


__all__ = [
    "MAX_RESPONSE_BYTES",
    "RAISE_THE_LIMIT",
    "ConnectFailed",
    "ConnectTimedOut",
    "ConnectionDropped",
    "ConnectionPool",
    "MalformedResponse",
    "Origin",
    "RawResponse",
    "ReadTimedOut",
    "ResponseHead",
    "ResponseTooLarge",
    "StaleConnection",
    "TLSRefused",
    "TransportError",
    "origin_of",
    "tls_refusal",
    "too_large",
]
