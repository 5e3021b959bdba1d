"""How long `report` and `compare` take on runs of 1,000,000 records, and how much memory they use.

Builds four runs in the record format the runner writes (directly, so the set-up takes seconds): two
with 0/1 scores (one scorer, exact_match) and two with continuous final scores (exact_match plus a
continuous judge scorer), each with about 1% provider errors, realistic prompts and outputs; and a fifth like
the first whose samples carry tags (none to three of eight, about 10% none) and whose answers stop at max_tokens
about 3% of the time, for ``report --by-tag``. Then runs
the real `eval-harness report` and `compare` processes on them and prints, per command, the wall time,
the CPU time, and the peak resident memory of the whole process tree (workers included, summed), each
also as a share of the budget the issue sets: 10 s and 1 GiB. Each command runs cold (bare JSONL, as written
by another tool) and warm (with the columns cache every runner session leaves beside samples.jsonl).

Usage: python bench/report.py [--records 1000000] [--dir DIR] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
from _common import EVAL_HARNESS

from eval_harness.aggregate import load_columns, save_columns_cache, scorer_keys
from eval_harness.artifacts import RunPaths, read_manifest, write_model
from eval_harness.types import (
    SCHEMA_VERSION,
    DatasetInfo,
    GenerateConfig,
    ModelInfo,
    RunManifest,
    SampleRecord,
    ScorerSpec,
    TaskInfo,
)

BUDGET_S = 10.0
BUDGET_MB = 1024.0
AXES = ("arithmetic", "string_ops", "long_context", "multi_step")


def manifest(run_id: str, model: str, records: int, scorers: list[ScorerSpec]) -> RunManifest:
    return RunManifest(
        schema_version=SCHEMA_VERSION,
        run_id=run_id,
        status="complete",
        created_at="2026-11-29T00:00:00.000Z",
        updated_at="2026-11-29T00:00:00.000Z",
        harness_version="bench",
        task=TaskInfo(
            name="bench",
            template="answer_only.jinja2",
            template_sha256="0" * 64,
            system_prompt="You are a precise assistant. Answer exactly what is asked.",
            scorers=scorers,
            pass_threshold=1.0,
            generation=GenerateConfig(temperature=0.0, max_tokens=32),
        ),
        model=ModelInfo(id=model),
        dataset=DatasetInfo(path="data/bench.jsonl", sha256="b" * 64, sample_count=records),
        seed=0,
        epochs=1,
        limit=None,
        concurrency=16,
        timeout_s=120.0,
        fingerprint="f" * 64,
        expected_records=records,
        wall_time_s=3600.0,
    )


TAGS = ("algebra", "arith", "carry", "easy", "hard", "long", "multi-step", "word-problem")


def _tags(rng: random.Random) -> list[str]:
    """None to three tags, none about 10% of the time."""
    count = rng.choices((0, 1, 2, 3), weights=(10, 50, 30, 10))[0]
    return rng.sample(TAGS, count)


def build_run(
    root: Path, run_id: str, records: int, skill: float, continuous: bool, seed: int, tagged: bool = False
) -> Path:
    """A run directory with ``records`` records of the runner's format; ~1% are provider errors. ``tagged``:
    the samples carry tags and ~3% of the answers stop at max_tokens."""
    scorers = [ScorerSpec(name="exact_match", args={"mode": "lenient"})]
    if continuous:
        scorers.append(ScorerSpec(name="judge", args={"rubric": "helpfulness"}))
    run_dir = root / run_id
    run_dir.mkdir(parents=True)
    write_model(RunPaths(run_dir).manifest, manifest(run_id, f"mock/{run_id}", records, scorers))
    rng = random.Random(seed)
    template = {name: None for name in SampleRecord.model_fields}
    template.update(
        epoch=0,
        tags=[],
        attempts=1,
        answers={},
        finished_at="2026-11-29T00:00:00.000Z",
        cached=False,
        model=f"mock/{run_id}",
        finish_reason="stop",
        retries={},
        backoff_s=0.0,
        judge_usage=None,
        judge_cost_usd=None,
        thinking=None,
        error=None,
    )
    system = {"role": "system", "content": "You are a precise assistant. Answer exactly what is asked."}
    with RunPaths(run_dir).samples.open("wb") as handle:
        batch: list[bytes] = []
        for index in range(records):
            a, b = index % 97 + 3, index % 89 + 11
            question = f"What is {a} * {b}? Show no working, give the number."
            right = rng.random() < skill
            answer = str(a * b) if right else str(a * b + 1)
            prompt_tokens, completion_tokens = 41 + index % 7, 2 + index % 3
            row = dict(template)
            row.update(
                sample_id=f"s{index:07d}",
                axis=AXES[index % 4],
                input=question,
                target=str(a * b),
                prompt=[
                    system,
                    {"role": "user", "content": f"{question}\n\nReply with the answer only, no explanation."},
                ],
                request_id=f"mock-{run_id}-{index}",
                usage={
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "cached_tokens": None,
                    "reasoning_tokens": None,
                },
                latency_ms=round(30 + rng.random() * 120, 3),
            )
            if tagged:
                row.update(tags=_tags(rng), finish_reason="length" if rng.random() < 0.03 else "stop")
            if rng.random() < 0.01:
                row.update(
                    output=None,
                    scores={},
                    score=None,
                    passed=None,
                    cost_usd=None,
                    explanations={},
                    error={"type": "ProviderHTTPError", "message": "HTTP 503: overloaded", "stage": "generate"},
                )
            else:
                exact = 1.0 if right else 0.0
                scores = {"exact_match": exact}
                explanations = {"exact_match": f"lenient: output {'matches' if right else 'differs from'} {a * b!r}"}
                if continuous:
                    judged = round(min(1.0, max(0.0, rng.gauss(0.75 if right else 0.35, 0.15))), 4)
                    scores["judge"] = judged
                    explanations["judge"] = "The answer is direct and correct." if right else "Wrong product."
                    row.update(
                        judge_usage={
                            "prompt_tokens": 180,
                            "completion_tokens": 30,
                            "cached_tokens": None,
                            "reasoning_tokens": None,
                        },
                        judge_cost_usd=0.000105,
                    )
                final = sum(scores.values()) / len(scores)
                row.update(
                    output=answer,
                    scores=scores,
                    score=final,
                    passed=final >= 1.0,
                    cost_usd=(prompt_tokens + completion_tokens) * 0.0005 / 1000,
                    explanations=explanations,
                )
            batch.append(orjson.dumps(row) + b"\n")
            if len(batch) == 20_000:
                handle.write(b"".join(batch))
                batch.clear()
        handle.write(b"".join(batch))
    return run_dir


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants, in KiB (0 once it has exited)."""
    total = 0
    stack = [pid]
    while stack:
        current = stack.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
        stack.extend(int(child) for child in children)
    return total


@dataclass
class Figures:
    wall_s: float
    cpu_s: float
    peak_tree_mb: float
    returncode: int
    stderr: str


def measure(args: list[str]) -> Figures:
    """Run a command; sample the RSS of its process tree every 5 ms; read its CPU time from wait4."""
    started = time.perf_counter()
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss_kb(process.pid))
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert process.stderr is not None
    err = process.stderr.read().decode(errors="replace")
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    return Figures(wall, usage.ru_utime + usage.ru_stime, peak / 1024, os.waitstatus_to_exitcode(status), err)


def _cold_then_warm(commands: dict[str, list[str]], runs: dict[str, Path]) -> Iterator[tuple[str, list[str]]]:
    """Each command on the bare JSONL (cold: as written by another tool), then once more after writing the
    columns cache that every session of the runner leaves beside samples.jsonl (warm)."""
    for name, args in commands.items():
        yield f"{name}, cold", args
    for run_dir in runs.values():
        samples = RunPaths(run_dir).samples
        keys = scorer_keys(read_manifest(run_dir))
        save_columns_cache(samples, load_columns(samples, keys), keys)
    for name, args in commands.items():
        yield f"{name}, warm", args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--dir", type=Path, default=None, help="Where to build the runs (default: a temp dir).")
    parser.add_argument("--keep", action="store_true", help="Keep the runs afterwards.")
    options = parser.parse_args()
    root = options.dir or Path(tempfile.mkdtemp(prefix="bench-report-"))
    try:
        started = time.perf_counter()
        runs = {
            "binary-a": build_run(root, "binary-a", options.records, 0.70, continuous=False, seed=1),
            "binary-b": build_run(root, "binary-b", options.records, 0.72, continuous=False, seed=2),
            "continuous-a": build_run(root, "continuous-a", options.records, 0.70, continuous=True, seed=3),
            "continuous-b": build_run(root, "continuous-b", options.records, 0.72, continuous=True, seed=4),
            "tagged": build_run(root, "tagged", options.records, 0.70, continuous=False, seed=5, tagged=True),
        }
        size_mb = RunPaths(runs["binary-a"]).samples.stat().st_size / 1e6
        size_c = RunPaths(runs["continuous-a"]).samples.stat().st_size / 1e6
        print(
            f"built 5 runs of {options.records:,} records in {time.perf_counter() - started:.0f}s "
            f"(samples.jsonl {size_mb:,.0f} MB binary, {size_c:,.0f} MB continuous)"
        )
        cat = measure(["cat", str(RunPaths(runs["binary-a"]).samples)])
        print(f"reference: reading one samples file with cat takes {cat.wall_s:.2f}s\n")
        commands = {
            "report binary (table)": [*EVAL_HARNESS, "report", "--run", str(runs["binary-a"])],
            "report binary (json)": [*EVAL_HARNESS, "report", "--run", str(runs["binary-a"]), "--format", "json"],
            "report continuous (json)": [
                *EVAL_HARNESS,
                "report",
                "--run",
                str(runs["continuous-a"]),
                "--format",
                "json",
            ],
            "report tagged (json)": [*EVAL_HARNESS, "report", "--run", str(runs["tagged"]), "--format", "json"],
            "report tagged --by-tag (table)": [*EVAL_HARNESS, "report", "--run", str(runs["tagged"]), "--by-tag"],
            "compare binary": [
                *EVAL_HARNESS,
                "compare",
                "--run-a",
                str(runs["binary-a"]),
                "--run-b",
                str(runs["binary-b"]),
            ],
            "compare continuous": [
                *EVAL_HARNESS,
                "compare",
                "--run-a",
                str(runs["continuous-a"]),
                "--run-b",
                str(runs["continuous-b"]),
            ],
        }
        header = (
            f"{'command':<40} {'wall s':>7} {'cpu s':>7} {'peak RSS MB':>12} {'wall/10s':>9} {'RSS/1GiB':>9}"
            f" {'load':>5}"
        )
        print(header)
        print("-" * len(header))
        for name, args in _cold_then_warm(commands, runs):
            # The 1-minute load average before the command: on a shared machine it explains the spread.
            load = os.getloadavg()[0]
            figures = measure(args)
            if figures.returncode != 0:
                print(f"{name}: exit {figures.returncode}: {figures.stderr.strip()}")
                continue
            print(
                f"{name:<40} {figures.wall_s:>7.2f} {figures.cpu_s:>7.2f} {figures.peak_tree_mb:>12,.0f} "
                f"{figures.wall_s / BUDGET_S:>9.2f} {figures.peak_tree_mb / BUDGET_MB:>9.2f} {load:>5.1f}"
            )
        print(
            f"\n{os.cpu_count()} CPUs visible; cpu s counts every process of the command (report reads a large "
            "file with one worker per CPU, compare reads the two runs in two processes)"
        )
    finally:
        if not options.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"runs kept in {root}")


if __name__ == "__main__":
    main()
