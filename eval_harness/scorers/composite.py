"""Composite: one score from several named scorers — a weighted mean with gates — keeping the breakdown.

A task's own scorer list already combines this way (``combine`` in base.py); ``composite`` packages such
a combination under one key, for nesting or for reuse across tasks::

    [[scorers]]
    name = "composite"
    alias = "quality"
    args = { scorers = [
        { name = "instructions", args = { mode = "all" }, gate = true },
        { name = "rouge", weight = 2 },
        { name = "faithfulness", weight = 1 },
    ] }

Each part's value lands in the record as ``quality.<part>``; a failed gate is named in the explanation.
The parts combine by the rules of ``combine`` (a skipped part is left out; a skipped gate is not enforced).
When every part is skipped (an optional judge without ``--judge-model``), the composite is skipped too,
with the parts' reasons, and the task's other scorers make the final score.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from eval_harness.scorers.base import Scorer, ScoringPipeline, SkipScore, SpentScoringError, register_scorer
from eval_harness.types import Completion, CompletionClient, Sample, Score, ScorerSpec, first_problem


class CompositeScorer(Scorer):
    """Runs its parts through a nested pipeline and reports their combination."""

    def __init__(self, pipeline: ScoringPipeline) -> None:
        self.pipeline = pipeline
        self.expensive = any(scorer.expensive for _, scorer in pipeline.scorers)
        parts = pipeline.fingerprints()
        self.fingerprint = ",".join(f"{k}={v}" for k, v in sorted(parts.items())) or None

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        result = await self.pipeline.run(output, sample, completion)
        if result.error is not None:
            raise SpentScoringError(result.error.message, result.judge_usage, result.judge_cost_usd)
        if result.final is None:  # every part abstained: so does the composite, and the task's other scorers count
            reasons = "; ".join(
                f"{key}: {result.explanations[key].removeprefix('skipped: ')}" for key in result.skipped
            )
            raise SkipScore(f"every part was skipped ({reasons})")
        failed_gates = [s.key for s in self.pipeline.specs if s.gate and result.scores.get(s.key, 1.0) < 1.0]
        parts = ", ".join(f"{key} {value:.3f}" for key, value in result.scores.items())
        gate = f"gate {failed_gates[0]} failed → 0; " if failed_gates else ""
        return Score(
            value=result.final,
            explanation=f"{gate}{parts}",
            usage=result.judge_usage,
            cost_usd=result.judge_cost_usd,
            metadata={"breakdown": dict(result.scores), "parts": result.metadata, "skipped": result.skipped},
        )


@register_scorer("composite")
def composite_scorer(
    scorers: list[dict[str, Any]], judge: CompletionClient | None = None, where: str = "task"
) -> Scorer:
    """A weighted mean of ``scorers`` (tables like a task's ``[[scorers]]``) with their gates."""
    if not isinstance(scorers, list) or not scorers:
        raise ValueError("scorers must be a non-empty list of scorer tables")
    specs = []
    for index, table in enumerate(scorers):
        try:
            specs.append(ScorerSpec.model_validate(table))
        except ValidationError as exc:
            location, message = first_problem(exc)
            raise ValueError(f"scorers[{index}].{location}: {message}") from None
    return CompositeScorer(ScoringPipeline(specs, judge, where))
