"""Statistical building blocks for reporting evaluation results with honest uncertainty.

This module is deliberately self-contained: it depends only on numpy, scipy, scikit-learn and the
standard library, never on the rest of ``eval_harness``, so it can be imported and tested in isolation.

Conventions shared by every function:

* A ``confidence`` outside the open interval (0, 1) raises ``ValueError``.
* Binomial intervals with ``n == 0`` return ``(0.0, 1.0)``: with no data every proportion is plausible.
* "No evidence" hypothesis tests (no discordant pairs, no observations) return ``(0.0, 1.0)``.
* Bootstrap helpers return NaN for empty input instead of raising, so a report can render an empty
  slice without special-casing it.

Scale. Binary and few-valued scores (at most 64 distinct values) are bootstrapped through their counts,
which costs milliseconds whatever the number of items. Scores with many distinct values have to be
resampled item by item (about 56 s for 2,000 replicates of 1,000,000 items), so :func:`mean_ci` and
:func:`paired_comparison` switch to the normal (central-limit) interval above ``NORMAL_CI_MIN_ITEMS``
(5,000) such items and say so in the method they return (``"normal"``, ``"paired-normal"``). At that
size the two intervals agree to within the bootstrap's own Monte-Carlo error: on skewed Beta(0.3, 3),
uniform and Beta(5, 1) samples of 5,000 items their end points differ by 1.5-3.5% of the interval's
width, the same spread two bootstrap seeds give. Below the threshold the bootstrap costs at most about
0.5 s per call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from eval_harness.proportions import check_confidence, check_counts, wilson_interval, z_value

__all__ = [
    "MEAN_CI_METHODS",
    "NORMAL_CI_MIN_ITEMS",
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
    "normal_ci",
    "paired_bootstrap_test",
    "paired_comparison",
    "pass_at_k",
    "sample_size",
    "two_proportion_ztest",
    "wald_interval",
    "wilson_interval",
]

#: Methods accepted by :func:`mean_ci` (besides ``"auto"``).
MEAN_CI_METHODS: Final[tuple[str, ...]] = ("wilson", "clopper-pearson", "wald", "bootstrap")

#: Above this many items with more than 64 distinct values, :func:`mean_ci` and :func:`paired_comparison`
#: use the normal (CLT) interval instead of item resampling (see the module docstring for why it is safe).
NORMAL_CI_MIN_ITEMS: Final[int] = 5_000

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

    Deterministic for a given ``seed``. Empty input returns ``(nan, nan)``; a constant input (including
    a single value ``v``) returns ``(v, v)``. Binary and few-valued scores (at most 64 distinct values)
    are resampled through their counts, so a million-item array takes milliseconds; otherwise items are
    resampled in memory-bounded chunks. Raises ``ValueError`` for non-finite scores, a non-1-D input,
    ``n_boot < 1`` or a ``confidence`` outside (0, 1).
    """
    check_confidence(confidence)
    _check_n_boot(n_boot)
    arr = _as_1d(scores, "scores")
    if arr.size == 0:
        return math.nan, math.nan
    if np.all(arr == arr[0]):
        # Summing n copies of v and dividing by n need not give back v exactly; report v itself.
        v = float(arr[0])
        return v, v
    replicates = _bootstrap_means(arr, n_boot, np.random.default_rng(seed))
    return _percentile_interval(replicates, confidence)


def normal_ci(scores: ArrayLike, confidence: float = 0.95) -> tuple[float, float]:
    """Normal-approximation (central-limit) interval for the mean: ``mean ± z·s/√n``.

    ``s`` is the sample standard deviation (``ddof=1``); the interval is clipped to the range of the
    scores, which bounds any mean of them. Empty input returns ``(nan, nan)``; a single value or a constant
    input ``v`` returns ``(v, v)``. Used instead of the bootstrap for large samples with many distinct
    values, where the two agree and item resampling would take minutes.
    """
    check_confidence(confidence)
    arr = _as_1d(scores, "scores")
    if arr.size == 0:
        return math.nan, math.nan
    if arr.size == 1 or np.all(arr == arr[0]):
        v = float(arr[0])
        return v, v
    mean = float(arr.mean())
    half = z_value(confidence) * float(arr.std(ddof=1)) / math.sqrt(arr.size)
    return max(float(arr.min()), mean - half), min(float(arr.max()), mean + half)


def _many_distinct(arr: NDArray[np.float64]) -> bool:
    """True when ``arr`` is large and too varied for count resampling: the bootstrap would take minutes."""
    return arr.size > NORMAL_CI_MIN_ITEMS and _few_distinct(arr) is None


def _bootstrap_p_value(replicates: NDArray[np.float64], n_boot: int) -> float:
    # Percentile-bootstrap p-value for "mean difference = 0", the inversion of the percentile interval;
    # the +1 terms keep it above zero (Davison & Hinkley 1997, eq. 4.11), so Holm can still order it.
    below = int(np.count_nonzero(replicates <= 0.0))
    above = int(np.count_nonzero(replicates >= 0.0))
    return min(1.0, 2.0 * (min(below, above) + 1) / (n_boot + 1))


def _paired_arrays(scores_a: ArrayLike, scores_b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a = _as_1d(scores_a, "scores_a")
    b = _as_1d(scores_b, "scores_b")
    if a.size != b.size:
        raise ValueError(f"paired scores must have the same length, got {a.size} and {b.size}")
    return a, b


def _paired_bootstrap(
    a: NDArray[np.float64], b: NDArray[np.float64], n_boot: int, seed: int, confidence: float
) -> tuple[float, float, float, float]:
    """``(mean(b) - mean(a), low, high, p_value)`` from bootstrapping the per-item differences."""
    diff = b - a
    mean_diff = float(b.mean() - a.mean())
    if np.all(diff == diff[0]):
        # No variation: every replicate equals the observed difference.
        p_value = 1.0 if mean_diff == 0.0 else min(1.0, 2.0 / (n_boot + 1))
        return mean_diff, mean_diff, mean_diff, p_value
    replicates = _bootstrap_means(diff, n_boot, np.random.default_rng(seed))
    lo, hi = _percentile_interval(replicates, confidence)
    return mean_diff, lo, hi, _bootstrap_p_value(replicates, n_boot)


def paired_bootstrap_test(
    scores_a: ArrayLike, scores_b: ArrayLike, n_boot: int = 10000, seed: int = 0
) -> tuple[float, float, float]:
    """Paired bootstrap for the difference in mean score between two systems on the same items.

    Returns ``(mean(scores_b) - mean(scores_a), ci_low, ci_high)``: the difference is **B minus A**, so
    a positive value means B scored higher, and the 95% percentile interval excluding 0 indicates a
    difference at the 5% level. Items are resampled jointly by bootstrapping the per-item differences
    ``b - a`` (for 0/1 scores these lie in {-1, 0, 1}, so the fast count-resampling path applies).
    Empty input returns ``(nan, nan, nan)``; inputs of different length raise ``ValueError``.
    """
    _check_n_boot(n_boot)
    a, b = _paired_arrays(scores_a, scores_b)
    if a.size == 0:
        return math.nan, math.nan, math.nan
    mean_diff, lo, hi, _ = _paired_bootstrap(a, b, n_boot, seed, 0.95)
    return mean_diff, lo, hi


@dataclass(frozen=True)
class PairedComparison:
    """Two systems scored on the same items: the difference B − A, its interval and a paired test."""

    diff: float
    """``mean(scores_b) - mean(scores_a)``: positive when B scored higher."""
    low: float
    high: float
    p_value: float
    """Two-sided p-value of "no difference" under ``test``."""
    test: str
    """``"mcnemar"`` (exact, 0/1 scores), ``"paired-bootstrap"``, ``"sign-flip"`` (fewer than
    ``SIGN_FLIP_BELOW`` items), ``"paired-normal"`` or ``"none"`` (no items)."""
    interval: str
    """How ``low``/``high`` were computed: ``"paired-bootstrap"`` or ``"paired-normal"``."""


def paired_comparison(
    scores_a: ArrayLike, scores_b: ArrayLike, confidence: float = 0.95, n_boot: int = 10000, seed: int = 0
) -> PairedComparison:
    """Compare two systems on the same items: the difference B − A with its interval and a paired test.

    * Both 0/1: McNemar's exact test on the discordant pairs; the interval bootstraps the per-item
      differences (three values, so through their counts: milliseconds at any size).
    * Otherwise the paired bootstrap of the differences gives both the interval and the p-value (the
      percentile p-value, floored at ``2/(n_boot+1)``), with two exceptions. Below ``SIGN_FLIP_BELOW``
      items the p-value is the sign-flip test's (``test="sign-flip"``): the bootstrap's is far too small
      there. Above ``NORMAL_CI_MIN_ITEMS`` differences with more than 64 distinct values, the paired
      normal (z) test and interval, which agree with the bootstrap at that size and cost no resampling
      (``test="paired-normal"``).

    Empty input gives NaN difference and interval with ``p_value=1`` and ``test="none"``. Inputs of
    different length raise ``ValueError``.
    """
    check_confidence(confidence)
    _check_n_boot(n_boot)
    a, b = _paired_arrays(scores_a, scores_b)
    if a.size == 0:
        return PairedComparison(math.nan, math.nan, math.nan, 1.0, "none", "none")
    diff = b - a
    if _binary_array(a) and _binary_array(b):
        mean_diff, lo, hi, _ = _paired_bootstrap(a, b, n_boot, seed, confidence)
        a_only = int(np.count_nonzero(diff < 0))
        b_only = int(np.count_nonzero(diff > 0))
        _, p_value = mcnemar_test(a_only, b_only, exact=True)
        return PairedComparison(mean_diff, lo, hi, p_value, "mcnemar", "paired-bootstrap")
    if _many_distinct(diff):
        mean_diff = float(b.mean() - a.mean())
        se = float(diff.std(ddof=1)) / math.sqrt(diff.size)
        if se == 0.0:
            p_value = 1.0 if mean_diff == 0.0 else 0.0
            return PairedComparison(mean_diff, mean_diff, mean_diff, p_value, "paired-normal", "paired-normal")
        half = z_value(confidence) * se
        p_value = 2.0 * NormalDist().cdf(-abs(mean_diff) / se)
        return PairedComparison(
            mean_diff, mean_diff - half, mean_diff + half, p_value, "paired-normal", "paired-normal"
        )
    mean_diff, lo, hi, p_value = _paired_bootstrap(a, b, n_boot, seed, confidence)
    if diff.size < SIGN_FLIP_BELOW:
        return PairedComparison(
            mean_diff, lo, hi, _sign_flip_p_value(diff, n_boot, seed), "sign-flip", "paired-bootstrap"
        )
    return PairedComparison(mean_diff, lo, hi, p_value, "paired-bootstrap", "paired-bootstrap")


SIGN_FLIP_BELOW = 30
"""Below this many paired items the p-value comes from the sign-flip test, not the bootstrap: resamples of a
handful of differences that are nearly all positive are nearly all positive, so the bootstrap's p-value of
5 items can be 0.0004 where no paired test can go below 2/2^4 = 0.125."""


def _sign_flip_p_value(diff: NDArray[np.float64], n_boot: int, seed: int) -> float:
    """Two-sided p-value of "mean difference = 0" by the paired randomization (sign-flip) test: exact over
    all 2^n sign patterns when they number at most ``n_boot``, else ``n_boot`` random patterns."""
    if diff.size < 2 or not np.any(diff):  # one item: its two sign patterns are as extreme as each other
        return 1.0
    from scipy.stats import permutation_test

    result = permutation_test(
        (diff,),
        np.mean,
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_boot,
        alternative="two-sided",
        random_state=seed,
    )
    return float(min(1.0, result.pvalue))


def is_binary(scores: ArrayLike) -> bool:
    """True when every score is exactly 0 or 1 (booleans count). Vacuously True for empty input."""
    arr = np.asarray(scores, dtype=np.float64)
    return _binary_array(arr)


def mean_ci(
    scores: ArrayLike, method: str = "auto", confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float, str]:
    """Mean of ``scores`` with a confidence interval: ``(mean, low, high, method_used)``.

    ``method`` is one of ``"auto"``, ``"wilson"``, ``"clopper-pearson"``, ``"wald"``, ``"bootstrap"``.
    ``"auto"`` uses Wilson for binary (0/1) scores and the bootstrap otherwise. The three binomial
    methods are only meaningful for 0/1 scores, so for non-binary input they fall back to the bootstrap
    and ``method_used`` says ``"bootstrap"``. Where the bootstrap would resample more than
    ``NORMAL_CI_MIN_ITEMS`` items with more than 64 distinct values (minutes of work for a million), the
    normal interval of :func:`normal_ci` is used instead and ``method_used`` says ``"normal"``.
    Empty input returns ``(nan, nan, nan, method)``. Raises ``ValueError`` for an unknown method.
    """
    if method != "auto" and method not in MEAN_CI_METHODS:
        raise ValueError(f"unknown method {method!r}; expected 'auto' or one of {', '.join(MEAN_CI_METHODS)}")
    check_confidence(confidence)
    arr = _as_1d(scores, "scores")
    if arr.size == 0:
        return math.nan, math.nan, math.nan, method
    binary = _binary_array(arr)
    used = method
    if method == "auto":
        used = "wilson" if binary else "bootstrap"
    elif not binary:
        used = "bootstrap"
    if used == "bootstrap":
        if _many_distinct(arr):
            lo, hi = normal_ci(arr, confidence=confidence)
            return float(arr.mean()), lo, hi, "normal"
        lo, hi = bootstrap_ci(arr, confidence=confidence, seed=seed)
        return float(arr.mean()), lo, hi, used
    k, n = int(np.count_nonzero(arr)), int(arr.size)
    interval = {"wilson": wilson_interval, "clopper-pearson": clopper_pearson_interval, "wald": wald_interval}
    lo, hi = interval[used](k, n, confidence)
    return k / n, lo, hi, used


# --------------------------------------------------------------------------------------------------
# hypothesis tests
# --------------------------------------------------------------------------------------------------


def mcnemar_test(b: int, c: int, exact: bool = True) -> tuple[float, float]:
    """McNemar's test for paired binary outcomes; returns ``(statistic, p_value)``.

    ``b`` and ``c`` are the discordant counts (A right / B wrong and A wrong / B right).
    ``exact=True``: two-sided exact binomial test of ``b`` vs ``c`` under p = 0.5; the statistic is
    ``min(b, c)``. ``exact=False``: chi-square with 1 degree of freedom and continuity correction,
    ``max(|b - c| - 1, 0)**2 / (b + c)``. The correction is floored at zero so that ``b == c`` gives
    statistic 0 and p = 1 (R's ``mcnemar.test`` and statsmodels omit the floor and report a p-value
    below 1 for perfectly balanced discordance). ``b + c == 0`` returns ``(0.0, 1.0)``.
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
    from scipy import stats as sps

    return z, float(2.0 * sps.norm.sf(abs(z)))


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


def sample_size(margin: float, p: float = 0.5, confidence: float = 0.95) -> int:
    """Items needed for a normal-approximation interval of half-width ``margin``: ``ceil(z² p(1-p) / m²)``.

    ``p = 0.5`` (the default) is the worst case. At least 1 is returned even for ``p`` of 0 or 1.
    Raises ``ValueError`` for ``margin`` outside (0, 1], ``p`` outside [0, 1] or a bad ``confidence``.
    """
    check_confidence(confidence)
    if not (0.0 < margin <= 1.0):
        raise ValueError(f"margin must be in (0, 1], got {margin!r}")
    if not (0.0 <= p <= 1.0):
        raise ValueError(f"p must be in [0, 1], got {p!r}")
    squared = margin**2
    raw = z_value(confidence) ** 2 * p * (1.0 - p) / squared if squared > 0.0 else math.inf
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
