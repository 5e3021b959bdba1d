"""Aggregation: the statistics of an axis and the run's summary, from columns or from a session's tally."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from eval_harness.aggregate._arrays import F64, I64, U64, Bool
from eval_harness.aggregate._cache import refresh_run_columns
from eval_harness.aggregate._columns import RunColumns, check_run_values
from eval_harness.aggregate._load import load_columns, scorer_keys
from eval_harness.stats import NO_INTERVAL, mean_ci
from eval_harness.tally import (
    CONTEXT_WINDOW_STOP,
    LENGTH_STOPS,
    AxisFigures,
    AxisTally,
    SessionTally,
    axis_stats_of,
    judge_cost_total,
    run_summary_of,
)
from eval_harness.types import AxisStats, RunManifest, RunSummary


def _fsum(values: F64) -> float:
    """The exactly rounded sum of the known (non-NaN) values: independent of their order."""
    return math.fsum(values[~np.isnan(values)].tolist())


def _percentiles(known: F64) -> tuple[float | None, float | None]:
    if not known.size:
        return None, None
    p50, p95 = np.percentile(known, [50, 95]).tolist()
    return float(p50), float(p95)


@dataclass(frozen=True)
class _AxisInputs:
    """What the statistics of a set of records are computed from; built from columns or from a tally."""

    final: F64
    """Final scores, errors as 0, in any order."""
    latency_ms: F64
    """Known latencies."""
    cost_usd: F64
    """Known costs."""
    errors: int
    passed: int
    """Records that passed and hold no error."""
    cost_known: bool
    prompt_tokens: int
    completion_tokens: int
    units: F64 | None = None
    """With several epochs, each sample's mean final score: the units of the interval (None: one epoch, the
    records are the units)."""
    clean_units: F64 | None = None
    """The units' means over their records without an error (a unit with only errors drops out); built from
    columns only (a tally is never used with several epochs)."""

    @classmethod
    def of_columns(cls, columns: RunColumns) -> _AxisInputs:
        latency, cost = columns.latency_ms, columns.cost_usd
        return cls(
            units=per_sample_means(columns, columns.final),
            clean_units=units_without_errors(columns),
            final=columns.final,
            latency_ms=latency[~np.isnan(latency)],
            cost_usd=cost[~np.isnan(cost)],
            errors=int(np.count_nonzero(columns.error)),
            passed=int(np.count_nonzero(columns.passed & ~columns.error)),
            cost_known=not bool(np.any(np.isnan(cost) & columns.billed())),
            prompt_tokens=int(columns.prompt_tokens.sum()),
            completion_tokens=int(columns.completion_tokens.sum()),
        )

    @classmethod
    def of_tally(cls, tally: AxisTally) -> _AxisInputs:
        return cls(
            final=np.frombuffer(tally.final, dtype=np.float64),
            latency_ms=np.frombuffer(tally.latency_ms, dtype=np.float64),
            cost_usd=np.frombuffer(tally.cost_usd, dtype=np.float64),
            errors=tally.errors,
            passed=tally.passed,
            cost_known=not tally.cost_unknown,
            prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens,
        )

    @classmethod
    def joined(cls, parts: Sequence[_AxisInputs]) -> _AxisInputs:
        if len(parts) == 1:
            return parts[0]
        # a sample is on one axis: the axes' units together are the run's
        units = clean_units = None
        if any(p.units is not None for p in parts):
            units = np.concatenate([_or_records(p.units, p.final) for p in parts])
            clean_units = np.concatenate([_clean_units(p) for p in parts])
        return cls(
            units=units,
            clean_units=clean_units,
            final=np.concatenate([p.final for p in parts]) if parts else np.empty(0),
            latency_ms=np.concatenate([p.latency_ms for p in parts]) if parts else np.empty(0),
            cost_usd=np.concatenate([p.cost_usd for p in parts]) if parts else np.empty(0),
            errors=sum(p.errors for p in parts),
            passed=sum(p.passed for p in parts),
            cost_known=all(p.cost_known for p in parts),
            prompt_tokens=sum(p.prompt_tokens for p in parts),
            completion_tokens=sum(p.completion_tokens for p in parts),
        )


def _clean_units(inputs: _AxisInputs) -> F64:
    assert inputs.clean_units is not None, "units come from columns, which give clean units too"
    return inputs.clean_units


def _or_records(units: F64 | None, records: F64) -> F64:
    return records if units is None else units


def per_sample_means(columns: RunColumns, values: F64) -> F64 | None:
    """Each sample's mean of ``values`` (one per row of ``columns``), when some sample has several rows
    (epochs); None when every row is a sample of its own.

    Several epochs of one sample are not independent evidence (a temperature-0 model repeats itself), so
    with epochs the intervals and tests take one unit per sample, the mean of its epochs."""
    return _sample_means(columns.epoch, columns.sample_hash[:, 0], values)


def units_without_errors(columns: RunColumns) -> F64:
    """What an interval excluding errors is over: the final scores of the rows without an error, or with epochs
    each sample's mean over them (a sample with only errors drops out)."""
    clean = ~columns.error
    final = columns.final[clean]
    # only the two columns the grouping reads: a take of every column cost a copy of the run at the report's peak
    return _or_records(_sample_means(columns.epoch[clean], columns.sample_hash[clean, 0], final), final)


def _sample_means(epoch: I64, sample_ids: U64, values: F64) -> F64 | None:
    if values.size == 0 or not np.any(epoch != 0):
        return None
    sample = sample_index(sample_ids)
    return None if sample is None else group_means(values, sample)


def sample_index(sample_ids: U64) -> NDArray[np.intp] | None:
    """Each row's sample as 0..k-1 (``sample_ids``: a 64-bit identity of each row's sample), or None when no
    sample has two rows (then the rows are the units)."""
    samples, index = np.unique(sample_ids, return_inverse=True)
    return None if samples.size == sample_ids.size else index.astype(np.intp)


def group_means(values: F64, group: NDArray[np.intp]) -> F64:
    """The mean of ``values`` in each group (0..k-1), summed in value order within each group: the means must
    not depend on the order of the records."""
    order = np.lexsort((values, group))
    means: F64 = np.bincount(group[order], weights=values[order]) / np.bincount(group)
    return means


BY_SAMPLE = "-by-sample"
"""Appended to an interval method computed over per-sample means (several epochs)."""


def axis_stats(columns: RunColumns, name: str, ci_method: str = "auto", seed: int = 0) -> AxisStats:
    """Aggregates of all rows of ``columns`` (select rows first with ``take``) under the label ``name``."""
    return _axis_stats(_AxisInputs.of_columns(columns), name, ci_method, seed)


def _axis_stats(inputs: _AxisInputs, name: str, ci_method: str, seed: int) -> AxisStats:
    # Sorted, and summed exactly (fsum): the statistics must not depend on the order of the records,
    # which a crash and resume changes, down to the last bit.
    final = np.sort(inputs.final)
    if final.size and inputs.units is not None:
        # the mean over samples, as its interval (equal to the records' mean when every sample has all its
        # epochs; an interrupted run's samples each count once, whatever their number of epochs)
        mean, low, high, method = mean_ci(np.sort(inputs.units), method=ci_method, seed=seed)
        if method != NO_INTERVAL:
            method += BY_SAMPLE
    elif final.size:
        mean, low, high, method = mean_ci(final, method=ci_method, seed=seed)
    else:
        mean, low, high, method = None, None, None, "none"
    p50, p95 = _percentiles(inputs.latency_ms)
    figures = AxisFigures(
        n=int(final.size),
        errors=inputs.errors,
        passed=inputs.passed,
        mean=mean,
        ci=_interval_or_none(low, high),
        ci_method=method,
        final_sum=math.fsum(final),
        cost_total=math.fsum(inputs.cost_usd) if inputs.cost_known else None,
        cost_known=inputs.cost_known,
        latency_p50_ms=p50,
        latency_p95_ms=p95,
        prompt_tokens=inputs.prompt_tokens,
        completion_tokens=inputs.completion_tokens,
        samples=None if inputs.units is None else int(inputs.units.size),
        mean_excluding_errors_by_sample=_clean_mean(inputs),
    )
    return axis_stats_of(figures, name)


def _interval_or_none(low: float | None, high: float | None) -> tuple[float, float] | None:
    """The interval, or None when there is none (no records; or NaN: one unit, or units all equal)."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return None
    return low, high


def _clean_mean(inputs: _AxisInputs) -> float | None:
    """With several epochs, the mean over samples of their records without an error (as the report's interval
    excluding errors); None otherwise, or when every record is an error."""
    if inputs.units is None or inputs.clean_units is None or not inputs.clean_units.size:
        return None
    return math.fsum(np.sort(inputs.clean_units)) / inputs.clean_units.size


def per_axis(columns: RunColumns) -> list[tuple[str, RunColumns]]:
    """The rows of each axis, axes sorted by name."""
    order = sorted(range(len(columns.axes)), key=lambda code: columns.axes[code])
    out = []
    for code in order:
        rows = np.flatnonzero(columns.axis == code)
        if rows.size:
            out.append((columns.axes[code], columns.take(rows)))
    return out


def per_tag(columns: RunColumns) -> Iterator[tuple[str, RunColumns]]:
    """The rows carrying each tag, tags sorted by name: a row with several tags is in each of theirs (once, even
    when its record names a tag twice), a row without one in none. One tag's rows at a time: a record is in
    several, so all of them at once could hold more than the run."""
    if not columns.tag_ids.size:
        return
    # (tag, row) pairs, each once, sorted by tag then row: every tag's rows in file order. Sorted and deduplicated
    # by hand: np.unique hashes (numpy 2), which took 3 s for a million records of 1.4 tags each, the sort 0.1 s
    pairs = np.sort(columns.tag_ids.astype(np.int64) * columns.n + columns.tag_rows())
    pairs = pairs[np.concatenate(([True], pairs[1:] != pairs[:-1]))]
    tags, rows = np.divmod(pairs, columns.n)
    del pairs
    bounds = np.searchsorted(tags, np.arange(len(columns.tag_names) + 1))
    for code in sorted(range(len(columns.tag_names)), key=lambda code: columns.tag_names[code]):
        if bounds[code + 1] > bounds[code]:
            yield columns.tag_names[code], columns.take(rows[bounds[code] : bounds[code + 1]])


def untagged(columns: RunColumns) -> int:
    """Rows without a tag."""
    return int(np.count_nonzero(np.diff(columns.tag_offsets) == 0))


def length_stopped(columns: RunColumns) -> Bool:
    """Which rows hold an answer that stopped at the output-token limit or the context window
    (``tally.LENGTH_STOPS``: OpenAI's ``length``, Anthropic's ``max_tokens`` and ``model_context_window_exceeded``)."""
    codes = [code for code, name in enumerate(columns.finish_reasons) if name in LENGTH_STOPS]
    return np.isin(columns.finish_reason, codes)


def stopped_short_rows(columns: RunColumns, max_tokens: int | None) -> Bool:
    """Which rows hold an answer that stopped at a length limit (the context window's own stop aside) with fewer
    completion tokens than ``max_tokens`` (``tally.stopped_short``): the server's limit, not max_tokens."""
    if max_tokens is None:
        return np.zeros(columns.n, dtype=bool)
    codes = [code for code, name in enumerate(columns.finish_reasons) if name in LENGTH_STOPS - {CONTEXT_WINDOW_STOP}]
    tokens = columns.completion_tokens
    return np.isin(columns.finish_reason, codes) & (tokens > 0) & (tokens < max_tokens)


def finish_reasons(columns: RunColumns) -> dict[str, int]:
    """Rows by finish reason as reported (rows without one are left out)."""
    codes = columns.finish_reason[columns.finish_reason >= 0]
    counts = np.bincount(codes, minlength=len(columns.finish_reasons))
    return {columns.finish_reasons[i]: int(c) for i, c in enumerate(counts) if c}


def judge_cost(columns: RunColumns) -> float | None:
    """Total judge cost; None when no judge was used or a judged record has no price."""
    known = ~np.isnan(columns.judge_cost_usd)
    return judge_cost_total(columns.judge_cost_usd[known], bool(np.any(columns.judge_used & ~known)))


def errors_by_type(columns: RunColumns) -> dict[str, int]:
    """Error records by error type."""
    codes = columns.error_type[columns.error_type >= 0]
    counts = np.bincount(codes, minlength=len(columns.error_types))
    return {columns.error_types[i]: int(c) for i, c in enumerate(counts) if c}


def summarize_columns(columns: RunColumns, manifest: RunManifest, ci_method: str = "auto") -> RunSummary:
    """The summary of already-loaded columns, with the manifest's status."""
    seed = manifest.seed
    parts = [(name, _AxisInputs.of_columns(rows)) for name, rows in per_axis(columns)]
    return run_summary_of(
        manifest,
        [_axis_stats(inputs, name, ci_method, seed) for name, inputs in parts],
        _axis_stats(_AxisInputs.joined([inputs for _, inputs in parts]), "overall", ci_method, seed),
        judge_cost_usd=judge_cost(columns),
        errors_by_type=errors_by_type(columns),
        retries=dict(columns.retries),
        backoff_s=_fsum(columns.backoff_s),
        cached=int(np.count_nonzero(columns.cached)),
    )


def summarize_tally(tally: SessionTally, manifest: RunManifest, ci_method: str = "auto") -> RunSummary:
    """The summary of a run whose every record went through ``tally`` (a session that began on an empty
    artifact): equal to ``summarize`` of its samples.jsonl, without reading it."""

    def stats(name: str, parts: list[AxisTally]) -> AxisStats:
        inputs = _AxisInputs.joined([_AxisInputs.of_tally(part) for part in parts])
        return _axis_stats(inputs, name, ci_method, manifest.seed)

    return tally.summary(manifest, stats)


def summarize(
    samples_path: Path, manifest: RunManifest, ci_method: str = "auto", *, keep_cache: bool = False
) -> RunSummary:
    """The summary of the whole artifact (every session), with the manifest's status.

    With ``keep_cache`` (the runner, which holds the run's lock) the columns are read through the columns
    cache and the cache is brought up to date, so the next session reads only what it appends.
    """
    keys = scorer_keys(manifest)
    if not keep_cache:
        columns = load_columns(samples_path, keys)
        check_run_values(columns, samples_path, manifest.epochs)
        return summarize_columns(columns, manifest, ci_method)
    return summarize_columns(refresh_run_columns(samples_path, manifest), manifest, ci_method)


__all__ = [
    "BY_SAMPLE",
    "axis_stats",
    "errors_by_type",
    "finish_reasons",
    "group_means",
    "judge_cost",
    "length_stopped",
    "per_axis",
    "per_sample_means",
    "per_tag",
    "sample_index",
    "stopped_short_rows",
    "summarize",
    "summarize_columns",
    "summarize_tally",
    "units_without_errors",
    "untagged",
]
