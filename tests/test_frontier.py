"""The resume frontier and the resume point: a resume seeks past finished samples and loses nothing."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import TaskRoot, arithmetic_records, read_records

from eval_harness.aggregate import COLUMNS_CACHE, load_columns, load_columns_cached, save_columns_cache, summarize
from eval_harness.artifacts import RunPaths, read_manifest, read_resume_point
from eval_harness.config import RunConfig
from eval_harness.datasets import Position
from eval_harness.frontier import FrontierTracker
from eval_harness.planning import plan_resume, plan_run
from eval_harness.planning._session import SessionOverrides
from eval_harness.runner import Runner, RunResult


def pos(line: int) -> Position:
    return Position(offset=10 * (line - 1), line=line, next_offset=10 * line)


def test_frontier_waits_for_the_oldest_unfinished_sample() -> None:
    tracker = FrontierTracker(epochs=2)
    for line, sample_id in enumerate("abc", 1):
        tracker.seen(sample_id, pos(line), [])
    tracker.recorded("b", 0)
    tracker.recorded("b", 1)
    tracker.recorded("a", 0)
    assert tracker.frontier.offset == 0 and tracker.taken_before == 0
    assert sorted(tracker.keys_beyond()) == ["a\x1f0", "b\x1f0", "b\x1f1"]
    tracker.recorded("a", 1)
    assert (tracker.frontier.offset, tracker.frontier.line, tracker.taken_before) == (20, 3, 2)
    assert tracker.keys_beyond() == []


def test_samples_seen_finished_move_the_frontier_at_once() -> None:
    tracker = FrontierTracker(epochs=1)
    tracker.seen("a", pos(1), [0])
    tracker.seen("b", pos(2), [])
    tracker.seen("c", pos(3), [0])
    assert (tracker.frontier.line, tracker.keys_beyond()) == (2, ["c\x1f0"])


def config(task_root: TaskRoot, **overrides: Any) -> RunConfig:
    values: dict[str, Any] = {
        "task": str(task_root.root / "tasks" / "adder.toml"),
        "model": "mock/m",
        "model_args": {"skill": "0.6", "latency_ms": "5", "jitter_ms": "25", "cost_per_1k_tokens": "0.3"},
        "output_dir": task_root.root / "results",
        "run_id": "r",
        "concurrency": 6,
        "grace_s": 0.0,
    }
    values.update(overrides)
    return RunConfig(**values)


def interrupted(cfg: RunConfig, after_s: float) -> RunResult:
    async def go() -> RunResult:
        runner = Runner(plan_run(cfg))
        task = asyncio.create_task(runner.run())
        await asyncio.sleep(after_s)
        runner.request_stop()
        return await task

    return asyncio.run(go())


def comparable(summary: Any) -> dict[str, Any]:
    data: dict[str, Any] = summary.model_dump(mode="json")
    for volatile in ("wall_time_s", "run_id", "status"):
        data.pop(volatile)
    return data


@pytest.mark.parametrize(("epochs", "limit"), [(1, None), (3, None), (2, 150)])
def test_resume_from_the_frontier_is_exactly_once_and_equal(
    task_root: TaskRoot, epochs: int, limit: int | None
) -> None:
    task_root.data("adder.jsonl", arithmetic_records(200, axes=("a", "b", "c")))
    whole = asyncio.run(Runner(plan_run(config(task_root, run_id="whole", epochs=epochs, limit=limit))).run())
    first = interrupted(config(task_root, epochs=epochs, limit=limit), after_s=0.15)
    assert first.status == "interrupted"
    point = read_resume_point(first.run_dir)
    assert point is not None and point.frontier_line > 1
    second = asyncio.run(Runner(plan_resume(first.run_dir)).run())
    assert second.resumed_at_line == point.frontier_line
    assert second.status == "complete"
    keys = [(r["sample_id"], r["epoch"]) for r in read_records(first.run_dir)]
    assert len(keys) == len(set(keys)) == whole.summary.records
    assert comparable(second.summary) == comparable(whole.summary)


def test_a_rewritten_samples_file_is_not_trusted(task_root: TaskRoot) -> None:
    first = interrupted(config(task_root), after_s=0.1)
    samples = RunPaths(first.run_dir).samples
    lines = samples.read_bytes().splitlines(keepends=True)
    samples.write_bytes(b"".join(lines[:3]))  # fewer bytes than the point describes
    assert read_resume_point(first.run_dir) is None
    second = asyncio.run(Runner(plan_resume(first.run_dir)).run())
    assert second.resumed_at_line is None and second.status == "complete"
    assert len(read_records(first.run_dir)) == 40


def test_retry_errors_reads_everything_and_supersedes(task_root: TaskRoot) -> None:
    first = interrupted(config(task_root, model_args={"error_rate": "0.3", "latency_ms": "5"}), after_s=0.1)
    asyncio.run(Runner(plan_resume(first.run_dir)).run())
    again = asyncio.run(Runner(plan_resume(first.run_dir, retry_errors=True)).run())
    assert again.resumed_at_line is None
    assert again.summary.records == 40


def test_columns_cache_gives_the_same_columns_as_a_full_read(task_root: TaskRoot) -> None:
    slow = {"skill": "0.6", "latency_ms": "40", "cost_per_1k_tokens": "0.3"}
    first = interrupted(config(task_root, model_args=slow), after_s=0.1)
    run_dir = first.run_dir
    assert first.status == "interrupted" and (run_dir / COLUMNS_CACHE).is_file()
    asyncio.run(Runner(plan_resume(run_dir)).run())
    samples = RunPaths(run_dir).samples
    keys = ["exact_match"]
    cached, full = load_columns_cached(samples, keys), load_columns(samples, keys)
    for name in ("score", "latency_ms", "cost_usd", "line", "offset", "epoch"):
        assert getattr(cached, name).tolist() == getattr(full, name).tolist(), name
    assert [cached.axes[i] for i in cached.axis] == [full.axes[i] for i in full.axis]
    assert summarize(samples, read_manifest(run_dir)) == summarize(samples, read_manifest(run_dir), keep_cache=True)


def test_a_cache_from_another_file_is_ignored(task_root: TaskRoot) -> None:
    first = interrupted(config(task_root), after_s=0.1)
    other = interrupted(config(task_root, run_id="other", model_args={"skill": "0.1"}), after_s=0.1)
    other_samples, samples = RunPaths(other.run_dir).samples, RunPaths(first.run_dir).samples
    save_columns_cache(other_samples, load_columns(other_samples, ["exact_match"]), ["exact_match"])
    (first.run_dir / COLUMNS_CACHE).write_bytes((other.run_dir / COLUMNS_CACHE).read_bytes())
    assert (
        load_columns_cached(samples, ["exact_match"]).score.tolist()
        == load_columns(samples, ["exact_match"]).score.tolist()
    )


def _zip_of(member: str, payload: bytes) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(member, payload)
    return buffer.getvalue()


@pytest.mark.parametrize("damage", ["cut_in_half", "empty", "foreign_zip", "meta_not_an_array"])
def test_a_damaged_columns_cache_is_read_past_never_an_error(task_root: TaskRoot, damage: str) -> None:
    """audit-s21-input 2: a cut-short .columns.npz raised BadZipFile or EOFError (click's bare "Aborted!") in
    report, inspect and compare, and a resume ran every sample, then crashed with the manifest left running."""
    first = interrupted(config(task_root), after_s=0.1)
    cache = first.run_dir / COLUMNS_CACHE
    whole = cache.read_bytes()
    cache.write_bytes(
        {
            "cut_in_half": whole[: len(whole) // 2],
            "empty": b"",
            "foreign_zip": _zip_of("other.npy", b"junk"),
            "meta_not_an_array": _zip_of("meta.npy", b"junk"),
        }[damage]
    )
    samples = RunPaths(first.run_dir).samples
    assert (
        load_columns_cached(samples, ["exact_match"]).score.tolist()
        == load_columns(samples, ["exact_match"]).score.tolist()
    )
    resumed = asyncio.run(Runner(plan_resume(first.run_dir)).run())
    assert resumed.status == "complete" and len(read_records(first.run_dir)) == 40


def test_resume_point_is_json_naming_the_frontier(task_root: TaskRoot) -> None:
    first = interrupted(config(task_root), after_s=0.1)
    point = json.loads((Path(first.run_dir) / ".resume.json").read_text())
    assert set(point) >= {"samples_bytes", "frontier_offset", "frontier_line", "keys_beyond", "done_keys"}


@pytest.mark.parametrize("shift", ["mid_line", "next_line"])
def test_a_damaged_resume_point_never_leaves_the_run_short_for_good(task_root: TaskRoot, shift: str) -> None:
    task_root.data("adder.jsonl", arithmetic_records(200, axes=("a", "b")))
    first = interrupted(config(task_root), after_s=0.15)
    point_file = RunPaths(first.run_dir).resume_point
    point = json.loads(point_file.read_text())
    assert point["frontier_line"] > 2
    dataset = (task_root.root / "data" / "adder.jsonl").read_bytes()
    if shift == "mid_line":  # not at the start of a line: not trusted at all
        point["frontier_offset"] += 7
    else:  # a whole line further: trusted, so the line in between is skipped and its record missing
        point["frontier_offset"] = dataset.index(b"\n", point["frontier_offset"]) + 1
    point_file.write_text(json.dumps(point))

    second = asyncio.run(Runner(plan_resume(first.run_dir)).run())
    if shift == "next_line":
        assert second.status == "interrupted" and second.summary.missing > 0
        assert not point_file.exists()  # dropped: the next resume reads everything
        second = asyncio.run(Runner(plan_resume(first.run_dir)).run())
    assert second.status == "complete"
    keys = [(r["sample_id"], r["epoch"]) for r in read_records(first.run_dir)]
    assert len(keys) == len(set(keys)) == 200


def test_a_resume_point_written_before_a_session_reaches_the_records_beyond_its_start_keeps_them(
    task_root: TaskRoot,
) -> None:
    """fuzz-s20 1: session 1 left records beyond its frontier (keys_beyond); session 2, at concurrency 1, wrote a
    new point before reaching their samples, and that point forgot them: session 3 ran and recorded them again."""
    task_root.data("adder.jsonl", arithmetic_records(120, axes=("a", "b")))
    cfg = config(task_root, model_args={"skill": "0.6", "latency_ms": "5", "jitter_ms": "60"}, concurrency=12)
    first = interrupted(cfg, after_s=0.2)
    point = read_resume_point(first.run_dir)
    assert point is not None and point.keys_beyond, "session 1 must leave records beyond its frontier"

    async def stopped_at_its_first_sample() -> RunResult:
        runner = Runner(plan_resume(first.run_dir, SessionOverrides(concurrency=1)))
        task = asyncio.create_task(runner.run())
        await asyncio.sleep(0.01)  # its first sample is out; the records beyond are not reached yet
        runner.request_stop()
        return await task

    second = asyncio.run(stopped_at_its_first_sample())
    assert second.status == "interrupted"
    third = asyncio.run(Runner(plan_resume(first.run_dir)).run())
    assert third.status == "complete"
    keys = [(r["sample_id"], r["epoch"]) for r in read_records(first.run_dir)]
    assert len(keys) == len(set(keys)) == 120


def test_a_session_removes_the_temporaries_a_killed_writer_left_and_keeps_a_live_ones(task_root: TaskRoot) -> None:
    """fuzz-s20 4: `.resume.json.PID.RANDOM.tmp` left by a SIGKILL mid-write stayed in the run directory for good."""
    import os
    import subprocess
    import sys

    first = interrupted(config(task_root), after_s=0.1)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = first.run_dir / f"..resume.json.{int(gone.stdout)}.0a1b2c3d.tmp"  # as durable.temp_name names it
    live = first.run_dir / f"..columns.npz.{os.getpid()}.0a1b2c3d.tmp"
    theirs = first.run_dir / f".mynotes.v2.{int(gone.stdout)}.cafe.tmp"  # not one of ours (review-s21 7)
    for path in (stale, live, theirs):
        path.write_bytes(b"{")
    assert asyncio.run(Runner(plan_resume(first.run_dir)).run()).status == "complete"
    assert not stale.exists() and live.exists() and theirs.exists()


def test_a_retry_errors_session_drops_the_resume_point_it_does_not_trust(task_root: TaskRoot) -> None:
    """review-s21 2: a --retry-errors session appends records of samples before the point's frontier; a later
    session trusting that point counted them as beyond it, never reached them, and never wrote a point again."""
    cfg = config(task_root, model_args={"skill": "0.6", "latency_ms": "5", "error_rate": "0.3"}, max_retries=0)
    first = interrupted(cfg, after_s=0.15)
    assert read_resume_point(first.run_dir) is not None

    async def retry_stopped_at_once() -> RunResult:
        runner = Runner(plan_resume(first.run_dir, SessionOverrides(concurrency=1), retry_errors=True))
        task = asyncio.create_task(runner.run())
        records = len(read_records(first.run_dir))
        while len(read_records(first.run_dir)) == records:  # one retried record written, the rest not
            await asyncio.sleep(0.001)
        runner.request_stop()
        return await task

    asyncio.run(retry_stopped_at_once())
    point = read_resume_point(first.run_dir)
    size = (first.run_dir / "samples.jsonl").stat().st_size
    assert point is None or point.samples_bytes == size  # no point that predates the retried records
    final = asyncio.run(Runner(plan_resume(first.run_dir)).run())
    assert final.status == "complete"
    keys = [(r["sample_id"], r["epoch"]) for r in read_records(first.run_dir)]
    assert len(set(keys)) == 40
    assert read_resume_point(first.run_dir) is not None  # the finished session could write one again


def test_a_stop_from_another_thread_ends_a_session_whose_samples_never_wait(task_root: TaskRoot) -> None:
    # epochs-s31 F2: with the mock at latency 0 (or a rescore's scorers) a worker ran through every sample without
    # giving the event loop a turn, so Ctrl-C's stop (call_soon_threadsafe from the signal handler) ran only once
    # the session had written everything: 6,595 of 6,595 records after a Ctrl-C at 1,688
    cfg = config(task_root, model_args={"latency_ms": "0"}, epochs=200, concurrency=4)  # 8,000 records

    async def go() -> RunResult:
        runner = Runner(plan_run(cfg))
        loop = asyncio.get_running_loop()
        samples = task_root.root / "results" / "r" / "samples.jsonl"

        def stop_once_writing() -> None:
            while not (samples.exists() and samples.stat().st_size > 0):
                time.sleep(0.001)
            loop.call_soon_threadsafe(runner.request_stop)

        threading.Thread(target=stop_once_writing, daemon=True).start()
        return await runner.run()

    result = asyncio.run(go())
    assert result.status == "interrupted"
    assert 0 < len(read_records(task_root.root / "results" / "r")) < 4_000


def test_a_stop_that_comes_once_every_record_is_written_leaves_the_run_complete(task_root: TaskRoot) -> None:
    # review2-s31 F6: a Ctrl-C after the last record, before the status was set, marked a complete run interrupted
    cfg = config(task_root, limit=4)
    asyncio.run(Runner(plan_run(cfg)).run())
    runner = Runner(plan_resume(task_root.root / "results" / "r"))
    runner.request_stop()
    result = asyncio.run(runner.run())
    assert result.status == "complete" and read_manifest(task_root.root / "results" / "r").status == "complete"
