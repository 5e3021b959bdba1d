"""Values of a run directory that make no sense for the run are refused by name, as type errors are.

A run directory is sometimes edited by hand, or unpacked from elsewhere. A manifest value that no run records (a
negative ``expected_records``, one no limit gives, a ``limit`` that takes other samples than the run expects) or a
record no session of the run writes (an epoch past the run's epochs, the reserved axis ``overall``) was read as
if it were true: ``resume`` ran all 40 samples of a run of 10, and ``report`` counted a 21st record in a run of 20.
Each is refused with one line naming the file (and the line) and the field, exit 2, and no file of the run changes.
Every case starts from a real run of the CLI with the mock model, edited.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, adder_task_root, run_cli

from eval_harness.aggregate import COLUMNS_CACHE, load_columns, save_columns_cache
from eval_harness.artifacts import RunPaths

Cli = Callable[..., CliResult]
SUFFIX = "; not a sample record of schema version 1"
EPOCH_5 = "epoch: expected 0 to 1 (the run has 2 epochs), got 5" + SUFFIX
OVERALL = "axis: 'overall' is reserved for the whole run" + SUFFIX


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete run of the adder task's first 10 samples (of 40, on two axes), 2 epochs: 20 records."""
    root = adder_task_root(tmp_path_factory.mktemp("hand") / "project")
    out = root.root / "results"
    run_cli(
        "run", "--task", root.root / "tasks" / "adder.toml", "--model", "mock/m", "--limit", "10", "--epochs", "2",
        "--output-dir", out, "--run-id", "base", "--quiet",
    )  # fmt: skip
    return out / "base"


def files_under(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` and its bytes (the run lock's pid aside)."""
    return {str(p): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file() and p.name != ".lock"}


def edited_manifest(base: Path, into: Path, **fields: Any) -> Path:
    """A copy of ``base`` at ``into`` whose manifest has ``fields`` (dotted: ``dataset__format``) replaced."""
    shutil.copytree(base, into)
    path = RunPaths(into).manifest
    manifest = json.loads(path.read_text())
    for name, value in fields.items():
        *parents, last = name.split("__")
        target = manifest
        for parent in parents:
            target = target[parent]
        target[last] = value
    path.write_text(json.dumps(manifest, indent=2))
    return into


def edited_line(base: Path, into: Path, index: int, old: str, new: str) -> Path:
    """A copy of ``base`` at ``into`` whose samples.jsonl line ``index`` has its first ``old`` (a regex) replaced."""
    shutil.copytree(base, into)
    samples = RunPaths(into).samples
    lines = samples.read_bytes().splitlines(keepends=True)
    lines[index], count = re.subn(old.encode(), new.encode(), lines[index], count=1)
    assert count == 1, (old, lines[index])
    samples.write_bytes(b"".join(lines))
    return into


def readers(base: Path, run: Path, rescored: Path) -> dict[str, tuple[str | Path, ...]]:
    """The commands that read ``run``: report, inspect, compare (against ``base``), rescore (into ``rescored``)."""
    return {
        "report": ("report", "--run", run),
        "report json": ("report", "--run", run, "--format", "json"),
        "inspect": ("inspect", "--run", run),
        "compare": ("compare", "--run-a", base, "--run-b", run),
        "rescore": ("rescore", "--run", run, "--scorer", "exact_match", "--output-dir", rescored, "-q"),
    }


def resumes(run: Path) -> dict[str, tuple[str | Path, ...]]:
    """The two commands that resume ``run``."""
    return {"resume": ("resume", run, "-q"), "run --resume": ("run", "--resume", run, "-q")}


def assert_refused_by_all(cli: Cli, commands: dict[str, tuple[str | Path, ...]], where: Path, expected: str) -> None:
    """Each command exits 2 with ``error: EXPECTED`` alone, and no file under ``where`` changes."""
    before = files_under(where)
    for name, args in commands.items():
        result = cli(*args)
        assert (result.code, result.err) == (2, f"error: {expected}\n"), name
    assert files_under(where) == before


# --------------------------------------------------------------------------------------------------
# manifest values every reader refuses (#7)
# --------------------------------------------------------------------------------------------------

MANIFEST_EDITS: dict[str, tuple[dict[str, Any], str]] = {
    "negative expected_records": (
        {"expected_records": -5},
        "expected_records: Input should be greater than or equal to 0",
    ),
    "expected_records no whole number of samples": (
        {"expected_records": 3},
        "expected_records: 3 is not a whole number of samples over 2 epochs",
    ),
    "expected_records past the limit": (
        {"expected_records": 22},
        "expected_records: 22 is more than limit 10 over 2 epochs can be (20)",
    ),
    "expected_records past the dataset": (
        {"limit": None, "expected_records": 82},
        "expected_records: 82 is more than the dataset's 40 samples over 2 epochs can be (80)",
    ),
    "expected_records past limit_per_axis": (
        {"limit_per_axis": 3},
        "expected_records: 20 is more than limit_per_axis 3 of 2 axes over 2 epochs can be (12)",
    ),
    "limit 0": ({"limit": 0}, "limit: Input should be greater than or equal to 1"),
    "limit_per_axis 0": ({"limit_per_axis": 0}, "limit_per_axis: Input should be greater than or equal to 1"),
    "negative sample_count": (
        {"dataset__sample_count": -1},
        "dataset.sample_count: Input should be greater than or equal to 0",
    ),
    "format no reader knows": ({"dataset__format": "xml"}, "dataset.format: Input should be 'jsonl' or 'csv'"),
    "seekable CSV": (
        {"dataset__format": "csv"},
        "dataset.seekable: true, but the dataset is a CSV file; only a JSONL file is",
    ),
}


@pytest.mark.parametrize("edit", list(MANIFEST_EDITS))
def test_a_manifest_value_no_run_records_is_refused_by_every_reader_naming_it(
    base: Path, tmp_path: Path, cli: Cli, edit: str
) -> None:
    fields, message = MANIFEST_EDITS[edit]
    run = edited_manifest(base, tmp_path / "run", **fields)
    commands = {**readers(base, run, tmp_path / "rescored"), "resume": ("resume", run, "-q")}
    assert_refused_by_all(cli, commands, tmp_path, f"{RunPaths(run).manifest}: {message}")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param(
            {"limit": 10**18},
            "20 is not what the run takes: limit 1000000000000000000 takes 40 of the dataset's 40 samples, 80 records "
            "over 2 epochs",
            id="limit-edited-up",
        ),
        pytest.param(
            {"expected_records": 18},
            "18 is not what the run takes: limit 10 takes 10 of the dataset's 40 samples, 20 records over 2 epochs",
            id="expected_records-edited-down",
        ),
    ],
)
def test_resume_and_rescore_refuse_an_expected_records_its_limits_do_not_take_of_the_dataset(
    base: Path, tmp_path: Path, cli: Cli, fields: dict[str, Any], message: str
) -> None:
    # before: the limit edited up ran the 30 samples the run never took ("complete (80 records)"), and the count
    # edited down left the run complete at 18 of its 20 records; a rescore of it replayed (or left out) as many
    run = edited_manifest(base, tmp_path / "run", **fields)
    expected = f"{RunPaths(run).manifest}: expected_records: {message}"
    commands = {**resumes(run), "rescore": readers(base, run, tmp_path / "rescored")["rescore"]}
    assert_refused_by_all(cli, commands, tmp_path, expected)


def test_a_run_forced_across_a_changed_dataset_keeps_a_count_no_limit_gives(tmp_path: Path, cli: Cli) -> None:
    # its count is the changed dataset's keys and the records of the lines it lost: no multiple of the epochs here
    root = adder_task_root(tmp_path / "project")
    task, out = root.root / "tasks" / "adder.toml", root.root / "results"
    run_cli("run", "--task", task, "--model", "mock/m", "--limit", "10", "--epochs", "2", "--output-dir", out,
            "--run-id", "r", "--quiet")  # fmt: skip
    run = out / "r"
    samples = RunPaths(run).samples
    kept = [line for line in samples.read_bytes().splitlines(keepends=True) if b'"sample_id":"q0000","epoch":0' in line]
    samples.write_bytes(b"".join(kept))
    (run / ".resume.json").unlink(missing_ok=True)
    dataset = root.root / "data" / "adder.jsonl"
    original = dataset.read_bytes()
    dataset.write_bytes(b"".join(original.splitlines(keepends=True)[1:]))  # q0000 is gone
    assert cli("resume", run, "-q", "--force").code == 0
    assert json.loads(RunPaths(run).manifest.read_text())["expected_records"] == 21  # q0001-q0010 twice, q0000/0
    for args in (("report", "--run", run), ("inspect", "--run", run), ("resume", run, "-q", "--force")):
        result = cli(*args)
        assert result.code == 0, (args[0], result.err)
    dataset.write_bytes(original)  # the dataset the run started with: nothing to force, the count is still its own
    result = cli("resume", run, "-q")
    assert result.code == 0, result.err


def test_resume_refuses_a_gzip_dataset_recorded_as_seekable(tmp_path: Path, cli: Cli) -> None:
    # a resume would seek into the compressed bytes at the offsets its resume point names
    root = adder_task_root(tmp_path / "project")
    plain = root.root / "data" / "adder.jsonl"
    packed = plain.with_name("adder.jsonl.gz")
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    out = root.root / "results"
    run_cli("run", "--task", root.root / "tasks" / "adder.toml", "--dataset", packed, "--model", "mock/m",
            "--limit", "4", "--output-dir", out, "--run-id", "r", "--quiet")  # fmt: skip
    run = edited_manifest(out / "r", tmp_path / "run", dataset__seekable=True)
    message = "dataset.seekable: true, but the dataset is gzip-compressed; only a plain JSONL file is"
    expected = f"{RunPaths(run).manifest}: {message}"
    assert_refused_by_all(cli, resumes(run), run, expected)


def test_resume_names_a_fingerprint_that_is_no_sha256_as_a_damaged_value(base: Path, tmp_path: Path, cli: Cli) -> None:
    # before: "changed since the run started: a judge rubric or the judge model", of a run with no judge
    run = edited_manifest(base, tmp_path / "run", fingerprint="")
    expected = f"{RunPaths(run).manifest}: fingerprint: expected a sha256 (64 hexadecimal digits), got ''"
    commands = {"resume": ("resume", run, "-q"), "forced": ("resume", run, "-q", "--force")}
    assert_refused_by_all(cli, commands, run, expected)


def test_a_fingerprint_that_a_run_without_judge_does_not_match_is_not_called_a_judge_change(
    base: Path, tmp_path: Path, cli: Cli
) -> None:
    run = edited_manifest(base, tmp_path / "run", fingerprint="0" * 64)
    result = cli("resume", run, "-q")
    assert result.code == 2 and "judge" not in result.err.replace("no judge", "")
    assert "changed since the run started: the manifest's fingerprint (000000000000) is not that of the values it " in (
        result.err
    )


# --------------------------------------------------------------------------------------------------
# records no session of the run writes (#8)
# --------------------------------------------------------------------------------------------------

LINE_EDITS = {
    "epoch past the run's": (r'"epoch":0,', '"epoch":5,', EPOCH_5),
    "axis overall": (r'"axis":"[a-z]+"', '"axis":"overall"', OVERALL),
}


@pytest.mark.parametrize("path", ["fast", "slow"])
@pytest.mark.parametrize("edit", list(LINE_EDITS))
def test_a_record_no_session_writes_is_refused_by_report_inspect_and_compare(
    base: Path, tmp_path: Path, cli: Cli, edit: str, path: str
) -> None:
    # before: exit 0; the epoch-5 record counted in its axis, and report printed two "overall" rows
    old, new, message = LINE_EDITS[edit]
    run = edited_line(base, tmp_path / "run", 0, old, new)
    if path == "slow":  # a line with retries is never the fast path's
        run = edited_line(run, tmp_path / "slow", 0, r'"retries":\{\}', '"retries":{"timeout":1}')
    commands = readers(base, run, tmp_path / "rescored")
    del commands["rescore"]
    assert_refused_by_all(cli, commands, tmp_path, f"{RunPaths(run).samples}:1: {message}")


def test_a_columns_cache_holding_an_epoch_past_the_runs_is_refused_as_the_line_is(
    base: Path, tmp_path: Path, cli: Cli
) -> None:
    # the check is on the columns however they were read: here the cache's, for the file as it now is
    run = edited_line(base, tmp_path / "run", 0, r'"epoch":0,', '"epoch":5,')
    columns = load_columns(RunPaths(run).samples, ["exact_match"])
    save_columns_cache(RunPaths(run).samples, columns, ["exact_match"])
    assert (run / COLUMNS_CACHE).is_file()
    assert_refused_by_all(cli, {"report": ("report", "--run", run)}, run, f"{RunPaths(run).samples}:1: {EPOCH_5}")


@pytest.mark.parametrize("edit", list(LINE_EDITS))
def test_rescore_refuses_a_source_record_no_session_writes(base: Path, tmp_path: Path, cli: Cli, edit: str) -> None:
    old, new, message = LINE_EDITS[edit]
    run = edited_line(base, tmp_path / "run", 0, old, new)
    commands = {"rescore": readers(base, run, tmp_path / "rescored")["rescore"]}
    assert_refused_by_all(cli, commands, tmp_path, f"{RunPaths(run).samples}:1: {message}")


@pytest.mark.parametrize("edit", list(LINE_EDITS))
def test_resume_refuses_a_record_no_session_writes_in_its_key_scan(
    base: Path, tmp_path: Path, cli: Cli, edit: str
) -> None:
    # before: the key q0000/0 read as missing, so its record was run and appended ("complete (21 records)")
    old, new, message = LINE_EDITS[edit]
    run = edited_line(base, tmp_path / "run", 0, old, new)
    (run / ".resume.json").unlink()  # every record is read by the key scan
    expected = f"{RunPaths(run).samples}:1: {message}"
    assert_refused_by_all(cli, resumes(run), run, expected)


@pytest.mark.parametrize("edit", list(LINE_EDITS))
def test_resume_past_its_resume_point_refuses_a_record_no_session_writes_in_its_summary(
    base: Path, tmp_path: Path, cli: Cli, edit: str
) -> None:
    # the key scan reads only what follows the resume point; the session's summary reads every record
    old, new, message = LINE_EDITS[edit]
    run = edited_line(base, tmp_path / "run", 0, old, new)
    assert (run / ".resume.json").is_file()
    assert_refused_by_all(cli, {"resume": ("resume", run, "-q")}, run, f"{RunPaths(run).samples}:1: {message}")


# --------------------------------------------------------------------------------------------------
# a record of a sample the run does not have (copied in from another run, or an id edited by hand)
# --------------------------------------------------------------------------------------------------


def test_report_notes_records_beyond_what_the_run_gives(base: Path, tmp_path: Path, cli: Cli) -> None:
    # before: "complete (21 records)" and the figures over 21, without a word
    run = tmp_path / "run"
    shutil.copytree(base, run)
    samples = RunPaths(run).samples
    first = json.loads(samples.read_bytes().splitlines()[0])
    samples.write_bytes(samples.read_bytes() + json.dumps({**first, "sample_id": "copied"}).encode() + b"\n")
    report = cli("report", "--run", run)
    assert report.code == 0, report.err
    note = (
        "samples.jsonl holds 21 records where the run's dataset and limits give 20: 1 more (copied in from another "
        "run, or edited by hand?); the figures count it"
    )
    assert note in " ".join(report.out.split())
    assert note in json.loads(cli("report", "--run", run, "--format", "json").out)["notes"]
    assert "holds" not in cli("report", "--run", base).out  # the run as written
