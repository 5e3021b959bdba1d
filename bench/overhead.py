"""Harness overhead end to end: the zero-latency mock, N samples, durable writes included.

Prints samples per second, CPU time per sample and peak RSS of the `eval-harness run` process, for two
sizes side by side, so the RSS column shows whether memory grows with the number of samples.
Usage: python bench/overhead.py [--samples 20000]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import EVAL_HARNESS, make_task_root, run_measured


def measure(samples: int, concurrency: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        spec = make_task_root(root, samples)
        result = run_measured(
            [
                *EVAL_HARNESS,
                "run",
                "--task",
                str(spec),
                "--model",
                "mock/fast",
                "--output-dir",
                str(root / "out"),
                "--run-id",
                "bench",
                "--concurrency",
                str(concurrency),
                "--quiet",
            ],
            cwd=root,
        )
        if result.returncode != 0:
            raise SystemExit(f"run failed ({result.returncode}): {result.stderr}")
        lines = sum(1 for _ in (root / "out" / "bench" / "samples.jsonl").open())
        assert lines == samples, (lines, samples)
    return {
        "samples": samples,
        "wall_s": result.wall_s,
        "per_s": samples / result.wall_s,
        "cpu_ms_per_sample": 1000 * result.cpu_s / samples,
        "rss_mb": result.peak_rss_mb,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    rows = [measure(args.samples // 10, args.concurrency), measure(args.samples, args.concurrency)]
    print(f"bench/overhead: zero-latency mock, concurrency {args.concurrency}, whole process (start-up included)")
    print(f"{'samples':>9} {'wall s':>8} {'samples/s':>10} {'CPU ms/sample':>14} {'peak RSS MB':>12}")
    for row in rows:
        print(
            f"{row['samples']:>9,.0f} {row['wall_s']:>8.2f} {row['per_s']:>10,.0f} "
            f"{row['cpu_ms_per_sample']:>14.3f} {row['rss_mb']:>12.1f}"
        )
    small, large = rows
    print(f"RSS ratio {large['samples'] / small['samples']:.0f}x samples: {large['rss_mb'] / small['rss_mb']:.2f}x")
    print("target: >= 5,000 samples/s; peak RSS flat in the number of samples")


if __name__ == "__main__":
    main()
