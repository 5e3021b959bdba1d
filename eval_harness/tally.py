"""Running totals of the records a session writes, so a fresh run's summary need not read them back; and
the summary arithmetic that needs no numpy, shared with the column reader (``aggregate``).

When a session starts on an empty artifact, the records it writes are the whole artifact: the summary can
be computed from what the runner kept as it wrote them instead of reading samples.jsonl again, which takes
time and holds every record's columns in memory at the end. The tally keeps only what the summary cannot
get from a counter: each record's final score (for the confidence interval), its latency (for exact
percentiles) and its cost (for an exact, order-independent sum) — 24 bytes a record — and counters for the
rest. ``aggregate.summarize_tally`` turns it into the same ``RunSummary`` as reading the file would give;
the fields are read from a record exactly as the column reader reads them (a test holds the two equal).

When every final score is 0 or 1 (exact match, choice letters: the common case) ``summarize_binary`` does
the same without numpy: the Wilson interval needs only counts, and the latency percentiles are computed
here exactly as numpy computes them. That spares a run the numpy import, which on a busy event loop costs
far more than its own fifth of a second: the importing thread and the loop trade the GIL at every write.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from eval_harness.proportions import wilson_interval
from eval_harness.types import AxisStats, RunManifest, RunSummary

CONTEXT_WINDOW_STOP = "model_context_window_exceeded"
"""Anthropic's finish reason for an answer that filled the model's context window before ``max_tokens``."""

CONTEXT_WINDOW_ADVICE = (
    "the prompt and the answer fill it, so raising --max-tokens cannot help: a shorter prompt (fewer few-shot "
    "examples, a shorter system prompt) or a model with a longer context can"
)
"""What to do about answers that filled the context window (the run's warning and the report's note)."""

LENGTH_STOPS = frozenset({"length", "max_tokens", CONTEXT_WINDOW_STOP})
"""Finish reasons of an answer that stopped at the output-token limit (OpenAI's and llama.cpp's ``length``,
Anthropic's ``max_tokens``) or at the end of the model's context window (Anthropic's
``model_context_window_exceeded``): the answer may be cut short of its last line. Matched exactly, as the
APIs document them (each lower case)."""


SERVER_LIMIT = (
    "the server's own limit, not max_tokens: a local server's context window, which the prompt and the answer share "
    "(llama-server -c sets it), or its own cap on an answer; a larger --max-tokens does not raise it"
)
"""What stopped an answer at a length limit before max_tokens (``stopped_short``), as the warning and note say."""


def limit_said(limit: int | None, sent: int | None, *, unset: str = "the task sets no max_tokens") -> str:
    """The output limit an answer stopped at, as the run's warning and the report say it: the task's
    ``max_tokens``, and what was sent when that differs (room to think or reason added, a provider's default);
    ``unset`` says that the task sets none."""
    if limit is None and sent is None:
        return f"{unset}: the provider's default, e.g. Anthropic's 1,024, or the server's own limit"
    if limit is None:
        return f"{unset}: sent {sent:,}, the provider's default with any room to think"
    if sent is not None and sent != limit:  # the limit bounded thinking or reasoning with the answer
        return f"max_tokens {limit:,}, sent as {sent:,} with room to think or reason"
    return f"max_tokens {limit:,}"


def stopped_short(completion_tokens: int | None, max_tokens: int | None) -> bool:
    """Whether an answer that stopped at a length limit wrote fewer tokens than the task's ``max_tokens``: then
    the limit was not max_tokens but the server's own (a local server's context window, which the prompt and
    the answer share: llama.cpp's reports it as ``length``), which a larger max_tokens does not raise. What was
    sent is never less than max_tokens (a reasoning model's limit adds room), so such an answer stopped short
    of it whatever was sent."""
    return max_tokens is not None and completion_tokens is not None and 0 < completion_tokens < max_tokens


def was_billed(failed: bool, latency_ms: float | None) -> bool:
    """Whether a record's call was billed: a record without an error, or one whose call was answered (its latency
    is known: the answer came, then its scoring failed), whatever its usage says (a server may send none). A call
    that failed billed nothing, so its null cost is no unknown price. ``RunColumns.billed`` is the same rule for
    columns."""
    return not failed or latency_ms is not None


def nothing_billed(records: int, errors: int, cached: int, cost_total: float | None) -> bool:
    """Whether records whose known costs sum to 0 were never priced calls: every one is an error or a cache
    hit, so the 0 says what was spent, not what the model costs. From a summary's counts: a record that is
    both an error and a cache hit counts twice, which can only say True for records that cost 0 anyway."""
    return records > 0 and cost_total == 0 and errors + cached >= records


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
    """A billed record (``was_billed``) has no price."""
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
    binary: bool = True
    """Every final score so far is 0 or 1."""

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
            if score != 0.0 and score != 1.0:
                self.binary = False
        latency = record["latency_ms"]
        if latency is not None:
            axis.latency_ms.append(latency)
        cost = record["cost_usd"]
        if cost is not None:
            axis.cost_usd.append(cost)
        elif was_billed(failed, latency):
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

    def summary(self, manifest: RunManifest, axis_stats: Callable[[str, list[AxisTally]], AxisStats]) -> RunSummary:
        """The run's summary; ``axis_stats(name, parts)`` aggregates the records of ``parts`` (one axis, or
        every axis for ``overall``)."""
        axes = [axis_stats(name, [self.axes[name]]) for name in sorted(self.axes)]
        overall = axis_stats("overall", list(self.axes.values()))
        return run_summary_of(
            manifest,
            axes,
            overall,
            judge_cost_usd=judge_cost_total(self.judge_cost_usd, self.judge_unpriced),
            errors_by_type=dict(self.errors_by_type),
            retries=dict(self.retries),
            backoff_s=math.fsum(self.backoff_s),
            cached=self.cached,
        )

    def summarize_binary(self, manifest: RunManifest) -> RunSummary:
        """The run's summary when every final score is 0 or 1 (``binary``), without numpy; equal to
        ``aggregate.summarize_tally``'s (tested)."""
        if not self.binary:
            raise ValueError("summarize_binary needs 0/1 final scores")
        return self.summary(manifest, _binary_axis)


def _binary_axis(name: str, parts: list[AxisTally]) -> AxisStats:
    n = sum(part.n for part in parts)
    successes = sum(int(math.fsum(part.final)) for part in parts)
    ci = wilson_interval(successes, n) if n else None
    cost_known = not any(part.cost_unknown for part in parts)
    latencies = sorted(value for part in parts for value in part.latency_ms)
    return axis_stats_of(
        AxisFigures(
            n=n,
            errors=sum(part.errors for part in parts),
            passed=sum(part.passed for part in parts),
            mean=successes / n if n else None,
            ci=ci,
            ci_method="wilson" if n else "none",
            final_sum=float(successes),
            cost_total=math.fsum(value for part in parts for value in part.cost_usd) if cost_known else None,
            cost_known=cost_known,
            latency_p50_ms=linear_percentile(latencies, 0.5),
            latency_p95_ms=linear_percentile(latencies, 0.95),
            prompt_tokens=sum(part.prompt_tokens for part in parts),
            completion_tokens=sum(part.completion_tokens for part in parts),
        ),
        name,
    )


def judge_cost_total(known: Collection[float], unpriced: bool) -> float | None:
    """Total judge cost from the known judge costs; None when no judge was used or a judged record has no
    price (``unpriced``)."""
    if not len(known) or unpriced:
        return None
    return math.fsum(known)


def linear_percentile(ordered: Sequence[float], fraction: float) -> float | None:
    """``numpy.percentile(values, 100 * fraction)`` of sorted ``values`` (its default, linear method), with
    the same floating-point steps so the result is bit-identical; None for no values."""
    n = len(ordered)
    if not n:
        return None
    virtual = (n - 1) * fraction
    if virtual >= n - 1:
        return float(ordered[-1])
    below = math.floor(virtual)
    low, high = ordered[below], ordered[below + 1]
    weight = virtual - below
    step = high - low
    # numpy's _lerp: from the nearer end, so that a weight of 1 gives exactly the upper value
    return float(high - step * (1 - weight) if weight >= 0.5 else low + step * weight)


@dataclass(frozen=True)
class AxisFigures:
    """What the statistics of an axis are assembled from, however they were computed."""

    n: int
    errors: int
    passed: int
    """Records that passed and hold no error."""
    mean: float | None
    ci: tuple[float, float] | None
    ci_method: str
    final_sum: float
    """Exact sum of the final scores (errors count 0)."""
    cost_total: float | None
    """Exact sum of the costs; None when a record without an error has no price."""
    cost_known: bool
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    prompt_tokens: int
    completion_tokens: int
    samples: int | None = None
    """The samples ``mean`` and ``ci`` are over when a sample has several records (epochs); None: one each."""
    mean_excluding_errors_by_sample: float | None = None
    """With ``samples``: the mean over samples of their records without an error, the unit of the report's
    interval excluding errors (a sample whose every epoch failed drops out)."""


def axis_stats_of(figures: AxisFigures, name: str) -> AxisStats:
    """The per-axis (or overall) aggregates from their figures."""
    n, mean = figures.n, figures.mean
    clean = n - figures.errors
    cost_total = figures.cost_total
    cost_mean = cost_total / n if cost_total is not None and n else None
    return AxisStats(
        axis=name,
        n=n,
        errors=figures.errors,
        error_rate=figures.errors / n if n else 0.0,
        mean=mean,
        mean_excluding_errors=(
            figures.mean_excluding_errors_by_sample
            if figures.samples is not None
            else figures.final_sum / clean
            if clean
            else None
        ),
        ci=figures.ci,
        ci_method=figures.ci_method,
        pass_rate=figures.passed / n if n else None,
        cost_total_usd=cost_total,
        cost_mean_usd=cost_mean,
        cost_known=figures.cost_known,
        accuracy_per_dollar=(mean / cost_mean) if mean is not None and cost_mean else None,
        latency_p50_ms=figures.latency_p50_ms,
        latency_p95_ms=figures.latency_p95_ms,
        prompt_tokens=figures.prompt_tokens,
        completion_tokens=figures.completion_tokens,
        samples=figures.samples,
    )


def run_summary_of(
    manifest: RunManifest,
    axes: list[AxisStats],
    overall: AxisStats,
    *,
    judge_cost_usd: float | None,
    errors_by_type: dict[str, int],
    retries: dict[str, int],
    backoff_s: float,
    cached: int,
) -> RunSummary:
    """The run's summary from its per-axis and overall aggregates and run-wide counts."""
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
        judge_cost_usd=judge_cost_usd,
        # sorted by name: a crash and resume changes the order in which they first occur
        errors_by_type=dict(sorted(errors_by_type.items())),
        retries_by_cause=dict(sorted(retries.items())),
        backoff_s=round(backoff_s, 3),
        cached_records=cached,
        wall_time_s=manifest.wall_time_s or None,
    )


__all__ = [
    "CONTEXT_WINDOW_ADVICE",
    "CONTEXT_WINDOW_STOP",
    "LENGTH_STOPS",
    "SERVER_LIMIT",
    "AxisFigures",
    "AxisTally",
    "SessionTally",
    "axis_stats_of",
    "judge_cost_total",
    "limit_said",
    "linear_percentile",
    "nothing_billed",
    "run_summary_of",
    "stopped_short",
    "was_billed",
]
