"""How scorers combine: weighted mean, gates, staged (cheap first) scoring, skipped scorers, composites,
breakdowns and the spend of failed model-based scorers."""

from __future__ import annotations

import pytest

from eval_harness.errors import ConfigError
from eval_harness.scorers import Scorer, ScoringPipeline, SkipScore, combine, register_scorer
from eval_harness.scorers.base import SpentScoringError, parse_conditions
from eval_harness.types import Completion, CompletionClient, Sample, Score, ScorerSpec, Usage

SAMPLE = Sample(id="s", input="question", target="answer")
CALLS: list[str] = []


class Fixed(Scorer):
    """Returns a fixed value and records that it was called."""

    def __init__(self, value: float, label: str, breakdown: dict[str, float] | None = None) -> None:
        self.value, self.label, self.breakdown = value, label, breakdown

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        CALLS.append(self.label)
        metadata = {"breakdown": self.breakdown} if self.breakdown else {}
        return Score(value=self.value, explanation=f"fixed {self.value}", metadata=metadata)


class Expensive(Fixed):
    expensive = True

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        score = await super().score(output, sample, completion)
        return score.model_copy(update={"usage": Usage(prompt_tokens=10, completion_tokens=5), "cost_usd": 0.002})


@register_scorer("test_fixed")
def fixed(value: float, label: str = "fixed", breakdown: dict[str, float] | None = None) -> Scorer:
    return Fixed(value, label, breakdown)


@register_scorer("test_expensive")
def expensive(value: float, label: str = "expensive") -> Scorer:
    return Expensive(value, label)


@register_scorer("test_optional_judge")
def optional_judge(judge: CompletionClient | None = None) -> Scorer:
    class Optional(Scorer):
        async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
            if judge is None:
                raise SkipScore("no judge model configured")
            return Score(value=1.0)

    return Optional()


@register_scorer("test_required_judge")
def required_judge(judge: CompletionClient) -> Scorer:
    return Fixed(1.0, "required")


@register_scorer("test_failing")
def failing(spent: bool = False, config: bool = False) -> Scorer:
    class Failing(Scorer):
        async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
            CALLS.append("failing")
            if config:
                raise ConfigError("backend not installed")
            if spent:
                raise SpentScoringError("judge broke", Usage(prompt_tokens=7, completion_tokens=1), 0.001)
            raise RuntimeError("boom")

    return Failing()


def spec(name: str, key: str | None = None, weight: float = 1.0, gate: bool = False, **args: object) -> ScorerSpec:
    return ScorerSpec(name=name, alias=key, weight=weight, gate=gate, args=args)


@pytest.fixture(autouse=True)
def _clear_calls() -> None:
    CALLS.clear()


def test_combine_is_the_weighted_mean() -> None:
    specs = [spec("a", weight=3), spec("b", weight=1)]
    assert combine({"a": 1.0, "b": 0.0}, specs) == 0.75


def test_a_failed_gate_makes_the_final_score_zero() -> None:
    specs = [spec("format", gate=True), spec("quality")]
    assert combine({"format": 0.5, "quality": 1.0}, specs) == 0.0
    assert combine({"format": 1.0, "quality": 0.8}, specs) == 0.8  # a met gate takes no part in the mean


def test_a_lone_gate_is_its_own_final_score() -> None:
    assert combine({"format": 1.0}, [spec("format", gate=True), spec("judge")]) == 1.0


def test_skipped_scorers_take_no_part_in_the_mean() -> None:
    assert combine({"a": 0.4}, [spec("a"), spec("judge", weight=5)]) == 0.4


def test_zero_weight_scorers_are_reported_but_not_averaged() -> None:
    assert combine({"a": 1.0, "b": 0.0}, [spec("a"), spec("b", weight=0)]) == 1.0


@pytest.mark.parametrize(
    ("raw", "holds_on"),
    [(1.0, 1.0), (">= 0.9", 0.95), ("<1", 0.5), ("!= 0", 0.2), ("== 0.5", 0.5)],
)
def test_skip_conditions_parse_numbers_and_comparisons(raw: object, holds_on: float) -> None:
    (condition,) = parse_conditions({"exact": raw}, "t")
    assert condition.holds({"exact": holds_on})


def test_a_malformed_skip_condition_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"skip_when\.exact: cannot read 'about 1'"):
        parse_conditions({"exact": "about 1"}, "t")


async def test_staged_scorer_is_not_called_when_a_cheap_scorer_is_decisive() -> None:
    pipeline = ScoringPipeline(
        [spec("test_expensive", "judge", value=0.5, skip_when={"exact": 1.0}), spec("test_fixed", "exact", value=1.0)]
    )
    result = await pipeline.score("out", SAMPLE)
    assert CALLS == ["fixed"]
    assert result.scores == {"exact": 1.0} and result.final == 1.0
    assert result.skipped == ["judge"] and result.explanations["judge"] == "skipped: exact == 1 is decisive"
    assert result.judge_usage is None


async def test_staged_scorer_runs_when_the_cheap_scorers_are_not_decisive() -> None:
    pipeline = ScoringPipeline(
        [spec("test_fixed", "exact", value=0.0), spec("test_expensive", "judge", value=0.5, skip_when={"exact": 1.0})]
    )
    result = await pipeline.score("out", SAMPLE)
    assert CALLS == ["fixed", "expensive"]
    assert result.final == 0.25
    assert result.judge_usage == Usage(prompt_tokens=10, completion_tokens=5) and result.judge_cost_usd == 0.002


async def test_model_based_scorers_run_after_cheap_ones_and_not_after_an_error() -> None:
    pipeline = ScoringPipeline([spec("test_expensive", "judge", value=1.0), spec("test_failing")])
    result = await pipeline.score("out", SAMPLE)
    assert CALLS == ["failing"]
    assert result.error is not None and result.error.message == "test_failing: boom" and result.final is None


async def test_a_failing_weight_0_scorer_is_noted_and_the_others_still_score() -> None:
    # before: a recorded-only judge (weight 0) that failed made the record an error counted as wrong, so a judge
    # outage turned a run of right answers into 0%
    pipeline = ScoringPipeline([spec("test_fixed", "exact", value=1.0), spec("test_failing", weight=0.0, spent=True)])
    result = await pipeline.score("out", SAMPLE)
    assert result.error is None and result.final == 1.0 and result.scores == {"exact": 1.0}
    assert result.skipped == ["test_failing"]
    assert result.explanations["test_failing"] == "failed, not counted (weight 0): SpentScoringError: judge broke"
    assert result.judge_usage == Usage(prompt_tokens=7, completion_tokens=1) and result.judge_cost_usd == 0.001


async def test_a_failing_weight_0_gate_still_fails_the_record() -> None:
    pipeline = ScoringPipeline([spec("test_fixed", value=1.0), spec("test_failing", weight=0.0, gate=True)])
    result = await pipeline.score("out", SAMPLE)
    assert result.error is not None and result.error.message == "test_failing: boom" and result.final is None


async def test_a_configuration_error_while_scoring_is_raised_not_recorded_as_the_samples_error() -> None:
    pipeline = ScoringPipeline([spec("test_failing", config=True)])
    with pytest.raises(ConfigError, match="backend not installed"):
        await pipeline.score("out", SAMPLE)


async def test_a_failed_judge_still_counts_its_spend() -> None:
    pipeline = ScoringPipeline([spec("test_fixed", value=1.0), spec("test_failing", spent=True)])
    result = await pipeline.score("out", SAMPLE)
    assert result.error is not None and result.error.type == "SpentScoringError"
    assert result.judge_usage == Usage(prompt_tokens=7, completion_tokens=1) and result.judge_cost_usd == 0.001


def test_skip_when_must_name_an_unstaged_scorer_of_the_task() -> None:
    with pytest.raises(ConfigError, match="skip_when names 'exact', which is not an unstaged scorer"):
        ScoringPipeline([spec("test_fixed", "a", value=1.0, skip_when={"exact": 1.0})], where="t.toml")


async def test_an_optional_judge_without_a_judge_model_is_skipped_with_its_reason() -> None:
    pipeline = ScoringPipeline([spec("test_fixed", value=0.6), spec("test_optional_judge", "judge", weight=3)])
    result = await pipeline.score("out", SAMPLE)
    assert result.final == 0.6
    assert result.explanations["judge"] == "skipped: no judge model configured"


def test_a_required_judge_without_a_judge_model_is_a_config_error() -> None:
    with pytest.raises(
        ConfigError, match=r"t\.toml: scorer 'test_required_judge' needs a judge model; pass --judge-model"
    ):
        ScoringPipeline([spec("test_required_judge")], where="t.toml")


def test_injected_names_cannot_be_set_from_a_task_spec() -> None:
    with pytest.raises(ConfigError, match="'where' cannot be set in args"):
        ScoringPipeline([spec("test_fixed", value=1.0, where="x")])


def test_two_scorers_under_one_key_are_refused() -> None:
    with pytest.raises(ConfigError, match="scorer key 'test_fixed' is used twice; give one an alias"):
        ScoringPipeline([spec("test_fixed", value=1.0), spec("test_fixed", value=0.0)])


async def test_every_scorer_skipped_is_a_scoring_error() -> None:
    result = await ScoringPipeline([spec("test_optional_judge")]).score("out", SAMPLE)
    assert result.error is not None and result.error.message == "every scorer was skipped"


async def test_a_breakdown_is_kept_in_the_scores_under_the_scorer_key() -> None:
    pipeline = ScoringPipeline([spec("test_fixed", "judge", value=0.5, breakdown={"style": 1.0, "facts": 0.0})])
    result = await pipeline.score("out", SAMPLE)
    assert result.scores == {"judge": 0.5, "judge.style": 1.0, "judge.facts": 0.0}
    assert result.final == 0.5  # parts of a breakdown take no part in the final score
    assert result.metadata["judge"]["breakdown"] == {"style": 1.0, "facts": 0.0}


async def test_composite_combines_its_parts_with_gates_and_keeps_the_breakdown() -> None:
    parts = [
        {"name": "test_fixed", "alias": "format", "gate": True, "args": {"value": 1.0}},
        {"name": "test_fixed", "alias": "rouge", "weight": 3, "args": {"value": 0.4}},
        {"name": "test_fixed", "alias": "faith", "args": {"value": 0.8}},
    ]
    pipeline = ScoringPipeline([spec("composite", "quality", scorers=parts)])
    result = await pipeline.score("out", SAMPLE)
    assert result.scores["quality"] == pytest.approx(0.5)  # (3 x 0.4 + 0.8) / 4, by hand
    assert {k: result.scores[k] for k in ("quality.format", "quality.rouge", "quality.faith")} == {
        "quality.format": 1.0,
        "quality.rouge": 0.4,
        "quality.faith": 0.8,
    }


async def test_composite_names_the_gate_that_zeroed_it() -> None:
    parts = [
        {"name": "test_fixed", "alias": "format", "gate": True, "args": {"value": 0.0}},
        {"name": "test_fixed", "alias": "rouge", "args": {"value": 0.9}},
    ]
    result = await ScoringPipeline([spec("composite", "quality", scorers=parts)]).score("out", SAMPLE)
    assert result.scores["quality"] == 0.0
    assert result.explanations["quality"].startswith("gate format failed → 0; ")


def test_composite_with_a_bad_part_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"scorers\[0\]\.weight: Input should be greater than or equal to 0"):
        ScoringPipeline([spec("composite", scorers=[{"name": "test_fixed", "weight": -1}])])


def test_a_met_gate_with_only_zero_weight_scorers_is_the_final_score() -> None:
    # the gate is met and nothing is weighted: the final score comes from the gate alone, 1.0 (by hand); the
    # fallback averaged the gate with the weight-0 scorer, (1.0 + 0.2) / 2
    assert combine({"fmt": 1.0, "rouge": 0.2}, [spec("fmt", gate=True), spec("rouge", weight=0)]) == 1.0


def test_a_failed_gate_with_only_zero_weight_scorers_is_zero() -> None:
    assert combine({"fmt": 0.5, "rouge": 0.2}, [spec("fmt", gate=True), spec("rouge", weight=0)]) == 0.0


def test_all_zero_weights_mean_equal_weights() -> None:
    assert combine({"a": 0.3, "b": 1.0}, [spec("a", weight=0), spec("b", weight=0)]) == pytest.approx(0.65)  # by hand


async def test_a_weight_zero_scorer_staged_before_a_skipped_judge_gives_the_final_score() -> None:
    pipeline = ScoringPipeline(
        [
            spec("test_fixed", "exact", weight=0, value=1.0),
            spec("test_expensive", "judge", value=0.0, skip_when={"exact": 1.0}),
        ]
    )
    result = await pipeline.score("out", SAMPLE)
    assert result.skipped == ["judge"] and result.final == 1.0


async def test_a_skipped_gate_is_left_out_as_if_the_task_did_not_have_it() -> None:
    pipeline = ScoringPipeline([spec("test_optional_judge", "format", gate=True), spec("test_fixed", "b", value=0.4)])
    result = await pipeline.score("out", SAMPLE)
    assert (result.final, result.error, result.skipped) == (0.4, None, ["format"])
    assert result.explanations["format"] == "skipped: no judge model configured"


async def test_a_composite_whose_parts_are_all_skipped_is_skipped_and_the_other_scorers_count() -> None:
    parts = [{"name": "test_optional_judge", "alias": "j"}]
    pipeline = ScoringPipeline([spec("composite", "c", scorers=parts), spec("test_fixed", "b", value=1.0)])
    result = await pipeline.score("out", SAMPLE)
    # it was the record's error "c: every scorer was skipped", and b's value was thrown away
    assert (result.error, result.final, result.skipped) == (None, 1.0, ["c"])
    assert result.explanations["c"] == "skipped: every part was skipped (j: no judge model configured)"


async def test_a_composite_alone_whose_parts_are_all_skipped_leaves_the_record_without_a_score() -> None:
    result = await ScoringPipeline([spec("composite", "c", scorers=[{"name": "test_optional_judge"}])]).score(
        "out", SAMPLE
    )
    assert result.error is not None and result.error.message == "every scorer was skipped"


async def test_a_composite_names_the_parts_it_left_out_and_why() -> None:
    # before: a weight-0 part that failed showed only as "skipped": ["j"], its reason lost (a judge down for the
    # whole run went unseen)
    parts = [{"name": "test_fixed", "alias": "f", "args": {"value": 0.5}}, {"name": "test_failing", "alias": "j",
             "weight": 0}, {"name": "test_optional_judge", "alias": "o"}]  # fmt: skip
    result = await ScoringPipeline([spec("composite", "c", scorers=parts)]).score("out", SAMPLE)
    assert (result.error, result.final) == (None, 0.5)
    assert result.explanations["c"] == (
        "f 0.500; j failed, not counted (weight 0): RuntimeError: boom; o skipped: no judge model configured"
    )


async def test_a_lone_weight_0_scorer_that_fails_says_it_failed_not_that_it_was_skipped() -> None:
    result = await ScoringPipeline([spec("test_failing", "boom", weight=0)]).score("out", SAMPLE)
    assert result.error is not None
    assert result.error.message == "no scorer counted: boom (weight 0) failed: RuntimeError: boom"
