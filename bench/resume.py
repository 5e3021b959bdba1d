"""How long a resume takes when 1,000,000 records are already done.

Builds a run with N finished records written directly in the record format (set-up in seconds, not
hours) and a dataset of N + 1,000 samples. A first `eval-harness resume` has no resume point, so it reads
every record and every sample before its first call; it is interrupted with Ctrl-C after 50 new records,
and leaves a resume point and a columns cache as every session does. The second `eval-harness resume` is
timed end to end: it skips the N done, runs the rest, and writes the summary over all N + 1,000 records.
Usage: python bench/resume.py [--records 1000000]
"""

from __future__ import annotations

import argparse
import math
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import orjson
from _common import EVAL_HARNESS, make_task_root, run_measured

from eval_harness.artifacts import RunPaths, write_model
from eval_harness.config import RunConfig
from eval_harness.planning import plan_run
from eval_harness.types import SampleRecord

REMAINING = 1_000


def build_run(root: Path, records: int) -> Path:
    spec = make_task_root(root, records + REMAINING)
    # 1 ms a call: the first session must still be running when it is interrupted.
    config = RunConfig(task=str(spec), model="mock/fast", model_args={"latency_ms": "1"}, output_dir=root / "out",
                       run_id="big")  # fmt: skip
    plan = plan_run(config)
    paths = RunPaths(plan.run_dir)
    plan.run_dir.mkdir(parents=True)
    write_model(paths.manifest, plan.manifest.model_copy(update={"status": "interrupted", "sessions": 1}))
    template = {name: None for name in SampleRecord.model_fields}
    template.update(
        epoch=0,
        tags=[],
        passed=True,
        latency_ms=0.0,
        cost_usd=0.0,
        attempts=1,
        explanations={},
        answers={},
        usage={"prompt_tokens": 12, "completion_tokens": 2, "cached_tokens": None, "reasoning_tokens": None},
        finished_at="2026-11-29T00:00:00.000Z",
        cached=False,
        model="mock/fast",
        finish_reason="stop",
        retries={},
        backoff_s=0.0,
        judge_usage=None,
        judge_cost_usd=None,
    )
    axes = ("arithmetic", "string_ops", "long_context", "multi_step")
    with paths.samples.open("wb") as handle:
        batch = []
        for index in range(records):
            question = f"What is {index} + 7?"
            right = index % 3 != 0
            template.update(
                sample_id=f"s{index:07d}",
                axis=axes[index % 4],
                input=question,
                target=str(index + 7),
                prompt=[{"role": "user", "content": f"{question}\nReply with the answer only."}],
                output=str(index + 7) if right else "0",
                scores={"exact_match": float(right)},
                score=float(right),
                passed=right,
                request_id=f"mock-s{index}-0",
            )
            batch.append(orjson.dumps(template) + b"\n")
            if len(batch) == 20_000:
                handle.write(b"".join(batch))
                batch.clear()
        handle.write(b"".join(batch))
    return plan.run_dir


def first_session(run_dir: Path, records: int) -> tuple[float, float]:
    """Resume with no resume point (as after a run written by another tool): time until the first new
    record, then Ctrl-C once 50 are written. Returns (seconds to the first record, seconds in all)."""
    samples = RunPaths(run_dir).samples
    lines = LineCounter(samples)
    started = time.perf_counter()
    process = subprocess.Popen([*EVAL_HARNESS, "resume", str(run_dir), "--concurrency", "1", "--quiet"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    to_first = math.nan
    while process.poll() is None:
        count = lines.count()
        if math.isnan(to_first) and count > records:
            to_first = time.perf_counter() - started
        if count >= records + 50:
            process.send_signal(signal.SIGINT)
            break
        time.sleep(0.01)
    process.wait()
    return to_first, time.perf_counter() - started


class LineCounter:
    """Counts the lines of a growing file, reading only what was appended since the last count."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset, self.lines = path, 0, 0

    def count(self) -> int:
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        self.lines += data.count(b"\n")
        return self.lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        run_dir = build_run(root, args.records)
        size_mb = RunPaths(run_dir).samples.stat().st_size / 1e6
        print(
            f"bench/resume: built {args.records:,} done records ({size_mb:,.0f} MB) + {REMAINING:,} to run "
            f"in {time.perf_counter() - started:.1f}s"
        )
        to_first, slow_total = first_session(run_dir, args.records)
        # the first session's --concurrency 1 holds for later resumes (as a resume's flags do): back to the run's 16
        result = run_measured([*EVAL_HARNESS, "resume", str(run_dir), "--concurrency", "16", "--quiet"], cwd=root)
        if result.returncode != 0:
            raise SystemExit(f"resume failed ({result.returncode}): {result.stderr}")
        lines = sum(1 for _ in RunPaths(run_dir).samples.open("rb"))
        assert lines == args.records + REMAINING, lines
        assert orjson.loads(RunPaths(run_dir).summary.read_bytes())["records"] == args.records + REMAINING
    print(
        f"without a resume point: {to_first:.2f}s to the first new record (reads every record and sample), "
        f"{slow_total:.2f}s until Ctrl-C after 50 records was handled"
    )
    print(
        f"with the resume point that session left: whole `eval-harness resume` (skips {args.records:,}, runs the "
        f"rest, summary over all): wall {result.wall_s:.2f}s, CPU {result.cpu_s:.2f}s, "
        f"peak RSS {result.peak_rss_mb:,.0f} MB (target: under 5 s)"
    )


if __name__ == "__main__":
    main()
