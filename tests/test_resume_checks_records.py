"""A resume reads the records already written as ``report`` does before its session calls the model."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot, read_records

from eval_harness.aggregate import summarize
from eval_harness.artifacts import read_manifest

Cli = Callable[..., CliResult]


def interrupted_run(cli: Cli, task_root: TaskRoot) -> Path:
    """A complete run of 40 of the adder task's samples cut back to its first 20 records (more than the columns
    cache's digest of its last 4 KB covers), status interrupted."""
    out = task_root.root / "results"
    made = cli("run", "--task", task_root.root / "tasks" / "adder.toml", "--model", "mock/m", "--model-arg",
               "skill=0.5", "--limit", "40", "--output-dir", out, "--run-id", "r", "-q")  # fmt: skip
    assert made.code == 0, made.err
    run = out / "r"
    samples = run / "samples.jsonl"
    samples.write_text("".join(samples.read_text().splitlines(keepends=True)[:20]))
    for derived in (".columns.npz", ".resume.json"):
        (run / derived).unlink(missing_ok=True)
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    return run


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("cost_usd", "free", "cost_usd: expected a number or null, got a string"),
        ("score", 5.0, "score: expected a number in [0, 1] or null, got 5.0"),
        ("usage", {"prompt_tokens": -5, "completion_tokens": 1}, "usage.prompt_tokens"),
    ],
)
def test_a_damaged_field_of_an_earlier_record_is_refused_before_the_session_calls_the_model(
    cli: Cli, task_root: TaskRoot, field: str, value: object, said: str
) -> None:
    # hostile-s33 4: the resume ran and appended every remaining sample, then refused at its summary, marked the
    # run failed and left summary.json stale: a whole session's spend before the refusal
    run = interrupted_run(cli, task_root)
    lines = (run / "samples.jsonl").read_text().splitlines()
    record = json.loads(lines[3])
    lines[3] = json.dumps({**record, field: value})
    (run / "samples.jsonl").write_text("\n".join(lines) + "\n")
    before = (run / "samples.jsonl").read_bytes()
    resumed = cli("resume", run, "-q")
    assert resumed.code == 2
    assert resumed.err.startswith(f"error: {run / 'samples.jsonl'}:4: {said}"), resumed.err
    assert (run / "samples.jsonl").read_bytes() == before
    assert read_manifest(run).status == "interrupted"


def test_a_summary_after_an_earlier_record_was_edited_in_place_counts_the_edit(cli: Cli, task_root: TaskRoot) -> None:
    # hostile-s33 5: a same-length edit of a record, then a resume: the columns cache trusted its stale prefix (the
    # file had grown), so summary.json said 0.925 where the records said 0.9
    run = interrupted_run(cli, task_root)
    summarize(run / "samples.jsonl", read_manifest(run), keep_cache=True)  # as the session that wrote them left it
    assert (run / ".columns.npz").exists()
    samples = run / "samples.jsonl"
    text = samples.read_text()
    right = next(line for line in text.splitlines() if '"score":1.0' in line)
    wrong = right.replace('"exact_match":1.0', '"exact_match":0.0').replace('"score":1.0', '"score":0.0')
    assert len(wrong) == len(right)
    samples.write_text(text.replace(right, wrong))
    copy = run.parent / "uncached"
    assert cli("resume", run, "-q").code == 0
    shutil.copytree(run, copy)
    (copy / ".columns.npz").unlink()
    recorded = json.loads((run / "summary.json").read_text())["micro_mean"]
    assert len(read_records(run)) == 40
    assert recorded == summarize(copy / "samples.jsonl", read_manifest(copy)).micro_mean
