"""Epochs (pass@k and agreement across repeated samplings) and the distributions of scorers' values."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eval_harness.aggregate._arrays import F64
from eval_harness.aggregate._columns import RunColumns
from eval_harness.stats import pass_at_k


@dataclass(frozen=True)
class EpochStats:
    """Repeated sampling of the same items (epochs > 1) over one axis or the whole run."""

    samples: int
    """Distinct sample ids."""
    k: int
    """The epoch count of the run: pass@k is reported for k = 1 and k = this."""
    pass_at_1: float | None
    pass_at_k: float | None
    complete_samples: int
    """Samples with all k epochs recorded: pass@k is their mean (fewer after an interruption)."""
    agreement: float | None
    """Share of samples (with two or more epochs) whose epochs all passed or all failed."""
    pairwise_agreement: float | None
    """Mean over samples of the share of epoch pairs with the same pass/fail outcome."""


def epoch_stats(columns: RunColumns, epochs: int) -> EpochStats:
    """pass@1 and pass@``epochs`` with the unbiased estimator, and the per-sample agreement across epochs.

    A sample's n is the number of its epochs recorded and c the number that passed (an error fails).
    """
    if columns.n == 0:
        return EpochStats(0, epochs, None, None, 0, None, None)
    _, group = np.unique(columns.sample_hash, axis=0, return_inverse=True)
    group = group.reshape(-1)
    n = np.bincount(group)
    c = np.bincount(group, weights=(columns.passed & ~columns.error).astype(np.float64)).astype(np.int64)
    # pass@k depends only on (n, c) and n <= epochs in practice: tabulate it instead of calling per sample.
    table: dict[tuple[int, int, int], float] = {}

    def estimate(k: int) -> tuple[float | None, int]:
        eligible = n >= k
        if not eligible.any():
            return None, 0
        pairs = np.stack((n[eligible], c[eligible]), axis=1)
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        values = np.array([table.setdefault((int(a), int(b), k), pass_at_k(int(a), int(b), k)) for a, b in unique])
        return float(values[inverse.reshape(-1)].mean()), int(eligible.sum())

    at_1, _ = estimate(1)
    at_k, complete = estimate(epochs)
    multi = n >= 2
    agreement = pairwise = None
    if multi.any():
        nm, cm = n[multi].astype(np.float64), c[multi].astype(np.float64)
        agreement = float(np.mean((cm == 0) | (cm == nm)))
        pairs_total = nm * (nm - 1) / 2
        pairwise = float(np.mean((cm * (cm - 1) / 2 + (nm - cm) * (nm - cm - 1) / 2) / pairs_total))
    return EpochStats(int(n.size), epochs, at_1, at_k, complete, agreement, pairwise)


@dataclass(frozen=True)
class ScorerDistribution:
    """The values one scorer gave: summary statistics and a 10-bin histogram over [0, 1]."""

    name: str
    n: int
    mean: float | None
    median: float | None
    std: float | None
    p10: float | None
    p90: float | None
    histogram: list[int]
    """Counts in the bins [0, 0.1), [0.1, 0.2), ..., [0.9, 1.0]."""


def scorer_distribution(name: str, values: F64, bins: int = 10) -> ScorerDistribution:
    """Summary of one scorer's values (NaN = no value, skipped)."""
    known = values[~np.isnan(values)]
    # binned by hand: np.histogram's edges are float sums (0.30000000000000004), which put a score of exactly
    # 0.3, 0.6 or 0.7 (a rubric's tenths) one bin low; rounding first keeps 0.1 * 3 in the bin of 0.3
    index = np.minimum(np.floor(np.round(np.clip(known, 0.0, 1.0) * bins, 9)), bins - 1).astype(np.int64)
    counts = np.bincount(index, minlength=bins)
    if not known.size:
        return ScorerDistribution(name, 0, None, None, None, None, None, counts.tolist())
    p10, median, p90 = np.percentile(known, [10, 50, 90]).tolist()
    return ScorerDistribution(
        name=name,
        n=int(known.size),
        mean=float(known.mean()),
        median=float(median),
        std=float(known.std(ddof=1)) if known.size > 1 else None,  # one value has no spread to estimate
        p10=float(p10),
        p90=float(p90),
        histogram=[int(x) for x in counts],
    )


def scorer_distributions(columns: RunColumns) -> list[ScorerDistribution]:
    """One distribution per scorer, in the task's order."""
    return [scorer_distribution(name, values) for name, values in columns.scorers.items()]


__all__ = ["EpochStats", "ScorerDistribution", "epoch_stats", "scorer_distribution", "scorer_distributions"]
