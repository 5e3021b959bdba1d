"""``embedding_similarity``'s ``max_retries`` argument bounds the api backend's retries of one request, against
a real HTTP server on loopback that answers 503 (with ``Retry-After: 0``) before it answers."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from eval_harness.errors import ConfigError, ProviderHTTPError
from eval_harness.scorers import build_scorer
from eval_harness.types import Sample, ScorerSpec


class _Overloaded(ThreadingHTTPServer):
    failures_left = 0
    requests = 0


class _Handler(BaseHTTPRequestHandler):
    server: _Overloaded

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests += 1
        if self.server.failures_left > 0:
            self.server.failures_left -= 1
            self._send(503, {"error": {"message": "overloaded", "type": "server_error"}}, {"Retry-After": "0"})
            return
        data = [{"object": "embedding", "index": i, "embedding": [1.0, 0.0]} for i in range(len(body["input"]))]
        self._send(200, {"object": "list", "data": data, "model": body["model"]}, {})

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
        raw = json.dumps(payload).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(raw)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture
def server() -> Iterator[_Overloaded]:
    running = _Overloaded(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=running.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield running
    running.shutdown()
    running.server_close()


def _scorer(server: _Overloaded, **args: Any) -> Any:
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    return build_scorer(ScorerSpec(name="embedding_similarity", args={"base_url": base_url, "cache": False, **args}))


SAMPLE = Sample(id="s", input="?", target="the reference")


async def test_max_retries_zero_fails_the_sample_at_the_first_503(server: _Overloaded) -> None:
    server.failures_left = 1
    with pytest.raises(ProviderHTTPError, match="503"):
        await _scorer(server, max_retries=0).score("the answer", SAMPLE)
    assert server.requests == 1


async def test_a_503_within_max_retries_is_retried_to_the_answer(server: _Overloaded) -> None:
    server.failures_left = 1
    score = await _scorer(server, max_retries=1).score("the answer", SAMPLE)
    assert score.value == pytest.approx(1.0)  # both unit vectors [1, 0]: cosine 1, by hand
    assert server.requests == 2


def test_a_negative_max_retries_is_refused_when_the_scorer_is_built(server: _Overloaded) -> None:
    with pytest.raises(ConfigError, match="max_retries must be 0 or more"):
        _scorer(server, max_retries=-1)
