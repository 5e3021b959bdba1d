"""``report`` counts the answers cut at the output-token limit, whatever each provider calls it.

The providers write the finish reason as the API reports it: OpenAI's Chat Completions (and every
OpenAI-compatible server) say ``length``, the Responses API's ``max_output_tokens`` is written as ``length``,
and Anthropic says ``max_tokens``. Each case is a real run against a local fake server whose answers to all
but the first sample (q0000, axis alpha) stop at the limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, TaskRoot
from fake_llm_server import FakeLLMServer, RecordedRequest, Reply, answer

from eval_harness.report import build_report
from tests.test_report_tags import run_of, scored

Cli = Callable[..., CliResult]


def cut_but_the_first(reason: str) -> Callable[[RecordedRequest], Reply | None]:
    def rule(request: RecordedRequest) -> Reply | None:
        return None if "What is 0 + 1?" in request.prompt else answer("Let me add these", finish_reason=reason)

    return rule


def run_served(
    cli: Cli, task_root: TaskRoot, model: str, rule: Callable[[RecordedRequest], Reply | None], *args: str
) -> CliResult:
    """The adder task's first 4 samples (axes alpha, beta, alpha, beta) against a fake server of ``model``'s
    wire answering by ``rule``, as run id r."""
    with FakeLLMServer() as server:
        server.rule = rule
        result = cli(
            "run", "--task", task_root.root / "tasks" / "adder.toml", "--model", model, "--model-arg",
            f"base_url={server.base_url}", "--output-dir", task_root.root / "results", "--run-id", "r",
            "--limit", "4", *args,
        )  # fmt: skip
    assert result.code == 0, result.err
    return result


def served_run(cli: Cli, task_root: TaskRoot, model: str, reason: str, *args: str) -> Path:
    """``run_served``, quiet, all but the first answer stopping with ``reason``."""
    run_served(cli, task_root, model, cut_but_the_first(reason), "-q", *args)
    return task_root.root / "results" / "r"


def report_json(cli: Cli, run: Path) -> dict[str, Any]:
    result = cli("report", "--run", run, "--format", "json")
    assert result.code == 0, result.err
    parsed: dict[str, Any] = json.loads(result.out)
    return parsed


PROVIDERS = {
    "openai-compatible": ("openai-compatible/local", "length", "length", []),
    "openai chat": ("openai/gpt-4o-mini", "length", "length", []),
    "openai responses": ("openai/gpt-4o-mini", "max_output_tokens", "length", ["--model-arg", "api=responses"]),
    "anthropic": ("anthropic/claude-sonnet-4-5", "max_tokens", "max_tokens", []),
    "anthropic context window": (
        "anthropic/claude-sonnet-4-5",
        "model_context_window_exceeded",
        "model_context_window_exceeded",
        [],
    ),
}
"""The model, what the server says, what the record holds, and extra arguments."""


@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_report_counts_the_answers_cut_at_max_tokens_per_axis_and_in_totals(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    model, said, written, extra = PROVIDERS[provider]
    # 16: the Responses API takes no fewer
    report = report_json(cli, served_run(cli, task_root, model, said, "--max-tokens", "16", *extra))
    assert {axis["axis"]: axis["length_stops"] for axis in report["axes"]} == {"alpha": 1, "beta": 2}
    assert report["overall"]["length_stops"] == report["totals"]["length_stops"] == 3
    assert report["totals"]["finish_reasons"][written] == 3
    assert sum(report["totals"]["finish_reasons"].values()) == 4  # and the first answer's normal stop


def test_the_table_and_markdown_say_how_many_answers_stopped_at_max_tokens(cli: Cli, task_root: TaskRoot) -> None:
    run = served_run(cli, task_root, "openai-compatible/local", "length", "--max-tokens", "8")
    note = (
        "3 of 4 answers stopped at max_tokens 8 (finish_reason length): raise --max-tokens if they were cut short, "
        f"or see them with eval-harness inspect --run {run} --show-failures"
    )
    table = cli("report", "--run", run)
    markdown = cli("report", "--run", run, "--format", "markdown")
    assert table.code == markdown.code == 0
    assert table.out.splitlines().count(f"note: {note}") == 1
    assert markdown.out.splitlines().count(f"- {note}") == 1
    assert report_json(cli, run)["notes"].count(note) == 1


def test_the_note_of_a_run_without_max_tokens_names_the_providers_limit(cli: Cli, task_root: TaskRoot) -> None:
    run = served_run(cli, task_root, "openai-compatible/local", "length")
    notes = [line for line in cli("report", "--run", run).out.splitlines() if "stopped at" in line]
    assert notes == [
        "note: 3 of 4 answers stopped at max_tokens (finish_reason length) (the task sets none: the provider's "
        "default or the server's own limit): raise --max-tokens if they were cut short, or see them with "
        f"eval-harness inspect --run {run} --show-failures"
    ]


def test_a_run_whose_answers_all_stopped_normally_has_no_such_note(cli: Cli, task_root: TaskRoot) -> None:
    run = served_run(cli, task_root, "openai-compatible/local", "stop", "--max-tokens", "8")
    table = cli("report", "--run", run)
    assert table.code == 0 and "stopped at" not in table.out and "max_tokens" not in table.out
    report = report_json(cli, run)
    assert report["totals"]["length_stops"] == 0 and report["totals"]["finish_reasons"] == {"stop": 4}
    assert all(axis["length_stops"] == 0 for axis in report["axes"])


def test_error_records_count_as_no_answer_in_the_note(tmp_path: Path) -> None:
    records = [
        scored("a", [], 1.0).model_copy(update={"finish_reason": "length"}),
        scored("b", [], 1.0).model_copy(update={"finish_reason": "stop"}),
        scored("c", [], None),  # a failed call: no answer, no finish reason
    ]
    report = build_report(run_of(tmp_path / "run", records))
    assert report.totals.length_stops == 1 and report.totals.finish_reasons == {"length": 1, "stop": 1}
    assert next(note for note in report.notes if "stopped at" in note).startswith("1 of 2 answers stopped at")


def test_each_tag_row_counts_its_answers_cut_at_max_tokens(tmp_path: Path) -> None:
    records = [
        scored("a", ["x", "y"], 0.0).model_copy(update={"finish_reason": "max_tokens"}),
        scored("b", ["x"], 0.0).model_copy(update={"finish_reason": "length"}),
        scored("c", ["y"], 1.0).model_copy(update={"finish_reason": "stop"}),
    ]
    report = build_report(run_of(tmp_path / "run", records))
    assert {row.axis: row.length_stops for row in report.by_tag} == {"x": 2, "y": 1}
    assert report.totals.length_stops == 2


def test_an_answer_that_filled_the_context_window_is_counted_and_told_its_own_remedy(
    cli: Cli, task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Raising --max-tokens cannot help an answer that filled the context window: the run, the report and inspect
    name the context window, not max_tokens (they used to say 'stopped at max_tokens ... raise --max-tokens')."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with FakeLLMServer() as server:
        server.rule = cut_but_the_first("model_context_window_exceeded")
        run = cli(
            "run", "--task", task_root.root / "tasks" / "adder.toml", "--model", "anthropic/claude-sonnet-4-5",
            "--model-arg", f"base_url={server.base_url}", "--output-dir", task_root.root / "results", "--run-id", "r",
            "--limit", "4", "--max-tokens", "8",
        )  # fmt: skip
    assert run.code == 0, run.err
    run_dir = task_root.root / "results" / "r"
    advice = (
        "the prompt and the answer fill it, so raising --max-tokens cannot help: a shorter prompt (fewer few-shot "
        "examples, a shorter system prompt) or a model with a longer context can"
    )
    warnings = [line for line in run.err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: 3 of 4 answers stopped at the model's context window (finish_reason "
        f"model_context_window_exceeded): {advice}"
    ]
    notes = [line for line in cli("report", "--run", run_dir).out.splitlines() if "stopped at" in line]
    assert notes == [
        "note: 3 of 4 answers stopped at the model's context window (finish_reason model_context_window_exceeded): "
        f"{advice}; see them with eval-harness inspect --run {run_dir} --show-failures"
    ]
    shown = cli("inspect", "--run", run_dir, "--show-failures").out
    assert "finish: model_context_window_exceeded (cut off at the model's context window: the prompt and" in shown
    assert "max_tokens 8" not in shown


def test_a_run_cut_at_both_limits_gets_a_note_for_each(tmp_path: Path) -> None:
    records = [
        scored("a", [], 0.0).model_copy(update={"finish_reason": "max_tokens"}),
        scored("b", [], 0.0).model_copy(update={"finish_reason": "model_context_window_exceeded"}),
        scored("c", [], 1.0).model_copy(update={"finish_reason": "end_turn"}),
    ]
    report = build_report(run_of(tmp_path / "run", records))
    notes = [note for note in report.notes if "stopped at" in note]
    assert report.totals.length_stops == 2 and len(notes) == 2
    assert notes[0].startswith("1 of 3 answers stopped at max_tokens (finish_reason max_tokens)")
    assert notes[1].startswith("1 of 3 answers stopped at the model's context window")


def test_answers_stopped_by_the_servers_context_before_max_tokens_are_told_apart(cli: Cli, task_root: TaskRoot) -> None:
    # llama-s30 F1: llama-server says "length" when the prompt and the answer fill its context window; the run,
    # the report and inspect all said "cut off at max_tokens 600" and advised raising it, which cannot help
    def rule(request: RecordedRequest) -> Reply | None:
        if "What is 0 + 1?" in request.prompt:
            return answer("Let me add", finish_reason="length")  # reached max_tokens: counted as the limit sent
        return answer("Let me add these", finish_reason="length", completion_tokens=264)

    ran = run_served(cli, task_root, "openai-compatible/local", rule, "--max-tokens", "600")
    warning = " ".join(line for line in ran.err.splitlines() if line.startswith("warning:") or "of them" in line)
    assert "4 of 4 answers stopped at the length limit (finish_reason length, max_tokens 600)" in " ".join(
        ran.err.split()
    )
    assert "3 of them stopped with fewer completion tokens than max_tokens: the server's own limit" in " ".join(
        ran.err.split()
    ), warning
    run = task_root.root / "results" / "r"
    report = report_json(cli, run)
    assert (report["totals"]["length_stops"], report["totals"]["length_stops_short"]) == (4, 3)
    assert any(n.startswith("1 of 4 answers stopped at max_tokens 600 (finish_reason length)") for n in report["notes"])
    assert any(
        n.startswith("3 of 4 answers stopped at a length limit (finish_reason length) with fewer completion tokens "
                     "than max_tokens 600: the server's own limit, not max_tokens")
        for n in report["notes"]
    )  # fmt: skip
    shown = " ".join(cli("inspect", "--run", run, "--n", "4").out.split())
    assert "length (cut off by the server after 264 tokens, before max_tokens 600: its context window" in shown
    assert "length (cut off at max_tokens 600)" in shown


def test_a_session_whose_every_length_stop_fell_short_of_max_tokens_is_not_told_to_raise_it(
    cli: Cli, task_root: TaskRoot
) -> None:
    def rule(_request: RecordedRequest) -> Reply:
        return answer("Let me add these", finish_reason="length", completion_tokens=264)

    ran = run_served(cli, task_root, "openai-compatible/local", rule, "--max-tokens", "600", "-q")
    said = " ".join(ran.err.split())
    assert said.startswith(
        "warning: 4 of 4 answers stopped at the length limit (finish_reason length) with fewer completion tokens "
        "than max_tokens 600: the server's own limit, not max_tokens"
    ), said
    assert "raise --max-tokens" not in said and "shorten the prompts or give the server more context" in said
