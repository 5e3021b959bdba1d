"""Tests for eval_harness.stats.

Expected values are constants computed once in a separate, throwaway environment with established
libraries (statsmodels 0.15.0, scipy 1.17.1, scikit-learn 1.9.1, numpy 2.4.6) or with exact rational
arithmetic (fractions.Fraction + math.comb); each constant names its source. They are pasted rather than
recomputed here so that the tests do not call the library the implementation itself delegates to.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from eval_harness import stats
from eval_harness.stats import (
    bonferroni,
    bootstrap_ci,
    clopper_pearson_interval,
    cohen_kappa,
    expected_calibration_error,
    holm,
    is_binary,
    mcnemar_test,
    mean_ci,
    paired_bootstrap_test,
    pass_at_k,
    sample_size,
    two_proportion_ztest,
    wald_interval,
    wilson_interval,
)

# Tolerance for pasted reference values: statsmodels and scipy compute the same intervals along
# different code paths (beta.ppf/isf vs. scipy's own), which agree only to ~1e-13 in places.
REL = 1e-10
ABS = 1e-12


def approx(expected: object) -> object:
    return pytest.approx(expected, rel=REL, abs=ABS)


# --------------------------------------------------------------------------------------------------
# binomial intervals
# --------------------------------------------------------------------------------------------------

# statsmodels 0.15.0 proportion_confint(k, n, alpha=1 - confidence, method="wilson")
WILSON = [
    ((7, 20, 0.95), (0.18119182410108206, 0.5671457233147638)),
    ((0, 10, 0.95), (0.0, 0.2775327998628892)),
    ((10, 10, 0.95), (0.7224672001371107, 0.9999999999999999)),
    ((0, 1, 0.95), (0.0, 0.7934506856227626)),
    ((1, 1, 0.95), (0.20654931437723745, 1.0)),
    ((1, 2, 0.95), (0.09453120573423074, 0.9054687942657693)),
    ((50, 100, 0.90), (0.4188477961125295, 0.5811522038874706)),
    ((3, 1000, 0.99), (0.0007581012310614674, 0.01179351668292492)),
    ((123456, 1000000, 0.95), (0.12281269653142285, 0.12410219641400438)),
]

# statsmodels 0.15.0 proportion_confint(5, 5, method="wilson") and (0, 5): where --ci bootstrap falls back to
WILSON_5_OF_5 = (0.5655175352168252, 1.0)
WILSON_0_OF_5 = (0.0, 0.4344824647831748)

# statsmodels 0.15.0 proportion_confint(k, n, alpha=1 - confidence, method="beta")  (Clopper-Pearson)
CLOPPER_PEARSON = [
    ((7, 20, 0.95), (0.1539092047845412, 0.5921885345328282)),
    ((0, 10, 0.95), (0.0, 0.3084971078187607)),
    ((10, 10, 0.95), (0.6915028921812392, 1.0)),
    ((0, 1, 0.95), (0.0, 0.975)),
    ((1, 1, 0.95), (0.025000000000000022, 1.0)),
    ((1, 2, 0.95), (0.01257911709342506, 0.9874208829065749)),
    ((50, 100, 0.90), (0.41362171463091174, 0.5863782853690882)),
    ((3, 1000, 0.99), (0.00033814452906649344, 0.01093377742040524)),
    ((123456, 1000000, 0.95), (0.12281184162962973, 0.12410234027680268)),
]

# statsmodels 0.15.0 proportion_confint(k, n, alpha=1 - confidence, method="normal")  (Wald, clipped)
WALD = [
    ((7, 20, 0.95), (0.14096269690460586, 0.5590373030953941)),
    ((0, 10, 0.95), (0.0, 0.0)),
    ((10, 10, 0.95), (1.0, 1.0)),
    ((0, 1, 0.95), (0.0, 0.0)),
    ((1, 1, 0.95), (1.0, 1.0)),
    ((1, 2, 0.95), (0.0, 1.0)),
    ((50, 100, 0.90), (0.4177573186524264, 0.5822426813475736)),
    ((3, 1000, 0.99), (0.0, 0.007454769997839894)),
    ((123456, 1000000, 0.95), (0.1228112504428795, 0.1241007495571205)),
]

IntervalFn = Callable[..., tuple[float, float]]

INTERVALS: list[IntervalFn] = [wilson_interval, clopper_pearson_interval, wald_interval]


@pytest.mark.parametrize(("args", "expected"), WILSON)
def test_wilson_matches_statsmodels(args: tuple[int, int, float], expected: tuple[float, float]) -> None:
    assert wilson_interval(*args) == approx(expected)


@pytest.mark.parametrize(("args", "expected"), CLOPPER_PEARSON)
def test_clopper_pearson_matches_statsmodels(args: tuple[int, int, float], expected: tuple[float, float]) -> None:
    assert clopper_pearson_interval(*args) == approx(expected)


@pytest.mark.parametrize(("args", "expected"), WALD)
def test_wald_matches_statsmodels(args: tuple[int, int, float], expected: tuple[float, float]) -> None:
    assert wald_interval(*args) == approx(expected)


@pytest.mark.parametrize("interval", INTERVALS)
def test_interval_default_confidence_is_95(interval: IntervalFn) -> None:
    assert interval(7, 20) == interval(7, 20, 0.95)


@pytest.mark.parametrize("interval", INTERVALS)
def test_interval_n_zero_is_uninformative(interval: IntervalFn) -> None:
    assert interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("interval", INTERVALS)
@pytest.mark.parametrize(("k", "n"), [(-1, 10), (11, 10), (1, 0), (0, -1)])
def test_interval_rejects_counts_outside_range(interval: IntervalFn, k: int, n: int) -> None:
    with pytest.raises(ValueError, match=r"\[0, n\]|non-negative"):
        interval(k, n)


@pytest.mark.parametrize("interval", INTERVALS)
@pytest.mark.parametrize("confidence", [0.0, 1.0, -0.5, 1.5, math.nan])
def test_interval_rejects_bad_confidence(interval: IntervalFn, confidence: float) -> None:
    with pytest.raises(ValueError, match="confidence"):
        interval(5, 10, confidence)


@pytest.mark.parametrize("interval", INTERVALS)
def test_intervals_stay_in_unit_range_and_contain_estimate(interval: IntervalFn) -> None:
    for n in (1, 2, 5, 37):
        for k in range(n + 1):
            lo, hi = interval(k, n)
            assert 0.0 <= lo <= k / n <= hi <= 1.0


def test_interval_ordering_cp_widest_at_small_n() -> None:
    # Clopper-Pearson is conservative, so it contains the Wilson interval for this moderate case.
    w_lo, w_hi = wilson_interval(7, 20)
    cp_lo, cp_hi = clopper_pearson_interval(7, 20)
    assert cp_lo < w_lo and w_hi < cp_hi


# --------------------------------------------------------------------------------------------------
# McNemar
# --------------------------------------------------------------------------------------------------

# statsmodels 0.15.0 contingency_tables.mcnemar([[50, b], [c, 50]], exact=..., correction=True)
MCNEMAR = [
    ((3, 10, True), (3.0, 0.09228515625)),
    ((3, 10, False), (2.769230769230769, 0.0960923294556734)),
    ((0, 5, True), (0.0, 0.0625)),
    ((0, 5, False), (3.2, 0.07363827012030258)),
    ((12, 12, True), (12.0, 1.0)),
    ((1, 0, True), (0.0, 1.0)),
    ((1, 0, False), (0.0, 1.0)),
    ((25, 40, True), (25.0, 0.08168153394154003)),
    ((25, 40, False), (3.0153846153846153, 0.08247788747320971)),
    ((100, 80, True), (80.0, 0.15653146957815167)),
    ((100, 80, False), (2.0055555555555555, 0.1567238679451147)),
    ((5, 6, True), (5.0, 1.0)),
    ((5, 6, False), (0.0, 1.0)),
]


@pytest.mark.parametrize(("args", "expected"), MCNEMAR)
def test_mcnemar_matches_statsmodels(args: tuple[int, int, bool], expected: tuple[float, float]) -> None:
    assert mcnemar_test(*args) == approx(expected)


def test_mcnemar_default_is_exact() -> None:
    assert mcnemar_test(3, 10) == approx((3.0, 0.09228515625))


@pytest.mark.parametrize("exact", [True, False])
def test_mcnemar_no_discordant_pairs(exact: bool) -> None:
    assert mcnemar_test(0, 0, exact=exact) == (0.0, 1.0)


@pytest.mark.parametrize("n", [1, 2, 12, 500])
def test_mcnemar_chi2_balanced_discordance_gives_p_one(n: int) -> None:
    # Deliberate deviation: statsmodels (and R) report (|b-c|-1)^2/(b+c) = 1/(2n) here, e.g.
    # mcnemar(b=c=2, exact=False) -> (0.25, 0.617) and b=c=12 -> (0.0417, 0.838), although b == c is no
    # evidence of a difference at all. The implementation floors the corrected |b-c| at 0.
    assert mcnemar_test(n, n, exact=False) == (0.0, 1.0)


def test_mcnemar_is_symmetric() -> None:
    assert mcnemar_test(3, 10) == mcnemar_test(10, 3)
    assert mcnemar_test(3, 10, exact=False) == mcnemar_test(10, 3, exact=False)


def test_mcnemar_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        mcnemar_test(-1, 3)


# --------------------------------------------------------------------------------------------------
# two-proportion z-test
# --------------------------------------------------------------------------------------------------

# statsmodels 0.15.0 proportions_ztest(count=[k1, k2], nobs=[n1, n2])  (pooled variance, two-sided)
ZTEST = [
    ((45, 100, 30, 100), (2.1908902300206647, 0.02845973691631055)),
    ((5, 50, 12, 60), (-1.4447444505912566, 0.14852967932444114)),
    ((0, 10, 3, 10), (-1.8786728732554483, 0.060289173990602164)),
    ((80, 100, 80, 100), (0.0, 1.0)),
    ((900, 1000, 850, 1000), (3.3806170189140694, 0.0007232327164301844)),
]


@pytest.mark.parametrize(("args", "expected"), ZTEST)
def test_two_proportion_ztest_matches_statsmodels(
    args: tuple[int, int, int, int], expected: tuple[float, float]
) -> None:
    assert two_proportion_ztest(*args) == approx(expected)


def test_two_proportion_ztest_degenerate_cases() -> None:
    # statsmodels returns (nan, nan) with a RuntimeWarning when both samples are all-zero; here
    # "no evidence of a difference" is reported as (0.0, 1.0), as for McNemar with b + c = 0.
    assert two_proportion_ztest(0, 10, 0, 20) == (0.0, 1.0)
    assert two_proportion_ztest(10, 10, 20, 20) == (0.0, 1.0)
    assert two_proportion_ztest(0, 0, 3, 10) == (0.0, 1.0)


def test_two_proportion_ztest_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match=r"\[0, n\]"):
        two_proportion_ztest(11, 10, 3, 10)


# --------------------------------------------------------------------------------------------------
# pass@k
# --------------------------------------------------------------------------------------------------

# Exact: 1 - Fraction(math.comb(n - c, k), math.comb(n, k)), or 1 when n - c < k; then float().
PASS_AT_K = [
    ((10, 3, 1), 0.3),
    ((10, 3, 5), 0.9166666666666666),
    ((10, 0, 3), 0.0),
    ((10, 10, 1), 1.0),
    ((1, 1, 1), 1.0),
    ((1, 0, 1), 0.0),
    ((5, 2, 5), 1.0),  # k = n
    ((5, 0, 5), 0.0),  # k = n, no passes
    ((1000, 990, 50), 1.0),  # n - c < k
    ((1000, 10, 50), 0.40268870709334553),
    ((200, 1, 100), 0.5),
    ((5000, 37, 100), 0.5277430126412218),
    ((100000, 1, 1), 1e-05),  # tiny result: needs full relative precision
    ((1000, 500, 1000), 1.0),
]


@pytest.mark.parametrize(("args", "expected"), PASS_AT_K)
def test_pass_at_k_matches_exact_fractions(args: tuple[int, int, int], expected: float) -> None:
    assert pass_at_k(*args) == pytest.approx(expected, rel=1e-12, abs=0.0)


def test_pass_at_k_with_no_pass_is_positive_zero() -> None:
    value = pass_at_k(10, 0, 1)
    assert value == 0.0 and math.copysign(1.0, value) == 1.0  # not -0.0, which JSON writes as "-0.0"


def test_pass_at_k_huge_n_does_not_overflow() -> None:
    # C(10**6, 500) has ~2,000 digits: the direct formula would overflow a float.
    value = pass_at_k(1_000_000, 1000, 500)
    assert 0.0 < value < 1.0 and math.isfinite(value)


@pytest.mark.parametrize(
    ("args", "match"), [((10, 3, 0), "k must be"), ((10, 3, 11), "exceed"), ((10, 11, 2), "c must")]
)
def test_pass_at_k_rejects_invalid(args: tuple[int, int, int], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        pass_at_k(*args)


# --------------------------------------------------------------------------------------------------
# Cohen's kappa
# --------------------------------------------------------------------------------------------------

# scikit-learn 1.9.1 sklearn.metrics.cohen_kappa_score(a, b)
KAPPA = [
    (([1, 0, 1, 1, 0, 1, 0, 1, 1, 1], [1, 0, 0, 1, 0, 1, 1, 1, 1, 0]), 0.34782608695652173),
    (
        (
            ["yes", "no", "yes", "maybe", "no", "yes", "maybe", "no"],
            ["yes", "no", "no", "maybe", "no", "yes", "yes", "maybe"],
        ),
        0.4285714285714286,
    ),
    (([0, 0, 0, 0], [1, 1, 1, 1]), 0.0),
    (([1, 1, 1, 0], [1, 1, 1, 1]), 0.0),
    (([0, 1, 0, 1], [1, 0, 1, 0]), -1.0),
]


@pytest.mark.parametrize(("labels", "expected"), KAPPA)
def test_cohen_kappa_matches_sklearn(labels: tuple[list[Any], list[Any]], expected: float) -> None:
    assert cohen_kappa(*labels) == approx(expected)


def test_cohen_kappa_hand_computed() -> None:
    # po = 3/4; both raters say "a" half the time, so pe = 1/2; kappa = (3/4 - 1/2) / (1 - 1/2) = 1/2.
    assert cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"]) == approx(0.5)


def test_cohen_kappa_degenerate_all_identical_is_one() -> None:
    # sklearn returns nan (with warnings) here; the module defines it as perfect agreement.
    assert cohen_kappa([1, 1, 1], [1, 1, 1]) == 1.0
    assert cohen_kappa(["x"], ["x"]) == 1.0


def test_cohen_kappa_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="same length"):
        cohen_kappa([1, 0], [1])
    with pytest.raises(ValueError, match="at least one"):
        cohen_kappa([], [])


# --------------------------------------------------------------------------------------------------
# expected calibration error
# --------------------------------------------------------------------------------------------------


def test_ece_worked_example() -> None:
    # 5 bins of width 0.2, right-closed.
    #   (0.0, 0.2]: {0.15 wrong}                  acc 0,   conf 0.15   gap 0.15  weight 1/6 -> 0.025
    #   (0.6, 0.8]: {0.75 ok, 0.65 ok}            acc 1,   conf 0.70   gap 0.30  weight 2/6 -> 0.100
    #   (0.8, 1.0]: {0.95 ok, 0.85 wrong, 0.92 ok} acc 2/3, conf 2.72/3 gap 0.24  weight 3/6 -> 0.120
    # ECE = 0.245
    conf = [0.95, 0.85, 0.75, 0.65, 0.15, 0.92]
    labels = [1, 0, 1, 1, 0, 1]
    assert expected_calibration_error(conf, labels, bins=5) == approx(0.245)
    # One bin: |mean accuracy - mean confidence| = |4/6 - 4.27/6| = 0.045.
    assert expected_calibration_error(conf, labels, bins=1) == approx(0.045)


def test_ece_against_independent_loop_implementation() -> None:
    # Reference: a plain per-bin loop in exact Fraction arithmetic over bins (b/B, (b+1)/B] with
    # 0 in the first bin, run in the throwaway environment: bins 1 -> 47/2000, 5 and 10 -> 697/2000,
    # 15 -> 99/250. The data deliberately puts many confidences exactly on bin edges.
    conf = [((i * 37) % 101) / 100 for i in range(40)]
    labels = [1 if (i * 7) % 3 == 0 or i % 5 == 0 else 0 for i in range(40)]
    assert expected_calibration_error(conf, labels, bins=1) == approx(47 / 2000)
    assert expected_calibration_error(conf, labels, bins=5) == approx(697 / 2000)
    assert expected_calibration_error(conf, labels) == approx(697 / 2000)
    assert expected_calibration_error(conf, labels, bins=15) == approx(99 / 250)


def test_ece_bin_edges_are_right_closed() -> None:
    # 0.2 falls in (0, 0.2] and 0.3 in (0.2, 0.4]: gaps 0.2 and 0.7 -> (0.2 + 0.7) / 2.
    assert expected_calibration_error([0.2, 0.3], [0, 1], bins=5) == approx(0.45)
    # Confidence 0 lands in the first bin and 1 in the last; both perfectly calibrated.
    assert expected_calibration_error([0.0, 1.0], [0, 1], bins=10) == 0.0


def test_ece_edge_cases() -> None:
    assert math.isnan(expected_calibration_error([], []))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        expected_calibration_error([1.2], [1])
    with pytest.raises(ValueError, match="0/1"):
        expected_calibration_error([0.5], [2])
    with pytest.raises(ValueError, match="same length"):
        expected_calibration_error([0.5, 0.4], [1])
    with pytest.raises(ValueError, match="bins"):
        expected_calibration_error([0.5], [1], bins=0)


# --------------------------------------------------------------------------------------------------
# sample size
# --------------------------------------------------------------------------------------------------

# ceil(statsmodels 0.15.0 samplesize_confint_proportion(p, margin, alpha=1 - confidence))
#   raw values 384.1458820694125, 1067.0718946372572, 10615.834561633943, 24.34989108685873
SAMPLE_SIZE = [
    ((0.05, 0.5, 0.95), 385),
    ((0.03, 0.5, 0.95), 1068),
    ((0.01, 0.2, 0.99), 10616),
    ((0.1, 0.9, 0.90), 25),
]


@pytest.mark.parametrize(("args", "expected"), SAMPLE_SIZE)
def test_sample_size_matches_statsmodels(args: tuple[float, float, float], expected: int) -> None:
    assert sample_size(*args) == expected


def test_sample_size_defaults_and_edges() -> None:
    assert sample_size(0.05) == 385
    assert sample_size(0.05, p=0.0) == 1
    with pytest.raises(ValueError, match="margin"):
        sample_size(0.0)
    with pytest.raises(ValueError, match="p must"):
        sample_size(0.05, p=1.5)
    with pytest.raises(ValueError, match="confidence"):
        sample_size(0.05, confidence=1.0)


# --------------------------------------------------------------------------------------------------
# multiple comparisons
# --------------------------------------------------------------------------------------------------

# statsmodels 0.15.0 multipletests(p, method="bonferroni" / "holm")[1]
MULTIPLE = [
    ([0.01, 0.04, 0.03, 0.2], [0.04, 0.16, 0.12, 0.8], [0.04, 0.09, 0.09, 0.2]),  # unsorted
    ([0.02, 0.01, 0.02, 0.5, 0.01], [0.1, 0.05, 0.1, 1.0, 0.05], [0.06, 0.05, 0.06, 0.5, 0.05]),  # ties
    ([0.3, 0.6, 0.01], [0.8999999999999999, 1.0, 0.03], [0.6, 0.6, 0.03]),  # capping
    ([0.04], [0.04], [0.04]),
    ([0.001, 0.001, 0.001], [0.003, 0.003, 0.003], [0.003, 0.003, 0.003]),  # all tied
]


@pytest.mark.parametrize(("p", "expected_bonf", "expected_holm"), MULTIPLE)
def test_multiple_comparisons_match_statsmodels(
    p: list[float], expected_bonf: list[float], expected_holm: list[float]
) -> None:
    bonf = bonferroni(p)
    adj = holm(p)
    assert isinstance(bonf, list) and isinstance(adj, list)
    assert bonf == approx(expected_bonf)
    assert adj == approx(expected_holm)


def test_holm_properties() -> None:
    p = [0.04, 0.001, 0.03, 0.03, 0.5, 0.0101]
    adj = holm(p)
    bonf = bonferroni(p)
    assert all(0.0 <= x <= 1.0 for x in adj)
    assert all(a <= b for a, b in zip(adj, bonf, strict=True))
    # Monotone: a smaller raw p-value never gets a larger adjusted one.
    for i in range(len(p)):
        for j in range(len(p)):
            if p[i] <= p[j]:
                assert adj[i] <= adj[j]


def test_multiple_comparisons_edge_cases() -> None:
    assert bonferroni([]) == [] and holm([]) == []
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        holm([0.5, 1.2])
    with pytest.raises(ValueError, match="NaN"):
        bonferroni([math.nan])


# --------------------------------------------------------------------------------------------------
# bootstrap
# --------------------------------------------------------------------------------------------------


def plain_bootstrap_means(x: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """Oracle: textbook item resampling (an index matrix; fine for the moderate sizes used here)."""
    rng = np.random.default_rng(seed)
    return np.asarray(x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1))


def percentile_interval(replicates: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    lo, hi = np.quantile(replicates, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


@pytest.fixture
def binary_scores() -> np.ndarray:
    return (np.random.default_rng(42).random(300) < 0.3).astype(float)


@pytest.fixture
def five_valued_scores() -> np.ndarray:
    return np.random.default_rng(43).choice([0.0, 0.25, 0.5, 0.75, 1.0], p=[0.3, 0.1, 0.2, 0.1, 0.3], size=300)


@pytest.fixture
def continuous_scores() -> np.ndarray:
    return np.random.default_rng(44).beta(2.0, 5.0, size=300)


SCORE_KINDS = ["binary_scores", "five_valued_scores", "continuous_scores"]


@pytest.mark.parametrize("kind", SCORE_KINDS)
def test_bootstrap_is_deterministic_for_a_seed(kind: str, request: pytest.FixtureRequest) -> None:
    x = request.getfixturevalue(kind)
    assert bootstrap_ci(x, seed=7) == bootstrap_ci(x, seed=7)
    assert bootstrap_ci(list(x), seed=7) == bootstrap_ci(x, seed=7)
    assert bootstrap_ci(x, seed=7) != bootstrap_ci(x, seed=8)


@pytest.mark.parametrize("kind", SCORE_KINDS)
def test_bootstrap_interval_contains_mean(kind: str, request: pytest.FixtureRequest) -> None:
    x = request.getfixturevalue(kind)
    for seed in range(5):
        lo, hi = bootstrap_ci(x, seed=seed)
        assert lo < x.mean() < hi


@pytest.mark.parametrize("kind", SCORE_KINDS)
def test_bootstrap_agrees_with_plain_item_resampling(kind: str, request: pytest.FixtureRequest) -> None:
    # The count-resampling fast paths must have the same sampling distribution as item resampling.
    # With 20,000 replicates the Monte Carlo error of these quantiles is ~0.001; means of 300 items lie
    # on a 1/300 (or 1/1200) lattice, so 0.006 allows for a lattice step either way.
    x = request.getfixturevalue(kind)
    oracle = plain_bootstrap_means(x, n_boot=20_000, seed=2)
    for confidence in (0.5, 0.8, 0.95):
        fast = bootstrap_ci(x, confidence=confidence, n_boot=20_000, seed=1)
        assert fast == pytest.approx(percentile_interval(oracle, confidence), abs=0.006)


def test_bootstrap_chunked_index_path_agrees_with_oracle(
    continuous_scores: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Force many small chunks (1,000 entries -> 3 replicates per chunk) to exercise the chunk loop.
    monkeypatch.setattr(stats, "_MAX_INDEX_ENTRIES", 1000)
    chunked = bootstrap_ci(continuous_scores, n_boot=5001, seed=3)
    assert chunked == bootstrap_ci(continuous_scores, n_boot=5001, seed=3)
    plain = percentile_interval(plain_bootstrap_means(continuous_scores, n_boot=5001, seed=4), 0.95)
    assert chunked == pytest.approx(plain, abs=0.006)


def test_bootstrap_binary_close_to_wilson() -> None:
    x = (np.random.default_rng(5).random(10_000) < 0.3).astype(float)
    lo, hi = bootstrap_ci(x)
    w_lo, w_hi = wilson_interval(int(x.sum()), x.size)
    assert abs(lo - w_lo) < 0.005 and abs(hi - w_hi) < 0.005


def test_bootstrap_many_distinct_values_close_to_normal_theory() -> None:
    # More than 64 distinct values takes the index path; with n = 2,000 the bootstrap interval should
    # be close to mean ± 1.96·sd/sqrt(n).
    x = np.random.default_rng(6).normal(0.5, 0.2, size=2000)
    lo, hi = bootstrap_ci(x)
    half = 1.959963984540054 * x.std(ddof=1) / math.sqrt(x.size)
    assert lo == pytest.approx(x.mean() - half, abs=0.002)
    assert hi == pytest.approx(x.mean() + half, abs=0.002)


def test_bootstrap_edge_cases() -> None:
    lo, hi = bootstrap_ci([])
    assert math.isnan(lo) and math.isnan(hi)
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_ci([0.5, math.nan])
    with pytest.raises(ValueError, match="one-dimensional"):
        bootstrap_ci([[0.5, 1.0]])
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_ci([0.5, 1.0], n_boot=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([0.5, 1.0], confidence=1.0)


@pytest.mark.parametrize("values", [[0.37], [0.1] * 7, [1, 1, 1], [0, 0]])
def test_bootstrap_of_one_value_or_equal_values_gives_no_interval(values: list[float]) -> None:
    # every resample is the same: [v, v] would read as certainty
    assert all(math.isnan(v) for v in bootstrap_ci(values))


def test_bootstrap_large_binary_uses_fast_path() -> None:
    # 10**6 items x 2,000 replicates would be 2e9 index draws on the plain path; the binomial path
    # makes this instant. No timing assertion (that belongs in a benchmark), only correctness.
    x = (np.random.default_rng(8).random(1_000_000) < 0.7).astype(float)
    lo, hi = bootstrap_ci(x)
    w_lo, w_hi = wilson_interval(int(x.sum()), x.size)
    assert abs(lo - w_lo) < 5e-4 and abs(hi - w_hi) < 5e-4


# --------------------------------------------------------------------------------------------------
# paired bootstrap
# --------------------------------------------------------------------------------------------------


def plain_paired_interval(a: np.ndarray, b: np.ndarray, n_boot: int, seed: int) -> tuple[float, float]:
    """Oracle: resample item indices jointly for both systems."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, a.size, size=(n_boot, a.size))
    return percentile_interval(b[idx].mean(axis=1) - a[idx].mean(axis=1), 0.95)


def test_paired_bootstrap_difference_is_b_minus_a() -> None:
    a = [0, 0, 1, 0, 1, 0, 0, 1]
    b = [1, 1, 1, 0, 1, 1, 0, 1]
    diff, lo, hi = paired_bootstrap_test(a, b)
    assert diff == approx(6 / 8 - 3 / 8)
    assert lo <= diff <= hi
    assert paired_bootstrap_test(b, a)[0] == approx(-diff)


def test_paired_bootstrap_binary_agrees_with_plain_oracle() -> None:
    rng = np.random.default_rng(9)
    a = (rng.random(400) < 0.55).astype(float)
    # B agrees with A on most items and fixes some of A's errors.
    b = np.where(rng.random(400) < 0.15, 1.0, a)
    diff, lo, hi = paired_bootstrap_test(a, b, n_boot=20_000, seed=1)
    assert diff == approx(b.mean() - a.mean())
    assert (lo, hi) == pytest.approx(plain_paired_interval(a, b, n_boot=20_000, seed=2), abs=0.006)
    assert 0.0 < lo < diff < hi


def test_paired_bootstrap_continuous_and_determinism(continuous_scores: np.ndarray) -> None:
    a = continuous_scores
    b = a + np.random.default_rng(10).normal(0.02, 0.05, size=a.size)
    first = paired_bootstrap_test(a, b, seed=3)
    assert first == paired_bootstrap_test(a, b, seed=3)
    assert first[1] < first[0] < first[2]
    assert first[1:] == pytest.approx(plain_paired_interval(a, b, n_boot=10_000, seed=4), abs=0.003)


def test_paired_bootstrap_edge_cases() -> None:
    assert all(math.isnan(v) for v in paired_bootstrap_test([], []))
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap_test([1, 0], [1])


def test_paired_bootstrap_of_equal_differences_gives_the_difference_and_no_interval() -> None:
    diff, lo, hi = paired_bootstrap_test([1, 0, 1], [1, 0, 1])
    assert diff == 0.0 and math.isnan(lo) and math.isnan(hi)
    diff, lo, hi = paired_bootstrap_test([0.5], [0.75])
    assert diff == 0.25 and math.isnan(lo) and math.isnan(hi)


# --------------------------------------------------------------------------------------------------
# is_binary / mean_ci
# --------------------------------------------------------------------------------------------------


def test_is_binary() -> None:
    assert is_binary([0, 1, 1, 0])
    assert is_binary([0.0, 1.0])
    assert is_binary(np.array([True, False]))
    assert is_binary([1, 1, 1])
    assert is_binary([])  # vacuously true
    assert not is_binary([0, 0.5, 1])
    assert not is_binary([0, 2])


def test_mean_ci_auto_binary_uses_wilson() -> None:
    scores = [1] * 7 + [0] * 13
    mean, lo, hi, used = mean_ci(scores)
    assert used == "wilson"
    assert mean == approx(0.35)
    assert (lo, hi) == approx(WILSON[0][1])


@pytest.mark.parametrize(
    ("method", "expected"),
    [("wilson", WILSON[0][1]), ("clopper-pearson", CLOPPER_PEARSON[0][1]), ("wald", WALD[0][1])],
)
def test_mean_ci_binomial_methods(method: str, expected: tuple[float, float]) -> None:
    mean, lo, hi, used = mean_ci([1] * 7 + [0] * 13, method=method)
    assert used == method
    assert mean == approx(0.35)
    assert (lo, hi) == approx(expected)


def test_mean_ci_confidence_is_passed_through() -> None:
    scores = [1] * 50 + [0] * 50
    assert mean_ci(scores, confidence=0.90)[1:3] == approx(WILSON[6][1])


# scipy 1.17.1 stats.t.interval(0.95, n - 1, loc=mean, scale=sd / sqrt(n)) (audit venv, /tmp/audit-stats)
T_C5 = (0.1834744097203872, 1.0365255902796129)  # [0.1, 0.5, 0.6, 0.9, 0.95], mean 0.61
T_TWO = (-3.311861420852408, 4.3118614208524075)  # [0.2, 0.8]
T_FOUR = (0.17519293409372227, 0.8248070659062777)  # [0.25, 0.5, 0.75, 0.5]


def test_mean_ci_auto_continuous_is_student_t_clipped_to_the_unit_range() -> None:
    mean, lo, hi, used = mean_ci([0.1, 0.5, 0.6, 0.9, 0.95])
    assert used == "t" and mean == approx(0.61)
    assert (lo, hi) == approx((T_C5[0], 1.0))  # the upper end, 1.037, clipped to 1
    assert mean_ci([0.2, 0.8])[1:] == (0.0, 1.0, "t")  # two points say almost nothing: -331%..431%, clipped
    assert mean_ci([0.25, 0.5, 0.75, 0.5])[1:3] == approx(T_FOUR)
    assert stats.t_interval([0.2, 0.8]) == approx(T_TWO)  # t_interval itself does not clip


@pytest.mark.parametrize("method", ["wilson", "clopper-pearson", "wald"])
def test_mean_ci_binomial_method_on_continuous_falls_back_to_student_t(method: str) -> None:
    _mean, lo, hi, used = mean_ci([0.1, 0.5, 0.6, 0.9, 0.95], method=method)
    assert used == "t"
    assert (lo, hi) == approx((T_C5[0], 1.0))


def test_mean_ci_bootstrap_on_request_for_continuous(continuous_scores: np.ndarray) -> None:
    mean, lo, hi, used = mean_ci(continuous_scores, method="bootstrap", seed=4)
    assert used == "bootstrap"
    assert mean == approx(continuous_scores.mean())
    assert (lo, hi) == bootstrap_ci(continuous_scores, seed=4)


@pytest.mark.parametrize("method", ["auto", "bootstrap", "wilson"])
def test_mean_ci_of_one_continuous_score_has_no_interval(method: str) -> None:
    mean, lo, hi, used = mean_ci([0.6], method=method)
    assert mean == 0.6 and math.isnan(lo) and math.isnan(hi) and used == "none"


@pytest.mark.parametrize("method", ["auto", "bootstrap"])
def test_mean_ci_of_equal_continuous_scores_has_no_interval(method: str) -> None:
    mean, lo, hi, used = mean_ci([0.6] * 4, method=method)
    assert mean == approx(0.6) and math.isnan(lo) and math.isnan(hi) and used == "none"


@pytest.mark.parametrize(("scores", "wilson"), [([1] * 5, WILSON_5_OF_5), ([0] * 5, WILSON_0_OF_5)])
def test_mean_ci_bootstrap_of_all_right_or_all_wrong_falls_back_to_wilson(
    scores: list[int], wilson: tuple[float, float]
) -> None:
    _mean, lo, hi, used = mean_ci(scores, method="bootstrap")
    assert used == "wilson" and (lo, hi) == approx(wilson)
    _mean, lo, hi, used = mean_ci(scores, method="wald")  # Wald has zero width there too
    assert used == "wilson" and (lo, hi) == approx(wilson)


def test_mean_ci_of_one_0_1_score_keeps_its_wilson_interval() -> None:
    mean, lo, hi, used = mean_ci([1])
    assert (mean, used) == (1.0, "wilson") and (lo, hi) == approx(WILSON[4][1])


def test_mean_ci_explicit_bootstrap_on_binary() -> None:
    scores = [1] * 30 + [0] * 70
    mean, lo, hi, used = mean_ci(scores, method="bootstrap")
    assert used == "bootstrap" and mean == approx(0.3) and lo < 0.3 < hi


@pytest.mark.parametrize("method", ["auto", "wilson", "bootstrap"])
def test_mean_ci_empty(method: str) -> None:
    mean, lo, hi, used = mean_ci([], method=method)
    assert math.isnan(mean) and math.isnan(lo) and math.isnan(hi)
    assert used == method


def test_mean_ci_rejects_unknown_method() -> None:
    with pytest.raises(ValueError, match="unknown method"):
        mean_ci([1, 0], method="jackknife")


# --------------------------------------------------------------------------------------------------
# normal (CLT) intervals and paired comparisons
# --------------------------------------------------------------------------------------------------

NORMAL_SCORES = [0.1, 0.4, 0.35, 0.8, 0.95, 0.2, 0.5, 0.65]


def test_normal_ci_matches_statsmodels() -> None:
    # statsmodels 0.15.0 DescrStatsW(x).zconfint_mean(alpha=0.05) and alpha=0.10
    assert stats.normal_ci(NORMAL_SCORES) == approx((0.29135050159385656, 0.6961494984061434))
    assert stats.normal_ci(NORMAL_SCORES, confidence=0.90) == approx((0.3238909864301003, 0.6636090135698997))


def test_normal_ci_edge_cases() -> None:
    assert all(math.isnan(v) for v in stats.normal_ci([]))
    assert all(math.isnan(v) for v in stats.normal_ci([0.3]))  # no spread: no interval
    assert all(math.isnan(v) for v in stats.normal_ci([0.3, 0.3]))
    assert stats.normal_ci([1.0, 1.0, 0.0, 1.0])[1] <= 1.0  # clipped to the range of the scores


def large_continuous_pair() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    a = rng.random(6000)
    return a, np.clip(a + rng.normal(0.01, 0.2, 6000), 0, 1)


def test_mean_ci_bootstrap_uses_the_normal_interval_for_large_varied_samples() -> None:
    a, _ = large_continuous_pair()
    mean, low, high, method = mean_ci(a, method="bootstrap")
    # statsmodels 0.15.0 DescrStatsW(a).zconfint_mean(alpha=0.05) on the same numpy default_rng(7) draw
    assert method == "normal"
    assert (low, high) == approx((0.4891947037048226, 0.5038488734785437))
    assert mean == approx(0.49652178859168317)


def test_mean_ci_of_large_varied_samples_is_student_t_by_default() -> None:
    a, _ = large_continuous_pair()
    # scipy 1.17.1 stats.t.interval(0.95, 5999, loc=a.mean(), scale=a.std(ddof=1) / sqrt(6000)), same draw
    mean, low, high, method = mean_ci(a)
    assert method == "t" and mean == approx(0.49652178859168317)
    assert (low, high) == approx((0.48919322509103835, 0.503850352092328))


def test_mean_ci_bootstrap_keeps_resampling_large_few_valued_samples() -> None:
    scores = np.tile([0.0, 0.25, 0.5, 1.0], 2000)
    assert mean_ci(scores, method="bootstrap")[3] == "bootstrap"


def test_paired_comparison_from_30_pairs_is_the_paired_t_test_with_its_interval() -> None:
    a, b = large_continuous_pair()
    result = stats.paired_comparison(a, b)
    # scipy 1.17.1 ttest_rel(b, a) -> (3.213829933924982, 0.0013167036530892975);
    # stats.t.interval(0.95, 5999, loc=(b - a).mean(), scale=(b - a).std(ddof=1) / sqrt(6000))
    assert (result.test, result.interval) == ("paired-t", "t")
    assert result.p_value == approx(0.0013167036530892975)
    assert (result.low, result.high) == approx((0.002846562997479502, 0.011750302116696207))
    assert result.diff == approx(0.007298432557087855)


def test_paired_t_interval_and_test_agree_at_40_pairs() -> None:
    rng = np.random.default_rng(11)
    a = np.round(rng.random(40), 3)
    b = np.clip(np.round(a + rng.normal(0.05, 0.2, 40), 3), 0, 1)
    result = stats.paired_comparison(a, b)
    # scipy 1.17.1 ttest_rel(b, a).pvalue and stats.t.interval on b - a (same default_rng(11) draw, numpy 2.4.6)
    assert result.test == "paired-t" and result.p_value == approx(0.00406018305672957)
    assert (result.low, result.high) == approx((0.026115770945856105, 0.1285842290541439))


# Newcombe (1998) method 10 with its continuity-corrected phi, from a transliteration of biostatUZH's
# confIntPairedProportion (R; Altman, "Statistics with Confidence", p. 52) using statsmodels 0.15.0
# proportion_confint(method="wilson") (/tmp/newc/ref.py); counts: both right, A right only, B right only, both
# wrong; the interval is of p_B - p_A
NEWCOMBE = [
    ((0, 0, 1, 0, 0.95), (-0.12210872068194178, 1.0)),
    ((0, 0, 5, 0, 0.95), (0.38554900569034356, 1.0)),
    ((0, 0, 6, 0, 0.95), (0.4479839561895135, 1.0)),
    ((3, 0, 0, 2, 0.95), (-0.3073231091942119, 0.3073231091942119)),
    ((15, 2, 9, 14, 0.95), (0.013066089021639138, 0.3207888639535642)),
    ((1, 0, 4, 0, 0.95), (0.19259086051089158, 0.9637758913675699)),
    ((10, 16, 6, 8, 0.95), (-0.4415519632207024, -0.02688954557274087)),
    ((15, 2, 9, 14, 0.90), (0.03838663676788501, 0.2999401881776932)),
    # six pairs, two both right, three won by B, one both wrong: McNemar p = 0.25, and the interval spans 0
    # (without the correction it was [+5.3, +73.3])
    ((2, 0, 3, 1, 0.95), (-0.04030387843204997, 0.7731752842826356)),
]


@pytest.mark.parametrize(("args", "expected"), NEWCOMBE)
def test_newcombe_paired_interval_matches_the_hand_computation(
    args: tuple[int, int, int, int, float], expected: tuple[float, float]
) -> None:
    assert stats.newcombe_paired_interval(*args) == approx(expected)


def test_newcombe_paired_interval_edges() -> None:
    assert stats.newcombe_paired_interval(0, 0, 0, 0) == (-1.0, 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        stats.newcombe_paired_interval(1, -1, 0, 0)


def test_paired_comparison_of_0_1_scores_takes_newcombes_interval_never_zero_width() -> None:
    # five pairs, all A wrong and B right: McNemar p = 0.0625 and Newcombe [+38.6, +100] (the paired bootstrap said
    # [+100, +100]); one pair; two identical runs (the bootstrap said [0, 0])
    five = stats.paired_comparison([0] * 5, [1] * 5)
    assert (five.test, five.interval, five.p_value) == ("mcnemar", "newcombe", 0.0625)
    assert (five.low, five.high) == approx(NEWCOMBE[1][1])
    one = stats.paired_comparison([0], [1])
    assert (one.low, one.high) == approx(NEWCOMBE[0][1])
    same = stats.paired_comparison([1, 0, 1, 1, 0], [1, 0, 1, 1, 0])
    assert (same.low, same.high) == approx(NEWCOMBE[3][1])


def test_paired_comparison_of_equal_continuous_differences_has_no_interval() -> None:
    # every difference +0.01 (up to float rounding: 0.21 - 0.2 != 0.31 - 0.3): no interval; only the all-plus and
    # all-minus sign patterns reach the observed mean, so the exact sign-flip p is 2/2^6 (by hand)
    result = stats.paired_comparison([0.2, 0.3, 0.4, 0.5, 0.6, 0.7], [0.21, 0.31, 0.41, 0.51, 0.61, 0.71])
    assert (result.interval, result.test) == ("none", "sign-flip")
    assert math.isnan(result.low) and math.isnan(result.high)
    assert result.p_value == approx(2 / 2**6) and result.diff == approx(0.01)
    many = stats.paired_comparison(np.zeros(40) + 0.5, np.zeros(40) + 0.75)
    assert many.p_value == approx(2 / 2**40) and many.interval == "none"


def test_few_continuous_pairs_take_the_t_interval_and_the_sign_flip_p() -> None:
    # five differences +0.05/+0.10: scipy 1.17.1 t.interval on them [0.046, 0.114] and permutation_test exact
    # p = 0.0625: the interval excludes 0 while the exact test does not reject (compare's notes say so)
    result = stats.paired_comparison([0.2, 0.3, 0.4, 0.5, 0.6], [0.25, 0.4, 0.45, 0.6, 0.7])
    assert (result.test, result.interval) == ("sign-flip", "t")
    assert result.p_value == approx(0.0625)
    assert (result.low, result.high) == approx((0.045995630967087205, 0.11400436903291278))


def test_the_sign_flip_p_is_exact_up_to_29_pairs() -> None:
    # stats-audit-s26 F11: from 14 pairs the p was Monte Carlo over 10,000 patterns (±0.002 near 0.05, floor
    # 2/10,001). 20 positive differences: only the all-plus and all-minus patterns reach the mean, p = 2/2^20
    a = np.linspace(0.1, 0.5, 20)
    result = stats.paired_comparison(a, a + np.linspace(0.05, 0.15, 20))
    assert result.test == "sign-flip"
    assert result.p_value == 2 / 2**20
    # 29 differences of whole twentieths, the p counted by brute force over the 2^29 patterns' integer sums
    # (every pattern's |sum| compared with 12, numpy in chunks): 193,143,040 of 536,870,912 patterns reach it
    steps = np.array([3, -2, 1, 0, 4, -1, 2, -3, 1, 1, 0, -2, 5, 2, -1, 3, -4, 1, 0, 2, -1, 1, 3, -2, -1, 0, 2, 1, -3])
    assert abs(int(steps.sum())) == 12
    assert stats.paired_comparison(np.full(29, 0.5), 0.5 + steps / 20).p_value == approx(193_143_040 / 2**29)


def test_a_sign_flip_sum_that_is_zero_but_for_rounding_gives_p_1() -> None:
    # +0.3 +0.1 +0.3 +0.3 against −0.2 −0.1 −0.2 −0.1 −0.1 −0.2 −0.1 sum to 0 but for rounding: every pattern is as
    # far from 0 as it, p = 1 (scipy's tolerance, relative to the observed sum, counted about half of them)
    diff = np.array([0.1, 0.3, -0.2, -0.1, -0.2, -0.1, -0.1, -0.2, 0.3, -0.1, 0.3])
    assert stats.paired_comparison(np.full(11, 0.5), 0.5 + diff).p_value == 1.0


def test_paired_comparison_binary_uses_exact_mcnemar() -> None:
    a = np.array([1] * 30 + [0] * 10 + [1] * 5 + [0] * 55, dtype=float)
    b = np.array([1] * 30 + [1] * 10 + [0] * 5 + [0] * 55, dtype=float)
    result = stats.paired_comparison(a, b)
    # b = 5 (A right, B wrong), c = 10: statsmodels mcnemar exact -> binomtest(5, 15) = 0.30175781250000006
    assert result.test == "mcnemar"
    assert result.p_value == approx(0.30175781250000006)
    assert result.diff == approx(0.05)
    # Newcombe method 10 of (30, 5, 10, 55), from /tmp/newc/ref.py (see NEWCOMBE)
    assert (result.low, result.high) == approx((-0.027408110343940195, 0.1263785936908354))


def test_few_paired_continuous_scores_take_the_sign_flip_p_value() -> None:
    # five differences, four positive and one zero: the 2^5 sign patterns give p = 4/32 = 0.125 (scipy 1.17.1
    # permutation_test and wilcoxon agree); the percentile bootstrap said 0.0004
    a = [0.94495, 0.95238, 0.90809, 0.81429, 0.80385]
    b = [1.0, 0.95238, 0.96875, 0.84853, 0.86105]
    result = stats.paired_comparison(a, b)
    assert (result.test, result.interval) == ("sign-flip", "t")
    assert result.p_value == approx(0.125) and result.low > 0
    # three equal differences: only all-plus and all-minus reach |mean| = 0.1, so p = 2/8 (by hand)
    assert stats.paired_comparison([0.1, 0.2, 0.3], [0.2, 0.3, 0.4]).p_value == approx(0.25)
    assert stats.paired_comparison([0.5], [0.75]).p_value == 1.0  # one item can show no difference


def test_paired_comparison_is_deterministic_and_handles_edges() -> None:
    rng = np.random.default_rng(5)
    a, b = rng.choice([0.0, 0.5, 1.0], 200), rng.choice([0.0, 0.5, 1.0], 200)
    assert stats.paired_comparison(a, b) == stats.paired_comparison(a, b)
    empty = stats.paired_comparison([], [])
    assert empty.test == "none" and empty.p_value == 1.0 and math.isnan(empty.diff)
    same = stats.paired_comparison([0.5, 1.0], [0.5, 1.0])
    assert (same.diff, same.p_value) == (0.0, 1.0)
    with pytest.raises(ValueError, match="same length"):
        stats.paired_comparison([1.0], [1.0, 0.0])


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        # scipy 1.17.1 binomtest(min(b, c), b + c, 0.5).pvalue: the exact test without scipy at large n
        (1000, 1200, 2.1817026407914194e-05),
        (150000, 152000, 0.0002752275151893107),
    ],
)
def test_mcnemar_exact_at_large_counts_matches_scipy(b: int, c: int, expected: float) -> None:
    assert mcnemar_test(b, c)[1] == pytest.approx(expected, rel=1e-7)


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        # ceil(scipy 1.17.1 norm.ppf(0.975)**2 * np.std(x, ddof=1)**2 / 0.03**2): SD 0.34351 and 0.25566
        ([0.1, 0.5, 0.6, 0.9, 0.95], 504),
        ([round(0.5 + 0.4 * ((i * 37) % 11 - 5) / 5, 3) for i in range(30)], 279),
    ],
)
def test_sample_size_from_an_observed_sd(scores: list[float], expected: int) -> None:
    assert sample_size(0.03, sd=float(np.std(scores, ddof=1))) == expected
    with pytest.raises(ValueError, match="sd must"):
        sample_size(0.03, sd=-0.1)


def test_sample_size_refuses_a_margin_whose_square_underflows() -> None:
    with pytest.raises(ValueError, match="margin 1e-200 is too small"):
        sample_size(1e-200)


# statsmodels 0.15.0 proportion_confint(k, n, alpha=0.05, method="wilson") for k = floor(pn) and ceil(pn): both
# intervals at most 0.06 wide at n and at every n above it, and not at n - 1 (searched over n = 1 to 3,000 with
# Wilson's formula written out: p = 0.01 and 0.99 first hold at 88 but 99 of 101 is 93.07–99.46, 6.39 points, and
# every n holds from 108; 0.9 first at 389, every n from 393; 0.5 from 1064; 0 and 1 from 61)
@pytest.mark.parametrize(("p", "n"), [(0.0, 61), (0.01, 108), (0.5, 1064), (0.9, 393), (0.99, 108), (1.0, 61)])
def test_wilson_sample_size_is_the_fewest_items_from_which_every_size_gives_the_width(p: float, n: int) -> None:
    # stats-s33 3: it was the first n that fits (88 at 99%), where a run that ended with ~100 got 6.4 points
    assert stats.wilson_sample_size(0.03, p) == n


def test_wilson_sample_size_refuses_what_cannot_be_planned() -> None:
    assert stats.wilson_sample_size(1.0, 0.0) == 1
    with pytest.raises(ValueError, match="margin must be in"):
        stats.wilson_sample_size(0.0)
    with pytest.raises(ValueError, match="p must be in"):
        stats.wilson_sample_size(0.03, 1.5)
