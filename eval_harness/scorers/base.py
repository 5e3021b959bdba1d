"""The scorer contract and the registry; how per-scorer values combine into the final score.

A scorer is built by a factory registered with ``@register_scorer("name")`` from the arguments a task
spec gives it. A factory that declares a ``judge`` parameter receives the judge model's generator.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from eval_harness.errors import ConfigError
from eval_harness.registry import Registry
from eval_harness.types import Completion, CompletionClient, ErrorInfo, Sample, Score, ScorerSpec, Usage


class Scorer(ABC):
    """Scores one output of one sample into ``Score`` with a value in [0, 1]."""

    @abstractmethod
    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        """Score ``output``; raise to record a scoring error (the output is kept)."""


class FunctionScorer(Scorer):
    """A scorer from a plain synchronous function (most deterministic scorers)."""

    def __init__(self, function: Callable[[str, Sample], Score]) -> None:
        self.function = function

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        return self.function(output, sample)


ScorerFactory = Callable[..., Scorer]
SCORERS: Registry[ScorerFactory] = Registry("scorer")


def register_scorer(name: str) -> Callable[[ScorerFactory], ScorerFactory]:
    """Decorator for a scorer factory: ``@register_scorer("exact_match")``."""
    return SCORERS.register(name)


def build_scorer(spec: ScorerSpec, judge: CompletionClient | None = None, where: str = "task") -> Scorer:
    """Build the scorer a spec names; a bad argument is a ``ConfigError`` naming ``where``."""
    factory = SCORERS.get(spec.name)
    parameters = inspect.signature(factory).parameters
    kwargs = dict(spec.args)
    if "judge" in parameters:
        if judge is None:
            raise ConfigError(f"{where}: scorer {spec.name!r} needs a judge model; pass --judge-model")
        kwargs["judge"] = judge
    try:
        inspect.signature(factory).bind(**kwargs)
    except TypeError as exc:
        raise ConfigError(f"{where}: scorer {spec.name!r}: {exc}") from None
    try:
        return factory(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: scorer {spec.name!r}: {exc}") from None


def combine(values: Mapping[str, float], specs: Sequence[ScorerSpec]) -> float:
    """The final score: weighted mean of the scorers with weight > 0; 0 when any gate is not fully met."""
    for spec in specs:
        if spec.gate and values[spec.key] < 1.0:
            return 0.0
    weighted = [(values[s.key], s.weight) for s in specs if s.weight > 0 and not s.gate]
    if not weighted:
        weighted = [(values[s.key], 1.0) for s in specs]
    total = sum(w for _, w in weighted)
    return sum(v * w for v, w in weighted) / total if total else 0.0


@dataclass
class ScoringResult:
    """Every scorer's verdict on one output, and the final score (None when a scorer failed)."""

    scores: dict[str, float] = field(default_factory=dict)
    explanations: dict[str, str] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)
    judge_usage: Usage | None = None
    judge_cost_usd: float | None = None
    error: ErrorInfo | None = None
    final: float | None = None


class ScoringPipeline:
    """The task's scorers in order; a failing scorer becomes the record's scoring error."""

    def __init__(self, specs: Sequence[ScorerSpec], judge: CompletionClient | None = None, where: str = "task") -> None:
        self.specs = list(specs)
        self.scorers = [(spec.key, build_scorer(spec, judge, where)) for spec in self.specs]

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> ScoringResult:
        """Apply every scorer; never raises for a scorer's failure."""
        result = ScoringResult()
        for key, scorer in self.scorers:
            try:
                verdict = await scorer.score(output, sample, completion)
            except Exception as exc:  # a scorer's failure is data about one sample, not the end of the run
                result.error = ErrorInfo(type=type(exc).__name__, message=f"{key}: {exc}", stage="score")
                return result
            result.scores[key] = verdict.value
            if verdict.explanation:
                result.explanations[key] = verdict.explanation
            if verdict.answer is not None:
                result.answers[key] = verdict.answer
            if verdict.usage is not None:
                result.judge_usage = verdict.usage if result.judge_usage is None else result.judge_usage + verdict.usage
            if verdict.cost_usd is not None:
                result.judge_cost_usd = (result.judge_cost_usd or 0.0) + verdict.cost_usd
        result.final = combine(result.scores, self.specs)
        return result
