"""The resume guarantee: after any number of SIGKILLs and resumes, exactly one valid record per
(sample_id, epoch), and with the mock provider a summary equal to that of an uninterrupted run."""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, TaskRoot, read_records, run_subprocess, write_jsonl

MODEL = [
    "--model",
    "mock/crashy",
    "--model-arg",
    "skill=0.7",
    "--model-arg",
    "latency_ms=4",
    "--model-arg",
    "jitter_ms=8",
    "--model-arg",
    "error_rate=0.05",
    "--model-arg",
    "cost_per_1k_tokens=0.2",
]
RUN = ["--task", "capability_profile", "--epochs", "2", "--concurrency", "8", *MODEL]


def comparable(summary_path: Path) -> dict[str, Any]:
    summary: dict[str, Any] = json.loads(summary_path.read_text())
    for volatile in ("wall_time_s", "run_id"):
        summary.pop(volatile)
    return summary


def complete_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def kill_at_random(args: list[str], run_dir: Path, rng: random.Random) -> bool:
    """Start the command, SIGKILL it once it has added a random number (1 to 40) of records; False if it finished
    first. A record count, not a delay: a fast machine cannot finish the run before the kill, nor a slow one kill
    it before it wrote anything."""
    samples = run_dir / "samples.jsonl"
    target = complete_lines(samples) + rng.randint(1, 40)
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", *args], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.monotonic() + 60
    while complete_lines(samples) < target and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    finished = process.poll() is not None
    process.send_signal(signal.SIGKILL)
    process.communicate()
    return not finished


def test_sigkill_at_random_moments_then_resume_is_exactly_once_and_equal(tmp_path: Path) -> None:
    whole = run_subprocess("run", *RUN, "--output-dir", tmp_path, "--run-id", "whole", "-q", cwd=REPO)
    assert whole.code == 0, whole.err
    expected_keys = sorted((r["sample_id"], r["epoch"]) for r in read_records(tmp_path / "whole"))
    assert len(expected_keys) == 480

    rng = random.Random(20261129)
    run_dir = tmp_path / "crashed"
    kills = 0
    command = ["run", *RUN, "--output-dir", str(tmp_path), "--run-id", "crashed", "-q"]
    for _ in range(5):
        if kill_at_random(command, run_dir, rng):
            kills += 1
        command = ["resume", str(run_dir), "-q"]
        # Every complete line is a valid record after every kill, whatever the moment.
        raw = (run_dir / "samples.jsonl").read_bytes()
        complete = raw[: raw.rfind(b"\n") + 1]
        keys = [(r["sample_id"], r["epoch"]) for r in map(json.loads, complete.splitlines())]
        assert len(keys) == len(set(keys)), "a key was recorded twice"
    assert kills == 5, "a session finished before its kill"

    final = run_subprocess("resume", run_dir, "-q", cwd=REPO)
    assert final.code == 0, final.err
    records = read_records(run_dir)
    assert sorted((r["sample_id"], r["epoch"]) for r in records) == expected_keys
    assert comparable(run_dir / "summary.json") == comparable(tmp_path / "whole" / "summary.json")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["sessions"] >= 2


def _file_size_limit(limit_bytes: int) -> Callable[[], None]:
    def apply() -> None:  # in the child: writes past the limit fail with EFBIG instead of killing it (SIGXFSZ)
        import resource  # Unix only

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))

    return apply


def test_an_artifact_that_cannot_grow_stops_the_run_with_the_file_named_and_resume_completes_it(
    tmp_path: Path,
) -> None:
    if sys.platform != "linux":
        pytest.skip("uses RLIMIT_FSIZE and SIGXFSZ as Linux has them")
    run_dir = tmp_path / "capped"
    args: tuple[str | Path, ...] = ("run", *RUN, "--output-dir", tmp_path, "--run-id", "capped", "-q")
    capped = run_subprocess(*args, cwd=REPO, preexec_fn=_file_size_limit(40_000))
    assert capped.code == 2, capped.err
    # the mock's error records of the session are named in a note before it (a plain resume keeps them)
    assert [line for line in capped.err.strip().splitlines() if not line.startswith("note: ")] == [
        f"error: run failed: {run_dir / 'samples.jsonl'}: cannot append a record: File too large "
        "(the records before it are kept)"
    ]
    raw = (run_dir / "samples.jsonl").read_bytes()
    assert 0 < len(raw) <= 40_000 and raw.endswith(b"\n")  # the torn part of the failed line was taken back
    kept = [json.loads(line) for line in raw.splitlines()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["expected_records"] > len(kept)

    resumed = run_subprocess("resume", run_dir, "-q", cwd=REPO)
    assert resumed.code == 0, resumed.err
    records = read_records(run_dir)
    keys = [(r["sample_id"], r["epoch"]) for r in records]
    assert len(keys) == len(set(keys)) == manifest["expected_records"]
    assert records[: len(kept)] == kept


def test_a_dataset_edited_during_the_run_fails_the_run_by_name_and_the_resume_refuses_it(tmp_path: Path) -> None:
    dataset = write_jsonl(
        tmp_path / "items.jsonl",
        [{"id": f"q{i}", "axis": "arithmetic", "input": f"[[answer: {i}]]", "target": str(i)} for i in range(80)],
    )
    run_dir = tmp_path / "edited"
    args = [
        "run", "--task", "capability_profile", "--dataset", str(dataset), "--model", "mock/m",
        "--model-arg", "latency_ms=25", "--concurrency", "2", "--output-dir", str(tmp_path), "--run-id", "edited", "-q",
    ]  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", *args], cwd=REPO, stderr=subprocess.PIPE, text=True
    )
    samples = run_dir / "samples.jsonl"
    deadline = time.monotonic() + 60
    while (not samples.exists() or samples.stat().st_size == 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    with dataset.open("a", encoding="utf-8") as handle:  # in place, as an editor or a generator would
        handle.write(json.dumps({"id": "late", "axis": "arithmetic", "input": "[[answer: 1]]", "target": "1"}) + "\n")
    _, err = process.communicate(timeout=60)  # quiet: nothing on stdout
    assert process.returncode == 2, err
    (line,) = err.strip().splitlines()
    assert re.fullmatch(
        f"error: run failed: {re.escape(str(dataset))}: the dataset changed while the run read it: it stopped at "
        r"line \d+ \(every record is of a line read before the change\); keep the file unchanged during a run \(a "
        r"resume compares its sha256 and names what changed\)",
        line,
    )
    assert json.loads((run_dir / "manifest.json").read_text())["status"] == "failed"

    resumed = run_subprocess("resume", run_dir, "-q", cwd=REPO)
    assert resumed.code == 2 and "dataset" in resumed.err and "changed since the run started" in resumed.err


def test_no_record_is_written_of_a_line_read_after_the_dataset_was_rewritten(tmp_path: Path) -> None:
    # datasets-s30 F6: a file rewritten during the run was read on to its end; a line read half before and half
    # after the rewrite got an id of neither version, and after the file was put back and the run resumed, that
    # record stayed and counted beside the real one (21 records of a 20-line dataset)
    original = [{"axis": "arithmetic", "input": f"[[answer: {i}]]", "target": str(i)} for i in range(60)]
    dataset = write_jsonl(tmp_path / "items.jsonl", original)
    kept = dataset.read_bytes()
    args = [
        "run", "--task", "capability_profile", "--dataset", str(dataset), "--model", "mock/m",
        "--model-arg", "latency_ms=25", "--concurrency", "2", "--output-dir", str(tmp_path), "--run-id", "w", "-q",
    ]  # fmt: skip
    process = subprocess.Popen([sys.executable, "-m", "eval_harness", *args], cwd=REPO, stderr=subprocess.PIPE)
    samples = tmp_path / "w" / "samples.jsonl"
    deadline = time.monotonic() + 60
    while (not samples.exists() or samples.stat().st_size == 0) and time.monotonic() < deadline:
        time.sleep(0.01)
    rewritten = [{**item, "input": item["input"] + " (v2)"} for item in original]  # other lines: other derived ids
    dataset.write_text("".join(json.dumps(item) + "\n" for item in rewritten), encoding="utf-8")
    process.communicate(timeout=60)
    assert process.returncode == 2
    dataset.write_bytes(kept)  # put back, as the error's advice leads a user to do

    resumed = run_subprocess("resume", tmp_path / "w", "-q", cwd=REPO)
    assert resumed.code == 0, resumed.err
    records = read_records(tmp_path / "w")
    assert sorted(r["target"] for r in records) == sorted(item["target"] for item in original)
    assert not [r for r in records if "(v2)" in json.dumps(r)]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: a real full disk (ENOSPC for every file on it, not one file's size limit)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root): {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_fails_the_run_naming_the_records_file_first_and_resume_completes_it(small_disk: Path) -> None:
    run_dir = small_disk / "r1"
    full = run_subprocess("run", *RUN, "--output-dir", small_disk, "--run-id", "r1", "-q", cwd=REPO)
    assert full.code == 2, full.err
    (line,) = [line for line in full.err.strip().splitlines() if not line.startswith("note: ")]
    assert line.startswith(
        f"error: run failed: {run_dir / 'samples.jsonl'}: cannot append a record: No space left on device "
        "(the records before it are kept)"
    ), line
    assert "Traceback" not in full.err and (run_dir / "samples.jsonl").read_bytes().endswith(b"\n")
    kept = read_records(run_dir)

    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
    resumed = run_subprocess("resume", run_dir, "-q", cwd=REPO)
    assert resumed.code == 0, resumed.err
    manifest = json.loads((run_dir / "manifest.json").read_text())
    keys = [(r["sample_id"], r["epoch"]) for r in read_records(run_dir)]
    assert manifest["status"] == "complete" and len(keys) == len(set(keys)) == manifest["expected_records"]
    assert read_records(run_dir)[: len(kept)] == kept


@pytest.mark.parametrize("judge", [[], ["--judge-model", "mock/j"]], ids=["model", "judge"])
def test_a_run_recorded_before_a_provider_option_existed_resumes(
    task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], judge: list[str]
) -> None:
    """An option added to a provider since the run started (the run ran with its default) is no change: every
    openai/ run made before reasoning_summary was added was refused on resume ("model args of openai/...: ")."""
    from eval_harness.cli.app import main
    from eval_harness.providers.base import ProviderOptions

    monkeypatch.chdir(task_root.root)
    out = task_root.root / "results"
    args = ["run", "--task", "tasks/adder.toml", "--model", "mock/m", "--output-dir", str(out), "--run-id", "r", "-q",
            *judge]  # fmt: skip
    public = ProviderOptions.public
    with monkeypatch.context() as before:  # a build whose mock had no jitter_ms: its manifest and fingerprint lack it
        before.setattr(
            ProviderOptions, "public", lambda self: {k: v for k, v in public(self).items() if k != "jitter_ms"}
        )
        with pytest.raises(SystemExit) as started:
            main(args)
    assert started.value.code in (0, None)
    run = out / "r"
    manifest = json.loads((run / "manifest.json").read_text())
    assert "jitter_ms" not in manifest["model"]["args"]
    (run / "manifest.json").write_text(json.dumps({**manifest, "status": "interrupted"}))
    lines = (run / "samples.jsonl").read_text().splitlines(keepends=True)
    (run / "samples.jsonl").write_text("".join(lines[:10]))
    (run / ".resume.json").unlink(missing_ok=True)
    capsys.readouterr()
    with pytest.raises(SystemExit) as resumed:
        main(["resume", str(run), "-q"])
    assert resumed.value.code in (0, None), capsys.readouterr().err
    assert json.loads((run / "manifest.json").read_text())["status"] == "complete"
