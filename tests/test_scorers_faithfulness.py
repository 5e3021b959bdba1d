"""The faithfulness heuristic: numbers, names and content words of a summary looked up in the source."""

from __future__ import annotations

import pytest

from eval_harness.errors import ConfigError
from eval_harness.scorers import build_scorer
from eval_harness.scorers.faithfulness import faithfulness
from eval_harness.types import Sample, ScorerSpec

SOURCE = "Harwick council spent 40 pounds restoring the lighthouse."


def test_a_summary_stated_in_the_source_is_fully_supported() -> None:
    assert faithfulness("The council in Harwick spent 40 pounds on Lighthouses.", SOURCE) == (1.0, [])


def test_invented_numbers_and_names_weigh_three_times_a_word() -> None:
    # units (weight): 50 (3, missing), Mayor (1, missing), Jones (3, missing), council, spent, pounds (1 each)
    # → supported 3 of 10 (by hand)
    value, missing = faithfulness("Mayor Jones said the council spent 50 pounds.", SOURCE)
    assert value == pytest.approx(0.3)
    assert missing == ["50", "Mayor", "Jones"]


def test_numbers_match_by_value_whatever_their_format() -> None:
    assert faithfulness("The bill was 1,200 pounds.", "The bill came to 1200 pounds.")[0] == 1.0


def test_an_empty_summary_scores_zero() -> None:
    assert faithfulness("", SOURCE) == (0.0, [])


async def test_scorer_reads_the_source_from_metadata_when_told() -> None:
    scorer = build_scorer(ScorerSpec(name="faithfulness", args={"source": "metadata.article"}))
    sample = Sample(id="s", input="Summarise.", target="x", metadata={"article": SOURCE})
    score = await scorer.score("Harwick council spent 40 pounds.", sample)
    assert score.value == 1.0
    assert score.explanation == "100% supported; every number, name and content word is in the source"


async def test_scorer_lists_what_is_not_in_the_source() -> None:
    scorer = build_scorer(ScorerSpec(name="faithfulness"))
    score = await scorer.score(
        "Mayor Jones said the council spent 50 pounds.", Sample(id="s", input=SOURCE, target="x")
    )
    assert score.explanation == "30% supported; not in the source: '50', 'Mayor', 'Jones'"


async def test_a_summary_with_nothing_to_check_says_so_instead_of_all_supported() -> None:
    scorer = build_scorer(ScorerSpec(name="faithfulness"))
    score = await scorer.score("Because it is.", Sample(id="s", input=SOURCE, target="x"))
    assert (score.value, score.explanation) == (0.0, "no number, name or content word to check against the source")


def test_scorer_rejects_an_unknown_source() -> None:
    with pytest.raises(ConfigError, match=r"source must be 'input' or 'metadata\.<key>'"):
        build_scorer(ScorerSpec(name="faithfulness", args={"source": "target"}))


@pytest.mark.parametrize(
    ("summary", "source"),
    [
        ("The council spent 12,345.67 pounds.", "The council spent 12,345.67 pounds on 3 lighthouses."),
        ("Pi is 3.1415926.", "Pi is 3.1415926."),
        ("The vaccine is 99.99999% effective.", "The vaccine is 99.99999% effective."),
        ("About 1234567.5 in total.", "About 1234567.5 in total."),
    ],
)
def test_a_number_copied_exactly_from_the_source_is_supported_whatever_its_digits(summary: str, source: str) -> None:
    # every unit of the summary is in the source, so 1.0 (by hand); numbers of more than 6 significant digits
    # were compared through their :g text (12345.7) and counted as invented
    assert faithfulness(summary, source) == (1.0, [])


def test_an_unsupported_number_is_shown_with_all_its_digits() -> None:
    # units: 12345.68 (3, not in the source), cost (1), pounds (1) → 2 of 5 (by hand)
    value, missing = faithfulness("It cost 12,345.68 pounds.", "It cost 12,345.67 pounds.")
    assert value == pytest.approx(0.4)
    assert missing == ["12345.68"]
