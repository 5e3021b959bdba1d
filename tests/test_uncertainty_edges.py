"""Honest uncertainty at the edges, end to end: ``report``, ``compare`` and the gates on runs too small, too
uniform or too different to give an ordinary interval (one sample, all right, equal scores, no shared sample).

The runs are made by the real CLI with the mock provider, then their records are given chosen final scores.
Expected values are pasted from statsmodels 0.15.0 / scipy 1.17.1 (the audit's venv, /tmp/audit-stats, whose
``ref_cmp.py`` has the Newcombe computation), with the source named at each constant.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot, as_three_identical_epochs, read_records

from eval_harness.cli.render import p_value
from eval_harness.compare import compare_runs
from eval_harness.report import build_report

Cli = Callable[..., CliResult]

ERROR = {"type": "ProviderHTTPError", "message": "HTTP 500", "stage": "generate"}


def scored_run(
    cli: Cli, root: TaskRoot, run_id: str, scores: Sequence[float | None], axes: Sequence[str] = ("alpha",)
) -> Path:
    """A run of ``len(scores)`` samples whose i-th sample (by id) has final score ``scores[i]`` (None: a provider
    error) on axis ``axes[i % len(axes)]``; the same ids in every run of the task root, so runs pair up."""
    out = root.root / "results"
    made = cli("run", "--task", root.root / "tasks" / "adder.toml", "--model", f"mock/{run_id}", "--limit",
               str(len(scores)), "--output-dir", out, "--run-id", run_id, "--quiet")  # fmt: skip
    assert made.code == 0, made.err
    run = out / run_id
    records = sorted(read_records(run), key=lambda r: r["sample_id"])
    rewritten = []
    for i, (record, score) in enumerate(zip(records, scores, strict=True)):
        axis = axes[i % len(axes)]
        if score is None:
            rewritten.append({**record, "axis": axis, "score": None, "passed": None, "scores": {}, "error": ERROR})
        else:
            scores_of = {"exact_match": score}
            rewritten.append({**record, "axis": axis, "score": score, "passed": score == 1.0, "scores": scores_of})
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rewritten))
    (run / ".columns.npz").unlink(missing_ok=True)  # the records were edited by hand
    return run


# --------------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------------


def test_a_mean_of_one_continuous_score_has_no_interval(cli: Cli, task_root: TaskRoot) -> None:
    run = scored_run(cli, task_root, "one", [0.6])
    report = build_report(run)
    assert (report.overall.mean, report.overall.ci, report.overall.ci_method) == (0.6, None, "none")
    shown = cli("report", "--run", run)
    assert "60.0–60.0" not in shown.out and "[95% CI –]" in shown.out
    assert "note: alpha: no interval from 1 sample" in shown.out


def test_ci_low_gate_on_one_sample_fails_with_the_reason(cli: Cli, task_root: TaskRoot) -> None:
    run = scored_run(cli, task_root, "one", [0.6])
    gated = cli("report", "--run", run, "--fail-below", "0.55", "--gate-on", "ci-low")
    assert gated.code == 1
    assert "gate FAIL overall ci-low: no interval from 1 sample" in gated.out
    assert gated.err.strip() == "error: gate failed: overall ci-low: no interval from 1 sample"


def test_equal_continuous_scores_are_reported_as_such(cli: Cli, task_root: TaskRoot) -> None:
    report = build_report(scored_run(cli, task_root, "flat", [0.6] * 4))
    assert report.overall.ci is None and report.overall.mean == pytest.approx(0.6)
    assert "alpha: no interval: all 4 values equal (60.0%), no spread to estimate one from" in report.notes


def test_bootstrap_on_all_right_falls_back_to_wilson_and_says_so(cli: Cli, task_root: TaskRoot) -> None:
    report = build_report(scored_run(cli, task_root, "all", [1.0] * 5), ci="bootstrap")
    # statsmodels proportion_confint(5, 5, method="wilson"); the percentile bootstrap printed 100.0–100.0
    assert report.overall.ci == pytest.approx((0.5655175352168252, 1.0))
    assert report.overall.ci_method == "wilson"
    assert any(n.startswith("--ci bootstrap: alpha scored all right or all wrong") for n in report.notes)


def test_bootstrap_below_30_samples_is_flagged_approximate(cli: Cli, task_root: TaskRoot) -> None:
    report = build_report(scored_run(cli, task_root, "c5", [0.1, 0.5, 0.6, 0.9, 0.95]), ci="bootstrap")
    assert report.overall.ci_method == "bootstrap"
    assert any(n.startswith("--ci bootstrap is approximate below 30 samples (alpha)") for n in report.notes)


def test_a_continuous_mean_takes_the_student_t_interval_clipped(cli: Cli, task_root: TaskRoot) -> None:
    report = build_report(scored_run(cli, task_root, "c5", [0.1, 0.5, 0.6, 0.9, 0.95]))
    # scipy stats.t.interval(0.95, 4, loc=0.61, scale=sd/sqrt(5)) = (0.18347, 1.03653), the top clipped to 1;
    # the percentile bootstrap printed 34.0–86.0
    assert report.overall.ci_method == "t"
    assert report.overall.ci == pytest.approx((0.1834744097203872, 1.0))
    assert any(m.startswith("t: Student-t, clipped to 0–100") for m in report.headline.ci_methods)


def test_epoch_means_per_sample_take_the_student_t_interval(cli: Cli, task_root: TaskRoot) -> None:
    run = as_three_identical_epochs(scored_run(cli, task_root, "e", [1.0] * 5), task_root.root / "results" / "e3")
    # five samples whose epochs were right 3, 2, 1, 0 and 2 times of 3: per-sample means 1, 2/3, 1/3, 0, 2/3
    right = {"q0000": 3, "q0001": 2, "q0002": 1, "q0003": 0, "q0004": 2}
    records = [{**r, "score": float(r["epoch"] < right[r["sample_id"]])} for r in read_records(run)]
    records = [{**r, "scores": {"exact_match": r["score"]}, "passed": r["score"] == 1.0} for r in records]
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    report = build_report(run)
    # scipy stats.t.interval(0.95, 4, loc=8/15, scale=sd/sqrt(5)) of the five means = (0.06143, 1.00524), clipped;
    # over the 15 records Wilson(9, 15) would have been 0.357–0.802
    assert report.overall.ci_method == "t-by-sample"
    assert report.overall.ci == pytest.approx((0.06142840767257596, 1.0))


def test_rows_with_different_interval_methods_name_theirs(cli: Cli, task_root: TaskRoot) -> None:
    run = scored_run(cli, task_root, "mixed", [1.0, 0.4, 0.0, 0.7, 1.0, 0.9], axes=("alpha", "beta"))
    report = build_report(run)
    assert [a.ci_method for a in report.axes] == ["wilson", "t"]
    shown = cli("report", "--run", run, "--format", "markdown")
    assert "| axis | n | mean % | 95% CI | CI method |" in shown.out
    assert "| alpha | 3 |" in shown.out and "| wilson |" in shown.out and "| t |" in shown.out


def test_precision_advice_when_all_right_uses_the_interval_end_nearest_half(cli: Cli, task_root: TaskRoot) -> None:
    run = scored_run(cli, task_root, "all", [1.0] * 5)
    (note,) = build_report(run).precision
    # p = 0.5655 (statsmodels Wilson 5/5 lower end); the first n at which floor(pn) and ceil(pn) right both have a
    # statsmodels Wilson interval within ±3 points: 1,046 (brute force over n; it said 1, then 1,049 by the
    # normal approximation, while `plan --p 0.5655` said 1,046)
    assert note.needed == 1046 and note.width == pytest.approx(1 - 0.5655175352168252)
    shown = cli("report", "--run", run).out
    assert "95% interval 56.6–100.0, 43.4 points wide, from 5 samples; ±3 points needs about 1,046 samples" in shown
    # adopt-s33 8: HumanEval's 164 problems were told they need 291, without a word that the dataset cannot give them
    samples = json.loads((run / "manifest.json").read_text())["dataset"]["sample_count"]
    assert note.dataset_samples == samples < 1046
    assert f"needs about 1,046 samples (at p = 56.6%, the interval's end nearest 50%; at most 1,064), more than the " \
           f"whole dataset's {samples:,}" in shown  # fmt: skip
    assert "±21.7" not in shown and "needs about 1 samples" not in shown


def test_precision_advice_for_few_continuous_scores_takes_the_largest_sd_they_allow(
    cli: Cli, task_root: TaskRoot
) -> None:
    (note,) = build_report(scored_run(cli, task_root, "c5", [0.1, 0.5, 0.6, 0.9, 0.95])).precision
    # observed SD 0.343511; its one-sided 95% upper bound s * sqrt(4 / scipy chi2.ppf(0.05, 4)) = 0.8149, above
    # 0.5, the most a [0, 1] score can spread: the worst case, ceil(norm.ppf(0.975)^2 * 0.25 / 0.03^2) = 1,068
    # stats-audit-s26 F5: "SD ≤ 0.500, the 95% upper bound of the observed 0.527" read as a bound below what was seen
    assert note.needed == 1068 and note.needed_basis == (
        "SD ≤ 0.500, the most a score of 0 to 1 can have: the observed 0.344 over 5 samples bounds nothing tighter"
    )


# 40 scores drawn once from Beta(2, 5) (numpy default_rng(3), rounded to 3 places)
FORTY = [
    0.513,
    0.43,
    0.131,
    0.327,
    0.251,
    0.222,
    0.124,
    0.314,
    0.388,
    0.118,
    0.197,
    0.453,
    0.19,
    0.213,
    0.583,
    0.319,
    0.666,
    0.191,
    0.205,
    0.117,
    0.342,
    0.091,
    0.163,
    0.1,
    0.415,
    0.303,
    0.228,
    0.748,
    0.119,
    0.127,
    0.477,
    0.382,
    0.141,
    0.184,
    0.056,
    0.31,
    0.358,
    0.31,
    0.328,
    0.249,
]


def test_precision_advice_for_continuous_scores_uses_the_upper_bound_of_their_sd(cli: Cli, task_root: TaskRoot) -> None:
    (note,) = build_report(scored_run(cli, task_root, "c40", FORTY)).precision
    # scipy 1.17.1: SD 0.161273, upper bound 0.161273 * sqrt(39 / chi2.ppf(0.05, 39)) = 0.198686,
    # ceil(norm.ppf(0.975)^2 * 0.198686^2 / 0.03^2) = 169 (the point estimate said 112)
    assert note.needed == 169 and "SD ≤ 0.199" in note.needed_basis


def test_with_epochs_the_n_column_shows_the_samples(cli: Cli, task_root: TaskRoot) -> None:
    run = as_three_identical_epochs(scored_run(cli, task_root, "e", [1, 1, 1, 1, 0]), task_root.root / "results" / "e3")
    shown = cli("report", "--run", run, "--format", "markdown")
    # statsmodels proportion_confint(4, 5, method="wilson") = 37.55–96.38: over the 5 samples, not the 15 records
    assert "| alpha | 15 (5 samples) | 80.0 | 37.6–96.4 |" in shown.out
    # stats-s33 2: "cost/sample" was a record's mean cost, a third of what a sample of 3 epochs costs
    header = shown.out.splitlines()[2]
    assert "| cost/record |" in header and "cost/sample" not in header
    assert "| cost/sample |" in cli("report", "--run", task_root.root / "results" / "e", "--format", "markdown").out


def test_the_macro_mean_without_errors_names_the_axes_it_is_over_when_one_is_all_errors(
    cli: Cli, task_root: TaskRoot
) -> None:
    # stats-audit-s26 F10: an axis of errors only has no mean without errors; the macro mean was over the others,
    # beside a headline "(over 2 axes)", with nothing said
    run = scored_run(cli, task_root, "half", [1.0, None, 0.0, None, 1.0, None], axes=("alpha", "beta"))
    shown = cli("report", "--run", run).out
    assert "macro mean (over 2 axes) 33.3%" in shown  # errors as wrong: alpha 2/3, beta 0
    assert "errors excluded instead: macro mean (over the 1 axis with a record that is no error) 66.7%" in shown


@pytest.mark.parametrize("scores", [[None] * 6, [1.0, None, 0.0, None, 1.0, None]])
def test_rows_of_errors_only_are_noted_as_measuring_no_answer_and_get_no_precision_line(
    cli: Cli, task_root: TaskRoot, scores: list[float | None]
) -> None:
    # stats-s33 1: 55 errors read "0.0% [95% CI 0.0–6.5]" and "±3 points needs about 1,046 samples", unremarked
    run = scored_run(cli, task_root, "errs", scores, axes=("alpha", "beta"))
    report = build_report(run)
    where = f"see eval-harness inspect --run {run} --errors"
    if None not in scores[::2]:  # beta alone is all errors
        assert f"every record of beta is an error (counted as wrong): its mean and interval measure the errors, not "\
               f"the model's answers; {where}" in report.notes  # fmt: skip
        assert "beta" not in [p.axis for p in report.precision]
    else:
        assert f"every record is an error (counted as wrong): the means and intervals measure the errors, not the "\
               f"model's answers, of which there were none; {where}" in report.notes  # fmt: skip
        assert report.precision == []


def test_a_scorer_of_one_value_shows_no_spread(cli: Cli, task_root: TaskRoot) -> None:
    # stats-audit-s26 F8: one value showed std 0.000, where the same report says there is no spread to estimate
    run = scored_run(cli, task_root, "one", [0.4])
    (scorer,) = build_report(run).scorers
    assert (scorer.n, scorer.std) == (1, None)


def test_the_mean_excluding_errors_is_shown_with_its_interval(cli: Cli, task_root: TaskRoot) -> None:
    run = scored_run(cli, task_root, "err", [1.0, 1.0, 1.0, None, None])
    shown = cli("report", "--run", run, "--format", "markdown")
    # three clean records, all right: statsmodels proportion_confint(3, 3, method="wilson") = 43.85–100
    assert "| alpha | 5 | 60.0 | 23.1–88.2 | 100.0 (43.9–100.0) |" in shown.out


# --------------------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------------------


def pair(cli: Cli, root: TaskRoot, a: Sequence[float | None], b: Sequence[float | None]) -> tuple[Path, Path]:
    return scored_run(cli, root, "a", a), scored_run(cli, root, "b", b)


def test_compare_of_0_1_pairs_takes_newcombes_interval(cli: Cli, task_root: TaskRoot) -> None:
    comparison = compare_runs(*pair(cli, task_root, [0.0] * 5, [1.0] * 5))
    (axis,) = comparison.axes
    # Newcombe (1998) method 10 of (0, 0, 5, 0) from statsmodels Wilson intervals: [+38.6, +100] (the paired
    # bootstrap printed [+100, +100]); exact McNemar p = 0.0625 (statsmodels): no detectable difference
    assert axis.diff_ci == pytest.approx((0.38554900569034356, 1.0)) and axis.diff_ci_method == "newcombe"
    assert (axis.p_value, axis.verdict) == (0.0625, "no_difference")
    assert any(n.startswith("alpha: the 95% interval of the difference (Newcombe") for n in comparison.notes)
    assert any(n.endswith("the exact test decides") for n in comparison.notes)


def test_compare_of_identical_runs_gives_no_zero_width_interval(cli: Cli, task_root: TaskRoot) -> None:
    scores = [1.0, 0.0, 1.0, 1.0, 0.0]
    (axis,) = compare_runs(*pair(cli, task_root, scores, scores)).axes
    # Newcombe of (3, 0, 0, 2) with the continuity-corrected phi (biostatUZH's confIntPairedProportion,
    # transliterated with statsmodels' Wilson intervals): ±30.7 points (the bootstrap said [0.0, 0.0])
    assert axis.diff_ci == pytest.approx((-0.3073231091942119, 0.3073231091942119))


def test_compare_of_few_continuous_pairs_takes_the_t_interval_and_says_the_test_decides(
    cli: Cli, task_root: TaskRoot
) -> None:
    comparison = compare_runs(*pair(cli, task_root, [0.2, 0.3, 0.4, 0.5, 0.6], [0.25, 0.4, 0.45, 0.6, 0.7]))
    (axis,) = comparison.axes
    # scipy t.interval on the differences [0.046, 0.114]; exact sign-flip p 0.0625 (permutation_test)
    assert axis.diff_ci == pytest.approx((0.045995630967087205, 0.11400436903291278)) and axis.diff_ci_method == "t"
    assert (axis.test, axis.p_value, axis.verdict) == ("sign-flip", pytest.approx(0.0625), "no_difference")
    assert any("(the Student-t interval) excludes 0, but the sign-flip test finds no" in n for n in comparison.notes)


def test_compare_of_equal_continuous_differences_says_so(cli: Cli, task_root: TaskRoot) -> None:
    a = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    comparison = compare_runs(*pair(cli, task_root, a, [x + 0.01 for x in a]))
    (axis,) = comparison.axes
    assert axis.diff_ci is None and axis.p_value == pytest.approx(2 / 2**6)  # exact sign-flip, by hand
    assert "alpha: all 6 differences equal (+1.0 points): no spread to estimate an interval from; the sign-flip " \
        "test is exact" in comparison.notes  # fmt: skip


@pytest.mark.parametrize(("step", "shown"), [(-0.01, "−1.0"), (-0.0001, "0.0")])
def test_equal_differences_note_signs_its_points_as_the_tables_do(
    cli: Cli, task_root: TaskRoot, step: float, shown: str
) -> None:
    # The note printed its own "-0.0" for a loss that rounds to nothing, where the tables print "0.0".
    a = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    comparison = compare_runs(*pair(cli, task_root, a, [x + step for x in a]))
    assert f"alpha: all 6 differences equal ({shown} points): no spread to estimate an interval from; the " \
        "sign-flip test is exact" in comparison.notes  # fmt: skip


def test_compare_with_several_axes_says_its_intervals_are_unadjusted(cli: Cli, task_root: TaskRoot) -> None:
    axes = ("alpha", "beta")
    runs = scored_run(cli, task_root, "a", [1.0, 0.0] * 6, axes), scored_run(cli, task_root, "b", [1.0] * 12, axes)
    comparison = compare_runs(*runs)
    assert any("not adjusted for the 2 axes" in note for note in comparison.notes)
    shown = cli("compare", "--run-a", runs[0], "--run-b", runs[1], "--format", "markdown")
    assert "95% CI of diff (unadjusted)" in shown.out


def test_compare_with_epochs_shows_the_samples_in_the_n_column(cli: Cli, task_root: TaskRoot) -> None:
    a, b = pair(cli, task_root, [0.0] * 8, [1.0] * 6 + [0.0] * 2)
    results = task_root.root / "results"
    a3, b3 = as_three_identical_epochs(a, results / "a3"), as_three_identical_epochs(b, results / "b3")
    shown = cli("compare", "--run-a", a3, "--run-b", b3, "--format", "markdown")
    assert "| alpha | 24 (8 samples) |" in shown.out
    assert "| cost/record A | cost/record B |" in shown.out and "cost/sample" not in shown.out
    assert "| cost/sample A | cost/sample B |" in cli("compare", "--run-a", a, "--run-b", b, "--format", "markdown").out


def test_compare_of_runs_with_no_sample_in_common_is_a_one_line_error(cli: Cli, task_root: TaskRoot) -> None:
    a = scored_run(cli, task_root, "a", [1.0] * 4)
    other = task_root.data("other.jsonl", [{"id": f"z{i}", "input": f"{i}+1", "target": str(i + 1)} for i in range(4)])
    made = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--dataset", other, "--model", "mock/b",
               "--output-dir", task_root.root / "results", "--run-id", "b", "--quiet")  # fmt: skip
    assert made.code == 0, made.err
    refused = cli("compare", "--run-a", a, "--run-b", task_root.root / "results" / "b", "--force")
    assert refused.code == 2 and refused.out == ""
    (line,) = refused.err.strip().splitlines()[-1:]
    assert line.startswith("error: the runs share no sample; nothing to compare")


def test_a_verdict_made_of_one_runs_errors_is_flagged(cli: Cli, task_root: TaskRoot) -> None:
    comparison = compare_runs(*pair(cli, task_root, [1.0] * 10 + [0.0] * 10, [None] * 6 + [1.0] * 4 + [0.0] * 10))
    (axis,) = comparison.axes
    assert axis.verdict == "a_better"  # exact McNemar p 0.03125 (statsmodels), all six from B's errors
    assert any(
        n.startswith("alpha: 6 of the 6 records where A scored higher are errors in B") for n in comparison.notes
    )


# --------------------------------------------------------------------------------------------------
# p-values as printed
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.04996, "0.0499"),  # rounding to 0.0500 would read as "not below 0.05" beside "B better"
        (0.0499, "0.0499"),
        (0.0504, "0.0504"),  # .3f printed 0.050 for both of these
        (0.0654296875, "0.0654"),
        (0.03125, "0.0312"),
        (0.125, "0.125"),
        (3.368292398368796e-07, "3.4e-07"),
        (0.0002, "0.00020"),  # gates-s31: "0.0002", one significant figure where two are promised
        (0.00016, "0.00016"),
        (1.0, "1"),
    ],
)
def test_p_values_never_round_across_five_percent(value: float, shown: str) -> None:
    assert p_value(value) == shown


def test_compare_does_not_say_intervals_overlap_when_there_are_none(cli: Cli, task_root: TaskRoot) -> None:
    # one continuous score each: no interval on either side, so "CIs overlap: yes" beside two "–" said nothing
    a, b = pair(cli, task_root, [0.4], [0.6])
    shown = cli("compare", "--run-a", a, "--run-b", b, "--format", "markdown").out
    overall = next(line for line in shown.splitlines() if line.startswith("| overall"))
    assert "| yes |" not in overall and "| no |" not in overall


# audit s29 -----------------------------------------------------------------------------------------


def epochs_disagreeing(cli: Cli, root: TaskRoot, scores: Sequence[float]) -> Path:
    """``scored_run`` as three epochs, the first sample wrong in its last epoch: per-sample means not 0 or 1."""
    run = as_three_identical_epochs(scored_run(cli, root, "one", scores), root.root / "results" / "three")
    records = read_records(run)
    first = min(r["sample_id"] for r in records)
    for r in records:
        if r["sample_id"] == first and r["epoch"] == 2:
            r.update(score=0.0, passed=False, scores={"exact_match": 0.0})
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (run / ".columns.npz").unlink(missing_ok=True)
    return run


def test_an_exact_ci_on_per_sample_means_says_why_student_t_instead(cli: Cli, task_root: TaskRoot) -> None:
    # before: nothing said why --ci clopper-pearson gave a t-by-sample row (a comment said the epochs note did)
    run = epochs_disagreeing(cli, task_root, [1.0, 0.0, 1.0, 1.0, 1.0])
    shown = cli("report", "--run", run, "--ci", "clopper-pearson")
    assert shown.code == 0, shown.err
    assert (
        "--ci clopper-pearson applies to 0/1 scores; alpha has samples whose epochs disagree (means of 0/1): "
        "Student-t" in " ".join(shown.out.split())
    )


def test_one_sample_over_epochs_is_counted_as_one_sample(cli: Cli, task_root: TaskRoot) -> None:
    run = as_three_identical_epochs(scored_run(cli, task_root, "one", [1.0]), task_root.root / "results" / "three")
    shown = cli("report", "--run", run, "--format", "markdown")
    assert "3 (1 sample)" in shown.out and "(1 samples)" not in shown.out  # before: "3 (1 samples)"


def test_compare_json_has_no_overlap_where_a_run_has_no_interval(cli: Cli, task_root: TaskRoot) -> None:
    # before: intervals_overlap true beside two null intervals (the table showed "–")
    a, b = pair(cli, task_root, [0.4], [0.6])
    shown = json.loads(cli("compare", "--run-a", a, "--run-b", b, "--format", "json").out)
    assert [(x["ci_a"], x["ci_b"], x["intervals_overlap"]) for x in shown["axes"]] == [(None, None, None)]
