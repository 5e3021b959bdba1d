"""``inspect``: the worst samples and the errors of a run, read from its artifacts only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult, TaskRoot, read_records

from eval_harness.errors import ConfigError
from eval_harness.inspect import inspect_run, shorten

Cli = Callable[..., CliResult]


def make_run(cli: Cli, root: TaskRoot, *args: str) -> Path:
    out = root.root / "results"
    result = cli("run", "--task", root.root / "tasks" / "adder.toml", "--output-dir", out, "--run-id", "r", "--quiet",
                 "--model", "mock/m", *args)  # fmt: skip
    assert result.code == 0, result.err
    return out / "r"


def test_worst_samples_are_lowest_score_then_id(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "skill=0.5")
    records = read_records(run)
    expected = sorted((r["score"], r["sample_id"]) for r in records if r["error"] is None)[:5]
    inspection = inspect_run(run, n=5)
    assert inspection.worst is not None
    assert [(s.score, s.sample_id) for s in inspection.worst] == expected
    first = inspection.worst[0]
    record = next(r for r in records if r["sample_id"] == first.sample_id)
    assert (first.input, first.target, first.output) == (record["input"], record["target"], record["output"])
    assert first.scores == record["scores"] and first.explanations == record["explanations"]
    assert first.latency_ms == record["latency_ms"] and first.cost_usd == record["cost_usd"]


def test_failures_only_and_axis_filter(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "skill=0.9")
    failed = sorted(r["sample_id"] for r in read_records(run) if r["axis"] == "beta" and not r["passed"])
    inspection = inspect_run(run, n=40, axis="beta", failures_only=True)
    assert inspection.worst is not None
    assert [s.sample_id for s in inspection.worst] == failed
    assert inspection.candidates == len(failed)


def test_errors_grouped_by_type_with_one_example(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "error_rate=0.3", "--max-retries", "0")
    errored = [r for r in read_records(run) if r["error"] is not None]
    inspection = inspect_run(run, show_worst=False)
    assert inspection.worst is None and inspection.errors is not None
    (group,) = inspection.errors
    assert (group.type, group.count, group.stage) == ("ProviderError", len(errored), "generate")
    assert group.example_sample_id == errored[0]["sample_id"]
    assert "simulated provider error" in group.example_message


def test_rank_by_one_scorer(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "skill=0.5")
    inspection = inspect_run(run, n=3, scorer="exact_match")
    assert inspection.ranked_by == "exact_match"
    assert inspection.worst is not None and all(s.value == s.scores["exact_match"] for s in inspection.worst)
    with pytest.raises(ConfigError, match=r"no scorer 'bleu' \(its scorers: exact_match\)"):
        inspect_run(run, scorer="bleu")
    with pytest.raises(ConfigError, match=r"no axis 'gamma' \(its axes: alpha, beta\)"):
        inspect_run(run, axis="gamma")


def test_reads_only_the_artifacts(cli: Cli, task_root: TaskRoot) -> None:
    run = make_run(cli, task_root, "--model-arg", "skill=0.5")
    (task_root.root / "data" / "adder.jsonl").unlink()
    (task_root.root / "tasks" / "adder.toml").unlink()
    inspection = inspect_run(run, n=2)
    assert inspection.worst is not None and len(inspection.worst) == 2


def test_long_inputs_are_shortened_in_the_middle() -> None:
    text = "a" * 200 + "MIDDLE" + "z" * 200
    short = shorten(text, limit=101)
    assert short.startswith("a" * 49) and short.endswith("z" * 49) and " … " in short and "MIDDLE" not in short
    assert shorten("short") == "short"


def test_control_characters_from_the_data_are_shown_not_sent_to_the_terminal(cli: Cli, task_root: TaskRoot) -> None:
    # a dataset (or a model) is untrusted: ESC[2J would clear the screen, an OSC sequence retitle the window
    task_root.data(
        "adder.jsonl", [{"id": "evil\x1b[2J\x1b]0;pwned\x07", "input": "What is 1 + 1?\x1b[31m", "target": "2"}]
    )
    run = make_run(cli, task_root)
    shown = cli("inspect", "--run", run, "--n", "1")
    assert shown.code == 0, shown.err
    assert "\x1b" not in shown.out and "\x07" not in shown.out
    assert "evil\\x1b[2J\\x1b]0;pwned\\x07" in shown.out and "What is 1 + 1?\\x1b[31m" in shown.out
