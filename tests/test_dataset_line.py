"""Every record names the line of the dataset file its sample was read from (``dataset_line``), and ``inspect``
shows it as ``PATH:LINE``: for a dataset whose sample ids are derived from content, the way back to the line."""

from __future__ import annotations

import asyncio
import gzip
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import probe
import pytest
from conftest import REPO, CliResult, TaskRoot, read_records

from eval_harness.aggregate import load_columns
from eval_harness.artifacts import RunPaths, read_resume_point
from eval_harness.config import RunConfig
from eval_harness.planning import plan_resume, plan_run
from eval_harness.runner import Progress, Runner
from eval_harness.types import SampleRecord

Cli = Callable[..., CliResult]
CAPABILITY = REPO / "data" / "capability_profile.jsonl"


def lines_by_id(path: Path) -> dict[str, int]:
    """The 1-based line of each sample id of a JSONL file (blank lines count, as in an editor)."""
    return {json.loads(text)["id"]: n for n, text in enumerate(path.read_text().splitlines(), 1) if text.strip()}


def spaced_task(task_root: TaskRoot, holdout: bool = True) -> Path:
    """A task over capability_profile's first 60 samples with a blank line after every 7th, and (``holdout``)
    a quarter held out as few-shot examples: a sample's line is not its place among the samples run."""
    lines = CAPABILITY.read_text().splitlines()[:60]
    text = "".join(line + "\n" + ("\n" if i % 7 == 6 else "") for i, line in enumerate(lines))
    (task_root.root / "data" / "spaced.jsonl").write_text(text)
    few_shot = "[few_shot]\nk = 2\nholdout_fraction = 0.25\n" if holdout else ""
    return task_root.task(
        "spaced",
        f'name = "spaced"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/spaced.jsonl"\n{few_shot}'
        '[[scorers]]\nname = "exact_match"\n',
    )


def assert_lines_match(records: list[dict[str, Any]], lines: dict[str, int]) -> None:
    wrong = [(r["sample_id"], r["epoch"], r.get("dataset_line")) for r in records]
    wrong = [(sample_id, epoch, line) for sample_id, epoch, line in wrong if line != lines[sample_id]]
    assert not wrong, f"records whose dataset_line is not their sample's line: {wrong[:5]}"


def failing_run(cli: Cli, out: Path, *args: str) -> Path:
    """capability_profile's first 4 samples answered wrong by the mock."""
    result = cli("run", "--task", "capability_profile", "--model", "mock/m", "--model-arg", "skill=0",
                 "--limit", "4", "--output-dir", out, "--run-id", "fail", "-q", *args)  # fmt: skip
    assert result.code == 0, result.err
    return out / "fail"


# --------------------------------------------------------------------------------------------------
# what the runner writes
# --------------------------------------------------------------------------------------------------


def test_every_record_of_every_epoch_carries_the_line_its_sample_is_on(cli: Cli, tmp_path: Path) -> None:
    result = cli("run", "--task", "capability_profile", "--model", "mock/m", "--epochs", "2", "--limit", "30",
                 "--output-dir", tmp_path, "--run-id", "r", "-q")  # fmt: skip
    assert result.code == 0, result.err
    records = read_records(tmp_path / "r")
    assert len(records) == 60 and {r["epoch"] for r in records} == {0, 1}
    assert_lines_match(records, lines_by_id(CAPABILITY))


def test_the_line_is_the_files_past_blank_lines_and_held_out_samples(cli: Cli, task_root: TaskRoot) -> None:
    task = spaced_task(task_root)
    out = task_root.root / "results"
    result = cli("run", "--task", task, "--model", "mock/m", "--output-dir", out, "--run-id", "r", "-q")
    assert result.code == 0, result.err
    records = read_records(out / "r")
    assert len(records) == 45  # 15 of 60 held out
    lines = lines_by_id(task_root.root / "data" / "spaced.jsonl")
    assert_lines_match(records, lines)
    assert any(r["dataset_line"] != n for n, r in enumerate(records, 1))  # the lines are not the record order


class _StopAfter:
    """Asks its runner to stop once the session has written ``count`` records."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.runner: Runner | None = None

    def update(self, progress: Progress) -> None:
        if progress.session_done >= self.count and self.runner is not None:
            self.runner.request_stop()


def test_a_run_resumed_from_its_frontier_records_the_lines_of_the_file(task_root: TaskRoot) -> None:
    # the resume seeks into the file: its line numbers must start from the frontier's, not from 1
    config = RunConfig(
        task=str(spaced_task(task_root)), model="mock/m", model_args={"latency_ms": "1", "jitter_ms": "6"},
        output_dir=task_root.root / "results", run_id="r", epochs=2, concurrency=4, grace_s=0.0,
    )  # fmt: skip
    stopper = _StopAfter(30)
    runner = Runner(plan_run(config), stopper)
    stopper.runner = runner
    first = asyncio.run(runner.run())
    assert first.status == "interrupted"
    point = read_resume_point(first.run_dir)
    assert point is not None and point.frontier_line > 1
    second = asyncio.run(Runner(plan_resume(first.run_dir)).run())
    assert second.resumed_at_line == point.frontier_line and second.status == "complete"
    records = read_records(first.run_dir)
    assert len(records) == len({(r["sample_id"], r["epoch"]) for r in records}) == 90
    assert_lines_match(records, lines_by_id(task_root.root / "data" / "spaced.jsonl"))


def test_a_gzipped_dataset_without_ids_counts_the_lines_of_its_decompressed_text(cli: Cli, tmp_path: Path) -> None:
    # GSM8K as published: no id field, so a record's id is derived from the line's content
    rows = [
        {"question": f"Tom has {i} apples and buys 2 more. How many now?", "answer": f"{i} + 2 = {i + 2}\n#### {i + 2}"}
        for i in range(6)
    ]
    text = "".join(json.dumps(row) + "\n" + ("\n" if i % 2 else "") for i, row in enumerate(rows))
    dataset = tmp_path / "test.jsonl.gz"
    dataset.write_bytes(gzip.compress(text.encode()))
    result = cli("run", "--task", "gsm8k", "--dataset", dataset, "--model", "mock/m",
                 "--output-dir", tmp_path, "--run-id", "g", "-q")  # fmt: skip
    assert result.code == 0, result.err
    line_of = {json.loads(t)["question"]: n for n, t in enumerate(text.splitlines(), 1) if t.strip()}
    records = read_records(tmp_path / "g")
    assert len(records) == 6
    assert [r["dataset_line"] for r in records] == [line_of[r["input"]] for r in records] == [1, 2, 4, 5, 7, 8]


def test_a_csv_row_records_the_line_it_starts_on(cli: Cli, task_root: TaskRoot) -> None:
    # a quoted cell may span lines; the line named is the one validate-dataset's messages name for the row, where
    # the row begins (it was the line it ends on)
    (task_root.root / "data" / "rows.csv").write_text(
        'id,question,answer\nc1,What is 1 + 1?,2\nc2,"Two lines:\nwhat is 2 + 2?",4\nc3,What is 3 + 3?,6\n'
    )
    task = task_root.task(
        "rows",
        'name = "rows"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/rows.csv"\nformat = "csv"\n'
        'fields = { input = "question", target = "answer" }\n[[scorers]]\nname = "exact_match"\n',
    )
    out = task_root.root / "results"
    result = cli("run", "--task", task, "--model", "mock/m", "--output-dir", out, "--run-id", "c", "-q")
    assert result.code == 0, result.err
    records = read_records(out / "c")
    assert {r["sample_id"]: r["dataset_line"] for r in records} == {"c1": 2, "c2": 3, "c3": 5}


def test_a_rescored_run_keeps_the_lines_of_the_source_records(cli: Cli, tmp_path: Path) -> None:
    source = failing_run(cli, tmp_path)
    result = cli("rescore", "--run", source, "--scorer", "exact_match:mode=strict", "--run-id", "again", "--quiet")
    assert result.code == 0, result.err
    before = {(r["sample_id"], r["epoch"]): r["dataset_line"] for r in read_records(source)}
    after = {(r["sample_id"], r["epoch"]): r["dataset_line"] for r in read_records(tmp_path / "again")}
    assert after == before and set(before.values()) == {1, 2, 3, 4}


def test_a_scoring_error_scored_again_by_retry_errors_records_the_line(
    task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the answer is kept and scored again without calling the model: a path of its own in the runner
    monkeypatch.setitem(probe.FLAKY, "broken", True)
    task = spaced_task(task_root, holdout=False).read_text().replace('name = "exact_match"', 'name = "flaky"')
    task_root.task("spaced", task)
    config = RunConfig(
        task=str(task_root.root / "tasks" / "spaced.toml"), model="probe/p",
        output_dir=task_root.root / "results", run_id="r", limit=20,
    )  # fmt: skip
    asyncio.run(Runner(plan_run(config)).run())
    run_dir = task_root.root / "results" / "r"
    assert all(r["error"]["stage"] == "score" for r in read_records(run_dir))
    monkeypatch.setitem(probe.FLAKY, "broken", False)
    calls = probe.ProbeProvider.calls
    again = asyncio.run(Runner(plan_resume(run_dir, retry_errors=True)).run())
    assert again.new_records == 20 and probe.ProbeProvider.calls == calls  # scored again, not generated
    rescored = read_records(run_dir)[20:]
    assert all(r["error"] is None for r in rescored)
    assert_lines_match(rescored, lines_by_id(task_root.root / "data" / "spaced.jsonl"))
    assert rescored[-1]["dataset_line"] == 22  # the 20th sample, after two blank lines


def test_the_line_leaves_runner_records_to_the_fast_column_reader(cli: Cli, tmp_path: Path) -> None:
    # the fast path anchors a line's end on its backoff_s: the line number is written before the retries
    run_dir = failing_run(cli, tmp_path, "--model-arg", "error_rate=0.5")
    columns = load_columns(RunPaths(run_dir).samples, ["exact_match"])
    assert columns.fast_lines == columns.lines_read == 4
    assert all(r["dataset_line"] is not None for r in read_records(run_dir))


# --------------------------------------------------------------------------------------------------
# inspect
# --------------------------------------------------------------------------------------------------


def test_inspect_shows_where_in_the_dataset_each_failing_sample_is(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = failing_run(cli, tmp_path)
    monkeypatch.chdir(REPO)  # the dataset is under the working directory: shown as the user would type it
    shown = cli("inspect", "--run", run_dir, "--show-failures", "--n", "2")
    assert shown.code == 0, shown.err
    sources = [line for line in shown.out.splitlines() if line.startswith("source: ")]
    assert sources == ["source: data/capability_profile.jsonl:1", "source: data/capability_profile.jsonl:2"]
    monkeypatch.chdir(tmp_path)  # elsewhere: the path as the manifest records it
    elsewhere = cli("inspect", "--run", run_dir, "--show-failures", "--n", "1").out
    assert f"source: {CAPABILITY}:1\n" in elsewhere
    data = json.loads(cli("inspect", "--run", run_dir, "--show-failures", "--format", "json").out)
    assert data["dataset_path"] == str(CAPABILITY)
    assert [(s["sample_id"], s["dataset_line"]) for s in data["worst"]] == [
        ("arithmetic-000", 1), ("arithmetic-001", 2), ("arithmetic-002", 3), ("arithmetic-003", 4),
    ]  # fmt: skip


def test_inspect_by_sample_shows_the_line_of_each_listed_sample(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = failing_run(cli, tmp_path, "--epochs", "2")
    monkeypatch.chdir(tmp_path)
    shown = cli("inspect", "--run", run_dir, "--show-failures", "--by-sample", "--n", "4")
    assert shown.code == 0, shown.err
    assert [line for line in shown.out.splitlines() if line.startswith("source: ")] == [
        f"source: {CAPABILITY}:{n}" for n in (1, 2, 3, 4)
    ]


# --------------------------------------------------------------------------------------------------
# records written before the field
# --------------------------------------------------------------------------------------------------


def without_lines(run_dir: Path) -> Path:
    """The run as an earlier version wrote it: no dataset_line in its records, no columns cache."""
    samples = RunPaths(run_dir).samples
    samples.write_bytes(re.sub(rb',"dataset_line":\d+', b"", samples.read_bytes()))
    (run_dir / ".columns.npz").unlink(missing_ok=True)
    return run_dir


def test_a_record_written_before_the_field_reads_with_no_line(cli: Cli, tmp_path: Path) -> None:
    run_dir = without_lines(failing_run(cli, tmp_path))
    lines = RunPaths(run_dir).samples.read_bytes().splitlines()
    assert lines and all(b"dataset_line" not in line for line in lines)
    assert all(SampleRecord.model_validate_json(line).dataset_line is None for line in lines)
    shown = cli("inspect", "--run", run_dir, "--show-failures")
    assert shown.code == 0, shown.err
    assert "arithmetic-000" in shown.out and "source:" not in shown.out
    data = json.loads(cli("inspect", "--run", run_dir, "--show-failures", "--format", "json").out)
    assert [s["dataset_line"] for s in data["worst"]] == [None] * 4
    report = cli("report", "--run", run_dir)
    assert report.code == 0, report.err
    assert "arithmetic" in report.out


def test_a_rescore_of_a_run_written_before_the_field_records_the_lines(cli: Cli, tmp_path: Path) -> None:
    # the rescore reads the dataset again: its records have the lines the source's lack
    source = without_lines(failing_run(cli, tmp_path))
    result = cli("rescore", "--run", source, "--scorer", "exact_match", "--run-id", "again", "--quiet")
    assert result.code == 0, result.err
    assert_lines_match(read_records(tmp_path / "again"), lines_by_id(CAPABILITY))
