"""A lean fake LLM server for throughput benchmarks: OpenAI chat completions answered after a fixed latency.

Why a second fake server: the full one (``fake_llm_server.py``, aiohttp, every endpoint, fault switches and a
record of each request) spends ~0.35 ms of CPU per request on its one event loop. At 256 requests in flight
that is ~90 ms of work per 200 ms round, bunched where answers fall due, so its own answers come late (mean
203 ms, up to 240 ms, measured) and a throughput benchmark against it measures the server. This one reads
requests with an asyncio protocol and answers each from a timer due ``latency`` after its arrival, in the
same response schema (``chat.completion``, the real field names, usage, an ``x-request-id`` header), with the
same default answer: the text after ``[[answer: ...]]`` in the prompt, and with the headers a hosted API
sends (date, rate limits, processing time, request id, CDN: 18 lines), so the client parses what it would in
production. It reports how late it answered, so a benchmark can show the server kept its promise.

Only what the benchmark needs: ``POST /v1/chat/completions`` over HTTP/1.1 keep-alive (one request at a
time per connection, ``Content-Length`` bodies), ``GET /_stats`` and ``POST /_control``
(``{"reset": true}``, ``{"latency_s": x}``). Anything else gets a 404 in the OpenAI error schema.

    python tests/lean_llm_server.py --latency 0.2     # prints "PORT <n>", serves until killed
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import selectors
import time
from typing import Any

import orjson
from fake_llm_server import ANSWER_MARK  # the same default answer as the full server

_MAX_HEAD = 64 * 1024
# What api.openai.com sends with a chat completion besides date, framing and request id (example values).
_HOSTED_HEADERS = (
    b"connection: keep-alive\r\n"
    b"access-control-expose-headers: X-Request-ID\r\n"
    b"openai-organization: org-benchmark\r\n"
    b"openai-processing-ms: 200\r\n"
    b"openai-version: 2020-10-01\r\n"
    b"x-ratelimit-limit-requests: 10000\r\n"
    b"x-ratelimit-limit-tokens: 30000000\r\n"
    b"x-ratelimit-remaining-requests: 9999\r\n"
    b"x-ratelimit-remaining-tokens: 29999950\r\n"
    b"x-ratelimit-reset-requests: 6ms\r\n"
    b"x-ratelimit-reset-tokens: 0s\r\n"
    b"strict-transport-security: max-age=31536000; includeSubDomains; preload\r\n"
    b"cf-cache-status: DYNAMIC\r\n"
    b"x-content-type-options: nosniff\r\n"
    b"server: cloudflare\r\n"
)


class LeanStats:
    """What the server saw since the last reset."""

    def __init__(self) -> None:
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.first_request_at: float | None = None
        self.late_s: list[float] = []

    def as_json(self) -> dict[str, Any]:
        late = sorted(self.late_s)

        def at(fraction: float) -> float | None:
            return round(late[min(len(late) - 1, int(fraction * len(late)))] * 1000, 3) if late else None

        return {
            "requests": self.requests,
            "max_in_flight": self.max_in_flight,
            "first_request_at": self.first_request_at,
            "late_ms": {"p50": at(0.5), "p99": at(0.99), "max": at(1.0)},
        }


class LeanServer:
    """The server's state: latency, counters and the response ids."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.stats = LeanStats()
        self.next_id = 1
        self.read_buffer = memoryview(bytearray(64 * 1024))


_date: tuple[int, bytes] = (0, b"")


def _http_date() -> bytes:
    """The Date header's value, formatted once a second (formatting costs ~7 µs, a tenth of an answer)."""
    global _date
    second = int(time.time())
    if second != _date[0]:
        _date = (second, email.utils.formatdate(second, usegmt=True).encode())
    return _date[1]


def _response(status: int, payload: Any, extra: bytes = b"") -> bytes:
    body = orjson.dumps(payload)
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "Error")
    date = _http_date()
    head = b"HTTP/1.1 %d %s\r\ndate: %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n" % (
        status, reason.encode(), date, len(body),
    )  # fmt: skip
    return head + _HOSTED_HEADERS + extra + b"\r\n" + body


def _error(status: int, message: str) -> bytes:
    return _response(
        status, {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
    )


def _answer(server: LeanServer, body: Any) -> bytes:
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body.get("model"):
        return _error(400, "'model' and 'messages' are required properties")
    prompt = "\n\n".join(str(m.get("content", "")) for m in body["messages"] if isinstance(m, dict))
    marked = ANSWER_MARK.search(prompt)
    text = marked.group(1).strip() if marked else "ok"
    number = server.next_id
    server.next_id += 1
    prompt_tokens, completion_tokens = max(1, len(prompt) // 4), max(1, len(text) // 4) + 1
    payload = {
        "id": f"chatcmpl-lean{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["model"],
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None, "finish_reason": "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
    return _response(200, payload, b"x-request-id: req_lean%d\r\n" % number)


class _Connection(asyncio.BufferedProtocol):
    """Receives into the server's one read buffer (a new 256 KiB ``bytes`` per read costs twice the read)."""

    def __init__(self, server: LeanServer) -> None:
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.server.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        self.buffer += self.server.read_buffer[:nbytes]
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > _MAX_HEAD:
                    self._close()
                return
            lines = bytes(self.buffer[:end]).split(b"\r\n")
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    text = value.strip()
                    if not text.isdigit():
                        self._write(_error(400, "invalid Content-Length"))
                        self._close()
                        return
                    length = int(text)
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            method, _, rest = lines[0].partition(b" ")
            self._handle(method, rest.partition(b" ")[0], body)

    def _handle(self, method: bytes, path: bytes, raw: bytes) -> None:
        server = self.server
        if path == b"/v1/chat/completions" and method == b"POST":
            stats = server.stats
            stats.requests += 1
            stats.in_flight += 1
            stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
            if stats.first_request_at is None:
                stats.first_request_at = time.time()
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                body = None
            due = self.loop.time() + server.latency_s
            self.loop.call_at(due, self._answer_due, body, due, stats)  # a reset meanwhile does not see it
        elif path == b"/_stats":
            self._write(_response(200, server.stats.as_json()))
        elif path == b"/_control" and method == b"POST":
            try:
                control = orjson.loads(raw or b"{}")
            except orjson.JSONDecodeError:
                control = None
            if not isinstance(control, dict):
                self._write(_error(400, "the control body is not a JSON object"))
                return
            if control.get("reset"):
                server.stats = LeanStats()
            if "latency_s" in control:
                server.latency_s = float(control["latency_s"])
            self._write(_response(200, {"ok": True}))
        else:
            self._write(_error(404, f"Unknown request URL: {method.decode()} {path.decode()}"))

    def _answer_due(self, body: Any, due: float, stats: LeanStats) -> None:
        stats.in_flight -= 1
        stats.late_s.append(self.loop.time() - due)
        self._write(_answer(self.server, body))

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def serve(latency_s: float, port: int = 0) -> None:
    """Listen on 127.0.0.1, print ``PORT <n>`` and serve until cancelled."""
    server = LeanServer(latency_s)
    loop = asyncio.get_running_loop()
    listener = await loop.create_server(lambda: _Connection(server), "127.0.0.1", port, backlog=1024)
    print(f"PORT {listener.sockets[0].getsockname()[1]}", flush=True)
    async with listener:
        await listener.serve_forever()


def precise_loop() -> asyncio.AbstractEventLoop:
    """An event loop whose timers fire when due, not up to a millisecond later.

    asyncio's default selector (epoll) takes its timeout in whole milliseconds, rounded up, so every answer
    left 0.5 ms late on average and ~0.9 ms at the median measured here: at 16 in flight a 2,000-sample run
    is 125 answers in a row, ~0.11 s of lateness the benchmark would charge to the client. ``select`` takes
    microseconds (median lateness 0.15-0.35 ms, what waking the process costs); it is limited to file
    descriptors below 1,024, far above the 257 sockets of the benchmark's widest run."""
    return asyncio.SelectorEventLoop(selectors.SelectSelector())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--latency", type=float, default=0.0, help="Seconds from a request's arrival to its answer.")
    parser.add_argument("--port", type=int, default=0)
    options = parser.parse_args()
    with asyncio.Runner(loop_factory=precise_loop) as runner:
        runner.run(serve(options.latency, options.port))


if __name__ == "__main__":
    main()
