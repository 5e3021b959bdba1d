"""Comparing two runs (eval_harness.compare) made by the real CLI with the mock provider."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import CliResult, TaskRoot, as_three_identical_epochs, read_records

from eval_harness.aggregate import load_columns
from eval_harness.compare import compare_runs, join_keys
from eval_harness.errors import ConfigError

Cli = Callable[..., CliResult]

TWO_SCORERS = (
    'name = "adder"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
    '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n'
    '[[scorers]]\nname = "exact_match"\nalias = "strict"\nargs = { mode = "strict" }\n'
)


def make_run(cli: Cli, root: TaskRoot, run_id: str, *args: str, task: str = "adder") -> Path:
    out = root.root / "results"
    result = cli(
        "run", "--task", root.root / "tasks" / f"{task}.toml", "--output-dir", out, "--run-id", run_id, "--quiet", *args
    )
    assert result.code == 0, result.err
    return out / run_id


def test_paired_statistics_and_verdicts(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "skill.alpha=1", "--model-arg", "skill=0.5")
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--model-arg", "skill.alpha=0", "--model-arg", "skill=0.5")
    comparison = compare_runs(a, b)
    alpha, beta = comparison.axes
    assert (alpha.axis, alpha.n, alpha.mean_a, alpha.mean_b, alpha.diff) == ("alpha", 20, 1.0, 0.0, -1.0)
    assert alpha.test == "mcnemar"
    # 20 discordant pairs all one way: exact McNemar p = 2 * 0.5**20 (scipy binomtest(0, 20)); Holm x2 at most
    assert alpha.p_value == pytest.approx(2 * 0.5**20)
    assert alpha.p_adjusted <= 2 * alpha.p_value
    assert alpha.separable and alpha.verdict == "a_better" and not alpha.intervals_overlap
    assert comparison.regressions == [alpha]
    assert beta.n == 20 and beta.verdict in ("no_difference", "a_better", "b_better")
    assert comparison.paired == 40 and comparison.only_a == comparison.only_b == 0
    assert comparison.headline.axes_a_better[0] == "alpha"


def test_holm_adjusts_across_axes(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "skill=0.3")
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--model-arg", "skill=0.8")
    comparison = compare_runs(a, b)
    raw = sorted(axis.p_value for axis in comparison.axes)
    adjusted = sorted(axis.p_adjusted for axis in comparison.axes)
    # Holm with two p-values: min(1, 2 p(1)), then max(that, p(2)) (statsmodels multipletests 'holm')
    assert adjusted[0] == pytest.approx(min(1.0, 2 * raw[0]))
    assert adjusted[1] == pytest.approx(max(adjusted[0], raw[1]))


def test_samples_in_one_run_only_are_counted_and_excluded(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--limit", "30")
    comparison = compare_runs(a, b)
    assert (comparison.paired, comparison.only_a, comparison.only_b) == (30, 10, 0)
    assert sum(axis.n for axis in comparison.axes) == 30
    assert any("10 records only in A" in note for note in comparison.notes)


def test_join_matches_sample_and_epoch(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--epochs", "2")
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--limit", "5")
    columns_a, columns_b = load_columns(a / "samples.jsonl"), load_columns(b / "samples.jsonl")
    ia, ib = join_keys(columns_a.key_hash, columns_b.key_hash)
    records_a, records_b = read_records(a), read_records(b)
    pairs = {(records_a[i]["sample_id"], records_a[i]["epoch"]) for i in ia.tolist()}
    assert pairs == {(r["sample_id"], r["epoch"]) for r in records_b}  # epoch 0 of the first five only
    assert np.array_equal(columns_a.epoch[ia], columns_b.epoch[ib])


def test_non_binary_scores_take_a_t_interval_with_the_sign_flip_or_paired_t_test(cli: Cli, task_root: TaskRoot) -> None:
    task_root.task("adder2", TWO_SCORERS)
    # format_ok < 1: some answers come wrapped in chatter, right for the numeric scorer, wrong for strict: 0.5.
    args = ("--model-arg", "format_ok=0.5", "--model-arg", "skill=0.8")
    a = make_run(cli, task_root, "a", "--model", "mock/x", *args, task="adder2")
    b = make_run(cli, task_root, "b", "--model", "mock/y", *args, task="adder2")
    comparison = compare_runs(a, b)
    # 20 samples an axis: the sign-flip test gives the p-value (below 30 pairs); 40 overall: the paired t-test,
    # whose statistic the t interval shares
    assert {axis.test for axis in comparison.axes} == {"sign-flip"} and comparison.overall.test == "paired-t"
    for axis in [*comparison.axes, comparison.overall]:
        assert axis.diff_ci_method == "t" and axis.diff_ci is not None and axis.diff_ci[0] <= axis.diff_ci[1]


def test_latency_cost_and_error_deltas(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "latency_ms=1",
                 "--model-arg", "cost_per_1k_tokens=0.001")  # fmt: skip
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--model-arg", "latency_ms=20", "--model-arg",
                 "cost_per_1k_tokens=0.004", "--model-arg", "error_rate=0.25", "--max-retries", "0")  # fmt: skip
    overall = compare_runs(a, b).overall
    assert overall.latency_p50_diff_ms is not None and overall.latency_p50_diff_ms > 15
    assert overall.cost_mean_a is not None and overall.cost_mean_b is not None
    assert overall.cost_mean_b > 3 * overall.cost_mean_a * 0.7  # 4x the price, minus the errored (unpriced) calls
    errors_b = sum(r["error"] is not None for r in read_records(b))
    assert overall.error_rate_a == 0.0 and overall.error_rate_b == pytest.approx(errors_b / 40)
    assert overall.error_rate_diff == pytest.approx(errors_b / 40)


def test_refuses_different_datasets_unless_forced(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    other = task_root.data(
        "other.jsonl", [{"id": f"q{i:04d}", "input": f"{i}+2", "target": str(i + 2), "axis": "alpha"} for i in range(8)]
    )
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--dataset", str(other))
    with pytest.raises(ConfigError, match=r"different datasets \(A: .*adder\.jsonl sha256 \w{12}, B: .*other\.jsonl"):
        compare_runs(a, b)
    forced = compare_runs(a, b, force=True)
    assert forced.forced and forced.forced[0].startswith("different datasets")
    assert forced.paired == 8 and forced.only_a == 32 and forced.only_b == 0


def test_runs_that_share_no_sample_are_refused_not_given_a_verdict(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    other = task_root.data("other.jsonl", [{"id": f"z{i}", "input": f"{i}+2", "target": str(i + 2)} for i in range(4)])
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--dataset", str(other))
    with pytest.raises(
        ConfigError, match=r"^the runs share no sample; nothing to compare \(.*: 40 records, .*: 4 records"
    ):
        compare_runs(a, b, force=True)


def test_refuses_different_scorers(cli: Cli, task_root: TaskRoot) -> None:
    task_root.task("adder2", TWO_SCORERS)
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    b = make_run(cli, task_root, "b", "--model", "mock/y", task="adder2")
    with pytest.raises(ConfigError, match=r"different scorers \(A: exact_match\(mode='numeric'\), B: exact_match"):
        compare_runs(a, b)
    assert compare_runs(a, b, force=True).forced[0].startswith("different scorers")


def test_identical_runs_have_no_detectable_difference(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "skill=0.6")
    comparison = compare_runs(a, a)
    assert all(axis.verdict == "no_difference" and axis.diff == 0.0 for axis in comparison.axes)
    assert comparison.headline.verdict == "no_difference" and comparison.headline.macro_diff == 0.0


def test_reading_the_runs_in_two_processes_gives_the_same_comparison(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "skill=0.4")
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--model-arg", "skill=0.9", "--limit", "35")
    assert compare_runs(a, b, parallel=True) == compare_runs(a, b, parallel=False)


def test_epochs_of_one_sample_are_one_unit_of_the_paired_test(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "skill=0.9")
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--model-arg", "skill=0.5")
    once = compare_runs(a, b)
    thrice = compare_runs(as_three_identical_epochs(a, a.parent / "a3"), as_three_identical_epochs(b, b.parent / "b3"))
    # three copies of the same answers are no more evidence than one: same samples, test, p-values, intervals
    for one, three in zip([*once.axes, once.overall], [*thrice.axes, thrice.overall], strict=True):
        assert (three.n, three.samples) == (3 * one.n, one.n)
        assert (three.test, three.p_value, three.ci_a, three.diff_ci) == (one.test, one.p_value, one.ci_a, one.diff_ci)
        assert three.diff == pytest.approx(one.diff)
    assert any("each sample is one unit of the paired tests" in note for note in thrice.notes)
    assert not any("each sample is one unit" in note for note in once.notes)
