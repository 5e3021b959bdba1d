"""Wire fidelity: bodies the providers document (or send in the field) that the harness once misread.

Each test sends the exact body on a real socket (the fake server's ``Reply(body=...)`` / ``Reply(events=...)``)
and checks what the provider makes of it: an answer, a per-sample error, or a stop of the whole run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import call, failure
from conftest import provider_request as request
from fake_llm_server import FakeLLMServer, Reply, answer, bad_request, server_error
from pydantic import SecretStr

from eval_harness.config import Settings
from eval_harness.errors import (
    AuthenticationError,
    ConfigError,
    ModelNotFoundError,
    ProviderError,
    ProviderHTTPError,
    ProviderResponseError,
    QuotaExhaustedError,
)
from eval_harness.providers.anthropic import ADAPTIVE_THINKING_ROOM
from eval_harness.providers.base import Provider, ProviderContext, create_provider
from eval_harness.providers.gateway import Gateway, RetryPolicy
from eval_harness.providers.openai import REASONING_ROOM
from eval_harness.types import GenerateConfig

OPENAI_KEY = "sk-test-openai-0123456789"
ANTHROPIC_KEY = "sk-ant-test-0123456789"
REPO = Path(__file__).resolve().parent.parent
CANARY = "sk-canary-quota-4e8b1d7c2a90"
THOUGHT = "Two plus two: count two, then two more, which makes four. " * 4  # ~60 tokens, more than 16


def context() -> ProviderContext:
    return ProviderContext(
        settings=Settings(openai_api_key=SecretStr(OPENAI_KEY), anthropic_api_key=SecretStr(ANTHROPIC_KEY))
    )


def make(model_id: str, server: FakeLLMServer | None = None, **args: str) -> Provider:
    base = {"base_url": server.base_url} if server is not None else {}
    return create_provider(model_id, {**base, **args}, context())


def chat_body(message: dict[str, Any], finish: str, usage: tuple[int, int] = (20, 10)) -> dict[str, Any]:
    """A Chat Completions body (OpenAI API reference, "The chat completion object")."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


# 1. message.content: null on a 200 ------------------------------------------------------------------------
# vLLM with a reasoning parser, max_tokens reached while thinking (vllm-project/vllm#52640; older vLLM and LM
# Studio name the field reasoning_content)
VLLM_CUT_WHILE_REASONING = {
    "id": "chatcmpl-8e0d",
    "object": "chat.completion",
    "created": 1755146543,
    "model": "Qwen/Qwen3-8B",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "reasoning": "Okay, the user asks 2+2. Let me think step by step about",
                "tool_calls": [],
            },
            "logprobs": None,
            "finish_reason": "length",
            "stop_reason": None,
        }
    ],
    "usage": {"prompt_tokens": 30, "total_tokens": 46, "completion_tokens": 16, "prompt_tokens_details": None},
}


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content"])
async def test_null_content_cut_at_max_tokens_is_an_empty_answer_keeping_reasoning_usage_and_cost(
    server: FakeLLMServer, field: str
) -> None:
    body = json.loads(json.dumps(VLLM_CUT_WHILE_REASONING))
    message = body["choices"][0]["message"]
    message[field] = message.pop("reasoning")
    server.script(Reply(body=body, headers={"x-request-id": "req_vllm"}))
    provider = make("openai-compatible/qwen3", server, price_in="1", price_out="2")
    completion = await call(provider, request(max_tokens=16))
    assert completion.text == ""
    assert completion.finish_reason == "length"
    assert completion.thinking == "Okay, the user asks 2+2. Let me think step by step about"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (30, 16)
    assert completion.cost_usd == pytest.approx((30 * 1 + 16 * 2) / 1e6)  # by hand: USD per million tokens
    assert completion.model == "Qwen/Qwen3-8B"
    assert completion.request_id == "req_vllm"


async def test_null_content_stopped_by_the_content_filter_is_an_empty_answer_with_its_usage(
    server: FakeLLMServer,
) -> None:
    # Azure OpenAI's filter: finish_reason content_filter and no content (microsoft/semantic-kernel#5240)
    body = chat_body({"content": None, "refusal": None}, "content_filter", usage=(30, 12))
    body["choices"][0]["content_filter_results"] = {"hate": {"filtered": True, "severity": "high"}}
    server.script(Reply(body=body))
    completion = await call(make("openai/gpt-4o", server))
    assert (completion.text, completion.finish_reason) == ("", "content_filter")
    assert completion.cost_usd == pytest.approx((30 * 2.5 + 12 * 10.0) / 1e6)  # gpt-4o list price, by hand
    assert completion.model == "gpt-4o-2024-08-06" and completion.request_id is not None


async def test_a_message_that_is_not_an_object_is_still_a_response_error(server: FakeLLMServer) -> None:
    body = chat_body({}, "stop")
    body["choices"][0]["message"] = "4"
    server.script(Reply(body=body))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderResponseError) and "choices[0].message" in str(error)


# 2. Anthropic adaptive thinking ---------------------------------------------------------------------------
# platform.claude.com "Adaptive thinking" and "Effort": {"thinking": {"type": "adaptive"}} with the effort in a
# top-level output_config; thinking refuses a temperature, so sampling options are left out as for budgets.
async def test_adaptive_thinking_sends_the_adaptive_type_and_effort_without_sampling(server: FakeLLMServer) -> None:
    server.script(answer("4", thinking="2 plus 2 is 4."))
    provider = make("anthropic/claude-opus-4-7", server, thinking="adaptive", effort="medium")
    completion = await call(provider, request(temperature=0.0, top_p=0.9, max_tokens=20))
    sent = server.requests[-1].body
    assert sent["thinking"] == {"type": "adaptive", "display": "summarized"}  # 4.7 omits the text unless asked
    assert sent["output_config"] == {"effort": "medium"}
    assert "temperature" not in sent and "top_p" not in sent
    assert sent["max_tokens"] == 20 + ADAPTIVE_THINKING_ROOM  # the answer's share plus room to think
    assert (completion.text, completion.thinking) == ("4", "2 plus 2 is 4.")


async def test_adaptive_thinking_without_an_effort_sends_no_output_config(server: FakeLLMServer) -> None:
    await call(make("anthropic/claude-sonnet-4-6", server, thinking="adaptive"))
    sent = server.requests[-1].body
    assert sent["thinking"] == {"type": "adaptive", "display": "summarized"} and "output_config" not in sent


def test_an_effort_outside_the_four_levels_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="effort"):
        make("anthropic/claude-opus-4-7", thinking="adaptive", effort="extreme")


def test_thinking_and_thinking_budget_together_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="thinking=adaptive or thinking_budget=N, not both"):
        make("anthropic/claude-opus-4-6", thinking="adaptive", thinking_budget="2048")


async def test_a_thinking_budget_is_sent_to_models_before_4_7_and_to_names_that_say_no_version(
    server: FakeLLMServer,
) -> None:
    for model in ("claude-opus-4-5", "claude-3-7-sonnet-latest", "my-gateway-alias"):
        await call(make(f"anthropic/{model}", server, thinking_budget="2048"), request(max_tokens=32))
        assert server.requests[-1].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_a_thinking_budget_for_claude_4_7_and_later_is_refused_before_the_run() -> None:
    # the API answers 400 on every sample: thinking on 4.7 and later is adaptive only
    for model in ("claude-opus-4-7", "claude-sonnet-4-8-20261001", "claude-opus-5", "claude-fable-5-1"):
        with pytest.raises(ConfigError, match=r"Claude 4\.7 and later \(Fable and Mythos 5 too\) refuse a thinking"):
            make(f"anthropic/{model}", thinking_budget="2048")


async def test_claude_mythos_preview_takes_a_thinking_budget_and_no_temperature(server: FakeLLMServer) -> None:
    # the troubleshooting table: Mythos Preview takes adaptive and extended thinking, and cannot stop thinking
    await call(make("anthropic/claude-mythos-preview", server, thinking_budget="2048"), request(temperature=0.0))
    sent = server.requests[-1].body
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048} and "temperature" not in sent


# 3. quota exhaustion stops the run ------------------------------------------------------------------------
# Anthropic's spend cap (platform.claude.com "Rate limits"): 429, rate_limit_error, details.error_code
ANTHROPIC_SPEND_LIMIT = {
    "type": "error",
    "error": {
        "type": "rate_limit_error",
        "message": "You have reached your specified API usage limits.",
        "details": {"error_code": "enforced_spend_limit_reached"},
    },
    "request_id": "req_s",
}


async def test_anthropics_spend_limit_429_is_a_quota_error_that_is_not_retried(server: FakeLLMServer) -> None:
    server.script(Reply(status=429, body=ANTHROPIC_SPEND_LIMIT, headers={"request-id": "req_s"}))
    error = await failure(make("anthropic/claude-sonnet-4-5", server))
    assert isinstance(error, QuotaExhaustedError) and isinstance(error, AuthenticationError)
    assert "You have reached your specified API usage limits." in str(error)


async def test_an_anthropic_429_without_the_spend_code_is_still_a_rate_limit(server: FakeLLMServer) -> None:
    body = json.loads(json.dumps(ANTHROPIC_SPEND_LIMIT))
    body["error"]["details"] = {"error_code": "something_else"}
    server.script(Reply(status=429, body=body))
    error = await failure(make("anthropic/claude-sonnet-4-5", server))
    assert isinstance(error, ProviderHTTPError) and error.retry_cause == "rate_limit"


# Anthropic's prepaid credits used up: a 400 whose only mark is its message (as reported in
# anthropics/claude-code#66314 and anthropics/claude-quickstarts#229)
ANTHROPIC_NO_CREDIT = {
    "type": "error",
    "error": {
        "type": "invalid_request_error",
        "message": "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to "
        "upgrade or purchase credits.",
    },
    "request_id": "req_c",
}


async def test_anthropics_credit_balance_400_is_a_quota_error(server: FakeLLMServer) -> None:
    # before: a per-sample 400, so a run with no credit failed every sample in turn and exited 0
    server.script(Reply(status=400, body=ANTHROPIC_NO_CREDIT))
    error = await failure(make("anthropic/claude-sonnet-4-5", server))
    assert isinstance(error, QuotaExhaustedError) and "Your credit balance is too low" in str(error)


async def test_anthropics_usage_limits_400_is_a_quota_error(server: FakeLLMServer) -> None:
    # wire-s32 2: the organisation's own usage limit (quoted in anthropics/claude-code#2127 and #38035) failed
    # every sample in turn, exit 0
    body = json.loads(json.dumps(ANTHROPIC_NO_CREDIT))
    body["error"]["message"] = (
        "You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC."
    )
    server.script(Reply(status=400, body=body))
    error = await failure(make("anthropic/claude-sonnet-4-5", server))
    assert isinstance(error, QuotaExhaustedError) and "You will regain access on 2026-04-01" in str(error)


async def test_another_anthropic_400_stays_a_per_sample_error(server: FakeLLMServer) -> None:
    body = json.loads(json.dumps(ANTHROPIC_NO_CREDIT))
    body["error"]["message"] = "prompt is too long: 210000 tokens > 200000 maximum"
    server.script(Reply(status=400, body=body))
    error = await failure(make("anthropic/claude-sonnet-4-5", server))
    assert isinstance(error, ProviderHTTPError) and not isinstance(error, AuthenticationError)


@pytest.mark.parametrize("code", ["insufficient_quota", "billing_hard_limit_reached"])
async def test_openais_quota_429s_are_quota_errors(server: FakeLLMServer, code: str) -> None:
    server.script(Reply(kind="error", status=429, message="You exceeded your current quota.", error_code=code))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, QuotaExhaustedError) and "You exceeded your current quota." in str(error)


def _cli(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "EVAL_HARNESS_"))}
    clean["EVAL_HARNESS_CACHE_DIR"] = str(tmp_path / "cache")
    return subprocess.run(
        [sys.executable, "-m", "eval_harness", *args],
        cwd=tmp_path, env={**clean, **env}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _run(server: FakeLLMServer, model: str, limit: int = 12) -> list[str]:
    return ["run", "--task", "capability_profile", "--model", model, "--model-arg", f"base_url={server.base_url}",
            "--output-dir", "results", "--run-id", "r1", "--limit", str(limit), "--concurrency", "2",
            "--max-retries", "3", "-q"]  # fmt: skip


@pytest.mark.parametrize(
    ("model", "variable", "reply", "said"),
    [
        (
            "openai/gpt-4o",
            "OPENAI_API_KEY",
            Reply(kind="error", status=429, message="Quota used up, key {key}.", error_code="insufficient_quota"),
            "Quota used up, key [REDACTED].",
        ),
        (
            "anthropic/claude-sonnet-4-5",
            "ANTHROPIC_API_KEY",
            Reply(status=429, body=ANTHROPIC_SPEND_LIMIT),
            "You have reached your specified API usage limits.",
        ),
    ],
)
def test_quota_exhaustion_stops_the_run_with_one_line_naming_the_providers_message(
    server: FakeLLMServer, tmp_path: Path, model: str, variable: str, reply: Reply, said: str
) -> None:
    server.rule = lambda _: reply
    result = _cli(tmp_path, *_run(server, model), env={variable: CANARY})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and said in lines[0], lines
    assert CANARY not in result.stderr
    assert len(server.generation_requests()) <= 2  # one per worker at most: no retries, no further samples
    manifest = json.loads((tmp_path / "results" / "r1" / "manifest.json").read_text())
    assert manifest["status"] == "failed"


# 4. the Responses API's minimum max_output_tokens --------------------------------------------------------
def test_responses_api_max_tokens_below_16_is_a_config_error_before_the_run() -> None:
    provider = make("openai/gpt-4o", api="responses")
    with pytest.raises(ConfigError, match="max_output_tokens >= 16"):
        provider.check_generation(GenerateConfig(max_tokens=15))
    provider.check_generation(GenerateConfig(max_tokens=16))
    make("openai/gpt-4o").check_generation(GenerateConfig(max_tokens=5))  # Chat Completions has no such floor


# 5. a 200 whose body is an error object ------------------------------------------------------------------
# OpenRouter answers 200 before the upstream runs, so failures come in the body (openrouter.ai/docs "Errors")
OPENROUTER_ERROR = {
    "error": {"message": "Upstream provider returned 502: model overloaded", "code": 502, "metadata": {}},
    "user_id": "u",
}


@pytest.mark.parametrize(
    ("code", "cause"),
    [(502, "server_error"), (503, "overloaded"), (429, "rate_limit"), (408, "timeout"), (400, None)],
)
async def test_a_200_error_body_is_an_http_error_with_the_servers_message(
    server: FakeLLMServer, code: int, cause: str | None
) -> None:
    body = json.loads(json.dumps(OPENROUTER_ERROR))
    body["error"]["code"] = code
    server.script(Reply(body=body))
    error = await failure(make("openai-compatible/m", server))
    assert isinstance(error, ProviderHTTPError)
    assert "Upstream provider returned 502: model overloaded" in str(error)
    assert error.retry_cause == cause


async def test_a_200_error_body_from_the_responses_api_is_an_http_error(server: FakeLLMServer) -> None:
    server.script(Reply(body=OPENROUTER_ERROR))
    error = await failure(make("openai/gpt-4o", server, api="responses"))
    assert isinstance(error, ProviderHTTPError) and error.retry_cause == "server_error"
    assert "Upstream provider returned 502" in str(error)


async def test_a_200_error_body_with_a_5xx_code_is_retried_to_an_answer(server: FakeLLMServer) -> None:
    server.script(Reply(body=OPENROUTER_ERROR), answer("4"))
    gateway = Gateway(make("openai-compatible/m", server), RetryPolicy(max_retries=2, initial_wait_s=0.0))
    try:
        outcome = await gateway.generate(request())
    finally:
        await gateway.aclose()
    assert outcome.completion is not None and outcome.completion.text == "4"
    assert outcome.attempts == 2 and outcome.retries == {"server_error": 1}


# 6. stream=true answered with plain JSON ------------------------------------------------------------------
async def test_stream_answered_with_a_json_body_is_read_as_a_normal_reply(server: FakeLLMServer) -> None:
    server.script(Reply(body=chat_body({"content": "4"}, "stop", usage=(20, 1))))
    completion = await call(make("openai-compatible/m", server, stream="true"))
    assert server.requests[-1].body["stream"] is True
    assert (completion.text, completion.finish_reason, completion.usage.completion_tokens) == ("4", "stop", 1)


async def test_stream_answered_with_a_json_error_body_reports_the_servers_message(server: FakeLLMServer) -> None:
    server.script(Reply(body=OPENROUTER_ERROR))
    error = await failure(make("openai-compatible/m", server, stream="true"))
    assert isinstance(error, ProviderHTTPError) and "Upstream provider returned 502" in str(error)


async def test_an_event_stream_labelled_as_json_is_still_read_as_events(server: FakeLLMServer) -> None:
    events = [{"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": "stop"}]}]
    server.script(Reply(events=[*events, "[DONE]"], headers={"content-type": "application/json"}))
    completion = await call(make("openai-compatible/m", server, stream="true"))
    assert (completion.text, completion.finish_reason) == ("4", "stop")


# 7. refusals ----------------------------------------------------------------------------------------------
REFUSAL = "I'm sorry, I can't help with that."


def _refusal_events() -> list[Any]:
    # Chat Completions streaming: the refusal arrives in delta.refusal (OpenAI API reference, "The chat
    # completion chunk object")
    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-4o", "choices": [choice]}

    return [
        chunk({"role": "assistant", "content": None, "refusal": ""}, None),
        chunk({"refusal": "I'm sorry, "}, None),
        chunk({"refusal": "I can't help with that."}, None),
        chunk({}, "stop"),
        {**chunk({}, None), "choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}},
        "[DONE]",
    ]


async def test_a_refusal_is_its_text_with_finish_reason_refusal(server: FakeLLMServer) -> None:
    server.script(Reply(body=chat_body({"content": None, "refusal": REFUSAL}, "stop")))
    completion = await call(make("openai/gpt-4o", server))
    assert (completion.text, completion.finish_reason) == (REFUSAL, "refusal")


async def test_a_streamed_refusal_is_recorded_as_the_same_refusal(server: FakeLLMServer) -> None:
    server.script(Reply(events=_refusal_events()))
    completion = await call(make("openai/gpt-4o", server, stream="true"))
    assert (completion.text, completion.finish_reason) == (REFUSAL, "refusal")
    assert completion.usage.completion_tokens == 10


async def test_a_responses_api_refusal_part_gives_finish_reason_refusal(server: FakeLLMServer) -> None:
    # Responses API reference: a message item's content holds {"type": "refusal", "refusal": "..."}
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "gpt-4o",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "refusal", "refusal": REFUSAL}],
            }
        ],
        "usage": {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30},
    }
    server.script(Reply(body=body))
    completion = await call(make("openai/gpt-4o", server, api="responses"))
    assert (completion.text, completion.finish_reason) == (REFUSAL, "refusal")


# 8. options the API refuses, checked before the run ------------------------------------------------------
def test_an_anthropic_temperature_above_1_is_a_config_error_before_the_run() -> None:
    provider = make("anthropic/claude-sonnet-4-5")
    with pytest.raises(ConfigError, match=r"temperature .*0 to 1"):
        provider.check_generation(GenerateConfig(temperature=1.5))
    provider.check_generation(GenerateConfig(temperature=1.0))


async def test_an_anthropic_temperature_left_out_for_thinking_is_not_refused(server: FakeLLMServer) -> None:
    provider = make("anthropic/claude-sonnet-4-5", server, thinking_budget="1024")
    provider.check_generation(GenerateConfig(temperature=1.5))  # above the API's 1, but never sent
    await call(provider, request(temperature=1.5, max_tokens=32))
    sent = server.requests[-1].body
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 1024} and "temperature" not in sent


def test_more_than_4_stop_sequences_on_openai_chat_are_a_config_error() -> None:
    five = GenerateConfig(stop=["a", "b", "c", "d", "e"])
    with pytest.raises(ConfigError, match="at most 4 stop sequences"):
        make("openai/gpt-4o").check_generation(five)
    make("openai/gpt-4o").check_generation(GenerateConfig(stop=["a", "b", "c", "d"]))
    make("openai-compatible/m", base_url="http://127.0.0.1:9/v1").check_generation(five)  # other servers differ
    make("openai/o3").check_generation(five)  # not sent: cut here (reasoning models refuse stop)


@pytest.mark.parametrize("effort", ["none", "xhigh"])
async def test_reasoning_effort_accepts_none_and_xhigh(server: FakeLLMServer, effort: str) -> None:
    await call(make("openai/gpt-5.1", server, reasoning_effort=effort))
    assert server.requests[-1].body["reasoning_effort"] == effort


# 9. x-should-retry ----------------------------------------------------------------------------------------
async def test_x_should_retry_false_stops_retries_of_a_5xx(server: FakeLLMServer) -> None:
    reply = server_error()
    reply.headers = {"x-should-retry": "false"}
    server.script(reply)
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderHTTPError) and error.retry_cause is None


async def test_x_should_retry_true_retries_a_4xx(server: FakeLLMServer) -> None:
    reply = bad_request("Try again.")
    reply.headers = {"x-should-retry": "true"}
    server.script(reply)
    gateway = Gateway(make("anthropic/claude-sonnet-4-5", server), RetryPolicy(max_retries=2, initial_wait_s=0.0))
    try:
        outcome = await gateway.generate(request())
    finally:
        await gateway.aclose()
    # the status names no cause of its own, so the server's request is counted as "other" (walk2-s27: it was
    # counted as a server error, which a 400 is not)
    assert outcome.completion is not None and len(server.requests) == 2
    assert outcome.attempts == 2 and outcome.retries == {"other": 1}


# 10. a failed request keeps its request id ----------------------------------------------------------------
async def test_an_http_error_keeps_the_providers_request_id(server: FakeLLMServer) -> None:
    body = {"type": "error", "error": {"type": "request_too_large", "message": "Request exceeds the maximum size."}}
    server.script(Reply(status=413, body=body, headers={"request-id": "req_413"}))
    error = await failure(make("anthropic/claude-sonnet-4-5", server))
    assert isinstance(error, ProviderError) and error.request_id == "req_413"


async def test_a_malformed_200_keeps_the_providers_request_id(server: FakeLLMServer) -> None:
    server.script(Reply(body={"id": "chatcmpl-x", "object": "chat.completion"}, headers={"x-request-id": "req_bad"}))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderResponseError) and error.request_id == "req_bad"


def test_a_failed_samples_record_keeps_the_request_id(server: FakeLLMServer, tmp_path: Path) -> None:
    server.rule = lambda _: bad_request("This prompt is refused.")
    result = _cli(tmp_path, *_run(server, "openai/gpt-4o", limit=1), env={"OPENAI_API_KEY": CANARY})
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "results" / "r1" / "samples.jsonl").read_text().splitlines()[0])
    assert record["error"] is not None and str(record["request_id"]).startswith("req_err_")


# audit-s21-wire: Anthropic ------------------------------------------------------------------------------------
# Claude 4.7 and later refuse temperature/top_p ("`temperature` is deprecated for this model", a 400) and thinking
# budgets, and omit the thinking text unless display is "summarized" (Anthropic's migration guide to Opus 4.7; the
# fake server refuses and omits as the API does).
def test_claude_4_7_gets_no_temperature_and_the_run_says_so(server: FakeLLMServer, tmp_path: Path) -> None:
    # before: every built-in task sets a temperature, so every sample failed with a 400
    result = _cli(tmp_path, *_run(server, "anthropic/claude-opus-4-7", limit=3), env={"ANTHROPIC_API_KEY": CANARY})
    assert result.returncode == 0, result.stderr
    assert "note: anthropic/claude-opus-4-7 takes no temperature or top_p: temperature 0 not sent" in result.stderr
    assert all("temperature" not in r.body for r in server.requests) and len(server.requests) == 3
    records = [json.loads(line) for line in (tmp_path / "results" / "r1" / "samples.jsonl").read_text().splitlines()]
    assert [r["error"] for r in records] == [None, None, None]


async def test_adaptive_thinking_on_claude_4_7_asks_for_its_text(server: FakeLLMServer) -> None:
    server.script(answer("4", thinking="2 plus 2 is 4."))
    completion = await call(make("anthropic/claude-opus-4-7", server, thinking="adaptive"), request())
    assert completion.thinking == "2 plus 2 is 4."  # the fake, as the API, omits it without display: summarized


# OpenAI's reasoning models from gpt-5 on, gpt-6 and later included, take temperature and top_p at reasoning
# effort none only ("When reasoning effort is not none, remove temperature, top_p", the deployment checklist);
# GPT-6.2 refuses effort none (its model page); from GPT-5.6 on cache writes are billed and reported as
# cache_write_tokens (the prompt-caching guide). The fake server refuses as the API does.
async def test_gpt_6_models_are_reasoning_models_sent_no_temperature_top_p_or_stop(server: FakeLLMServer) -> None:
    # before: only o-series and gpt-5 names were, so a task's temperature 0 failed every gpt-6 sample with a 400
    for model, api in (("gpt-6-sol", "chat"), ("gpt-6.1-terra", "responses"), ("gpt-6.2-sol", "chat")):
        provider = make(f"openai/{model}", server, api=api)
        completion = await call(provider, request(temperature=0.0, top_p=0.9, stop=["\n\n"], max_tokens=40))
        sent = server.requests[-1].body
        assert not {"temperature", "top_p", "stop"} & set(sent) and completion.text == "4", model
        (note,) = provider.generation_notes(GenerateConfig(temperature=0.0, stop=["\n\n"]))
        assert note == (
            f"note: openai/{model} is a reasoning model, which takes no temperature, top_p or stop: temperature 0 "
            "and stop 1 sequence not sent (the answer is cut at the stop sequences here)"
        )


async def test_at_reasoning_effort_none_temperature_and_top_p_are_sent_and_stop_cut_here(
    server: FakeLLMServer,
) -> None:
    for api in ("chat", "responses"):
        provider = make("openai/gpt-6-sol", server, api=api, reasoning_effort="none")
        await call(provider, request(temperature=0.0, top_p=0.9, stop=["\n\n"], max_tokens=40))
        sent = server.requests[-1].body
        assert (sent["temperature"], sent["top_p"]) == (0.0, 0.9) and "stop" not in sent, api
        (note,) = provider.generation_notes(GenerateConfig(temperature=0.0, stop=["\n\n"]))
        assert note == (
            "note: openai/gpt-6-sol is a reasoning model, which takes no stop: stop 1 sequence not sent (the answer "
            "is cut at the stop sequences here)"
        )
    assert make("openai/gpt-6-sol", reasoning_effort="none").generation_notes(GenerateConfig(temperature=0.0)) == []


def test_reasoning_effort_none_for_gpt_6_2_is_refused_before_the_run() -> None:
    for model in ("gpt-6.2-sol", "gpt-6.2-astra"):
        with pytest.raises(ConfigError, match=f"openai/{model}: the API refuses reasoning_effort none for GPT-6.2"):
            make(f"openai/{model}", reasoning_effort="none").check_generation(GenerateConfig())
    make("openai/gpt-6.2-sol", reasoning_effort="low").check_generation(GenerateConfig())


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_cache_writes_reported_by_the_api_are_billed_at_their_rate(server: FakeLLMServer, api: str) -> None:
    # gpt-6.2-sol's page: $2 in, $0.10 cached in, $2.50 cache write, $10 out per million; before: the 6,000
    # tokens written were billed at the input price ($0.0212, 12% under)
    if api == "chat":
        body = chat_body({"content": "4"}, "stop", (10_000, 500))
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": 2_000, "cache_write_tokens": 6_000}
    else:
        body = {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-6.2-sol",
                "output": [{"type": "message", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": "4", "annotations": []}]}],
                "usage": {"input_tokens": 10_000, "output_tokens": 500, "total_tokens": 10_500,
                          "input_tokens_details": {"cached_tokens": 2_000, "cache_write_tokens": 6_000},
                          "output_tokens_details": {"reasoning_tokens": 0}}}  # fmt: skip
    server.script(Reply(body=body))
    completion = await call(make("openai/gpt-6.2-sol", server, api=api))
    # 2,000 fresh, 2,000 cached, 6,000 written, 500 out
    assert completion.cost_usd == pytest.approx((2_000 * 2 + 2_000 * 0.10 + 6_000 * 2.50 + 500 * 10) / 1e6)


@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_a_reasoning_model_gets_room_to_reason_on_top_of_the_answers_limit(
    server: FakeLLMServer, api: str
) -> None:
    # max_completion_tokens / max_output_tokens bound reasoning and answer together; before: the task's 32 was
    # sent as is, the model reasoned it away, and the answer was empty (finish reason length), scored wrong
    server.script(answer("4", thinking=THOUGHT * 4))
    provider = make("openai/gpt-6-sol", server, api=api)
    completion = await call(provider, request(max_tokens=32))
    sent = server.requests[-1].body
    assert sent["max_output_tokens" if api == "responses" else "max_completion_tokens"] == 32 + REASONING_ROOM
    assert (completion.text, completion.finish_reason) == ("4", "stop")
    assert completion.usage.reasoning_tokens is not None and completion.usage.reasoning_tokens > 32
    field = "max_output_tokens" if api == "responses" else "max_completion_tokens"
    assert provider.generation_notes(GenerateConfig(max_tokens=32)) == [
        f"note: openai/gpt-6-sol reasons before answering, into the same limit: sent {field} 25,032 (the answer's "
        "32 plus 25,000 to reason in)"
    ]


async def test_at_reasoning_effort_none_the_answers_limit_is_sent_as_is(server: FakeLLMServer) -> None:
    await call(make("openai/gpt-6-sol", server, reasoning_effort="none"), request(max_tokens=32))
    assert server.requests[-1].body["max_completion_tokens"] == 32
    await call(make("openai/gpt-4o", server), request(max_tokens=32))
    assert server.requests[-1].body["max_completion_tokens"] == 32


# Claude 5 and later, Fable and Mythos think unasked, into the same max_tokens as the answer ("Thinking on by
# default", the migration guide to Claude Opus 5); Opus 5.5 and later, Sonnet 5.5 and later, Fable and Mythos
# cannot be stopped ("thinking.type.disabled" is a 400, what's new in Claude Opus 5.5); Fable and Mythos refuse
# sampling parameters and budgets as 4.7 does (the migration guide to Claude Fable 5). The fake server does so.


async def test_a_model_that_thinks_by_default_gets_room_to_think_and_its_thinking_recorded(
    server: FakeLLMServer,
) -> None:
    # before: max_tokens 16 was sent as is, the model thought it away: an empty answer cut at max_tokens,
    # scored as a wrong answer, with no thinking text (omitted by default)
    for model in ("claude-opus-5", "claude-haiku-5-5", "claude-fable-5-1", "claude-mythos-preview"):
        server.script(answer("4", thinking=THOUGHT))
        completion = await call(make(f"anthropic/{model}", server), request(temperature=0.0, max_tokens=16))
        sent = server.requests[-1].body
        assert sent["thinking"] == {"type": "adaptive", "display": "summarized"}, model
        assert sent["max_tokens"] == 16 + ADAPTIVE_THINKING_ROOM and "temperature" not in sent, model
        assert (completion.text, completion.finish_reason, completion.thinking) == ("4", "end_turn", THOUGHT), model


async def test_a_model_that_thinks_only_when_asked_is_sent_no_thinking(server: FakeLLMServer) -> None:
    for model in ("claude-opus-4-8", "claude-sonnet-4-6", "claude-sonnet-4-5", "my-gateway-alias"):
        await call(make(f"anthropic/{model}", server), request(max_tokens=16))
        sent = server.requests[-1].body
        assert "thinking" not in sent and sent["max_tokens"] == 16, model


async def test_thinking_disabled_turns_default_thinking_off_where_the_model_allows(server: FakeLLMServer) -> None:
    server.script(answer("4", thinking=THOUGHT))
    provider = make("anthropic/claude-opus-5", server, thinking="disabled", effort="high")
    completion = await call(provider, request(temperature=0.0, max_tokens=16))
    sent = server.requests[-1].body
    assert sent["thinking"] == {"type": "disabled"} and sent["max_tokens"] == 16 and "temperature" not in sent
    assert (completion.text, completion.thinking) == ("4", None)  # the fake thinks only when asked or by default
    assert make("anthropic/claude-opus-5", thinking="disabled").generation_notes(GenerateConfig()) == []


@pytest.mark.parametrize("model", ["claude-opus-5-5", "claude-sonnet-5-5", "claude-fable-5", "claude-mythos-5-1"])
def test_thinking_disabled_is_refused_before_the_run_for_a_model_that_always_thinks(model: str) -> None:
    with pytest.raises(ConfigError, match=f"anthropic/{model} always thinks: the API refuses thinking disabled"):
        make(f"anthropic/{model}", thinking="disabled")


def test_thinking_disabled_at_effort_xhigh_or_max_is_refused_before_the_run_where_documented() -> None:
    for model in ("claude-opus-5", "claude-haiku-5-5"):
        for effort in ("xhigh", "max"):
            with pytest.raises(ConfigError, match=f"takes thinking disabled at effort high or below, not {effort}"):
                make(f"anthropic/{model}", thinking="disabled", effort=effort)
    for model in ("claude-sonnet-5", "claude-opus-4-7"):  # no such limit documented: the API decides
        make(f"anthropic/{model}", thinking="disabled", effort="xhigh")


async def test_the_room_to_think_stops_at_the_most_a_model_may_write(server: FakeLLMServer) -> None:
    # Claude 5 and later write at most 128K tokens: a task's 120,000 plus 16,000 was a 400 on every sample
    await call(make("anthropic/claude-opus-5", server), request(max_tokens=120_000))
    assert server.requests[-1].body["max_tokens"] == 128_000
    await call(make("anthropic/claude-opus-5", server), request(max_tokens=130_000))  # the task's own: as given
    assert server.requests[-1].body["max_tokens"] == 130_000


def test_a_run_on_a_model_that_thinks_by_default_says_so_and_answers(server: FakeLLMServer, tmp_path: Path) -> None:
    # before: the task's temperature 0 went to a Fable model, which refuses it: a 400 on every sample
    result = _cli(tmp_path, *_run(server, "anthropic/claude-fable-5-1", limit=3), env={"ANTHROPIC_API_KEY": CANARY})
    assert result.returncode == 0, result.stderr
    assert (
        "note: anthropic/claude-fable-5-1 thinks by default: sent adaptive thinking with max_tokens 16,032 (the "
        "answer's 32 plus 16,000 to think in); it cannot be turned off" in result.stderr
    )
    assert "note: anthropic/claude-fable-5-1 takes no temperature or top_p: temperature 0 not sent" in result.stderr
    records = [json.loads(line) for line in (tmp_path / "results" / "r1" / "samples.jsonl").read_text().splitlines()]
    assert [r["error"] for r in records] == [None, None, None] and len(server.requests) == 3


def test_a_dry_run_bounds_the_output_with_the_room_to_think(tmp_path: Path) -> None:
    # thinking is billed as output: the bound counts max_tokens as sent, the answer's share plus the room
    args = ["run", "--task", "capability_profile", "--dry-run", "--limit", "10", "--model"]
    thinking = _cli(tmp_path, *args, "anthropic/claude-opus-5", env={})
    plain = _cli(tmp_path, *args, "anthropic/claude-opus-4-8", env={})
    assert thinking.returncode == plain.returncode == 0, thinking.stderr + plain.stderr
    assert "output tokens ≤ 160,320" in thinking.stdout and "output tokens ≤ 320" in plain.stdout


def test_a_dry_run_prices_each_request_on_its_own(tmp_path: Path) -> None:
    # 300 prompts of ~1,000 tokens: 300,000 in all but no request above gpt-6-luna's 272K long-context line, so
    # the bound is the short rates' (before: the total was priced as one long request, at twice the input rate)
    data = tmp_path / "long.jsonl"
    data.write_text(
        "".join(json.dumps({"id": f"s{i}", "input": "word " * 800, "target": "1"}) + "\n" for i in range(300))
    )
    args = ["run", "--task", "capability_profile", "--dataset", str(data), "--dry-run", "--model", "openai/gpt-6-luna"]
    table = _cli(tmp_path, *args, env={})
    flat = _cli(tmp_path, *args, "--model-arg", "price_in=0.1", "--model-arg", "price_out=0.5", env={})
    assert table.returncode == flat.returncode == 0, table.stderr + flat.stderr
    costs = [
        line.partition("cost ≤ ")[2]
        for out in (table.stdout, flat.stdout)
        for line in out.splitlines()
        if "cost ≤" in line
    ]
    assert len(costs) == 2 and costs[0] == costs[1], costs


def anthropic_body(content: list[dict[str, Any]], usage: dict[str, Any]) -> dict[str, Any]:
    """A Messages API body (anthropic-sdk-python types/message.py)."""
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": content,
            "stop_reason": "end_turn", "stop_sequence": None, "usage": usage}  # fmt: skip


async def test_omitted_thinking_blocks_record_no_thinking(server: FakeLLMServer) -> None:
    # before: two omitted blocks ({"thinking": "", "signature": ...}) were recorded as thinking "\n\n"
    omitted = {"type": "thinking", "thinking": "", "signature": "c2ln"}
    content = [omitted, {"type": "text", "text": "4"}, omitted]
    server.script(Reply(body=anthropic_body(content, {"input_tokens": 10, "output_tokens": 5})))
    completion = await call(make("anthropic/claude-sonnet-4-5", server))
    assert (completion.text, completion.thinking) == ("4", None)


async def test_claudes_thinking_tokens_are_its_reasoning_tokens(server: FakeLLMServer) -> None:
    usage = {"input_tokens": 10, "output_tokens": 300, "output_tokens_details": {"thinking_tokens": 250}}
    server.script(Reply(body=anthropic_body([{"type": "text", "text": "4"}], usage)))
    completion = await call(make("anthropic/claude-sonnet-4-5", server))
    assert (completion.usage.completion_tokens, completion.usage.reasoning_tokens) == (300, 250)


async def test_a_usage_object_with_no_counts_leaves_the_cost_unknown_not_zero(server: FakeLLMServer) -> None:
    server.script(Reply(body=anthropic_body([{"type": "text", "text": "4"}], {})))
    completion = await call(make("anthropic/claude-sonnet-4-5", server))
    assert completion.cost_usd is None


async def test_hour_long_cache_writes_cost_twice_the_input_price(server: FakeLLMServer) -> None:
    usage = {"input_tokens": 100, "cache_creation_input_tokens": 3000, "output_tokens": 50,
             "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000}}  # fmt: skip
    server.script(Reply(body=anthropic_body([{"type": "text", "text": "4"}], usage)))
    completion = await call(make("anthropic/claude-sonnet-4-5", server))
    # Sonnet 4.5: $3 in, $3.75 a 5-minute write, 2 x $3 an hour-long one, $15 out per million tokens:
    # (100*3 + 1000*3.75 + 2000*6 + 50*15) / 1e6 = (300 + 3750 + 12000 + 750) / 1e6
    assert completion.cost_usd == pytest.approx(0.0168)


async def test_anthropics_402_billing_error_stops_the_run(server: FakeLLMServer) -> None:
    # platform.claude.com "Errors": 402 billing_error, "an issue with your billing or payment information"
    body = {"type": "error", "error": {"type": "billing_error", "message": "Payment method declined."}}
    server.script(Reply(status=402, body=body))
    error = await failure(make("anthropic/claude-sonnet-4-5", server))
    assert isinstance(error, QuotaExhaustedError) and "Payment method declined." in str(error)


def test_xhigh_is_an_anthropic_effort() -> None:
    assert make("anthropic/claude-opus-4-7", thinking="adaptive", effort="xhigh") is not None


# audit-s21-wire: OpenAI and compatible servers ------------------------------------------------------------------
def chat_chunk(delta: dict[str, Any], finish: str | None, **extra: Any) -> dict[str, Any]:
    """One Chat Completions stream chunk (openai-python types/chat/chat_completion_chunk.py)."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice], **extra}


# an older vLLM's error inside a 200 stream: ErrorResponse dumped flat, no "error" key
FLAT_ERROR = {"object": "error", "message": "CUDA out of memory", "type": "InternalServerError", "code": 500}


@pytest.mark.parametrize(
    "events",
    [
        [chat_chunk({"content": "The answer is"}, None), FLAT_ERROR, "[DONE]"],
        [chat_chunk({"content": "The answer"}, None), chat_chunk({"content": " is"}, None), "[DONE]"],
    ],
    ids=["flat-error-event", "no-finish-reason"],
)
async def test_a_stream_cut_off_before_its_finish_reason_is_not_an_answer(
    server: FakeLLMServer, events: list[Any]
) -> None:
    # before: "The answer is" was recorded as the answer, and scored
    server.script(Reply(events=events))
    error = await failure(make("openai-compatible/m", server, stream="true"))
    assert isinstance(error, ProviderError) and error.retry_cause in ("server_error", "connection")
    assert "CUDA out of memory" in str(error) or "ended without a finish_reason" in str(error)


async def test_a_chunk_with_error_null_is_no_error(server: FakeLLMServer) -> None:
    server.script(Reply(events=[chat_chunk({"content": "4"}, None, error=None), chat_chunk({}, "stop"), "[DONE]"]))
    completion = await call(make("openai-compatible/m", server, stream="true"))
    assert (completion.text, completion.finish_reason) == ("4", "stop")


async def test_an_openai_usage_with_no_counts_leaves_the_cost_unknown(server: FakeLLMServer) -> None:
    server.script(Reply(body={**chat_body({"content": "4"}, "stop"), "usage": {}}))
    assert (await call(make("openai/gpt-4o", server))).cost_usd is None


@pytest.mark.parametrize("given", ["prompt_tokens", "completion_tokens"])
async def test_an_openai_usage_with_one_count_leaves_the_cost_unknown(server: FakeLLMServer, given: str) -> None:
    # wire-s32 4: a count not given was priced as 0, the cost of the other alone read as known
    server.script(Reply(body={**chat_body({"content": "4"}, "stop"), "usage": {given: 10}}))
    assert (await call(make("openai/gpt-4o", server))).cost_usd is None


async def test_an_anthropic_usage_without_the_output_count_leaves_the_cost_unknown(server: FakeLLMServer) -> None:
    server.script(Reply(body=anthropic_body([{"type": "text", "text": "4"}], {"input_tokens": 10})))
    assert (await call(make("anthropic/claude-sonnet-4-5", server))).cost_usd is None


def responses_body(output: list[dict[str, Any]], status: str = "completed", **extra: Any) -> dict[str, Any]:
    """A Responses API body (openai-python types/responses/response.py)."""
    return {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5.3-codex", "status": status,
            "output": output, "usage": {"input_tokens": 10, "output_tokens": 5}, **extra}  # fmt: skip


def message_item(text: str, phase: str | None = None) -> dict[str, Any]:
    item = {"type": "message", "id": "m", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
    return item if phase is None else {**item, "phase": phase}


async def test_a_responses_answer_is_its_final_answer_not_its_commentary(server: FakeLLMServer) -> None:
    # response_output_message.py: phase "commentary" | "final_answer"; before: "I'll compute it. 4"
    output = [message_item("I'll compute it. ", "commentary"), message_item("4", "final_answer")]
    server.script(Reply(body=responses_body(output)))
    completion = await call(make("openai/gpt-5.3-codex", server, api="responses"))
    assert completion.text == "4"


async def test_reasoning_text_content_of_an_open_weight_model_is_its_thinking(server: FakeLLMServer) -> None:
    # response_reasoning_item.py: content[] of type reasoning_text (gpt-oss behind the Responses API, e.g. vLLM)
    thought = {"type": "reasoning_text", "text": "2+2"}
    reasoning = {"type": "reasoning", "id": "rs", "summary": [], "content": [thought]}
    server.script(Reply(body=responses_body([reasoning, message_item("4")])))
    completion = await call(make("openai/gpt-oss-120b", server, api="responses"))
    assert (completion.text, completion.thinking) == ("4", "2+2")


async def test_a_responses_failure_for_the_rate_limit_is_retried_as_one(server: FakeLLMServer) -> None:
    failed = responses_body([], "failed", error={"code": "rate_limit_exceeded", "message": "Slow down."})
    server.script(Reply(body=failed))
    error = await failure(make("openai/gpt-4o", server, api="responses"))
    assert isinstance(error, ProviderResponseError) and error.retry_cause == "rate_limit"


def test_a_reasoning_model_says_at_the_start_what_it_is_not_sent() -> None:
    provider = make("openai/o3", reasoning_effort="max")  # "max": openai-python shared_params/reasoning.py
    notes = provider.generation_notes(GenerateConfig(temperature=0.0, stop=["\n"]))
    assert notes == [
        "note: openai/o3 is a reasoning model, which takes no temperature, top_p or stop: temperature 0 and stop 1 "
        "sequence not sent (the answer is cut at the stop sequences here)"
    ]
    assert make("openai/gpt-4o").generation_notes(GenerateConfig(temperature=0.0)) == []


async def test_a_token_count_no_context_window_holds_reads_as_not_reported(server: FakeLLMServer) -> None:
    # audit-s21-hostile 2: 2^53 tokens each way priced one sample at $27 billion
    huge = {"prompt_tokens": 2**53, "completion_tokens": 2**53, "total_tokens": 2**54}
    server.script(Reply(body={**chat_body({"content": "4"}, "stop"), "usage": huge}))
    completion = await call(make("openai/gpt-4o", server))
    assert completion.cost_usd is None and completion.usage.prompt_tokens == 0


async def test_a_redirect_stops_the_run_naming_where_it_points_without_following_it(server: FakeLLMServer) -> None:
    # audit-s21-hostile 7: every sample failed with "HTTP 301 but the body is not JSON: an empty body", exit 0
    location = "https://user:secret@api.example.com/v1/chat/completions?token=abc"
    server.script(Reply(status=301, body={}, headers={"location": location}))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ModelNotFoundError) and len(server.requests) == 1
    assert "HTTP 301: the server redirects to https://api.example.com/v1/chat/completions; redirects are not " in str(
        error
    )
    assert "secret" not in str(error) and "token=abc" not in str(error)


@pytest.mark.parametrize(
    "usage", ['{"prompt_tokens": 1e400, "completion_tokens": 5}', '{"prompt_tokens": 99999999999999999999999}']
)
async def test_a_usage_number_orjson_cannot_hold_leaves_the_answer_standing(server: FakeLLMServer, usage: str) -> None:
    # audit-s21-hostile 10: valid JSON whose usage held 1e400 or a 77-bit integer failed as "the body is not JSON"
    body = json.dumps(chat_body({"content": "4"}, "stop")).replace('"usage": {', f'"usage": {usage}, "_": {{', 1)
    server.script(Reply(body=body.encode()))
    completion = await call(make("openai/gpt-4o", server))
    assert completion.text == "4" and completion.usage.prompt_tokens == 0


async def test_an_invalid_utf8_byte_in_the_answer_is_read_as_a_replacement_character(server: FakeLLMServer) -> None:
    body = json.dumps(chat_body({"content": "4 PLACEHOLDER"}, "stop")).encode().replace(b"PLACEHOLDER", b"\xff")
    server.script(Reply(body=body))
    completion = await call(make("openai/gpt-4o", server))
    assert completion.text == "4 \ufffd"


async def test_a_streamed_usage_number_orjson_cannot_hold_leaves_the_answer_standing(server: FakeLLMServer) -> None:
    # review-s22 9: the lenient read covered whole bodies only; a stream's usage chunk failed the answer
    usage = '{"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 1e400}}'
    server.script(Reply(events=[chat_chunk({"content": "4"}, None), chat_chunk({}, "stop"), usage, "[DONE]"]))
    completion = await call(make("openai-compatible/m", server, stream="true"))
    assert (completion.text, completion.finish_reason, completion.usage.prompt_tokens) == ("4", "stop", 0)


@pytest.mark.parametrize(
    ("model", "args", "refused"),
    [
        # the extended-thinking troubleshooting table, the effort page and the models' overview pages: each a 400
        # on every sample before
        ("claude-opus-4-5", {"thinking": "adaptive"}, "adaptive thinking is Claude 4.6 and later; earlier models"),
        (
            "claude-3-7-sonnet-latest",
            {"effort": "low"},
            "the API takes an effort from Claude Opus 4.5",
        ),  # the old names
        ("claude-3-7-sonnet-20250219", {"thinking": "adaptive"}, "adaptive thinking is Claude 4.6 and later"),
        ("claude-3-5-sonnet-latest", {"thinking_budget": "2048"}, "this model does not think (thinking is Claude 3.7"),
        ("claude-3-5-haiku-20241022", {"thinking": "adaptive"}, "this model does not think"),
        (
            "claude-opus-4-5",
            {"effort": "max"},
            "effort max is Claude 4.6 and later; give --model-arg effort=low|medium|high",
        ),
        ("claude-sonnet-4-5", {"effort": "low"}, "the API takes an effort from Claude Opus 4.5 and Claude 4.6 on"),
        ("claude-haiku-4-5-20251001", {"effort": "high"}, "the API takes an effort from Claude Opus 4.5"),
        ("claude-opus-4-1", {"effort": "low"}, "the API takes an effort from Claude Opus 4.5"),
        ("claude-opus-4-6", {"effort": "xhigh"}, "effort xhigh is Claude 4.7 and later; give --model-arg effort="),
        ("claude-sonnet-4-6", {"thinking": "adaptive", "effort": "xhigh"}, "effort xhigh is Claude 4.7 and later"),
    ],
)
def test_thinking_and_effort_a_model_refuses_are_refused_before_the_run(
    model: str, args: dict[str, str], refused: str
) -> None:
    with pytest.raises(ConfigError, match=f"anthropic/{model}: {re.escape(refused)}"):
        make(f"anthropic/{model}", **args)


@pytest.mark.parametrize(
    ("model", "args"),
    [("claude-opus-4-5", {"effort": "high"}), ("claude-opus-4-6", {"thinking": "adaptive", "effort": "max"}),
     ("claude-opus-4-7", {"effort": "xhigh"}), ("claude-haiku-5-5", {"effort": "low"}),
     ("claude-3-7-sonnet-latest", {"thinking_budget": "2048"}), ("my-gateway-alias", {"thinking": "adaptive"})],
)  # fmt: skip
def test_thinking_and_effort_a_model_takes_or_whose_name_says_nothing_are_sent(
    model: str, args: dict[str, str]
) -> None:
    make(f"anthropic/{model}", **args)


async def test_an_openai_compatible_server_s_responses_endpoint(server: FakeLLMServer) -> None:
    # llama-s30 F2: vLLM's and llama.cpp's servers serve /v1/responses, which openai-compatible/ refused to send to
    server.rule = lambda _request: answer("It is 4.")
    provider = make("openai-compatible/local", server, endpoint="responses")
    completion = await call(provider)
    sent = server.requests[-1]
    assert sent.path == "/v1/responses" and "authorization" not in sent.headers
    assert sent.body["input"][-1]["content"] == request().messages[-1].content
    assert (completion.text, completion.finish_reason) == ("It is 4.", "stop")
    assert completion.request_id.startswith("req_") and completion.usage.completion_tokens > 0


def test_stream_true_with_the_responses_api_says_its_answers_come_whole(server: FakeLLMServer) -> None:
    for model, args in (
        ("openai/gpt-4o-mini", {"api": "responses"}),
        ("openai-compatible/m", {"endpoint": "responses"}),
    ):
        provider = make(model, server, stream="true", **args)
        assert not provider.streaming
        (note,) = provider.generation_notes(GenerateConfig(max_tokens=32))
        streamed = "Chat Completions and completions" if model.startswith("openai-compatible/") else "Chat Completions"
        assert note == f"note: {model}: stream=true streams {streamed} only; the Responses API's answers come whole"


@pytest.mark.parametrize(
    ("kind", "headers", "cause"),
    [
        ("overloaded_error", {}, "overloaded"),
        ("invalid_request_error", {}, None),
        ("overloaded_error", {"x-should-retry": "false"}, None),  # review-s32 4: the server's no decides first
    ],
)
async def test_an_anthropic_error_object_in_a_200_is_retried_by_its_type_as_in_a_stream(
    server: FakeLLMServer, kind: str, headers: dict[str, str], cause: str | None
) -> None:
    # wire-s32 3: a gateway's 200 holding {"type": "error", "error": {"type": "overloaded_error"}} failed the sample
    # at once, where the same error inside a stream is retried
    body = {"type": "error", "error": {"type": kind, "message": "Overloaded"}, "request_id": "req_200"}
    server.script(Reply(body=body, headers=headers))
    error = await failure(make("anthropic/claude-sonnet-4-5", server))
    assert isinstance(error, ProviderHTTPError) and error.retry_cause == cause
    assert f"HTTP 200 with an error in the body: {kind}: Overloaded" in str(error)
