"""Token prices of hosted models, from the table in ``pricing.json`` or from per-run overrides.

Prices are USD per million tokens. A model that is not in the table has no price: its cost is ``None``
(unknown), never 0, so that a report cannot mistake "we do not know" for "free".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from eval_harness.errors import ConfigError
from eval_harness.types import Usage

PER_TOKENS = 1_000_000
_SNAPSHOT_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


HOUR_CACHE_WRITE = 2.0
"""An hour-long cache write costs this many times the input price (Anthropic's prompt-caching prices)."""


@dataclass(frozen=True)
class LongContext:
    """Dearer rates for the whole of a request whose prompt is long (OpenAI's GPT-5.6 and later: "For requests
    with more than 272K input tokens, input and cache rates double and output costs 1.5 times")."""

    above: int
    """Prompt tokens (cached and cache writes included) beyond which the request is priced long."""
    input_factor: float
    output_factor: float


@dataclass(frozen=True)
class Price:
    """USD per million tokens. Cached input and cache writes default to the input price."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None
    long_context: LongContext | None = None

    def cost(self, usage: Usage, cache_write_tokens: int = 0, hour_cache_write_tokens: int = 0) -> float:
        """USD for ``usage``. ``prompt_tokens`` includes cached and cache-write tokens, billed at their own rates;
        ``hour_cache_write_tokens``, the part of the cache writes kept for an hour (Anthropic), at twice the input
        price (the table's ``cache_write`` is the 5-minute price, 1.25 times)."""
        cached = usage.cached_tokens or 0
        fresh = max(usage.prompt_tokens - cached - cache_write_tokens, 0)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        write_rate = self.input if self.cache_write is None else self.cache_write
        short_writes = max(cache_write_tokens - hour_cache_write_tokens, 0)
        prompt = (
            fresh * self.input
            + cached * cached_rate
            + short_writes * write_rate
            + (cache_write_tokens - short_writes) * HOUR_CACHE_WRITE * self.input
        )
        answer = usage.completion_tokens * self.output
        long = self.long_context
        if long is not None and usage.prompt_tokens > long.above:
            prompt, answer = prompt * long.input_factor, answer * long.output_factor
        # to the picodollar: a record shows 1.71e-05, not float noise such as 1.7100000000000002e-05
        return round((prompt + answer) / PER_TOKENS, 12)


@dataclass(frozen=True)
class PriceTable:
    """The packaged table: provider -> model -> price, plus where the figures come from."""

    as_of: str
    prices: dict[str, dict[str, Price]]

    def lookup(self, provider: str, model: str) -> Price | None:
        """The price of ``model``, matching exactly or without a snapshot date / ``-latest`` suffix."""
        models = self.prices.get(provider, {})
        if model in models:
            return models[model]
        return models.get(_SNAPSHOT_SUFFIX.sub("", model))


def _price(entry: dict[str, Any], where: str) -> Price:
    try:
        long = entry.get("long_context")
        return Price(
            input=float(entry["input"]),
            output=float(entry["output"]),
            cached_input=None if entry.get("cached_input") is None else float(entry["cached_input"]),
            cache_write=None if entry.get("cache_write") is None else float(entry["cache_write"]),
            long_context=None
            if long is None
            else LongContext(int(long["above"]), float(long["input_factor"]), float(long["output_factor"])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"pricing.json: {where}: needs numeric input and output prices ({exc})") from None


@cache
def price_table() -> PriceTable:
    """The table shipped in the package (read once)."""
    raw = json.loads(files("eval_harness").joinpath("pricing.json").read_text(encoding="utf-8"))
    prices = {
        provider: {model: _price(entry, f"{provider}/{model}") for model, entry in models.items()}
        for provider, models in raw["models"].items()
    }
    return PriceTable(as_of=raw["as_of"], prices=prices)


def lookup(provider: str, model: str) -> Price | None:
    """The packaged price of ``provider/model``; None when the table does not know it."""
    return price_table().lookup(provider, model)


def resolve(
    provider: str,
    model: str,
    price_in: float | None = None,
    price_out: float | None = None,
    price_cached_in: float | None = None,
    price_cache_write: float | None = None,
) -> Price | None:
    """The price a run uses: the per-run override when given (both ``price_in`` and ``price_out``), else the table."""
    if price_in is not None and price_out is not None:
        return Price(input=price_in, output=price_out, cached_input=price_cached_in, cache_write=price_cache_write)
    return lookup(provider, model)


__all__ = ["PER_TOKENS", "LongContext", "Price", "PriceTable", "lookup", "price_table", "resolve"]
