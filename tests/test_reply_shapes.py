"""Replies of the documented fields but the wrong JSON types, sent on a real socket (the fake server's
``Reply(body=...)`` / ``Reply(events=...)`` with the real status): each is a ``ProviderResponseError`` naming the
JSON path of the wrong value, never an ``AttributeError`` or ``TypeError`` recorded as a contract error."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from conftest import call, failure
from conftest import provider_request as request
from fake_llm_server import FakeLLMServer, Reply
from pydantic import SecretStr

from eval_harness.config import Settings
from eval_harness.errors import ProviderHTTPError, ProviderResponseError
from eval_harness.providers.base import Provider, ProviderContext, create_provider
from eval_harness.providers.gateway import Gateway, RetryPolicy

OPENAI_KEY = "sk-test-openai-0123456789"
ANTHROPIC_KEY = "sk-ant-test-0123456789"


def make(model_id: str, server: FakeLLMServer, **args: str) -> Provider:
    settings = Settings(openai_api_key=SecretStr(OPENAI_KEY), anthropic_api_key=SecretStr(ANTHROPIC_KEY))
    return create_provider(model_id, {"base_url": server.base_url, **args}, ProviderContext(settings=settings))


# Well-formed replies, as the API references document them; each test breaks one value.
CHAT: dict[str, Any] = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "gpt-4o-2024-08-06",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "4", "refusal": None}, "finish_reason": "stop"}
    ],
    "usage": {
        "prompt_tokens": 20,
        "completion_tokens": 1,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    },
}
COMPLETION: dict[str, Any] = {
    "id": "cmpl-1",
    "object": "text_completion",
    "model": "m",
    "choices": [{"index": 0, "text": "4", "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 20, "completion_tokens": 1},
}
RESPONSE: dict[str, Any] = {
    "id": "resp_1",
    "object": "response",
    "status": "completed",
    "incomplete_details": None,
    "model": "gpt-4o",
    "output": [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "Two and two."}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "4"}]},
    ],
    "usage": {
        "input_tokens": 20,
        "output_tokens": 1,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    },
}
MESSAGE: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "thinking", "thinking": "Two and two.", "signature": "c2ln"}, {"type": "text", "text": "4"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 20, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
}


def broken(body: dict[str, Any], path: tuple[str | int, ...], value: object) -> dict[str, Any]:
    """``body`` with the value at ``path`` replaced by ``value``."""
    copied = copy.deepcopy(body)
    parent: Any = copied
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = value
    return copied


ENDPOINTS: dict[str, tuple[str, dict[str, str], dict[str, Any]]] = {
    "chat": ("openai/gpt-4o", {}, CHAT),
    "compatible chat": ("openai-compatible/m", {}, CHAT),
    "completions": ("openai-compatible/m", {"endpoint": "completions"}, COMPLETION),
    "responses": ("openai/gpt-4o", {"api": "responses"}, RESPONSE),
    "incomplete": ("openai/gpt-4o", {"api": "responses"}, broken(RESPONSE, ("status",), "incomplete")),
    "messages": ("anthropic/claude-sonnet-4-5", {}, MESSAGE),
}
"""The endpoints the cases break a reply of: model, model args and the well-formed reply."""

WRONG_SHAPES = [
    ("chat", ("choices",), 1, "choices: expected an array, got an integer"),
    ("chat", ("choices", 0), "4", "choices[0]: expected an object, got a string"),
    ("chat", ("choices", 0, "message"), "4", "choices[0].message: expected an object, got a string"),
    ("chat", ("choices", 0, "message", "content"), 4, "choices[0].message.content: expected a string, got an integer"),
    (
        "chat",
        ("choices", 0, "message", "content"),
        ["4"],
        "choices[0].message.content[0]: expected an object, got a string",
    ),
    ("completions", ("choices", 0, "text"), 4, "choices[0].text: expected a string, got an integer"),
    ("responses", ("output",), None, "the response has no output"),
    ("responses", ("output",), {"type": "message"}, "output: expected an array, got an object"),
    ("responses", ("output", 1), "4", "output[1]: expected an object, got a string"),
    ("responses", ("output", 1, "content"), 4, "output[1].content: expected an array, got an integer"),
    (
        "responses",
        ("output", 1, "content", 0, "text"),
        4,
        "output[1].content[0].text: expected a string, got an integer",
    ),
    ("responses", ("output", 0, "summary"), "Two and two.", "output[0].summary: expected an array, got a string"),
    ("messages", ("content", 1), "4", "content[1]: expected an object, got a string"),
    ("messages", ("content", 1, "text"), 4, "content[1].text: expected a string, got an integer"),
]
"""(endpoint, the path broken, its wrong value, the message after the model's name): what the answer is read
from, held to its documented type."""

METADATA = [
    ("chat", ("usage", "prompt_tokens_details"), "4", {"cached_tokens": None}),
    ("chat", ("usage", "completion_tokens_details"), 0, {"reasoning_tokens": None}),
    ("chat", ("usage", "prompt_tokens_details", "cached_tokens"), "12", {"cached_tokens": None}),
    ("chat", ("usage", "completion_tokens"), "1", {"completion_tokens": 0}),
    ("chat", ("usage", "prompt_tokens"), -3, {"prompt_tokens": 0}),
    ("chat", ("usage", "prompt_tokens"), 1e300, {"prompt_tokens": 0}),
    ("chat", ("usage", "prompt_tokens"), 20.0, {"prompt_tokens": 20}),
    ("chat", ("usage", "prompt_tokens"), True, {"prompt_tokens": 0}),
    ("chat", ("usage",), [20, 1], {"prompt_tokens": 0, "completion_tokens": 0}),
    ("chat", ("choices", 0, "message", "refusal"), {"text": "no"}, {}),
    ("chat", ("choices", 0, "finish_reason"), 1, {"finish_reason": None}),
    ("chat", ("model",), ["gpt-4o"], {"model": None}),
    ("chat", ("id",), 17, {}),
    ("compatible chat", ("choices", 0, "message", "reasoning_content"), {"text": "hm"}, {"thinking": None}),
    ("incomplete", ("incomplete_details",), "max_output_tokens", {"finish_reason": "incomplete"}),
    ("responses", ("usage", "output_tokens_details"), True, {"reasoning_tokens": None}),
    ("messages", ("content", 0, "thinking"), ["Two"], {"thinking": None}),
    ("messages", ("usage", "output_tokens"), "1", {"completion_tokens": 0}),
    ("messages", ("usage",), "20/1", {"prompt_tokens": 0, "completion_tokens": 0}),
    ("messages", ("stop_reason",), {"type": "end_turn"}, {"finish_reason": None}),
]
"""(endpoint, the path broken, its wrong value, what the completion then reads): metadata of another type is
"not reported" — a negative or out-of-range count too, which no reader could take back — and the answer stands."""


@pytest.mark.parametrize(
    ("endpoint", "path", "value", "read"), METADATA, ids=[f"{c[0]}:{c[1]}={c[2]!r}" for c in METADATA]
)
async def test_metadata_of_another_type_reads_as_not_reported_and_the_answer_stands(
    server: FakeLLMServer, endpoint: str, path: tuple[str | int, ...], value: object, read: dict[str, object]
) -> None:
    model, args, body = ENDPOINTS[endpoint]
    server.script(Reply(body=broken(body, path, value)))
    completion = await call(make(model, server, **args))
    assert completion.text == "4"
    fields = {**completion.model_dump(), **completion.usage.model_dump()}
    assert {name: fields[name] for name in read} == read


async def test_content_given_as_a_list_of_text_parts_is_joined(server: FakeLLMServer) -> None:
    parts = [{"type": "text", "text": "4"}, {"type": "text", "text": "2"}]
    server.script(Reply(body=broken(CHAT, ("choices", 0, "message", "content"), parts)))
    assert (await call(make("openai-compatible/m", server))).text == "42"


async def test_only_the_first_choice_is_held_to_its_shape(server: FakeLLMServer) -> None:
    server.script(Reply(body=broken(CHAT, ("choices",), [CHAT["choices"][0], None])))
    assert (await call(make("openai/gpt-4o", server))).text == "4"


@pytest.mark.parametrize(("endpoint", "path", "value", "message"), WRONG_SHAPES, ids=[c[3] for c in WRONG_SHAPES])
async def test_a_value_of_the_wrong_json_type_is_a_response_error_naming_its_path(
    server: FakeLLMServer, endpoint: str, path: tuple[str | int, ...], value: object, message: str
) -> None:
    model, args, body = ENDPOINTS[endpoint]
    server.script(Reply(body=broken(body, path, value)))
    error = await failure(make(model, server, **args))
    assert isinstance(error, ProviderResponseError), repr(error)
    assert str(error) == f"{model}: {message}"
    assert error.retry_cause is None  # the server sent what it meant to: another try gets the same shape


@pytest.mark.parametrize("endpoint", list(ENDPOINTS))
async def test_the_well_formed_replies_the_shape_tests_break_are_read(server: FakeLLMServer, endpoint: str) -> None:
    # the cases above would pass for a parser that refused every reply: each unbroken reply is an answer
    model, args, body = ENDPOINTS[endpoint]
    server.script(Reply(body=body))
    completion = await call(make(model, server, **args))
    assert completion.text == "4" and completion.usage.prompt_tokens == 20


def _chunk(choices: Any, **fields: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": choices, **fields}


@pytest.mark.parametrize(
    ("events", "message"),
    [
        (
            [_chunk([{"index": 0, "delta": "4", "finish_reason": None}])],
            "event 1 of the stream: choices[0].delta: expected an object, got a string",
        ),
        (
            [_chunk([{"index": 0, "delta": {"content": "4"}, "finish_reason": None}]), _chunk(7)],
            "event 2 of the stream: choices: expected an array, got an integer",
        ),
        (
            [_chunk([{"index": 0, "delta": {"content": 4}, "finish_reason": None}])],
            "event 1 of the stream: choices[0].delta.content: expected a string, got an integer",
        ),
        (
            [_chunk(["4"])],
            "event 1 of the stream: choices[0]: expected an object, got a string",
        ),
        (
            [[{"delta": {"content": "4"}}]],
            "event 1 of the stream: expected an object, got an array",
        ),
    ],
)
async def test_a_streamed_event_of_the_wrong_shape_is_a_response_error_naming_the_event_and_path(
    server: FakeLLMServer, events: list[Any], message: str
) -> None:
    server.script(Reply(events=[*events, "[DONE]"]))
    error = await failure(make("openai-compatible/m", server, stream="true"))
    assert isinstance(error, ProviderResponseError), repr(error)
    assert str(error) == f"openai-compatible/m: {message}"


async def test_a_wrongly_shaped_reply_is_recorded_as_a_response_error_not_a_contract_error(
    server: FakeLLMServer,
) -> None:
    # what the run records: before, the gateway saw an AttributeError from the parser (a ProviderContractError
    # recorded as "AttributeError", naming no field)
    server.script(Reply(body=broken(RESPONSE, ("output", 1), "4")))
    gateway = Gateway(make("openai/gpt-4o", server, api="responses"), RetryPolicy(max_retries=2))
    try:
        outcome = await gateway.generate(request())
    finally:
        await gateway.aclose()
    assert type(outcome.error) is ProviderResponseError
    assert str(outcome.error) == "openai/gpt-4o: output[1]: expected an object, got a string"
    assert outcome.attempts == 1


# error bodies --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "error", "shown", "cause"),
    [
        (400, "the prompt is too long", "the prompt is too long", None),
        (429, "slow down", "slow down", "rate_limit"),
        (500, ["upstream", "failed"], """'{"error":["upstream","failed"]}'""", "server_error"),
        (503, None, """'{"error":null}'""", "overloaded"),
        (502, 17, """'{"error":17}'""", "server_error"),
    ],
)
@pytest.mark.parametrize("model", ["openai/gpt-4o", "anthropic/claude-sonnet-4-5"])
async def test_an_error_status_whose_error_is_not_an_object_shows_the_servers_body(
    server: FakeLLMServer, model: str, status: int, error: object, shown: str, cause: str | None
) -> None:
    server.script(Reply(status=status, body={"error": error}))
    raised = await failure(make(model, server))
    assert isinstance(raised, ProviderHTTPError), repr(raised)
    assert (raised.status_code, raised.retry_cause) == (status, cause)
    assert str(raised) == f"{model}: HTTP {status}: {shown}"


@pytest.mark.parametrize("model", ["openai/gpt-4o", "anthropic/claude-sonnet-4-5"])
async def test_an_error_object_whose_type_and_code_are_not_names_shows_its_message_alone(
    server: FakeLLMServer, model: str
) -> None:
    body = {"error": {"message": "the prompt is too long", "type": ["invalid"], "code": {"n": 1}}}
    server.script(Reply(status=400, body=body))
    raised = await failure(make(model, server))
    assert isinstance(raised, ProviderHTTPError)
    assert str(raised) == f"{model}: HTTP 400: the prompt is too long"


@pytest.mark.parametrize("message", [{"text": "the prompt is too long"}, ["the prompt", "is too long"]])
async def test_an_error_message_that_is_not_a_string_is_shown_as_json(server: FakeLLMServer, message: object) -> None:
    server.script(Reply(status=400, body={"error": {"message": message, "type": "invalid_request_error"}}))
    raised = await failure(make("openai/gpt-4o", server))
    assert (
        str(raised) == f"openai/gpt-4o: HTTP 400: invalid_request_error: {json.dumps(message, separators=(',', ':'))}"
    )


async def test_a_streamed_events_odd_metadata_leaves_the_streamed_answer_whole(server: FakeLLMServer) -> None:
    events = [
        _chunk([{"index": 0, "delta": {"content": "4", "refusal": False}, "finish_reason": None}], id=7),
        _chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}], model=["m"]),
        _chunk([], usage="20/1"),
        "[DONE]",
    ]
    server.script(Reply(events=events))
    completion = await call(make("openai-compatible/m", server, stream="true"))
    assert (completion.text, completion.finish_reason, completion.usage.prompt_tokens) == ("4", "stop", 0)
