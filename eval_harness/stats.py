"""Statistical building blocks for reporting evaluation results with honest uncertainty.

This module is deliberately self-contained: it depends only on numpy, scipy, scikit-learn, the standard
library and ``eval_harness.proportions`` (the Wilson interval without numpy, which the run's summary uses), never
on the rest of ``eval_harness``, so it can be imported and tested in isolation.

Conventions shared by every function:

* A ``confidence`` outside the open interval (0, 1) raises ``ValueError``.
* Binomial intervals with ``n == 0`` return ``(0.0, 1.0)``: with no data every proportion is plausible.
* "No evidence" hypothesis tests (no discordant pairs, no observations) return ``(0.0, 1.0)``.
* No interval of zero width is ever returned as if it were certainty. The mean of one value, or of values
  that are all equal, has no spread to estimate an interval from: the interval helpers return
  ``(nan, nan)`` there, and :func:`mean_ci` names the method ``"none"``. (0/1 scores that are all right or
  all wrong still get a binomial interval: Wilson says how far 5 of 5 may be from 100%.)
* Bootstrap helpers return NaN for empty input instead of raising, so a report can render an empty
  slice without special-casing it.

Which interval. 0/1 scores get Wilson's score interval. Other scores get a Student-t interval clipped to
[0, 1]: a simulation of Beta(2, 5) scores (2,000 draws per size) finds it covers the mean 94% of the time at
2 to 10 items, where the percentile bootstrap covered 50% at 2 items, 73% at 3, 82% at 5 and 88% at 10. The
bootstrap stays available on request (``method="bootstrap"``). Binary and few-valued scores (at most 64
distinct values) are bootstrapped through their counts, which costs milliseconds whatever the number of
items; scores with many distinct values above ``NORMAL_CI_MIN_ITEMS`` (5,000) items get the normal
(central-limit) interval instead of a bootstrap that would take minutes (``"normal"``).

Paired comparisons keep the interval and the test consistent: McNemar's exact test with Newcombe's score
interval for 0/1 pairs; for other scores a Student-t interval on the differences with the paired t-test,
or, below ``SIGN_FLIP_BELOW`` pairs, with the exact sign-flip test.

The t quantile and tail come from ``scipy.special`` (``stdtrit``, ``stdtr``: the routines ``scipy.stats.t``
calls), which imports in a third of the time of ``scipy.stats``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from eval_harness.proportions import check_confidence, check_counts, wilson_half_width, wilson_interval, z_value

if TYPE_CHECKING:  # names only: stats needs no pydantic, which types imports
    from eval_harness.types import PairedInterval, PairedTest

__all__ = [
    "MEAN_CI_METHODS",
    "NORMAL_CI_MIN_ITEMS",
    "NO_INTERVAL",
    "SIGN_FLIP_BELOW",
    "PairedComparison",
    "bonferroni",
    "bootstrap_ci",
    "clopper_pearson_interval",
    "cohen_kappa",
    "expected_calibration_error",
    "holm",
    "is_binary",
    "mcnemar_test",
    "mean_ci",
    "newcombe_paired_interval",
    "normal_ci",
    "paired_bootstrap_test",
    "paired_comparison",
    "pass_at_k",
    "sample_size",
    "t_interval",
    "two_proportion_ztest",
    "wald_interval",
    "wilson_interval",
    "wilson_sample_size",
]

#: Methods accepted by :func:`mean_ci` (besides ``"auto"``).
MEAN_CI_METHODS: Final[tuple[str, ...]] = ("wilson", "clopper-pearson", "wald", "bootstrap")

#: Above this many items with more than 64 distinct values, ``mean_ci(method="bootstrap")`` uses the normal
#: (CLT) interval instead of item resampling, which would take minutes and agrees with it at that size.
NORMAL_CI_MIN_ITEMS: Final[int] = 5_000

#: The method :func:`mean_ci` names when there is no interval: one value, or values that are all equal.
NO_INTERVAL: Final[str] = "none"

#: Below this many pairs of scores other than 0/1, :func:`paired_comparison` takes its p-value from the sign-flip
#: test (exact over every sign pattern) instead of the paired t-test, whose normality it cannot lean on.
SIGN_FLIP_BELOW: Final[int] = 30

# Values that differ by no more than this (relative to their size, at least 1) are equal: the differences
# 0.21 - 0.2 and 0.31 - 0.3 differ in the 17th digit, and a "spread" of float rounding is no spread.
_EQUAL_RTOL: Final[float] = 1e-12

# Up to this many distinct values the bootstrap resamples category counts (one multinomial draw per
# replicate) instead of items; the cost then no longer grows with the number of items.
_MAX_DISTINCT_FOR_COUNTS: Final[int] = 64
# Cheap early exit: if a prefix of this size already has too many distinct values, the whole array
# does too, and we skip the full (sorting) np.unique on data headed for the index path anyway.
_DISTINCT_PROBE: Final[int] = 4096
# Upper bound on the index matrix of the item-resampling path (replicates x items). 2**23 int64
# entries is ~64 MiB, far below the ~50M-entry ceiling while still amortising the Python loop.
_MAX_INDEX_ENTRIES: Final[int] = 1 << 23

# scipy.stats and sklearn are imported inside the functions that use them: together they take well over
# a second to import, and the CLI imports this module on every start, even for commands with no stats.


# --------------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------------


def _as_1d(values: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    # NaN would silently poison every mean and quantile; failing loudly points at the real bug
    # (an unscored item) instead of producing a NaN interval far from its cause.
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values")
    return arr


def _binary_array(arr: NDArray[np.float64]) -> bool:
    return bool(np.all((arr == 0.0) | (arr == 1.0)))


def _all_equal(arr: NDArray[np.float64]) -> bool:
    """True for one value, or values equal up to float rounding (see ``_EQUAL_RTOL``)."""
    if arr.size == 0:
        return False
    return float(np.ptp(arr)) <= _EQUAL_RTOL * max(1.0, float(np.max(np.abs(arr))))


def _clip_to_scores(low: float, high: float, arr: NDArray[np.float64], floor: float) -> tuple[float, float]:
    """``(low, high)`` clipped to ``[floor, 1]`` (scores lie in [0, 1], differences of them in [-1, 1]), widened
    to the data when they lie outside that range."""
    return max(min(floor, float(arr.min())), low), min(max(1.0, float(arr.max())), high)


# --------------------------------------------------------------------------------------------------
# binomial confidence intervals
# --------------------------------------------------------------------------------------------------


def _binom_ci(successes: int, n: int, confidence: float, method: str) -> tuple[float, float]:
    check_confidence(confidence)
    check_counts(successes, n)
    if n == 0:
        return 0.0, 1.0
    from scipy import stats as sps

    ci = sps.binomtest(successes, n).proportion_ci(confidence_level=confidence, method=method)
    # Defensive clamp: scipy stays inside [0, 1] in practice, and callers rely on that contract.
    return max(0.0, float(ci.low)), min(1.0, float(ci.high))


def clopper_pearson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson ("exact", beta-quantile) interval for a binomial proportion.

    Guarantees at least nominal coverage, at the price of being conservative (wider than Wilson).
    Same edge-case rules as :func:`wilson_interval`.
    """
    return _binom_ci(successes, n, confidence, "exact")


def wald_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wald (normal-approximation) interval ``p ± z·sqrt(p(1-p)/n)``, clipped to ``[0, 1]``.

    Provided for comparison with published numbers; it has poor coverage for small ``n`` or ``p`` near
    0/1 (it is zero-width at ``successes`` = 0 or n). Same edge-case rules as :func:`wilson_interval`.
    """
    check_confidence(confidence)
    check_counts(successes, n)
    if n == 0:
        return 0.0, 1.0
    # scipy offers no Wald interval for a proportion, so it is written out here.
    p = successes / n
    half = z_value(confidence) * math.sqrt(p * (1.0 - p) / n)
    return max(0.0, p - half), min(1.0, p + half)


# --------------------------------------------------------------------------------------------------
# bootstrap
# --------------------------------------------------------------------------------------------------


def _few_distinct(arr: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.int64]] | None:
    """Distinct values and their counts, or None when there are more than the count-path limit."""
    if np.unique(arr[:_DISTINCT_PROBE]).size > _MAX_DISTINCT_FOR_COUNTS:
        return None
    values, counts = np.unique(arr, return_counts=True)
    if values.size > _MAX_DISTINCT_FOR_COUNTS:
        return None
    return values, counts.astype(np.int64)


def _bootstrap_means(arr: NDArray[np.float64], n_boot: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """``n_boot`` bootstrap replicates of the mean of ``arr`` (non-empty, finite).

    scipy.stats.bootstrap resamples items, which costs O(n_boot * n) time and memory; for the large,
    mostly discrete score arrays of an eval that is seconds and gigabytes, so the resampling is
    hand-written here. The replicates have exactly the distribution of item resampling, only drawn
    more cheaply when the data are discrete.
    """
    n = arr.size
    if _binary_array(arr):
        # The number of ones in a resample of n items is Binomial(n, p_hat).
        k = int(np.count_nonzero(arr))
        return rng.binomial(n, k / n, size=n_boot).astype(np.float64) / n
    few = _few_distinct(arr)
    if few is not None:
        values, counts = few
        # Category counts of a resample are Multinomial(n, observed frequencies).
        draws = rng.multinomial(n, counts / n, size=n_boot)
        return np.asarray(draws @ values, dtype=np.float64) / n
    chunk = max(1, _MAX_INDEX_ENTRIES // n)
    out = np.empty(n_boot, dtype=np.float64)
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = arr[idx].mean(axis=1)
    return out


def _percentile_interval(replicates: NDArray[np.float64], confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    lo, hi = np.quantile(replicates, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


def _check_n_boot(n_boot: int) -> None:
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")


def bootstrap_ci(scores: ArrayLike, confidence: float = 0.95, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval for the mean of ``scores``.

    Deterministic for a given ``seed``. Empty input returns ``(nan, nan)``, and so does a single value or
    values that are all equal: every resample of them is the same, and an interval of zero width would read
    as certainty. Binary and few-valued scores (at most 64 distinct values)
    are resampled through their counts, so a million-item array takes milliseconds; otherwise items are
    resampled in memory-bounded chunks. Raises ``ValueError`` for non-finite scores, a non-1-D input,
    ``n_boot < 1`` or a ``confidence`` outside (0, 1).
    """
    check_confidence(confidence)
    _check_n_boot(n_boot)
    arr = _as_1d(scores, "scores")
    if arr.size == 0 or _all_equal(arr):
        return math.nan, math.nan
    replicates = _bootstrap_means(arr, n_boot, np.random.default_rng(seed))
    return _percentile_interval(replicates, confidence)


def normal_ci(scores: ArrayLike, confidence: float = 0.95) -> tuple[float, float]:
    """Normal-approximation (central-limit) interval for the mean: ``mean ± z·s/√n``.

    ``s`` is the sample standard deviation (``ddof=1``); the interval is clipped to the range of the
    scores, which bounds any mean of them. Empty input, a single value or values that are all equal return
    ``(nan, nan)``. Used instead of the bootstrap for large samples with many distinct values, where the two
    agree and item resampling would take minutes.
    """
    check_confidence(confidence)
    arr = _as_1d(scores, "scores")
    if arr.size == 0 or _all_equal(arr):
        return math.nan, math.nan
    mean = float(arr.mean())
    half = z_value(confidence) * float(arr.std(ddof=1)) / math.sqrt(arr.size)
    return max(float(arr.min()), mean - half), min(float(arr.max()), mean + half)


def _t_quantile(confidence: float, df: int) -> float:
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + confidence / 2.0))


def _t_tail(t: float, df: int) -> float:
    """Two-sided p-value of a t statistic with ``df`` degrees of freedom (as ``scipy.stats.ttest_rel``)."""
    from scipy.special import stdtr

    return float(min(1.0, 2.0 * stdtr(df, -abs(t))))


def t_interval(scores: ArrayLike, confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval for the mean: ``mean ± t(n-1)·s/√n`` with ``s`` the sample standard deviation.

    Not clipped (``mean_ci`` clips it to [0, 1]). Fewer than two values, or values that are all equal, return
    ``(nan, nan)``: there is no spread to estimate from. At 2 to 10 scores it keeps close to its nominal
    coverage where the percentile bootstrap falls far short (see the module docstring).
    """
    check_confidence(confidence)
    arr = _as_1d(scores, "scores")
    if arr.size < 2 or _all_equal(arr):
        return math.nan, math.nan
    mean = float(arr.mean())
    half = _t_quantile(confidence, arr.size - 1) * float(arr.std(ddof=1)) / math.sqrt(arr.size)
    return mean - half, mean + half


def _many_distinct(arr: NDArray[np.float64]) -> bool:
    """True when ``arr`` is large and too varied for count resampling: the bootstrap would take minutes."""
    return arr.size > NORMAL_CI_MIN_ITEMS and _few_distinct(arr) is None


def _paired_arrays(scores_a: ArrayLike, scores_b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = _as_1d(scores_a, "scores_a")
    b = _as_1d(scores_b, "scores_b")
    if a.size != b.size:
        raise ValueError(f"paired scores must have the same length, got {a.size} and {b.size}")
    return a, b


def paired_bootstrap_test(
    scores_a: ArrayLike, scores_b: ArrayLike, n_boot: int = 10000, seed: int = 0
) -> tuple[float, float, float]:
    """Paired bootstrap for the difference in mean score between two systems on the same items.

    Returns ``(mean(scores_b) - mean(scores_a), ci_low, ci_high)``: the difference is **B minus A**, so
    a positive value means B scored higher, and the 95% percentile interval excluding 0 indicates a
    difference at the 5% level. Items are resampled jointly by bootstrapping the per-item differences
    ``b - a`` (for 0/1 scores these lie in {-1, 0, 1}, so the fast count-resampling path applies).
    Empty input returns ``(nan, nan, nan)``; differences that are all equal (one item included) give the
    difference with ``(nan, nan)``: no interval. Inputs of different length raise ``ValueError``.
    :func:`paired_comparison` is what ``compare`` uses: its interval agrees with its test.
    """
    _check_n_boot(n_boot)
    a, b = _paired_arrays(scores_a, scores_b)
    if a.size == 0:
        return math.nan, math.nan, math.nan
    lo, hi = bootstrap_ci(b - a, n_boot=n_boot, seed=seed)
    return float(b.mean() - a.mean()), lo, hi


@dataclass(frozen=True)
class PairedComparison:
    """Two systems scored on the same items: the difference B − A, its interval and a paired test."""

    diff: float
    """``mean(scores_b) - mean(scores_a)``: positive when B scored higher."""
    low: float
    """Low end of the interval of ``diff``; NaN when there is none (``interval == "none"``)."""
    high: float
    p_value: float
    """Two-sided p-value of "no difference" under ``test``."""
    test: PairedTest
    """``"mcnemar"`` (exact, 0/1 scores), ``"sign-flip"`` (fewer than ``SIGN_FLIP_BELOW`` pairs, or differences
    that are all equal), ``"paired-t"`` or ``"none"`` (no items)."""
    interval: PairedInterval
    """How ``low``/``high`` were computed: ``"newcombe"`` (0/1 scores), ``"t"``, or ``"none"``: no items, or
    differences that are all equal (one pair included), which leave no spread to estimate an interval from."""


def paired_comparison(scores_a: ArrayLike, scores_b: ArrayLike, confidence: float = 0.95) -> PairedComparison:
    """Compare two systems on the same items: the difference B − A with its interval and a paired test.

    The interval is chosen to agree with the test as far as two procedures can:

    * Both 0/1: McNemar's exact test on the discordant pairs, and Newcombe's score interval for paired
      proportions (a function of the four counts only: microseconds at any size).
    * Otherwise a Student-t interval on the per-item differences, and the paired t-test at
      ``SIGN_FLIP_BELOW`` pairs or more (the same t statistic: the interval excludes 0 exactly when p < 1 −
      confidence). Below that, the p-value is the sign-flip (paired randomization) test's, exact over the 2^n
      sign patterns; the t interval may then exclude 0 while the test does not reject: the test is the one
      that decides.
    * Differences that are all equal (one pair included): no interval (``interval="none"``), and the exact
      sign-flip p of 2/2^n (1 when the difference is 0): only the all-plus and all-minus sign patterns reach
      the observed mean.

    Empty input gives NaN difference and interval with ``p_value=1`` and ``test="none"``. Inputs of
    different length raise ``ValueError``.
    """
    check_confidence(confidence)
    a, b = _paired_arrays(scores_a, scores_b)
    if a.size == 0:
        return PairedComparison(math.nan, math.nan, math.nan, 1.0, "none", "none")
    diff = b - a
    mean_diff = float(b.mean() - a.mean())
    if _binary_array(a) and _binary_array(b):
        a_only = int(np.count_nonzero(diff < 0))
        b_only = int(np.count_nonzero(diff > 0))
        both = int(np.count_nonzero((a == 1.0) & (b == 1.0)))
        low, high = newcombe_paired_interval(both, a_only, b_only, a.size - both - a_only - b_only, confidence)
        _, p_value = mcnemar_test(a_only, b_only, exact=True)
        return PairedComparison(mean_diff, low, high, p_value, "mcnemar", "newcombe")
    if _all_equal(diff):
        zero = abs(mean_diff) <= _EQUAL_RTOL
        p_value = 1.0 if zero else min(1.0, 2.0 ** (1 - diff.size))
        return PairedComparison(mean_diff, math.nan, math.nan, p_value, "sign-flip", "none")
    n = diff.size
    centre = float(diff.mean())
    se = float(diff.std(ddof=1)) / math.sqrt(n)
    half = _t_quantile(confidence, n - 1) * se
    low, high = _clip_to_scores(centre - half, centre + half, diff, -1.0)
    if n < SIGN_FLIP_BELOW:
        return PairedComparison(mean_diff, low, high, _sign_flip_p_value(diff), "sign-flip", "t")
    # scipy.stats.ttest_rel(b, a) from the mean and SD the interval already needs (same statistic and p)
    return PairedComparison(mean_diff, low, high, _t_tail(centre / se, n - 1), "paired-t", "t")


def newcombe_paired_interval(
    both: int, a_only: int, b_only: int, neither: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Newcombe's score interval for the difference of paired proportions ``p_B - p_A`` (method 10 of
    Newcombe 1998, "Improved confidence intervals for the difference between binomial proportions based on
    paired data", Statistics in Medicine 17:2635-2650).

    The counts are of the 2x2 table of paired outcomes: both right, A right only, B right only, both wrong.
    Each proportion's Wilson interval is combined with the correlation phi of the pairs (taken as 0 when a
    margin is empty), continuity-corrected as Newcombe and Altman's "Statistics with Confidence" (p. 52) do.
    Unlike a bootstrap of the differences it never has zero width: 5 of 5 pairs won by B give [+38.6, +100]
    points. No library in our set has it (statsmodels has the unpaired version only), so it is written out
    here and checked against a transliteration of biostatUZH's confIntPairedProportion (R) with statsmodels'
    Wilson intervals.
    ``n == 0`` gives ``(-1.0, 1.0)``.
    """
    for count in (both, a_only, b_only, neither):
        if count < 0:
            raise ValueError(f"paired counts must be non-negative, got {(both, a_only, b_only, neither)}")
    n = both + a_only + b_only + neither
    if n == 0:
        return -1.0, 1.0
    right_a, right_b = both + a_only, both + b_only
    p_a, p_b = right_a / n, right_b / n
    low_a, high_a = wilson_interval(right_a, n, confidence)
    low_b, high_b = wilson_interval(right_b, n, confidence)
    margins = right_a * (b_only + neither) * right_b * (a_only + neither)
    # the correlation of the pairs with Newcombe's continuity correction: a positive AD - BC is reduced by n/2
    # (not below 0), a negative one is kept; without it two identical 5-item runs got ±8.7 points, not ±30.7
    association = float(both * neither - a_only * b_only)
    if association > 0:
        association = max(0.0, association - n / 2)
    phi = 0.0 if margins == 0 else association / math.sqrt(margins)
    theta = p_b - p_a
    down = (p_b - low_b) ** 2 - 2.0 * phi * (p_b - low_b) * (high_a - p_a) + (high_a - p_a) ** 2
    up = (high_b - p_b) ** 2 - 2.0 * phi * (high_b - p_b) * (p_a - low_a) + (p_a - low_a) ** 2
    return max(-1.0, theta - math.sqrt(max(0.0, down))), min(1.0, theta + math.sqrt(max(0.0, up)))


def _sign_flip_p_value(diff: NDArray[np.float64]) -> float:
    """Two-sided p-value of "mean difference = 0" by the paired randomization (sign-flip) test, exact over all
    2^n sign patterns: the share of patterns whose signed sum is at least as far from 0 as the observed one.

    Written out rather than ``scipy.stats.permutation_test``: scipy enumerates the 2^n patterns (2^29 at 29
    pairs: minutes and gigabytes) or draws a Monte Carlo sample of them, whose p near 0.05 moves by ±0.002 with
    the seed. Here each half of the items lists its own 2^(n/2) signed sums, and one sorted half is counted
    against the other ("meet in the middle"): exact, in milliseconds, for every n below ``SIGN_FLIP_BELOW``.
    A sum within 100 machine epsilons of the observed one, relative to the differences' size (sums of the same
    values added in another order differ by rounding), counts as reaching it; scipy's tolerance is relative to
    the observed sum, so at a sum that is 0 but for rounding (+0.3 −0.1 −0.2) it counted about half the patterns
    as beyond it (p 0.9 where every pattern reaches it: p 1)."""
    observed = abs(float(diff.sum()))
    reach = observed - 100 * float(np.finfo(np.float64).eps) * float(np.abs(diff).sum())
    if diff.size < 2 or reach <= 0.0:  # one item: its two sign patterns are as extreme as each other
        return 1.0
    half = diff.size // 2
    first, second = _signed_sums(diff[:half]), np.sort(_signed_sums(diff[half:]))
    # for each sum of the first half, the sums of the second that bring the pattern's total to ``reach`` or more
    beyond = second.size - np.searchsorted(second, reach - first, side="left")
    one_tail = float(beyond.sum()) / 2.0**diff.size
    return min(1.0, 2.0 * one_tail)  # the null distribution is symmetric: both tails alike


def _signed_sums(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """The sum of ``values`` under each of the 2^len sign patterns."""
    sums = np.zeros(1)
    for value in values:
        sums = np.concatenate((sums + value, sums - value))
    return sums


def is_binary(scores: ArrayLike) -> bool:
    """True when every score is exactly 0 or 1 (booleans count). Vacuously True for empty input."""
    arr = np.asarray(scores, dtype=np.float64)
    return _binary_array(arr)


def mean_ci(
    scores: ArrayLike, method: str = "auto", confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float, str]:
    """Mean of ``scores`` (in [0, 1]) with a confidence interval: ``(mean, low, high, method_used)``.

    ``method`` is one of ``"auto"``, ``"wilson"``, ``"clopper-pearson"``, ``"wald"``, ``"bootstrap"``.

    * 0/1 scores: ``"auto"`` is Wilson; the binomial methods are used as asked. ``"bootstrap"`` and ``"wald"``
      have zero width when every score is 1 or every score is 0, so there they give Wilson's interval and
      ``method_used`` says ``"wilson"``.
    * Other scores: a Student-t interval clipped to [0, 1] (``"t"``), whatever binomial method was asked
      (those apply to 0/1 scores only). ``"bootstrap"`` gives the percentile bootstrap, or above
      ``NORMAL_CI_MIN_ITEMS`` scores with more than 64 distinct values the normal interval of
      :func:`normal_ci` (``"normal"``), which agrees with it at that size and costs no resampling.
    * One score, or scores that are all equal (and not all 0 or all 1): no interval, ``(mean, nan, nan,
      "none")`` (``NO_INTERVAL``). There is no spread to estimate from, and ``[v, v]`` would read as certainty.

    Empty input returns ``(nan, nan, nan, method)``. Raises ``ValueError`` for an unknown method.
    """
    if method != "auto" and method not in MEAN_CI_METHODS:
        raise ValueError(f"unknown method {method!r}; expected 'auto' or one of {', '.join(MEAN_CI_METHODS)}")
    check_confidence(confidence)
    arr = _as_1d(scores, "scores")
    if arr.size == 0:
        return math.nan, math.nan, math.nan, method
    if _binary_array(arr):
        k, n = int(np.count_nonzero(arr)), int(arr.size)
        if method == "bootstrap" and 0 < k < n:
            low, high = bootstrap_ci(arr, confidence=confidence, seed=seed)
            return k / n, low, high, method
        used = method if method in ("clopper-pearson", "wald") else "wilson"
        if used == "wald" and k in (0, n):
            used = "wilson"
        interval = {"wilson": wilson_interval, "clopper-pearson": clopper_pearson_interval, "wald": wald_interval}
        low, high = interval[used](k, n, confidence)
        return k / n, low, high, used
    mean = float(arr.mean())
    if _all_equal(arr):
        return mean, math.nan, math.nan, NO_INTERVAL
    if method == "bootstrap":
        if _many_distinct(arr):
            low, high = normal_ci(arr, confidence=confidence)
            return mean, low, high, "normal"
        low, high = bootstrap_ci(arr, confidence=confidence, seed=seed)
        return mean, low, high, method
    low, high = t_interval(arr, confidence)
    low, high = _clip_to_scores(low, high, arr, 0.0)
    return mean, low, high, "t"


# --------------------------------------------------------------------------------------------------
# hypothesis tests
# --------------------------------------------------------------------------------------------------


def mcnemar_test(b: int, c: int, exact: bool = True) -> tuple[float, float]:
    """McNemar's test for paired binary outcomes; returns ``(statistic, p_value)``.

    ``b`` and ``c`` are the discordant counts (A right / B wrong and A wrong / B right).
    ``exact=True``: two-sided exact binomial test of ``b`` vs ``c`` under p = 0.5; the statistic is
    ``min(b, c)``. ``exact=False``: chi-square with 1 degree of freedom and continuity correction,
    ``max(|b - c| - 1, 0)**2 / (b + c)``. The correction is floored at zero so that ``b == c`` gives
    statistic 0 and p = 1, as R's ``mcnemar.test`` does (it drops the correction when b == c);
    statsmodels subtracts the 1 anyway, reporting ``1 / (b + c)`` and a p-value below 1 for perfectly
    balanced discordance. ``b + c == 0`` returns ``(0.0, 1.0)``.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    total = b + c
    if total == 0:
        return 0.0, 1.0
    if exact:
        return float(min(b, c)), _binomial_half_two_sided(min(b, c), total)
    # The corrected statistic on the chi-square(1) distribution, whose survival function is erfc(sqrt(x/2)).
    stat = max(abs(b - c) - 1, 0) ** 2 / total
    return float(stat), math.erfc(math.sqrt(stat / 2.0))


def _binomial_half_two_sided(k: int, n: int) -> float:
    """Two-sided exact binomial p-value of ``k`` successes in ``n`` trials at p = 1/2 (``k <= n/2``).

    At p = 1/2 the distribution is symmetric, so the outcomes at most as likely as ``k`` are the two tails
    beyond ``k`` and ``n - k``: p = 2·P(X <= k), capped at 1 (this is what scipy's binomtest computes).
    Written with numpy because importing scipy.stats takes 1-2 s, more than a whole comparison of a
    million records. The terms C(n, i)/2^n are built in log space by the recurrence
    C(n, i+1) = C(n, i)·(n-i)/(i+1), so n in the millions does not overflow; the rounding of the running
    sum leaves a relative error below 1e-7 (2e-8 against scipy at n = 600,000; 1e-15 for n < 100).
    """
    i = np.arange(k, dtype=np.float64)
    log_terms = np.empty(k + 1, dtype=np.float64)
    log_terms[0] = -n * math.log(2.0)
    log_terms[1:] = log_terms[0] + np.cumsum(np.log(n - i) - np.log(i + 1.0))
    top = float(log_terms.max())
    tail = math.exp(top) * float(np.sum(np.exp(log_terms - top)))
    return min(1.0, 2.0 * tail)


def two_proportion_ztest(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float]:
    """Two-sided z-test for equal proportions with the pooled standard error; returns ``(z, p)``.

    ``z`` is positive when ``k1/n1 > k2/n2``. For independent samples only: two systems scored on the
    same items should use :func:`mcnemar_test` or :func:`paired_bootstrap_test`. When there is no
    evidence to test (an empty sample, or a pooled proportion of 0 or 1 so equal proportions) the
    result is ``(0.0, 1.0)``. Raises ``ValueError`` if a count is outside ``[0, n]``.
    """
    check_counts(k1, n1)
    check_counts(k2, n2)
    if n1 == 0 or n2 == 0:
        return 0.0, 1.0
    # scipy has no two-proportion z-test (chi2_contingency gives z**2 but loses the sign).
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2))
    if se == 0.0:
        return 0.0, 1.0
    z = (k1 / n1 - k2 / n2) / se
    # the two-sided normal tail 2·Φ(−|z|) = erfc(|z|/√2): exact in the standard library, where scipy.stats
    # would cost seconds to import for norm.sf alone
    return z, math.erfc(abs(z) / math.sqrt(2.0))


# --------------------------------------------------------------------------------------------------
# metrics
# --------------------------------------------------------------------------------------------------


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimator of Chen et al. (2021): ``1 - C(n-c, k) / C(n, k)``.

    ``n`` samples were drawn of which ``c`` passed. Returns 1.0 when ``n - c < k`` (every k-subset
    contains a pass). Raises ``ValueError`` for ``k < 1``, ``k > n`` or ``c`` outside ``[0, n]``.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got k={k}")
    if k > n:
        raise ValueError(f"k must not exceed the number of samples n; got k={k}, n={n}")
    if not (0 <= c <= n):
        raise ValueError(f"c must be in [0, n]; got c={c}, n={n}")
    if n - c < k:
        return 1.0
    if c == 0:
        return 0.0  # the product below is 1 exactly, and -expm1(0) is -0.0
    # C(n-c, k)/C(n, k) = prod_{i=n-c+1}^{n} (1 - k/i): the binomials themselves overflow floats for
    # large n. Summing logs and using expm1 keeps full relative precision when pass@k is tiny.
    i = np.arange(n - c + 1, n + 1, dtype=np.float64)
    return float(-np.expm1(np.sum(np.log1p(-k / i))))


def cohen_kappa(labels_a: ArrayLike, labels_b: ArrayLike) -> float:
    """Cohen's kappa between two raters (e.g. a judge model and a human) over the same items.

    Delegates to ``sklearn.metrics.cohen_kappa_score``. Kappa is 0/0 when both raters used one and the
    same label for every item; that perfect agreement is defined here as 1.0 (sklearn returns NaN).
    Raises ``ValueError`` for empty or unequal-length inputs.
    """
    a, b = list(np.asarray(labels_a).ravel()), list(np.asarray(labels_b).ravel())
    if len(a) != len(b):
        raise ValueError(f"label sequences must have the same length, got {len(a)} and {len(b)}")
    if not a:
        raise ValueError("cohen_kappa needs at least one labelled item")
    if len(set(a) | set(b)) == 1:
        return 1.0
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(a, b))


def expected_calibration_error(confidences: ArrayLike, labels: ArrayLike, bins: int = 10) -> float:
    """Expected calibration error with ``bins`` equal-width bins on [0, 1], weighted by bin size.

    ``ECE = sum_b (|B_b| / N) * |accuracy(B_b) - mean confidence(B_b)|``, where ``labels`` are 1 for a
    correct prediction and 0 otherwise. Bins are right-closed ``(lo, hi]`` with 0 falling in the first
    bin, matching ``sklearn.calibration.calibration_curve``. Empty input returns NaN. Raises
    ``ValueError`` for confidences outside [0, 1], non-binary labels, mismatched lengths or ``bins < 1``.
    """
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    conf = _as_1d(confidences, "confidences")
    lab = _as_1d(labels, "labels")
    if conf.size != lab.size:
        raise ValueError(f"confidences and labels must have the same length, got {conf.size} and {lab.size}")
    if conf.size == 0:
        return math.nan
    if np.any((conf < 0.0) | (conf > 1.0)):
        raise ValueError("confidences must lie in [0, 1]")
    if not _binary_array(lab):
        raise ValueError("labels must be 0/1 correctness indicators")
    # sklearn's calibration_curve drops empty bins and does not return bin sizes, so the weighted sum
    # is computed here; the binning rule is the same as sklearn's.
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.searchsorted(edges[1:-1], conf)
    conf_sum = np.bincount(idx, weights=conf, minlength=bins)
    acc_sum = np.bincount(idx, weights=lab, minlength=bins)
    # |sum(acc) - sum(conf)| / N per bin equals (|B|/N)·|mean acc - mean conf| and needs no division
    # by empty bin sizes.
    return float(np.sum(np.abs(acc_sum - conf_sum)) / conf.size)


def _check_size_arguments(margin: float, p: float, confidence: float) -> None:
    check_confidence(confidence)
    if not (0.0 < margin <= 1.0):
        raise ValueError(f"margin must be in (0, 1], got {margin!r}")
    if not (0.0 <= p <= 1.0):
        raise ValueError(f"p must be in [0, 1], got {p!r}")


def wilson_sample_size(margin: float, p: float = 0.5, confidence: float = 0.95) -> int:
    """The fewest items n at which a score near ``p`` — floor(pn) or ceil(pn) of n right — has a Wilson interval
    at most ``2 * margin`` wide, and keeps it at every larger n.

    Unlike ``sample_size``'s normal approximation this stays honest near 0 and 1, where the interval is
    asymmetric and the approximation's p(1-p) collapses (p = 0 gave "1 sample", p = 0.99 gave 43 where 42 of
    43 right is still 87.9–99.6). Whole counts make the width move in steps: at p = 0.99 the first n that fits
    is 88 (87 or 88 of 88 right), but 99 of 101 is 93.07–99.46, 6.4 points; from 108 on, every n fits. A
    planner adds samples, so the size is where fitting stops depending on which n the run ends at. Raises
    ``ValueError`` as ``sample_size`` does.
    """
    _check_size_arguments(margin, p, confidence)
    z = z_value(confidence)

    def bound(n: int) -> float:
        # the whole count nearer 50% is within 1/n of p, on 50%'s side (p = 0 and 1 are whole counts at every n),
        # and the half-width grows toward 50% and falls with n: so this bounds n's and every larger n's
        toward = p if p in (0.0, 1.0) else (min(p + 1 / n, 0.5) if p < 0.5 else max(p - 1 / n, 0.5))
        return wilson_half_width(toward, n, z)

    low, high = 1, 1
    while bound(high) > margin:
        if high > 10**12:
            raise ValueError(f"margin {margin!r} is too small: no practical number of samples gives it")
        low, high = high, high * 2
    while low < high:  # the fewest n whose bound is within the margin: that n and every larger one fit
        middle = (low + high) // 2
        if bound(middle) <= margin:
            high = middle
        else:
            low = middle + 1
    # the bound is loose by up to a count: the whole counts themselves may fit from a few n earlier
    n = high
    while n > 1 and max(wilson_half_width(k / (n - 1), n - 1, z) for k in _whole_counts(p, n - 1)) <= margin:
        n -= 1
    return n


def _whole_counts(p: float, n: int) -> set[int]:
    """What a run of ``n`` items scoring near ``p`` gets right: floor(pn) or ceil(pn)."""
    return {math.floor(p * n), math.ceil(p * n)}


def sample_size(margin: float, p: float = 0.5, confidence: float = 0.95, *, sd: float | None = None) -> int:
    """Items needed for a normal-approximation interval of half-width ``margin``: ``ceil(z² p(1-p) / m²)``.

    ``p = 0.5`` (the default) is the worst case for 0/1 scores (and bounds the variance of any score in
    [0, 1]). For other scores pass ``sd``, their standard deviation: ``ceil(z² sd² / m²)``. At least 1 is
    returned even for ``p`` of 0 or 1 (callers estimating ``p`` from a sample should not pass 0 or 1: an
    interval's end nearer 0.5 is the honest figure). Raises ``ValueError`` for ``margin`` outside (0, 1],
    ``p`` outside [0, 1], a negative ``sd`` or a bad ``confidence``.
    """
    _check_size_arguments(margin, p, confidence)
    if sd is not None and not (sd >= 0.0 and math.isfinite(sd)):
        raise ValueError(f"sd must be a non-negative number, got {sd!r}")
    variance = p * (1.0 - p) if sd is None else sd * sd
    squared = margin**2
    raw = z_value(confidence) ** 2 * variance / squared if squared > 0.0 else math.inf
    if not math.isfinite(raw):
        raise ValueError(f"margin {margin!r} is too small: no finite number of samples gives it")
    # Round away float noise first so an exact integer like 100.00000000000001 does not become 101.
    return max(1, math.ceil(round(raw, 9)))


# --------------------------------------------------------------------------------------------------
# multiple comparisons
# --------------------------------------------------------------------------------------------------


def _p_array(p_values: ArrayLike) -> NDArray[np.float64]:
    p = _as_1d(p_values, "p_values")
    if np.any((p < 0.0) | (p > 1.0)):
        raise ValueError("p-values must lie in [0, 1]")
    return p


# scipy.stats.false_discovery_control covers only Benjamini-Hochberg/Yekutieli (FDR), not these
# family-wise corrections, so Bonferroni and Holm are written out here.


def bonferroni(p_values: ArrayLike) -> list[float]:
    """Bonferroni-adjusted p-values ``min(1, m·p)``, in the input order."""
    p = _p_array(p_values)
    return [float(x) for x in np.minimum(1.0, p * p.size)]


def holm(p_values: ArrayLike) -> list[float]:
    """Holm step-down adjusted p-values, in the input order.

    The i-th smallest p-value (1-based) is multiplied by ``m - i + 1``; a running maximum makes the
    adjusted values monotone in the raw ones, and they are capped at 1. Never larger than Bonferroni,
    with the same family-wise error control.
    """
    p = _p_array(p_values)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.minimum(1.0, stepped)
    return [float(x) for x in adjusted]
