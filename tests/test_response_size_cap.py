"""A hostile or broken server cannot fill the memory, and a header that would break a request never leaves.

Bodies: one over ``MAX_RESPONSE_BYTES`` (announced by Content-Length, sent forever in chunks or until the
connection closes, an endless event stream, a gzip bomb) fails that sample at once with a ProviderResponseError
that is not retried, on every wire, and its connection is closed. Headers: every wire refuses a control
character in a header value before anything is sent, with one line that never shows the value (audit-s21-hostile
findings 1 and 9). The fake server sends what it can (a huge answer, a gzip bomb, a long stream);
``RawServer`` sends what no well-behaved server would (endless bodies).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from conftest import call, failure
from conftest import provider_request as request
from fake_llm_server import FakeLLMServer, Reply, answer
from pydantic import SecretStr

from eval_harness.config import Settings
from eval_harness.errors import ConfigError, ProviderError, ProviderResponseError
from eval_harness.providers._httpx_pool import PooledTransport
from eval_harness.providers._transport import MAX_RESPONSE_BYTES
from eval_harness.providers.base import Provider, ProviderContext, create_provider

KEY = "sk-test-size-cap-0123456789"
WIRES = ["pooled", "httpx", "httpx-pooled"]
CAP_TEXT = f"response body over {MAX_RESPONSE_BYTES // 2**20} MiB"
RAISE_IT = "; --model-arg max_response_bytes=N raises the limit (a resume may give it)"
_ENDLESS_FOR_S = 20.0  # a bound for the stub itself, should a client never stop reading
_CHUNK = b"a" * 65536
_OK = {"id": "c", "model": "m", "choices": [{"index": 0, "message": {"content": "ok"}, "finish_reason": "stop"}]}


class RawServer:
    """A raw asyncio HTTP/1.1 server on 127.0.0.1 answering each request as the next scripted mode does (then
    ``ok``): ``chunked``, ``length`` (Content-Length 99999999999999) and ``close`` (no length) send bytes
    forever, ``sse`` an event stream forever without [DONE], ``ok`` a normal Chat Completions answer."""

    def __init__(self) -> None:
        self.connections = 0
        self.requests = 0
        self.modes: list[str] = []
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[Any]] = set()
        self.port = 0

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for handler in self._handlers:
            handler.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *modes: str) -> None:
        self.modes.extend(modes)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        handler = asyncio.current_task()
        assert handler is not None
        self._handlers.add(handler)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                length = next(
                    (int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")), 0
                )
                await reader.readexactly(length)
                self.requests += 1
                if not await self._reply(self.modes.pop(0) if self.modes else "ok", writer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self._handlers.discard(handler)

    async def _reply(self, mode: str, writer: asyncio.StreamWriter) -> bool:
        """Answer one request; False once the connection is done."""
        if mode == "ok":
            body = json.dumps(_OK).encode()
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body))
            writer.write(body)
            await writer.drain()
            return True
        heads = {
            "chunked": b"transfer-encoding: chunked\r\n",
            "sse": b"transfer-encoding: chunked\r\n",
            "length": b"content-length: 99999999999999\r\n",
            "close": b"connection: close\r\n",
        }
        kind = b"text/event-stream" if mode == "sse" else b"application/json"
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: %s\r\n%s\r\n" % (kind, heads[mode]))
        if mode == "sse":
            event = b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": "x" * 1000}}]}).encode()
            payload = (event + b"\n\n") * 64
        else:
            payload = _CHUNK
        piece = b"%x\r\n%s\r\n" % (len(payload), payload) if mode in ("chunked", "sse") else payload
        started = time.monotonic()
        with contextlib.suppress(ConnectionError):
            while time.monotonic() - started < _ENDLESS_FOR_S:
                writer.write(piece)
                await writer.drain()
        return False


@pytest.fixture
async def raw() -> AsyncIterator[RawServer]:
    async with RawServer() as server:
        yield server


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(api_key=KEY) as running:
        yield running


def make(base_url: str, wire: str, key: str = KEY, **args: str) -> Provider:
    settings = Settings(openai_api_key=SecretStr(key))
    context = ProviderContext(settings=settings, concurrency=2)
    return create_provider("openai/gpt-4o", {"base_url": base_url, "http_transport": wire, **args}, context)


async def bounded_failure(provider: Provider) -> BaseException:
    """The error of one generation, which must come long before any timeout (before the cap, none came at all:
    the body was read until the per-sample timeout)."""
    return await asyncio.wait_for(failure(provider), 10)


# bodies over the cap --------------------------------------------------------------------------------------
@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    ("mode", "how"),
    [("chunked", "bytes received"), ("length", "Content-Length 99999999999999"), ("close", "bytes received")],
)
async def test_an_endless_body_fails_that_sample_at_once_unretried(
    raw: RawServer, wire: str, mode: str, how: str
) -> None:
    raw.script(mode)
    error = await bounded_failure(make(raw.base_url, wire))
    assert isinstance(error, ProviderResponseError) and error.retry_cause is None
    assert str(error) == f"openai/gpt-4o: {CAP_TEXT} (HTTP 200, {how}){RAISE_IT}"
    assert raw.requests == 1


@pytest.mark.parametrize("wire", WIRES)
async def test_an_endless_event_stream_fails_at_the_cap(raw: RawServer, wire: str) -> None:
    raw.script("sse")
    error = await bounded_failure(make(raw.base_url, wire, stream="true"))
    assert isinstance(error, ProviderResponseError) and error.retry_cause is None
    assert CAP_TEXT in str(error)


@pytest.mark.parametrize("wire", WIRES)
async def test_the_connection_of_a_body_over_the_cap_is_closed_not_reused(raw: RawServer, wire: str) -> None:
    raw.script("ok", "chunked", "ok")
    provider = make(raw.base_url, wire)
    try:
        await provider.generate(request())
        with pytest.raises(ProviderResponseError, match=CAP_TEXT):
            await asyncio.wait_for(provider.generate(request()), 10)
        completion = await provider.generate(request())
    finally:
        await provider.aclose()
    assert completion.text == "ok" and raw.requests == 3
    assert raw.connections == 2  # the first connection carried the first two requests; the third came on a new one


@pytest.mark.parametrize("wire", WIRES)
async def test_an_answer_over_the_cap_fails_before_its_body_is_read(server: FakeLLMServer, wire: str) -> None:
    server.script(answer("a" * MAX_RESPONSE_BYTES), answer("small"))
    provider = make(server.base_url, wire)
    try:
        with pytest.raises(ProviderResponseError) as caught:
            await provider.generate(request())
        after = await provider.generate(request())
    finally:
        await provider.aclose()
    assert caught.value.retry_cause is None
    assert str(caught.value).startswith(f"openai/gpt-4o: {CAP_TEXT} (HTTP 200, Content-Length ")
    assert after.text == "small"


@pytest.mark.parametrize("wire", WIRES)
async def test_a_gzip_bomb_fails_like_a_body_over_the_cap(server: FakeLLMServer, wire: str) -> None:
    server.script(answer("0" * MAX_RESPONSE_BYTES, gzip=True))
    error = await failure(make(server.base_url, wire))
    assert isinstance(error, ProviderResponseError) and error.retry_cause is None
    assert str(error) == f"openai/gpt-4o: {CAP_TEXT} (HTTP 200, once inflated from gzip){RAISE_IT}"
    assert server.requests[-1].headers["accept-encoding"] == "gzip, deflate"


@pytest.mark.parametrize("wire", WIRES)
async def test_a_gzip_answer_within_the_cap_is_still_decoded(server: FakeLLMServer, wire: str) -> None:
    server.script(answer("compressed " * 1000, gzip=True))
    completion = await call(make(server.base_url, wire))
    assert completion.text == "compressed " * 1000


async def test_the_longest_real_streamed_answer_fits_under_the_cap(server: FakeLLMServer) -> None:
    # 128k output tokens as Chat Completions events of ~290 bytes each, the format OpenAI sends: ~36 MiB
    chunk = {
        "id": "chatcmpl-C4a1b2c3d4e5f6g7h8i9j0k1l2m3n",
        "object": "chat.completion.chunk",
        "created": 1754000000,
        "model": "gpt-5-2025-08-07",
        "service_tier": "default",
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": {"content": " the"}, "finish_reason": None}],
        "usage": None,
        "obfuscation": "x7Qa",
    }
    last = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
    events: list[Any] = [chunk] * 128_000 + [last, "[DONE]"]
    server.script(Reply(events=events))
    completion = await call(make(server.base_url, "pooled", stream="true"))
    assert len(completion.text) == 4 * 128_000 and completion.finish_reason == "length"


# headers that would break a request ----------------------------------------------------------------------
@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("inner", ["\n", "\r\nx-injected: 1\r\n", "\0", "\x1b"])
async def test_a_key_with_a_control_character_stops_every_wire_before_anything_is_sent(
    server: FakeLLMServer, wire: str, inner: str
) -> None:
    key = f"sk-canary-12345{inner}67890"
    with pytest.raises(ConfigError) as raised:  # walkA-s30: refused as the provider is made, not at a first call
        make(server.base_url, wire, key=key)
    assert str(raised.value) == (
        "openai/gpt-4o: the HTTP header 'authorization' holds a line break or another control character; check "
        "the key's value (a line break copied with it?)"
    )
    assert server.generation_requests() == []


@pytest.mark.parametrize("wire", WIRES)
async def test_a_key_outside_latin_1_stops_every_wire_before_anything_is_sent(server: FakeLLMServer, wire: str) -> None:
    with pytest.raises(ConfigError) as raised:
        make(server.base_url, wire, key="sk-canary-\u20ac-67890")
    assert "sk-canary" not in str(raised.value)
    assert "cannot carry" in str(raised.value) and server.generation_requests() == []


async def test_a_latin_1_key_is_sent_alike_on_every_wire() -> None:
    seen = []
    with FakeLLMServer() as server:
        for wire in WIRES:
            with contextlib.suppress(ProviderError):
                await call(make(server.base_url, wire, key="sk-caf\u00e9-67890"))
            seen.append(server.requests[-1].headers["authorization"])
    assert len(server.generation_requests()) == 3 and len(set(seen)) == 1


async def test_the_lean_pool_under_httpx_refuses_a_header_with_a_line_break(server: FakeLLMServer) -> None:
    # httpx checks no header value; the transport itself must not put a line break on the wire
    transport = PooledTransport(1, 5.0, 5.0)
    async with httpx.AsyncClient(transport=transport, headers={"x-note": "a\nx-injected: 1"}) as client:
        with pytest.raises(httpx.LocalProtocolError) as caught:
            await client.post(f"{server.base_url}/chat/completions", json={"model": "m"})
    assert "x-injected" not in str(caught.value)
    assert server.generation_requests() == []


@pytest.mark.parametrize("wire", WIRES)
async def test_max_response_bytes_sets_the_cap(server: FakeLLMServer, wire: str) -> None:
    server.script(answer("a" * 5000), answer("small"))
    provider = make(server.base_url, wire, max_response_bytes="2000")
    error = await bounded_failure(provider)
    assert isinstance(error, ProviderResponseError) and "response body over 2000 bytes" in str(error)
    assert (await call(provider)).text == "small"


async def test_a_judges_body_over_the_cap_names_the_judges_flag(server: FakeLLMServer) -> None:
    # before: "--model-arg max_response_bytes=N raises the limit (a resume may give it)": neither holds for a judge
    server.script(answer("a" * 5000))
    context = ProviderContext(settings=Settings(), concurrency=2)
    judge = create_provider(
        "openai-compatible/j",
        {"base_url": server.base_url, "max_response_bytes": "2000", "api_key": KEY},
        context,
        flag="--judge-arg",
    )
    error = await bounded_failure(judge)
    assert str(error).endswith("; --judge-arg max_response_bytes=N raises the limit"), str(error)
