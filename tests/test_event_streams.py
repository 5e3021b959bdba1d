"""Streamed answers: Anthropic's Messages events (``--model-arg stream=true``) put back together into the
answer an unstreamed request gets, and the reading of event-stream lines both APIs share.

Each test answers on a real socket from the fake server, which streams a Messages answer as the API does
(``event:`` lines, a ping, block starts, deltas, a signature, ``message_delta``'s cumulative usage) or sends
an exact scripted stream (``Reply(events=...)``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import call, failure
from conftest import provider_request as request
from fake_llm_server import FakeLLMServer, Reply, answer
from pydantic import SecretStr

from eval_harness.config import Settings
from eval_harness.errors import ProviderHTTPError, ProviderResponseError
from eval_harness.providers.base import Provider, ProviderContext, create_provider
from eval_harness.providers.gateway import Gateway, RetryPolicy
from eval_harness.types import Completion

ANTHROPIC_KEY = "sk-ant-test-stream-0123456789"
MODEL = "anthropic/claude-sonnet-4-5"


def make(server: FakeLLMServer, model: str = MODEL, **args: str) -> Provider:
    context = ProviderContext(settings=Settings(anthropic_api_key=SecretStr(ANTHROPIC_KEY)))
    return create_provider(model, {"base_url": server.base_url, **args}, context)


def event(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def start(usage: dict[str, Any] | None = None) -> dict[str, Any]:
    message = {"id": "msg_s1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": usage or {"input_tokens": 25, "output_tokens": 1}}  # fmt: skip
    return event("message_start", message=message)


def text_block(index: int, *pieces: str) -> list[dict[str, Any]]:
    deltas = [event("content_block_delta", index=index, delta={"type": "text_delta", "text": p}) for p in pieces]
    return [
        event("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *deltas,
        event("content_block_stop", index=index),
    ]


def ending(stop_reason: str = "end_turn", output_tokens: int = 15) -> list[dict[str, Any]]:
    return [
        event("message_delta", delta={"stop_reason": stop_reason, "stop_sequence": None},
              usage={"output_tokens": output_tokens}),
        event("message_stop"),
    ]  # fmt: skip


def fields(completion: Completion) -> tuple[Any, ...]:
    usage = completion.usage
    return (completion.text, completion.thinking, completion.finish_reason, usage.prompt_tokens,
            usage.completion_tokens, completion.cost_usd, completion.model)  # fmt: skip


async def test_a_streamed_answer_is_the_answer_the_same_request_gets_unstreamed(server: FakeLLMServer) -> None:
    thinking = "Two and two make four; the question wants only the number. ✓ — déjà vu"
    server.script(answer("4", thinking=thinking), answer("4", thinking=thinking))
    plain = await call(make(server, thinking_budget="2048"))
    streamed = await call(make(server, thinking_budget="2048", stream="true"))
    sent = [recorded.body for recorded in server.requests]
    assert "stream" not in sent[0] and sent[1]["stream"] is True
    assert fields(streamed) == fields(plain)
    assert (streamed.text, streamed.thinking) == ("4", thinking)  # the thinking apart from the answer
    assert streamed.usage.completion_tokens > 1  # message_delta's final count, not message_start's placeholder
    assert streamed.request_id is not None and streamed.request_id.startswith("req_")


async def test_blocks_are_joined_in_their_index_order_and_pings_and_new_event_types_are_passed_over(
    server: FakeLLMServer,
) -> None:
    events = [start(), event("ping"), *text_block(0, "The ans", "wer is"), event("ping"),
              event("content_block_start", index=1, content_block={"type": "text", "text": ""}),
              event("a_type_added_later", detail={"x": 1}),
              event("content_block_delta", index=1, delta={"type": "text_delta", "text": " 4"}),
              event("content_block_delta", index=1, delta={"type": "citations_delta", "citation": {}}),
              event("content_block_stop", index=1), *ending()]  # fmt: skip
    server.script(Reply(events=events))
    completion = await call(make(server, stream="true"))
    assert (completion.text, completion.finish_reason, completion.usage.completion_tokens) == (
        "The answer is 4",
        "end_turn",
        15,
    )
    assert completion.request_id is not None


async def test_message_delta_usage_is_cumulative_and_replaces_message_starts_counts(server: FakeLLMServer) -> None:
    usage_start = {"input_tokens": 1000, "output_tokens": 1, "cache_read_input_tokens": 0}
    final = event("message_delta", delta={"stop_reason": "max_tokens"},
                  usage={"input_tokens": 1000, "output_tokens": 40, "cache_read_input_tokens": 0})  # fmt: skip
    server.script(Reply(events=[start(usage_start), *text_block(0, "cut"), final, event("message_stop")]))
    completion = await call(make(server, stream="true"))
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (1000, 40)
    assert completion.finish_reason == "max_tokens"
    # Sonnet 4.5: $3 in, $15 out per million tokens: (1000 * 3 + 40 * 15) / 1e6, counted once, not summed
    assert completion.cost_usd == pytest.approx(0.0036)


@pytest.mark.parametrize(
    ("kind", "cause"),
    [("overloaded_error", "overloaded"), ("api_error", "server_error"), ("rate_limit_error", "rate_limit")],
)
async def test_an_error_event_inside_the_stream_is_retried_as_its_http_status_would_be(
    server: FakeLLMServer, kind: str, cause: str
) -> None:
    # "during periods of high usage, you may receive an overloaded_error, which would normally correspond to an
    # HTTP 529 in a non-streaming context" (Anthropic, "Streaming Messages")
    failed = [start(), *text_block(0, "The answer"), event("error", error={"type": kind, "message": "Overloaded"})]
    server.script(Reply(events=failed), answer("4"))
    gateway = Gateway(make(server, stream="true"), RetryPolicy(max_retries=2, initial_wait_s=0.0))
    try:
        outcome = await gateway.generate(request())
    finally:
        await gateway.aclose()
    assert outcome.completion is not None and outcome.completion.text == "4"
    assert outcome.attempts == 2 and outcome.retries == {cause: 1}


async def test_an_error_event_of_another_kind_fails_the_sample_with_its_message(server: FakeLLMServer) -> None:
    refused = event("error", error={"type": "invalid_request_error", "message": "prompt is too long"})
    server.script(Reply(events=[start(), refused]))
    error = await failure(make(server, stream="true"))
    assert isinstance(error, ProviderHTTPError) and error.retry_cause is None
    assert "event 2 of the stream" in str(error) and "prompt is too long" in str(error)


@pytest.mark.parametrize(
    ("events", "ended"),
    [
        ([start(), *text_block(0, "The answer is")], "before message_stop"),  # no message_delta, no stop
        ([start(), *text_block(0, "The answer is"), ending()[0]], "before message_stop"),
        ([event("ping")], "before message_start"),
    ],
    ids=["after-a-block", "after-message-delta", "only-a-ping"],
)
async def test_a_stream_cut_off_before_message_stop_is_not_an_answer(
    server: FakeLLMServer, events: list[Any], ended: str
) -> None:
    server.script(Reply(events=events))
    error = await failure(make(server, stream="true"))
    assert isinstance(error, ProviderResponseError) and error.retry_cause == "connection"
    assert f"the event stream ended {ended}" in str(error)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (event("content_block_delta", index=3, delta={"type": "text_delta", "text": "x"}),
         "event 3 of the stream: a delta of content block 3, which never started"),
        (event("content_block_delta", delta={"type": "text_delta", "text": "x"}),
         "event 3 of the stream: content_block_delta without a block index"),
        (event("content_block_delta", index=0, delta={"type": "text_delta", "text": 7}),
         "event 3 of the stream: delta.text"),
        ([1, 2], "event 3 of the stream: expected an object, got an array"),
    ],
    ids=["unknown-block", "no-index", "text-not-a-string", "not-an-object"],
)  # fmt: skip
async def test_a_malformed_event_is_a_response_error_naming_it(server: FakeLLMServer, bad: Any, message: str) -> None:
    opened = event("content_block_start", index=0, content_block={"type": "text", "text": ""})
    server.script(Reply(events=[start(), opened, bad, *ending()]))
    error = await failure(make(server, stream="true"))
    assert isinstance(error, ProviderResponseError) and message in str(error)


async def test_a_block_before_message_start_is_a_response_error(server: FakeLLMServer) -> None:
    server.script(Reply(events=[*text_block(0, "4"), *ending()]))
    error = await failure(make(server, stream="true"))
    assert isinstance(error, ProviderResponseError) and "content_block_start before message_start" in str(error)


async def test_a_server_that_ignores_stream_and_answers_json_is_read_as_a_whole_reply(server: FakeLLMServer) -> None:
    body = {"id": "msg_j", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "4"}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 2}}  # fmt: skip
    server.script(Reply(body=body))
    completion = await call(make(server, stream="true"))
    assert (completion.text, completion.finish_reason, completion.usage.completion_tokens) == ("4", "end_turn", 2)


async def test_a_streamed_answer_holding_a_line_separator_keeps_it(server: FakeLLMServer) -> None:
    # JSON carries U+2028 and U+0085 unescaped inside a string; the event-stream reader split lines at them
    # (str.splitlines), so the event was cut in two and "not JSON"
    text = "first\u2028second\x85third"
    server.script(answer(text))
    completion = await call(make(server, stream="true"))
    assert completion.text == text


async def test_an_openai_stream_holding_a_line_separator_keeps_it(server: FakeLLMServer) -> None:
    chunk = '{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"a\u2028b"},"finish_reason":"stop"}]}'
    raw = f"data: {chunk}\n\ndata: [DONE]\n\n".encode()
    server.script(Reply(body=raw, headers={"content-type": "text/event-stream"}))
    context = ProviderContext(settings=Settings())
    provider = create_provider("openai-compatible/m", {"base_url": server.base_url, "stream": "true"}, context)
    completion = await call(provider)
    assert (completion.text, completion.finish_reason) == ("a\u2028b", "stop")


async def test_a_whitespace_stop_is_cut_at_in_a_streamed_answer_too(server: FakeLLMServer) -> None:
    server.script(answer("4\nand more"))
    completion = await call(make(server, stream="true"), request(stop=["\n"]))
    assert (completion.text, completion.finish_reason) == ("4", "stop_sequence")
    assert "stop_sequences" not in server.requests[-1].body


def test_a_streamed_run_records_each_answer_apart_from_its_thinking_and_never_the_key(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    server.rule = lambda recorded: answer(server._default_answer(recorded.prompt), thinking="Let me see.")
    args = ["run", "--task", "capability_profile", "--model", MODEL, "--model-arg", f"base_url={server.base_url}",
            "--model-arg", "stream=true", "--model-arg", "thinking_budget=1024", "--output-dir", "results",
            "--run-id", "r1", "--limit", "6", "--concurrency", "3", "-q"]  # fmt: skip
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "EVAL_HARNESS_"))}
    result = subprocess.run(
        [sys.executable, "-m", "eval_harness", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**clean, "ANTHROPIC_API_KEY": ANTHROPIC_KEY, "EVAL_HARNESS_CACHE_DIR": str(tmp_path / "cache")},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == 6 and all(r.body["stream"] is True for r in server.requests)
    run = tmp_path / "results" / "r1"
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert [r["error"] for r in records] == [None] * 6
    assert all(r["thinking"] == "Let me see." and r["usage"]["completion_tokens"] > 1 for r in records)
    assert json.loads((run / "manifest.json").read_text())["model"]["args"]["stream"] is True
    for artifact in run.iterdir():
        assert ANTHROPIC_KEY not in artifact.read_text(errors="replace")


# from the review of the change (review-s23-stream) ---------------------------------------------------------------
async def test_a_null_count_in_message_delta_keeps_the_count_message_start_gave(server: FakeLLMServer) -> None:
    # vLLM's and sglang's Anthropic endpoints send the input and cache counts of message_delta as null; before,
    # the null replaced message_start's 3,010 input tokens and the cost came out ten times too low
    usage_start = {"input_tokens": 10, "cache_read_input_tokens": 3000, "cache_creation_input_tokens": 0,
                   "output_tokens": 1}  # fmt: skip
    nulls = {"input_tokens": None, "cache_read_input_tokens": None, "cache_creation_input_tokens": None}
    final = event("message_delta", delta={"stop_reason": "end_turn"}, usage={**nulls, "output_tokens": 7})
    server.script(Reply(events=[start(usage_start), *text_block(0, "4"), final, event("message_stop")]))
    completion = await call(make(server, stream="true"))
    usage = completion.usage
    assert (usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens) == (3010, 3000, 7)
    # Sonnet 4.5: $3 in, $0.30 a cache read, $15 out per million: (10 * 3 + 3000 * 0.3 + 7 * 15) / 1e6
    assert completion.cost_usd == pytest.approx(0.001035)


async def test_without_a_final_output_count_the_placeholder_is_not_recorded_as_one(server: FakeLLMServer) -> None:
    no_usage = event("message_delta", delta={"stop_reason": "end_turn"})
    server.script(Reply(events=[start(), *text_block(0, "4"), no_usage, event("message_stop")]))
    completion = await call(make(server, stream="true"))
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (25, 0)  # not message_start's 1
    # wire-s32 4: and the cost is unknown, not the input's alone (it read as a known price of a free answer)
    assert completion.cost_usd is None


def named_only(payload: dict[str, Any]) -> str:
    """An event as a server that names it on its event: line alone sends it (the payload without its type)."""
    kind = payload["type"]
    return f"event: {kind}\ndata: " + json.dumps({k: v for k, v in payload.items() if k != "type"})


async def test_events_named_only_on_their_event_line_are_read_by_that_name(server: FakeLLMServer) -> None:
    # before: every event was passed over and each attempt failed as a dropped connection
    events = [start(), *text_block(0, "The answer", " is 4"), *ending()]
    raw = "".join(named_only(e) + "\n\n" for e in events).encode()
    server.script(Reply(body=raw, headers={"content-type": "text/event-stream"}))
    completion = await call(make(server, stream="true"))
    assert (completion.text, completion.finish_reason, completion.usage.completion_tokens) == (
        "The answer is 4",
        "end_turn",
        15,
    )


@pytest.mark.parametrize(
    ("error", "cause", "said"),
    [
        ('{"error": {"type": "overloaded_error", "message": "Overloaded"}}', "overloaded", "Overloaded"),
        ("upstream connect error or disconnect/reset before headers", "server_error", "upstream connect error"),
        ('{"type": "error", "error": {"type": "timeout_error", "message": "timed out"}}', "server_error", "timed out"),
    ],
    ids=["untyped-payload", "not-json", "timeout-error-as-its-504"],
)
async def test_an_error_event_is_an_error_whatever_its_data_holds(
    server: FakeLLMServer, error: str, cause: str, said: str
) -> None:
    opening = "".join(named_only(e) + "\n\n" for e in [start(), *text_block(0, "The")])
    raw = f"{opening}event: error\ndata: {error}\n\n".encode()
    server.script(Reply(body=raw, headers={"content-type": "text/event-stream"}))
    error_raised = await failure(make(server, stream="true"))
    assert isinstance(error_raised, ProviderHTTPError) and error_raised.retry_cause == cause
    assert said in str(error_raised)


@pytest.mark.parametrize("model", [MODEL, "openai-compatible/m"])
@pytest.mark.parametrize(
    ("body", "said"),
    [(b"<html><head><title>Gateway says hi</title></head></html>", "an HTML page (Gateway says hi)"),
     (b"", "an empty body")],
    ids=["html", "empty"],
)  # fmt: skip
async def test_a_200_that_is_neither_json_nor_an_event_stream_fails_at_once_described(
    server: FakeLLMServer, model: str, body: bytes, said: str
) -> None:
    # before: read as a stream without events, retried as a dropped connection on every attempt, never described
    server.script(Reply(body=body, headers={"content-type": "text/html"}))
    error = await failure(make(server, model, stream="true"))
    assert isinstance(error, ProviderResponseError) and error.retry_cause is None
    assert f"HTTP 200 but the body is not JSON or an event stream: {said}" in str(error)


@pytest.mark.parametrize("line_end", ["\r", "\r\n", "\n"], ids=["cr", "crlf", "lf"])
async def test_an_event_stream_of_any_line_ending_is_read(server: FakeLLMServer, line_end: str) -> None:
    events = [start(), *text_block(0, "4"), *ending()]
    raw = "".join(f"event: {e['type']}{line_end}data: {json.dumps(e)}{line_end}{line_end}" for e in events)
    server.script(Reply(body=raw.encode(), headers={"content-type": "text/event-stream"}))
    completion = await call(make(server, stream="true"))
    assert (completion.text, completion.finish_reason) == ("4", "end_turn")


async def test_a_data_field_over_several_lines_and_a_leading_bom_are_read_as_the_rules_say(
    server: FakeLLMServer,
) -> None:
    # the data lines of one event are joined with a line feed; a byte-order mark before the first line is dropped
    split_start = json.dumps(start(), indent=1).replace("\n", "\ndata: ")
    rest = "".join(f"data: {json.dumps(e)}\n\n" for e in [*text_block(0, "4"), *ending()])
    raw = f"\ufeffevent: message_start\ndata: {split_start}\n\n: a comment line\n\n{rest}"
    server.script(Reply(body=raw.encode(), headers={"content-type": "text/event-stream"}))
    completion = await call(make(server, stream="true"))
    assert (completion.text, completion.usage.prompt_tokens) == ("4", 25)


async def test_blocks_started_out_of_order_and_a_blocks_initial_text_are_kept_in_index_order(
    server: FakeLLMServer,
) -> None:
    later = event("content_block_start", index=1, content_block={"type": "text", "text": " is"})
    first = event("content_block_start", index=0, content_block={"type": "text", "text": "The"})
    to_first = event("content_block_delta", index=0, delta={"type": "text_delta", "text": " answer"})
    to_later = event("content_block_delta", index=1, delta={"type": "text_delta", "text": " 4"})
    server.script(Reply(events=[start(), later, first, to_later, to_first, *ending()]))
    completion = await call(make(server, stream="true"))
    assert completion.text == "The answer is 4"


async def test_a_key_echoed_inside_a_streamed_answer_never_reaches_the_completion(server: FakeLLMServer) -> None:
    events = [start(), *text_block(0, "your key is ", "{key}", " indeed"), *ending()]
    server.script(Reply(events=events))
    gateway = Gateway(make(server, stream="true"), RetryPolicy(max_retries=0))
    try:
        outcome = await gateway.generate(request())
    finally:
        await gateway.aclose()
    assert outcome.completion is not None and ANTHROPIC_KEY not in outcome.completion.text
    assert outcome.completion.text == "your key is [REDACTED] indeed"


def _openai_chunk(**fields: Any) -> dict[str, Any]:
    return {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": None}],
            **fields}  # fmt: skip


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        ({"message": "boom", "type": "server_error", "code": None}, "server_error"),
        ({"message": "slow down", "type": "requests", "code": 429}, "rate_limit"),
        ({"message": "Overloaded", "type": "overloaded_error", "code": None}, "overloaded"),
        ({"message": "context too long", "type": "invalid_request_error", "code": "context_length_exceeded"}, None),
    ],
)
async def test_an_openai_error_event_inside_the_stream_is_retried_as_the_same_error_unstreamed_would_be(
    server: FakeLLMServer, error: dict[str, Any], cause: str | None
) -> None:
    # stream-s31 1: every error event was a retried "server_error" (context_length_exceeded was sent six times)
    server.script(Reply(events=[_openai_chunk(), {"error": error}]), answer("4"))
    context = ProviderContext(settings=Settings())
    provider = create_provider("openai-compatible/m", {"base_url": server.base_url, "stream": "true"}, context)
    gateway = Gateway(provider, RetryPolicy(max_retries=2, initial_wait_s=0.0))
    try:
        outcome = await gateway.generate(request())
    finally:
        await gateway.aclose()
    if cause is None:
        assert outcome.completion is None and outcome.attempts == 1 and outcome.error is not None
        assert "context_length_exceeded" in str(outcome.error) and "context too long" in str(outcome.error)
    else:
        assert outcome.completion is not None and outcome.retries == {cause: 1}


async def test_an_openai_stream_cut_after_its_finish_chunk_is_no_answer(server: FakeLLMServer) -> None:
    # stream-s31 2: no usage chunk and no [DONE] (cut after the answer) was recorded with 0/0 tokens, cost unknown
    finished = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": "stop"}]}
    raw = f"data: {json.dumps(finished)}\n\n".encode()
    server.script(Reply(body=raw, headers={"content-type": "text/event-stream"}))
    context = ProviderContext(settings=Settings())
    provider = create_provider("openai-compatible/m", {"base_url": server.base_url, "stream": "true"}, context)
    error = await failure(provider)
    assert isinstance(error, ProviderResponseError) and "ended before its usage and [DONE]" in str(error)
    assert error.retry_cause == "connection"


@pytest.mark.parametrize("tail", ["", "\n"], ids=["mid-line", "at-a-line-end"])
async def test_a_stream_whose_body_ends_inside_an_event_is_a_cut_retried_as_one(
    server: FakeLLMServer, tail: str
) -> None:
    # wire-s32 1: a body closed cleanly inside an event (a proxy whose upstream stopped) failed the sample at once,
    # "an event of the stream is not JSON: '{...\"thinking_d'", never retried as the cut stream it is
    whole = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in [start(), *text_block(0, "The answ")])
    cut = json.dumps(event("content_block_delta", index=0, delta={"type": "text_delta", "text": "er is"}))[:40]
    server.script(Reply(body=f"{whole}event: content_block_delta\ndata: {cut}{tail}".encode(),
                        headers={"content-type": "text/event-stream"}))  # fmt: skip
    error = await failure(make(server, stream="true"))
    assert isinstance(error, ProviderResponseError) and error.retry_cause == "connection"
    assert "the event stream ended in the middle of an event" in str(error)


async def test_an_openai_stream_whose_body_ends_inside_an_event_is_a_cut_retried_as_one(server: FakeLLMServer) -> None:
    chunk = {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": None}]}
    raw = f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(chunk)[:30]}".encode()
    server.script(Reply(body=raw, headers={"content-type": "text/event-stream"}))
    context = ProviderContext(settings=Settings())
    provider = create_provider("openai-compatible/m", {"base_url": server.base_url, "stream": "true"}, context)
    error = await failure(provider)
    assert isinstance(error, ProviderResponseError) and error.retry_cause == "connection"
    assert "the event stream ended in the middle of an event" in str(error)


async def test_a_last_event_sent_whole_without_its_blank_line_is_read(server: FakeLLMServer) -> None:
    events = [start(), *text_block(0, "4"), *ending()]
    raw = "\n\n".join(f"event: {e['type']}\ndata: {json.dumps(e)}" for e in events)  # no blank line at the end
    server.script(Reply(body=raw.encode(), headers={"content-type": "text/event-stream"}))
    completion = await call(make(server, stream="true"))
    assert (completion.text, completion.finish_reason) == ("4", "end_turn")
