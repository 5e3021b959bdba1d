"""Judge reliability figures from a run's records; expected values computed by hand."""

from __future__ import annotations

from typing import Any

import pytest

from eval_harness.scorers import ScoringPipeline
from eval_harness.scorers.reliability import judge_reliability
from eval_harness.types import Completion, GenerateRequest, Sample, ScorerSpec


def rubric_record(exact: float, judge: float | None, samples: list[float] | None = None) -> dict[str, Any]:
    scores = {"exact": exact} if judge is None else {"exact": exact, "judge": judge, "judge.style": judge}
    metadata = {} if judge is None else {"judge": {"judge": "rubric", "samples": samples or [judge]}}
    return {"scores": scores, "score_metadata": metadata, "error": None}


RUBRIC_RECORDS = [
    rubric_record(1.0, 0.8, [1.0, 0.75, 0.25]),  # samples pass/pass/fail at 0.5; judge and exact agree
    rubric_record(0.0, 0.9, [1.0, 1.0, 0.75]),  # unanimous; judge passes where exact fails
    rubric_record(0.0, 0.1, [0.0, 0.25, 0.0]),  # unanimous; both fail
    rubric_record(1.0, None),  # a staged judge that was skipped takes no part
    {"scores": {}, "score_metadata": {}, "error": {"type": "ProviderError", "message": "x", "stage": "generate"}},
]


def test_self_consistency_agreement_and_spread() -> None:
    (report,) = judge_reliability(RUBRIC_RECORDS)
    assert (report.judge, report.kind, report.records, report.multi_sample) == ("judge", "rubric", 3, 3)
    assert report.agreement == pytest.approx((2 / 3 + 1 + 1) / 3)
    assert report.unanimous_rate == pytest.approx(2 / 3)
    assert report.mean_spread == pytest.approx((0.75 + 0.25 + 0.25) / 3)


def test_disagreement_with_the_deterministic_scorer() -> None:
    (report,) = judge_reliability(RUBRIC_RECORDS)
    assert (report.reference, report.compared, report.disagreements) == ("exact", 3, 1)
    assert report.disagreement_rate == pytest.approx(1 / 3)
    # judge [T, T, F] vs exact [T, F, F]: p_o = 2/3, p_e = 4/9 → kappa = (2/9) / (5/9) = 0.4
    assert report.kappa == pytest.approx(0.4)


def test_the_threshold_decides_what_counts_as_a_pass() -> None:
    (report,) = judge_reliability(RUBRIC_RECORDS, threshold=0.85)
    # judge [F, T, F] vs exact [T, F, F] → 2 disagreements
    assert report.disagreements == 2


def pairwise_record(flip: bool, bias: str | None, value: float) -> dict[str, Any]:
    return {
        "scores": {"pairwise": value},
        "score_metadata": {"pairwise": {"judge": "pairwise", "flip": flip, "position_bias": bias}},
    }


def test_flip_rate_and_position_bias_under_swap() -> None:
    records = [
        pairwise_record(False, None, 1.0),
        pairwise_record(True, "first", 0.5),
        pairwise_record(True, "second", 0.5),
        pairwise_record(False, None, 0.0),
    ]
    (report,) = judge_reliability(records)
    assert (report.swapped, report.flips, report.flip_rate) == (4, 2, 0.5)
    assert (report.bias_first, report.bias_second) == (1, 1)
    assert report.reference is None and report.multi_sample == 0


def test_records_without_a_judge_give_no_report() -> None:
    assert judge_reliability([{"scores": {"exact": 1.0}}]) == []


class TwoVerdicts:
    """A judge that answers 5/5 then 1/5: maximal disagreement between self-consistency samples."""

    def __init__(self) -> None:
        self.scores = iter([5, 1])

    async def complete(self, request: GenerateRequest) -> Completion:
        return Completion(text=f'{{"quality": {{"reason": "r", "score": {next(self.scores)}}}}}')


async def test_reliability_reads_what_the_scoring_pipeline_produces() -> None:
    specs = [
        ScorerSpec(name="exact_match", alias="exact"),
        ScorerSpec(
            name="rubric_judge",
            alias="judge",
            args={"rubric": "judge_summary.jinja2", "criteria": ["quality"], "samples": 2},
        ),
    ]
    result = await ScoringPipeline(specs, TwoVerdicts()).score("yes", Sample(id="s", input="q", target="yes"))
    record = {"scores": result.scores, "score_metadata": result.metadata, "error": None}
    (report,) = judge_reliability([record])
    assert (report.multi_sample, report.agreement, report.mean_spread) == (1, 0.5, 1.0)
    assert (report.compared, report.disagreements) == (1, 0)  # judge mean 0.5 and exact 1.0 both pass
