"""``anthropic/<model>``: Anthropic's Messages API.

``POST {base}/messages`` with headers ``x-api-key`` and ``anthropic-version``; the system prompt is the
top-level ``system`` field, ``max_tokens`` is required (the task's value, else ``DEFAULT_MAX_TOKENS``), stop
sequences are ``stop_sequences``, ``temperature`` is 0 to 1. The answer is the ``text`` blocks of ``content``.

Thinking, whose ``thinking`` blocks go to ``Completion.thinking`` and never into the answer, comes in two
kinds: ``--model-arg thinking_budget=N`` sends ``{"thinking": {"type": "enabled", "budget_tokens": N}}``
(deprecated on Claude 4.6, refused by 4.7 and later), and ``--model-arg thinking=adaptive`` sends
``{"thinking": {"type": "adaptive"}}`` (4.6 and later), where the model decides how much to think;
``--model-arg effort=low|medium|high|max`` adds ``{"output_config": {"effort": ...}}``. Both kinds of thinking
refuse a temperature, so temperature and top_p are left out while thinking is on.

Usage: ``input_tokens`` (uncached), ``cache_read_input_tokens``, ``cache_creation_input_tokens``,
``output_tokens``. Errors: ``{"type": "error", "error": {"type", "message"}}``; 529 ``overloaded_error``; rate
limits send ``retry-after`` and ``anthropic-ratelimit-*-reset`` (RFC 3339); the monthly spend cap is a 429 whose
``error.details.error_code`` is ``enforced_spend_limit_reached``, which no wait within a run clears.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field

from eval_harness.errors import ConfigError, ProviderError
from eval_harness.providers._http import HTTPOptions, HTTPProvider, Reply, error_detail, error_details_code, sampling
from eval_harness.providers._shapes import (
    count_or_none,
    name_or_none,
    object_or_none,
    objects,
    string_at,
    string_or_none,
)
from eval_harness.providers.base import ProviderContext, ProviderOptions, register_provider
from eval_harness.types import Completion, GenerateConfig, GenerateRequest, Usage

API_VERSION = "2023-06-01"
_CREDIT_TOO_LOW = "Your credit balance is too low"
DEFAULT_MAX_TOKENS = 1024
MIN_THINKING_BUDGET = 1024
ADAPTIVE_THINKING_ROOM = 16_000
"""Tokens added to ``max_tokens`` for adaptive thinking, which ``max_tokens`` bounds together with the answer
(the size of Anthropic's own adaptive-thinking example request)."""
MAX_TEMPERATURE = 1.0
_RESET_BUDGETS = ("requests", "tokens", "input-tokens", "output-tokens")


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

    thinking_budget: int | None = Field(
        default=None, ge=MIN_THINKING_BUDGET, description="Extended-thinking budget in tokens (at least 1024)."
    )
    thinking: Literal["adaptive"] | None = Field(
        default=None, description="'adaptive': the model decides when and how much to think (Claude 4.6 and later)."
    )
    effort: Literal["low", "medium", "high", "max"] | None = Field(
        default=None, description="output_config.effort: how many tokens the model may spend (default: high)."
    )
    anthropic_version: str = Field(default=API_VERSION, description="The anthropic-version header.")


_ONE_SAMPLING_PARAMETER = re.compile(r"^claude-(?:opus|sonnet|haiku)-(?:4-[1-9](?!\d)|[5-9](?!\d))")
"""The Claude models that take temperature or top_p, not both (4.1, 4.5 and later)."""


@register_provider("anthropic")
class AnthropicProvider(HTTPProvider):
    """Claude models through the Messages API; the key comes from ``ANTHROPIC_API_KEY``."""

    Options = AnthropicOptions
    default_base_url = "https://api.anthropic.com/v1"
    key_hint = "ANTHROPIC_API_KEY"
    request_id_headers = ("request-id", "x-request-id")

    def __init__(self, model: str, options: ProviderOptions, context: ProviderContext) -> None:
        super().__init__(model, options, context)
        assert isinstance(options, AnthropicOptions)
        self.anthropic_options = options
        if urlsplit(self.base_url).path in ("", "/"):
            # Anthropic's own SDKs take ANTHROPIC_BASE_URL as the host alone and add /v1 themselves
            self.base_url = self.base_url.rstrip("/") + "/v1"
        if context.settings.anthropic_api_key is None and not context.offline:
            raise ConfigError(f"anthropic/{model}: no API key; set ANTHROPIC_API_KEY in the environment or in .env")
        if options.thinking is not None and options.thinking_budget is not None:
            raise ConfigError(
                f"anthropic/{model}: give --model-arg thinking=adaptive or thinking_budget=N, not both "
                "(Claude 4.6 and later take adaptive thinking; earlier models only a budget)"
            )

    @property
    def thinks(self) -> bool:
        """Whether requests turn thinking on (and so leave temperature and top_p out)."""
        options = self.anthropic_options
        return options.thinking is not None or options.thinking_budget is not None

    def configured_base_url(self) -> str | None:
        return self.context.settings.anthropic_base_url

    def check_generation(self, config: GenerateConfig) -> None:
        if self.thinks:
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
        if both and _ONE_SAMPLING_PARAMETER.match(self.model):
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
        answer_tokens = config.max_tokens if config.max_tokens is not None else DEFAULT_MAX_TOKENS
        room = ADAPTIVE_THINKING_ROOM if options.thinking == "adaptive" else (options.thinking_budget or 0)
        body: dict[str, Any] = {"model": self.model}
        # max_tokens bounds thinking and answer together, so room to think comes on top of the answer's share.
        body["max_tokens"] = answer_tokens + room
        system = [m.content for m in request.messages if m.role == "system"]
        if system:
            body["system"] = "\n\n".join(system)
        body["messages"] = [{"role": m.role, "content": m.content} for m in request.messages if m.role != "system"]
        if config.stop:
            body["stop_sequences"] = list(config.stop)
        if options.thinking == "adaptive":
            body["thinking"] = {"type": "adaptive"}
        elif options.thinking_budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": options.thinking_budget}
        if options.effort is not None:
            body["output_config"] = {"effort": options.effort}
        if not self.thinks:  # thinking accepts neither a temperature nor a top_p below 0.95: both are left out
            body.update(sampling(config))
        return body

    async def generate(self, request: GenerateRequest) -> Completion:
        reply = await self.post("/messages", self.request_body(request))
        try:
            return self._completion(reply)
        except ProviderError as exc:
            raise self.labelled(exc, self.request_id(reply)) from None

    def quota_exhausted(self, status: int, body: bytes) -> bool:
        # the monthly spend cap lifts when the month (or the cap) changes, and prepaid credits when someone buys
        # more, not by waiting; the credit case has no code of its own, only its 400's message
        if status == 429:
            return error_details_code(body) == "enforced_spend_limit_reached"
        return status == 400 and _CREDIT_TOO_LOW in error_detail(body)

    def _completion(self, reply: Reply) -> Completion:
        data = reply.data
        self.raise_for_error_body(reply, "content")
        texts: list[str] = []
        thoughts: list[str] = []
        for index, block in enumerate(objects(data.get("content"), "content", required=True)):
            kind = block.get("type")
            if kind == "text":
                texts.append(string_at(block, "text", f"content[{index}]") or "")
            elif kind == "thinking":
                thoughts.append(string_or_none(block, "thinking") or "")
            elif kind == "redacted_thinking":
                thoughts.append("[redacted thinking]")
        raw = object_or_none(data, "usage")
        cache_write = 0
        usage = Usage()
        if raw is not None:
            fresh = count_or_none(raw, "input_tokens") or 0
            cache_read = count_or_none(raw, "cache_read_input_tokens")
            cache_write = count_or_none(raw, "cache_creation_input_tokens") or 0
            usage = Usage(
                prompt_tokens=fresh + (cache_read or 0) + cache_write,
                completion_tokens=count_or_none(raw, "output_tokens") or 0,
                cached_tokens=cache_read,
            )
        return Completion(
            text="".join(texts),
            finish_reason=string_or_none(data, "stop_reason"),
            usage=usage,
            cost_usd=self.priced(usage, raw is not None, cache_write),
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


__all__ = [
    "ADAPTIVE_THINKING_ROOM",
    "API_VERSION",
    "DEFAULT_MAX_TOKENS",
    "AnthropicOptions",
    "AnthropicProvider",
    "parse_reset_time",
]
