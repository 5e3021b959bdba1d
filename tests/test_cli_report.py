"""``report``, ``compare``, ``inspect`` and ``plan`` through the real entry point: formats, JSON shapes, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot, read_records, run_subprocess

from eval_harness.artifacts import RunLock

Cli = Callable[..., CliResult]

REPORT_AXIS_KEYS = {"axis", "n", "mean", "ci", "cost_mean", "latency_p50_ms", "latency_p95_ms", "error_rate"}
COMPARE_AXIS_KEYS = {
    "axis", "n", "mean_a", "mean_b", "ci_a", "ci_b", "diff", "diff_ci", "test", "p_value", "p_adjusted",
    "separable", "verdict",
}  # fmt: skip


@pytest.fixture
def runs(cli: Cli, task_root: TaskRoot) -> tuple[Path, Path]:
    """Two runs of the adder task: A strong on alpha, B weak on it."""
    out = task_root.root / "results"
    task = task_root.root / "tasks" / "adder.toml"
    for run_id, skill in (("a", "1"), ("b", "0")):
        result = cli("run", "--task", task, "--model", f"mock/{run_id}", "--model-arg", f"skill.alpha={skill}",
                     "--model-arg", "skill=0.8", "--output-dir", out, "--run-id", run_id, "--quiet")  # fmt: skip
        assert result.code == 0, result.err
    return out / "a", out / "b"


# --------------------------------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------------------------------


def test_report_table(cli: Cli, runs: tuple[Path, Path]) -> None:
    result = cli("report", "--run", runs[0])
    assert result.code == 0, result.err
    for text in ("alpha", "beta", "overall", "95% CI", "acc per $", "p95 ms", "err %", "macro mean (over 2 axes)",
                 "micro mean (over 40 samples)", "errors counted as wrong", "errors excluded instead", "scorers",
                 "exact_match", "tokens", "complete (40 records)"):  # fmt: skip
        assert text in result.out, text


def test_a_figure_that_cannot_be_computed_is_a_dash_without_a_percent_sign(cli: Cli, task_root: TaskRoot) -> None:
    # stats-audit-s26 F10: a run whose every record failed printed "macro mean –% · micro mean –%"
    out = task_root.root / "results"
    task = task_root.root / "tasks" / "adder.toml"
    result = cli("run", "--task", task, "--model", "mock/e", "--model-arg", "error_rate=1", "--limit", "4",
                 "--output-dir", out, "--run-id", "e", "--quiet")  # fmt: skip
    assert result.code == 0, result.err
    shown = cli("report", "--run", out / "e").out
    assert "errors excluded instead: macro mean – · micro mean –\n" in shown
    assert "–%" not in shown


def test_report_json_shape(cli: Cli, runs: tuple[Path, Path]) -> None:
    result = cli("report", "--run", runs[0], "--format", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert [a["axis"] for a in document["axes"]] == ["alpha", "beta"]
    for axis in document["axes"]:
        assert set(axis) >= REPORT_AXIS_KEYS
        assert len(axis["ci"]) == 2 and axis["ci"][0] <= axis["mean"] <= axis["ci"][1]
    assert {"run", "headline", "overall", "epochs", "scorers", "totals", "precision", "gates", "notes"} <= set(document)
    assert document["headline"]["policy"] == "errors counted as wrong (score 0)"


def test_report_markdown(cli: Cli, runs: tuple[Path, Path]) -> None:
    result = cli("report", "--run", runs[0], "--format", "markdown")
    assert result.code == 0, result.err
    assert result.out.startswith("## mock/a on adder")
    assert "| axis | n | mean % | 95% CI |" in result.out
    assert "| **overall** |" in result.out and "### Scorers" in result.out and "### Totals" in result.out


def test_report_output_file(cli: Cli, runs: tuple[Path, Path], tmp_path: Path) -> None:
    for fmt, probe in (("json", '"axes"'), ("markdown", "| axis |"), ("table", "overall")):
        target = tmp_path / f"report.{fmt}"
        result = cli("report", "--run", runs[0], "--format", fmt, "--output", target)
        assert result.code == 0, result.err
        assert result.out == ""
        assert probe in target.read_text()


def test_report_gates_exit_codes(cli: Cli, runs: tuple[Path, Path]) -> None:
    passing = cli("report", "--run", runs[0], "--fail-below", "0.5", "--format", "json")
    assert passing.code == 0 and json.loads(passing.out)["gates"][0]["passed"] is True
    failing = cli("report", "--run", runs[1], "--fail-below-axis", "alpha=0.5")
    assert failing.code == 1
    assert "gate failed: alpha mean 0.0% is below 50%" in failing.err
    assert "FAIL alpha mean" in failing.out  # the report is still printed


def test_report_gate_on_ci_low(cli: Cli, runs: tuple[Path, Path]) -> None:
    document = json.loads(cli("report", "--run", runs[0], "--format", "json").out)
    low = document["axes"][1]["ci"][0]  # beta: mean about 0.8, lower end below it
    threshold = f"{(low + document['axes'][1]['mean']) / 2:.4f}"
    on_mean = cli("report", "--run", runs[0], "--fail-below-axis", f"beta={threshold}")
    on_low = cli("report", "--run", runs[0], "--fail-below-axis", f"beta={threshold}", "--gate-on", "ci-low")
    assert on_mean.code == 0
    assert on_low.code == 1 and "beta ci-low" in on_low.err


def test_report_bad_flags_exit_2_with_one_line(cli: Cli, runs: tuple[Path, Path], tmp_path: Path) -> None:
    unknown_axis = cli("report", "--run", runs[0], "--fail-below-axis", "gamma=0.5")
    assert unknown_axis.code == 2 and "no axis 'gamma'" in unknown_axis.err and "Traceback" not in unknown_axis.err
    not_a_run = cli("report", "--run", tmp_path)
    assert not_a_run.code == 2 and "not found; is" in not_a_run.err and "a run directory?" in not_a_run.err
    bad_format = cli("report", "--run", runs[0], "--format", "html")
    assert bad_format.code == 2
    a_file = cli(
        "report", "--run", runs[0] / "summary.json"
    )  # was "...summary.json/manifest.json: cannot read: [Errno 20]"
    assert (a_file.code, a_file.err.strip()) == (2, f"error: {runs[0] / 'summary.json'} is a file, not a run directory")


def test_report_gates_on_the_error_rate_like_run(cli: Cli, task_root: TaskRoot) -> None:
    out = task_root.root / "results"
    task = task_root.root / "tasks" / "adder.toml"
    made = cli("run", "--task", task, "--model-arg", "error_rate=0.5", "--output-dir", out, "--run-id", "e", "-q")
    assert made.code == 0, made.err
    result = cli("report", "--run", out / "e", "--max-error-rate", "0.1")
    assert result.code == 1 and "gate failed: error rate" in result.err
    assert cli("report", "--run", out / "e", "--max-error-rate", "0.9").code == 0


def test_report_on_an_interrupted_run(cli: Cli, runs: tuple[Path, Path]) -> None:
    run = runs[0]
    lines = (run / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run / "samples.jsonl").write_bytes(b"".join(lines[:30]))
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    result = cli("report", "--run", run)
    assert result.code == 0, result.err
    assert "INCOMPLETE (interrupted): 10 of 40 records missing" in result.out
    assert f"eval-harness resume {run}" in result.out


def test_report_of_an_interrupted_run_names_the_axes_it_has_no_record_of(cli: Cli, runs: tuple[Path, Path]) -> None:
    # reportcompare-s30 F1: the table and the macro mean ("over 1 axis") left beta out without a word
    run = runs[0]
    lines = (run / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run / "samples.jsonl").write_bytes(b"".join(line for line in lines if b'"axis":"alpha"' in line))
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    result = cli("report", "--run", run)
    assert result.code == 0, result.err
    note = "no record yet of 1 of the dataset's 2 axes: beta; the macro mean is over the 1 with records"
    assert note in " ".join(result.out.split())
    report = json.loads(cli("report", "--run", run, "--format", "json").out)
    assert report["axes_without_records"] == ["beta"] and [a["axis"] for a in report["axes"]] == ["alpha"]
    complete = json.loads(cli("report", "--run", runs[1], "--format", "json").out)
    assert complete["axes_without_records"] == []


@pytest.mark.parametrize(("damage", "said"), [("empty", "is empty"), ("gone", "does not exist")])
def test_report_of_a_complete_run_whose_samples_file_is_empty_or_gone_says_which(
    cli: Cli, runs: tuple[Path, Path], damage: str, said: str
) -> None:
    # reportcompare-s30 F3: it said only "10 of 40 records missing"-style figures, never what became of the file
    samples = runs[0] / "samples.jsonl"
    samples.write_bytes(b"") if damage == "empty" else samples.unlink()
    result = cli("report", "--run", runs[0])
    assert f"run complete, but its samples.jsonl {said}: 40 of 40 records missing" in " ".join(result.out.split())


@pytest.mark.parametrize("error_rate", ["0.5", "0"])
def test_report_on_a_run_stopped_after_every_record_was_written_says_so_and_what_is_left(
    cli: Cli, task_root: TaskRoot, error_rate: str
) -> None:
    # torture-s25 F7: a killed `resume --retry-errors` left every key recorded, errors among them: the table said
    # "complete (40 records)" while the JSON said interrupted, with no word of the errors left to retry
    out = task_root.root / "results"
    made = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--model-arg", f"error_rate={error_rate}",
               "--output-dir", out, "--run-id", "e", "-q")  # fmt: skip
    assert made.code == 0, made.err
    manifest = json.loads((out / "e" / "manifest.json").read_text())
    (out / "e" / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))  # killed: no lock
    result = cli("report", "--run", out / "e")
    assert result.code == 0, result.err
    assert "· run e · INTERRUPTED, every record written (40 records)" in result.out
    errors = sum(1 for record in read_records(out / "e") if record["error"])
    assert (errors > 0) == (error_rate == "0.5")
    left = (
        f"{errors} error records left: retry them with: eval-harness resume {out / 'e'} --retry-errors"
        if errors
        else f"eval-harness resume {out / 'e'} marks it complete"
    )
    assert f"run interrupted after every record was written (a session retrying errors, say); {left}" in " ".join(
        result.out.split()
    )


def test_a_mistyped_axis_gate_on_an_interrupted_run_is_refused_not_waited_for(
    cli: Cli, runs: tuple[Path, Path]
) -> None:
    # An axis with no records yet fails its gate (exit 1: resume first); a name the dataset has not was taken
    # for one too ("gama: no records yet"), when no resume would ever give it records.
    run = runs[0]
    lines = (run / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run / "samples.jsonl").write_bytes(b"".join(line for line in lines if b'"axis":"alpha"' in line))
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    waiting = cli("report", "--run", run, "--fail-below-axis", "beta=0.5")
    assert waiting.code == 1 and "beta mean: no records yet" in waiting.err
    mistyped = cli("report", "--run", run, "--fail-below-axis", "gama=0.5")
    assert mistyped.code == 2, mistyped.err
    assert "--fail-below-axis: the run's dataset has no axis 'gama' (its axes: alpha, beta)" in mistyped.err


def _cut_to_30_lines_still_running(run: Path) -> None:
    lines = (run / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run / "samples.jsonl").write_bytes(b"".join(lines[:30]))
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "running"}))


def test_report_on_a_killed_run_says_interrupted_and_how_to_resume(cli: Cli, runs: tuple[Path, Path]) -> None:
    run = runs[0]
    _cut_to_30_lines_still_running(run)  # what SIGKILL leaves: the manifest still says running, no lock held
    result = cli("report", "--run", run)
    assert result.code == 0, result.err
    assert "INCOMPLETE (interrupted): 10 of 40 records missing" in result.out
    assert f"eval-harness resume {run}" in result.out
    assert json.loads(cli("report", "--run", run, "--format", "json").out)["run"]["status"] == "interrupted"


def test_report_on_a_run_still_being_written_gives_no_resume_advice(cli: Cli, runs: tuple[Path, Path]) -> None:
    run = runs[0]
    _cut_to_30_lines_still_running(run)
    with RunLock(run):
        result = cli("report", "--run", run)
        as_json = json.loads(cli("report", "--run", run, "--format", "json").out)
    assert result.code == 0, result.err
    assert "RUNNING: 30 of 40 records so far" in result.out
    assert "run still running: 10 of 40 records not written yet" in result.out
    assert "eval-harness resume" not in result.out
    assert as_json["run"]["status"] == "running"


def test_inspect_of_a_killed_run_says_interrupted_and_how_to_resume(cli: Cli, runs: tuple[Path, Path]) -> None:
    run = runs[0]
    _cut_to_30_lines_still_running(run)
    result = cli("inspect", "--run", run)
    assert result.code == 0, result.err
    assert "INCOMPLETE (interrupted): 10 of 40 records missing" in result.out
    assert f"continue it with: eval-harness resume {run}" in result.out


def test_inspect_of_a_run_still_being_written_says_running(cli: Cli, runs: tuple[Path, Path]) -> None:
    run = runs[0]
    _cut_to_30_lines_still_running(run)
    with RunLock(run):
        result = cli("inspect", "--run", run)
    assert "RUNNING: 30 of 40 records so far" in result.out and "eval-harness resume" not in result.out


def test_report_on_a_complete_run_that_lost_records_says_so(cli: Cli, runs: tuple[Path, Path]) -> None:
    run = runs[0]
    lines = (run / "samples.jsonl").read_bytes().splitlines(keepends=True)
    (run / "samples.jsonl").write_bytes(b"".join(lines[:30]))
    result = cli("report", "--run", run)
    assert result.code == 0, result.err
    assert "INCOMPLETE: the manifest says complete, but samples.jsonl has 10 of 40 records missing" in result.out
    note = "run complete, but samples.jsonl lost records: 10 of 40 records missing; continue it with: eval-harness"
    assert f"{note} resume {run}" in result.out


# --------------------------------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------------------------------


def test_compare_json_shape(cli: Cli, runs: tuple[Path, Path]) -> None:
    result = cli("compare", "--run-a", runs[0], "--run-b", runs[1], "--format", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert {"run_a", "run_b", "headline", "axes"} <= set(document)
    assert document["run_a"]["run_id"] == "a" and document["run_b"]["run_id"] == "b"
    for axis in document["axes"]:
        assert set(axis) >= COMPARE_AXIS_KEYS
        assert axis["verdict"] in ("a_better", "b_better", "no_difference")
    alpha = document["axes"][0]
    assert (alpha["axis"], alpha["verdict"], alpha["test"], alpha["separable"]) == (
        "alpha",
        "a_better",
        "mcnemar",
        True,
    )
    assert alpha["diff"] == -1.0


def test_compare_table_and_markdown(cli: Cli, runs: tuple[Path, Path]) -> None:
    table = cli("compare", "--run-a", runs[0], "--run-b", runs[1])
    assert table.code == 0, table.err
    assert "A better" in table.out and "headline gap (B − A)" in table.out and "A is better on alpha" in table.out
    assert "p50 ms A" in table.out
    markdown = cli("compare", "--run-a", runs[0], "--run-b", runs[1], "--format", "markdown")
    assert (
        markdown.code == 0 and "| axis | n | A % |" in markdown.out and "### Latency, cost and errors" in markdown.out
    )


def test_compare_fail_on_regression(cli: Cli, runs: tuple[Path, Path]) -> None:
    worse = cli("compare", "--run-a", runs[0], "--run-b", runs[1], "--fail-on-regression")
    assert worse.code == 1 and "regression gate failed: B is significantly worse on alpha (−100.0 points" in worse.err
    better = cli("compare", "--run-a", runs[1], "--run-b", runs[0], "--fail-on-regression")
    assert better.code == 0, better.err


def test_compare_refuses_other_datasets_and_force_says_so(
    cli: Cli, runs: tuple[Path, Path], task_root: TaskRoot
) -> None:
    other = task_root.data("other.jsonl", [{"id": "q0000", "input": "1+1", "target": "2", "axis": "alpha"}])
    out = task_root.root / "results"
    cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--dataset", other, "--model", "mock/c",
        "--output-dir", out, "--run-id", "c", "--quiet")  # fmt: skip
    refused = cli("compare", "--run-a", runs[0], "--run-b", out / "c")
    assert refused.code == 2
    assert "cannot compare" in refused.err and "different datasets" in refused.err and "--force" in refused.err
    forced = cli("compare", "--run-a", runs[0], "--run-b", out / "c", "--force")
    assert forced.code == 0, forced.err
    assert "--force: comparing although the runs have different datasets" in forced.err
    assert "FORCED: compared although the runs have different datasets" in forced.out
    assert "only in A 39 · only in B 0" in forced.out


# --------------------------------------------------------------------------------------------------
# inspect and plan
# --------------------------------------------------------------------------------------------------


def test_inspect_lists_worst_samples_and_errors(cli: Cli, runs: tuple[Path, Path]) -> None:
    result = cli("inspect", "--run", runs[1], "--n", "2")
    assert result.code == 0, result.err
    assert "worst 2 samples by score" in result.out and "input:" in result.out and "target:" in result.out
    assert "exact_match 0.000" in result.out and "errors: 0" in result.out


def test_inspect_flags(cli: Cli, runs: tuple[Path, Path]) -> None:
    failures = json.loads(
        cli("inspect", "--run", runs[1], "--show-failures", "--axis", "alpha", "--format", "json").out
    )
    assert failures["failures_only"] and failures["errors"] is None
    assert len(failures["worst"]) == 5 and {s["axis"] for s in failures["worst"]} == {"alpha"}
    errors = json.loads(cli("inspect", "--run", runs[1], "--errors", "--format", "json").out)
    assert errors["worst"] is None and errors["errors"] == []
    by_scorer = cli("inspect", "--run", runs[1], "--scorer", "exact_match", "--n", "1")
    assert by_scorer.code == 0 and "by exact_match" in by_scorer.out
    unknown = cli("inspect", "--run", runs[1], "--scorer", "rouge")
    assert unknown.code == 2 and "no scorer 'rouge'" in unknown.err


def test_plan_answers_the_sample_size_question(cli: Cli) -> None:
    # the fewest n whose Wilson intervals at floor(pn) and ceil(pn) right are at most 6 points wide; statsmodels
    # 0.15.0 proportion_confint(k, n, method="wilson"): 532 of 1064 is 5.998 wide, 531 or 532 of 1063 6.0006
    # (p=0.5); at p=0.9 the first n where floor(0.9n) and ceil(0.9n) of n both hold is 389, every n from 393
    default = cli("plan", "--margin", "0.03")
    assert default.code == 0
    assert default.out.startswith("1,064 samples or more per axis give a 95% interval at most 6 points wide (±3)")
    skewed = cli("plan", "--margin", "0.03", "--p", "0.9")
    assert skewed.out.startswith("393 samples") and "plan for 1,064" in skewed.out
    for outside in ("1.5", "inf", "nan", "-1"):  # review2-s33: still "must be in (0, 1]"
        refused = cli("plan", "--margin", outside)
        assert refused.err.endswith("give a half-width above 0 and at most 0.5 (e.g. 0.03: ±3 points)\n"), refused
    bad = cli("plan", "--margin", "0")
    # hostile-s33: "margin must be in (0, 1]" beside a refusal of 0.9 ("give at most 0.5")
    assert (bad.code, bad.err) == (2, "error: plan: --margin 0: give a half-width above 0 and at most 0.5 (e.g. 0.03: "
                                      "±3 points)\n")  # fmt: skip
    wide = cli("plan", "--margin", "1")  # api-s30 9: "at most 200 points wide (±100)"
    assert (wide.code, wide.err) == (2, "error: plan: --margin 1 is wider than the score's range; give at most 0.5 "
                                        "(±50 points)\n")  # fmt: skip
    # hostile-s33: "a 100% interval" of a confidence below 1
    assert cli("plan", "--margin", "0.03", "--confidence", "0.999999999999").out.startswith(
        "14,073 samples or more per axis give a 99.9999999999% interval"
    )
    almost_one = cli("plan", "--margin", "0.03", "--confidence", "0.9999999999999999")
    assert almost_one.code == 2 and "confidence must be strictly between 0 and 1" in almost_one.err


@pytest.mark.parametrize(("p", "needed"), [("0", "61 samples"), ("0.01", "108 samples"), ("0.99", "108 samples")])
def test_plan_near_0_or_100_percent_asks_for_what_wilsons_interval_needs(cli: Cli, p: str, needed: str) -> None:
    # before (normal approximation): "1 samples" at p = 0 and 43 at p = 0.99, where 42 of 43 right is 87.9–99.6;
    # statsmodels Wilson widths: 0 of 61 5.924 points, 0 of 60 6.017; at 99%, every n from 108 within 6 points (87
    # and 88 of 88 are, but 99 of 101 is 6.39)
    result = cli("plan", "--margin", "0.03", "--p", p)
    assert result.code == 0
    assert result.out.startswith(f"{needed} or more per axis give a 95% interval at most 6 points wide")


def test_report_runs_as_a_real_process(runs: tuple[Path, Path]) -> None:
    result = run_subprocess("report", "--run", runs[0], "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["run"]["run_id"] == "a"


# --------------------------------------------------------------------------------------------------
# --output (and rescore's --output-dir) never lands in a run the command reads
# --------------------------------------------------------------------------------------------------

RUN_FILES = ("manifest.json", "samples.jsonl", "summary.json", ".resume.json", ".columns.npz", ".lock", "future.txt")
DAMAGE = "writing there would damage the run, choose a path outside it"


def run_bytes(run_dir: Path) -> dict[str, bytes]:
    """Every file of a run directory, by name, with its bytes."""
    return {path.name: path.read_bytes() for path in sorted(run_dir.iterdir())}


@pytest.fixture
def reported_run(cli: Cli, task_root: TaskRoot) -> Path:
    """One finished run of the adder task, already reported once (so any cache the report keeps is there)."""
    out = task_root.root / "results"
    result = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--output-dir", out, "--run-id", "p1", "-q")
    assert result.code == 0, result.err
    assert cli("report", "--run", out / "p1").code == 0
    return out / "p1"


def test_report_output_refuses_every_file_of_the_run_it_reads(cli: Cli, reported_run: Path) -> None:
    before = run_bytes(reported_run)
    assert {"manifest.json", "samples.jsonl", "summary.json", ".resume.json", ".lock"} <= before.keys()
    for name in RUN_FILES:
        target = reported_run / name
        result = cli("report", "--run", reported_run, "--output", target, "--format", "json")
        assert result.code == 2, name
        assert result.out == ""
        assert (
            result.err
            == f"error: --output {target}: is inside the run directory {reported_run} that report reads; {DAMAGE}\n"
        )
        assert run_bytes(reported_run) == before, name
    assert cli("report", "--run", reported_run, "--format", "json").code == 0


def test_report_output_refuses_a_file_of_another_run(cli: Cli, runs: tuple[Path, Path]) -> None:
    # before: only the run being read was protected; --output results/b/samples.jsonl replaced run b's records
    other = runs[1]
    before = run_bytes(other)
    target = other / "samples.jsonl"
    result = cli("report", "--run", runs[0], "--output", target, "--format", "json")
    assert result.code == 2 and result.out == ""
    assert result.err == (
        f"error: --output {target}: is inside the run directory {other.resolve()}; writing there could damage that "
        "run, choose a path outside it\n"
    )
    assert run_bytes(other) == before
    (other / "samples.jsonl").unlink()  # reportcompare-s30 F3: a run that lost it was not seen as a run any more
    again = cli("report", "--run", runs[0], "--output", target, "--format", "json")
    assert again.code == 2 and "is inside the run directory" in again.err and not target.exists()


def test_report_output_refuses_the_run_directory_itself(cli: Cli, reported_run: Path) -> None:
    before = run_bytes(reported_run)
    result = cli("report", "--run", reported_run, "--output", reported_run)
    assert result.code == 2
    assert (
        result.err
        == f"error: --output {reported_run}: is the run directory {reported_run} that report reads; {DAMAGE}\n"
    )
    assert run_bytes(reported_run) == before


def test_report_output_refuses_a_symlink_into_the_run_as_a_real_process(reported_run: Path) -> None:
    # The user's command line: relative paths, a real process; one link to a file, one to the directory.
    results = reported_run.parent
    (results / "latest.json").symlink_to(Path("p1") / "samples.jsonl")
    (results / "latest").symlink_to("p1", target_is_directory=True)
    before = run_bytes(reported_run)
    for link, resolved in (("latest.json", "samples.jsonl"), ("latest/manifest.json", "manifest.json")):
        result = run_subprocess("report", "--run", "p1", "--output", link, "--format", "json", cwd=results)
        assert result.code == 2, link
        assert result.err == (
            f"error: --output {link} (→ {reported_run.resolve() / resolved}): is inside the run directory p1 "
            f"that report reads; {DAMAGE}\n"
        )
        assert run_bytes(reported_run) == before, link
    assert run_subprocess("report", "--run", "p1", cwd=results).code == 0


def test_report_output_refuses_a_hard_link_to_a_file_of_the_run(cli: Cli, reported_run: Path, tmp_path: Path) -> None:
    other_name = tmp_path / "copy.jsonl"
    other_name.hardlink_to(reported_run / "samples.jsonl")
    before = run_bytes(reported_run)
    result = cli("report", "--run", reported_run, "--output", other_name, "--format", "json")
    assert result.code == 2
    assert result.err == (
        f"error: --output {other_name}: the same file (a hard link) as {reported_run / 'samples.jsonl'} in the run "
        f"directory {reported_run} that report reads; writing it would damage the run, choose a path outside it\n"
    )
    assert run_bytes(reported_run) == before


def test_report_output_that_is_a_directory_names_the_option(cli: Cli, reported_run: Path, tmp_path: Path) -> None:
    result = cli("report", "--run", reported_run, "--output", tmp_path)
    assert result.code == 2
    assert result.err == f"error: --output {tmp_path}: is a directory; give the name of a file to write\n"


def test_report_output_in_a_missing_directory_names_the_option(cli: Cli, reported_run: Path, tmp_path: Path) -> None:
    target = tmp_path / "nowhere" / "report.json"
    result = cli("report", "--run", reported_run, "--output", target)
    assert result.code == 2
    assert result.err == f"error: --output {target}: the directory {tmp_path / 'nowhere'} does not exist\n"
    assert not target.parent.exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, a device every write to fails (Linux)")
def test_report_output_the_disk_refuses_names_the_option(cli: Cli, reported_run: Path) -> None:
    result = cli("report", "--run", reported_run, "--output", "/dev/full", "--format", "json")
    assert result.code == 2
    assert result.err == "error: --output /dev/full: cannot write it: No space left on device\n"


def test_report_output_to_a_fresh_file_writes_it_and_leaves_the_run_alone(
    cli: Cli, reported_run: Path, tmp_path: Path
) -> None:
    before = run_bytes(reported_run)
    target = tmp_path / "report.json"
    result = cli("report", "--run", reported_run, "--output", target, "--format", "json")
    assert result.code == 0, result.err
    assert result.out == "" and result.err == ""
    assert json.loads(target.read_text())["run"]["run_id"] == "p1"
    assert run_bytes(reported_run) == before


def test_rescore_output_dir_inside_the_run_it_reads_is_refused(cli: Cli, reported_run: Path) -> None:
    before = run_bytes(reported_run)
    inside = reported_run / "rescored"
    result = cli("rescore", "--run", reported_run, "--scorer", "exact_match", "--output-dir", inside, "-q")
    assert result.code == 2
    assert result.err == (
        f"error: --output-dir {inside}: is inside the run directory {reported_run} that rescore reads; {DAMAGE}\n"
    )
    assert run_bytes(reported_run) == before
    assert not inside.exists()


# --------------------------------------------------------------------------------------------------
# compare: what differs between the runs, and pairs that are errors in both
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def warm_run(cli: Cli, runs: tuple[Path, Path]) -> Path:
    """Run A of ``runs`` again at temperature 0.8: the same model, one setting apart."""
    out = runs[0].parent
    result = cli("run", "--task", out.parent / "tasks" / "adder.toml", "--model", "mock/a", "--model-arg",
                 "skill.alpha=1", "--model-arg", "skill=0.8", "--temperature", "0.8", "--output-dir", out,
                 "--run-id", "a-warm", "--quiet")  # fmt: skip
    assert result.code == 0, result.err
    return out / "a-warm"


def test_compare_table_says_what_differs_on_the_line_under_its_header(
    cli: Cli, runs: tuple[Path, Path], warm_run: Path
) -> None:
    lines = cli("compare", "--run-a", runs[0], "--run-b", warm_run).out.splitlines()
    assert lines[:2] == [
        "A = mock/a (a)  vs  B = mock/a (a-warm) on adder",
        "differs: generation.temperature unset → 0.8",
    ]


def test_compare_markdown_says_what_differs_under_its_header(cli: Cli, runs: tuple[Path, Path]) -> None:
    lines = cli("compare", "--run-a", runs[0], "--run-b", runs[1], "--format", "markdown").out.splitlines()
    assert lines[:3] == [
        "## A = mock/a (a)  vs  B = mock/b (b) on adder",
        "",
        "differs: `model mock/a → mock/b` · `model.args.skill_by_axis.alpha 1.0 → 0.0`",
    ]


def test_compare_of_runs_with_the_same_settings_says_so(cli: Cli, runs: tuple[Path, Path]) -> None:
    lines = cli("compare", "--run-a", runs[0], "--run-b", runs[0]).out.splitlines()
    assert lines[1] == (
        "differs: no setting (the same model and arguments, generation, prompt, dataset, scorers, seed, epochs and "
        "limit)"
    )


def test_compare_json_adds_differs_beside_the_pinned_shape(cli: Cli, runs: tuple[Path, Path]) -> None:
    document = json.loads(cli("compare", "--run-a", runs[0], "--run-b", runs[1], "--format", "json").out)
    assert {"run_a", "run_b", "headline", "axes", "differs"} <= set(document)
    assert all(set(axis) >= COMPARE_AXIS_KEYS | {"errors_both"} for axis in document["axes"])
    assert document["differs"] == [
        {"setting": "model.id", "a": "mock/a", "b": "mock/b", "text": "model mock/a → mock/b"},
        {
            "setting": "model.args.skill_by_axis.alpha",
            "a": 1.0,
            "b": 0.0,
            "text": "model.args.skill_by_axis.alpha 1.0 → 0.0",
        },
    ]


def test_compare_table_notes_the_pairs_that_are_errors_in_both_runs(cli: Cli, task_root: TaskRoot) -> None:
    out = task_root.root / "results"
    for run_id in ("x", "y"):  # every call fails, in both runs: 2 samples on each axis
        result = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--model", "mock/e", "--model-arg",
                     "error_rate=1", "--max-retries", "0", "--limit", "4", "--output-dir", out, "--run-id", run_id,
                     "--quiet")  # fmt: skip
        assert result.code == 0, result.err
    table = cli("compare", "--run-a", out / "x", "--run-b", out / "y")
    assert table.code == 0, table.err
    note = "no pair is left to tell the runs apart"
    for axis in ("alpha: 2 of 2", "beta: 2 of 2", "overall: 4 of 4"):
        assert f"note: {axis} pairs are errors in both runs (a difference of 0 each); {note}" in table.out


def test_report_of_a_run_served_wholly_from_the_cache_shows_no_cost_rather_than_zero(
    cli: Cli, task_root: TaskRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # before: "$0" in the table and totals for a model with no price, whose other runs say "unknown"
    from fake_llm_server import FakeLLMServer

    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    out = task_root.root / "results"
    with FakeLLMServer() as server:
        for run_id in ("first", "again"):
            result = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--model", "openai-compatible/local",
                         "--model-arg", f"base_url={server.base_url}", "--output-dir", out, "--run-id", run_id,
                         "--limit", "4", "--cache", "-q")  # fmt: skip
            assert result.code == 0, result.err
    shown = cli("report", "--run", out / "again")
    assert shown.code == 0, shown.err
    rows = [line for line in shown.out.splitlines() if line.startswith(("│ alpha", "│ beta", "│ overall"))]
    assert len(rows) == 3 and all("│           – │" in row for row in rows)
    assert "cost – (nothing billed: every record is an error or a cache hit)" in shown.out
    assert not [line for line in shown.out.splitlines() if "$0" in line and not line.startswith("note: ")]


@pytest.mark.parametrize("encoding", ["ascii", "cp1252"])
def test_an_output_that_cannot_encode_the_tables_characters_still_gets_the_report(
    runs: tuple[Path, Path], encoding: str
) -> None:
    # cp1252 is a Windows runner's redirected stdout: "–" and "≤" in notes, "·" in titles crashed with a traceback
    # and exit 1, the code of a failed gate, after a run had completed
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    utf8 = subprocess.run([sys.executable, "-m", "eval_harness", "report", "--run", str(runs[0]), "--format", "json"],
                          capture_output=True, check=True)  # fmt: skip
    narrow = subprocess.run([sys.executable, "-m", "eval_harness", "report", "--run", str(runs[0]), "--format", "json"],
                            capture_output=True, env=env)  # fmt: skip
    assert narrow.returncode == 0, narrow.stderr
    assert narrow.stdout.isascii() and json.loads(narrow.stdout) == json.loads(utf8.stdout)  # the same document
    table = subprocess.run([sys.executable, "-m", "eval_harness", "report", "--run", str(runs[0])],
                           capture_output=True, env=env)  # fmt: skip
    assert table.returncode == 0 and b"Traceback" not in table.stderr
    assert b"overall" in table.stdout
    # terminal-s30 1: a negative difference lost its sign ("?31.7"): "−" has an ASCII stand-in, as "→" has
    compared = subprocess.run([sys.executable, "-m", "eval_harness", "compare", "--run-a", str(runs[1]), "--run-b",
                               str(runs[0])], capture_output=True, env=env)  # fmt: skip
    shown = compared.stdout.decode(encoding)
    assert compared.returncode == 0 and "−" not in shown
    assert "[-25.1, +25.1]" in shown and "B - A" in shown and "mock/b -> mock/a" in shown and "?" not in shown


def test_ascii_json_escapes_every_non_ascii_character_as_json_reads_it() -> None:
    from eval_harness.cli.render import ascii_json

    text = json.dumps({"note": "0–100 ≤ ±3 · 😀 naïve"}, ensure_ascii=False)
    escaped = ascii_json(text)
    assert escaped.isascii() and json.loads(escaped) == {"note": "0–100 ≤ ±3 · 😀 naïve"}
    assert escaped == json.dumps({"note": "0–100 ≤ ±3 · 😀 naïve"})  # as Python's ensure_ascii writes it


# --------------------------------------------------------------------------------------------------
# gates on an incomplete run (audit of eval-harness as a CI release gate)
# --------------------------------------------------------------------------------------------------


def test_a_report_gate_on_a_killed_run_fails_naming_the_records_missing(cli: Cli, runs: tuple[Path, Path]) -> None:
    # before: exit 0, "gate PASS overall mean ... meets 50%" on a quarter of the run missing
    run = runs[0]
    _cut_to_30_lines_still_running(run)  # SIGKILL's leftovers: the manifest says running, no lock is held
    result = cli("report", "--run", run, "--fail-below", "0.5")
    assert result.code == 1
    assert result.err.strip() == "error: gate failed: run incomplete: 10 of 40 records missing; resume it first"
    assert "gate FAIL run incomplete: 10 of 40 records missing; resume it first" in result.out


def test_a_report_gate_on_a_run_still_being_written_fails_saying_to_wait(cli: Cli, runs: tuple[Path, Path]) -> None:
    run = runs[0]
    _cut_to_30_lines_still_running(run)
    with RunLock(run):
        result = cli("report", "--run", run, "--max-error-rate", "0.5", "--format", "json")
    assert result.code == 1
    (complete, error_rate) = json.loads(result.out)["gates"]
    assert (complete["measure"], complete["passed"], error_rate["passed"]) == ("complete", False, True)
    assert "still running, 10 of 40 records not written yet; wait for it to end" in result.err


def test_compare_fail_on_regression_fails_when_run_b_was_cut_off(cli: Cli, runs: tuple[Path, Path]) -> None:
    # B better than A where paired, but B stopped at 30 of 40: before, exit 0 on what was there
    a, b = runs[1], runs[0]
    _cut_to_30_lines_still_running(b)
    result = cli("compare", "--run-a", a, "--run-b", b, "--fail-on-regression", "--format", "json")
    assert result.code == 1
    assert result.err.strip() == (
        f"error: regression gate failed: run B incomplete (a): 10 of 40 records missing, resume it first: "
        f"eval-harness resume {b}"
    )
    assert json.loads(result.out)["run_b"]["complete"] is False


def test_compare_table_says_which_run_is_incomplete(cli: Cli, runs: tuple[Path, Path]) -> None:
    _cut_to_30_lines_still_running(runs[1])
    result = cli("compare", "--run-a", runs[0], "--run-b", runs[1])
    assert result.code == 0, result.err
    assert result.out.splitlines()[2] == (
        "INCOMPLETE (interrupted): B (b) has 10 of 40 records missing; the comparison pairs the rest (continue it "
        f"with: eval-harness resume {runs[1]})"
    )


def test_compare_fail_on_regression_fails_when_only_the_overall_row_is_significantly_worse(
    cli: Cli, tmp_path: Path
) -> None:
    # before: exit 0, the headline and overall row saying "A better" (20 pairs) while no axis of 5 pairs could
    for run_id, skill in (("hi", "1"), ("lo", "0.2")):
        made = cli("run", "--task", "summarization", "--model", f"mock/{run_id}", "--model-arg", f"skill={skill}",
                   "--output-dir", tmp_path, "--run-id", run_id, "-q")  # fmt: skip
        assert made.code == 0, made.err
    result = cli("compare", "--run-a", tmp_path / "hi", "--run-b", tmp_path / "lo", "--fail-on-regression")
    assert result.code == 1
    assert result.err.startswith("error: regression gate failed: B is significantly worse on overall (−")
    assert "no axis differs detectably" in result.out
