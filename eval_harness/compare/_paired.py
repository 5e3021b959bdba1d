"""The paired statistics: the two runs joined on ``(sample_id, epoch)`` (``join_keys``, ``_Pairs``), a row per
axis and overall with both means, the paired difference, its interval and its test (``_axis``), Holm's
adjustment and the verdicts (``_decide``), and the axes that have records but no pair."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from eval_harness.aggregate import RunColumns, group_means, sample_index
from eval_harness.compare._schema import ALPHA, CompareAxis, UnpairedAxis, Verdict
from eval_harness.stats import holm, mean_ci, paired_comparison
from eval_harness.tally import nothing_billed
from eval_harness.types import PairedTest


def join_keys(keys_a: NDArray[np.uint64], keys_b: NDArray[np.uint64]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Row indices ``(ia, ib)`` of the keys (``RunColumns.key_hash``) present in both runs, in B's order."""
    if keys_a.shape[0] == 0 or keys_b.shape[0] == 0:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty
    order = np.argsort(keys_a[:, 0])
    first = keys_a[order, 0]
    left = np.searchsorted(first, keys_b[:, 0], side="left")
    right = np.searchsorted(first, keys_b[:, 0], side="right")
    candidate = order[np.minimum(left, order.size - 1)]
    found = (right > left) & (keys_a[candidate, 1] == keys_b[:, 1])
    # Two of A's keys sharing the first 64-bit hash (about one chance in 10^8 per million keys): search
    # the run of equal first hashes for the matching second hash.
    for row in np.flatnonzero((right - left > 1) & ~found).tolist():
        for position in range(int(left[row]), int(right[row])):
            if keys_a[order[position], 1] == keys_b[row, 1]:
                candidate[row], found[row] = order[position], True
                break
    ib = np.flatnonzero(found)
    return candidate[ib].astype(np.intp), ib.astype(np.intp)


@dataclass(frozen=True)
class _Run:
    """What a comparison keeps of one run: a few columns, a fraction of ``RunColumns`` (and of its memory)."""

    axes: list[str]
    axis: NDArray[np.int32]
    epoch: NDArray[np.int64]
    key_hash: NDArray[np.uint64]
    sample: NDArray[np.uint64]
    """The first 64 bits of each row's sample identity: which rows are epochs of one sample."""
    side: _Side
    torn_bytes: int = 0
    """The torn last line of its samples.jsonl that was ignored (0: none)."""

    @classmethod
    def of(cls, columns: RunColumns) -> _Run:
        every = np.arange(columns.n, dtype=np.intp)
        sample = np.ascontiguousarray(columns.sample_hash[:, 0])
        return cls(
            columns.axes,
            columns.axis,
            columns.epoch,
            columns.key_hash,
            sample,
            _Side.of(columns, every),
            columns.torn_bytes,
        )

    @property
    def n(self) -> int:
        return int(self.axis.size)


@dataclass(frozen=True)
class _Side:
    """What the comparison uses of one run's paired rows."""

    final: NDArray[np.float64]
    error: NDArray[np.bool_]
    latency_ms: NDArray[np.float64]
    cost_usd: NDArray[np.float64]
    billed: NDArray[np.bool_]
    """Which rows were billed calls (``RunColumns.billed``): a null cost there is an unknown price."""
    cached: NDArray[np.bool_]

    @classmethod
    def of(cls, columns: RunColumns, rows: NDArray[np.intp]) -> _Side:
        return cls(
            columns.final[rows], columns.error[rows], columns.latency_ms[rows], columns.cost_usd[rows],
            columns.billed()[rows], columns.cached[rows],
        )  # fmt: skip

    def take(self, rows: NDArray[np.intp]) -> _Side:
        return _Side(
            self.final[rows], self.error[rows], self.latency_ms[rows], self.cost_usd[rows], self.billed[rows],
            self.cached[rows],
        )  # fmt: skip

    def percentiles(self) -> tuple[float | None, float | None]:
        known = self.latency_ms[~np.isnan(self.latency_ms)]
        if not known.size:
            return None, None
        p50, p95 = np.percentile(known, [50, 95]).tolist()
        return float(p50), float(p95)

    def cost(self) -> tuple[float | None, bool]:
        """The mean cost per record, and whether the rows billed nothing. The mean is None when a billed row has no
        price (unknown, not zero), or when the rows billed nothing, as the report says it (``tally.nothing_billed``:
        every one an error or a cache hit, their known costs summing to 0): their $0 would read as the model's
        price, so their cost shows –, neither $0 nor an unknown price."""
        if self.final.size == 0 or np.any(np.isnan(self.cost_usd) & self.billed):
            return None, False
        total = math.fsum(self.cost_usd[~np.isnan(self.cost_usd)].tolist())
        errors, cached = int(np.count_nonzero(self.error)), int(np.count_nonzero(self.cached))
        if nothing_billed(int(self.final.size), errors, cached, total):
            return None, True
        return total / self.final.size, False


@dataclass(frozen=True)
class _Pairs:
    """Two runs joined on ``(sample_id, epoch)``: the records present in both, in B's order."""

    run_a: _Run
    run_b: _Run
    ia: NDArray[np.intp]
    """A's row of each pair."""
    ib: NDArray[np.intp]
    """B's row of each pair."""
    a: _Side
    """A's paired rows."""
    b: _Side
    """B's paired rows, in the same order."""
    axis: NDArray[np.int32]
    """A's axis of each pair (a code into ``run_a.axes``): a pair is counted under A's axis, whatever B's is."""
    sample: NDArray[np.intp] | None
    """Each pair's sample (0..k-1), the unit of the tests and intervals; None when no sample has two rows."""
    unpaired_a: dict[str, int]
    """A's records without a pair, by A's axis of them."""
    unpaired_b: dict[str, int]
    """B's records without a pair, by B's axis of them."""

    @classmethod
    def of(cls, run_a: _Run, run_b: _Run, ia: NDArray[np.intp], ib: NDArray[np.intp], epochs: int) -> _Pairs:
        """The pairs at rows ``ia`` of A and ``ib`` of B; ``epochs``: the most epochs either run has."""
        sample = sample_index(run_a.sample[ia]) if epochs > 1 else None  # else no sample has two rows: skip the sort
        unpaired_a, unpaired_b = _unpaired_by_axis(run_a, ia), _unpaired_by_axis(run_b, ib)
        a, b = run_a.side.take(ia), run_b.side.take(ib)
        return cls(run_a, run_b, ia, ib, a, b, run_a.axis[ia], sample, unpaired_a, unpaired_b)

    @property
    def n(self) -> int:
        return int(self.ia.size)

    @property
    def only_a(self) -> int:
        """A's records with no pair in B."""
        return self.run_a.n - self.n

    @property
    def only_b(self) -> int:
        """B's records with no pair in A."""
        return self.run_b.n - self.n


def _unpaired_by_axis(run: _Run, paired_rows: NDArray[np.intp]) -> dict[str, int]:
    """The run's records without a pair, by the run's own axis of them (axes with none left out)."""
    size = len(run.axes)
    left = np.bincount(run.axis, minlength=size) - np.bincount(run.axis[paired_rows], minlength=size)
    return {run.axes[code]: int(left[code]) for code in np.flatnonzero(left).tolist()}


@dataclass(frozen=True)
class _Rows:
    """The rows of a comparison: what it compared, and what it could not."""

    axes: list[CompareAxis]
    """One row per axis of A with pairs, by name, each with its Holm-adjusted verdict."""
    pairs_of: list[NDArray[np.intp]]
    """Each axis's pairs (indices into ``_Pairs``), in the order of ``axes``."""
    overall: CompareAxis
    unpaired: list[UnpairedAxis]
    moved_b: set[str]
    """B's axes that A does not have, whose paired records are all counted under A's axes (compared there)."""


def _rows(pairs: _Pairs, seed: int) -> _Rows:
    """Every row of the comparison of ``pairs``: the axes, overall, and the axes with no pair."""
    axes, pairs_of = _axis_rows(pairs, seed)
    overall = _axis("overall", pairs.a, pairs.b, seed, pairs.sample, (pairs.only_a, pairs.only_b))
    overall = _decide(overall, overall.p_value, adjusted=False)  # not one of the Holm family: its own p at ALPHA
    unpaired, moved_b = _unpaired_axes(pairs, {axis.axis for axis in axes})
    return _Rows(axes, pairs_of, overall, unpaired, moved_b)


def _axis_rows(pairs: _Pairs, seed: int) -> tuple[list[CompareAxis], list[NDArray[np.intp]]]:
    """A row per axis of A that has pairs, in the order of the axes' names, with verdicts from the p-values
    Holm-adjusted across them; and each row's pairs."""
    names = pairs.run_a.axes
    axes: list[CompareAxis] = []
    pairs_of: list[NDArray[np.intp]] = []
    for code in sorted(range(len(names)), key=lambda c: names[c]):
        rows = np.flatnonzero(pairs.axis == code)
        if rows.size:
            name = names[code]
            in_axis = None if pairs.sample is None else np.unique(pairs.sample[rows], return_inverse=True)[1]
            only = (pairs.unpaired_a.get(name, 0), pairs.unpaired_b.get(name, 0))
            axes.append(_axis(name, pairs.a.take(rows), pairs.b.take(rows), seed, in_axis, only))
            pairs_of.append(rows)
    adjusted = holm([axis.p_value for axis in axes]) if axes else []
    return [_decide(axis, p) for axis, p in zip(axes, adjusted, strict=True)], pairs_of


def _unpaired_axes(pairs: _Pairs, compared: set[str]) -> tuple[list[UnpairedAxis], set[str]]:
    """The axes with records but no pair, by name; and B's axes whose paired records were all ``compared``
    under A's axes."""
    run_b = pairs.run_b
    # a B axis whose paired records all moved to A's axes was compared there: not "no pairs"
    moved_b = {run_b.axes[c] for c in np.unique(run_b.axis[pairs.ib]).tolist()} - compared
    unpaired_a, unpaired_b = pairs.unpaired_a, pairs.unpaired_b
    unpaired = [
        UnpairedAxis(axis=name, only_a=unpaired_a.get(name, 0), only_b=unpaired_b.get(name, 0))
        for name in sorted({*unpaired_a, *unpaired_b} - compared - moved_b)
    ]
    return unpaired, moved_b


def _axis(
    name: str, a: _Side, b: _Side, seed: int, sample: NDArray[np.intp] | None = None, only: tuple[int, int] = (0, 0)
) -> CompareAxis:
    """The comparison of paired rows ``a`` and ``b`` (same length, at least one, same keys in the same order).
    With several epochs, ``sample`` gives each row's sample (0..k-1): the tests and intervals then take one
    unit per sample, the mean of its epochs, since the epochs of one sample are not independent evidence.
    ``only``: the records of A and of B on the axis left out for want of a pair."""
    n = int(a.final.size)
    units_a, units_b = _per_sample(a.final, sample), _per_sample(b.final, sample)
    # means, difference, intervals and test all over the same units (samples, when there are epochs)
    mean_a, low_a, high_a, _ = mean_ci(units_a, seed=seed)
    mean_b, low_b, high_b, _ = mean_ci(units_b, seed=seed)
    ci_a, ci_b = _interval(low_a, high_a), _interval(low_b, high_b)
    paired = paired_comparison(units_a, units_b)
    differing = int(np.count_nonzero(units_b != units_a))
    diff, diff_ci = paired.diff, _interval(paired.low, paired.high)
    p50_a, p95_a = a.percentiles()
    p50_b, p95_b = b.percentiles()
    (cost_a, nothing_a), (cost_b, nothing_b) = a.cost(), b.cost()
    error_a, error_b = float(np.mean(a.error)), float(np.mean(b.error))
    overlap = None if ci_a is None or ci_b is None else ci_a[1] >= ci_b[0] and ci_b[1] >= ci_a[0]
    return CompareAxis(
        axis=name,
        n=n,
        samples=int(units_a.size),
        mean_a=mean_a,
        mean_b=mean_b,
        ci_a=ci_a,
        ci_b=ci_b,
        diff=diff,
        diff_ci=diff_ci,
        diff_ci_method=paired.interval,
        test=paired.test,
        p_value=paired.p_value,
        differing=differing,
        p_attainable=_p_attainable(paired.test, differing),
        p_adjusted=paired.p_value,
        separable=False,
        intervals_overlap=overlap,
        verdict="no_difference",
        error_rate_a=error_a,
        error_rate_b=error_b,
        error_rate_diff=_delta(error_a, error_b),
        errors_both=int(np.count_nonzero(a.error & b.error)),
        latency_p50_ms_a=p50_a,
        latency_p50_ms_b=p50_b,
        latency_p50_diff_ms=_delta(p50_a, p50_b),
        latency_p95_ms_a=p95_a,
        latency_p95_ms_b=p95_b,
        latency_p95_diff_ms=_delta(p95_a, p95_b),
        cost_mean_a=cost_a,
        cost_mean_b=cost_b,
        cost_mean_diff=_delta(cost_a, cost_b),
        billed_nothing_a=nothing_a,
        billed_nothing_b=nothing_b,
        only_a=only[0],
        only_b=only[1],
    )


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _interval(low: float, high: float) -> tuple[float, float] | None:
    return None if np.isnan(low) or np.isnan(high) else (low, high)


def _per_sample(final: NDArray[np.float64], sample: NDArray[np.intp] | None) -> NDArray[np.float64]:
    """Each sample's mean over its rows (``sample``: a sample index per row), or the rows as they are."""
    return final if sample is None else group_means(final, sample)


def _exact_test_name(test: PairedTest) -> str | None:
    """The name of ``test`` when it is exact and its smallest p (``p_attainable``) is known; None when it is not."""
    match test:
        case "mcnemar":
            return "McNemar"
        case "sign-flip":
            return "sign-flip"
        case "paired-t" | "none":
            return None


def _p_attainable(test: PairedTest, differing: int) -> float | None:
    """The smallest two-sided p an exact test can give over pairs of which ``differing`` differ: McNemar's
    depends on the discordant pairs alone, and a sign-flip leaves a zero difference as it is, so both reach
    their least, 2·0.5^differing, when every differing pair differs the same way (for the sign-flip test: only
    the all-plus and all-minus patterns then reach the observed mean). 60 pairs of which 4 differ cannot go
    below 0.125, however many pairs there are."""
    if _exact_test_name(test) is None:
        return None
    return min(1.0, 2.0 * 0.5**differing)


def _decide(axis: CompareAxis, p_decides: float, *, adjusted: bool = True) -> CompareAxis:
    """The axis with its verdict from ``p_decides``, recorded as its ``p_adjusted`` when ``adjusted`` (an axis of
    the Holm family; the overall row's own p is no adjusted one)."""
    separable = p_decides < ALPHA and axis.diff is not None and axis.diff != 0
    verdict: Verdict = "no_difference"
    if separable and axis.diff is not None:
        verdict = "b_better" if axis.diff > 0 else "a_better"
    shown = p_decides if adjusted else None
    return axis.model_copy(update={"p_adjusted": shown, "separable": separable, "verdict": verdict})


__all__ = ["join_keys"]
