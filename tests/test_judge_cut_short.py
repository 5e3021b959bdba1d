"""A judge cut short by a scoring timeout keeps the spend of its calls that had answered.

The fake server answers the judge's first call with text that is not a verdict, then hangs on the repair
request; ``--timeout 0.5`` cuts scoring during that repair. The first call was paid for: its usage and cost
must reach the record, for a judge at the top level and for one inside a composite.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import CliResult, TaskRoot, read_records
from fake_llm_server import FakeLLMServer, answer, hang

Cli = Callable[..., CliResult]
PRE = 'template = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
ARGS = 'args = { rubric = "rubric.jinja2", criteria = ["faithfulness", "coverage"] }\n'
TOP = (
    'name = "top"\n' + PRE + '[[scorers]]\nname = "exact_match"\n'
    '[[scorers]]\nname = "rubric_judge"\nalias = "judge"\n' + ARGS
)
INSIDE = (
    'name = "inside"\n' + PRE + '[[scorers]]\nname = "composite"\nalias = "quality"\n'
    '[[scorers.args.scorers]]\nname = "exact_match"\nalias = "exact"\n'
    '[[scorers.args.scorers]]\nname = "rubric_judge"\nalias = "judge"\n' + ARGS
)


@pytest.mark.parametrize(
    ("name", "body", "running"),
    [("top", TOP, "judge (rubric_judge)"), ("inside", INSIDE, "judge (rubric_judge) inside quality (composite)")],
)
def test_a_judge_cut_during_its_repair_keeps_the_first_calls_spend(
    cli: Cli, task_root: TaskRoot, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, name: str, body: str,
    running: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(task_root.root)
    task_root.template("rubric.jinja2", "Answer: {{ output }}\n")
    task_root.task(name, body)
    server.script(answer("not json at all"), hang())
    result = cli(
        "run", "--task", f"tasks/{name}.toml", "--model", "mock/m", "--model-arg", "skill=1", "--limit", "1", "-q",
        "--output-dir", "results", "--run-id", "r", "--timeout", "0.5",
        "--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}",
        "--judge-arg", "read_timeout_s=30", "--judge-arg", "price_in=1", "--judge-arg", "price_out=4",
    )  # fmt: skip
    assert result.code == 0, result.err
    (record,) = read_records(task_root.root / "results" / "r")
    assert record["error"]["message"] == f"timed out after 0.5 s while scoring ({running})"
    assert len(server.generation_requests()) == 2  # the first call and the repair that hung
    usage = record["judge_usage"]
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    # the first call's price at $1 / $4 per million tokens in / out
    expected = (usage["prompt_tokens"] * 1 + usage["completion_tokens"] * 4) / 1e6
    assert record["judge_cost_usd"] == pytest.approx(expected)
