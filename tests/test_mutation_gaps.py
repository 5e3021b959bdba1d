"""Behaviours a mutation audit found unpinned: each test here fails under one deliberate bug the rest of the
suite let through (paired-test choice, torn-tail repair, the retry wait's cap, reasoning redaction, percent
answers, gates on a run one record short, default cache prices).

Expected figures come from the README or from scipy 1.17.1 in a throwaway venv, never from this code."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, TaskRoot, call
from fake_llm_server import FakeLLMServer, Reply
from pydantic import SecretStr

from eval_harness.artifacts import repair_tail
from eval_harness.config import Settings
from eval_harness.providers.base import Provider, ProviderContext, create_provider
from eval_harness.providers.gateway import Gateway, RetryPolicy
from eval_harness.scorers.exact import exact_match
from eval_harness.stats import paired_comparison
from eval_harness.types import ChatMessage, GenerateConfig, GenerateRequest, Sample

Cli = Callable[..., CliResult]
CANARY = "sk-canary-thinking-5e1f0a9c7b3d"


# --------------------------------------------------------------------------------------------------
# paired comparisons: which test at 30 pairs, and when only one run's scores are 0/1
# --------------------------------------------------------------------------------------------------

# 30 pairs of scores in [0, 1] (numpy default_rng(7), rounded to 2 places)
A30 = [0.58, 0.74, 0.67, 0.34, 0.38, 0.72, 0.2, 0.69, 0.68, 0.48, 0.38, 0.37, 0.35, 0.47, 0.5,
       0.53, 0.8, 0.68, 0.57, 0.79, 0.33, 0.3, 0.57, 0.23, 0.22, 0.51, 0.48, 0.75, 0.58, 0.51]  # fmt: skip
B30 = [0.48, 0.74, 0.62, 0.31, 0.54, 0.69, 0.25, 0.83, 0.67, 0.52, 0.44, 0.43, 0.28, 0.53, 0.69,
       0.43, 0.94, 0.74, 0.56, 1.0, 0.46, 0.23, 0.63, 0.34, 0.25, 0.63, 0.52, 0.87, 0.77, 0.49]  # fmt: skip
# scipy.stats.ttest_rel(B30, A30).pvalue (scipy 1.17.1)
P_TTEST_30 = 0.0046563413634080454


def test_thirty_pairs_take_the_paired_t_test_not_the_sign_flip() -> None:
    # README: "the paired t-test, or below 30 pairs the exact sign-flip test"
    result = paired_comparison(A30, B30)
    assert (result.test, result.interval) == ("paired-t", "t")
    assert result.p_value == pytest.approx(P_TTEST_30, rel=1e-9)


# 40 items: run A's scores happen to be all 0 or 1, run B's are partial credit (numpy default_rng(11))
BINARY40 = [0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1,
            1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1]  # fmt: skip
PARTIAL40 = [0.99, 0.44, 0.69, 0.64, 0.55, 0.71, 0.46, 0.86, 0.91, 0.39, 0.63, 0.49, 0.36, 0.93, 0.6, 0.4, 0.77,
             0.44, 0.93, 0.45, 0.32, 0.44, 0.54, 0.63, 0.93, 0.79, 0.54, 0.31, 0.41, 1.0, 0.62, 0.78, 0.34, 0.32,
             0.89, 0.71, 0.52, 0.52, 0.36, 0.42]  # fmt: skip
# scipy.stats.ttest_rel(PARTIAL40, BINARY40).pvalue, and scipy.stats.t.interval(0.95, 39, loc=mean(d),
# scale=sem(d)) of d = PARTIAL40 - BINARY40 (scipy 1.17.1); the other order negates the interval, same p
P_TTEST_40 = 0.7843192156726939
T_INTERVAL_40 = (-0.16324305905557338, 0.21474305905557337)


@pytest.mark.parametrize("binary_side", ["a", "b"])
def test_mcnemar_needs_both_runs_binary_so_one_binary_side_gets_the_t_test(binary_side: str) -> None:
    # README: McNemar with Newcombe's interval "for 0/1 scores"; "for other scores a Student-t interval on the
    # differences with the paired t-test"
    if binary_side == "a":
        result = paired_comparison(BINARY40, PARTIAL40)
        low, high = T_INTERVAL_40
    else:
        result = paired_comparison(PARTIAL40, BINARY40)
        low, high = -T_INTERVAL_40[1], -T_INTERVAL_40[0]
    assert (result.test, result.interval) == ("paired-t", "t")
    assert result.p_value == pytest.approx(P_TTEST_40, rel=1e-9)
    assert (result.low, result.high) == pytest.approx((low, high), rel=1e-9)


# --------------------------------------------------------------------------------------------------
# artifacts: a torn last line longer than the 64 KiB repair_tail reads at a time
# --------------------------------------------------------------------------------------------------


def test_repair_tail_keeps_the_complete_lines_before_a_torn_line_longer_than_64_kib(tmp_path: Path) -> None:
    # README: a samples file may end in a "torn last line (no newline) and resume truncates it" -- that line only
    complete = b'{"sample_id":"a","epoch":0}\n{"sample_id":"b","epoch":0}\n'
    torn = b'{"sample_id":"c","epoch":0,"output":"' + b"x" * 200_000  # a long answer cut mid-write
    path = tmp_path / "samples.jsonl"
    path.write_bytes(complete + torn)
    assert repair_tail(path) == len(torn)
    assert path.read_bytes() == complete


# --------------------------------------------------------------------------------------------------
# the gateway: a server's wait beyond the cap, and reasoning text that reflects the key
# --------------------------------------------------------------------------------------------------


def _request(number: int) -> GenerateRequest:
    text = f"Question {number}: [[answer: {number}]]"
    return GenerateRequest(
        messages=[ChatMessage(role="user", content=text)],
        config=GenerateConfig(),
        sample=Sample(id=f"s{number}", input=text, target=str(number)),
    )


async def test_a_503_asking_for_a_wait_within_the_cap_is_retried_after_it(server: FakeLLMServer) -> None:
    # README: "A wait is capped at 60 s" (here the policy's cap, 0.05 s): a 503 asking for less is waited for,
    # then retried (one asking for more fails at once, and past 10 minutes stops the run: test_resilience).
    server.script(Reply(kind="error", status=503, headers={"retry-after": "0.04"}, message="Service Unavailable"))
    provider = create_provider(
        "openai-compatible/fake", {"base_url": server.base_url}, ProviderContext(settings=Settings())
    )
    gateway = Gateway(provider, RetryPolicy(max_retries=1, initial_wait_s=0.01, max_wait_s=0.05))
    try:
        outcome = await asyncio.wait_for(gateway.generate(_request(7)), 10)
    finally:
        await gateway.aclose()
    assert outcome.completion is not None and outcome.completion.text == "7"
    assert (outcome.attempts, outcome.retries) == (2, {"overloaded": 1})
    assert len(server.generation_requests()) == 2


def _chat_body(content: str, reasoning: str) -> dict[str, Any]:
    """A Chat Completions answer with vLLM's ``reasoning_content`` ("{key}": the key the server was sent)."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "reasoning_content": reasoning},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }


@pytest.fixture
def project(task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch) -> TaskRoot:
    """The adder task root as the working directory, with a private response cache."""
    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(task_root.root / "cache"))
    monkeypatch.chdir(task_root.root)
    return task_root


def test_a_key_reflected_into_the_reasoning_text_is_stored_redacted(
    cli: Cli, project: TaskRoot, server: FakeLLMServer
) -> None:
    # README: keys "are never written to a manifest, record, summary, log line or error message"; an answer
    # reflecting the key "is stored and cached with [REDACTED]" -- its thinking is part of the stored answer
    server.script(Reply(body=_chat_body("1", "The request carried Authorization: Bearer {key}; 0 + 1 = 1.")))
    result = cli("run", "--task", "tasks/adder.toml", "--model", "openai-compatible/fake",
                 "--model-arg", f"base_url={server.base_url}", "--model-arg", f"api_key={CANARY}", "--cache",
                 "--limit", "1", "--max-retries", "0", "-q", "--output-dir", "results", "--run-id", "r1")  # fmt: skip
    assert result.code == 0, result.err
    assert server.generation_requests()[0].headers["authorization"] == f"Bearer {CANARY}"
    (record,) = [
        json.loads(line) for line in (project.root / "results" / "r1" / "samples.jsonl").read_text().splitlines()
    ]
    assert record["thinking"] == "The request carried Authorization: Bearer [REDACTED]; 0 + 1 = 1."
    assert CANARY not in result.out + result.err
    for path in project.root.rglob("*"):
        if path.is_file():
            assert CANARY.encode() not in path.read_bytes(), path


# --------------------------------------------------------------------------------------------------
# exact_match numeric: a fraction answer against a percent reference
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "reference"),
    [("0.5", "50%"), ("The answer is 0.125", "12.5%"), ("0.05", "5 %")],
)
def test_numeric_mode_matches_a_fraction_answer_to_a_percent_reference(prediction: str, reference: str) -> None:
    # README: numeric mode compares values, "50%" = "0.5" -- in either role, so a reference of 50% takes 0.5
    assert exact_match(prediction, reference, "numeric") == 1.0


def test_numeric_mode_reads_a_percent_reference_as_hundredths_not_the_answer_as_percent() -> None:
    # 0.5% is 0.005: an answer of 50 is a hundred times too big (50 would have to be read as 50% to match)
    assert exact_match("50", "0.5%", "numeric") == 0.0


# --------------------------------------------------------------------------------------------------
# gates: a run one record short
# --------------------------------------------------------------------------------------------------


def test_a_report_gate_on_a_run_missing_one_record_fails_naming_it(cli: Cli, task_root: TaskRoot) -> None:
    # README: "on a run with records missing -- interrupted, killed, or still being written -- every gate fails,
    # first with `gate failed: run incomplete: 1,843 of 2,000 records missing; resume it first`"
    out = task_root.root / "results"
    made = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--model", "mock/m", "--model-arg",
               "skill=1", "--output-dir", out, "--run-id", "r1", "--quiet")  # fmt: skip
    assert made.code == 0, made.err
    run = out / "r1"
    lines = (run / "samples.jsonl").read_bytes().splitlines(keepends=True)
    assert len(lines) == 40
    (run / "samples.jsonl").write_bytes(b"".join(lines[:39]))  # killed before writing its last record
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))  # SIGKILL's leftovers
    result = cli("report", "--run", run, "--fail-below", "0.5")
    assert result.code == 1
    assert result.err.strip() == "error: gate failed: run incomplete: 1 of 40 records missing; resume it first"


# --------------------------------------------------------------------------------------------------
# cost: a price with no cached-input or cache-write rate bills those tokens at the input rate
# --------------------------------------------------------------------------------------------------


def _priced(server: FakeLLMServer, model: str, **settings: Any) -> Provider:
    """``model`` against ``server`` with the per-run price override of $2 in, $10 out per million tokens."""
    args = {"base_url": server.base_url, "price_in": "2", "price_out": "10"}
    return create_provider(model, args, ProviderContext(settings=Settings(**settings)))


async def test_cached_tokens_cost_the_input_price_when_no_cached_price_is_given(server: FakeLLMServer) -> None:
    # Price in pricing.py: "Cached input and cache writes default to the input price"; a per-run override without
    # price_cached_in has no cached price
    body = _chat_body("4", "")
    body["usage"] = {"prompt_tokens": 1000, "completion_tokens": 50, "total_tokens": 1050,
                     "prompt_tokens_details": {"cached_tokens": 400}}  # fmt: skip
    server.script(Reply(body=body))
    completion = await call(_priced(server, "openai-compatible/fake"))
    assert completion.usage.cached_tokens == 400
    # (600 fresh * 2 + 400 cached * 2 + 50 out * 10) / 1e6, by hand
    assert completion.cost_usd == pytest.approx(0.0025, rel=1e-12)


async def test_cache_writes_cost_the_input_price_when_no_write_price_is_given(server: FakeLLMServer) -> None:
    # Price in pricing.py: "Cached input and cache writes default to the input price"; Anthropic's usage counts cache
    # writes (cache_creation_input_tokens) apart from input_tokens
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [{"type": "text", "text": "4"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 100, "cache_creation_input_tokens": 200, "output_tokens": 50},
    }
    server.script(Reply(body=body))
    provider = _priced(server, "anthropic/claude-sonnet-4-20250514", anthropic_api_key=SecretStr("sk-ant-test-0"))
    completion = await call(provider)
    assert completion.usage.prompt_tokens == 300
    # (100 fresh * 2 + 200 written * 2 + 50 out * 10) / 1e6, by hand
    assert completion.cost_usd == pytest.approx(0.0011, rel=1e-12)
