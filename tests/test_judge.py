"""The rubric and pairwise judges against a scripted judge model returning valid, malformed and
contradictory verdicts. The judge only sees the ``CompletionClient`` protocol, so a scripted client
exercises the real parsing, repair, self-consistency and spend accounting."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import CliResult, TaskRoot
from fake_llm_server import FakeLLMServer, Reply, answer, unauthorized

from eval_harness.errors import AuthenticationError, ConfigError, ProviderHTTPError, QuotaExhaustedError
from eval_harness.providers.base import ProviderContext, create_provider
from eval_harness.providers.gateway import Gateway, RetryPolicy
from eval_harness.scorers import ScoringPipeline, build_scorer
from eval_harness.scorers.base import SkipScore, SpentScoringError
from eval_harness.scorers.judge import VerdictError, parse_pairwise_verdict, parse_rubric_verdict
from eval_harness.types import ChatMessage, Completion, GenerateRequest, Sample, ScorerSpec, Usage

SAMPLE = Sample(id="s1", input="The council spent 40 pounds.", target="Council spent 40 pounds.")
CRITERIA = {"faithfulness": "supported by the article", "coverage": "states the main point"}


class ScriptedJudge:
    """A ``CompletionClient`` that answers from a script and keeps every request."""

    def __init__(self, replies: Sequence[str | Exception], cost: float | None = 0.001) -> None:
        self.replies = list(replies)
        self.requests: list[GenerateRequest] = []
        self.cost = cost

    async def complete(self, request: GenerateRequest) -> Completion:
        self.requests.append(request)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return Completion(
            text=reply, usage=Usage(prompt_tokens=100, completion_tokens=20), cost_usd=self.cost, model="judge-1"
        )


def verdict(**scores: int) -> str:
    return json.dumps({name: {"reason": f"{name} is {value}", "score": value} for name, value in scores.items()})


@pytest.fixture
def where(tmp_path: Path) -> str:
    """A task spec path whose templates/ holds a small rubric."""
    (tmp_path / "templates").mkdir()
    (tmp_path / "tasks").mkdir()
    (tmp_path / "templates" / "rubric.jinja2").write_text(
        "Article: {{ input }}\nAnswer: {{ output }}\nReferences: {{ references | join(' | ') }}\n"
        "{% for c in criteria %}- {{ c.name }}: {{ c.description }} ({{ scale_min }}-{{ scale_max }})\n{% endfor %}"
    )
    spec = tmp_path / "tasks" / "t.toml"
    spec.write_text('name = "t"\ntemplate = "x.jinja2"\n[[scorers]]\nname = "exact_match"\n')
    return str(spec)


def rubric(**args: object) -> ScorerSpec:
    return ScorerSpec(
        name="rubric_judge", alias="judge", args={"rubric": "rubric.jinja2", "criteria": CRITERIA, **args}
    )


async def test_a_valid_verdict_is_normalised_to_the_unit_interval(where: str) -> None:
    judge = ScriptedJudge([verdict(faithfulness=5, coverage=3)])
    score = await build_scorer(rubric(), judge, where).score("Council spent 40.", SAMPLE)
    # (5-1)/4 = 1.0 and (3-1)/4 = 0.5 → mean 0.75 (by hand)
    assert score.value == 0.75
    assert score.metadata["breakdown"] == {"faithfulness": 1.0, "coverage": 0.5}
    assert score.explanation == "judge 0.750: faithfulness 5/5: faithfulness is 5; coverage 3/5: coverage is 3"
    assert score.usage == Usage(prompt_tokens=100, completion_tokens=20) and score.cost_usd == 0.001


async def test_the_rubric_is_rendered_with_the_output_and_the_reply_format_appended(where: str) -> None:
    judge = ScriptedJudge([verdict(faithfulness=5, coverage=5)])
    await build_scorer(rubric(), judge, where).score("Council spent 40.", SAMPLE)
    system, user = judge.requests[0].messages
    assert system.role == "system" and "strict, fair evaluator" in system.content
    assert user.content.startswith(
        "Article: The council spent 40 pounds.\nAnswer: Council spent 40.\nReferences: Council spent 40 pounds.\n"
        "- faithfulness: supported by the article (1-5)\n- coverage: states the main point (1-5)"
    )
    assert user.content.endswith("Each score is a number from 1 (worst) to 5 (best).")
    assert judge.requests[0].config.temperature == 0.0


async def test_criterion_weights_shape_the_mean(where: str) -> None:
    judge = ScriptedJudge([verdict(faithfulness=5, coverage=1)])
    spec = rubric(weights={"faithfulness": 3, "coverage": 1})
    assert (await build_scorer(spec, judge, where).score("x", SAMPLE)).value == 0.75  # (3 x 1 + 1 x 0) / 4


async def test_a_fenced_json_verdict_is_accepted(where: str) -> None:
    judge = ScriptedJudge(["```json\n" + verdict(faithfulness=1, coverage=1) + "\n```"])
    assert (await build_scorer(rubric(), judge, where).score("x", SAMPLE)).value == 0.0


async def test_a_malformed_verdict_gets_one_repair_request_showing_the_problem(where: str) -> None:
    judge = ScriptedJudge(["Sure! The summary is great.", verdict(faithfulness=4, coverage=4)])
    score = await build_scorer(rubric(), judge, where).score("x", SAMPLE)
    assert score.value == 0.75
    assert (score.metadata["calls"], score.metadata["repairs"]) == (2, 1)
    repair = judge.requests[1].messages
    assert repair[-2].role == "assistant" and repair[-2].content == "Sure! The summary is great."
    assert repair[-1].content.startswith("Your previous reply could not be used: not a single JSON object")
    assert score.usage == Usage(prompt_tokens=200, completion_tokens=40) and score.cost_usd == pytest.approx(0.002)


async def test_a_verdict_still_malformed_after_the_repair_is_an_error_that_keeps_its_spend(where: str) -> None:
    judge = ScriptedJudge(["not json", '{"faithfulness": {"score": 9}}'])
    pipeline = ScoringPipeline([ScorerSpec(name="exact_match"), rubric()], judge, where)
    result = await pipeline.score("x", SAMPLE)
    assert result.error is not None and result.final is None
    assert result.error.message == (
        "judge: judge verdict malformed after one repair: faithfulness.score 9 is outside the scale 1-5"
    )
    assert result.judge_usage == Usage(prompt_tokens=200, completion_tokens=40)
    assert result.judge_cost_usd == pytest.approx(0.002)


async def test_a_verdict_with_prose_around_it_is_read_without_a_repair(where: str) -> None:
    judge = ScriptedJudge([f"Here is my verdict:\n{verdict(faithfulness=5, coverage=3)}\nI hope this helps."])
    score = await build_scorer(rubric(), judge, where).score("x", SAMPLE)
    assert score.value == 0.75  # (5-1)/4 = 1.0 and (3-1)/4 = 0.5 → 0.75 (by hand)
    assert (score.metadata["calls"], score.metadata["repairs"]) == (1, 0)


async def test_prose_around_two_json_objects_still_gets_the_repair(where: str) -> None:
    reply = f'The format is {{"faithfulness": {{"score": 1}}}}. My verdict: {verdict(faithfulness=5, coverage=3)}'
    judge = ScriptedJudge([reply, verdict(faithfulness=5, coverage=3)])
    score = await build_scorer(rubric(), judge, where).score("x", SAMPLE)
    assert (score.metadata["calls"], score.metadata["repairs"]) == (2, 1)
    assert "it holds 2 JSON objects" in judge.requests[1].messages[-1].content


def test_a_verdict_found_in_prose_is_checked_as_strictly_as_a_bare_one() -> None:
    with pytest.raises(VerdictError, match="unknown criterion 'style'"):
        parse_rubric_verdict(f"Verdict: {verdict(faithfulness=5, coverage=3, style=2)}", list(CRITERIA), 1, 5)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        (
            '{"faithfulness": {"score": 5, "reason": "ok"}, "faithfulness": {"score": 1, "reason": "bad"}, '
            '"coverage": {"score": 3}}',
            "'faithfulness' is given twice with different values",
        ),
        (verdict(faithfulness=6, coverage=3), "faithfulness.score 6 is outside the scale 1-5"),
        ('{"faithfulness": {"score": "5"}, "coverage": {"score": 3}}', "faithfulness.score must be a number"),
        ('{"faithfulness": {"score": true}, "coverage": {"score": 3}}', "faithfulness.score must be a number"),
        (verdict(faithfulness=5), "criterion 'coverage' is missing"),
        (verdict(faithfulness=5, coverage=3, style=2), "unknown criterion 'style'"),
        ("[1, 2]", "expected a JSON object, got list"),
        ("", "the reply is empty"),
    ],
)
def test_malformed_and_contradictory_verdicts_are_refused(reply: str, problem: str) -> None:
    with pytest.raises(VerdictError, match=problem.replace("(", r"\(")):
        parse_rubric_verdict(reply, list(CRITERIA), 1, 5)


async def test_self_consistency_records_mean_and_spread_over_distinct_seeds(where: str) -> None:
    judge = ScriptedJudge([verdict(faithfulness=5, coverage=5), verdict(faithfulness=1, coverage=1),
                           verdict(faithfulness=5, coverage=3)])  # fmt: skip
    score = await build_scorer(rubric(samples=3), judge, where).score("x", SAMPLE)
    assert score.metadata["samples"] == [1.0, 0.0, 0.75]
    assert score.value == pytest.approx(1.75 / 3)
    assert score.metadata["spread"] == 1.0
    assert [r.config.seed for r in judge.requests] == [0, 1, 2]
    assert {r.config.temperature for r in judge.requests} == {0.7}
    assert "over 3 samples (spread 1.00)" in (score.explanation or "")


async def test_a_failed_judge_call_is_a_scoring_error_with_the_spend_so_far(where: str) -> None:
    judge = ScriptedJudge([verdict(faithfulness=5, coverage=5), ProviderHTTPError("HTTP 500: overloaded")])
    scorer = build_scorer(rubric(samples=2), judge, where)
    with pytest.raises(SpentScoringError, match="judge call failed: HTTP 500: overloaded") as caught:
        await scorer.score("x", SAMPLE)
    assert caught.value.usage == Usage(prompt_tokens=100, completion_tokens=20)


async def test_an_unknown_judge_price_makes_the_cost_unknown(where: str) -> None:
    judge = ScriptedJudge([verdict(faithfulness=5, coverage=5)], cost=None)
    score = await build_scorer(rubric(), judge, where).score("x", SAMPLE)
    assert score.usage is not None and score.cost_usd is None


def test_a_judge_the_run_will_skip_is_noted_at_its_start_by_its_key_and_a_composites_part_by_its_path(
    where: str,
) -> None:
    # review-s33 W1: a composite's judge part was named by its own key ("rj"), which no table shows
    part = {"name": "rubric_judge", "alias": "rj", "args": {**rubric(optional=True).args}}
    specs = [rubric(optional=True), ScorerSpec(name="composite", alias="quality", args={"scorers": [part]})]
    notes = ScoringPipeline(specs, None, where).notes()
    assert [note.split(":")[1].strip() for note in notes] == ["judge", "quality.rj"]
    assert notes[0] == (
        "note: judge: will be skipped on every sample: no --judge-model was given (pass one to score with this judge)"
    )
    assert ScoringPipeline(specs[:1], ScriptedJudge([]), where).notes() == []


async def test_an_optional_judge_without_a_judge_model_skips_with_its_reason(where: str) -> None:
    scorer = build_scorer(rubric(optional=True), None, where)
    with pytest.raises(SkipScore, match="no judge model configured"):
        await scorer.score("x", SAMPLE)


def test_a_required_judge_without_a_judge_model_is_a_config_error(where: str) -> None:
    with pytest.raises(ConfigError, match="needs a judge model; pass --judge-model, or set optional = true"):
        build_scorer(rubric(), None, where)


async def test_a_tasks_own_rubric_is_found_whatever_the_working_directory(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the rubric is only in the spec's own templates/
    judge = ScriptedJudge([verdict(faithfulness=5, coverage=3)])
    # the pipeline names each scorer by its spec line, "tasks/t.toml:4", which hid the spec's templates/
    pipeline = ScoringPipeline([rubric()], judge, where, lines=[4])
    result = await pipeline.score("Council spent 40.", SAMPLE)
    assert result.error is None and result.final == pytest.approx(0.75)


def test_a_missing_rubric_is_a_config_error_naming_where_it_looked(where: str) -> None:
    judge = ScriptedJudge([])
    spec = ScorerSpec(name="rubric_judge", args={"rubric": "nope.jinja2", "criteria": ["x"]})
    with pytest.raises(ConfigError, match=r"rubric template 'nope\.jinja2' not found \(looked in .*templates"):
        build_scorer(spec, judge, where)


async def test_the_built_in_summary_rubric_is_found_from_any_task() -> None:
    judge = ScriptedJudge([verdict(faithfulness=5)])
    spec = ScorerSpec(name="rubric_judge", args={"rubric": "judge_summary.jinja2", "criteria": ["faithfulness"]})
    await build_scorer(spec, judge).score("Council spent 40.", SAMPLE)  # no task: only the packaged templates/
    prompt = judge.requests[0].messages[-1].content
    # templates/judge_summary.jinja2, rendered for SAMPLE
    assert prompt.startswith(
        "You are grading a one-sentence summary of an article.\n\nArticle:\nThe council spent 40 pounds.\n"
    )
    assert "The summary to grade:\nCouncil spent 40.\n" in prompt


PAIRWISE = ScorerSpec(name="pairwise_judge", alias="pairwise")


def pair(winner: str) -> str:
    return json.dumps({"reason": f"{winner} is better", "winner": winner})


async def test_pairwise_asks_both_orders_and_scores_a_consistent_win_as_one() -> None:
    judge = ScriptedJudge([pair("A"), pair("B")])
    score = await build_scorer(PAIRWISE, judge).score("my answer", SAMPLE)
    first, second = (r.messages[-1].content for r in judge.requests)
    assert "Response A:\nmy answer" in first and "Response B:\nCouncil spent 40 pounds." in first
    assert "Response A:\nCouncil spent 40 pounds." in second and "Response B:\nmy answer" in second
    assert score.value == 1.0
    assert (score.metadata["flip"], score.metadata["position_bias"]) == (False, None)


async def test_pairwise_reports_a_flip_under_position_swap_as_position_bias() -> None:
    judge = ScriptedJudge([pair("A"), pair("A")])  # contradictory: whichever comes first wins
    score = await build_scorer(PAIRWISE, judge).score("my answer", SAMPLE)
    assert score.value == 0.5
    assert (score.metadata["flip"], score.metadata["position_bias"]) == (True, "first")
    assert "flips under position swap (bias toward the first position)" in (score.explanation or "")


async def test_pairwise_counts_a_tie_as_half() -> None:
    judge = ScriptedJudge([pair("tie"), pair("A")])
    score = await build_scorer(PAIRWISE, judge).score("my answer", SAMPLE)
    assert score.metadata["outcomes"] == [0.5, 0.0] and score.value == 0.25
    assert score.metadata["position_bias"] == "first"


@pytest.mark.parametrize(
    ("reply", "problem"),
    [('{"winner": "C"}', "winner must be"), ('{"winner": "A", "score": 3}', "unexpected key 'score'")],
)
def test_malformed_pairwise_verdicts_are_refused(reply: str, problem: str) -> None:
    with pytest.raises(VerdictError, match=problem):
        parse_pairwise_verdict(reply)


# Through the real path: the fake LLM server on 127.0.0.1, the openai-compatible provider and the gateway.


def _gateway_judge(server: FakeLLMServer) -> Gateway:
    provider = create_provider("openai-compatible/judge-1", {"base_url": server.base_url}, ProviderContext())
    return Gateway(provider, RetryPolicy(max_retries=0))


async def test_judge_over_http_repairs_a_malformed_verdict_and_counts_both_calls(server: FakeLLMServer) -> None:
    server.script(answer("I would give it a 4."), answer(verdict(faithfulness=4, coverage=2)))
    judge = _gateway_judge(server)
    try:
        spec = ScorerSpec(name="rubric_judge", args={"rubric": "judge_summary.jinja2", "criteria": CRITERIA})
        score = await build_scorer(spec, judge).score("Council spent 40.", SAMPLE)
    finally:
        await judge.aclose()
    assert score.value == 0.5  # (0.75 + 0.25) / 2
    assert len(server.generation_requests()) == 2 and score.metadata["repairs"] == 1
    assert score.usage is not None and score.usage.prompt_tokens > 0


async def test_judge_over_http_reports_position_bias_from_contradictory_verdicts(server: FakeLLMServer) -> None:
    server.script(answer(pair("B")), answer(pair("B")))
    judge = _gateway_judge(server)
    try:
        score = await build_scorer(PAIRWISE, judge).score("my answer", SAMPLE)
    finally:
        await judge.aclose()
    assert (score.value, score.metadata["flip"], score.metadata["position_bias"]) == (0.5, True, "second")


def test_a_run_with_a_judge_model_records_judge_scores_and_spend_apart(server: FakeLLMServer, tmp_path: Path) -> None:
    server.rule = lambda request: answer(verdict(faithfulness=5, coverage=4, concision=3))
    from eval_harness.cli.app import main

    with pytest.raises(SystemExit) as exit_code:
        main(["run", "--task", "summarization", "--model", "mock/x", "--model-arg", "skill=1", "--limit", "3",
              "--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}",
              "--output-dir", str(tmp_path), "--run-id", "j", "--quiet"])  # fmt: skip
    assert exit_code.value.code in (0, None)
    records = [json.loads(line) for line in (tmp_path / "j" / "samples.jsonl").read_text().splitlines()]
    assert len(records) == 3 and len(server.generation_requests()) == 3  # the mock model makes no HTTP call
    for record in records:
        assert record["scores"]["judge"] == 0.75 and record["scores"]["judge.concision"] == 0.5
        assert record["judge_usage"]["prompt_tokens"] > 0 and record["usage"] != record["judge_usage"]
        # the task's weights: ROUGE-L 3, faithfulness 1, judge 2
        assert record["score"] == pytest.approx((3 * 1.0 + record["scores"]["faithfulness"] + 2 * 0.75) / 6)


def test_judge_answers_served_from_the_cache_cost_nothing(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.rule = lambda request: answer(verdict(faithfulness=5, coverage=4, concision=3))
    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    from eval_harness.cli.app import main

    def judged_run(run_id: str) -> dict[str, Any]:
        with pytest.raises(SystemExit):
            main(["run", "--task", "summarization", "--model", "mock/x", "--model-arg", "skill=1", "--limit", "3",
                  "--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}",
                  "--judge-arg", "price_in=1", "--judge-arg", "price_out=4", "--cache",
                  "--output-dir", str(tmp_path), "--run-id", run_id, "--quiet"])  # fmt: skip
        summary: dict[str, Any] = json.loads((tmp_path / run_id / "summary.json").read_text())
        return summary

    first = judged_run("paid")
    calls = len(server.generation_requests())
    second = judged_run("cached")
    assert len(server.generation_requests()) == calls  # every judge answer came from the cache
    assert first["judge_cost_usd"] > 0 and second["judge_cost_usd"] == 0.0


def test_with_the_cache_each_epoch_of_a_sample_asks_the_judge_for_itself(
    server: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """fuzz-s20 2: the judge's cache key held its own call index, not the record's epoch: epoch 1 of a sample whose
    answer equals epoch 0's got epoch 0's verdict from the cache at cost 0 (or, in a later session of the run, was
    charged again as a paid answer), so judge cost depended on timing and kills."""
    server.rule = lambda request: answer(verdict(faithfulness=5, coverage=4, concision=3))
    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    from eval_harness.cli.app import main

    with pytest.raises(SystemExit):
        main(["run", "--task", "summarization", "--model", "mock/x", "--model-arg", "skill=1", "--limit", "3",
              "--epochs", "2", "--concurrency", "1",
              "--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}",
              "--judge-arg", "price_in=1", "--judge-arg", "price_out=4", "--cache",
              "--output-dir", str(tmp_path), "--run-id", "e", "--quiet"])  # fmt: skip
    records = [json.loads(line) for line in (tmp_path / "e" / "samples.jsonl").read_text().splitlines()]
    assert len(records) == 6 and len(server.generation_requests()) == 6  # one judge call per record
    by_sample: dict[str, list[float]] = {}
    for record in records:
        by_sample.setdefault(record["sample_id"], []).append(record["judge_cost_usd"])
    assert all(len(costs) == 2 and costs[0] == costs[1] > 0 for costs in by_sample.values()), by_sample


async def test_a_refused_judge_key_is_raised_so_the_run_stops(where: str) -> None:
    judge = ScriptedJudge([AuthenticationError("judge: HTTP 401 invalid key")])
    pipeline = ScoringPipeline([ScorerSpec(name="exact_match"), rubric()], judge, where)
    with pytest.raises(AuthenticationError, match="HTTP 401"):
        await pipeline.score("x", SAMPLE)


def test_a_run_whose_judge_refuses_the_key_stops_early_with_one_line(
    server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.rule = lambda request: unauthorized()
    from eval_harness.cli.app import main

    with pytest.raises(SystemExit) as exit_code:
        main(["run", "--task", "summarization", "--model", "mock/x", "--limit", "3", "--concurrency", "1",
              "--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}",
              "--output-dir", str(tmp_path), "--run-id", "j", "--quiet"])  # fmt: skip
    assert exit_code.value.code == 2
    assert "run failed: " in capsys.readouterr().err
    assert len(server.generation_requests()) == 1  # no sample after the first refusal asked the judge again


def test_the_pipeline_fingerprints_the_rubric_so_a_changed_rubric_can_be_detected(where: str) -> None:
    judge = ScriptedJudge([])
    before = ScoringPipeline([ScorerSpec(name="exact_match"), rubric()], judge, where).fingerprints()
    rubric_file = Path(where).parent.parent / "templates" / "rubric.jinja2"
    rubric_file.write_text(rubric_file.read_text() + "Be strict.\n")
    after = ScoringPipeline([ScorerSpec(name="exact_match"), rubric()], judge, where).fingerprints()
    assert set(before) == {"judge"} and before != after


def test_an_interrupted_run_with_a_judge_model_resumes_to_every_sample(server: FakeLLMServer, tmp_path: Path) -> None:
    server.rule = lambda request: answer(verdict(faithfulness=5, coverage=4, concision=3))
    from eval_harness.cli.app import main

    def cli(*args: str) -> int | str | None:
        with pytest.raises(SystemExit) as exit_code:
            main(list(args))
        return exit_code.value.code

    assert cli("run", "--task", "summarization", "--model", "mock/x", "--limit", "4", "--judge-model",
               "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}", "--judge-arg",
               "read_timeout_s=30", "--output-dir", str(tmp_path), "--run-id", "j", "--quiet") in (0, None)  # fmt: skip
    samples = tmp_path / "j" / "samples.jsonl"
    lines = samples.read_text().splitlines(keepends=True)
    samples.write_text("".join(lines[:2]))  # as if stopped after two records
    # the manifest keeps the judge's options typed (a float, nulls): a resume must take them back
    assert json.loads((tmp_path / "j" / "manifest.json").read_text())["judge"]["args"]["read_timeout_s"] == 30.0
    assert cli("resume", str(tmp_path / "j"), "--quiet") in (0, None)
    keys = [json.loads(line)["sample_id"] for line in samples.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 4


def test_the_report_gives_the_judges_reliability_per_run(
    server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from eval_harness.cli.app import main

    def cli(*args: str) -> str:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_code:
            main([*args])
        assert exit_code.value.code in (0, None), capsys.readouterr().err
        return capsys.readouterr().out

    server.rule = lambda request: answer(pair("B"))  # "B" in both orders: every verdict flips toward second
    cli("run", "--task", "summarization", "--model", "mock/x", "--model-arg", "skill=1", "--limit", "4",
        "--output-dir", str(tmp_path), "--run-id", "src", "--quiet")  # fmt: skip
    shown = cli("rescore", "--run", str(tmp_path / "src"), "--scorer", "token_f1", "--scorer", "pairwise_judge",
                "--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}",
                "--run-id", "pw")  # fmt: skip
    assert "judge reliability" in shown and "4/4 (100.0%), toward first 0 / second 4" in shown  # at the run's end
    (figures,) = json.loads(cli("report", "--run", str(tmp_path / "pw"), "--format", "json"))["judge_reliability"]
    assert figures["judge"] == "pairwise_judge" and figures["kind"] == "pairwise" and figures["records"] == 4
    assert (figures["swapped"], figures["flips"], figures["flip_rate"], figures["bias_second"]) == (4, 4, 1.0, 4)
    # a tie counts 0.5, a pass at the 0.5 threshold, as token F1 1.0 (the mock at skill 1 answers the target)
    assert (figures["reference"], figures["compared"], figures["disagreements"]) == ("token_f1", 4, 0)
    table = cli("report", "--run", str(tmp_path / "pw"))
    assert "judge reliability" in table and "4/4 (100.0%), toward first 0 / second 4" in table
    markdown = cli("report", "--run", str(tmp_path / "pw"), "--format", "markdown")
    assert "### Judge reliability" in markdown and "| pairwise_judge | pairwise | 4 |" in markdown
    assert json.loads(cli("report", "--run", str(tmp_path / "src"), "--format", "json"))["judge_reliability"] == []


async def test_the_built_in_rubrics_show_the_judge_a_chat_samples_earlier_turns() -> None:
    # before: `{{ input }}` is the last user turn only, so the judge graded "And in euros?" without the question
    conversation = [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", content="How much did the council spend?"),
        ChatMessage(role="assistant", content="40 pounds."),
        ChatMessage(role="user", content="And in euros?"),
    ]
    sample = Sample(id="c1", input=conversation, target="About 46 euros.")
    for rubric in ("judge_summary.jinja2", "judge_instructions.jinja2"):
        judge = ScriptedJudge([verdict(quality=4)])
        spec = ScorerSpec(name="rubric_judge", args={"rubric": rubric, "criteria": ["quality"]})
        await build_scorer(spec, judge).score("46 euros", sample)
        shown = judge.requests[0].messages[-1].content
        expected = "[user] How much did the council spend?\n[assistant] 40 pounds.\n[user] And in euros?\n"
        assert expected in shown and "Be brief." not in shown
    single = ScriptedJudge([verdict(quality=4)])
    spec = ScorerSpec(name="rubric_judge", args={"rubric": "judge_summary.jinja2", "criteria": ["quality"]})
    await build_scorer(spec, single).score("x", Sample(id="s", input="Summarise this.", target="y"))
    assert "[user]" not in single.requests[0].messages[-1].content  # one turn reads as before


@pytest.mark.parametrize(
    ("rubric_text", "problem"),
    [
        ("{{ nosuch }}\n", "'nosuch' is undefined"),
        ("{# nothing #}\n", "renders an empty prompt"),
    ],
)
def test_a_rubric_that_fails_on_every_sample_is_refused_before_the_run(
    task_root: TaskRoot, rubric_text: str, problem: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """audit-s21-input 6: passed --dry-run and the start, then every answer was generated (paid for) and every
    judge call failed, exit 0."""
    from eval_harness.cli.app import main

    (task_root.root / "templates" / "badrubric.jinja2").write_text(rubric_text)
    task = task_root.task(
        "rub",
        'name = "rub"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n[[scorers]]\n'
        'name = "rubric_judge"\nargs = { rubric = "badrubric.jinja2", criteria = { a = "b" } }\n',
    )
    for extra in (["--dry-run"], []):
        with pytest.raises(SystemExit) as exit_code:
            main(["run", "--task", str(task), "--model", "mock/m", "--judge-model", "mock/j", "--limit", "2",
                  "--output-dir", str(task_root.root / "out"), "-q", *extra])  # fmt: skip
        err = capsys.readouterr().err
        assert exit_code.value.code == 2 and "badrubric.jinja2" in err and problem in err, err
    assert not (task_root.root / "out").exists()


def test_a_judge_refused_by_its_server_is_told_to_check_its_own_flag(
    server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # before: "check --model-arg api_key_env=NAME": the model's flag, which sets nothing of the judge's
    server.api_key = "sk-the-right-key-000000"
    from eval_harness.cli.app import main

    with pytest.raises(SystemExit) as exit_code:
        main(["run", "--task", "summarization", "--model", "mock/x", "--limit", "2",
              "--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}",
              "--output-dir", str(tmp_path), "--run-id", "j", "--quiet"])  # fmt: skip
    err = capsys.readouterr().err
    assert exit_code.value.code == 2 and "authentication failed: HTTP 401" in err, err
    assert "check --judge-arg api_key_env=NAME (or api_key=...)" in err and "--model-arg" not in err


async def test_a_verdict_nested_too_deeply_gets_the_repair_request_and_keeps_its_spend(where: str) -> None:
    # before: RecursionError on the first reply: no repair request, and that call's tokens and cost were dropped
    judge = ScriptedJudge(["[" * 100_000, verdict(faithfulness=4, coverage=4)])
    score = await build_scorer(rubric(), judge, where).score("x", SAMPLE)
    assert score.value == 0.75 and (score.metadata["calls"], score.metadata["repairs"]) == (2, 1)
    assert "JSON nested too deeply to read" in judge.requests[1].messages[-1].content
    assert score.usage == Usage(prompt_tokens=200, completion_tokens=40)


def test_prose_before_an_object_nested_too_deeply_is_a_malformed_verdict() -> None:
    # before: RecursionError from the scan for an object inside prose
    with pytest.raises(VerdictError, match="JSON nested too deeply to read"):
        parse_rubric_verdict("My verdict: " + '{"a":' * 100_000 + "1" + "}" * 100_000, ["quality"], 1, 5)


def test_a_weight_0_judge_that_failed_everywhere_gets_a_note_in_the_report(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    # judge-s30 1: the run said "errors 0", the report showed the judge's n 0 and no note, its spend counted
    server.rule = lambda request: answer("I cannot grade this.")  # never a verdict: each call and its repair fail
    from eval_harness.cli.app import main
    from eval_harness.report import build_report

    with pytest.raises(SystemExit) as exit_code:
        main(["run", "--task", "math_cot", "--model", "mock/x", "--model-arg", "skill=1", "--limit", "3",
              "--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}",
              "--output-dir", str(tmp_path), "--run-id", "w0", "--quiet"])  # fmt: skip
    assert exit_code.value.code in (0, None)
    report = build_report(tmp_path / "w0")
    assert report.totals.judge_prompt_tokens > 0
    assert [note for note in report.notes if "though the judge was called" in note] == [
        "reasoning_judge: no value on any record, though the judge was called (its calls failed, or staged scoring "
        f"skipped it everywhere); see why with eval-harness inspect --run {tmp_path / 'w0'} --scorer reasoning_judge"
    ]


def test_a_judge_model_refused_before_the_run_is_named_as_the_judge(tmp_path: Path) -> None:
    # judge-s30 8: "unknown provider 'nosuch'" did not say it was about --judge-model, not --model
    from eval_harness.config import RunConfig
    from eval_harness.errors import ConfigError
    from eval_harness.planning import plan_run

    with pytest.raises(ConfigError) as raised:
        plan_run(RunConfig(task="math_cot", model="mock/x", judge_model="nosuch/j", output_dir=tmp_path))
    assert str(raised.value).startswith("--judge-model nosuch/j: unknown provider 'nosuch'")


async def test_a_run_stopping_error_of_any_judge_call_is_raised_before_another_calls_scoring_error(
    where: str,
) -> None:
    # review-s31 F2: the first call's scoring error was raised, hiding the third call's stop (a server asking
    # every caller to wait): the run went on
    judge = ScriptedJudge([ProviderHTTPError("HTTP 500: overloaded"), QuotaExhaustedError("asks to wait 2 minutes")])
    with pytest.raises(QuotaExhaustedError, match="asks to wait 2 minutes"):
        await build_scorer(rubric(samples=2), judge, where).score("x", SAMPLE)


def test_a_judge_served_from_the_cache_is_noted_where_its_cost_reads_0(
    server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # probe-s31 F1: a second run's judge verdicts all came from --cache: "judge cost $0 (apart)", no word
    monkeypatch.setenv("EVAL_HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    server.rule = lambda request: answer(verdict(faithfulness=5, coverage=4, concision=3))
    from eval_harness.cli.app import main

    def cli(*args: str) -> str:
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_code:
            main([*args])
        assert exit_code.value.code in (0, None), capsys.readouterr().err
        return " ".join(capsys.readouterr().out.split())

    judged = ("--task", "summarization", "--model", "mock/x", "--limit", "2", "--cache", "--judge-model",
              "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}", "--judge-arg", "price_in=1",
              "--judge-arg", "price_out=2", "--output-dir", str(tmp_path), "-q")  # fmt: skip
    cli("run", *judged, "--run-id", "first")
    first = cli("report", "--run", str(tmp_path / "first"))  # paid: hits, if any, are said to cost $0
    assert "the judge cost is what this run paid, below the judge's price where they were" in first
    calls = len(server.generation_requests())
    cli("run", *judged, "--run-id", "again")
    # review2-s31 F1: the mock judge is never cached, and its $0 is its price: no note
    cli("run", "--task", "summarization", "--model", "mock/x", "--limit", "2", "--cache", "--judge-model", "mock/j",
        "--output-dir", str(tmp_path), "--run-id", "free", "-q")  # fmt: skip
    assert "the judge's" not in cli("report", "--run", str(tmp_path / "free"))
    assert len(server.generation_requests()) == calls  # every verdict from the cache
    assert (
        "the judge's calls cost $0: with --cache, verdicts served from the response cache cost nothing (a judge's "
        "hits are not marked on the records), so unless the judge is free the $0 is not its price"
    ) in cli("report", "--run", str(tmp_path / "again"))


def test_a_rescore_asks_a_judge_on_criteria_given_on_the_command_line(
    server: FakeLLMServer, tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    # rescore --scorer rubric_judge could not take criteria (a table): every such rescore needed a task spec
    server.rule = lambda request: answer(verdict(faithfulness=9, coverage=4))
    out = tmp_path / "results"
    assert cli("run", "--task", "summarization", "--model", "mock/s", "--limit", "2", "--output-dir", out,
               "--run-id", "src", "-q").code == 0  # fmt: skip
    judge = ["--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}"]
    scorer = 'rubric_judge:rubric=judge_summary.jinja2,criteria=["faithfulness","coverage"],scale=[1,10],alias=j'
    result = cli("rescore", "--run", out / "src", "--scorer", scorer, *judge, "--run-id", "r", "-q")
    assert result.code == 0, result.err
    records = [json.loads(line) for line in (out / "r" / "samples.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all(r["error"] is None for r in records)
    # on the 1-10 scale given: (9 - 1) / 9 and (4 - 1) / 9, equally weighted
    for record in records:
        assert record["scores"] == pytest.approx({"j": 11 / 18, "j.faithfulness": 8 / 9, "j.coverage": 3 / 9})
    scorer = "rubric_judge:rubric=judge_summary.jinja2,criteria=[1"
    bad = cli("rescore", "--run", out / "src", "--scorer", scorer, *judge, "--run-id", "bad", "-q")
    assert bad.code == 2 and "criteria" in bad.err and "Traceback" not in bad.err, bad.err


def test_a_judges_retries_and_backoff_are_counted_in_the_record_and_the_totals(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    # a judge's 500s and 429s were retried but counted nowhere: the record and summary said "retries 0"
    server.rule = lambda request: answer(verdict(faithfulness=5, coverage=4, concision=3))
    server.script(
        Reply(kind="error", status=500, headers={"retry-after": "0.05"}),
        Reply(kind="error", status=429, headers={"retry-after": "0.05"}),
    )
    from eval_harness.cli.app import main

    with pytest.raises(SystemExit) as exit_code:
        main(["run", "--task", "summarization", "--model", "mock/x", "--limit", "1",
              "--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}",
              "--output-dir", str(tmp_path), "--run-id", "j", "--quiet"])  # fmt: skip
    assert exit_code.value.code in (0, None)
    (record,) = [json.loads(line) for line in (tmp_path / "j" / "samples.jsonl").read_text().splitlines()]
    assert record["error"] is None and record["scores"]["judge"] == 0.75
    # the mock model's own attempt is the record's one attempt; the judge's retries are named as the judge's, and
    # its waits are not the model's backoff
    assert record["attempts"] == 1 and record["retries"] == {"judge_rate_limit": 1, "judge_server_error": 1}
    assert record["backoff_s"] == 0
    summary = json.loads((tmp_path / "j" / "summary.json").read_text())
    assert summary["retries_by_cause"] == record["retries"]


def test_an_answer_scored_again_counts_the_judges_retries_of_that_scoring_only(
    server: FakeLLMServer, tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    # review-s32 1: each resume --retry-errors added the earlier scorings' judge retries to the record (2, 4, 6, 8),
    # where a retried generation's record counts its own session's alone
    server.rule = lambda request: Reply(kind="error", status=500, headers={"retry-after": "0.01"})
    judge = ["--judge-model", "openai-compatible/judge-1", "--judge-arg", f"base_url={server.base_url}"]
    run = tmp_path / "j"
    made = cli("run", "--task", "summarization", "--model", "mock/x", "--limit", "1", *judge, "--max-retries", "2",
               "--output-dir", tmp_path, "--run-id", "j", "-q")  # fmt: skip
    assert made.code == 0, made.err
    for _ in range(2):
        assert cli("resume", run, "--retry-errors", "--judge-arg", f"base_url={server.base_url}", "-q").code == 0
    records = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert [r["retries"] for r in records] == [{"judge_server_error": 2}] * 3  # each scoring's own two
    server.rule = lambda request: answer(verdict(faithfulness=5, coverage=4, concision=3))
    assert cli("resume", run, "--retry-errors", "-q").code == 0
    last = json.loads((run / "samples.jsonl").read_text().splitlines()[-1])
    assert last["error"] is None and last["retries"] == {}  # the verdict's scoring retried nothing
    assert json.loads((run / "summary.json").read_text())["retries_by_cause"] == {}


def test_a_judges_calls_queueing_for_the_rpm_budget_do_not_time_out_the_scoring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review2-s31 F2, F3: the judge's calls, paced by the run's --rpm, queued with the scoring clock running: at
    # --rpm 60 and --timeout 0.5 every record was "TimeoutError ... while scoring (judge (rubric_judge))"
    from eval_harness.cli.app import main

    with pytest.raises(SystemExit) as exit_code:
        main(["run", "--task", "summarization", "--model", "mock/sum", "--judge-model", "mock/j", "--rpm", "60",
              "--timeout", "0.5", "--limit", "3", "--concurrency", "3", "--output-dir", str(tmp_path), "--run-id",
              "paced", "-q"])  # fmt: skip
    assert exit_code.value.code in (0, None), capsys.readouterr().err
    records = [json.loads(line) for line in (tmp_path / "paced" / "samples.jsonl").read_text().splitlines()]
    assert len(records) == 3
    assert not [r["error"] for r in records if r["error"] and r["error"]["type"] == "TimeoutError"], records
