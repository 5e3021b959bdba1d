"""The capability profile built from a run's artifacts (eval_harness.report), on runs made by the real CLI.

Expected statistics are recomputed here from the records themselves (counts, means, pass@k with
math.comb), or pasted from statsmodels/scipy with the source named.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot, as_three_identical_epochs, read_records

from eval_harness.aggregate import summarize
from eval_harness.artifacts import read_manifest
from eval_harness.errors import ArtifactError, ConfigError
from eval_harness.gates import gates_from_flags
from eval_harness.report import build_report
from eval_harness.stats import wilson_sample_size

Cli = Callable[..., CliResult]


def make_run(cli: Cli, task_root: TaskRoot, run_id: str, *args: str) -> Path:
    out = task_root.root / "results"
    result = cli(
        "run", "--task", task_root.root / "tasks" / "adder.toml", "--output-dir", out, "--run-id", run_id,
        "--quiet", *args,
    )  # fmt: skip
    assert result.code in (0, 130), result.err
    return out / run_id


def test_axes_overall_and_headline_match_the_records(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "r", "--model", "mock/m", "--model-arg", "skill=0.6")
    records = read_records(run)
    report = build_report(run)
    by_axis: dict[str, list[float]] = defaultdict(list)
    for record in records:
        by_axis[record["axis"]].append(record["score"])
    assert [a.axis for a in report.axes] == sorted(by_axis)
    for axis in report.axes:
        assert axis.n == len(by_axis[axis.axis])
        assert axis.mean == pytest.approx(sum(by_axis[axis.axis]) / axis.n)
        assert axis.ci is not None and axis.ci[0] <= axis.mean <= axis.ci[1]
        assert axis.ci_method == "wilson"
    assert report.overall.n == 40 and report.run.complete
    assert report.headline.micro_mean == pytest.approx(sum(r["score"] for r in records) / 40)
    assert report.headline.policy == "errors counted as wrong (score 0)"


def test_macro_and_micro_means_differ_when_axes_differ_in_size(cli: Cli, task_root: TaskRoot) -> None:
    # 30 samples on 'big' (all right), 10 on 'small' (all wrong): micro 0.75, macro 0.5.
    task_root.data(
        "adder.jsonl",
        [
            {"id": f"q{i}", "axis": "big" if i < 30 else "small", "input": f"{i}+1", "target": str(i + 1)}
            for i in range(40)
        ],
    )
    run = make_run(cli, task_root, "r", "--model", "mock/m", "--model-arg", "skill.big=1", "--model-arg", "skill=0")
    report = build_report(run)
    assert report.headline.micro_mean == pytest.approx(0.75)
    assert report.headline.macro_mean == pytest.approx(0.5)


def test_errors_are_shown_under_both_policies(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "r", "--model", "mock/m", "--model-arg", "error_rate=0.3", "--max-retries", "0")
    records = read_records(run)
    errors = [r for r in records if r["error"] is not None]
    clean = [r for r in records if r["error"] is None]
    assert errors and clean
    report = build_report(run)
    assert report.overall.errors == len(errors)
    assert report.overall.mean == pytest.approx(sum(r["score"] for r in clean) / len(records))
    assert report.overall.mean_excluding_errors == pytest.approx(sum(r["score"] for r in clean) / len(clean))
    assert report.totals.errors_by_type == {"ProviderError": len(errors)}


def test_epochs_report_pass_at_k_with_the_unbiased_estimator(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "r", "--model", "mock/m", "--model-arg", "skill=0.5", "--epochs", "3")
    passes: dict[str, list[bool]] = defaultdict(list)
    for record in read_records(run):
        passes[record["sample_id"]].append(bool(record["passed"]))
    report = build_report(run)
    overall = report.epochs[-1]
    assert overall.axis == "overall" and overall.k == 3 and overall.samples == 40

    def pass_at(k: int, n: int, c: int) -> float:  # Chen et al. (2021), written out with math.comb
        return 1.0 if n - c < k else 1 - math.comb(n - c, k) / math.comb(n, k)

    counts = [(len(v), sum(v)) for v in passes.values()]
    assert overall.pass_at_1 == pytest.approx(sum(pass_at(1, n, c) for n, c in counts) / len(counts))
    assert overall.pass_at_k == pytest.approx(sum(pass_at(3, n, c) for n, c in counts) / len(counts))
    assert overall.agreement == pytest.approx(sum(c in (0, n) for n, c in counts) / len(counts))
    assert [e.axis for e in report.epochs] == ["alpha", "beta", "overall"]


def test_single_epoch_runs_have_no_epoch_section(cli: Cli, task_root: TaskRoot) -> None:
    assert build_report(make_run(cli, task_root, "r", "--model", "mock/m")).epochs == []


def test_precision_lines_for_axes_wider_than_five_points(cli: Cli, tmp_path: Path) -> None:
    result = cli("run", "--task", "capability_profile", "--model", "mock/arith-strong", "--model-arg",
                 "skill.arithmetic=0.93", "--output-dir", tmp_path, "--run-id", "cp", "--quiet")  # fmt: skip
    assert result.code == 0, result.err
    report = build_report(tmp_path / "cp")
    notes = {p.axis: p for p in report.precision}
    assert set(notes) == {a.axis for a in report.axes if a.ci is not None and a.ci[1] - a.ci[0] > 0.10}
    for axis in report.axes:
        if axis.axis in notes and axis.ci is not None:
            # 0/1 scores: p at the interval's end nearest 50% (0.5 when inside it), never the observed mean
            low, high = axis.ci
            p = 0.5 if low <= 0.5 <= high else (high if high < 0.5 else low)
            # the size `plan` gives (Wilson's, as the interval is; wilson_sample_size is held to statsmodels in
            # test_stats), so the report and `plan --p P` never give two answers to one question
            assert notes[axis.axis].needed == wilson_sample_size(0.03, p=p)
            # statsmodels proportion_confint(k, n, method="wilson"), first n where k = 0.5n fits ±3: 1,064
            assert notes[axis.axis].needed_worst_case == 1064
            assert notes[axis.axis].width == pytest.approx(high - low)


def test_ci_choice_changes_the_interval_and_is_named(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "r", "--model", "mock/m", "--model-arg", "skill=0.7")
    wilson, exact = build_report(run, ci="wilson"), build_report(run, ci="clopper-pearson")
    assert exact.overall.ci_method == "clopper-pearson"
    assert exact.overall.ci is not None and wilson.overall.ci is not None
    assert exact.overall.ci[0] <= wilson.overall.ci[0] and exact.overall.ci[1] >= wilson.overall.ci[1]
    assert any("Clopper-Pearson" in m for m in exact.headline.ci_methods)
    with pytest.raises(ConfigError, match="--ci"):
        build_report(run, ci="jeffreys")


def test_unknown_costs_are_unknown_not_zero(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "r", "--model", "mock/m")
    lines = (run / "samples.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["cost_usd"] = None  # a completed call whose price is unknown
    (run / "samples.jsonl").write_text("\n".join([json.dumps(record), *lines[1:]]) + "\n")
    report = build_report(run)
    assert report.totals.cost_usd is None and not report.totals.cost_known
    assert report.overall.cost_mean is None and report.overall.accuracy_per_dollar is None
    assert any("unknown, not zero" in note for note in report.notes)


def test_interrupted_run_reports_what_is_there_and_what_is_missing(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "r", "--model", "mock/m")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["status"] = "interrupted"
    (run / "manifest.json").write_text(json.dumps(manifest))
    lines = (run / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run / "samples.jsonl").write_bytes(b"".join(lines[:25]) + lines[25][:40])  # 25 records and a torn line
    report = build_report(run)
    assert (report.run.records, report.run.missing, report.run.complete) == (25, 15, False)
    assert report.run.status == "interrupted" and report.run.torn_bytes == 40
    assert any("15 of 40 records missing" in note and "eval-harness resume" in note for note in report.notes)


def test_gates_are_part_of_the_report(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "r", "--model", "mock/m", "--model-arg", "skill=0.7")
    report = build_report(run, gates=gates_from_flags(fail_below=0.99, fail_below_axis=["alpha=0.0"]))
    assert [(g.target, g.passed) for g in report.gates] == [("overall", False), ("alpha", True)]
    assert [g.target for g in report.gates_failed] == ["overall"]


def test_scorer_distributions_cover_every_scorer(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "r", "--model", "mock/m", "--model-arg", "skill=0.7")
    report = build_report(run)
    (scorer,) = report.scorers
    assert scorer.name == "exact_match" and scorer.n == 40
    assert sum(scorer.histogram) == 40 and scorer.histogram[1:9] == [0] * 8  # 0/1 scores: the end bins only


def test_report_of_a_directory_that_is_not_a_run_is_an_artifact_error(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match=r"not found; is .* a run directory"):
        build_report(tmp_path)


# --------------------------------------------------------------------------------------------------
# lines that are not records of this schema, and hand edits the columns cache must not hide
# --------------------------------------------------------------------------------------------------


def _artifact_bytes(run: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(run.iterdir()) if path.is_file() and path.name != ".lock"}


def _resumed_run(cli: Cli, task_root: TaskRoot) -> Path:
    """A run whose second session (a resume) left the columns cache over all 40 records."""
    run = make_run(cli, task_root, "r", "--model", "mock/m", "--model-arg", "skill=0.5")
    lines = (run / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run / "samples.jsonl").write_bytes(b"".join(lines[:25]))
    assert cli("resume", run, "--quiet").code == 0
    assert (run / ".columns.npz").is_file() and len(read_records(run)) == 40
    return run


def test_report_refuses_a_stub_of_another_schema_version_appended_to_a_finished_run(
    cli: Cli, task_root: TaskRoot
) -> None:
    run = make_run(cli, task_root, "r", "--model", "mock/m")
    with (run / "samples.jsonl").open("a") as handle:
        handle.write('{"schema_version":2,"sample_id":"zzz","epoch":0}\n')
    before = _artifact_bytes(run)
    result = cli("report", "--run", run)
    assert result.code == 2
    assert result.err.strip() == (
        f"error: {run}/samples.jsonl:41: schema_version 2 cannot be read by this build (it reads 1)"
    )
    assert _artifact_bytes(run) == before


def test_report_through_the_columns_cache_names_the_missing_field_of_an_appended_line(
    cli: Cli, task_root: TaskRoot
) -> None:
    run = _resumed_run(cli, task_root)
    with (run / "samples.jsonl").open("a") as handle:
        handle.write('{"sample_id":"zzz","epoch":0,"axis":"alpha","tags":[]}\n')
    before = _artifact_bytes(run)
    result = cli("report", "--run", run)
    assert result.code == 2
    assert result.err.strip() == (
        f"error: {run}/samples.jsonl:41: input: required field missing; not a sample record of schema version 1"
    )
    assert _artifact_bytes(run) == before


def test_report_after_a_same_length_edit_of_early_records_shows_the_edited_scores(
    cli: Cli, task_root: TaskRoot
) -> None:
    run = _resumed_run(cli, task_root)
    samples = run / "samples.jsonl"
    lines = samples.read_bytes().splitlines(keepends=True)
    wrong = b'"score":0.0,"passed":false'
    edited = [line.replace(wrong, b'"score":1.0,"passed":true ') if i < 20 else line for i, line in enumerate(lines)]
    assert edited != lines and sum(map(len, edited)) == sum(map(len, lines))
    samples.write_bytes(b"".join(edited))
    result = cli("report", "--run", run, "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["overall"]["mean"] == pytest.approx(sum(r["score"] for r in read_records(run)) / 40)


def test_with_epochs_each_sample_is_one_unit_of_the_intervals(cli: Cli, task_root: TaskRoot) -> None:
    once = build_report(make_run(cli, task_root, "one", "--model-arg", "skill=0.7", "--model-arg", "error_rate=0.2"))
    thrice = build_report(
        as_three_identical_epochs(task_root.root / "results" / "one", task_root.root / "results" / "three")
    )
    # three copies of the same answers are no more evidence than one: the same intervals, over samples
    for one, three in zip([*once.axes, once.overall], [*thrice.axes, thrice.overall], strict=True):
        assert (three.n, three.mean, three.ci) == (3 * one.n, one.mean, one.ci)
        assert three.ci_excluding_errors == one.ci_excluding_errors
        assert (one.ci_method, three.ci_method) == ("wilson", "wilson-by-sample")
    assert any("each sample is one unit of the intervals" in note for note in thrice.notes)


def test_a_run_with_epochs_sums_up_over_samples_as_its_report_does(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "e3", "--epochs", "3", "--model-arg", "skill=0.6")
    summary = json.loads((run / "summary.json").read_text())
    report = build_report(run)
    assert summary["overall"]["ci_method"] == report.overall.ci_method == "t-by-sample"
    assert tuple(summary["overall"]["ci"]) == report.overall.ci
    forced = build_report(run, ci="wilson")  # 0/1 scores, averaged over epochs: not "other scores"
    assert forced.overall.ci_method == "t-by-sample"
    assert not any("other scores: Student-t" in note for note in forced.notes)


def test_with_unequal_epochs_each_mean_lies_in_its_interval(cli: Cli, task_root: TaskRoot) -> None:
    # samples with all three epochs right, and many with only their first epoch, wrong (an interrupted run):
    # the mean is over samples, as its interval is, so it cannot fall outside it
    run = as_three_identical_epochs(
        make_run(cli, task_root, "one", "--model-arg", "skill=0.5"), task_root.root / "results" / "uneven"
    )
    records = read_records(run)
    kept = [r for r in records if r["epoch"] == 0 or r["score"] == 1.0]
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    report = build_report(run)
    for axis in [*report.axes, report.overall]:
        assert axis.ci is not None and axis.mean is not None and axis.ci[0] <= axis.mean <= axis.ci[1]
    right = sum(r["score"] == 1.0 for r in records if r["epoch"] == 0)
    assert report.overall.mean == pytest.approx(right / 40)  # 40 samples, each counted once


def test_with_epochs_the_mean_excluding_errors_is_over_samples_as_its_interval(cli: Cli, task_root: TaskRoot) -> None:
    # the samples answered right failed their later two epochs: over records, they would weigh a third of the
    # wrong ones (c / (c + 3w)); over samples, each counts once (c / 40), as in the interval
    run = as_three_identical_epochs(
        make_run(cli, task_root, "one", "--model-arg", "skill=0.5"), task_root.root / "results" / "errs"
    )
    error = {"type": "ProviderHTTPError", "message": "HTTP 500", "stage": "generate"}
    records = [
        {**r, "score": None, "passed": None, "scores": {}, "error": error}
        if r["epoch"] > 0 and r["score"] == 1.0
        else r
        for r in read_records(run)
    ]
    (run / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    right = sum(r["score"] == 1.0 for r in records)
    assert 0 < right < 40
    report = build_report(run)
    assert report.overall.mean_excluding_errors == pytest.approx(right / 40)
    low, high = report.overall.ci_excluding_errors or (None, None)
    assert low is not None and high is not None and low <= right / 40 <= high
    summary = summarize(run / "samples.jsonl", read_manifest(run))
    assert summary.overall.mean_excluding_errors == pytest.approx(right / 40)


def test_with_epochs_the_headline_and_precision_notes_count_samples(cli: Cli, task_root: TaskRoot) -> None:
    run = as_three_identical_epochs(
        make_run(cli, task_root, "one", "--model-arg", "skill=0.5"), task_root.root / "results" / "three"
    )
    report = build_report(run)
    assert (report.headline.records, report.headline.samples) == (120, 40)
    assert [axis.samples for axis in report.axes] == [20, 20]
    assert report.precision and all(note.n == 20 for note in report.precision)
    shown = cli("report", "--run", run)
    assert shown.code == 0, shown.err
    assert "micro mean (over 40 samples, 120 records)" in shown.out
    assert "from 20 samples" in shown.out


# --------------------------------------------------------------------------------------------------
# what the notes say of cost and of a judge (audit of a llama.cpp server)
# --------------------------------------------------------------------------------------------------


def served_run(cli: Cli, task_root: TaskRoot, base_url: str, run_id: str, *args: str) -> Path:
    """A run of the adder task against the fake server at ``base_url`` as an unpriced local model."""
    return make_run(cli, task_root, run_id, "--model", "openai-compatible/local", "--model-arg",
                    f"base_url={base_url}", *args)  # fmt: skip


def test_a_model_without_any_price_is_noted_as_having_none(cli: Cli, task_root: TaskRoot) -> None:
    # before: "some records have no price" when not one had
    from fake_llm_server import FakeLLMServer

    with FakeLLMServer() as server:
        run = served_run(cli, task_root, server.base_url, "r", "--limit", "4")
    notes = build_report(run).notes
    assert "no record has a price: the cost is unknown, not zero" in notes


def test_the_price_note_counts_the_records_that_have_none(
    cli: Cli, task_root: TaskRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fake_llm_server import FakeLLMServer

    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with FakeLLMServer() as server:
        served_run(cli, task_root, server.base_url, "first", "--limit", "2", "--cache")
        run = served_run(cli, task_root, server.base_url, "r", "--limit", "5", "--cache")
    # the 2 cache hits cost nothing, a known 0; the 3 answers the server gave have no price
    assert sorted((r["sample_id"], r["cached"]) for r in read_records(run)) == [
        ("q0000", True), ("q0001", True), ("q0002", False), ("q0003", False), ("q0004", False)
    ]  # fmt: skip
    assert "3 of 5 records have no price: the cost is unknown, not zero" in build_report(run).notes


def test_the_price_note_tells_failed_calls_which_billed_nothing_from_answers_without_a_price(
    cli: Cli, task_root: TaskRoot
) -> None:
    from fake_llm_server import FakeLLMServer, Reply

    with FakeLLMServer() as server:
        server.script(*[Reply(kind="error", status=400, message="bad request")] * 2)
        run = served_run(cli, task_root, server.base_url, "r", "--limit", "4", "--concurrency", "1")
    assert [r["error"] is not None for r in read_records(run)] == [True, True, False, False]
    assert (
        "no billed call has a price (2 error records are failed calls, which billed nothing): the cost is unknown, "
        "not zero"
    ) in build_report(run).notes


def test_a_run_of_errors_only_is_noted_as_having_billed_nothing(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "r", "--model", "mock/m", "--model-arg", "error_rate=1", "--limit", "4")
    report = build_report(run)
    assert report.totals.cost_usd == 0.0  # the figure is kept: a failed call costs nothing
    assert (
        "nothing was billed: every record is an error or a cache hit, so the cost shows – rather than $0, which "
        "would read as the model's price"
    ) in report.notes


@pytest.mark.parametrize("usage", [True, False])
def test_answers_generated_then_failed_in_scoring_were_billed_so_their_missing_price_is_unknown(
    cli: Cli, tmp_path: Path, usage: bool
) -> None:
    # adopt-s33 2: every judge call failed, so every record was an error, and "nothing billed" was said of a run
    # whose answers an unpriced model had generated; priced, the same run cost $0.003. review-s33: an answer whose
    # server sent no usage was billed too, and compare said "–" of the same records
    from fake_llm_server import FakeLLMServer, Reply

    with FakeLLMServer() as server:
        server.script(*[Reply(text="A short summary.", usage=usage)] * 3)
        result = cli(
            "run", "--task", "summarization", "--model", "openai-compatible/local", "--model-arg",
            f"base_url={server.base_url}", "--judge-model", "mock/judge", "--judge-arg", "error_rate=1",
            "--limit", "3", "--concurrency", "1", "--output-dir", tmp_path, "--run-id", "r",
        )  # fmt: skip
    assert result.code == 0, result.err
    records = read_records(tmp_path / "r")
    assert {r["error"]["type"] for r in records} == {"SpentScoringError"}
    assert all(r["output"] == "A short summary." and r["cost_usd"] is None for r in records)
    assert all((r["usage"]["completion_tokens"] > 0) is usage for r in records)
    assert "nothing billed" not in result.out and "cost unknown" in result.out
    report = build_report(tmp_path / "r")
    assert report.totals.cost_usd is None
    assert not [note for note in report.notes if "nothing was billed" in note]
    assert "no record has a price: the cost is unknown, not zero" in report.notes
    compared = cli("compare", "--run-a", tmp_path / "r", "--run-b", tmp_path / "r", "--format", "json")
    overall = json.loads(compared.out)["overall"]
    assert (overall["cost_mean_b"], overall["billed_nothing_b"]) == (None, False)
    shown = cli("compare", "--run-a", tmp_path / "r", "--run-b", tmp_path / "r", "--format", "markdown").out
    assert "| unknown | unknown | 100.0 | 100.0 |" in shown  # compare's cost columns, then its error rates


@pytest.mark.parametrize("failing", ["model", "judge"])
def test_compare_says_billed_nothing_of_the_records_the_report_says_it_of(
    cli: Cli, tmp_path: Path, failing: str
) -> None:
    # review2-s33 B1: the report said "nothing billed" of a $0 mock whose judge always failed, compare "$0"
    error = ["--model-arg", "error_rate=1"] if failing == "model" else ["--judge-arg", "error_rate=1"]
    made = cli("run", "--task", "summarization", "--model", "mock/m", "--judge-model", "mock/judge", *error,
               "--limit", "3", "--output-dir", tmp_path, "--run-id", "r", "-q")  # fmt: skip
    assert made.code == 0, made.err
    assert "nothing billed" in cli("report", "--run", tmp_path / "r").out
    compared = cli("compare", "--run-a", tmp_path / "r", "--run-b", tmp_path / "r", "--format", "json")
    overall = json.loads(compared.out)["overall"]
    assert (overall["cost_mean_a"], overall["billed_nothing_a"]) == (None, True)


@pytest.mark.parametrize("temperature", ["0", "0.8"])
def test_epochs_that_all_agree_at_temperature_0_are_noted_as_saying_nothing_beyond_pass_at_1(
    cli: Cli, task_root: TaskRoot, temperature: str
) -> None:
    # adopt-s33 7: --epochs 3 on a deterministic model at the task's temperature 0 bought pass@3 = pass@1 in silence
    run = make_run(cli, task_root, "r", "--model", "mock/m", "--model-arg", "skill=1", "--epochs", "2", "--limit",
                   "4", "--temperature", temperature)  # fmt: skip
    report = build_report(run)
    assert report.epochs[-1].agreement == 1.0
    note = (
        "epochs: every sample's 2 epochs passed or failed alike, at temperature 0, where a deterministic model repeats "
        "its answer: pass@2 equals pass@1; for pass@k, sample with --temperature above 0 (e.g. 0.8)"
    )
    assert (note in report.notes) is (temperature == "0")


def test_a_run_without_records_shows_no_error_rate_and_no_cost(cli: Cli, task_root: TaskRoot) -> None:
    # stats-s33 5: err % "0.0" (0 of 0), cost/sample "unknown" beside the totals' "cost $0"
    run = make_run(cli, task_root, "r", "--model", "mock/m", "--limit", "2")
    (run / "samples.jsonl").write_text("")
    (run / ".columns.npz").unlink(missing_ok=True)
    shown = cli("report", "--run", run, "--format", "markdown").out
    assert "| **overall** | **0** | – | – | – | – | – | – | – | – |" in shown
    assert "cost – ·" in shown and "cost $0" not in shown


def test_a_judge_scorer_skipped_for_want_of_a_judge_model_is_noted(cli: Cli, tmp_path: Path) -> None:
    # before: the scorer table's "judge | 0 | –" row, and no word why
    result = cli("run", "--task", "summarization", "--model", "mock/m", "--limit", "3", "--output-dir", tmp_path,
                 "--run-id", "r", "-q")  # fmt: skip
    assert result.code == 0, result.err
    notes = build_report(tmp_path / "r").notes
    skipped = [note for note in notes if "skipped on every sample" in note]
    assert skipped == ["judge: skipped on every sample: no --judge-model was given (pass one to score with this judge)"]
    # adopt-s33 10: the run said nothing of it; its start says it now
    assert (
        "note: judge: will be skipped on every sample: no --judge-model was given (pass one to score with this judge)"
    ) in result.err.splitlines()


def test_the_ci_note_names_one_continuous_axis_in_the_singular(cli: Cli, tmp_path: Path) -> None:
    # walk1-s27: "literature have other scores"
    ran = cli("run", "--task", "summarization", "--limit", "2", "--output-dir", tmp_path, "--run-id", "s", "-q")
    assert ran.code == 0, ran.err
    notes = build_report(tmp_path / "s", ci="wilson").notes
    assert "--ci wilson applies to 0/1 scores; news has other scores: Student-t" in notes
