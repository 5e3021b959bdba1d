"""The mock provider: deterministic per (seed, model, sample, epoch), per-axis skill, chatter, errors, cost."""

from __future__ import annotations

import asyncio

import pytest

from eval_harness.errors import ConfigError, ProviderError
from eval_harness.providers.base import ProviderContext, create_provider
from eval_harness.providers.mock import MockOptions
from eval_harness.types import ChatMessage, GenerateRequest, Sample


def request(sample: Sample, epoch: int = 0, seed: int = 0) -> GenerateRequest:
    return GenerateRequest(messages=[ChatMessage(role="user", content="x" * 40)], sample=sample, epoch=epoch, seed=seed)


def answers(args: dict[str, str], samples: list[Sample], name: str = "m", seed: int = 0) -> list[str]:
    provider = create_provider(f"mock/{name}", args, ProviderContext())

    async def all_answers() -> list[str]:
        return [(await provider.generate(request(s, seed=seed))).text for s in samples]

    return asyncio.run(all_answers())


SAMPLES = [Sample(id=f"s{i}", input="q", target=str(100 + i), axis="a" if i % 2 else "b") for i in range(400)]


def test_same_identity_gives_the_same_answer_in_any_order() -> None:
    forward = answers({"skill": "0.5"}, SAMPLES)
    backward = answers({"skill": "0.5"}, list(reversed(SAMPLES)))
    assert forward == list(reversed(backward))


def test_answers_depend_on_seed_and_model_name() -> None:
    base = answers({"skill": "0.5"}, SAMPLES)
    assert base != answers({"skill": "0.5"}, SAMPLES, seed=1)
    assert base != answers({"skill": "0.5"}, SAMPLES, name="other")


def test_per_axis_skill_sets_the_share_of_right_answers() -> None:
    got = answers({"skill": "0.1", "skill.a": "0.9"}, SAMPLES)
    right_a = sum(g == s.target for g, s in zip(got, SAMPLES, strict=True) if s.axis == "a")
    right_b = sum(g == s.target for g, s in zip(got, SAMPLES, strict=True) if s.axis == "b")
    assert 160 <= right_a <= 195  # 200 draws at p = 0.9
    assert 8 <= right_b <= 35  # 200 draws at p = 0.1


def test_wrong_numeric_answers_are_other_numbers() -> None:
    got = answers({"skill": "0"}, SAMPLES[:50])
    assert all(g != s.target and g.lstrip("-").isdigit() for g, s in zip(got, SAMPLES, strict=False))


def test_wrong_choice_answers_are_other_letters() -> None:
    samples = [Sample(id=f"c{i}", input="q", target="B", choices=["w", "x", "y", "z"]) for i in range(30)]
    assert set(answers({"skill": "0"}, samples)) <= {"A", "C", "D"}


def test_format_ok_below_one_wraps_answers_in_chatter() -> None:
    got = answers({"skill": "1", "format_ok": "0"}, SAMPLES[:20])
    assert all(g != s.targets[0] and s.targets[0] in g for g, s in zip(got, SAMPLES, strict=False))


def test_error_rate_raises_provider_errors_deterministically() -> None:
    provider = create_provider("mock/m", {"error_rate": "0.3"}, ProviderContext())

    async def outcomes() -> list[bool]:
        failed = []
        for sample in SAMPLES:
            try:
                await provider.generate(request(sample))
                failed.append(False)
            except ProviderError as exc:
                assert exc.retry_cause is None
                failed.append(True)
        return failed

    first, second = asyncio.run(outcomes()), asyncio.run(outcomes())
    assert first == second
    assert 90 <= sum(first) <= 150


def test_usage_and_cost_are_reported_like_a_real_provider() -> None:
    provider = create_provider("mock/m", {"cost_per_1k_tokens": "2.0"}, ProviderContext())
    completion = asyncio.run(provider.generate(request(SAMPLES[0])))
    assert completion.usage.prompt_tokens == 14  # 40 characters / 4 + 4 per message
    assert completion.usage.completion_tokens >= 1
    total = completion.usage.prompt_tokens + completion.usage.completion_tokens
    assert completion.cost_usd == pytest.approx(2.0 * total / 1000)
    assert completion.model == "mock/m"


async def test_latency_is_simulated() -> None:
    provider = create_provider("mock/m", {"latency_ms": "30"}, ProviderContext())
    call = asyncio.ensure_future(provider.generate(request(SAMPLES[0])))
    await asyncio.sleep(0)  # the call runs until it first waits
    assert not call.done()  # a mock that reported its latency but never waited it would be done here
    assert (await call).latency_ms == 30


async def test_jitter_adds_the_samples_own_share_of_it_to_the_latency() -> None:
    provider = create_provider("mock/m", {"latency_ms": "30", "jitter_ms": "20"}, ProviderContext())
    completion = await provider.generate(request(SAMPLES[0]))
    # the latency draw of (seed 0, model m, sample s0, epoch 0) is the first 8 bytes of
    # blake2b("0\x1fm\x1fs0\x1f0", digest_size=48), big-endian, over 2**64: 0.15426354162597652 (hashlib, by hand)
    assert completion.latency_ms == pytest.approx(30 + 20 * 0.15426354162597652)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"skill": "2"}, "--model-arg skill: Input should be less than or equal to 1"),
        ({"skill.a": "1.5"}, "skill.a must be between 0 and 1"),
        ({"speed": "1"}, "--model-arg speed: unknown option"),
        ({"temperature": "0.5"}, "--model-arg temperature: unknown option; set it with --temperature or the task's"),
        ({"seed": "3"}, "--model-arg seed: unknown option; the mock's draws are seeded with --seed"),
        ({"top_p": "0.5"}, r"--model-arg top_p: unknown option; set it in the task's \[generation\] top_p"),
        ({"latency_ms": "fast"}, "--model-arg latency_ms: Input should be a valid number"),
        # hostile-s33: "dictionary update sequence element #0 has length 1; 2 is required"
        ({"skill_by_axis": "a=0.5"}, "skill_by_axis takes one --model-arg skill.AXIS=VALUE per axis"),
    ],
)
def test_bad_model_args_are_config_errors_naming_the_key(args: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        create_provider("mock/m", args, ProviderContext())


def test_a_skill_for_an_axis_the_dataset_lacks_is_refused_naming_the_axes() -> None:
    context = ProviderContext(axes=frozenset({"a", "b"}))
    with pytest.raises(ConfigError, match=r"--model-arg skill\.c: the dataset has no axis 'c' \(its axes: a, b\)"):
        create_provider("mock/m", {"skill.a": "0.5", "skill.c": "0.5"}, context)
    options = create_provider("mock/m", {"skill.a": "0.5"}, context).options
    assert isinstance(options, MockOptions) and options.skill_by_axis == {"a": 0.5}


def test_axis_skills_are_taken_as_given_when_the_axes_are_unknown() -> None:
    provider = create_provider("mock/m", {"skill.c": "0.5"}, ProviderContext())  # a resume: checked at its start
    assert isinstance(provider.options, MockOptions) and provider.options.skill_by_axis == {"c": 0.5}


def test_unknown_provider_suggests_the_closest_name() -> None:
    with pytest.raises(ConfigError, match="unknown provider 'mokc'; did you mean 'mock'"):
        create_provider("mokc/m", {}, ProviderContext())


def test_model_id_without_provider_prefix_is_refused() -> None:
    with pytest.raises(ConfigError, match="must look like provider/model"):
        create_provider("gpt-4o", {}, ProviderContext())
