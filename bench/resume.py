"""How long a resume takes when 1,000,000 records are already done.

Builds a run as an interrupted session would leave it: a dataset of N + 1,000 samples, a manifest, and
N finished records (written directly in the record format, so the set-up takes seconds, not hours). Then
times the real `eval-harness resume` process end to end (it skips N, runs 1,000, and rewrites the summary
over all N + 1,000 records), and, in-process, the phases of that resume.
Usage: python bench/resume.py [--records 1000000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import orjson
from _common import EVAL_HARNESS, make_task_root, run_measured

from eval_harness.aggregate import summarize
from eval_harness.artifacts import RunPaths, scan_keys, write_model
from eval_harness.config import RunConfig
from eval_harness.datasets import file_sha256, iter_samples
from eval_harness.runner import plan_run
from eval_harness.types import SampleRecord

REMAINING = 1_000


def build_run(root: Path, records: int) -> Path:
    spec = make_task_root(root, records + REMAINING)
    plan = plan_run(RunConfig(task=str(spec), model="mock/fast", output_dir=root / "out", run_id="big"))
    paths = RunPaths(plan.run_dir)
    plan.run_dir.mkdir(parents=True)
    write_model(paths.manifest, plan.manifest.model_copy(update={"status": "interrupted", "sessions": 1}))
    template = {name: None for name in SampleRecord.model_fields}
    template.update(
        epoch=0, tags=[], passed=True, latency_ms=0.0, cost_usd=0.0, attempts=1, explanations={}, answers={},
        usage={"prompt_tokens": 12, "completion_tokens": 2, "cached_tokens": None, "reasoning_tokens": None},
        finished_at="2026-11-29T00:00:00.000Z", cached=False, model="mock/fast", finish_reason="stop",
        retries={}, backoff_s=0.0, judge_usage=None, judge_cost_usd=None,
    )
    axes = ("arithmetic", "string_ops", "long_context", "multi_step")
    with paths.samples.open("wb") as handle:
        batch = []
        for index in range(records):
            question = f"What is {index} + 7?"
            right = index % 3 != 0
            template.update(
                sample_id=f"s{index:07d}", axis=axes[index % 4], input=question, target=str(index + 7),
                prompt=[{"role": "user", "content": f"{question}\nReply with the answer only."}],
                output=str(index + 7) if right else "0", scores={"exact_match": float(right)},
                score=float(right), passed=right, request_id=f"mock-s{index}-0",
            )
            batch.append(orjson.dumps(template) + b"\n")
            if len(batch) == 20_000:
                handle.write(b"".join(batch))
                batch.clear()
        handle.write(b"".join(batch))
    return plan.run_dir


def phases(run_dir: Path, dataset: Path) -> dict[str, float]:
    timings = {}
    started = time.perf_counter()
    file_sha256(dataset)
    timings["dataset sha256"] = time.perf_counter() - started
    started = time.perf_counter()
    scan = scan_keys(RunPaths(run_dir).samples)
    timings["scan done keys"] = time.perf_counter() - started
    started = time.perf_counter()
    remaining = sum(1 for _ in iter_samples(dataset, skip=lambda sid: f"{sid}\x1f0" in scan.done))
    timings["skip finished samples"] = time.perf_counter() - started
    assert remaining == REMAINING, remaining
    from eval_harness.artifacts import read_manifest

    started = time.perf_counter()
    summarize(RunPaths(run_dir).samples, read_manifest(run_dir))
    timings["summary over all records"] = time.perf_counter() - started
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        run_dir = build_run(root, args.records)
        size_mb = RunPaths(run_dir).samples.stat().st_size / 1e6
        print(f"bench/resume: built {args.records:,} done records ({size_mb:,.0f} MB) + {REMAINING:,} to run "
              f"in {time.perf_counter() - started:.1f}s")
        breakdown = phases(run_dir, root / "data" / "bench.jsonl")
        result = run_measured([*EVAL_HARNESS, "resume", str(run_dir), "--quiet"], cwd=root)
        if result.returncode != 0:
            raise SystemExit(f"resume failed ({result.returncode}): {result.stderr}")
        lines = sum(1 for _ in RunPaths(run_dir).samples.open("rb"))
        assert lines == args.records + REMAINING, lines
    print(f"{'phase (in-process)':<28} {'seconds':>8}")
    for name, seconds in breakdown.items():
        print(f"{name:<28} {seconds:>8.2f}")
    print(f"whole `eval-harness resume`: wall {result.wall_s:.2f}s, CPU {result.cpu_s:.2f}s, "
          f"peak RSS {result.peak_rss_mb:,.0f} MB (target: under 5 s)")


if __name__ == "__main__":
    main()
