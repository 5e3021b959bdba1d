"""Running totals of the records a session writes, so a fresh run's summary need not read them back.

When a session starts on an empty artifact, the records it writes are the whole artifact: the summary can
be computed from what the runner kept as it wrote them instead of reading samples.jsonl again, which takes
time and holds every record's columns in memory at the end. The tally keeps only what the summary cannot
get from a counter: each record's final score (for the confidence interval), its latency (for exact
percentiles) and its cost (for an exact, order-independent sum) — 24 bytes a record — and counters for the
rest. ``aggregate.summarize_tally`` turns it into the same ``RunSummary`` as reading the file would give;
the fields are read from a record exactly as the column reader reads them (a test holds the two equal).
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def _values() -> array[float]:
    return array("d")


@dataclass
class AxisTally:
    """The totals of one axis."""

    final: array[float] = field(default_factory=_values)
    """Final score of every record, 0.0 for an error (the default policy)."""
    latency_ms: array[float] = field(default_factory=_values)
    """The known latencies."""
    cost_usd: array[float] = field(default_factory=_values)
    """The known costs."""
    errors: int = 0
    passed: int = 0
    """Records that passed and hold no error."""
    cost_unknown: bool = False
    """A record without an error has no price."""
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def n(self) -> int:
        """Number of records."""
        return len(self.final)


@dataclass
class SessionTally:
    """The totals of every record written in a session, per axis and run-wide."""

    axes: dict[str, AxisTally] = field(default_factory=dict)
    errors_by_type: Counter[str] = field(default_factory=Counter)
    retries: Counter[str] = field(default_factory=Counter)
    judge_cost_usd: array[float] = field(default_factory=_values)
    """The known judge costs."""
    judge_unpriced: bool = False
    """A record a judge spent tokens on has no judge cost."""
    backoff_s: array[float] = field(default_factory=_values)
    """The non-zero backoffs."""
    cached: int = 0

    def add(self, record: Mapping[str, Any]) -> None:
        """Count one record (the fields of a ``SampleRecord``)."""
        axis = self.axes.get(record["axis"])
        if axis is None:
            axis = self.axes[record["axis"]] = AxisTally()
        score = record["score"]
        error = record["error"]
        failed = error is not None or score is None or math.isnan(score)
        if failed:
            axis.final.append(0.0)
            axis.errors += 1
            if error is not None:
                self.errors_by_type[str(error.get("type", "Error"))] += 1
        else:
            axis.final.append(score)
            axis.passed += record["passed"] is True
        latency = record["latency_ms"]
        if latency is not None:
            axis.latency_ms.append(latency)
        cost = record["cost_usd"]
        if cost is not None:
            axis.cost_usd.append(cost)
        elif not failed:
            axis.cost_unknown = True
        usage = record["usage"]
        axis.prompt_tokens += usage["prompt_tokens"] or 0
        axis.completion_tokens += usage["completion_tokens"] or 0
        judge_cost = record["judge_cost_usd"]
        if judge_cost is not None:
            self.judge_cost_usd.append(judge_cost)
        elif record["judge_usage"] is not None:
            self.judge_unpriced = True
        self.cached += record["cached"] is True
        if record["backoff_s"]:
            self.backoff_s.append(record["backoff_s"])
        if record["retries"]:
            self.retries.update(record["retries"])


__all__ = ["AxisTally", "SessionTally"]
