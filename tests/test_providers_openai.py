"""openai/ and openai-compatible/ against a real HTTP server on 127.0.0.1: request wire, parsing, errors."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from conftest import call, failure
from conftest import provider_request as request
from fake_llm_server import (
    FakeLLMServer,
    Reply,
    answer,
    bad_request,
    cut_connection,
    hang,
    html_page,
    not_json,
    overloaded,
    rate_limited,
    server_error,
    truncated_json,
    unauthorized,
)
from pydantic import SecretStr

from eval_harness.config import Settings
from eval_harness.errors import (
    AuthenticationError,
    ConfigError,
    ModelNotFoundError,
    ProviderConnectionError,
    ProviderHTTPError,
    ProviderResponseError,
    ProviderTimeoutError,
    ServerUnreachableError,
)
from eval_harness.providers._http import HTTPProvider
from eval_harness.providers.base import Provider, ProviderContext, create_provider
from eval_harness.providers.openai import parse_duration
from eval_harness.types import GenerateConfig

KEY = "sk-test-openai-0123456789"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(api_key=KEY) as running:
        yield running


def settings(**overrides: object) -> Settings:
    values: dict[str, object] = {"openai_api_key": SecretStr(KEY)}
    values.update(overrides)
    return Settings.model_validate(values)


def make(
    model_id: str, server: FakeLLMServer, concurrency: int = 4, context_settings: Settings | None = None, **args: str
) -> Provider:
    context = ProviderContext(settings=context_settings or settings(), concurrency=concurrency)
    return create_provider(model_id, {"base_url": server.base_url, **args}, context)


# request wire --------------------------------------------------------------------------------------------
async def test_chat_request_carries_messages_sampling_options_and_auth_headers(server: FakeLLMServer) -> None:
    provider = make(
        "openai/gpt-4o-mini",
        server,
        context_settings=settings(openai_organization="org-1", openai_project="proj-1"),
    )
    await call(provider, request(temperature=0.0, top_p=0.5, max_tokens=7, stop=["\n"], seed=3))
    sent = server.requests[-1]
    assert sent.path == "/v1/chat/completions"
    assert sent.body == {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is 2 + 2? [[answer: 4]]"},
        ],
        "max_completion_tokens": 7,
        "stop": ["\n"],
        "seed": 3,
        "temperature": 0.0,
        "top_p": 0.5,
    }
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert sent.headers["openai-organization"] == "org-1"
    assert sent.headers["openai-project"] == "proj-1"


async def test_reasoning_models_are_sent_no_temperature(server: FakeLLMServer) -> None:
    await call(make("openai/o3-mini", server, reasoning_effort="low"), request(temperature=0.0, max_tokens=5))
    body = server.requests[-1].body
    assert "temperature" not in body
    assert body["reasoning_effort"] == "low"


async def test_responses_api_sends_instructions_input_and_max_output_tokens(server: FakeLLMServer) -> None:
    await call(make("openai/gpt-4o", server, api="responses"), request(max_tokens=19, temperature=0.2, seed=1))
    sent = server.requests[-1]
    assert sent.path == "/v1/responses"
    assert sent.body == {
        "model": "gpt-4o",
        "instructions": "Be brief.",
        "input": [{"role": "user", "content": "What is 2 + 2? [[answer: 4]]"}],
        "max_output_tokens": 19,
        "store": False,
        "temperature": 0.2,
    }


async def test_base_url_comes_from_openai_base_url_setting(server: FakeLLMServer) -> None:
    context = ProviderContext(settings=settings(openai_base_url=server.base_url))
    provider = create_provider("openai/gpt-4o", {}, context)
    completion = await call(provider)
    assert completion.text == "4"


def test_openai_without_a_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        create_provider("openai/gpt-4o", {}, ProviderContext(settings=Settings()))


# response parsing ----------------------------------------------------------------------------------------
async def test_chat_completion_fills_text_usage_cost_model_and_request_id(server: FakeLLMServer) -> None:
    completion = await call(make("openai/gpt-4o-mini", server))
    assert completion.text == "4"
    assert completion.finish_reason == "stop"
    assert completion.model == "gpt-4o-mini"
    assert completion.request_id is not None and completion.request_id.startswith("req_")
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
    assert completion.usage.cached_tokens == 0 and completion.usage.reasoning_tokens == 0
    assert completion.cost_usd is not None and completion.cost_usd > 0
    assert completion.latency_ms > 0


async def test_chat_usage_details_become_cached_and_reasoning_tokens(server: FakeLLMServer) -> None:
    body = {
        "id": "chatcmpl-9",
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "length"}],
        "usage": {
            "prompt_tokens": 1000,
            "completion_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 400},
            "completion_tokens_details": {"reasoning_tokens": 30},
        },
    }
    server.script(Reply(body=body))
    completion = await call(make("openai/gpt-4o", server))
    assert (completion.usage.cached_tokens, completion.usage.reasoning_tokens) == (400, 30)
    assert completion.finish_reason == "length"
    assert completion.model == "gpt-4o-2024-08-06"
    # gpt-4o: $2.50 in, $1.25 cached in, $10 out per million: (600*2.5 + 400*1.25 + 50*10) / 1e6
    assert completion.cost_usd == pytest.approx(0.0025)


async def test_responses_api_separates_reasoning_summary_from_answer(server: FakeLLMServer) -> None:
    # the API sends a reasoning summary only when asked for one (reasoning.summary); unasked, "summary": []
    server.script(answer("The answer is 4.", thinking="2 plus 2 makes 4"))
    completion = await call(
        make("openai/o4-mini", server, api="responses", reasoning_effort="low", reasoning_summary="auto")
    )
    assert server.requests[-1].body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert completion.text == "The answer is 4."
    assert completion.thinking == "2 plus 2 makes 4"
    assert completion.request_id is not None
    assert completion.usage.reasoning_tokens is not None and completion.usage.reasoning_tokens > 0
    server.script(answer("The answer is 4.", thinking="2 plus 2 makes 4"))
    unasked = await call(make("openai/o4-mini", server, api="responses", reasoning_effort="low"))
    assert server.requests[-1].body["reasoning"] == {"effort": "low"} and unasked.thinking is None


def test_a_reasoning_summary_without_the_responses_api_is_refused_before_the_run(server: FakeLLMServer) -> None:
    provider = make("openai/o4-mini", server, reasoning_summary="auto")
    with pytest.raises(ConfigError, match="reasoning_summary is a Responses API option; add --model-arg api=responses"):
        provider.check_generation(GenerateConfig())


async def test_responses_api_applies_stop_sequences_client_side(server: FakeLLMServer) -> None:
    server.script(answer("4\nand more text"))
    completion = await call(make("openai/gpt-4o", server, api="responses"), request(stop=["\n"]))
    assert completion.text == "4"
    assert "stop" not in server.requests[-1].body


async def test_reasoning_models_get_no_stop_and_the_answer_is_cut_here(server: FakeLLMServer) -> None:
    # the Chat Completions reference: stop is "Not supported with latest reasoning models o3 and o4-mini"
    server.script(answer("4\nand more text"))
    completion = await call(make("openai/o4-mini", server), request(stop=["\n"]))
    assert "stop" not in server.requests[-1].body
    assert (completion.text, completion.finish_reason) == ("4", "stop")


async def test_the_cache_keeps_answers_cut_by_different_client_side_stops_apart(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    from eval_harness.cache import ResponseCache
    from eval_harness.providers.gateway import Gateway, RetryPolicy

    server.rule = lambda _: answer("42")
    gateway = Gateway(make("openai/gpt-4o", server, api="responses"), RetryPolicy(), cache=ResponseCache(tmp_path))
    try:
        cut = await gateway.generate(request(stop=["2"]))
        whole = await gateway.generate(request())
        again = await gateway.generate(request(stop=["2"]))
    finally:
        await gateway.aclose()
    assert cut.completion is not None and cut.completion.text == "4"
    assert whole.completion is not None and (whole.completion.text, whole.completion.cached) == ("42", False)
    assert again.completion is not None and (again.completion.text, again.completion.cached) == ("4", True)
    assert len(server.generation_requests()) == 2


async def test_streamed_chat_joins_deltas_and_reads_usage(server: FakeLLMServer) -> None:
    server.script(answer("forty-two exactly"))
    completion = await call(make("openai/gpt-4o-mini", server, stream="true"))
    body = server.requests[-1].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert completion.text == "forty-two exactly"
    assert completion.finish_reason == "stop"
    assert completion.usage.completion_tokens > 0


async def test_a_body_without_choices_is_a_response_error_naming_the_field(server: FakeLLMServer) -> None:
    server.script(Reply(body={"id": "chatcmpl-1", "object": "chat.completion"}))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderResponseError)
    assert "choices" in str(error) and error.retry_cause is None


# errors --------------------------------------------------------------------------------------------------
async def test_429_is_a_rate_limit_with_retry_after_seconds(server: FakeLLMServer) -> None:
    server.script(rate_limited("7"))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderHTTPError)
    assert (error.status_code, error.retry_cause, error.retry_after) == (429, "rate_limit", 7.0)
    assert "Rate limit reached" in str(error)


async def test_retry_after_ms_wins_over_retry_after(server: FakeLLMServer) -> None:
    server.script(rate_limited("7", headers={"retry-after-ms": "250"}))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderHTTPError) and error.retry_after == pytest.approx(0.25)


async def test_retry_after_http_date_is_seconds_from_now(server: FakeLLMServer) -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    server.script(rate_limited(when))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderHTTPError) and error.retry_after is not None
    assert 25 <= error.retry_after <= 30


async def test_exhausted_budget_reset_header_sets_retry_after(server: FakeLLMServer) -> None:
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6m0s",
        "x-ratelimit-remaining-tokens": "5000",
        "x-ratelimit-reset-tokens": "1s",
    }
    server.script(rate_limited(None, headers=headers))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderHTTPError) and error.retry_after == 360.0


def test_openai_reset_durations_parse_to_seconds() -> None:
    assert parse_duration("1s") == 1.0
    assert parse_duration("6m0s") == 360.0
    assert parse_duration("20ms") == pytest.approx(0.02)
    assert parse_duration("1h2m3.5s") == pytest.approx(3723.5)
    assert parse_duration("soon") is None


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        (server_error(), "server_error"),
        (server_error(503), "overloaded"),
        (overloaded(), "overloaded"),
        (Reply(kind="error", status=408, message="Request timed out"), "timeout"),
        (Reply(kind="error", status=409, message="Conflict"), "conflict"),
    ],
)
async def test_408_409_5xx_and_529_are_transient(server: FakeLLMServer, reply: Reply, cause: str) -> None:
    server.script(reply)
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderHTTPError) and error.retry_cause == cause


async def test_400_fails_with_the_providers_own_message_and_no_retry(server: FakeLLMServer) -> None:
    server.script(bad_request("max_tokens is too large: 999999.", code="invalid_value"))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderHTTPError)
    assert error.retry_cause is None and error.status_code == 400
    assert "max_tokens is too large: 999999." in str(error)


async def test_401_is_an_authentication_error_on_one_line(server: FakeLLMServer) -> None:
    server.script(unauthorized("Incorrect API key provided.\nSee the docs."))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, AuthenticationError)
    assert "\n" not in str(error) and "OPENAI_API_KEY" in str(error)


async def test_404_for_an_unknown_model_stops_the_run_naming_what_to_check(server: FakeLLMServer) -> None:
    # the body OpenAI sends for a model name that does not exist (its error reference: code model_not_found)
    message = "The model `gpt-4o-typo` does not exist or you do not have access to it."
    server.script(Reply(kind="error", status=404, message=message, error_code="model_not_found"))
    error = await failure(make("openai/gpt-4o-typo", server))
    assert isinstance(error, ModelNotFoundError) and isinstance(error, AuthenticationError)
    assert message in str(error) and "check the model name and the base URL" in str(error)
    assert len(server.generation_requests()) == 1  # not retried


async def test_wrong_key_is_rejected_and_never_echoed(server: FakeLLMServer) -> None:
    wrong = "sk-wrong-canary-9876543210"
    error = await failure(make("openai/gpt-4o", server, context_settings=settings(openai_api_key=SecretStr(wrong))))
    assert isinstance(error, AuthenticationError)
    assert wrong not in str(error) and "[REDACTED]" in str(error)


@pytest.mark.parametrize("padding", range(520, 560, 4))
async def test_a_key_echoed_late_in_a_long_error_message_is_redacted_before_the_message_is_cut(
    server: FakeLLMServer, padding: int
) -> None:
    # the message is cut to 600 characters; cut before redaction, the key's head was left in it
    server.script(bad_request("p" * padding + " key=" + KEY))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderHTTPError) and len(str(error)) <= 600
    assert "sk-test-op" not in str(error)  # the key's first ten characters


async def test_html_error_page_is_named_in_the_message(server: FakeLLMServer) -> None:
    server.script(html_page(502))
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderHTTPError) and error.retry_cause == "server_error"
    assert "HTML page (502 Bad Gateway)" in str(error)


@pytest.mark.parametrize("reply", [not_json(), truncated_json()])
async def test_a_200_that_is_not_json_is_a_response_error(server: FakeLLMServer, reply: Reply) -> None:
    server.script(reply)
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderResponseError) and "not JSON" in str(error)


async def test_connection_cut_mid_body_is_a_transient_connection_error(server: FakeLLMServer) -> None:
    server.script(cut_connection())
    error = await failure(make("openai/gpt-4o", server))
    assert isinstance(error, ProviderConnectionError) and error.retry_cause == "connection"


@pytest.mark.parametrize("wire", ["pooled", "httpx", "httpx-pooled"])
async def test_a_body_cut_off_after_its_head_keeps_the_request_id_the_head_gave(
    server: FakeLLMServer, wire: str
) -> None:
    # wire-s32 5: the record of a dropped stream had no request id, though the 200's head had carried it
    server.script(Reply(kind="cut", headers={"x-request-id": "req_cut_1"}))
    error = await failure(make("openai/gpt-4o", server, http_transport=wire))
    assert isinstance(error, ProviderConnectionError) and error.request_id == "req_cut_1"


@pytest.mark.parametrize("wire", ["pooled", "httpx", "httpx-pooled"])
async def test_a_body_over_the_size_bound_keeps_the_request_id_its_head_gave(server: FakeLLMServer, wire: str) -> None:
    # review-s32 3: the lean pool under httpx (httpx-pooled) raised its bound before httpx had a response
    server.script(Reply(body={"padding": "x" * 5000}, headers={"x-request-id": "req_big_1"}))
    provider = make("openai/gpt-4o", server, http_transport=wire, max_response_bytes="1000")
    error = await failure(provider)
    assert isinstance(error, ProviderResponseError) and error.request_id == "req_big_1", error


async def test_a_hanging_server_hits_the_read_timeout(server: FakeLLMServer) -> None:
    server.script(hang())
    error = await failure(make("openai/gpt-4o", server, read_timeout_s="0.3"))
    assert isinstance(error, ProviderTimeoutError) and error.retry_cause == "timeout"


async def test_connection_refused_is_a_transient_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = create_provider(
        "openai/gpt-4o", {"base_url": f"http://127.0.0.1:{port}/v1"}, ProviderContext(settings=settings())
    )
    error = await failure(provider)
    assert isinstance(error, ProviderConnectionError) and error.retry_cause == "connection"


# pool ----------------------------------------------------------------------------------------------------
async def test_connection_pool_keeps_in_flight_requests_within_concurrency(server: FakeLLMServer) -> None:
    server.latency_s = 0.05
    provider = make("openai/gpt-4o", server, concurrency=3)
    try:
        await asyncio.gather(*(provider.generate(request()) for _ in range(12)))
    finally:
        await provider.aclose()
    assert len(server.requests) == 12
    assert server.max_in_flight == 3


async def test_a_keep_alive_connection_the_server_closed_is_not_reused_and_costs_no_retry(
    server: FakeLLMServer,
) -> None:
    from eval_harness.providers.gateway import Gateway, RetryPolicy

    gateway = Gateway(make("openai/gpt-4o", server, concurrency=1), RetryPolicy(max_retries=1))
    try:
        first = await gateway.generate(request())
        server.stop()  # closes the idle keep-alive connection, before the client's loop can notice
        server.start()  # same port
        second = await gateway.generate(request())
    finally:
        await gateway.aclose()
    assert first.completion is not None and second.completion is not None
    assert first.completion.text == second.completion.text == "4"
    # the closed socket is seen before it is used (it was a counted retry, and under --max-retries 0 a failure)
    assert (second.attempts, second.retries, second.backoff_s) == (1, {}, 0.0)


async def test_with_no_retries_allowed_a_closed_kept_alive_connection_still_gets_its_answer(
    server: FakeLLMServer,
) -> None:
    from eval_harness.providers.gateway import Gateway, RetryPolicy

    gateway = Gateway(make("openai/gpt-4o", server, concurrency=1), RetryPolicy(max_retries=0))
    try:
        await gateway.generate(request())
        server.stop()
        server.start()
        second = await gateway.generate(request())
    finally:
        await gateway.aclose()
    assert second.completion is not None and second.attempts == 1
    assert len(server.generation_requests()) == 2  # one before the restart, and the second request once


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # nothing listens there once the socket is closed


def _unreachable(concurrency: int = 1) -> Provider:
    context = ProviderContext(settings=settings(), concurrency=concurrency)
    base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    return create_provider("openai-compatible/local", {"base_url": base_url}, context)


@pytest.mark.parametrize("http_transport", ["pooled", "httpx"])
async def test_a_server_never_reached_stops_the_run_once_a_sample_is_out_of_retries(http_transport: str) -> None:
    from eval_harness.providers.gateway import Gateway, RetryPolicy

    context = ProviderContext(settings=settings(), concurrency=1)
    base_url = f"http://127.0.0.1:{_closed_port()}/v1"
    provider = create_provider(
        "openai-compatible/local", {"base_url": base_url, "http_transport": http_transport}, context
    )
    gateway = Gateway(provider, RetryPolicy(max_retries=1, initial_wait_s=0.01))
    try:
        with pytest.raises(ServerUnreachableError, match=r"2 attempts .* is it running, and is the base URL right"):
            await gateway.generate(request())
    finally:
        await gateway.aclose()


async def test_a_server_never_reached_through_a_proxy_names_the_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # walk2-s27: a proxy that cannot be reached read "is the base URL right?", the base URL being fine
    from eval_harness.providers.gateway import Gateway, RetryPolicy

    for variable in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_closed_port()}")
    context = ProviderContext(settings=settings(), concurrency=1)
    provider = create_provider("openai-compatible/local", {"base_url": "http://llm.example:8000/v1"}, context)
    gateway = Gateway(provider, RetryPolicy(max_retries=0, initial_wait_s=0.01))
    try:
        with pytest.raises(ServerUnreachableError, match=r"are the base URL and the proxy of HTTP_PROXY right\?"):
            await gateway.generate(request())
    finally:
        await gateway.aclose()


async def test_with_no_retries_one_refusal_after_an_answer_is_that_sample_s_error_and_two_stop_the_run(
    server: FakeLLMServer,
) -> None:
    from eval_harness.providers.gateway import Gateway, RetryPolicy

    gateway = Gateway(make("openai/gpt-4o", server, concurrency=1), RetryPolicy(max_retries=0))
    try:
        assert (await gateway.generate(request())).completion is not None
        server.stop()  # the server goes away mid-run
        outcome = await gateway.generate(request())  # one refusal: this sample's bad luck, perhaps
        assert isinstance(outcome.error, ProviderConnectionError) and outcome.error.unreachable
        with pytest.raises(ServerUnreachableError, match="2 requests in a row found no server"):
            await gateway.generate(request())  # it used to record every remaining sample as an error
    finally:
        await gateway.aclose()


async def test_a_server_that_stops_answering_mid_run_stops_the_run_once_a_sample_retried_in_vain(
    server: FakeLLMServer,
) -> None:
    from eval_harness.providers.gateway import Gateway, RetryPolicy

    gateway = Gateway(make("openai/gpt-4o", server, concurrency=1), RetryPolicy(max_retries=2, initial_wait_s=0.01))
    try:
        assert (await gateway.generate(request())).completion is not None
        server.stop()
        with pytest.raises(
            ServerUnreachableError,
            match=r"3 attempts .*; the server stopped answering: no request sent after this sample's first refusal",
        ):
            await gateway.generate(request())
    finally:
        await gateway.aclose()


async def test_a_server_back_within_a_sample_s_retries_costs_that_sample_a_retry_only(server: FakeLLMServer) -> None:
    from eval_harness.providers.gateway import Gateway, RetryPolicy

    gateway = Gateway(make("openai/gpt-4o", server, concurrency=1), RetryPolicy(max_retries=3, initial_wait_s=0.4))
    try:
        assert (await gateway.generate(request())).completion is not None
        server.stop()
        pending = asyncio.ensure_future(gateway.generate(request()))
        await asyncio.sleep(0.15)  # its first try is refused; it waits 0.4-0.8 s before the next
        server.start()  # same port
        outcome = await pending
    finally:
        await gateway.aclose()
    assert outcome.completion is not None and outcome.completion.text == "4"
    assert outcome.attempts >= 2 and outcome.retries.get("connection", 0) >= 1


async def test_an_answer_to_another_sample_during_a_retry_window_keeps_the_refused_sample_its_own_error(
    server: FakeLLMServer,
) -> None:
    """A refused connection while other requests are answered is one sample's bad luck, not a server gone."""
    from eval_harness.providers.gateway import Gateway, RetryPolicy

    gateway = Gateway(make("openai/gpt-4o", server, concurrency=2), RetryPolicy(max_retries=1, initial_wait_s=0.8))
    try:
        assert (await gateway.generate(request())).completion is not None
        server.stop()
        refused = asyncio.ensure_future(gateway.generate(request()))
        await asyncio.sleep(0.1)  # refused once, waiting 0.8-1.6 s for its retry
        server.start()
        answered = await gateway.generate(request())  # an answer after the refused sample's first try
        server.stop()  # and gone again before its retry
        outcome = await refused
    finally:
        await gateway.aclose()
    assert answered.completion is not None
    assert isinstance(outcome.error, ProviderConnectionError) and outcome.error.unreachable


# openai-compatible ---------------------------------------------------------------------------------------
def test_openai_compatible_requires_a_base_url() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        create_provider("openai-compatible/llama", {}, ProviderContext(settings=settings()))


async def test_openai_compatible_never_sends_the_openai_key() -> None:
    with FakeLLMServer() as open_server:
        await call(make("openai-compatible/llama", open_server))
        assert "authorization" not in open_server.requests[-1].headers


async def test_openai_compatible_reads_its_key_from_the_named_variable(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_SERVER_KEY", KEY)
    completion = await call(make("openai-compatible/llama", server, api_key_env="LOCAL_SERVER_KEY"))
    assert completion.text == "4"
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_openai_compatible_key_is_dropped_from_recorded_options(server: FakeLLMServer) -> None:
    provider = make("openai-compatible/llama", server, api_key=KEY)
    assert "api_key" not in provider.options.public()
    assert KEY in provider.secrets()


def test_recorded_options_are_the_same_with_and_without_a_key(server: FakeLLMServer) -> None:
    with_key = make("openai-compatible/llama", server, api_key=KEY).options.public()
    without = make("openai-compatible/llama", server).options.public()
    assert with_key == without  # a resume that no longer has the key still matches the manifest


async def test_completions_endpoint_sends_a_plain_prompt_with_max_tokens(server: FakeLLMServer) -> None:
    completion = await call(
        make("openai-compatible/llama", server, api_key=KEY, endpoint="completions"), request(max_tokens=4)
    )
    sent = server.requests[-1]
    assert sent.path == "/v1/completions"
    assert sent.body == {"model": "llama", "prompt": "Be brief.\n\nWhat is 2 + 2? [[answer: 4]]", "max_tokens": 4}
    assert completion.text == "4"


async def test_server_extras_are_ignored_and_missing_usage_means_unknown_cost(server: FakeLLMServer) -> None:
    body = {
        "id": "chatcmpl-x",
        "model": "stories260K.gguf",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Once"}, "finish_reason": "length"}],
        "timings": {"prompt_n": 3, "predicted_ms": 1.5},
    }
    server.script(Reply(body=body))
    completion = await call(make("openai-compatible/llama", server, api_key=KEY, price_in="1", price_out="2"))
    assert completion.text == "Once" and completion.model == "stories260K.gguf"
    assert completion.cost_usd is None


async def test_openai_compatible_model_without_price_costs_null(server: FakeLLMServer) -> None:
    completion = await call(make("openai-compatible/gpt-4o", server, api_key=KEY))
    assert completion.usage.prompt_tokens > 0 and completion.cost_usd is None


async def test_a_gzip_encoded_answer_is_decoded(server: FakeLLMServer) -> None:
    server.script(answer("compressed " * 50, gzip=True))
    completion = await call(make("openai/gpt-4o", server))
    assert completion.text == "compressed " * 50


@pytest.mark.parametrize("kind", ["httpx", "httpx-pooled"])
async def test_the_httpx_client_speaks_the_same_wire(server: FakeLLMServer, kind: str) -> None:
    server.script(answer("via httpx"), server_error())
    provider = make("openai/gpt-4o", server, http_transport=kind)
    try:
        completion = await provider.generate(request())
        with pytest.raises(ProviderHTTPError) as caught:
            await provider.generate(request())
    finally:
        await provider.aclose()
    assert completion.text == "via httpx" and completion.request_id is not None
    assert caught.value.retry_cause == "server_error"
    assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("args", [{}, {"api_key": "sk-given-as-model-arg-42"}])
def test_a_base_url_holding_the_key_is_refused_without_echoing_it(args: dict[str, str]) -> None:
    key = args.get("api_key", KEY)
    with pytest.raises(ConfigError, match="base_url holds an API key") as caught:
        create_provider(
            "openai-compatible/x",
            {"base_url": f"http://127.0.0.1:9/v1?key={key}", **args},
            ProviderContext(settings=settings()),
        )
    assert key not in str(caught.value)


def test_a_base_url_holding_the_key_of_api_key_env_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVER_KEY", "sk-from-a-variable-77")
    args = {"base_url": "http://127.0.0.1:9/v1?q=sk-from-a-variable-77", "api_key_env": "MY_SERVER_KEY"}
    with pytest.raises(ConfigError, match="base_url holds the API key") as caught:
        create_provider("openai-compatible/x", args, ProviderContext(settings=settings()))
    assert "sk-from-a-variable" not in str(caught.value)


def test_a_key_given_as_api_key_env_is_not_echoed() -> None:
    args = {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "sk-CANARY-1234-abcd"}
    with pytest.raises(ConfigError, match="must be the name of an environment variable") as caught:
        create_provider("openai-compatible/x", args, ProviderContext(settings=settings()))
    assert "CANARY" not in str(caught.value)


@pytest.fixture
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return monkeypatch


async def test_behind_a_proxy_the_default_wire_goes_through_it(
    server: FakeLLMServer, no_proxy_variables: pytest.MonkeyPatch
) -> None:
    # the fake server plays the proxy: llm.invalid cannot resolve, so an answer can only come through it
    no_proxy_variables.setenv("HTTP_PROXY", server.url)
    server.script(answer("via the proxy"))
    provider = make("openai/gpt-4o", server, base_url="http://llm.invalid/v1")
    completion = await call(provider)
    assert completion.text == "via the proxy"
    assert server.requests[-1].headers["host"] == "llm.invalid"
    assert server.requests[-1].path == "/v1/chat/completions"


@pytest.mark.parametrize(
    ("variables", "args", "wire"),
    [
        ({}, {}, "pooled"),
        ({"https_proxy": "http://127.0.0.1:9"}, {}, "pooled"),  # the base URL is http://
        ({"HTTP_PROXY": "http://127.0.0.1:9"}, {}, "httpx"),
        ({"ALL_PROXY": "http://127.0.0.1:9"}, {}, "httpx"),
        ({"HTTP_PROXY": "http://127.0.0.1:9", "NO_PROXY": "llm.example"}, {}, "pooled"),
        ({"HTTP_PROXY": "http://127.0.0.1:9"}, {"http_transport": "pooled"}, "pooled"),  # as the user chose
    ],
)
def test_the_default_wire_is_httpx_only_where_a_proxy_applies(
    no_proxy_variables: pytest.MonkeyPatch, variables: dict[str, str], args: dict[str, str], wire: str
) -> None:
    for name, value in variables.items():
        no_proxy_variables.setenv(name, value)
    provider = create_provider(
        "openai/gpt-4o", {"base_url": "http://llm.example:8000/v1", **args}, ProviderContext(settings=settings())
    )
    assert isinstance(provider, HTTPProvider) and provider.wire_kind == wire


async def test_the_httpx_transport_reports_a_refused_connection_as_transient() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = create_provider(
        "openai/gpt-4o",
        {"base_url": f"http://127.0.0.1:{port}/v1", "http_transport": "httpx"},
        ProviderContext(settings=settings()),
    )
    error = await failure(provider)
    assert isinstance(error, ProviderConnectionError) and error.retry_cause == "connection"


@pytest.mark.parametrize("transport", ["pooled", "httpx", "httpx-pooled"])
async def test_each_wire_sends_host_query_and_length(server: FakeLLMServer, transport: str) -> None:
    # before: httpx's wires (behind a proxy, or chosen) sent /v1?api-version=2024-06-01/chat/completions
    server.script(answer("plain"))
    provider = make(
        "openai/gpt-4o", server, base_url=f"{server.base_url}?api-version=2024-06-01", http_transport=transport
    )
    try:
        completion = await provider.generate(request())
    finally:
        await provider.aclose()
    seen = server.requests[-1]
    assert completion.text == "plain"
    assert seen.headers["host"] == server.url.removeprefix("http://")
    assert seen.query == {"api-version": "2024-06-01"} and seen.path == "/v1/chat/completions"
    assert int(seen.headers["content-length"]) == seen.size > 0


def test_a_header_with_a_line_break_is_refused_without_echoing_it(server: FakeLLMServer) -> None:
    with pytest.raises(ConfigError) as raised:  # as the provider is made: nothing is ever sent
        make("openai-compatible/x", server, api_key="sk-canary\r\nx-injected: 1")
    assert "line break" in str(raised.value) and "sk-canary" not in str(raised.value)
    assert server.generation_requests() == []


def test_a_base_url_that_is_not_http_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="base_url"):
        create_provider("openai-compatible/x", {"base_url": "localhost:8080/v1"}, ProviderContext(settings=settings()))


def test_the_fake_server_also_speaks_models_and_embeddings(server: FakeLLMServer) -> None:
    headers = {"authorization": f"Bearer {KEY}", "content-type": "application/json"}
    models = urllib.request.Request(f"{server.base_url}/models", headers=headers)
    with urllib.request.urlopen(models) as response:
        assert json.loads(response.read())["data"][0]["object"] == "model"
    body = json.dumps({"model": "text-embedding-3-small", "input": ["a", "b"]}).encode()
    embeddings = urllib.request.Request(f"{server.base_url}/embeddings", data=body, headers=headers)
    with urllib.request.urlopen(embeddings) as response:
        data = json.loads(response.read())
    assert [item["index"] for item in data["data"]] == [0, 1]
    assert len(data["data"][0]["embedding"]) == 8 and data["usage"]["prompt_tokens"] > 0


def test_with_message_keeps_every_attribute_of_any_provider_error() -> None:
    from eval_harness.errors import ReplayedError

    refused = ProviderConnectionError("cannot connect", retry_cause="connection", unreachable=True)
    relabelled = refused.with_message("openai/x: cannot connect")
    assert (str(relabelled), relabelled.unreachable, relabelled.retry_cause) == (
        "openai/x: cannot connect",
        True,
        "connection",
    )
    replayed = ReplayedError("ProviderHTTPError", "HTTP 500", request_id="req_1")  # an __init__ of other arguments
    copied = replayed.with_message("again: HTTP 500")
    assert (type(copied), str(copied), copied.recorded_type, copied.request_id) == (
        ReplayedError,
        "again: HTTP 500",
        "ProviderHTTPError",
        "req_1",
    )
