"""The benchmark's lean fake server: a real run through it scores every sample, and it keeps its latency."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import selectors
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import read_records, run_subprocess, write_jsonl

SERVER = Path(__file__).resolve().parent / "lean_llm_server.py"
FLOOR_CLIENT = Path(__file__).resolve().parent.parent / "bench" / "floor_client.py"
LATENCY = 0.05


@pytest.fixture(scope="module")
def lean_server() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "--latency", str(LATENCY)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert line.startswith("PORT "), line
    try:
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        process.terminate()
        process.wait(10)
        process.stdout.close()


def http(url: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any], dict[str, str]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read()), dict(error.headers)


def test_answers_in_the_chat_completion_schema_after_its_latency(lean_server: str) -> None:
    http(f"{lean_server}/_control", {"reset": True})
    started = time.perf_counter()
    status, body, headers = http(
        f"{lean_server}/v1/chat/completions",
        {"model": "m", "messages": [{"role": "user", "content": "Say it. [[answer: 42]]"}]},
    )
    elapsed = time.perf_counter() - started
    # the answer is due LATENCY after the request arrived, so the round trip lasts at least that long: a lower bound
    # no load can break (how late the server answers under load is bench/throughput.py's server_late_ms figure)
    assert status == 200 and elapsed >= LATENCY
    assert body["object"] == "chat.completion" and body["model"] == "m"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "42"}
    assert body["choices"][0]["finish_reason"] == "stop"
    usage = body["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
    assert headers["x-request-id"].startswith("req_lean")
    assert headers["x-ratelimit-remaining-requests"] == "9999" and headers["server"] == "cloudflare"
    _, stats, _ = http(f"{lean_server}/_stats")
    assert stats["requests"] == 1 and stats["max_in_flight"] == 1
    assert stats["late_ms"]["max"] >= 0  # answered from its timer, never before the answer was due


def test_bad_requests_get_openai_error_bodies(lean_server: str) -> None:
    status, body, _ = http(f"{lean_server}/v1/chat/completions", {"model": "m"})
    assert status == 400 and "messages" in body["error"]["message"]
    status, body, _ = http(f"{lean_server}/v1/embeddings", {"model": "m", "input": "x"})
    assert status == 404 and body["error"]["type"] == "invalid_request_error"
    request = urllib.request.Request(f"{lean_server}/_control", data=b"[1, 2", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    refused.value.close()


def test_a_run_through_it_scores_every_sample_within_the_concurrency(lean_server: str, tmp_path: Path) -> None:
    records = [
        {"id": f"s{i}", "axis": "arithmetic", "input": f"Reply {i * 3}. [[answer: {i * 3}]]", "target": str(i * 3)}
        for i in range(40)
    ]
    dataset = write_jsonl(tmp_path / "lean.jsonl", records)
    http(f"{lean_server}/_control", {"reset": True})
    result = run_subprocess(
        "run", "--task", "capability_profile", "--dataset", dataset, "--model", "openai-compatible/lean",
        "--model-arg", f"base_url={lean_server}/v1", "--concurrency", "8", "--output-dir", tmp_path / "out",
        "--run-id", "lean", "-q",
        cwd=tmp_path,
    )  # fmt: skip
    assert result.code == 0, result.err
    rows = read_records(tmp_path / "out" / "lean")
    assert sorted(r["sample_id"] for r in rows) == sorted(r["id"] for r in records)
    assert all(r["score"] == 1.0 and r["error"] is None and r["request_id"].startswith("req_lean") for r in rows)
    _, stats, _ = http(f"{lean_server}/_stats")
    assert stats["requests"] == 40 and stats["max_in_flight"] == 8


def test_the_benchmarks_floor_client_keeps_its_connections_busy_and_counts_every_answer(lean_server: str) -> None:
    """bench/floor_client.py is the benchmark's floor: it must really send and read every request."""
    http(f"{lean_server}/_control", {"reset": True})
    completed = subprocess.run(
        [sys.executable, str(FLOOR_CLIENT), "--base", lean_server, "--concurrency", "4", "--requests", "20"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    result = json.loads(completed.stdout)
    _, stats, _ = http(f"{lean_server}/_stats")
    assert result["answered"] == stats["requests"] == 20
    assert stats["max_in_flight"] == 4
    # that it waits for each whole answer before the next request is pinned without a clock by
    # test_the_floor_client_sends_its_next_request_only_when_the_whole_answer_is_in


class _RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.sent.append(bytes(data))

    def close(self) -> None:
        self.closed = True


async def test_the_floor_client_sends_its_next_request_only_when_the_whole_answer_is_in() -> None:
    spec = importlib.util.spec_from_file_location("floor_client", FLOOR_CLIENT)
    assert spec is not None and spec.loader is not None
    floor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(floor)
    body = b'{"choices": []}'
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    counter = floor._Counter(2)
    transport = _RecordingTransport()
    chain = floor._Chain(b"REQUEST", counter, asyncio.get_running_loop().create_future())
    chain.connection_made(transport)
    assert transport.sent == [b"REQUEST"]
    # the head alone, then all but the body's last byte: still one request out, nothing answered
    chain.data_received(answer[:20])
    chain.data_received(answer[20:-1])
    assert counter.answered == 0 and transport.sent == [b"REQUEST"]
    chain.data_received(answer[-1:] + answer[:10])  # the end of this answer and the start of the next
    assert counter.answered == 1 and transport.sent == [b"REQUEST", b"REQUEST"]
    chain.data_received(answer[10:])
    assert counter.answered == 2 and transport.closed  # nothing left to send: the connection is closed


def test_the_servers_timers_are_not_rounded_up_to_a_millisecond() -> None:
    """epoll's timeout is whole milliseconds, rounded up: every answer ~0.9 ms late at the median, which a
    benchmark of 125 answers in a row would charge to the client. The server's loop waits with select."""
    spec = importlib.util.spec_from_file_location("lean_llm_server", SERVER)
    assert spec is not None and spec.loader is not None
    lean = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(lean)
    loop = lean.precise_loop()
    try:
        selector = loop._selector  # type: ignore[attr-defined]
        assert isinstance(selector, selectors.SelectSelector)
    finally:
        loop.close()
