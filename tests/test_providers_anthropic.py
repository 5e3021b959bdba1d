"""anthropic/ against a real HTTP server on 127.0.0.1: the Messages API wire, thinking, usage, errors."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from conftest import TaskRoot, call, failure
from conftest import provider_request as request
from fake_llm_server import FakeLLMServer, Reply, answer, overloaded, rate_limited, server_error, unauthorized
from pydantic import SecretStr

from eval_harness.config import RunConfig, Settings
from eval_harness.errors import AuthenticationError, ConfigError, ModelNotFoundError, ProviderHTTPError
from eval_harness.planning import plan_run
from eval_harness.providers.anthropic import DEFAULT_MAX_TOKENS, parse_reset_time
from eval_harness.providers.base import Provider, ProviderContext, create_provider
from eval_harness.types import GenerateConfig

KEY = "sk-ant-test-0123456789"
MODEL = "claude-sonnet-4-20250514"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(api_key=KEY) as running:
        yield running


def make(server: FakeLLMServer, model: str = MODEL, **args: str) -> Provider:
    context = ProviderContext(settings=Settings(anthropic_api_key=SecretStr(KEY)))
    return create_provider(f"anthropic/{model}", {"base_url": server.base_url, **args}, context)


async def test_system_prompt_is_the_top_level_field_and_headers_carry_key_and_version(server: FakeLLMServer) -> None:
    await call(make(server), request(temperature=0.0, stop=["Q:"], max_tokens=20))
    sent = server.requests[-1]
    assert sent.path == "/v1/messages"
    assert sent.body == {
        "model": MODEL,
        "max_tokens": 20,
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "What is 2 + 2? [[answer: 4]]"}],
        "stop_sequences": ["Q:"],
        "temperature": 0.0,
    }
    assert sent.headers["x-api-key"] == KEY
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in sent.headers


async def test_a_whitespace_stop_is_cut_at_here_as_the_api_refuses_it(server: FakeLLMServer) -> None:
    # "stop_sequences: each stop sequence must contain non-whitespace" (400): "\n" failed every sample
    server.script(answer("4\nQ: and the next question"))
    provider = make(server)
    completion = await call(provider, request(stop=["\n", "Q:"], max_tokens=20))
    assert server.requests[-1].body["stop_sequences"] == ["Q:"]
    assert (completion.text, completion.finish_reason) == ("4", "stop_sequence")
    assert provider.stop_applied_after(request(stop=["\n", "Q:"])) == ["\n"]  # part of the cache key


@pytest.mark.parametrize("suffix", ["", "/", "?region=eu"])
async def test_a_base_url_of_the_host_alone_gets_v1_as_anthropics_sdks_add_it(
    server: FakeLLMServer, suffix: str
) -> None:
    # before: the host and a query became http://host?region=eu/v1, whose requests went to / with a bad query
    settings = Settings(anthropic_api_key=SecretStr(KEY), anthropic_base_url=server.url + suffix)
    provider = create_provider(f"anthropic/{MODEL}", {}, ProviderContext(settings=settings))
    completion = await call(provider, request())
    assert completion.text == "4" and server.requests[-1].path == "/v1/messages"
    assert server.requests[-1].query == ({"region": "eu"} if suffix.startswith("?") else {})


async def test_max_tokens_defaults_when_the_task_gives_none(server: FakeLLMServer) -> None:
    await call(make(server))
    assert server.requests[-1].body["max_tokens"] == DEFAULT_MAX_TOKENS


async def test_answer_usage_model_and_request_id_are_read(server: FakeLLMServer) -> None:
    completion = await call(make(server))
    assert completion.text == "4"
    assert completion.finish_reason == "end_turn"
    assert completion.model == MODEL
    assert completion.request_id is not None and completion.request_id.startswith("req_")
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0


async def test_thinking_budget_enables_thinking_and_keeps_it_apart_from_the_answer(server: FakeLLMServer) -> None:
    server.script(answer("4", thinking="Two and two make four."))
    completion = await call(make(server, thinking_budget="2048"), request(temperature=0.0, max_tokens=100))
    body = server.requests[-1].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 2148
    assert "temperature" not in body
    assert completion.text == "4"
    assert completion.thinking == "Two and two make four."


def test_thinking_budget_below_the_api_minimum_is_a_config_error(server: FakeLLMServer) -> None:
    with pytest.raises(ConfigError, match="thinking_budget"):
        make(server, thinking_budget="100")


async def test_prompt_cache_tokens_are_counted_and_priced_at_their_rates(server: FakeLLMServer) -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": "4"}],
        "stop_reason": "max_tokens",
        "usage": {
            "input_tokens": 100,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 200,
            "output_tokens": 50,
        },
    }
    server.script(Reply(body=body))
    completion = await call(make(server))
    assert completion.usage.prompt_tokens == 1300
    assert completion.usage.cached_tokens == 1000
    assert completion.finish_reason == "max_tokens"
    # Sonnet 4: $3 in, $0.30 cache read, $3.75 cache write, $15 out per million tokens:
    # (100*3 + 1000*0.3 + 200*3.75 + 50*15) / 1e6 = (300 + 300 + 750 + 750) / 1e6
    assert completion.cost_usd == pytest.approx(0.0021)


async def test_529_is_overloaded_and_transient(server: FakeLLMServer) -> None:
    server.script(overloaded())
    error = await failure(make(server))
    assert isinstance(error, ProviderHTTPError)
    assert error.retry_cause == "overloaded" and error.status_code == 529
    assert "overloaded_error: Overloaded" in str(error)


async def test_500_api_error_is_a_transient_server_error(server: FakeLLMServer) -> None:
    server.script(server_error(message="Internal server error"))
    error = await failure(make(server))
    assert isinstance(error, ProviderHTTPError) and error.retry_cause == "server_error"
    assert "api_error: Internal server error" in str(error)


async def test_429_without_retry_after_uses_the_ratelimit_reset_time(server: FakeLLMServer) -> None:
    reset = (datetime.now(UTC) + timedelta(seconds=20)).isoformat().replace("+00:00", "Z")
    headers = {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": reset}
    server.script(rate_limited(None, headers=headers))
    error = await failure(make(server))
    assert isinstance(error, ProviderHTTPError) and error.retry_cause == "rate_limit"
    assert error.retry_after is not None and 15 <= error.retry_after <= 20


def test_rfc3339_reset_times_parse_relative_to_now() -> None:
    now = datetime(2025, 1, 1, 0, 0, 0, tzinfo=UTC).timestamp()
    assert parse_reset_time("2025-01-01T00:00:30Z", now) == 30.0
    assert parse_reset_time("2024-12-31T23:59:00Z", now) == 0.0
    assert parse_reset_time("tomorrow", now) is None


async def test_401_stops_with_an_authentication_error(server: FakeLLMServer) -> None:
    server.script(unauthorized("invalid x-api-key"))
    error = await failure(make(server))
    assert isinstance(error, AuthenticationError) and "ANTHROPIC_API_KEY" in str(error)


async def test_404_not_found_error_for_an_unknown_model_stops_the_run(server: FakeLLMServer) -> None:
    # Anthropic's body for an unknown model: {"type": "error", "error": {"type": "not_found_error", ...}}
    server.script(Reply(kind="error", status=404, message="model: claude-typo"))
    error = await failure(make(server))
    assert isinstance(error, ModelNotFoundError) and "model: claude-typo" in str(error)


def test_anthropic_without_a_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        create_provider(f"anthropic/{MODEL}", {}, ProviderContext(settings=Settings()))


def test_temperature_and_top_p_together_are_refused_before_the_run_for_claude_4_1_and_later() -> None:
    context = ProviderContext(settings=Settings(anthropic_api_key=SecretStr(KEY)))
    both = GenerateConfig(temperature=0.5, top_p=0.9)
    with pytest.raises(ConfigError, match="takes temperature or top_p, not both; drop one"):
        create_provider("anthropic/claude-sonnet-4-5", {}, context).check_generation(both)
    for older in ("claude-3-5-haiku-latest", "claude-2.1", "claude-sonnet-4-20250514", "deepseek-chat"):
        create_provider(f"anthropic/{older}", {}, context).check_generation(both)  # sent both, as given
    create_provider("anthropic/claude-sonnet-4-5", {}, context).check_generation(GenerateConfig(top_p=0.9))


def test_a_run_with_temperature_and_top_p_for_claude_4_stops_before_anything_is_written(
    task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    task = task_root.task("both", 'name = "both"\ntemplate = "plain.jinja2"\nscorers = [{name = "exact_match"}]\n'
                          '[dataset]\npath = "data/adder.jsonl"\n[generation]\ntop_p = 0.9\n')  # fmt: skip
    config = RunConfig(task=str(task), model="anthropic/claude-haiku-4-5", output_dir=task_root.root / "out",
                       generation={"temperature": 0.2})  # fmt: skip
    with pytest.raises(ConfigError, match="anthropic/claude-haiku-4-5: the Messages API takes temperature or top_p"):
        plan_run(config)
    assert not (task_root.root / "out").exists()
