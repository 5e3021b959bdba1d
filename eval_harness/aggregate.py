"""Aggregate a run's records into per-axis statistics (summary.json), streaming the artifact once.

Records are read as plain dicts (no model validation) so a million-record run aggregates in seconds.
Errors are counted as wrong (score 0) in ``mean``; ``mean_excluding_errors`` is the other policy.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval_harness.artifacts import iter_record_dicts
from eval_harness.stats import mean_ci
from eval_harness.types import AxisStats, RunManifest, RunSummary


@dataclass
class _Accumulator:
    scores: list[float] = field(default_factory=list)
    errors: int = 0
    passed: int = 0
    costs: list[float] = field(default_factory=list)
    cost_known: bool = True
    latencies: list[float] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, record: dict[str, Any]) -> None:
        score = record.get("score")
        if record.get("error") is not None or score is None:
            self.errors += 1
            self.scores.append(0.0)
        else:
            self.scores.append(float(score))
            if record.get("passed"):
                self.passed += 1
        cost = record.get("cost_usd")
        if cost is None:
            if record.get("error") is None:
                self.cost_known = False
        else:
            self.costs.append(cost)
        latency = record.get("latency_ms")
        if latency is not None:
            self.latencies.append(latency)
        usage = record.get("usage") or {}
        self.prompt_tokens += usage.get("prompt_tokens") or 0
        self.completion_tokens += usage.get("completion_tokens") or 0

    def merge(self, other: _Accumulator) -> None:
        self.scores.extend(other.scores)
        self.errors += other.errors
        self.passed += other.passed
        self.costs.extend(other.costs)
        self.cost_known = self.cost_known and other.cost_known
        self.latencies.extend(other.latencies)
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    def stats(self, axis: str, ci_method: str = "auto", seed: int = 0) -> AxisStats:
        n = len(self.scores)
        scores = np.asarray(self.scores, dtype=float)
        clean = n - self.errors
        mean, low, high, method = mean_ci(scores, method=ci_method, seed=seed) if n else (None, None, None, "none")
        excluding = (float(scores.sum()) / clean) if clean else None  # errors contribute 0 to the sum
        # fsum is exact, so the total does not depend on the order records were written in (resumes reorder them).
        cost_total = math.fsum(self.costs) if self.cost_known else None
        cost_mean = cost_total / n if cost_total is not None and n else None
        latencies = np.asarray(self.latencies, dtype=float)
        p50, p95 = np.percentile(latencies, [50, 95]).tolist() if latencies.size else (None, None)
        return AxisStats(
            axis=axis,
            n=n,
            errors=self.errors,
            error_rate=self.errors / n if n else 0.0,
            mean=mean,
            mean_excluding_errors=excluding,
            ci=(low, high) if low is not None and high is not None else None,
            ci_method=method,
            pass_rate=self.passed / n if n else None,
            cost_total_usd=cost_total,
            cost_mean_usd=cost_mean,
            cost_known=self.cost_known,
            accuracy_per_dollar=(mean / cost_mean) if mean is not None and cost_mean else None,
            latency_p50_ms=p50,
            latency_p95_ms=p95,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )


def summarize(samples_path: Path, manifest: RunManifest, ci_method: str = "auto") -> RunSummary:
    """The summary of the whole artifact (every session), with the manifest's status."""
    by_axis: dict[str, _Accumulator] = {}
    errors_by_type: Counter[str] = Counter()
    retries: Counter[str] = Counter()
    backoff = 0.0
    cached = 0
    judge_cost: float | None = None
    for record in iter_record_dicts(samples_path):
        axis = record.get("axis", "default")
        accumulator = by_axis.get(axis)
        if accumulator is None:
            accumulator = by_axis[axis] = _Accumulator()
        accumulator.add(record)
        error = record.get("error")
        if error is not None:
            errors_by_type[error.get("type", "Error")] += 1
        if record.get("retries"):
            retries.update(record["retries"])
        backoff += record.get("backoff_s") or 0.0
        if record.get("cached"):
            cached += 1
        if record.get("judge_cost_usd") is not None:
            judge_cost = (judge_cost or 0.0) + record["judge_cost_usd"]
    axes = [by_axis[name].stats(name, ci_method, manifest.seed) for name in sorted(by_axis)]
    total = _Accumulator()
    for accumulator in by_axis.values():
        total.merge(accumulator)
    overall = total.stats("overall", ci_method, manifest.seed)
    axis_means = [a.mean for a in axes if a.mean is not None]
    return RunSummary(
        run_id=manifest.run_id,
        status=manifest.status,
        task=manifest.task.name,
        model=manifest.model.id,
        expected_records=manifest.expected_records,
        records=overall.n,
        missing=max(0, manifest.expected_records - overall.n),
        micro_mean=overall.mean,
        macro_mean=sum(axis_means) / len(axis_means) if axis_means else None,
        axes=axes,
        overall=overall,
        judge_cost_usd=judge_cost,
        errors_by_type=dict(errors_by_type),
        retries_by_cause=dict(retries),
        backoff_s=round(backoff, 3),
        cached_records=cached,
        wall_time_s=manifest.wall_time_s or None,
    )
