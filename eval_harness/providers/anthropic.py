"""``anthropic/<model>``: Anthropic's Messages API.

``POST {base}/messages`` with headers ``x-api-key`` and ``anthropic-version``; the system prompt is the
top-level ``system`` field, ``max_tokens`` is required (the task's value, else ``DEFAULT_MAX_TOKENS``), stop
sequences are ``stop_sequences``, ``temperature`` is 0 to 1. The answer is the ``text`` blocks of ``content``.

Thinking, whose ``thinking`` blocks go to ``Completion.thinking`` and never into the answer, comes in two
kinds: ``--model-arg thinking_budget=N`` sends ``{"thinking": {"type": "enabled", "budget_tokens": N}}``
(deprecated on Claude 4.6, refused by 4.7 and later), and ``--model-arg thinking=adaptive`` sends
``{"thinking": {"type": "adaptive", "display": "summarized"}}`` (4.6 and later), where the model decides how much
to think (4.7 and later omit the thinking text unless ``display`` asks for it);
``--model-arg effort=low|medium|high|xhigh|max`` adds ``{"output_config": {"effort": ...}}``. Claude 5 and
later, Fable and Mythos think unasked (Opus 5.5 and later, Sonnet 5.5 and later, Fable and Mythos cannot be
stopped), and ``max_tokens`` bounds thinking and answer together, so they are sent adaptive thinking as if
asked, with its room on top of the answer's share; ``--model-arg thinking=disabled`` turns it off where the
model allows. Both kinds of thinking refuse a temperature, so temperature and top_p are left out while thinking
is on, and always for Claude 4.7 and later, Fable and Mythos, which refuse them (a note at the run's start says
so).

Usage: ``input_tokens`` (uncached), ``cache_read_input_tokens``, ``cache_creation_input_tokens``,
``output_tokens``. ``--model-arg stream=true`` asks for the answer as server-sent events (``"stream": true``):
the connection then carries events (pings among them) while a long answer or long thinking is written,
where an unstreamed request sits silent for minutes, which some networks end. The events are put back
together into the Message an unstreamed request returns (``message_from_stream``) and read as one.

Errors: ``{"type": "error", "error": {"type", "message"}}`` (as an ``error`` event inside a stream); 529
``overloaded_error``; rate limits send ``retry-after`` and ``anthropic-ratelimit-*-reset`` (RFC 3339); the monthly
spend cap is a 429 whose ``error.details.error_code`` is ``enforced_spend_limit_reached``, which no wait within a
run clears.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Literal
from urllib.parse import urlsplit

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
    HTTPOptions,
    HTTPProvider,
    Reply,
    cut_at_stop,
    error_detail,
    error_details_code,
    event_json,
    sampling,
    sse_events,
)
from eval_harness.providers._shapes import (
    count_or_none,
    name_or_none,
    object_at,
    object_or_none,
    objects,
    string_at,
    string_or_none,
)
from eval_harness.providers._wires import join_url
from eval_harness.providers.base import ProviderContext, ProviderOptions, register_provider
from eval_harness.types import Completion, GenerateConfig, GenerateRequest, Usage

API_VERSION = "2023-06-01"
_QUOTA_400S = ("Your credit balance is too low", "You have reached your specified API usage limits")
"""The messages of the 400s that say the account can spend no more (prepaid credits used up; the organisation's
own usage limit reached, until the date the message gives): they have no error type or code of their own."""
DEFAULT_MAX_TOKENS = 1024
MIN_THINKING_BUDGET = 1024
ADAPTIVE_THINKING_ROOM = 16_000
"""Tokens added to ``max_tokens`` for adaptive thinking, which ``max_tokens`` bounds together with the answer
(the size of Anthropic's own adaptive-thinking example request)."""
MAX_TEMPERATURE = 1.0
_RESET_BUDGETS = ("requests", "tokens", "input-tokens", "output-tokens")


def _thinking_tokens(usage: dict[str, Any]) -> int | None:
    """``usage.output_tokens_details.thinking_tokens``: the part of ``output_tokens`` spent thinking."""
    details = object_or_none(usage, "output_tokens_details")
    return None if details is None else count_or_none(details, "thinking_tokens")


def _hour_cache_writes(usage: dict[str, Any]) -> int:
    """``usage.cache_creation.ephemeral_1h_input_tokens``: the cache writes kept for an hour, priced apart."""
    details = object_or_none(usage, "cache_creation")
    return (count_or_none(details, "ephemeral_1h_input_tokens") or 0) if details is not None else 0


def parse_reset_time(value: str, now: float) -> float | None:
    """Seconds from ``now`` (epoch seconds) until an RFC 3339 time such as ``2025-01-01T00:00:30Z``."""
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(when.timestamp() - now, 0.0)


class AnthropicOptions(HTTPOptions):
    """Options of ``anthropic/<model>``."""

    transport_only: ClassVar[frozenset[str]] = HTTPOptions.transport_only | {"stream"}

    thinking_budget: int | None = Field(
        default=None, ge=MIN_THINKING_BUDGET, description="Extended-thinking budget in tokens (at least 1024)."
    )
    thinking: Literal["adaptive", "disabled"] | None = Field(
        default=None,
        description="'adaptive': the model decides when and how much to think (Claude 4.6 and later; the default "
        "of Claude 5 and later, Fable and Mythos); 'disabled': no thinking, for a model that thinks by default "
        "and allows it (Claude Opus 5 and Haiku 5.5 at effort high or below, Sonnet 5).",
    )
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = Field(
        default=None, description="output_config.effort: how many tokens the model may spend (default: high)."
    )
    anthropic_version: str = Field(default=API_VERSION, description="The anthropic-version header.")
    stream: bool = Field(
        default=False,
        description="Receive the answer as server-sent events: the connection is never silent while a long answer "
        "or long thinking is written (the API recommends it for long requests).",
    )


_CLAUDE_VERSION = re.compile(r"^claude-[a-z]+-(\d{1,2})(?:-(\d)(?!\d))?(?![\d.])")
"""``claude-opus-4-7`` → 4.7, ``claude-sonnet-4-5-20250929`` → 4.5, ``claude-opus-4-20250514`` → 4.0,
``claude-fable-5-1`` → 5.1 (the ``claude-{name}-{major}[-{minor}]`` scheme); the older ``claude-3-5-sonnet``
naming and models of other names behind the same API give no version."""
_CLAUDE_FAMILY = re.compile(r"^claude-([a-z]+)(?![a-z])")
_CLAUDE_3 = re.compile(r"^claude-(\d)(?:-(\d)(?!\d))?-([a-z]+)(?![a-z])")
"""The naming before Claude 4: ``claude-3-7-sonnet-20250219`` → Sonnet 3.7, ``claude-3-opus-latest`` → Opus 3.0."""


def claude_version(model: str) -> tuple[int, int] | None:
    """The Claude model's (major, minor) version from its name; None when the name does not say."""
    found = _CLAUDE_VERSION.match(model)
    return None if found is None else (int(found.group(1)), int(found.group(2) or 0))


ONE_SAMPLING_PARAMETER = (4, 1)
"""From Claude 4.1 on, a request takes temperature or top_p, not both ("Use only temperature OR top_p, not both
... This will error in Sonnet 4.5", Anthropic's migration guide to Claude 4)."""
NO_SAMPLING_PARAMETERS = (4, 7)
"""From Claude 4.7 on, temperature, top_p and top_k are refused with a 400 ("`temperature` is deprecated for this
model"), and so is a thinking budget (adaptive thinking only), whose thinking text is omitted unless asked for."""
THINKS_BY_DEFAULT = (5, 0)
"""From Claude 5 on, a request without a ``thinking`` field thinks ("Thinking on by default", the migration guide
to Claude Opus 5), into the same ``max_tokens`` as the answer."""
ALWAYS_THINKS = {"opus": (5, 5), "sonnet": (5, 5)}
"""From these versions on thinking cannot be turned off: Opus 5.5 answers ``{"type": "disabled"}`` with a 400
(what's new in Claude Opus 5.5), Sonnet 5.5 too (what's new in Claude Sonnet 5.5)."""
THINKING_FAMILIES = frozenset({"fable", "mythos"})
"""Models named after neither Opus, Sonnet nor Haiku, released after Claude 5: they think always (adaptive only;
``disabled`` and a budget are refused, the migration guide to Claude Fable 5) and refuse sampling parameters."""
ADAPTIVE_SINCE = (4, 6)
"""Adaptive thinking: Claude 4.6 and later (Opus 4.5, Sonnet 4.5 and Haiku 4.5 refuse it with a 400, the
extended-thinking troubleshooting table)."""
EFFORT_SINCE = {"opus": (4, 5), "sonnet": (4, 6), "haiku": (4, 6)}
"""``output_config.effort``: Opus 4.5 and later, Sonnet and Haiku 4.6 and later (Sonnet 4.5 and Haiku 4.5: "Default
effort: Not supported", their overview pages)."""
XHIGH_SINCE = (4, 7)
"""Effort ``xhigh``: Claude 4.7 and later (not Opus 4.5, Opus 4.6 or Sonnet 4.6: the effort page)."""
MAX_EFFORT_SINCE = (4, 6)
"""Effort ``max``: Claude 4.6 and later (Opus 4.5 takes low, medium and high: the effort page)."""
THINKING_SINCE = (3, 7)
"""Extended thinking (a budget): Claude 3.7 and later."""
UNTHINKING_EFFORTS = frozenset({"xhigh", "max"})
DISABLED_ONLY_TO_HIGH = {"opus": (5, 0), "haiku": (5, 5)}
"""From these versions on, thinking disabled is refused at effort xhigh or max ("accepts disabled at effort high or
below": what's new in Claude Opus 5, and in Claude Haiku 5.5)."""
MAX_OUTPUT_TOKENS = 128_000
"""The most a Claude model that thinks by default may write (128K max output: Claude 5 and later, Fable and
Mythos), which the room to think must not push ``max_tokens`` past."""


@dataclass(frozen=True)
class ClaudeRules:
    """What a Claude model's name says about the requests it takes (its family and version)."""

    version: tuple[int, int] | None
    family: str | None

    @classmethod
    def of(cls, model: str) -> ClaudeRules:
        older = _CLAUDE_3.match(model)
        if older is not None:
            return cls((int(older.group(1)), int(older.group(2) or 0)), older.group(3))
        found = _CLAUDE_FAMILY.match(model)
        return cls(claude_version(model), None if found is None else found.group(1))

    @property
    def takes_no_sampling(self) -> bool:
        """Whether temperature and top_p are refused whatever their value."""
        return self.family in THINKING_FAMILIES or self.refuses_budget

    @property
    def refuses_budget(self) -> bool:
        """Whether a thinking budget is refused (adaptive thinking only): Claude 4.7 and later, and Fable
        (Claude Mythos Preview, of no version, takes one)."""
        return self.family == "fable" or (self.version is not None and self.version >= NO_SAMPLING_PARAMETERS)

    def refusal(self, thinking: str | None, effort: str | None, flag: str, budget: bool = False) -> str | None:
        """Why the model refuses this thinking type or effort, from its family and version (None: it takes
        them, or its name does not say)."""
        family, version = self.family, self.version
        if family in THINKING_FAMILIES or family is None or version is None:
            return None
        if (thinking == "adaptive" or budget) and version < THINKING_SINCE:
            return "this model does not think (thinking is Claude 3.7 and later)"
        if thinking == "adaptive" and version < ADAPTIVE_SINCE:
            return f"adaptive thinking is Claude 4.6 and later; earlier models think with {flag} thinking_budget=N"
        since = EFFORT_SINCE.get(family)
        if effort is not None and since is not None and version < since:
            return f"the API takes an effort from Claude Opus 4.5 and Claude 4.6 on, not this model; drop {flag} effort"
        if effort == "max" and version < MAX_EFFORT_SINCE:
            return f"effort max is Claude 4.6 and later; give {flag} effort=low|medium|high"
        if effort == "xhigh" and version < XHIGH_SINCE:
            takes = "low|medium|high|max" if version >= MAX_EFFORT_SINCE else "low|medium|high"
            return f"effort xhigh is Claude 4.7 and later; give {flag} effort={takes}"
        return None

    def _since(self, versions: Mapping[str, tuple[int, int]]) -> bool:
        """Whether the model's version is at least the one ``versions`` gives its family (False: none given, or
        its name says no version)."""
        since = versions.get(self.family or "")
        return since is not None and self.version is not None and self.version >= since

    @property
    def disabled_only_to_high(self) -> bool:
        """Whether thinking disabled is refused at effort xhigh or max."""
        return self._since(DISABLED_ONLY_TO_HIGH)

    @property
    def thinks_by_default(self) -> bool:
        """Whether a request without a ``thinking`` field thinks."""
        return self.family in THINKING_FAMILIES or (self.version is not None and self.version >= THINKS_BY_DEFAULT)

    @property
    def always_thinks(self) -> bool:
        """Whether thinking cannot be turned off (``{"type": "disabled"}`` is a 400)."""
        return self.family in THINKING_FAMILIES or self._since(ALWAYS_THINKS)


@register_provider("anthropic")
class AnthropicProvider(HTTPProvider):
    """Claude models through the Messages API; the key comes from ``ANTHROPIC_API_KEY``."""

    Options = AnthropicOptions
    default_base_url = "https://api.anthropic.com/v1"
    key_hint = "ANTHROPIC_API_KEY"
    base_url_variable = "ANTHROPIC_BASE_URL"
    request_id_headers = ("request-id", "x-request-id")

    def __init__(self, model: str, options: ProviderOptions, context: ProviderContext) -> None:
        super().__init__(model, options, context)
        assert isinstance(options, AnthropicOptions)
        self.anthropic_options = options
        self.rules = ClaudeRules.of(model)  # read from the name once, not on every request body
        if urlsplit(self.base_url).path in ("", "/"):
            # Anthropic's own SDKs take ANTHROPIC_BASE_URL as the host alone and add /v1 themselves
            self.base_url = join_url(self.base_url, "/v1")
        if context.settings.anthropic_api_key is None and not context.offline:
            raise ConfigError(f"anthropic/{model}: no API key; set ANTHROPIC_API_KEY in the environment or in .env")
        flag = context.options_flag
        if options.thinking is not None and options.thinking_budget is not None:
            raise ConfigError(
                f"anthropic/{model}: give {flag} thinking={options.thinking} or thinking_budget=N, not both "
                "(Claude 4.6 and later take adaptive thinking; earlier models only a budget)"
            )
        if options.thinking_budget is not None and self.rules.refuses_budget:
            raise ConfigError(
                f"anthropic/{model}: Claude 4.7 and later (Fable and Mythos 5 too) refuse a thinking budget; use "
                f"{flag} thinking=adaptive (and effort=... for how much it may spend)"
            )
        refused = self.rules.refusal(options.thinking, options.effort, flag, options.thinking_budget is not None)
        if refused is not None:
            raise ConfigError(f"anthropic/{model}: {refused}")
        if options.thinking == "disabled":
            if self.rules.always_thinks:
                raise ConfigError(
                    f"anthropic/{model} always thinks: the API refuses thinking disabled (Claude Opus 5.5 and "
                    f"later, Sonnet 5.5 and later, Fable, Mythos); set how much it may think with {flag} "
                    "effort=low|medium|high|xhigh|max instead"
                )
            if options.effort in UNTHINKING_EFFORTS and self.rules.disabled_only_to_high:
                raise ConfigError(
                    f"anthropic/{model}: the API takes thinking disabled at effort high or below, not "
                    f"{options.effort}; lower the effort or drop {flag} thinking=disabled"
                )

    @property
    def version(self) -> tuple[int, int] | None:
        """The model's (major, minor) version from its name; None when the name does not say."""
        return self.rules.version

    @property
    def takes_no_sampling(self) -> bool:
        """Whether the model refuses temperature and top_p whatever their value (Claude 4.7 and later, Fable,
        Mythos)."""
        return self.rules.takes_no_sampling

    @property
    def thinking(self) -> Literal["adaptive", "disabled"] | None:
        """The thinking sent: as asked, else adaptive for a model that thinks unasked (asking for it is the same,
        and gets the thinking text, which these models omit by default, and room for it in ``max_tokens``)."""
        asked = self.anthropic_options.thinking
        if asked is None and self.anthropic_options.thinking_budget is None and self.rules.thinks_by_default:
            return "adaptive"
        return asked

    @property
    def thinks(self) -> bool:
        """Whether requests think (and so leave temperature and top_p out)."""
        return self.thinking == "adaptive" or self.anthropic_options.thinking_budget is not None

    @property
    def thinking_room(self) -> int:
        """Tokens added to ``max_tokens`` for thinking, which ``max_tokens`` bounds together with the answer."""
        if self.thinking == "adaptive":
            return ADAPTIVE_THINKING_ROOM
        return self.anthropic_options.thinking_budget or 0

    def configured_base_url(self) -> str | None:
        return self.context.settings.anthropic_base_url

    @property
    def sends_sampling(self) -> bool:
        """Whether temperature and top_p go in the body: not while thinking (which refuses a temperature, and a
        top_p below 0.95), nor to a model that refuses them."""
        return not self.thinks and not self.takes_no_sampling

    def generation_notes(self, config: GenerateConfig) -> list[str]:
        notes = []
        if self.anthropic_options.thinking is None and self.thinking == "adaptive":
            off = (
                "it cannot be turned off"
                if self.rules.always_thinks
                else f"{self.context.options_flag} thinking=disabled turns it off"
            )
            answer = self.answer_tokens(config)
            room = self.output_cap(config) - answer
            share = (
                f"the answer's {answer:,} plus {room:,} to think in"
                if room
                else f"no room added: the answer's {answer:,} is as much as it may write, thinking included"
            )
            notes.append(
                f"note: anthropic/{self.model} thinks by default: sent adaptive thinking with max_tokens "
                f"{answer + room:,} ({share}); {off}"
            )
        unsent = [f"{name} {value:g}" for name, value in sampling(config).items()]
        if not unsent or self.sends_sampling:
            return notes
        why = (
            "takes no temperature or top_p"
            if self.takes_no_sampling
            else "takes no temperature or top_p while thinking"
        )
        return [*notes, f"note: anthropic/{self.model} {why}: {' and '.join(unsent)} not sent"]

    @staticmethod
    def answer_tokens(config: GenerateConfig) -> int:
        """The answer's share of ``max_tokens``: the task's, else the default the Messages API requires."""
        return config.max_tokens if config.max_tokens is not None else DEFAULT_MAX_TOKENS

    def output_cap(self, config: GenerateConfig) -> int:
        answer, room = self.answer_tokens(config), self.thinking_room
        if self.thinking == "adaptive" and self.rules.thinks_by_default:
            # the room, not the task's own limit, must not push max_tokens past what the model may write
            return max(answer, min(answer + room, MAX_OUTPUT_TOKENS))
        return answer + room

    def check_generation(self, config: GenerateConfig) -> None:
        if not self.sends_sampling:
            return  # neither temperature nor top_p is sent
        if config.temperature is not None and config.temperature > MAX_TEMPERATURE:
            raise ConfigError(
                f"anthropic/{self.model}: temperature {config.temperature:g}, but the Messages API takes a "
                f"temperature from 0 to 1 (--temperature, or the task's [generation])"
            )
        # "Use only temperature OR top_p, not both ... This will error in Sonnet 4.5" (Anthropic's migration
        # guide to Claude 4): Claude 4.1 and later; older Claude models, and other models behind the same API,
        # are sent both as given
        both = config.temperature is not None and config.top_p is not None
        if both and self.version is not None and self.version >= ONE_SAMPLING_PARAMETER:
            raise ConfigError(
                f"anthropic/{self.model}: the Messages API takes temperature or top_p, not both; drop one "
                "(--temperature, or the task's [generation])"
            )

    def auth_headers(self) -> dict[str, str]:
        key = self.context.settings.anthropic_api_key
        assert key is not None
        return {"x-api-key": key.get_secret_value(), "anthropic-version": self.anthropic_options.anthropic_version}

    def request_body(self, request: GenerateRequest) -> dict[str, Any]:
        config = request.config
        options = self.anthropic_options
        body: dict[str, Any] = {"model": self.model}
        # max_tokens bounds thinking and answer together, so room to think comes on top of the answer's share.
        body["max_tokens"] = self.output_cap(config)
        system = [m.content for m in request.messages if m.role == "system"]
        if system:
            body["system"] = "\n\n".join(system)
        body["messages"] = [{"role": m.role, "content": m.content} for m in request.messages if m.role != "system"]
        sent_stops = [stop for stop in config.stop or [] if stop.strip()]
        if sent_stops:
            body["stop_sequences"] = sent_stops
        thinking = self.thinking
        if thinking == "adaptive":
            # Claude 4.7 and later omit the thinking text unless asked ("display" defaults to "omitted" there);
            # a run records it, apart from the answer
            body["thinking"] = {"type": "adaptive", "display": "summarized"}
        elif thinking == "disabled":
            body["thinking"] = {"type": "disabled"}
        elif options.thinking_budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": options.thinking_budget}
        if options.effort is not None:
            body["output_config"] = {"effort": options.effort}
        if self.sends_sampling:
            body.update(sampling(config))
        if options.stream:
            body["stream"] = True
        return body

    def stop_applied_after(self, request: GenerateRequest) -> list[str] | None:
        # "each stop sequence must contain non-whitespace" (a 400): "\n", the usual stop after a few-shot answer,
        # is cut at here instead
        blank = [stop for stop in request.config.stop or [] if not stop.strip()]
        return blank or None

    async def generate(self, request: GenerateRequest) -> Completion:
        reply = await self.post("/messages", self.request_body(request), raw_text=self.anthropic_options.stream)
        try:
            completion = self._completion(reply, reply.data if reply.text is None else message_from_stream(reply.text))
        except ProviderError as exc:
            raise self.labelled(exc, self.request_id(reply)) from None
        return cut_at_stop(completion, self.stop_applied_after(request), "stop_sequence")

    def quota_exhausted(self, status: int, body: bytes) -> bool:
        # the monthly spend cap lifts when the month (or the cap) changes, and prepaid credits when someone buys
        # more, not by waiting; the credit and usage-limit cases have no code of their own, only their 400's message
        if status == 429:
            return error_details_code(body) == "enforced_spend_limit_reached"
        # 402 billing_error: "an issue with your billing or payment information" (the API's errors page)
        return status == 402 or (status == 400 and any(said in error_detail(body) for said in _QUOTA_400S))

    def error_type_cause(self, error: object) -> RetryCause | None:
        # a gateway's 200 carrying {"type": "error", "error": {"type": "overloaded_error"}} is retried as the same
        # error inside a stream is
        return _STREAM_ERROR_CAUSES.get(str(error.get("type"))) if isinstance(error, dict) else None

    def _completion(self, reply: Reply, data: dict[str, Any]) -> Completion:
        """The Completion of a Message: the body of an unstreamed reply, or the one a stream put together."""
        if reply.text is None:
            self.raise_for_error_body(reply, "content")
        texts: list[str] = []
        thoughts: list[str] = []
        for index, block in enumerate(objects(data.get("content"), "content", required=True)):
            kind = block.get("type")
            if kind == "text":
                texts.append(string_at(block, "text", f"content[{index}]") or "")
            elif kind == "thinking":
                thought = string_or_none(block, "thinking")
                if thought:  # an omitted thinking text is "" (only its signature is sent)
                    thoughts.append(thought)
            elif kind == "redacted_thinking":
                thoughts.append("[redacted thinking]")
        raw = object_or_none(data, "usage")
        cache_write = hour_cache_write = 0
        usage = Usage()
        counted = False
        if raw is not None:
            fresh = count_or_none(raw, "input_tokens")
            output = count_or_none(raw, "output_tokens")
            # a count not given is unknown, not 0: "usage": {} or a stream's message_delta without output_tokens
            # (its message_start's is a placeholder) prices nothing rather than the input alone
            counted = fresh is not None and output is not None
            cache_read = count_or_none(raw, "cache_read_input_tokens")
            cache_write = count_or_none(raw, "cache_creation_input_tokens") or 0
            hour_cache_write = _hour_cache_writes(raw)
            usage = Usage(
                prompt_tokens=(fresh or 0) + (cache_read or 0) + cache_write,
                completion_tokens=output or 0,
                cached_tokens=cache_read,
                reasoning_tokens=_thinking_tokens(raw),
            )
        return Completion(
            text="".join(texts),
            finish_reason=string_or_none(data, "stop_reason"),
            usage=usage,
            cost_usd=self.priced(usage, counted, cache_write, hour_cache_write),
            latency_ms=reply.latency_ms,
            model=name_or_none(data, "model"),
            request_id=self.request_id(reply, name_or_none(data, "id")),
            thinking="\n\n".join(thoughts) or None,
        )

    def reset_after(self, headers: Mapping[str, str]) -> float | None:
        import time

        now = time.time()
        waits = []
        for budget in _RESET_BUDGETS:
            reset = headers.get(f"anthropic-ratelimit-{budget}-reset")
            remaining = headers.get(f"anthropic-ratelimit-{budget}-remaining")
            if reset is None or (remaining is not None and remaining.strip() != "0"):
                continue
            seconds = parse_reset_time(reset, now)
            if seconds is not None:
                waits.append(seconds)
        return max(waits) if waits else None


_STREAM_ERROR_CAUSES: dict[str, RetryCause] = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "api_error": "server_error",
    "timeout_error": "server_error",  # as its HTTP 504 is
}
"""The errors a stream can end with that another attempt may clear ("during periods of high usage, you may
receive an overloaded_error, which would normally correspond to an HTTP 529 in a non-streaming context"). The
spend cap and billing errors, which stop a run, come as HTTP statuses before a stream starts, not inside one."""
_BLOCK_TEXT = {"text_delta": ("text", "text"), "thinking_delta": ("thinking", "thinking")}
"""A delta's type: (the field of the delta that holds its text, the field of the block it adds to)."""


class _StreamedMessage:
    """A Message as its events build it: ``message_start``'s message, each content block's start and deltas
    (their texts kept as parts, joined once at the end: a long answer is tens of thousands of deltas),
    ``message_delta``'s stop reason and usage (cumulative counts: each replaces the last) and ``message_stop``."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self.blocks: dict[int, dict[str, Any]] = {}
        self.parts: dict[int, dict[str, list[str]]] = {}
        self.stopped = False
        self.output_counted = False
        """Whether a message_delta gave the output count: message_start's is a placeholder (1 to 3)."""

    def read(self, name: str, event: Any) -> None:
        """Take in one event: its SSE name, and its payload, whose ``type`` names it too (a server that sends the
        name alone has it read from there, as Anthropic's SDKs do)."""
        if type(event) is not dict:
            raise ProviderResponseError(f"expected an object, got {json_type_name(event)}")
        kind = event.get("type", name)
        if kind == "error" or name == "error":
            error = object_or_none(event, "error") or {}
            detail = f"{error.get('type')}: {error.get('message')}" if error else orjson.dumps(event).decode()
            # an error object of a kind not retried (a refused request) fails the sample; one without its object
            # (an "event: error" of other data) is a server's failure, which another attempt may not meet
            cause: RetryCause | None = _STREAM_ERROR_CAUSES.get(str(error.get("type"))) if error else "server_error"
            raise ProviderHTTPError(f"error inside the event stream: {detail}", retry_cause=cause)
        if kind == "message_start":
            message = object_at(event, "message", "message_start")
            if message is None:
                raise ProviderResponseError("message_start without its message")
            self.message = {**message, "content": []}
            return
        if kind not in ("content_block_start", "content_block_delta", "message_delta", "message_stop"):
            return  # ping, content_block_stop, and event types added later (the API's versioning policy)
        if self.message is None:
            raise ProviderResponseError(f"{kind} before message_start")
        if kind == "content_block_start":
            index = self._index(event, kind)
            block = object_at(event, "content_block", kind)
            if block is None:
                raise ProviderResponseError("content_block_start without its content_block")
            self.blocks[index] = dict(block)
            self.parts[index] = {}
        elif kind == "content_block_delta":
            self._add_delta(event)
        elif kind == "message_delta":
            delta = object_or_none(event, "delta") or {}
            for field in ("stop_reason", "stop_sequence"):
                if field in delta:
                    self.message[field] = delta[field]
            usage = object_or_none(event, "usage")
            if usage is not None:
                # cumulative counts, each replacing the last; a null one (servers that speak this wire send the
                # input and cache counts as null) keeps the count message_start gave, as the SDKs do
                counted = {key: value for key, value in usage.items() if value is not None}
                self.message["usage"] = {**(object_or_none(self.message, "usage") or {}), **counted}
                self.output_counted = self.output_counted or "output_tokens" in counted
        else:
            self.stopped = True

    def _index(self, event: dict[str, Any], kind: str) -> int:
        index = count_or_none(event, "index")
        if index is None:
            raise ProviderResponseError(f"{kind} without a block index")
        return index

    def _add_delta(self, event: dict[str, Any]) -> None:
        index = self._index(event, "content_block_delta")
        if index not in self.blocks:
            raise ProviderResponseError(f"a delta of content block {index}, which never started")
        delta = object_at(event, "delta", "content_block_delta")
        fields = _BLOCK_TEXT.get(str(delta.get("type"))) if delta is not None else None
        if delta is None or fields is None:
            return  # signature_delta, citations_delta, input_json_delta: nothing the answer or thinking holds
        source, target = fields
        piece = string_at(delta, source, "delta")
        if piece:
            self.parts[index].setdefault(target, []).append(piece)

    def assembled(self) -> dict[str, Any]:
        if self.message is None or not self.stopped:
            # a stream cut off is no answer, whatever text it carried so far
            ended = "before message_start" if self.message is None else "before message_stop"
            raise ProviderResponseError(f"the event stream ended {ended}", retry_cause="connection")
        content = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            for field, parts in self.parts[index].items():
                block[field] = str(block.get(field) or "") + "".join(parts)
            content.append(block)
        message = {**self.message, "content": content}
        usage = object_or_none(message, "usage")
        if usage is not None and not self.output_counted:
            message["usage"] = {key: value for key, value in usage.items() if key != "output_tokens"}
        return message


def message_from_stream(text: str) -> dict[str, Any]:
    """The Message the events of a streamed reply describe, as an unstreamed reply would have sent it."""
    message = _StreamedMessage()
    for number, event in enumerate(sse_events(text), 1):
        data = event.data.strip()
        try:
            if event.name == "error" and not data.startswith("{"):
                # a proxy's own words ("upstream connect error ..."): an error all the same, perhaps passing
                raise ProviderHTTPError(f"error inside the event stream: {data[:4000]!r}", retry_cause="server_error")
            payload = event_json(data, ended=event.ended) if data else None
            if payload is not None:  # a blank or null event carries nothing
                message.read(event.name, payload)
        except ProviderError as exc:
            raise exc.with_message(f"event {number} of the stream: {exc}") from None
    return message.assembled()


__all__ = [
    "ADAPTIVE_THINKING_ROOM",
    "API_VERSION",
    "DEFAULT_MAX_TOKENS",
    "NO_SAMPLING_PARAMETERS",
    "ONE_SAMPLING_PARAMETER",
    "AnthropicOptions",
    "AnthropicProvider",
    "ClaudeRules",
    "claude_version",
    "message_from_stream",
    "parse_reset_time",
]
