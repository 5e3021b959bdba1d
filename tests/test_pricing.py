"""The pricing table and cost arithmetic; expected figures are computed by hand from the listed prices."""

from __future__ import annotations

import re

import pytest
from pydantic import SecretStr

from eval_harness.config import Settings
from eval_harness.errors import ConfigError
from eval_harness.pricing import Price, lookup, price_table, resolve
from eval_harness.providers.base import ProviderContext, create_provider
from eval_harness.types import Usage


def test_the_table_names_its_date_and_prices_every_model() -> None:
    table = price_table()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", table.as_of)
    assert {"openai", "anthropic"} <= set(table.prices)
    for models in table.prices.values():
        for price in models.values():
            assert price.input > 0 and price.output > 0


def test_gpt_4o_mini_cost_matches_the_listed_prices() -> None:
    # $0.15 in, $0.075 cached in, $0.60 out per million: (1000*0.15 + 0*0.075 + 500*0.60) / 1e6
    price = lookup("openai", "gpt-4o-mini")
    assert price is not None
    assert price.cost(Usage(prompt_tokens=1000, completion_tokens=500)) == pytest.approx(0.00045)


def test_cached_input_tokens_are_billed_at_the_cached_rate() -> None:
    # gpt-4o: (800*2.50 + 200*1.25 + 500*10) / 1e6 = (2000 + 250 + 5000) / 1e6
    price = lookup("openai", "gpt-4o")
    assert price is not None
    usage = Usage(prompt_tokens=1000, completion_tokens=500, cached_tokens=200)
    assert price.cost(usage) == pytest.approx(0.00725)


def test_anthropic_cache_writes_are_billed_at_the_write_rate() -> None:
    # claude-3-5-haiku: $0.80 in, $0.08 read, $1.00 write, $4 out: (100*0.8 + 300*0.08 + 600*1.0 + 10*4) / 1e6
    price = lookup("anthropic", "claude-3-5-haiku-20241022")
    assert price is not None
    usage = Usage(prompt_tokens=1000, completion_tokens=10, cached_tokens=300)
    assert price.cost(usage, cache_write_tokens=600) == pytest.approx(0.000744)


def test_snapshot_dates_and_latest_resolve_to_the_family_price() -> None:
    assert lookup("openai", "gpt-4o-2024-08-06") == lookup("openai", "gpt-4o")
    assert lookup("anthropic", "claude-sonnet-4-20250514") == lookup("anthropic", "claude-sonnet-4")
    assert lookup("anthropic", "claude-3-5-sonnet-latest") == lookup("anthropic", "claude-3-5-sonnet")


def test_a_longer_name_is_not_priced_as_its_prefix() -> None:
    assert lookup("openai", "gpt-4o-mini") != lookup("openai", "gpt-4o")
    assert lookup("openai", "gpt-4o-audio-preview") is None


def test_unknown_models_and_providers_have_no_price() -> None:
    assert lookup("openai", "my-finetune") is None
    assert lookup("openai-compatible", "gpt-4o") is None


def test_overrides_replace_the_table_price() -> None:
    assert resolve("openai", "gpt-4o", 1.0, 2.0) == Price(input=1.0, output=2.0)
    assert resolve("openai-compatible", "llama", 0.0, 0.0) == Price(input=0.0, output=0.0)
    assert resolve("openai", "gpt-4o") == lookup("openai", "gpt-4o")


def test_provider_cost_uses_the_override_per_million_tokens() -> None:
    context = ProviderContext(settings=Settings())
    provider = create_provider(
        "openai-compatible/llama", {"base_url": "http://127.0.0.1:1/v1", "price_in": "2", "price_out": "6"}, context
    )
    # (1_000_000 * 2 + 500_000 * 6) / 1e6
    assert provider.cost(Usage(prompt_tokens=1_000_000, completion_tokens=500_000)) == pytest.approx(5.0)


def test_provider_cost_of_an_unknown_model_is_null_not_zero() -> None:
    context = ProviderContext(settings=Settings())
    provider = create_provider("openai-compatible/llama", {"base_url": "http://127.0.0.1:1/v1"}, context)
    assert provider.cost(Usage(prompt_tokens=1000, completion_tokens=10)) is None


def test_a_price_override_needs_both_directions() -> None:
    context = ProviderContext(settings=Settings())
    with pytest.raises(ConfigError, match="price_in and price_out"):
        create_provider("openai-compatible/llama", {"base_url": "http://127.0.0.1:1/v1", "price_in": "2"}, context)


def test_a_cost_is_recorded_without_float_noise() -> None:
    """30 × 0.15 + 21 × 0.60 = 17.1 USD per million tokens; divided in binary floating point it read
    0.000017100000000000002 in the record."""
    assert Price(input=0.15, output=0.6).cost(Usage(prompt_tokens=30, completion_tokens=21)) == 1.71e-05


def test_gpt_5_6_and_later_bill_cache_writes_at_their_own_rate() -> None:
    # gpt-6.2-sol's page: $2 in, $0.10 cached in, $2.50 30-minute cache write, $10 out per million;
    # 10,000 prompt tokens of which 2,000 cached and 6,000 written: (2000*2 + 2000*0.10 + 6000*2.50 + 500*10) / 1e6
    price = lookup("openai", "gpt-6.2-sol")
    assert price is not None
    usage = Usage(prompt_tokens=10_000, completion_tokens=500, cached_tokens=2_000)
    assert price.cost(usage, cache_write_tokens=6_000) == pytest.approx((4000 + 200 + 15_000 + 5000) / 1e6)


def test_a_prompt_over_272k_tokens_prices_the_whole_request_long() -> None:
    # gpt-6-luna: $0.10 in, $0.01 cached in, $0.50 out; above 272K input tokens input and cache rates double and
    # output costs 1.5 times, for the full request: (300000*0.10*2 + 1000*0.50*1.5) / 1e6; at 272,000 exactly,
    # the short rates: (272000*0.10 + 1000*0.50) / 1e6
    price = lookup("openai", "gpt-6-luna")
    assert price is not None
    assert price.cost(Usage(prompt_tokens=300_000, completion_tokens=1_000)) == pytest.approx((60_000 + 750) / 1e6)
    assert price.cost(Usage(prompt_tokens=272_000, completion_tokens=1_000)) == pytest.approx((27_200 + 500) / 1e6)
    cached = Usage(prompt_tokens=300_000, completion_tokens=0, cached_tokens=100_000)
    assert price.cost(cached) == pytest.approx((200_000 * 0.10 * 2 + 100_000 * 0.01 * 2) / 1e6)


def test_the_claude_models_after_4_5_are_priced_as_their_pages_list() -> None:
    # platform.claude.com pricing: Opus 4.6 to 5 $5 / $25 (hits $0.50, 5-minute writes $6.25), Fable 5.1 $10 / $50
    # with cache hits at $0.25, Opus 5.5 $4 / $20 (hits $0.20); 1000 in, 1000 hits, 1000 written, 100 out
    usage = Usage(prompt_tokens=3000, completion_tokens=100, cached_tokens=1000)
    expected = {
        "claude-opus-4-6": 1000 * 5 + 1000 * 0.5 + 1000 * 6.25 + 100 * 25,
        "claude-opus-5": 1000 * 5 + 1000 * 0.5 + 1000 * 6.25 + 100 * 25,
        "claude-fable-5-1": 1000 * 10 + 1000 * 0.25 + 1000 * 12.5 + 100 * 50,
        "claude-opus-5-5": 1000 * 4 + 1000 * 0.2 + 1000 * 5 + 100 * 20,
        "claude-sonnet-5": 1000 * 2 + 1000 * 0.2 + 1000 * 2.5 + 100 * 10,
    }
    for model, micro in expected.items():
        price = lookup("anthropic", model)
        assert price is not None, model
        assert price.cost(usage, cache_write_tokens=1000) == pytest.approx(micro / 1e6), model


def test_a_cache_write_price_override_needs_the_input_and_output_prices() -> None:
    assert resolve("openai", "my-model", 2.0, 10.0, 0.1, 2.5) == Price(2.0, 10.0, 0.1, 2.5)
    context = ProviderContext(settings=Settings(openai_api_key=SecretStr("sk-test")))
    with pytest.raises(ConfigError, match="price_cache_write needs price_in and price_out"):
        create_provider("openai/my-model", {"price_cache_write": "2.5"}, context)
