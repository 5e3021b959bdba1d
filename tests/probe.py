"""Test doubles registered like any provider or scorer, so tests drive the real runner path."""

from __future__ import annotations

import asyncio
from typing import ClassVar

from pydantic import Field

from eval_harness.errors import AuthenticationError, ProviderError
from eval_harness.providers.base import Provider, ProviderOptions, register_provider
from eval_harness.scorers.base import FunctionScorer, Scorer, register_scorer
from eval_harness.types import Completion, GenerateRequest, Sample, Score, Usage


class ProbeOptions(ProviderOptions):
    latency_ms: float = Field(default=0.0)
    fail_first: int = Field(default=0, description="Transient failures before each sample succeeds.")
    retry_after: float = Field(default=0.0)
    auth_fail_after: int = Field(default=-1, description="Raise AuthenticationError after this many calls.")


@register_provider("probe")
class ProbeProvider(Provider):
    """Answers every sample correctly and counts calls and concurrency (class-level, reset per test)."""

    Options = ProbeOptions
    calls: ClassVar[int] = 0
    in_flight: ClassVar[int] = 0
    max_in_flight: ClassVar[int] = 0
    failures: ClassVar[dict[tuple[str, int], int]] = {}

    @classmethod
    def reset(cls) -> None:
        cls.calls = cls.in_flight = cls.max_in_flight = 0
        cls.failures = {}

    async def generate(self, request: GenerateRequest) -> Completion:
        options = self.options
        assert isinstance(options, ProbeOptions)
        cls = type(self)
        cls.calls += 1
        cls.in_flight += 1
        cls.max_in_flight = max(cls.max_in_flight, cls.in_flight)
        try:
            if options.latency_ms:
                await asyncio.sleep(options.latency_ms / 1000)
            if 0 <= options.auth_fail_after < cls.calls:
                raise AuthenticationError("probe: 401 invalid api key")
            key = (request.sample.id, request.epoch)
            if cls.failures.get(key, 0) < options.fail_first:
                cls.failures[key] = cls.failures.get(key, 0) + 1
                raise ProviderError("probe: 429 slow down", retry_cause="rate_limit", retry_after=options.retry_after)
            return Completion(
                text=request.sample.targets[0],
                usage=Usage(prompt_tokens=5, completion_tokens=1),
                cost_usd=0.001,
                latency_ms=options.latency_ms,
                model="probe-1",
            )
        finally:
            cls.in_flight -= 1


FLAKY = {"broken": True}


@register_scorer("flaky")
def flaky_scorer() -> Scorer:
    """Raises on every sample while FLAKY['broken'] is true; exact match otherwise."""

    def score(output: str, sample: Sample) -> Score:
        if FLAKY["broken"]:
            raise RuntimeError("scorer exploded")
        return Score(value=float(output == sample.targets[0]))

    return FunctionScorer(score)
