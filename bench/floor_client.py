"""The floor of a throughput run on this machine: an asyncio client that does nothing but the wire.

It sends the same pre-serialized chat-completions request on ``--concurrency`` keep-alive connections,
each sending its next request as soon as its answer is complete, ``--requests`` in all, and finds only the
end of each answer (its Content-Length). No template, no JSON, no scoring, no artifact, no imports beyond
the standard library: what is left between its run and N × latency / C is the event loop's wake-ups, the
kernel's loopback and the server's own lateness. bench/throughput.py runs it beside eval-harness (kind
``floor``) so that both are measured against the same server in the same minute.

    python bench/floor_client.py --base http://127.0.0.1:PORT --concurrency 16 --requests 2000

Prints one JSON line: ``{"answered": n, "ended_at": epoch seconds of the last complete answer}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable
from urllib.parse import urlsplit


class _Counter:
    def __init__(self, requests: int) -> None:
        self.unsent = requests
        self.answered = 0
        self.ended_at = 0.0


class _Chain(asyncio.Protocol):
    """One connection: send, read the whole answer, send the next, until nothing is left to send."""

    def __init__(self, request: bytes, counter: _Counter, closed: asyncio.Future[None]) -> None:
        self.request = request
        self.counter = counter
        self.closed = closed
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._send_next()

    def _send_next(self) -> None:
        assert self.transport is not None
        if self.counter.unsent == 0:
            self.transport.close()
            return
        self.counter.unsent -= 1
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        head_end = self.buffer.find(b"\r\n\r\n")
        if head_end < 0:
            return
        length = 0
        for line in self.buffer[:head_end].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        end = head_end + 4 + length
        if len(self.buffer) < end:
            return
        self.buffer = self.buffer[end:]
        self.counter.answered += 1
        self.counter.ended_at = time.time()
        self._send_next()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


def chat_request(host: str, path: str) -> bytes:
    body = json.dumps(
        {
            "model": "bench",
            "messages": [
                {"role": "system", "content": "You are a precise assistant. Answer exactly what is asked."},
                {"role": "user", "content": "Item 1: reply with the number 7. [[answer: 7]]"},
            ],
            "max_tokens": 16,
        }
    ).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


async def run(base: str, concurrency: int, requests: int) -> _Counter:
    url = urlsplit(base)
    assert url.hostname is not None and url.port is not None
    request = chat_request(f"{url.hostname}:{url.port}", f"{url.path.rstrip('/')}/v1/chat/completions")
    counter = _Counter(requests)
    loop = asyncio.get_running_loop()
    host, port = url.hostname, url.port
    closed: list[asyncio.Future[None]] = [loop.create_future() for _ in range(min(concurrency, requests))]

    def chain(done: asyncio.Future[None]) -> Callable[[], _Chain]:
        return lambda: _Chain(request, counter, done)

    await asyncio.gather(*(loop.create_connection(chain(done), host, port) for done in closed))
    await asyncio.gather(*closed)
    return counter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--base", required=True, help="The server's base URL (without /v1).")
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--requests", type=int, required=True)
    options = parser.parse_args()
    counter = asyncio.run(run(options.base, options.concurrency, options.requests))
    print(json.dumps({"answered": counter.answered, "ended_at": counter.ended_at}))


if __name__ == "__main__":
    main()
