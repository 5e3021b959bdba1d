"""Shared helpers for the benchmarks: a temporary task root and a child process measured with rusage."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EVAL_HARNESS = [sys.executable, "-m", "eval_harness"]


@dataclass
class Measured:
    """Wall time, CPU time and peak RSS of one child process."""

    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    returncode: int
    stdout: str
    stderr: str


def run_measured(args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> Measured:
    """Run ``args`` as a child and read its CPU and peak RSS from ``wait4``."""
    started = time.perf_counter()
    process = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = "", ""
    assert process.stdout is not None and process.stderr is not None
    out = process.stdout.read()
    err = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return Measured(
        wall_s=wall,
        cpu_s=usage.ru_utime + usage.ru_stime,
        peak_rss_mb=usage.ru_maxrss / 1024,
        returncode=process.returncode,
        stdout=out,
        stderr=err,
    )


def make_task_root(root: Path, samples: int, name: str = "bench") -> Path:
    """A task root with an arithmetic dataset of ``samples`` items over four axes; returns the spec path."""
    (root / "tasks").mkdir(parents=True, exist_ok=True)
    (root / "templates").mkdir(exist_ok=True)
    (root / "data").mkdir(exist_ok=True)
    axes = ("arithmetic", "string_ops", "long_context", "multi_step")
    with (root / "data" / f"{name}.jsonl").open("w") as handle:
        for index in range(samples):
            record = {
                "id": f"s{index:07d}",
                "axis": axes[index % 4],
                "input": f"What is {index} + 7?",
                "target": str(index + 7),
            }
            handle.write(json.dumps(record) + "\n")
    (root / "templates" / "plain.jinja2").write_text("{{ input }}\nReply with the answer only.\n")
    spec = root / "tasks" / f"{name}.toml"
    spec.write_text(
        f'name = "{name}"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/{name}.jsonl"\n'
        '[[scorers]]\nname = "exact_match"\nargs = { mode = "lenient" }\n'
    )
    return spec


def peak_rss_self_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
