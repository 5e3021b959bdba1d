"""A scoring timeout that cuts a composite's part short keeps what the composite's finished parts produced: their
values and the composite's explanation and metadata under the keys a finished composite records them, their
judges' spend, and the part cut short named in the error (nested composites too, and in a rescore)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import CliResult, TaskRoot, read_records, run_to_end
from fake_llm_server import FakeLLMServer, answer

from eval_harness.config import RunConfig
from eval_harness.rescore import plan_rescore
from eval_harness.runner import Runner
from eval_harness.scorers.base import (
    Scorer,
    ScoringPipeline,
    ScoringResult,
    build_scorer,
    keep_when_cut_short,
    register_scorer,
)
from eval_harness.types import Completion, Sample, Score, ScorerSpec, Usage

Cli = Callable[..., CliResult]


class Sleeps(Scorer):
    """A grader endpoint that never answers within the tests' --timeout."""

    expensive = True  # so it runs after the cheap parts, and after a judge listed before it

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        await asyncio.sleep(30)
        return Score(value=1.0)


@register_scorer("composite_timeout_sleeps")
def sleeps() -> Scorer:
    """A scorer that outlives any --timeout of these tests."""
    return Sleeps()


class LeavesBadParts(Scorer):
    """Leaves, when cut short, a breakdown part no reader would accept (1.5) and spend of its own."""

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError as cancelled:
            keep_when_cut_short(
                cancelled,
                explanation="half done",
                metadata={"breakdown": {"part": 1.5}},
                usage=Usage(prompt_tokens=3, completion_tokens=1),
                cost_usd=0.5,
                running="its own step",
            )
            raise
        return Score(value=1.0)


@register_scorer("composite_timeout_leaves_bad_parts")
def leaves_bad_parts() -> Scorer:
    """A scorer whose unfinished work breaks the contract."""
    return LeavesBadParts()


class GivesUpOnASlowComposite(Scorer):
    """Gives a slow composite of its own 10 ms (its own timeout cuts the composite short), then half marks."""

    def __init__(self) -> None:
        parts = [{"name": "exact_match", "alias": "exact"}, {"name": "composite_timeout_sleeps"}]
        self.composite = build_scorer(ScorerSpec(name="composite", args={"scorers": parts}))

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        try:
            return await asyncio.wait_for(self.composite.score(output, sample, completion), 0.01)
        except TimeoutError:
            return Score(value=0.5, explanation="gave up on the composite")


@register_scorer("composite_timeout_gives_up")
def gives_up() -> Scorer:
    """A scorer that cuts a composite short itself and goes on."""
    return GivesUpOnASlowComposite()


PREAMBLE = 'template = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
CUT_IN_QUALITY = (
    'name = "cut"\n' + PREAMBLE + '[[scorers]]\nname = "composite"\nalias = "quality"\n'
    '[[scorers.args.scorers]]\nname = "exact_match"\nalias = "exact"\nargs = { mode = "numeric" }\n'
    '[[scorers.args.scorers]]\nname = "composite_timeout_sleeps"\n'
)
NESTED = (
    'name = "nested"\n' + PREAMBLE + '[[scorers]]\nname = "composite"\nalias = "outer"\n'
    '[[scorers.args.scorers]]\nname = "exact_match"\nalias = "a"\nargs = { mode = "numeric" }\n'
    '[[scorers.args.scorers]]\nname = "composite"\nalias = "inner"\n'
    '[[scorers.args.scorers.args.scorers]]\nname = "exact_match"\nalias = "b"\nargs = { mode = "lenient" }\n'
    '[[scorers.args.scorers.args.scorers]]\nname = "composite_timeout_sleeps"\nalias = "slow"\n'
)
JUDGE = (
    '[[scorers.args.scorers]]\nname = "rubric_judge"\nalias = "judge"\n'
    'args = { rubric = "rubric.jinja2", criteria = ["faithfulness", "coverage"] }\n'
)
JUDGE_THEN_SLEEPS = (
    'name = "judged"\n' + PREAMBLE + '[[scorers]]\nname = "composite"\nalias = "quality"\n' + JUDGE
    + '[[scorers.args.scorers]]\nname = "composite_timeout_sleeps"\n'
)  # fmt: skip
JUDGE_ALONE = 'name = "whole"\n' + PREAMBLE + '[[scorers]]\nname = "composite"\nalias = "quality"\n' + JUDGE
VERDICT = json.dumps({"faithfulness": {"reason": "all there", "score": 5}, "coverage": {"reason": "half", "score": 3}})


@pytest.fixture
def project(task_root: TaskRoot, monkeypatch: pytest.MonkeyPatch) -> TaskRoot:
    """The adder task root as the working directory."""
    monkeypatch.chdir(task_root.root)
    return task_root


def first_record(cli: Cli, project: TaskRoot, name: str, body: str, *args: str, run_id: str = "r1") -> dict[str, Any]:
    """Run task ``body`` on sample q0000 (the mock answers it right) and return its record."""
    project.task(name, body)
    result = cli("run", "--task", f"tasks/{name}.toml", "--model", "mock/m", "--model-arg", "skill=1", "--limit", "1",
                 "-q", "--output-dir", "results", "--run-id", run_id, *args)  # fmt: skip
    assert result.code == 0, result.err
    (record,) = read_records(project.root / "results" / run_id)
    return record


def test_a_timeout_inside_a_composite_names_the_part_cut_short(cli: Cli, project: TaskRoot) -> None:
    record = first_record(cli, project, "cut", CUT_IN_QUALITY, "--timeout", "0.2")
    # it named the composite alone: "... while scoring (quality (composite))"
    assert record["error"] == {
        "type": "TimeoutError",
        "message": "timed out after 0.2 s while scoring (composite_timeout_sleeps inside quality (composite))",
        "stage": "score",
    }
    assert record["output"] == "1" and record["score"] is None


def test_a_timeout_inside_a_composite_keeps_its_finished_parts_as_a_finished_composite_records_them(
    cli: Cli, project: TaskRoot
) -> None:
    record = first_record(cli, project, "cut", CUT_IN_QUALITY, "--timeout", "0.2")
    # the composite's breakdown under "quality.<part>", its explanation (the parts' values) and its metadata;
    # no "quality" value, which needs every part. Before: scores, explanations and metadata were all empty.
    assert record["scores"] == {"quality.exact": 1.0}
    assert record["explanations"] == {"quality": "exact 1.000"}
    assert record["score_metadata"] == {"quality": {"breakdown": {"exact": 1.0}, "parts": {}, "skipped": []}}


def test_a_timeout_inside_nested_composites_keeps_each_levels_finished_parts_and_names_the_path(
    cli: Cli, project: TaskRoot
) -> None:
    record = first_record(cli, project, "nested", NESTED, "--timeout", "0.2")
    path = "slow (composite_timeout_sleeps) inside inner (composite) inside outer (composite)"
    assert record["error"]["message"] == f"timed out after 0.2 s while scoring ({path})"
    assert record["scores"] == {"outer.a": 1.0, "outer.inner.b": 1.0}
    assert record["explanations"] == {"outer": "a 1.000, inner.b 1.000"}
    inner = {"breakdown": {"b": 1.0}, "parts": {}, "skipped": []}
    assert record["score_metadata"] == {
        "outer": {"breakdown": {"a": 1.0, "inner.b": 1.0}, "parts": {"inner": inner}, "skipped": []}
    }


def test_a_timeout_inside_a_composite_keeps_the_spend_of_its_finished_judge(cli: Cli, project: TaskRoot) -> None:
    project.template("rubric.jinja2", "Answer: {{ output }}\nReference: {{ references | join(' | ') }}\n")
    with FakeLLMServer() as server:
        server.rule = lambda request: answer(VERDICT)
        judge = ("--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}",
                 "--judge-arg", "price_in=1", "--judge-arg", "price_out=4")  # fmt: skip
        finished = first_record(cli, project, "whole", JUDGE_ALONE, *judge, run_id="whole")
        # the same judge call (same prompt, same reply), then a part that outlives the timeout
        cut = first_record(cli, project, "judged", JUDGE_THEN_SLEEPS, *judge, "--timeout", "1", run_id="cut")
        calls = len(server.generation_requests())
    assert cut["error"]["message"] == (
        "timed out after 1 s while scoring (composite_timeout_sleeps inside quality (composite))"
    )
    # (5-1)/4 = 1.0 and (3-1)/4 = 0.5, mean 0.75 (by hand); a finished composite records the same parts
    assert cut["scores"] == {"quality.judge": 0.75, "quality.judge.faithfulness": 1.0, "quality.judge.coverage": 0.5}
    assert cut["scores"] == {key: value for key, value in finished["scores"].items() if key != "quality"}
    assert cut["score_metadata"]["quality"]["parts"] == finished["score_metadata"]["quality"]["parts"]
    # the judge call was paid: its tokens and cost, as the finished composite records them (before: null)
    usage = cut["judge_usage"]
    assert usage == finished["judge_usage"] and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    # USD per million tokens: 1 in, 4 out
    expected_cost = (usage["prompt_tokens"] * 1 + usage["completion_tokens"] * 4) / 1_000_000
    assert cut["judge_cost_usd"] == pytest.approx(expected_cost) == finished["judge_cost_usd"]
    assert calls == 2  # one judge call per run: the mock model calls nothing


def test_a_rescore_cut_short_inside_a_composite_keeps_its_finished_parts(project: TaskRoot) -> None:
    source = RunConfig(task="tasks/adder.toml", model="mock/m", model_args={"skill": "1"}, limit=1,
                       output_dir=project.root / "results", run_id="source")  # fmt: skip
    assert run_to_end(source).status == "complete"
    project.task("cut", CUT_IN_QUALITY)
    plan = plan_rescore(project.root / "results" / "source", task="tasks/cut.toml", run_id="rs", timeout_s=0.2)
    assert asyncio.run(Runner(plan).run()).status == "complete"
    (record,) = read_records(project.root / "results" / "rs")
    assert record["error"]["message"] == (
        "timed out after 0.2 s while scoring (composite_timeout_sleeps inside quality (composite))"
    )
    assert record["scores"] == {"quality.exact": 1.0} and record["output"] == "1"


async def test_what_a_scorer_cut_short_leaves_that_a_reader_would_refuse_is_dropped_but_its_spend_kept() -> None:
    pipeline = ScoringPipeline([ScorerSpec(name="exact_match"), ScorerSpec(name="composite_timeout_leaves_bad_parts")])
    partial = ScoringResult()
    scoring = asyncio.ensure_future(pipeline.score("x", Sample(id="s", input="q", target="x"), into=partial))
    while partial.running != "composite_timeout_leaves_bad_parts":  # exact_match has finished
        await asyncio.sleep(0)
    scoring.cancel()
    with pytest.raises(asyncio.CancelledError):
        await scoring
    # a breakdown part of 1.5 would make samples.jsonl unreadable: it is left out with its explanation and
    # metadata; the spend, paid already, is kept, and what was running is named
    assert partial.scores == {"exact_match": 1.0}
    assert "composite_timeout_leaves_bad_parts" not in partial.explanations | partial.metadata
    assert (partial.judge_usage, partial.judge_cost_usd) == (Usage(prompt_tokens=3, completion_tokens=1), 0.5)
    assert partial.running == "its own step inside composite_timeout_leaves_bad_parts"


async def test_a_composite_cut_short_keeps_its_own_parts_not_those_another_scorers_composite_left() -> None:
    parts = [{"name": "exact_match", "alias": "e"}, {"name": "composite_timeout_sleeps"}]
    pipeline = ScoringPipeline(
        [
            ScorerSpec(name="composite_timeout_gives_up"),
            ScorerSpec(name="composite", alias="quality", args={"scorers": parts}),
        ]
    )
    partial = ScoringResult()
    scoring = asyncio.ensure_future(pipeline.score("x", Sample(id="s", input="q", target="x"), into=partial))
    while partial.running != "quality (composite)":  # the first scorer has finished
        await asyncio.sleep(0.005)
    scoring.cancel()
    with pytest.raises(asyncio.CancelledError):
        await scoring
    # the first scorer's own composite left its part "exact" when its own timeout cut it short: not quality's
    assert partial.scores == {"composite_timeout_gives_up": 0.5, "quality.e": 1.0}
    assert partial.metadata == {"quality": {"breakdown": {"e": 1.0}, "parts": {}, "skipped": []}}
