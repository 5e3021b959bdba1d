"""Shared fixtures: a throw-away task root, and the real CLI driven in-process or as a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from eval_harness.config import RunConfig
from eval_harness.planning import plan_run
from eval_harness.providers.base import Provider
from eval_harness.runner import Runner, RunResult
from eval_harness.types import ChatMessage, Completion, GenerateConfig, GenerateRequest, Sample

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"

# The tests' servers listen on loopback: a proxy set for the machine (and so the httpx wire it selects) must
# not carry their requests away. Tests of the proxy path set their own variables.
for _name in ("no_proxy", "NO_PROXY"):
    os.environ[_name] = ",".join(filter(None, ["127.0.0.1,localhost", os.environ.get(_name)]))


@dataclass
class CliResult:
    """What one CLI invocation produced."""

    code: int
    out: str
    err: str


def write_jsonl(path: Path, records: Iterable[dict[str, Any] | str]) -> Path:
    """Write records (dicts as JSON, strings verbatim) one per line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write((record if isinstance(record, str) else json.dumps(record)) + "\n")
    return path


@dataclass
class TaskRoot:
    """A directory holding tasks/, templates/ and data/ like the repository does."""

    root: Path

    def task(self, name: str, body: str) -> Path:
        path = self.root / "tasks" / f"{name}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
        return path

    def template(self, name: str, body: str) -> Path:
        path = self.root / "templates" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
        return path

    def data(self, name: str, records: Iterable[dict[str, Any] | str]) -> Path:
        return write_jsonl(self.root / "data" / name, records)


def arithmetic_records(count: int, axes: tuple[str, ...] = ("alpha", "beta")) -> list[dict[str, Any]]:
    """Simple deterministic samples spread over ``axes``."""
    return [
        {"id": f"q{i:04d}", "axis": axes[i % len(axes)], "input": f"What is {i} + 1?", "target": str(i + 1)}
        for i in range(count)
    ]


@pytest.fixture
def task_root(tmp_path: Path) -> TaskRoot:
    """A task root with an `adder` task over 40 samples on two axes."""
    return adder_task_root(tmp_path / "project")


@pytest.fixture
def spec_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TaskRoot:
    """A task root holding a plain template and ``data/adder.jsonl`` (4 samples), and no task: the current
    directory, for tests that write a spec of their own."""
    root = TaskRoot(tmp_path / "project")
    root.template("plain.jinja2", "{{ input }}\n")
    root.data("adder.jsonl", arithmetic_records(4))
    monkeypatch.chdir(root.root)
    return root


def adder_task_root(directory: Path) -> TaskRoot:
    """A task root in ``directory`` with an `adder` task (numeric exact match) over 40 samples on two axes."""
    root = TaskRoot(directory)
    root.template("plain.jinja2", "{{ input }}\nAnswer only.\n")
    root.data("adder.jsonl", arithmetic_records(40))
    root.task(
        "adder",
        'name = "adder"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "exact_match"\nargs = { mode = "numeric" }\n',
    )
    return root


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run ``eval-harness ARGS`` in-process through the real entry point."""
    from eval_harness.cli.app import main

    def invoke(*args: str | Path) -> CliResult:
        capsys.readouterr()
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        else:  # pragma: no cover - typer always exits
            code = 0
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return invoke


def run_cli(*args: str | Path) -> None:
    """The CLI in-process (as the ``cli`` fixture runs it), for module-scoped runs; it must succeed."""
    from eval_harness.cli.app import main

    with pytest.raises(SystemExit) as exited:
        main([str(a) for a in args])
    assert exited.value.code in (0, None)


def run_subprocess(
    *args: str | Path, cwd: Path | None = None, timeout: float = 120, columns: int = 200, **kwargs: Any
) -> CliResult:
    """Run ``python -m eval_harness ARGS`` as a real process whose output is ``columns`` wide."""
    env = {**os.environ, "COLUMNS": str(columns)}
    completed = subprocess.run(
        [sys.executable, "-m", "eval_harness", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


def read_records(run_dir: Path) -> list[dict[str, Any]]:
    """Every complete line of a run's samples.jsonl, parsed."""
    lines = (run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    return [json.loads(line) for line in lines if line.endswith("\n")]


def as_three_identical_epochs(run: Path, into: Path) -> Path:
    """A copy of ``run`` as a temperature-0 model would have run it with --epochs 3: every epoch repeats
    epoch 0 (for tests that three copies of the same answers count as one unit of evidence)."""
    import shutil

    shutil.copytree(run, into)
    records = read_records(run)
    lines = [json.dumps({**record, "epoch": epoch}) for epoch in range(3) for record in records]
    (into / "samples.jsonl").write_text("\n".join(lines) + "\n")
    (into / ".resume.json").unlink(missing_ok=True)
    manifest = json.loads((into / "manifest.json").read_text())
    manifest.update(epochs=3, expected_records=3 * manifest["expected_records"])
    (into / "manifest.json").write_text(json.dumps(manifest))
    return into


def provider_request(
    text: str = "What is 2 + 2? [[answer: 4]]", system: str | None = "Be brief.", **config: object
) -> GenerateRequest:
    """One sample's request as the runner hands it to a provider: a system turn (unless None) and ``text``."""
    messages = [ChatMessage(role="system", content=system)] if system else []
    messages.append(ChatMessage(role="user", content=text))
    return GenerateRequest(
        messages=messages, config=GenerateConfig.model_validate(config), sample=Sample(id="s1", input=text, target="4")
    )


async def call(provider: Provider, req: GenerateRequest | None = None) -> Completion:
    """One generation through ``provider`` (``provider_request()`` unless given), closing it after."""
    try:
        return await provider.generate(req or provider_request())
    finally:
        await provider.aclose()


async def failure(provider: Provider, req: GenerateRequest | None = None) -> BaseException:
    """The exception one generation through ``provider`` raises (the test fails if it raises none)."""
    with pytest.raises(Exception) as caught:
        await call(provider, req)
    return caught.value


def adder_run_config(task_root: TaskRoot, **overrides: Any) -> RunConfig:
    """A RunConfig of the task root's ``adder`` task with the mock model into ``results/r1``; ``overrides``
    replace any field."""
    values: dict[str, Any] = {
        "task": str(task_root.root / "tasks" / "adder.toml"),
        "model": "mock/m",
        "output_dir": task_root.root / "results",
        "run_id": "r1",
    }
    values.update(overrides)
    return RunConfig(**values)


def run_to_end(config: RunConfig) -> RunResult:
    """Plan and run ``config`` in this process, to its end."""
    return asyncio.run(Runner(plan_run(config)).run())


@pytest.fixture
def server() -> Iterator[Any]:
    """A fake LLM server (tests/fake_llm_server.py) on 127.0.0.1 for one test, with no key set; a module that
    needs another (a key, canned answers) defines its own ``server``."""
    from fake_llm_server import FakeLLMServer

    with FakeLLMServer() as running:
        yield running
