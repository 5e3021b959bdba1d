"""The on-disk format: atomic documents, append-only records, torn tails, last-record-wins, the run lock."""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from eval_harness.artifacts import (
    RunLock,
    SampleWriter,
    iter_record_dicts,
    iter_records,
    observed_status,
    read_manifest,
    record_key,
    repair_tail,
    scan_keys,
    writer_pid,
)
from eval_harness.durable import atomic_file, write_atomic
from eval_harness.errors import ArtifactError, RunLockedError, SchemaVersionError
from eval_harness.types import ChatMessage, ErrorInfo, SampleRecord


def record(sample_id: str, epoch: int = 0, error: bool = False, score: float = 1.0) -> SampleRecord:
    return SampleRecord(
        sample_id=sample_id,
        epoch=epoch,
        axis="a",
        input="q",
        target="t",
        prompt=[ChatMessage(role="user", content="q")],
        output=None if error else "t",
        scores={} if error else {"exact_match": score},
        score=None if error else score,
        error=ErrorInfo(type="ProviderError", message="boom") if error else None,
        attempts=1,
        finished_at="2026-01-01T00:00:00.000Z",
    )


def write_records(path: Path, records: list[SampleRecord]) -> None:
    writer = SampleWriter(path, fsync_interval_s=0)
    for item in records:
        writer.append(item)
    writer.close()


def test_each_record_is_one_json_line_with_the_key_first(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_records(path, [record("a"), record("b", 1)])
    lines = path.read_text().splitlines()
    assert [json.loads(line)["sample_id"] for line in lines] == ["a", "b"]
    assert all(line.startswith('{"sample_id":') and ',"epoch":' in line for line in lines)
    assert list(json.loads(lines[0])) == list(SampleRecord.model_fields)


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text("old")
    write_atomic(path, b"new")
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_a_write_that_fails_halfway_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text("old")
    with pytest.raises(RuntimeError), atomic_file(path) as handle:
        handle.write(b"half of the new")
        raise RuntimeError("disk gone")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_repair_tail_drops_only_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_records(path, [record("a"), record("b")])
    intact = path.read_bytes()
    with path.open("ab") as handle:
        handle.write(b'{"sample_id":"c","epoch":0,"axis":"a","inp')
    assert repair_tail(path) == len(b'{"sample_id":"c","epoch":0,"axis":"a","inp')
    assert path.read_bytes() == intact
    assert repair_tail(path) == 0


def test_repair_tail_of_a_file_that_is_all_torn_empties_it(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    path.write_bytes(b'{"sample_id":"a"')
    repair_tail(path)
    assert path.read_bytes() == b""


def test_readers_skip_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_records(path, [record("a")])
    with path.open("ab") as handle:
        handle.write(b'{"sample_id":"b","ep')
    assert [r["sample_id"] for r in iter_record_dicts(path)] == ["a"]
    assert scan_keys(path).done == {record_key("a", 0)}


def test_scan_keys_finds_keys_and_those_whose_last_record_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_records(path, [record("a"), record("b", error=True), record("c", error=True), record("c", score=0.0)])
    scan = scan_keys(path)
    assert scan.done == {record_key(k, 0) for k in "abc"}
    assert scan.errored == {record_key("b", 0)}
    assert scan.lines == 4


def test_keys_with_quotes_backslashes_and_unicode_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    odd = 'we"ird\\id\u00e9\u2028'
    write_records(path, [record(odd, 3)])
    assert scan_keys(path).done == {record_key(odd, 3)}


def test_last_record_of_a_key_wins_and_keeps_its_position(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_records(path, [record("a", error=True), record("b"), record("a", score=0.5)])
    records = list(iter_records(path))
    assert [(r.sample_id, r.score) for r in records] == [("b", 1.0), ("a", 0.5)]


def test_a_line_that_is_not_a_record_is_reported_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    write_records(path, [record("a")])
    with path.open("a") as handle:
        handle.write("garbage\n")
    with pytest.raises(ArtifactError, match=r"samples.jsonl:2: not a sample record"):
        scan_keys(path)


def test_manifest_of_a_newer_schema_is_refused_by_version(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"schema_version": 99, "run_id": "x"}))
    with pytest.raises(SchemaVersionError, match="schema_version 99 cannot be read by this build"):
        read_manifest(tmp_path)


def test_missing_manifest_says_it_is_not_a_run_directory(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match=r"not found; is .* a run directory"):
        read_manifest(tmp_path)


def test_second_process_cannot_take_the_run_lock(tmp_path: Path) -> None:
    with RunLock(tmp_path):
        probe = (
            "import sys; from pathlib import Path; from eval_harness.artifacts import RunLock\n"
            "from eval_harness.errors import RunLockedError\n"
            "try:\n    RunLock(Path(sys.argv[1])).acquire()\nexcept RunLockedError as e:\n    print(e); sys.exit(3)\n"
        )
        result = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 3
    assert "is being written by another process (pid" in result.stdout


def test_lock_is_free_again_after_release(tmp_path: Path) -> None:
    with RunLock(tmp_path):
        pass
    with RunLock(tmp_path):
        pass
    lock = RunLock(tmp_path)
    lock.acquire()
    with pytest.raises(RunLockedError):
        RunLock(tmp_path).acquire()
    lock.release()


def test_writer_pid_names_the_live_writer_and_none_once_it_is_gone(tmp_path: Path) -> None:
    assert writer_pid(tmp_path) is None  # no lock file at all
    with RunLock(tmp_path):
        assert writer_pid(tmp_path) == os.getpid()
    assert writer_pid(tmp_path) is None  # the lock file stays, with the old pid in it


def test_a_killed_writer_leaves_a_running_manifest_that_reads_interrupted(tmp_path: Path) -> None:
    run_dir = _finished_run(tmp_path)
    running = read_manifest(run_dir).model_copy(update={"status": "running"})
    with RunLock(run_dir):
        assert observed_status(run_dir, running) == "running"
    assert observed_status(run_dir, running) == "interrupted"
    complete = running.model_copy(update={"status": "complete"})
    assert observed_status(run_dir, complete) == "complete"


def test_a_run_starting_while_a_reader_probes_the_lock_is_not_refused(tmp_path: Path) -> None:
    RunLock(tmp_path).__enter__().release()  # creates the lock file
    probe = os.open(tmp_path / ".lock", os.O_RDONLY)
    fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a reader's probe, caught mid-way
    threading.Timer(0.01, lambda: fcntl.flock(probe, fcntl.LOCK_UN)).start()
    try:
        with RunLock(tmp_path):
            pass
    finally:
        os.close(probe)


def test_sync_soon_reports_the_size_it_made_durable_and_its_failures(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    writer = SampleWriter(path, fsync_interval_s=0)
    assert writer.append(record("a")) is True  # interval 0: a sync is due after every record
    size_then = writer.size
    seen: list[int] = []
    writer.sync_soon(seen.append)
    writer.append(record("b"))  # appended while the fsync may still run: not claimed by it
    writer.sync()
    assert seen == [size_then] and not writer.syncing

    def broken(_size: int) -> None:
        raise OSError(28, "No space left on device")

    writer.sync_soon(broken)
    with pytest.raises(OSError, match="No space left"):
        writer.close()
    assert [json.loads(line)["sample_id"] for line in path.read_text().splitlines()] == ["a", "b"]


def test_a_failed_write_raises_at_once() -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full (Linux) to fail writes with ENOSPC")
    writer = SampleWriter(Path("/dev/full"))
    with pytest.raises(ArtifactError, match=r"^/dev/full: cannot append a record: No space left on device"):
        writer.append(record("a"))
    assert writer.written == 0
    writer.close()


# --------------------------------------------------------------------------------------------------
# lines that are JSON but not records of this schema version, in a run made by the real CLI
# --------------------------------------------------------------------------------------------------


def _finished_run(tmp_path: Path) -> Path:
    """A 40-record run of the adder task made by a real `eval-harness run` process with the mock provider."""
    from conftest import adder_task_root, run_subprocess

    root = adder_task_root(tmp_path / "project")
    task = root.root / "tasks" / "adder.toml"
    out = root.root / "results"
    result = run_subprocess("run", "--task", task, "--model", "mock/m", "--output-dir", out, "--run-id", "r", "-q")
    assert result.code == 0, result.err
    return out / "r"


def test_resume_names_the_line_and_field_of_an_appended_record_with_a_wrong_type(tmp_path: Path) -> None:
    from conftest import run_subprocess

    run = _finished_run(tmp_path)
    stub = {"sample_id": "zzz", "epoch": "0", "axis": "alpha", "input": "x", "target": "y", "prompt": []}
    with (run / "samples.jsonl").open("a") as handle:
        handle.write(json.dumps({**stub, "finished_at": "2026-01-01T00:00:00Z"}, separators=(",", ":")) + "\n")
    before = (run / "samples.jsonl").read_bytes()
    result = run_subprocess("resume", run, "-q")
    assert result.code == 2
    assert result.err.strip() == (
        f"error: {run}/samples.jsonl:41: epoch: expected an integer, got a string; "
        "not a sample record of schema version 1"
    )
    assert (run / "samples.jsonl").read_bytes() == before


def test_record_readers_refuse_a_line_of_another_schema_version_by_line(tmp_path: Path) -> None:
    run = _finished_run(tmp_path)
    samples = run / "samples.jsonl"
    lines = samples.read_bytes().splitlines(keepends=True)
    # a record of the runner's own shape, with the version of a newer build inserted after its key
    lines[6] = lines[6].replace(b',"axis":', b',"schema_version":2,"axis":', 1)
    samples.write_bytes(b"".join(lines))
    message = rf"^{re.escape(str(samples))}:7: schema_version 2 cannot be read by this build \(it reads 1\)$"
    with pytest.raises(SchemaVersionError, match=message):
        scan_keys(samples)
    with pytest.raises(SchemaVersionError, match=message):
        list(iter_record_dicts(samples))
    with pytest.raises(SchemaVersionError, match=message):
        list(iter_records(samples))


def test_key_scan_from_an_offset_counts_lines_from_the_top_of_the_file(tmp_path: Path) -> None:
    run = _finished_run(tmp_path)
    samples = run / "samples.jsonl"
    start = len(b"".join(samples.read_bytes().splitlines(keepends=True)[:30]))
    with samples.open("a") as handle:
        handle.write('{"sample_id":"zzz","epoch":0}\n')
    with pytest.raises(ArtifactError, match=rf"^{re.escape(str(samples))}:41: axis: required field missing"):
        scan_keys(samples, start=start)


@pytest.mark.parametrize(("field", "value"), [("input", b"null"), ("input", b"5"), ("target", b"{}")])
def test_the_key_scan_refuses_an_input_or_target_of_the_wrong_type_like_every_reader(
    tmp_path: Path, field: str, value: bytes
) -> None:
    run = _finished_run(tmp_path)
    samples = run / "samples.jsonl"
    lines = samples.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[6])
    lines[6] = re.sub(
        rb',"' + field.encode() + rb'":("(?:[^"\\]|\\.)*"|\[[^\]]*\])',
        b',"' + field.encode() + b'":' + value,
        lines[6],
        count=1,
    )
    assert json.loads(lines[6])[field] != record[field]
    samples.write_bytes(b"".join(lines))
    message = rf"^{re.escape(str(samples))}:7: {field}: expected a string or a list"
    with pytest.raises(ArtifactError, match=message):
        scan_keys(samples)
    with pytest.raises(ArtifactError, match=message):
        list(iter_record_dicts(samples))
