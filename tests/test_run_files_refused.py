"""A command refused over a run's files changes none of them, and a run file that is not a regular file is refused
by name.

A resume that finds nothing left to run and is then refused (a summary.json that is a directory; a record the
key scan accepts and the summary's full read refuses) leaves the run as it found it: a complete run stays
complete, with no temporary left beside it. A manifest.json or samples.jsonl that is a pipe or a device (a link to
/dev/zero, as a run directory unpacked from elsewhere may hold), or a ``.lock`` that is a pipe, is refused with
one line naming the file (exit 2), instead of an ``open`` blocked for ever, memory filled by one endless line, or
an error that names no file. Each case starts from a real run of the CLI with the mock model.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, CliResult, adder_task_root

from eval_harness.cli.app import main

Cli = Callable[..., CliResult]
RECORDS = 8
SUFFIX = "; not a sample record of schema version 1"
MEMORY_LIMIT = 1 << 30  # a command that reads /dev/zero stops at this, rather than taking the machine's memory


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A task root whose ``results/done`` holds a complete run of the mock model over 8 samples."""
    root = adder_task_root(tmp_path_factory.mktemp("refused") / "project").root
    with pytest.raises(SystemExit) as exited:
        main(
            [
                "run", "--task", str(root / "tasks" / "adder.toml"), "--model", "mock/m", "--limit", str(RECORDS),
                "--output-dir", str(root / "results"), "--run-id", "done", "--quiet",
            ]
        )  # fmt: skip
    assert exited.value.code in (0, None)
    return root


@pytest.fixture
def run(project: Path, tmp_path: Path) -> Path:
    """A copy of the complete run, for one test to damage."""
    copy = tmp_path / "run"
    shutil.copytree(project / "results" / "done", copy, symlinks=True)
    return copy


def state(run_dir: Path, *, lock: bool = True) -> dict[str, object]:
    """Every entry of the run directory: a regular file's bytes, a link's target, else its kind (nothing is opened
    but regular files). Without ``lock``, the ``.lock``'s content (the pid of the last session to take it) is left
    out, not its presence."""
    entries: dict[str, object] = {}
    for entry in sorted(run_dir.iterdir()):
        mode = entry.lstat().st_mode
        if stat.S_ISLNK(mode):
            entries[entry.name] = ("link", os.readlink(entry))
        elif stat.S_ISREG(mode):
            entries[entry.name] = b"" if entry.name == ".lock" and not lock else entry.read_bytes()
        else:
            entries[entry.name] = ("kind", stat.S_IFMT(mode))
    return entries


def status(run_dir: Path) -> tuple[str, int]:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    return manifest["status"], manifest["sessions"]


def edit_first_record(run_dir: Path, old: bytes, new: bytes) -> Path:
    samples = run_dir / "samples.jsonl"
    lines = samples.read_bytes().splitlines(keepends=True)
    edited, count = re.subn(old, new, lines[0], count=1)
    assert count == 1
    samples.write_bytes(b"".join([edited, *lines[1:]]))
    return samples


# --------------------------------------------------------------------------------------------------
# a refused resume of a complete run
# --------------------------------------------------------------------------------------------------


def test_a_resume_refused_for_a_summary_that_is_a_directory_leaves_the_complete_run_as_it_was(
    run: Path, cli: Cli
) -> None:
    (run / "summary.json").unlink()
    (run / "summary.json").mkdir()
    before = state(run, lock=False)
    result = cli("resume", run, "-q")
    assert (result.code, result.err) == (2, f"error: {run / 'summary.json'}: cannot write it: it is a directory\n")
    # the manifest still says complete after one session, and no temporary of the summary is left beside it
    assert state(run, lock=False) == before
    assert status(run) == ("complete", 1)


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        pytest.param(
            rb'"latency_ms":[^,]+,', b'"latency_ms":-5,',
            "latency_ms: expected a non-negative number or null, got -5" + SUFFIX, id="negative-latency",
        ),
        pytest.param(
            rb'"scores":\{"exact_match":[^}]+\}', b'"scores":{"exact_match":"x"}',
            "scores.exact_match: expected a number or null, got a string" + SUFFIX, id="string-score",
        ),
        pytest.param(rb'"passed":[a-z]+,', b'"passed":"yes",', "passed: ", id="string-passed"),
        pytest.param(
            rb'"latency_ms":[^,]+,', b'"latency_ms":NaN,', "not a sample record (not JSON: ", id="nan"
        ),
    ],
)  # fmt: skip
def test_a_resume_refused_for_a_record_the_summary_refuses_leaves_the_complete_run_as_it_was(
    run: Path, cli: Cli, old: bytes, new: bytes, problem: str
) -> None:
    # the key scan reads the key and the required fields only: the record is refused by the session's summary,
    # after the manifest was marked running; with no record appended, the session puts back what it found
    samples = edit_first_record(run, old, new)
    before = state(run, lock=False)
    result = cli("resume", run, "-q")
    assert result.code == 2
    assert result.err.startswith(f"error: {samples}:1: {problem}") and result.err.count("\n") == 1
    assert state(run, lock=False) == before  # .resume.json included
    assert status(run) == ("complete", 1)


def test_a_resume_with_samples_left_refuses_a_bad_record_before_it_appends_any(run: Path, cli: Cli) -> None:
    # hostile-s33 4: it appended the samples left (a session's spend), then refused at its summary, manifest failed
    samples = run / "samples.jsonl"
    samples.write_bytes(b"".join(samples.read_bytes().splitlines(keepends=True)[: RECORDS // 2]))
    (run / ".resume.json").unlink()
    edit_first_record(run, rb'"latency_ms":[^,]+,', b'"latency_ms":-5,')
    before = status(run)
    result = cli("resume", run, "-q")
    assert result.code == 2 and result.err.startswith(f"error: {samples}:1: latency_ms: ")
    assert status(run) == before
    assert len(samples.read_bytes().splitlines()) == RECORDS // 2


@pytest.mark.parametrize(("value", "kind"), [(5, "an integer"), ("mock/m", "a string")])
def test_a_manifest_table_that_is_not_one_is_said_so_without_a_class_name(
    run: Path, cli: Cli, value: object, kind: str
) -> None:
    # hostile-s33: "model: Input should be a valid dictionary or instance of ModelInfo"
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, "model": value}))
    result = cli("report", "--run", run)
    assert (result.code, result.err) == (
        2, f"error: {run / 'manifest.json'}: model: expected a table (a JSON object), got {kind}\n"
    )  # fmt: skip


def test_a_document_that_cannot_be_replaced_leaves_no_temporary_beside_it(run: Path, cli: Cli) -> None:
    # the resume point only saves time, so a directory in its place fails nothing; each refused rename took its
    # temporary back (they were left, one for each fsync of the session)
    samples = run / "samples.jsonl"
    samples.write_bytes(b"".join(samples.read_bytes().splitlines(keepends=True)[: RECORDS // 2]))
    (run / ".resume.json").unlink()
    (run / ".resume.json").mkdir()
    result = cli("resume", run, "-q")
    assert result.code == 0, result.err
    assert sorted(path.name for path in run.iterdir()) == sorted(
        [".columns.npz", ".lock", ".resume.json", "manifest.json", "samples.jsonl", "summary.json"]
    )


# --------------------------------------------------------------------------------------------------
# run files that are not regular files
# --------------------------------------------------------------------------------------------------


def commands(run_dir: Path, other: Path, out: Path) -> dict[str, list[str | Path]]:
    """Every command that reads a run, each given ``run_dir`` (``other``: a good run to compare it with)."""
    return {
        "report": ["report", "--run", run_dir],
        "inspect": ["inspect", "--run", run_dir],
        "compare": ["compare", "--run-a", other, "--run-b", run_dir],
        "rescore": ["rescore", "--run", run_dir, "--scorer", "exact_match", "--output-dir", out, "-q"],
        "resume": ["resume", run_dir, "-q"],
    }


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def start_guarded(args: list[str | Path]) -> subprocess.Popen[str]:
    """``python -m eval_harness ARGS`` started in a process of its own under ``MEMORY_LIMIT``."""
    command = [sys.executable, "-m", "eval_harness", *map(str, args)]
    env = {**os.environ, "COLUMNS": "200"}
    pipe = subprocess.PIPE
    return subprocess.Popen(command, cwd=REPO, env=env, text=True, stdout=pipe, stderr=pipe, preexec_fn=_limit_memory)


@pytest.mark.parametrize("name", ["manifest.json", "samples.jsonl"])
def test_a_run_file_linked_to_dev_zero_is_refused_by_name_without_being_read(
    project: Path, run: Path, tmp_path: Path, name: str
) -> None:
    # read, /dev/zero is one endless line: each command runs in a process of its own, under a memory limit and a
    # timeout, both at once. report and resume stand for every command (each refuses a pipe by the same check,
    # in process, below); a process costs a second
    (run / name).unlink()
    (run / name).symlink_to("/dev/zero")
    before = state(run)
    started = {
        command: start_guarded(args)
        for command, args in commands(run, project / "results" / "done", tmp_path / "out").items()
        if command in ("report", "resume")
    }
    results = {}
    for command, process in started.items():
        try:
            _, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, err = process.communicate()
        results[command] = (process.returncode, err)
    expected = (2, f"error: {run / name}: not a regular file (a device)\n")
    assert results == dict.fromkeys(started, expected)
    assert state(run) == before


@pytest.mark.timeout(20)  # before the refusal, a pipe's open blocked for ever
@pytest.mark.parametrize("name", ["manifest.json", "samples.jsonl"])
def test_a_run_file_that_is_a_pipe_is_refused_by_name_without_blocking(
    project: Path, run: Path, tmp_path: Path, cli: Cli, name: str
) -> None:
    (run / name).unlink()
    os.mkfifo(run / name)
    before = state(run)
    for command, args in commands(run, project / "results" / "done", tmp_path / "out").items():
        result = cli(*args)
        assert (result.code, result.err) == (2, f"error: {run / name}: not a regular file (a pipe)\n"), command
    assert state(run) == before


def test_a_lock_that_is_a_directory_is_refused_in_the_same_words(run: Path, cli: Cli) -> None:
    # readme-walk-s26: the OS's bare "Is a directory", where a pipe or a device is named as such
    (run / ".lock").unlink()
    (run / ".lock").mkdir()
    result = cli("resume", run, "-q")
    assert (result.code, result.err) == (2, f"error: {run / '.lock'}: not a regular file (a directory)\n")


@pytest.mark.timeout(20)
def test_a_lock_that_is_a_pipe_is_refused_by_name(run: Path, project: Path, tmp_path: Path, cli: Cli) -> None:
    (run / ".lock").unlink()
    os.mkfifo(run / ".lock")
    before = state(run)
    result = cli("resume", run, "-q")
    assert (result.code, result.err) == (2, f"error: {run / '.lock'}: not a regular file (a pipe)\n")
    assert state(run) == before
    # a new run into a directory that holds only that
    fresh = tmp_path / "results" / "fresh"
    fresh.mkdir(parents=True)
    os.mkfifo(fresh / ".lock")
    result = cli(
        "run", "--task", project / "tasks" / "adder.toml", "--model", "mock/m", "--limit", "2",
        "--output-dir", fresh.parent, "--run-id", "fresh", "-q",
    )  # fmt: skip
    assert (result.code, result.err) == (2, f"error: {fresh / '.lock'}: not a regular file (a pipe)\n")
    assert sorted(path.name for path in fresh.iterdir()) == [".lock"]


def test_run_files_that_are_links_to_regular_files_are_read_through_and_resumed(
    run: Path, tmp_path: Path, cli: Cli
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for name in ("manifest.json", "samples.jsonl"):
        (run / name).rename(elsewhere / name)
        (run / name).symlink_to(elsewhere / name)
    assert cli("report", "--run", run).code == 0
    assert cli("inspect", "--run", run).code == 0
    result = cli("resume", run, "-q")
    assert result.code == 0, result.err
    assert status(run) == ("complete", 2)


@pytest.mark.timeout(20)
def test_resuming_a_rescore_whose_source_records_became_a_pipe_names_the_pipe(
    run: Path, tmp_path: Path, cli: Cli
) -> None:
    # the replayed source was checked with is_file(): a pipe there was "not found"
    out = tmp_path / "out"
    rescored = cli("rescore", "--run", run, "--scorer", "exact_match", "--output-dir", out, "--run-id", "s", "-q")
    assert rescored.code == 0, rescored.err
    (run / "samples.jsonl").unlink()
    os.mkfifo(run / "samples.jsonl")
    result = cli("resume", out / "s", "-q")
    assert (result.code, result.err) == (2, f"error: {run / 'samples.jsonl'}: not a regular file (a pipe)\n")
