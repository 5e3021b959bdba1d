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
with the parts' reasons, and the task's other scorers make the final score. A scoring timeout that cuts a
part short keeps the parts that finished, as above but without the composite's value, and their judges' spend.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import ValidationError

from eval_harness.errors import UnknownNameError
from eval_harness.scorers.base import (
    Scorer,
    ScoringPipeline,
    ScoringResult,
    SkipScore,
    SpentScoringError,
    keep_when_cut_short,
    register_scorer,
)
from eval_harness.types import Completion, CompletionClient, Sample, Score, ScorerSpec, first_problem


class CompositeScorer(Scorer):
    """Runs its parts through a nested pipeline and reports their combination."""

    def __init__(self, pipeline: ScoringPipeline) -> None:
        self.pipeline = pipeline
        self.expensive = any(scorer.expensive for _, scorer in pipeline.scorers)
        parts = pipeline.fingerprints()
        self.fingerprint = ",".join(f"{k}={v}" for k, v in sorted(parts.items())) or None

    def preflight(self, sample: Sample) -> None:
        self.pipeline.preflight(sample)

    def notes(self, key: str) -> list[str]:
        return self.pipeline.notes(prefix=f"{key}.")

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        result = ScoringResult()
        try:
            await self.pipeline.run(output, sample, completion, into=result)
        except asyncio.CancelledError as cancelled:  # a scoring timeout: the record keeps the parts that finished
            finished = bool(result.scores or result.skipped)
            keep_when_cut_short(
                cancelled,
                explanation=self._explanation(result) or None,
                metadata=self._metadata(result) if finished else None,
                usage=result.judge_usage,
                cost_usd=result.judge_cost_usd,
                running=result.running,
            )
            raise
        if result.error is not None:
            raise SpentScoringError(result.error.message, result.judge_usage, result.judge_cost_usd)
        if result.final is None:  # every part abstained: so does the composite, and the task's other scorers count
            reasons = "; ".join(
                f"{key}: {result.explanations[key].removeprefix('skipped: ')}" for key in result.skipped
            )
            raise SkipScore(f"every part was skipped ({reasons})")
        return Score(
            value=result.final,
            explanation=self._explanation(result),
            usage=result.judge_usage,
            cost_usd=result.judge_cost_usd,
            metadata=self._metadata(result),
        )

    def _explanation(self, result: ScoringResult) -> str:
        """The parts' values, after the first failed gate (which makes the composite 0), then the parts left out
        and why (skipped, or failed at weight 0: a judge down for the whole run must show)."""
        failed_gates = [s.key for s in self.pipeline.specs if s.gate and result.scores.get(s.key, 1.0) < 1.0]
        parts = ", ".join(f"{key} {value:.3f}" for key, value in result.scores.items())
        gate = f"gate {failed_gates[0]} failed → 0; " if failed_gates else ""
        left_out = "".join(f"; {key} {result.explanations[key]}" for key in result.skipped)
        return f"{gate}{parts}{left_out}"

    @staticmethod
    def _metadata(result: ScoringResult) -> dict[str, Any]:
        """The breakdown (each part's value, under ``<key>.<part>`` in the record), the parts' own metadata and
        the parts skipped."""
        return {"breakdown": dict(result.scores), "parts": result.metadata, "skipped": result.skipped}


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
            problem = exc.errors(include_url=False)[0]
            if problem["type"] == "extra_forbidden":  # as a task's own [[scorers]] table says it: "did you mean"
                message = str(UnknownNameError.among("key", str(problem["loc"][-1]), list(ScorerSpec.model_fields)))
            raise ValueError(f"scorers[{index}].{location}: {message}") from None
    return CompositeScorer(ScoringPipeline(specs, judge, where))


__all__ = ["CompositeScorer", "composite_scorer"]
