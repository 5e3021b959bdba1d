"""Throughput of a real HTTP run: how close ``eval-harness run`` gets to the physical limit.

A fake LLM server runs in its own process and answers every request after a fixed latency, so a run of N
samples at concurrency C cannot finish faster than N × latency / C. By default that is the lean server
(tests/lean_llm_server.py), which keeps its latency at 256 requests in flight (its lateness is printed);
``--server full`` uses the full fake server of the tests (aiohttp), whose own work at 256 in flight makes
its answers late, so that row measures the server as much as the harness. For each
concurrency this prints the whole process's wall time, the run phase (first request received to last
record written), that limit and both ratios, the harness's CPU per sample (user + system, and the marginal
figure with a 1-sample run's fixed cost taken out) and its peak RSS; and the time of ``eval-harness --help``.
The ``floor`` rows send the same requests from bench/floor_client.py, an asyncio client that does nothing
but the wire: what this machine and server leave of the limit for any Python client.

Targets: run phase ≤ 1.10 × limit at every concurrency; whole process ≤ limit + 0.6 s; < 0.5 ms CPU per
sample; ``--help`` < 0.3 s.

    python bench/throughput.py [--samples 2000] [--latency 0.2] [--concurrency 16 64 256]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SERVERS = {"lean": REPO / "tests" / "lean_llm_server.py", "full": REPO / "tests" / "fake_llm_server.py"}
FLOOR_CLIENT = Path(__file__).resolve().parent / "floor_client.py"


@dataclass
class Measured:
    wall_s: float
    run_phase_s: float
    startup_s: float
    teardown_s: float
    server_cpu_s: float
    cpu_user_s: float
    cpu_sys_s: float
    max_rss_mb: float
    records: int
    errors: int
    max_in_flight: int
    server_late_ms: float | None
    """The lean server's 99th percentile of how late it answered (None: not measured)."""


def write_dataset(path: Path, count: int) -> None:
    with path.open("w") as out:
        for i in range(count):
            answer = i * 7
            item = {
                "id": f"b{i:05d}",
                "axis": ("arithmetic", "string_ops", "long_context", "multi_step")[i % 4],
                "input": f"Item {i}: reply with the number {answer}. [[answer: {answer}]]",
                "target": str(answer),
            }
            out.write(json.dumps(item) + "\n")


def start_server(kind: str, latency: float) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVERS[kind]), "--latency", str(latency)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("PORT "):
        raise SystemExit(f"the fake server did not start: {line!r}")
    return process, f"http://127.0.0.1:{int(line.split()[1])}"


def http_json(url: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        loaded: dict[str, Any] = json.loads(response.read())
        return loaded


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def harness(args: list[str], env: dict[str, str]) -> tuple[float, float, float, Any]:
    """Run the CLI; return its start and end (epoch seconds), wall time and its own resource usage."""
    started_at = time.time()
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_harness", *args], env=env, cwd=REPO, stdout=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"eval-harness {' '.join(args)} exited with {code}")
    return started_at, started_at + wall, wall, usage


def finished_at(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class Setup:
    """What every measured run shares."""

    base: str
    server_pid: int
    dataset: Path
    samples: int
    latency: float
    env: dict[str, str]


KINDS = ("httpx", "httpx-pooled", "pooled", "mock", "floor")


def measure(setup: Setup, out: Path, concurrency: int, limit: int | None, kind: str = "httpx") -> Measured:
    """One run over HTTP against the fake server (through one of the wires), or (``mock``) the same run with
    the mock provider, or (``floor``) the same requests from bench/floor_client.py."""
    if kind == "floor":
        return measure_floor(setup, concurrency, limit)
    http_json(f"{setup.base}/_control", {"reset": True})
    server_cpu = process_cpu_s(setup.server_pid)
    mock = kind == "mock"
    run_id = f"{kind}-c{concurrency}-{limit or 'all'}"
    if mock:
        model = ["--model", "mock/bench", "--model-arg", f"latency_ms={setup.latency * 1000:g}"]
    else:
        model = ["--model", "openai-compatible/bench", "--model-arg", f"base_url={setup.base}/v1",
                 "--model-arg", f"http_transport={kind}"]  # fmt: skip
    args = [
        "run", "--task", "capability_profile", "--dataset", str(setup.dataset), *model,
        "--concurrency", str(concurrency), "--output-dir", str(out), "--run-id", run_id, "-q",
    ]  # fmt: skip
    if limit is not None:
        args += ["--limit", str(limit)]
    started_at, ended_at, wall, usage = harness(args, setup.env)
    server_cpu = process_cpu_s(setup.server_pid) - server_cpu
    stats = http_json(f"{setup.base}/_stats")
    rows = [json.loads(line) for line in (out / run_id / "samples.jsonl").read_text().splitlines()]
    finished = sorted(finished_at(row["finished_at"]) for row in rows)
    # the mock sends nothing: its first call started one latency before the first record
    first_request = finished[0] - setup.latency if mock else stats["first_request_at"]
    return Measured(
        wall_s=wall,
        run_phase_s=finished[-1] - first_request,
        startup_s=first_request - started_at,
        teardown_s=ended_at - finished[-1],
        server_cpu_s=server_cpu,
        cpu_user_s=usage.ru_utime,
        cpu_sys_s=usage.ru_stime,
        max_rss_mb=usage.ru_maxrss / 1024,
        records=len(rows),
        errors=sum(1 for row in rows if row["error"] is not None),
        max_in_flight=concurrency if mock else stats["max_in_flight"],
        server_late_ms=None if mock else (stats.get("late_ms") or {}).get("p99"),
    )


def measure_floor(setup: Setup, concurrency: int, limit: int | None) -> Measured:
    """The same requests from a client that does nothing but the wire: the floor of this machine and server."""
    http_json(f"{setup.base}/_control", {"reset": True})
    server_cpu = process_cpu_s(setup.server_pid)
    requests = limit or setup.samples
    started_at = time.time()
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(FLOOR_CLIENT), "--base", setup.base, "--concurrency", str(concurrency),
         "--requests", str(requests)],
        env=setup.env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    output = process.stdout.read()  # to the end: the client has exited, unreaped, so wait4 gets its usage
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.stdout.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"floor_client.py exited with {os.waitstatus_to_exitcode(status)}")
    result = json.loads(output)
    server_cpu = process_cpu_s(setup.server_pid) - server_cpu
    stats = http_json(f"{setup.base}/_stats")
    return Measured(
        wall_s=wall,
        run_phase_s=result["ended_at"] - stats["first_request_at"],
        startup_s=stats["first_request_at"] - started_at,
        teardown_s=started_at + wall - result["ended_at"],
        server_cpu_s=server_cpu,
        cpu_user_s=usage.ru_utime,
        cpu_sys_s=usage.ru_stime,
        max_rss_mb=usage.ru_maxrss / 1024,
        records=result["answered"],
        errors=0,
        max_in_flight=stats["max_in_flight"],
        server_late_ms=(stats.get("late_ms") or {}).get("p99"),
    )


def median_run(setup: Setup, out: Path, concurrency: int, repeat: int, kind: str) -> Measured:
    runs = [measure(setup, out / f"{kind}-{i}", concurrency, None, kind) for i in range(repeat)]
    return sorted(runs, key=lambda m: m.run_phase_s)[len(runs) // 2]


def cpu_ticks() -> tuple[int, int]:
    """(ticks the hypervisor stole, all ticks) of the whole machine so far, from /proc/stat; (0, 0) elsewhere."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return 0, 0
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> str:
    total = after[1] - before[1]
    return f"{100 * (after[0] - before[0]) / total:.0f}" if total > 0 else "-"


def row(label: str, full: Measured, one: Measured, samples: int, limit: float) -> str:
    cpu = full.cpu_user_s + full.cpu_sys_s
    marginal = (cpu - one.cpu_user_s - one.cpu_sys_s) / (samples - 1)
    late = "-" if full.server_late_ms is None else f"{full.server_late_ms:.1f}"
    return (
        f"{label:>16} {limit:>7.2f} {full.run_phase_s:>6.2f} {full.run_phase_s / limit:>7.3f} "
        f"{full.wall_s:>7.2f} {full.wall_s - limit:>+9.2f} {full.startup_s:>7.2f} {full.teardown_s:>6.2f} "
        f"{cpu / samples * 1000:>8.3f} {full.cpu_user_s / samples * 1000:>5.2f} "
        f"{full.cpu_sys_s / samples * 1000:>5.2f} {marginal * 1000:>9.3f} {full.max_rss_mb:>7.0f} "
        f"{full.server_cpu_s:>9.2f} {late:>8} {full.max_in_flight:>8} {full.errors:>4}"
    )


def process_time(args: list[str], env: dict[str, str], repeats: int = 5) -> float:
    """Median wall time of ``python ARGS`` as a new process."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, *args], env=env, stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


STACK_ONLY = """\
import gc
gc.disable()  # as eval-harness starts
import asyncio, orjson, pydantic, typer
class Model(pydantic.BaseModel):  # pydantic's first model sets up its schema machinery and plugins
    x: int
import os
os._exit(0)  # as eval-harness ends: without the interpreter's teardown
"""
"""What any run pays before its own code: the interpreter, and importing the libraries the design card names
for the CLI, the artifacts and the event loop."""


LEGEND = """\
run = first request received to last record written; whole = process start to exit;
start = process start to first request; end = last record to exit;
cpu ms/s = harness CPU per sample (user + system); marg = the same without a 1-sample run's fixed cost;
srv cpu = the server process's CPU during the run; srv late = the lean server's 99th percentile of how late
it answered (ms after the latency was up); mock = the same run with the mock provider (no HTTP);
floor = the same requests from bench/floor_client.py (no harness: the machine's and the server's share);
steal% = the share of the machine's CPU time the hypervisor took during that row's runs (/proc/stat)"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--repeat", type=int, default=3, help="Runs per concurrency; the median run is shown.")
    parser.add_argument(
        "--server", choices=sorted(SERVERS), default="lean",
        help="lean (tests/lean_llm_server.py, the default) or full (tests/fake_llm_server.py, aiohttp).",
    )  # fmt: skip
    parser.add_argument(
        "--kinds", nargs="+", choices=KINDS, default=list(KINDS),
        help="pooled (the default wire), httpx (--model-arg http_transport=httpx: httpx.AsyncClient and its "
        "transport), httpx-pooled (httpx.AsyncClient on the lean pool: the client machinery's share), mock "
        "(the same latency without HTTP: the runner's share) and floor (bench/floor_client.py: the wire alone).",
    )  # fmt: skip
    options = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    server, base = start_server(options.server, options.latency)
    try:
        with tempfile.TemporaryDirectory(prefix="eval-harness-bench-") as tmp:
            # Users run with cached bytecode; keep it out of the repository and warm it before measuring.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
            dataset = Path(tmp) / "bench.jsonl"
            write_dataset(dataset, options.samples)
            out = Path(tmp) / "results"
            setup = Setup(base, server.pid, dataset, options.samples, options.latency, env)
            measure(setup, out / "warm-up", 1, 1)
            help_s = process_time(["-m", "eval_harness", "--help"], env)
            print(f"eval-harness --help: {help_s * 1000:.0f} ms (median of 5)")
            print(
                f"the stack alone (python, importing asyncio, orjson, pydantic + a first model, typer): "
                f"{process_time(['-c', STACK_ONLY], env) * 1000:.0f} ms (median of 5)"
            )
            print(
                f"{options.samples} samples, {options.latency * 1000:.0f} ms server latency, "
                f"{options.server} server in its own process, median of {options.repeat} runs"
            )
            print(
                f"{'run':>16} {'limit s':>7} {'run s':>6} {'run/lim':>7} {'whole s':>7} {'whole-lim':>9} "
                f"{'start s':>7} {'end s':>6} {'cpu ms/s':>8} {'usr':>5} {'sys':>5} {'marg ms/s':>9} "
                f"{'rss MB':>7} {'srv cpu s':>9} {'srv late':>8} {'inflight':>8} {'err':>4} {'steal%':>6}"
            )
            for concurrency in options.concurrency:
                limit = options.samples * options.latency / concurrency
                for kind in options.kinds:
                    ticks = cpu_ticks()
                    full = median_run(setup, out, concurrency, options.repeat, kind)
                    steal = steal_share(ticks, cpu_ticks())
                    one = measure(setup, out / "one", concurrency, 1, kind)
                    assert full.records == options.samples, f"{full.records} records, expected {options.samples}"
                    label = f"{kind} c{concurrency}"
                    print(f"{row(label, full, one, options.samples, limit)} {steal:>6}", flush=True)
            print(LEGEND)
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
