"""``mock/<name>``: a deterministic model with per-axis skill, for demos, tests and benchmarks.

Whether a sample is answered correctly depends only on a hash of (seed, model name, sample id, epoch), so
results never depend on completion order, concurrency or resumption: a resumed run equals an
uninterrupted one record for record.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import string
import struct
from typing import Any, NamedTuple

from pydantic import Field, model_validator

from eval_harness.errors import ConfigError, ProviderError
from eval_harness.providers.base import Provider, ProviderContext, ProviderOptions, register_provider
from eval_harness.types import Completion, GenerateRequest, Sample, Usage

_CHATTER = (
    "I think the answer is {answer}",
    "Let me work through this. The answer is {answer}.",
    "Hmm, that would be {answer}, I believe.",
    "Answer: {answer} (I am fairly confident)",
)
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


class MockOptions(ProviderOptions):
    """Options of the mock; ``skill.<axis>=P`` sets one axis, ``skill=P`` the rest."""

    skill: float = Field(default=0.8, ge=0, le=1, description="Probability of a right answer.")
    skill_by_axis: dict[str, float] = Field(default_factory=dict, description="Per-axis skill overrides.")
    format_ok: float = Field(default=1.0, ge=0, le=1, description="Probability of a bare answer.")
    latency_ms: float = Field(default=0.0, ge=0, description="Simulated latency per call.")
    jitter_ms: float = Field(default=0.0, ge=0, description="Extra latency, uniform in [0, jitter].")
    error_rate: float = Field(default=0.0, ge=0, le=1, description="Fraction of calls that fail.")
    cost_per_1k_tokens: float = Field(default=0.0, ge=0, le=1e3, description="USD per 1,000 tokens (in + out).")

    @model_validator(mode="before")
    @classmethod
    def _fold_axis_skills(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        folded: dict[str, Any] = {}
        given = data.get("skill_by_axis") or {}
        if not isinstance(given, dict):  # a flag's text: the per-axis skills are given one flag each
            raise ValueError("skill_by_axis takes one --model-arg skill.AXIS=VALUE per axis, e.g. skill.arithmetic=0.9")
        by_axis = dict(given)
        for key, value in data.items():
            if key.startswith("skill."):
                by_axis[key.removeprefix("skill.")] = value
            elif key != "skill_by_axis":
                folded[key] = value
        folded["skill_by_axis"] = by_axis
        return folded

    @model_validator(mode="after")
    def _check_axis_skills(self) -> MockOptions:
        for axis, value in self.skill_by_axis.items():
            if not 0 <= value <= 1:
                raise ValueError(f"skill.{axis} must be between 0 and 1, got {value}")
        return self


class _Draws(NamedTuple):
    latency: float
    error: float
    correct: float
    wrong: float
    format: float
    chatter: float


_SIX_WORDS = struct.Struct(">6Q")
_UNIT = 2.0**-64


def _draws(seed: int, model: str, sample_id: str, epoch: int) -> _Draws:
    """Independent uniform numbers in [0, 1), one per decision, from one hash of the sample's identity.

    Nothing else goes into the hash, so an answer never depends on completion order, concurrency or resumption.
    """
    digest = hashlib.blake2b(f"{seed}\x1f{model}\x1f{sample_id}\x1f{epoch}".encode(), digest_size=48).digest()
    a, b, c, d, e, f = _SIX_WORDS.unpack(digest)
    return _Draws(a * _UNIT, b * _UNIT, c * _UNIT, d * _UNIT, e * _UNIT, f * _UNIT)


def _wrong_answer(sample: Sample, right: str, salt: float) -> str:
    choices = sample.choices or []
    letters = string.ascii_uppercase[: len(choices)]
    if right in letters and len(letters) > 1:
        others = [letter for letter in letters if letter != right]
        return others[int(salt * len(others))]
    if right in choices and len(choices) > 1:
        others_text = [c for c in choices if c != right]
        return others_text[int(salt * len(others_text))]
    if _NUMBER.match(right.strip()):
        delta = 1 + int(salt * 9)
        value = float(right) + (delta if salt < 0.5 else -delta)
        return str(int(value)) if value.is_integer() and "." not in right else f"{value:g}"
    text = right.strip()
    if len(text) >= 2:
        rotated = text[1:] + text[0]
        if rotated != text:
            return rotated
    return text + "x"


@register_provider("mock")
class MockProvider(Provider):
    """A deterministic stand-in for a model: answers right with probability ``skill``."""

    Options = MockOptions

    def __init__(self, model: str, options: ProviderOptions, context: ProviderContext) -> None:
        super().__init__(model, options, context)
        assert isinstance(options, MockOptions)
        unknown = sorted(set(options.skill_by_axis) - context.axes) if context.axes is not None else []
        if unknown:  # a misspelt axis would silently get the default skill
            raise ConfigError(
                f"--model-arg skill.{unknown[0]}: the dataset has no axis {unknown[0]!r} "
                f"(its axes: {', '.join(sorted(context.axes or ()))})"
            )

    async def generate(self, request: GenerateRequest) -> Completion:
        options = self.options
        assert isinstance(options, MockOptions)
        sample = request.sample
        draw = _draws(request.seed, self.model, sample.id, request.epoch)
        delay_ms = options.latency_ms + options.jitter_ms * draw.latency
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        if options.error_rate and draw.error < options.error_rate:
            raise ProviderError(f"mock/{self.model}: simulated provider error (error_rate={options.error_rate})")
        skill = options.skill_by_axis.get(sample.axis, options.skill)
        right = sample.targets[0]
        answer = right if draw.correct < skill else _wrong_answer(sample, right, draw.wrong)
        if draw.format >= options.format_ok:
            answer = _CHATTER[int(draw.chatter * len(_CHATTER))].format(answer=answer)
        usage = Usage(
            prompt_tokens=sum(math.ceil(len(m.content) / 4) + 4 for m in request.messages),
            completion_tokens=math.ceil(len(answer) / 4) + 1,
        )
        return Completion(
            text=answer,
            finish_reason="stop",
            usage=usage,
            cost_usd=self.cost(usage),
            latency_ms=delay_ms,
            model=self.model_id,
            request_id=f"mock-{sample.id}-{request.epoch}",
        )

    def cost(self, usage: Usage) -> float | None:
        options = self.options
        assert isinstance(options, MockOptions)
        return options.cost_per_1k_tokens * (usage.prompt_tokens + usage.completion_tokens) / 1000


__all__ = ["MockOptions", "MockProvider"]
