"""Comparing two runs (eval_harness.compare) made by the real CLI with the mock provider."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import CliResult, TaskRoot, as_three_identical_epochs, read_records
from fake_llm_server import FakeLLMServer

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
    assert comparison.regressions == [alpha, comparison.overall]  # overall: B is worse there too
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


def test_one_record_only_in_a_and_a_torn_last_line_are_said_as_such(cli: Cli, task_root: TaskRoot) -> None:
    # reportcompare-s30 6: "1 records only in A"; a torn last line that report mentions, compare did not
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    b = make_run(cli, task_root, "b", "--model", "mock/y")
    samples = b / "samples.jsonl"
    lines = samples.read_bytes().splitlines(keepends=True)
    samples.write_bytes(b"".join(lines[:-1]) + lines[-1][:25])  # the last record torn: 39 of 40 left
    notes = compare_runs(a, b).notes
    assert notes[0] == "B: a torn last line (25 bytes) of its samples.jsonl was ignored"
    assert "1 record only in A and 0 only in B are left out of the paired statistics" in notes


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


# --------------------------------------------------------------------------------------------------
# differs: the settings that tell the two runs apart, from their manifests
# --------------------------------------------------------------------------------------------------


def differs(a: Path, b: Path, **kwargs: bool) -> list[str]:
    return [change.text for change in compare_runs(a, b, **kwargs).differs]


def test_differs_names_the_generation_settings_of_two_runs_of_one_model(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--temperature", "0")
    b = make_run(cli, task_root, "b", "--model", "mock/x", "--temperature", "0.8", "--max-tokens", "32")
    changes = compare_runs(a, b).differs
    # the adder task sets no [generation]: max_tokens is the provider's default in A
    assert [c.text for c in changes] == ["generation.temperature 0.0 → 0.8", "generation.max_tokens unset → 32"]
    assert [(c.setting, c.a, c.b) for c in changes] == [
        ("task.generation.temperature", 0.0, 0.8),
        ("task.generation.max_tokens", None, 32),
    ]


def test_differs_names_the_model_and_each_model_argument_that_differs(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "skill=0.5")
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--model-arg", "skill=0.5", "--model-arg", "skill.alpha=1",
                 "--model-arg", "latency_ms=2")  # fmt: skip
    assert differs(a, b) == [
        "model mock/x → mock/y",
        "model.args.latency_ms 0.0 → 2.0",
        "model.args.skill_by_axis.alpha unset → 1.0",  # A's arguments in their order, then those only B sets
    ]


def test_differs_leaves_out_pacing_and_bookkeeping(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    b = make_run(cli, task_root, "b", "--model", "mock/x", "--concurrency", "3", "--timeout", "9", "--max-retries", "1",
                 "--rpm", "100000", "--tpm", "9000000", "--cache")  # fmt: skip
    # run ids, times, concurrency, timeout, retries, rate limits and the cache all differ: none is a setting
    assert differs(a, b) == []


def test_differs_names_seed_epochs_and_limit(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    b = make_run(cli, task_root, "b", "--model", "mock/x", "--seed", "7", "--epochs", "2", "--limit", "30")
    assert differs(a, b) == ["seed 0 → 7", "epochs 1 → 2", "limit unset → 30"]


def test_differs_shows_an_edited_template_by_the_sha256_of_its_two_texts(cli: Cli, task_root: TaskRoot) -> None:
    before, after = "{{ input }}\nAnswer only.\n", "{{ input }}\nAnswer with the number only.\n"
    task_root.template("plain.jinja2", before)
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    task_root.template("plain.jinja2", after)
    b = make_run(cli, task_root, "b", "--model", "mock/x")
    sha_a, sha_b = (hashlib.sha256(text.encode()).hexdigest() for text in (before, after))
    assert differs(a, b) == [f"template plain.jinja2 (sha256 {sha_a[:12]} → {sha_b[:12]})"]


FEW_SHOT_TASK = (
    'name = "adder"\ntemplate = "shots.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
    '[few_shot]\nk = {k}\npath = "data/shots.jsonl"\n'
    '[[scorers]]\nname = "exact_match"\nargs = {{ mode = "numeric" }}\n'
)


def few_shot_root(task_root: TaskRoot, k: int, shots: list[str]) -> None:
    task_root.template("shots.jinja2", "{% for e in examples %}{{ e.input }} {{ e.target }}\n{% endfor %}{{ input }}\n")
    task_root.data("shots.jsonl", [{"input": f"{s}+1", "target": str(int(s) + 1)} for s in shots])
    task_root.task("adder", FEW_SHOT_TASK.format(k=k))


def test_differs_names_a_changed_few_shot_spec(cli: Cli, task_root: TaskRoot) -> None:
    few_shot_root(task_root, 1, ["5", "6"])
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    few_shot_root(task_root, 2, ["5", "6"])
    b = make_run(cli, task_root, "b", "--model", "mock/x")
    assert differs(a, b) == ["few_shot.k 1 → 2"]


def test_differs_names_edited_few_shot_examples_by_the_digests_the_manifests_record(
    cli: Cli, task_root: TaskRoot
) -> None:
    few_shot_root(task_root, 1, ["5"])
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    few_shot_root(task_root, 1, ["7"])
    b = make_run(cli, task_root, "b", "--model", "mock/x")
    sha_a, sha_b = (json.loads((run / "manifest.json").read_text())["task"]["prompt_inputs_sha256"] for run in (a, b))
    assert sha_a != sha_b
    assert differs(a, b) == [f"few-shot examples or template variables (sha256 {sha_a[:12]} → {sha_b[:12]})"]


def test_differs_names_the_dataset_and_scorers_a_forced_comparison_overrode(cli: Cli, task_root: TaskRoot) -> None:
    task_root.task("adder2", TWO_SCORERS.replace("data/adder.jsonl", "data/other.jsonl"))
    other = task_root.data("other.jsonl", [{"id": "q0000", "input": "0+1", "target": "1", "axis": "alpha"}])
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    b = make_run(cli, task_root, "b", "--model", "mock/x", task="adder2")
    sha_a, sha_b = (
        hashlib.sha256(path.read_bytes()).hexdigest()[:12] for path in (task_root.root / "data" / "adder.jsonl", other)
    )
    assert differs(a, b, force=True) == [  # both specs name their task "adder"
        f"dataset adder.jsonl → other.jsonl (sha256 {sha_a} → {sha_b})",
        "scorers exact_match → exact_match + strict",
    ]


def test_differs_never_holds_a_key_given_as_a_model_argument(cli: Cli, task_root: TaskRoot) -> None:
    with FakeLLMServer() as server:
        served = ("--model", "openai-compatible/m", "--model-arg", f"base_url={server.base_url}", "--limit", "2")
        a = make_run(cli, task_root, "a", *served, "--model-arg", "api_key=sk-canary-aaaa")
        b = make_run(cli, task_root, "b", *served, "--model-arg", "api_key=sk-canary-bbbb")
    assert differs(a, b) == []  # the keys differ, but a manifest never records one
    shown = cli("compare", "--run-a", a, "--run-b", b, "--format", "json")
    assert shown.code == 0, shown.err
    assert "sk-canary" not in shown.out and json.loads(shown.out)["differs"] == []


# --------------------------------------------------------------------------------------------------
# pairs that are errors in both runs: a difference of 0 each, whatever the models can do
# --------------------------------------------------------------------------------------------------

# The mock's draws hash (seed, model name, sample id, epoch): two runs of one mock model fail on the same
# samples, as one over-long prompt overflows a model's context in both runs.
SAME_ERRORS = ("--model", "mock/x", "--model-arg", "error_rate=0.6", "--max-retries", "0")


def errored(run: Path, axis: str) -> set[str]:
    return {r["sample_id"] for r in read_records(run) if r["error"] is not None and r["axis"] == axis}


def test_pairs_that_are_errors_in_both_runs_are_counted_in_a_note_per_axis(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", *SAME_ERRORS, "--model-arg", "skill=0.2")
    b = make_run(cli, task_root, "b", *SAME_ERRORS, "--model-arg", "skill=0.9")
    comparison = compare_runs(a, b)
    both = {axis: errored(a, axis) & errored(b, axis) for axis in ("alpha", "beta")}
    assert both["alpha"] == errored(a, "alpha") and 0 < len(both["alpha"]) < 20  # the premise: the same errors
    counts = {"alpha": (len(both["alpha"]), 20), "beta": (len(both["beta"]), 20)}
    counts["overall"] = (len(both["alpha"]) + len(both["beta"]), 40)
    for axis in [*comparison.axes, comparison.overall]:
        k, n = counts[axis.axis]
        assert axis.errors_both == k
        assert (
            f"{axis.axis}: {k} of {n} pairs are errors in both runs (a difference of 0 each); the test rests on the "
            f"other {n - k}"
        ) in comparison.notes


def test_errors_in_one_run_only_are_not_counted_as_errors_in_both(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    b = make_run(cli, task_root, "b", *SAME_ERRORS)
    comparison = compare_runs(a, b)
    assert errored(b, "alpha") and all(axis.errors_both == 0 for axis in [*comparison.axes, comparison.overall])
    assert not any("errors in both runs" in note for note in comparison.notes)


def test_when_every_pair_is_an_error_in_both_runs_the_note_says_nothing_is_left(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(
        cli, task_root, "a", "--model", "mock/x", "--model-arg", "error_rate=1", "--max-retries", "0", "--limit", "4"
    )
    b = make_run(
        cli, task_root, "b", "--model", "mock/y", "--model-arg", "error_rate=1", "--max-retries", "0", "--limit", "4"
    )
    assert (
        "alpha: 2 of 2 pairs are errors in both runs (a difference of 0 each); no pair is left to tell the runs apart"
        in compare_runs(a, b).notes
    )


def test_with_epochs_the_note_counts_the_samples_that_are_errors_in_both_runs_in_every_epoch(
    cli: Cli, task_root: TaskRoot
) -> None:
    a = make_run(cli, task_root, "a", *SAME_ERRORS, "--model-arg", "skill=0.2", "--epochs", "2")
    b = make_run(cli, task_root, "b", *SAME_ERRORS, "--model-arg", "skill=0.9", "--epochs", "2")
    failed = [
        {(r["sample_id"], r["epoch"]) for r in read_records(run) if r["error"] is not None and r["axis"] == "alpha"}
        for run in (a, b)
    ]
    both = failed[0] & failed[1]
    # the mock draws per epoch: some samples fail in both epochs, some in one only (their other epoch counts)
    every = {sample for sample, _ in both if (sample, 0) in both and (sample, 1) in both}
    assert 0 < len(every) < len({sample for sample, _ in both})
    assert (
        f"alpha: {len(both)} of 40 paired records are errors in both runs (a difference of 0 each); {len(every)} of "
        f"the 20 samples are errors in both runs in every epoch, so the test rests on the other {20 - len(every)}"
    ) in compare_runs(a, b).notes


def test_a_run_resumed_with_force_across_a_change_gets_a_note(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--limit", "10")
    task_root.template("plain.jinja2", "Q: {{ input }}\n")
    resumed = cli("run", "--resume", a, "--force", "--quiet")
    assert resumed.code == 0, resumed.err
    b = make_run(cli, task_root, "b", "--model", "mock/x", "--limit", "10")
    (change,) = json.loads((a / "manifest.json").read_text())["forced_changes"]
    assert (
        f"A was resumed with --force across changes ({change}): its records may mix the settings before and after "
        "them, while its manifest, which differs compares, holds the first session's"
    ) in compare_runs(a, b).notes


def test_differs_names_a_rescore_by_its_scorers_and_source_run(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x")
    rescored = cli("rescore", "--run", a, "--scorer", "exact_match", "--run-id", "a-strict", "-q")
    assert rescored.code == 0, rescored.err
    # the scorer keys are the same, so the whole specs tell them apart
    assert differs(a, a.parent / "a-strict") == [
        "scorers exact_match(mode='numeric') → exact_match",
        "source_run unset → a",
    ]


JUDGED_TASK = (
    'name = "judged"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
    '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n'
    '[[scorers]]\nname = "rubric_judge"\nalias = "judge"\nweight = 0.0\n'
    'args = { rubric = "rubric.jinja2", criteria = { right = "the answer is right" } }\n'
)


@pytest.fixture
def judged(task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch) -> TaskRoot:
    """The task root with a `judged` task whose rubric is in its templates/."""
    task_root.task("judged", JUDGED_TASK)
    task_root.template("rubric.jinja2", "Grade: {{ output }}\n")
    # run from the task root: find_rubric misses the spec's own templates/ when the place it is given carries
    # the scorer's line ("tasks/judged.toml:8"), so the rubric is found through the working directory
    monkeypatch.chdir(task_root.root)
    return task_root


def test_differs_names_the_judge_model_and_its_arguments(cli: Cli, judged: TaskRoot) -> None:
    a = make_run(cli, judged, "a", "--limit", "4", "--judge-model", "mock/j", task="judged")
    b = make_run(cli, judged, "b", "--limit", "4", "--judge-model", "mock/k", "--judge-arg", "skill=0.3", task="judged")
    assert differs(a, b) == ["judge mock/j → mock/k", "judge.args.skill 0.8 → 0.3"]


def test_differs_names_an_edited_judge_rubric_by_the_runs_fingerprints(cli: Cli, judged: TaskRoot) -> None:
    a = make_run(cli, judged, "a", "--limit", "4", "--judge-model", "mock/j", task="judged")
    judged.template("rubric.jinja2", "Grade this answer: {{ output }}\n")
    b = make_run(cli, judged, "b", "--limit", "4", "--judge-model", "mock/j", task="judged")
    # the manifest records no rubric file, only the fingerprint that covers it
    prints = [json.loads((run / "manifest.json").read_text())["fingerprint"][:12] for run in (a, b)]
    assert differs(a, b) == [f"a judge's rubric or another file a scorer reads (fingerprint {prints[0]} → {prints[1]})"]


# axes too small to show any difference (audit of eval-harness as a CI release gate) --------------------------------
# scipy.stats.binomtest(n, n, 0.5).pvalue, the exact two-sided p of n discordant pairs all one way: 0.0625 at 5,
# 0.03125 at 6
P_MIN_5_PAIRS = 0.0625
P_MIN_6_PAIRS = 0.03125


def test_an_axis_of_five_pairs_is_noted_as_unable_to_show_any_difference(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "skill=0", "--limit", "10")
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--model-arg", "skill=1", "--limit", "10")
    comparison = compare_runs(a, b)
    assert [(axis.axis, axis.p_attainable) for axis in comparison.axes] == [("alpha", P_MIN_5_PAIRS),
                                                                            ("beta", P_MIN_5_PAIRS)]  # fmt: skip
    assert comparison.notes[0] == (
        "alpha, beta: 5 pairs each: the smallest p the exact McNemar test can give is 0.0625 (Holm's "
        "adjustment can only raise it), not below 5% (that takes 6 at least), so no difference can be found there: "
        "'no detectable difference' means the comparison cannot tell"
    )


def test_intervals_apart_beside_no_detectable_difference_are_noted_as_no_test(cli: Cli, task_root: TaskRoot) -> None:
    # stats-audit-s26 F1: 0 of 5 against 5 of 5: Wilson 0.0–43.4 and 56.6–100.0 do not overlap, while the exact
    # McNemar p is 0.0625 (Holm 0.125): "CIs overlap: no" beside "no detectable difference", unexplained
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "skill=0", "--limit", "10")
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--model-arg", "skill=1", "--limit", "10")
    comparison = compare_runs(a, b)
    assert [(axis.intervals_overlap, axis.verdict) for axis in comparison.axes] == [(False, "no_difference")] * 2
    assert comparison.overall.verdict == "b_better"  # 10 pairs all one way: p 0.002, and its intervals apart
    assert (
        "alpha, beta: the two runs' 95% intervals do not overlap, but the paired test finds no detectable "
        "difference: each interval is one run's own and unadjusted, and their overlap is not a test; the test "
        "decides"
    ) in comparison.notes
    assert comparison.overall.p_adjusted is None  # its own test, outside the Holm family


def test_an_axis_of_six_pairs_can_show_a_difference_and_gets_no_such_note(cli: Cli, task_root: TaskRoot) -> None:
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "skill=0", "--limit", "12")
    b = make_run(cli, task_root, "b", "--model", "mock/y", "--model-arg", "skill=1", "--limit", "12")
    comparison = compare_runs(a, b)
    assert [axis.p_attainable for axis in comparison.axes] == [P_MIN_6_PAIRS, P_MIN_6_PAIRS]
    assert not any("the smallest p" in note for note in comparison.notes)


def test_the_smallest_p_counts_only_the_pairs_that_differ(cli: Cli, task_root: TaskRoot) -> None:
    # stats-audit-s26 F4: an exact test reads only the pairs whose scores differ (McNemar's discordant pairs): 20
    # pairs of which 4 differ cannot go below 2·0.5^4 = 0.125, which the note said of 5 pairs only
    a = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "skill=1", "--limit", "40")
    b = make_run(cli, task_root, "b", "--model", "mock/x", "--model-arg", "skill=1", "--limit", "40")
    samples = b / "samples.jsonl"
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    flipped = [r for r in records if r["axis"] == "alpha"][:4]
    for record in flipped:  # four answers of B's made wrong: 4 discordant pairs on alpha, all one way
        record.update(score=0.0, passed=False, scores=dict.fromkeys(record["scores"], 0.0))
    samples.write_text("".join(json.dumps(r) + "\n" for r in records))
    (b / ".columns.npz").unlink(missing_ok=True)
    comparison = compare_runs(a, b)
    alpha, beta = comparison.axes
    assert (alpha.n, alpha.differing, alpha.p_attainable) == (20, 4, 0.125)
    assert (beta.n, beta.differing, beta.p_attainable) == (20, 0, 1.0)
    assert (
        "alpha: 20 pairs, 4 of them differing: the smallest p the exact McNemar test can give is 0.125 (Holm's "
        "adjustment can only raise it), not below 5% (that takes 6 differing at least), so no difference can be "
        "found there: 'no detectable difference' means the comparison cannot tell"
    ) in comparison.notes
    assert not any(note.startswith("beta") for note in comparison.notes)  # none differ: nothing to tell


def test_a_passing_regression_gate_that_cannot_tell_says_so_on_stderr(cli: Cli, task_root: TaskRoot) -> None:
    # gates-s31: 5 of 5 right in A and 0 of 5 in B passed the gate (p 0.0625) with nothing on stderr; the note went
    # to stdout, which a CI job sends to a file with --format json
    base = make_run(cli, task_root, "a", "--model", "mock/x", "--model-arg", "skill=1", "--limit", "5")
    worse = make_run(cli, task_root, "b", "--model", "mock/y", "--model-arg", "skill=0", "--limit", "5")
    untold = cli("compare", "--run-a", base, "--run-b", worse, "--fail-on-regression", "--format", "json")
    assert untold.code == 0 and json.loads(untold.out)["overall"]["p_attainable"] == P_MIN_5_PAIRS
    assert untold.err == (
        "regression gate passed, but B is lower on alpha (−100.0 points, p_adj 0.500), beta (−100.0 points, p_adj "
        "0.500), overall (−100.0 points, p 0.0625), short of significance at 5% (see the notes)\n"
    )
    # over both axes the overall row's 10 pairs reach 5%: the gate fails there, its failures under one prefix
    more = make_run(cli, task_root, "c", "--model", "mock/x", "--model-arg", "skill=1", "--limit", "10")
    most = make_run(cli, task_root, "d", "--model", "mock/y", "--model-arg", "skill=0", "--limit", "10")
    failed = cli("compare", "--run-a", more, "--run-b", most, "--fail-on-regression", "--format", "json")
    assert failed.code == 1
    assert failed.err == (
        "error: regression gate failed: B is significantly worse on overall (−100.0 points, p 0.00195)\n"
    )
