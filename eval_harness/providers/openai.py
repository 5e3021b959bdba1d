"""``openai/<model>``: OpenAI's Chat Completions API (default) or Responses API (``--model-arg api=responses``).

The wire translation here is shared with ``openai-compatible/<model>`` (vLLM, llama.cpp, Ollama, LM Studio,
TGI), which adds the legacy ``/completions`` endpoint and optional keys.

Chat Completions: ``POST {base}/chat/completions`` with ``messages``; the answer is
``choices[0].message.content`` ("string or null": null is the empty answer), reasoning servers' thinking
``reasoning_content`` or ``reasoning``, usage ``prompt_tokens``/``completion_tokens`` with
``prompt_tokens_details.cached_tokens`` (and ``cache_write_tokens``) and
``completion_tokens_details.reasoning_tokens``.
Responses: ``POST {base}/responses`` with ``input`` and ``instructions``; the answer is the ``output_text``
parts of ``message`` items in ``output``, usage ``input_tokens``/``output_tokens`` with
``input_tokens_details.cached_tokens`` (and ``cache_write_tokens``) and ``output_tokens_details.reasoning_tokens``.
A refusal (``message.refusal``, streamed ``delta.refusal``, a Responses ``refusal`` part) is the answer text
with finish reason ``refusal``. A 200 holding ``{"error": ...}`` instead of an answer (gateways such as
OpenRouter) is an HTTP error; a quota 429 (``insufficient_quota``, ``billing_hard_limit_reached``) stops the run.
Rate limits: ``retry-after``/``retry-after-ms`` when sent, else ``x-ratelimit-reset-requests`` /
``x-ratelimit-reset-tokens`` (durations such as ``1s``, ``6m0s``, ``20ms``) of the exhausted budget.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import orjson
from pydantic import Field

from eval_harness.errors import (
    ConfigError,
    ProviderError,
    ProviderHTTPError,
    ProviderResponseError,
    RetryCause,
    json_type_name,
)
from eval_harness.providers._http import (
    REFUSAL,
    TRANSIENT_4XX,
    HTTPOptions,
    HTTPProvider,
    Reply,
    cut_at_stop,
    error_code,
    error_detail,
    retry_cause_of_status,
    sampling,
    sse_payloads,
    status_named,
)
from eval_harness.providers._shapes import (
    count_or_none,
    name_or_none,
    object_at,
    object_or_none,
    objects,
    string_at,
    string_or_none,
    wrong_shape,
)
from eval_harness.providers.base import ProviderContext, ProviderOptions, register_provider
from eval_harness.types import ChatMessage, Completion, GenerateConfig, GenerateRequest, Usage

Endpoint = Literal["chat", "responses", "completions"]
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
# Reasoning models (o-series, gpt-5 and every later gpt-N) accept only the default temperature and top_p at any
# reasoning effort but none ("When reasoning effort is not none, remove temperature, top_p", OpenAI's deployment
# checklist); sending the task's value fails every sample.
_REASONING_MODEL = re.compile(r"^(?:o\d|gpt-(?:[5-9]|[1-9]\d+))")
_NO_EFFORT_NONE = re.compile(r"^gpt-6\.2(?!\d)")
"""GPT-6.2 models think always: "The API rejects requests that set reasoning effort to none" (gpt-6.2-sol's page)."""
_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})
_ERROR_CAUSES: dict[str, RetryCause] = {
    "server_error": "server_error",
    "api_error": "server_error",
    "internal_server_error": "server_error",
    "overloaded_error": "overloaded",
    "rate_limit_exceeded": "rate_limit",
    "rate_limit_error": "rate_limit",
}
"""The error codes and types that another attempt may clear, and the cause they count under: of a Responses
``status: failed``, and of an error event inside a stream (any other, ``context_length_exceeded`` or
``invalid_request_error``, fails the sample, as the same error at HTTP 200 does: ``raise_for_error_body``)."""
REASONING_ROOM = 25_000
"""Tokens added to the answer's max_tokens for a reasoning model, whose limit bounds its reasoning and its answer
together ("reserve at least 25,000 tokens for reasoning and outputs", OpenAI's reasoning guide): sent as is, a
short answer's limit is spent reasoning and the answer is empty (finish reason ``length``)."""
MIN_OUTPUT_TOKENS = 16
"""The Responses API refuses a smaller ``max_output_tokens`` (400 ``integer_below_min_value``)."""
MAX_STOP_SEQUENCES = 4
"""Chat Completions takes "up to 4 sequences" in ``stop`` (the API reference)."""


def parse_duration(text: str) -> float | None:
    """OpenAI's reset durations: ``1s``, ``6m0s``, ``1h2m3.5s``, ``20ms`` → seconds."""
    text = text.strip()
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(a + b for a, b in parts) != text:
        return None
    return sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)


def prompt_text(messages: list[ChatMessage]) -> str:
    """A chat prompt as one plain prompt (for the legacy completions endpoint): the turns' texts in order."""
    return "\n\n".join(m.content for m in messages)


class OpenAIOptions(HTTPOptions):
    """Options of ``openai/<model>``."""

    transport_only: ClassVar[frozenset[str]] = HTTPOptions.transport_only | {"stream"}

    api: Literal["chat", "responses"] = Field(default="chat", description="chat (Chat Completions) or responses.")
    stream: bool = Field(default=False, description="Use server-sent events (Chat Completions only).")
    reasoning_effort: Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"] | None = Field(
        default=None,
        description="Reasoning effort of o-series / gpt-5 and later models (which levels a model takes varies: gpt-5.1 "
        "takes none but not minimal, gpt-6.2 not none); at none, temperature and top_p are sent.",
    )
    reasoning_summary: Literal["auto", "concise", "detailed"] | None = Field(
        default=None,
        description="Responses API: ask for a summary of the model's reasoning, recorded as its thinking (none is "
        "sent otherwise; some organisations must be verified to get one).",
    )


class OpenAIWire(HTTPProvider):
    """The OpenAI wire formats; subclasses choose the endpoint, the max-tokens field and the credentials."""

    max_tokens_field: ClassVar[str] = "max_completion_tokens"

    @property
    def endpoint(self) -> Endpoint:
        """Which of the three endpoints this provider calls."""
        return "chat"

    @property
    def streaming(self) -> bool:
        """Whether answers come as server-sent events."""
        return False

    @property
    def stream_asked(self) -> bool:
        """Whether ``stream=true`` was given (the Responses API's answers come whole all the same)."""
        return False

    streamed_endpoints = "Chat Completions"
    """The endpoints whose answers ``stream=true`` streams, as the note about the Responses API names them."""

    def reasons(self) -> bool:
        """Whether the model is a reasoning model, which takes no stop sequences."""
        return False

    def reasons_first(self) -> bool:
        """Whether the model reasons before answering: a reasoning model at any effort but none. Then it also
        refuses temperature and top_p, which are left out."""
        return self.reasons() and self.reasoning_effort() != "none"

    def output_cap(self, config: GenerateConfig) -> int | None:
        if config.max_tokens is None:
            return None
        return config.max_tokens + (REASONING_ROOM if self.reasons_first() else 0)

    def reasoning_effort(self) -> str | None:
        """The reasoning effort to request, if any."""
        return None

    def reasoning_summary(self) -> str | None:
        """The reasoning summary to ask the Responses API for, if any."""
        return None

    def generation_notes(self, config: GenerateConfig) -> list[str]:
        notes = []
        if self.stream_asked and self.endpoint == "responses":  # asked for, so not dropped without a word
            notes.append(
                f"note: {self.model_id}: stream=true streams {self.streamed_endpoints} only; the Responses API's "
                "answers come whole"
            )
        if not self.reasons():
            return notes
        cap = self.output_cap(config)
        if cap is not None and config.max_tokens is not None and cap != config.max_tokens:
            field = "max_output_tokens" if self.endpoint == "responses" else self.max_tokens_field
            notes.append(
                f"note: {self.model_id} reasons before answering, into the same limit: sent {field} {cap:,} (the "
                f"answer's {config.max_tokens:,} plus {REASONING_ROOM:,} to reason in)"
            )
        unsent = [f"{name} {value:g}" for name, value in sampling(config).items()] if self.reasons_first() else []
        unsent += [f"stop {len(config.stop)} sequence{'s' if len(config.stop) != 1 else ''}"] if config.stop else []
        if not unsent:
            return notes
        stops = " (the answer is cut at the stop sequences here)" if config.stop else ""
        takes = "takes no temperature, top_p or stop" if self.reasons_first() else "takes no stop"
        unsent_note = f"note: {self.model_id} is a reasoning model, which {takes}: {' and '.join(unsent)} not sent"
        return [*notes, unsent_note + stops]

    def sends_stop(self) -> bool:
        """Whether stop sequences go in the body; else the answer is cut at them here. The Responses API has
        no ``stop``, and reasoning models reject it ("Not supported with latest reasoning models o3 and
        o4-mini", the Chat Completions reference)."""
        return self.endpoint != "responses" and not self.reasons()

    def stop_applied_after(self, request: GenerateRequest) -> list[str] | None:
        stop = request.config.stop
        return None if not stop or self.sends_stop() else list(stop)

    # request -------------------------------------------------------------------------------------------
    def request_body(self, request: GenerateRequest) -> dict[str, Any]:
        config = request.config
        body: dict[str, Any] = {"model": self.model}
        endpoint = self.endpoint
        if endpoint == "responses":
            system = [m.content for m in request.messages if m.role == "system"]
            if system:
                body["instructions"] = "\n\n".join(system)
            body["input"] = [{"role": m.role, "content": m.content} for m in request.messages if m.role != "system"]
            cap = self.output_cap(config)
            if cap is not None:
                body["max_output_tokens"] = cap
            body["store"] = False
            reasoning = {"effort": self.reasoning_effort(), "summary": self.reasoning_summary()}
            if any(reasoning.values()):
                body["reasoning"] = {name: value for name, value in reasoning.items() if value is not None}
        else:
            if endpoint == "completions":
                body["prompt"] = prompt_text(request.messages)
            else:
                body["messages"] = [{"role": m.role, "content": m.content} for m in request.messages]
                effort = self.reasoning_effort()
                if effort is not None:
                    body["reasoning_effort"] = effort
            cap = self.output_cap(config)
            if cap is not None:
                body["max_tokens" if endpoint == "completions" else self.max_tokens_field] = cap
            if config.stop and self.sends_stop():
                body["stop"] = list(config.stop)
            if config.seed is not None:
                body["seed"] = config.seed
            if self.streaming:
                body["stream"] = True
                body["stream_options"] = {"include_usage": True}
        if not self.reasons_first():  # a model reasoning first refuses temperature and top_p
            body.update(sampling(config))
        return body

    # response ------------------------------------------------------------------------------------------
    async def generate(self, request: GenerateRequest) -> Completion:
        body = self.request_body(request)
        endpoint = self.endpoint
        path = {"chat": "/chat/completions", "responses": "/responses", "completions": "/completions"}[endpoint]
        reply = await self.post(path, body, raw_text=self.streaming)
        try:
            if reply.data is None:
                completion = self._from_stream(reply, endpoint)
            elif endpoint == "responses":
                completion = self._from_responses(reply)
            else:
                completion = self._from_choices(reply, endpoint)
        except ProviderError as exc:
            raise self.labelled(exc, self.request_id(reply)) from None
        return cut_at_stop(completion, self.stop_applied_after(request), "stop")

    def _usage(self, data: dict[str, Any], input_key: str, output_key: str) -> tuple[Usage, bool, int]:
        """The usage, whether the server reported any, and the prompt tokens written to its cache (billed at their
        own rate from GPT-5.6 on: ``cache_write_tokens``, OpenAI's prompt-caching guide)."""
        raw = object_or_none(data, "usage")
        if raw is None:
            return Usage(), False, 0
        prompt, completion = count_or_none(raw, input_key), count_or_none(raw, output_key)
        usage = Usage(
            prompt_tokens=prompt or 0,
            completion_tokens=completion or 0,
            cached_tokens=_detail(raw, f"{input_key}_details", "cached_tokens"),
            reasoning_tokens=_detail(raw, f"{output_key}_details", "reasoning_tokens"),
        )
        # a count not given is unknown, not 0: "usage": {} or one without the output's count prices nothing
        reported = prompt is not None and completion is not None
        return usage, reported, _detail(raw, f"{input_key}_details", "cache_write_tokens") or 0

    def _completion(
        self,
        reply: Reply,
        data: dict[str, Any],
        text: str,
        finish_reason: str | None,
        usage_keys: tuple[str, str],
        thinking: str | None = None,
    ) -> Completion:
        usage, reported, cache_writes = self._usage(data, *usage_keys)
        return Completion(
            text=text,
            finish_reason=finish_reason,
            usage=usage,
            cost_usd=self.priced(usage, reported, cache_writes),
            latency_ms=reply.latency_ms,
            model=name_or_none(data, "model"),
            request_id=self.request_id(reply, name_or_none(data, "id")),
            thinking=thinking or None,
        )

    def _from_choices(self, reply: Reply, endpoint: Endpoint) -> Completion:
        data = reply.data
        self.raise_for_error_body(reply, "choices")
        choices = data.get("choices")
        if choices is not None and type(choices) is not list:
            raise wrong_shape("choices", "an array", choices)
        if not choices:
            raise ProviderResponseError("the response has no choices[0]")
        (choice,) = objects(choices[:1], "choices")  # only the first is read: n = 1
        finish = string_or_none(choice, "finish_reason")
        thinking = None
        if endpoint == "completions":
            text = string_at(choice, "text", "choices[0]")
            if text is None:
                raise ProviderResponseError("the response has no choices[0].text")
        else:
            message = object_at(choice, "message", "choices[0]")
            if message is None:
                raise ProviderResponseError("the response has no choices[0].message")
            # content is "string or null": null when the filter fired, when max_tokens ran out while a
            # reasoning model was still thinking, or when the answer is a refusal. The first two are answers
            # (empty ones, with the tokens they cost), not failures.
            text = _content_text(message, "choices[0].message")
            refusal = string_or_none(message, "refusal")
            if not text and refusal:
                text, finish = refusal, REFUSAL
            elif text is None:
                text = ""
            thinking = string_or_none(message, "reasoning_content") or string_or_none(message, "reasoning")
        return self._completion(reply, data, text, finish, ("prompt_tokens", "completion_tokens"), thinking)

    def _from_responses(self, reply: Reply) -> Completion:
        data = reply.data
        self.raise_for_error_body(reply, "output")
        status = string_or_none(data, "status")
        if status == "failed":
            error = object_or_none(data, "error") or {}
            code = name_or_none(error, "code")
            message = name_or_none(error, "message")
            cause: RetryCause | None = _ERROR_CAUSES.get(code) if code is not None else "server_error"
            raise ProviderResponseError(f"the response failed: {code}: {message}", retry_cause=cause)
        texts: list[str] = []
        refusals: list[str] = []
        thoughts: list[str] = []
        items = objects(data.get("output"), "output", required=True)
        # a model that speaks before answering (phase "commentary", gpt-5.3-codex and later) marks its answer
        # "final_answer": the answer is those messages alone
        final_only = any(item.get("type") == "message" and item.get("phase") == "final_answer" for item in items)
        for index, item in enumerate(items):
            kind = item.get("type")
            if kind == "message":
                if final_only and item.get("phase") != "final_answer":
                    continue
                at = f"output[{index}].content"
                for number, part in enumerate(objects(item.get("content"), at)):
                    if part.get("type") == "output_text":
                        texts.append(string_at(part, "text", f"{at}[{number}]") or "")
                    elif part.get("type") == "refusal":
                        refusals.append(string_at(part, "refusal", f"{at}[{number}]") or "")
            elif kind == "reasoning":
                # OpenAI's models send a summary (when asked: reasoning_summary); open-weight models behind the
                # same API send their reasoning itself as content parts of type reasoning_text
                for field in ("summary", "content"):
                    at = f"output[{index}].{field}"
                    for number, part in enumerate(objects(item.get(field), at)):
                        thought = string_at(part, "text", f"{at}[{number}]")
                        if thought:
                            thoughts.append(thought)
        if not texts and not refusals and status == "completed":
            raise ProviderResponseError("the response has no output_text in output[].content")
        finish: str | None
        if status == "incomplete":
            details = object_or_none(data, "incomplete_details")
            reason = None if details is None else string_or_none(details, "reason")
            finish = "length" if reason == "max_output_tokens" else (reason or "incomplete")
        else:
            finish = "stop" if status == "completed" else status
        text = "".join(texts)
        if not text and refusals:
            text, finish = "".join(refusals), REFUSAL
        return self._completion(reply, data, text, finish, ("input_tokens", "output_tokens"), "\n\n".join(thoughts))

    def _from_stream(self, reply: Reply, endpoint: Endpoint) -> Completion:
        stream = _Stream(endpoint)
        done = False
        for number, event in enumerate(sse_payloads(reply.text or ""), 1):
            if event is None:
                done = True
                break
            try:
                stream.read(event)
            except ProviderResponseError as exc:
                raise exc.with_message(f"event {number} of the stream: {exc}") from None
        finish = stream.finish
        if finish is None:
            # every answer's last choice chunk carries its finish_reason: a stream without one was cut off, and
            # its text so far is not the answer (a [DONE] after an error the server sent as text proves nothing)
            ended = "without a finish_reason" if done else "before [DONE]"
            raise ProviderResponseError(f"the event stream ended {ended}", retry_cause="connection")
        if not done and "usage" not in stream.meta:
            # the usage chunk (asked for: include_usage) comes after the finish chunk, then [DONE]: a stream that
            # ends with neither was cut after the answer, and its tokens and cost would read as none
            raise ProviderResponseError("the event stream ended before its usage and [DONE]", retry_cause="connection")
        answer = "".join(stream.text)
        if not answer and "".join(stream.refusal):
            answer, finish = "".join(stream.refusal), REFUSAL  # as the same refusal reads unstreamed
        thinking = "".join(stream.thinking)
        return self._completion(reply, stream.meta, answer, finish, ("prompt_tokens", "completion_tokens"), thinking)

    def reset_after(self, headers: Mapping[str, str]) -> float | None:
        return rate_limit_reset(headers)

    def quota_exhausted(self, status: int, body: bytes) -> bool:
        return quota_used_up(status, body)


def rate_limit_reset(headers: Mapping[str, str]) -> float | None:
    """Seconds until OpenAI's exhausted rate-limit budget resets: ``x-ratelimit-reset-requests`` /
    ``-tokens`` of the budget whose ``x-ratelimit-remaining-*`` is 0 (the longer when both are)."""
    waits = []
    for budget in ("requests", "tokens"):
        reset = headers.get(f"x-ratelimit-reset-{budget}")
        remaining = headers.get(f"x-ratelimit-remaining-{budget}")
        if reset is None or (remaining is not None and remaining.strip() not in ("0", "0.0")):
            continue
        seconds = parse_duration(reset)
        if seconds is not None:
            waits.append(seconds)
    return max(waits) if waits else None


def quota_used_up(status: int, body: bytes) -> bool:
    """Whether an OpenAI error is a 429 for a used-up quota or billing limit, which waiting does not clear."""
    return status == 429 and error_code(body) in _QUOTA_CODES


def _detail(usage: dict[str, Any], details: str, key: str) -> int | None:
    """``usage.<details>.<key>``, a token count the API may leave out (or send its ``details`` as null)."""
    found = object_or_none(usage, details)
    return None if found is None else count_or_none(found, key)


def _content_text(message: dict[str, Any], at: str) -> str | None:
    """``message.content``: a string or null as documented, or a list of content parts (some servers answer
    with the request's part form), whose text parts are joined."""
    content = message.get("content")
    if type(content) is not list:
        return string_at(message, "content", at)
    parts = objects(content, f"{at}.content")
    return "".join(string_at(part, "text", f"{at}.content[{i}]") or "" for i, part in enumerate(parts))


def _stream_error_cause(error: Any) -> RetryCause | None:
    """Why a stream's error event is worth another attempt, or None: a numeric ``code`` read as the HTTP status it
    names (a gateway's 502, a 429), else its type or code by name."""
    if not isinstance(error, dict):
        return "server_error"  # {"error": "text"}: a server's own failure, as an event of other data is
    status = status_named(error)
    if status is not None:
        return retry_cause_of_status(status, {}, TRANSIENT_4XX.get(status))
    for name in (error.get("code"), error.get("type")):
        if isinstance(name, str) and name in _ERROR_CAUSES:
            return _ERROR_CAUSES[name]
    return None


class _Stream:
    """What the events of one streamed answer have said so far (choice 0 only)."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.thinking: list[str] = []
        self.finish: str | None = None
        self.meta: dict[str, Any] = {}
        """The id, model and usage, read as a whole reply's (``_completion``)."""

    def read(self, event: Any) -> None:
        """Take in one event's JSON payload."""
        if type(event) is not dict:
            raise ProviderResponseError(f"expected an object, got {json_type_name(event)}")
        # {"error": {...}} (OpenAI, llama.cpp, vLLM), or vLLM's older flat {"object": "error", "message": ...};
        # a chunk carrying "error": null is no error
        error = event.get("error") or (event if event.get("object") == "error" else None)
        if error:
            body = orjson.dumps(event)
            raise ProviderHTTPError(
                f"error inside the event stream: {error_detail(body)}", retry_cause=_stream_error_cause(error)
            )
        meta = self.meta
        meta.setdefault("id", name_or_none(event, "id"))
        model = name_or_none(event, "model")
        if model is not None:
            meta["model"] = model
        usage = object_or_none(event, "usage")
        if usage is not None:
            meta["usage"] = usage
        for position, choice in enumerate(objects(event.get("choices"), "choices")):
            at = f"choices[{position}]"
            if count_or_none(choice, "index") not in (0, None):
                continue
            if self.endpoint == "completions":
                self.text.append(string_at(choice, "text", at) or "")
            else:
                delta = object_at(choice, "delta", at)
                if delta is not None:
                    self._read_delta(delta, f"{at}.delta")
            finish = string_or_none(choice, "finish_reason")
            if finish is not None:
                self.finish = finish

    def _read_delta(self, delta: dict[str, Any], at: str) -> None:
        self.text.append(string_at(delta, "content", at) or "")
        refusal = string_or_none(delta, "refusal")
        if refusal is not None:
            self.refusal.append(refusal)
        reasoning = string_or_none(delta, "reasoning_content") or string_or_none(delta, "reasoning")
        if reasoning:
            self.thinking.append(reasoning)


@register_provider("openai")
class OpenAIProvider(OpenAIWire):
    """OpenAI's hosted API; the key comes from ``OPENAI_API_KEY`` (environment or ``.env``)."""

    Options = OpenAIOptions
    default_base_url = "https://api.openai.com/v1"
    key_hint = "OPENAI_API_KEY"
    base_url_variable = "OPENAI_BASE_URL"

    def __init__(self, model: str, options: ProviderOptions, context: ProviderContext) -> None:
        super().__init__(model, options, context)
        if context.settings.openai_api_key is None and not context.offline:
            raise ConfigError(f"openai/{model}: no API key; set OPENAI_API_KEY in the environment or in .env")

    @property
    def openai_options(self) -> OpenAIOptions:
        options = self.options
        assert isinstance(options, OpenAIOptions)
        return options

    @property
    def endpoint(self) -> Endpoint:
        return self.openai_options.api

    @property
    def streaming(self) -> bool:
        return self.openai_options.stream and self.openai_options.api == "chat"

    @property
    def stream_asked(self) -> bool:
        return self.openai_options.stream

    def reasons(self) -> bool:
        return _REASONING_MODEL.match(self.model) is not None

    def reasoning_effort(self) -> str | None:
        return self.openai_options.reasoning_effort

    def reasoning_summary(self) -> str | None:
        return self.openai_options.reasoning_summary

    def check_generation(self, config: GenerateConfig) -> None:
        if self.reasoning_effort() == "none" and _NO_EFFORT_NONE.match(self.model):
            raise ConfigError(
                f"openai/{self.model}: the API refuses reasoning_effort none for GPT-6.2 models, which always "
                f"reason; give {self.context.options_flag} reasoning_effort=low|medium|high|xhigh|max"
            )
        if self.endpoint != "responses" and self.openai_options.reasoning_summary is not None:
            raise ConfigError(
                f"openai/{self.model}: reasoning_summary is a Responses API option; add "
                f"{self.context.options_flag} api=responses"
            )
        cap = self.output_cap(config)
        if self.endpoint == "responses" and cap is not None and cap < MIN_OUTPUT_TOKENS:
            # refused rather than raised to 16: the manifest must record what was sent
            raise ConfigError(
                f"openai/{self.model}: max_tokens is {config.max_tokens}, but the Responses API takes "
                f"max_output_tokens >= {MIN_OUTPUT_TOKENS}; raise it (--max-tokens, or the task's [generation]) "
                "or use api=chat"
            )
        if config.stop and len(config.stop) > MAX_STOP_SEQUENCES and self.sends_stop():
            raise ConfigError(
                f"openai/{self.model}: {len(config.stop)} stop sequences, but Chat Completions takes at most "
                f"{MAX_STOP_SEQUENCES} stop sequences; drop some (the task's [generation] stop)"
            )

    def configured_base_url(self) -> str | None:
        return self.context.settings.openai_base_url

    def auth_headers(self) -> dict[str, str]:
        settings = self.context.settings
        assert settings.openai_api_key is not None
        headers = {"authorization": f"Bearer {settings.openai_api_key.get_secret_value()}"}
        if settings.openai_organization:
            headers["openai-organization"] = settings.openai_organization
        if settings.openai_project:
            headers["openai-project"] = settings.openai_project
        return headers


__all__ = [
    "MAX_STOP_SEQUENCES",
    "MIN_OUTPUT_TOKENS",
    "REASONING_ROOM",
    "OpenAIOptions",
    "OpenAIProvider",
    "OpenAIWire",
    "parse_duration",
    "prompt_text",
    "quota_used_up",
    "rate_limit_reset",
]
