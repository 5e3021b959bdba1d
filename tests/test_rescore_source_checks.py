"""`rescore` checks its source as report reads it, and names the flag or manifest field of a refused setting."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, TaskRoot

from eval_harness.config import RunConfig
from eval_harness.planning import plan_run
from eval_harness.runner import Runner

Cli = Callable[..., CliResult]


@pytest.fixture
def source_run(task_root: TaskRoot) -> Path:
    config = RunConfig(
        task=str(task_root.root / "tasks" / "adder.toml"),
        model="mock/m",
        model_args={"skill": "0.5"},
        output_dir=task_root.root / "results",
        run_id="source",
    )
    asyncio.run(Runner(plan_run(config)).run())
    return task_root.root / "results" / "source"


def _rescore(cli: Cli, source_run: Path, *flags: str) -> CliResult:
    return cli("rescore", "--run", source_run, "--scorer", "exact_match:mode=strict", "--run-id", "new", "-q", *flags)


def _keep_lines(source_run: Path, count: int) -> None:
    samples = source_run / "samples.jsonl"
    samples.write_bytes(b"".join(samples.read_bytes().splitlines(keepends=True)[:count]))


def _edit_record(source_run: Path, index: int, **fields: Any) -> None:
    """Rewrite samples.jsonl with ``fields`` replaced in its ``index``th record (the file's size changes with the
    spacing of json.dumps, so the columns cache of the source's session is not used for it)."""
    samples = source_run / "samples.jsonl"
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    records[index].update(fields)
    samples.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_rescore_refuses_a_complete_source_whose_samples_lost_records(cli: Cli, source_run: Path) -> None:
    # before: exit 0, and the 20 records missing became 20 "replay: ... has no record" errors counted as wrong
    _keep_lines(source_run, 20)
    report = json.loads(cli("report", "--run", source_run, "--format", "json").out)["run"]
    assert (report["missing"], report["expected_records"]) == (20, 40)
    result = _rescore(cli, source_run)
    assert result.code == 2
    assert result.err == (
        f"error: cannot rescore {source_run}: its manifest says complete, but samples.jsonl has 20 of 40 records "
        f"missing; resume it first (eval-harness resume {source_run})\n"
    )
    assert not (source_run.parent / "new").exists()


def test_rescore_refuses_a_complete_source_whose_samples_were_emptied(cli: Cli, source_run: Path) -> None:
    # before: exit 0 with 40 error records and only the generic "every sample failed" warning
    _keep_lines(source_run, 0)
    result = _rescore(cli, source_run)
    assert result.code == 2 and "samples.jsonl has 40 of 40 records missing" in result.err


def test_the_source_left_complete_after_a_resume_is_rescored(cli: Cli, source_run: Path) -> None:
    _keep_lines(source_run, 20)
    assert cli("resume", source_run, "-q").code == 0
    result = _rescore(cli, source_run)
    assert result.code == 0, result.err


@pytest.mark.parametrize("score", ["high", 2.5, -0.5])
def test_rescore_refuses_a_source_record_report_refuses_with_reports_message(
    cli: Cli, source_run: Path, score: object
) -> None:
    # before: exit 0; the bad record was replayed and scored anew as if nothing were wrong with it
    _edit_record(source_run, 3, score=score)
    report = cli("report", "--run", source_run)
    assert report.code == 2 and f"{source_run / 'samples.jsonl'}:4: score: " in report.err
    result = _rescore(cli, source_run)
    assert (result.code, result.err) == (2, report.err)
    assert not (source_run.parent / "new").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--concurrency", "1000001"), "--concurrency: Input should be less than or equal to 100000"),
    ],
)
def test_rescore_names_the_flag_of_a_setting_the_run_refuses(
    cli: Cli, source_run: Path, flags: tuple[str, ...], message: str
) -> None:
    # before: a pydantic ValidationError traceback, exit 1 (before that, --timeout inf wrote an unreadable run)
    result = _rescore(cli, source_run, *flags)
    assert (result.code, result.err) == (2, f"error: {message}\n")
    assert not (source_run.parent / "new").exists()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("limit", 0, "limit: Input should be greater than or equal to 1"),
        ("epochs", 5000, "epochs: Input should be less than or equal to 1000"),
        ("seed", 2**63, "seed: Input should be less than 9223372036854775808"),
    ],
)
def test_rescore_names_the_source_manifest_field_the_run_refuses(
    cli: Cli, source_run: Path, field: str, value: int, message: str
) -> None:
    # before: a pydantic ValidationError traceback with errors.pydantic.dev in it, exit 1
    manifest_path = source_run / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest_path.write_text(json.dumps({**manifest, field: value}))
    result = _rescore(cli, source_run)
    assert (result.code, result.err) == (2, f"error: {manifest_path}: {message}\n")
