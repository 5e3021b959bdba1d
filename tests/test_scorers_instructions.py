"""Instruction-following checks without a model; counts below were made by hand."""

from __future__ import annotations

import pytest

from eval_harness.errors import ConfigError
from eval_harness.scorers import ScoringPipeline, build_scorer
from eval_harness.scorers.instructions import (
    count_bullets,
    count_paragraphs,
    count_sentences,
    count_words,
    run_check,
    schema_problems,
)
from eval_harness.types import Sample, ScorerSpec


@pytest.mark.parametrize(
    ("text", "words"),
    [("", 0), ("Hello, world!", 2), ("Don't use well-known words", 4), ("3.5 km — fast", 4), ("naïve café", 2)],
)
def test_words_are_runs_of_letters_and_digits(text: str, words: int) -> None:
    assert count_words(text) == words


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two! Three?", 3),
        ("Dr. Smith arrived at 3.30 p.m. yesterday. He left.", 2),
        ("No final stop", 1),
        ("Line one\nLine two.", 2),
        ('He said "stop." Then he left.', 2),
        ("", 0),
    ],
)
def test_sentences_end_at_terminal_punctuation_or_a_line_break(text: str, sentences: int) -> None:
    assert count_sentences(text) == sentences


def test_paragraphs_are_separated_by_blank_lines() -> None:
    assert count_paragraphs("First.\nStill first.\n\n  \nSecond.\n\nThird.") == 3


def test_bullets_count_dash_star_plus_and_dot_markers_and_optionally_numbers() -> None:
    text = "- one\n* two\n+ three\n• four\n1. five\n2) six\n-not a bullet"
    assert (count_bullets(text), count_bullets(text, numbered=True)) == (4, 6)


@pytest.mark.parametrize(
    ("text", "check", "passed"),
    [
        ("one two three", {"type": "word_count", "max": 3}, True),
        ("one two three four", {"type": "word_count", "max": 3}, False),
        ("one two", {"type": "word_count", "min": 2, "max": 2}, True),
        ("One. Two.", {"type": "sentence_count", "exactly": 2}, True),
        ("a\n\nb", {"type": "paragraph_count", "min": 3}, False),
        ("- a\n- b", {"type": "bullet_count", "exactly": 2}, True),
        ("Refraction and reflection", {"type": "include", "keywords": ["reflection", "refraction"]}, True),
        ("refractions only", {"type": "include", "keywords": ["refraction"]}, False),  # whole words only
        ("A Red car", {"type": "exclude", "keywords": ["red"]}, False),
        ("A Red car", {"type": "exclude", "keywords": ["red"], "case_sensitive": True}, True),
        ("all lower case here", {"type": "lowercase"}, True),
        ("not All lower", {"type": "lowercase"}, False),
        ('Thanks. "Any questions?" ', {"type": "ends_with", "phrase": "any questions?"}, True),
        ("Any questions? Thanks.", {"type": "ends_with", "phrase": "Any questions?"}, False),
        ('{"a": 1}', {"type": "json"}, True),
        ('```json\n{"a": 1}\n```', {"type": "json"}, True),
        ('```json\n{"a": 1}\n```', {"type": "json", "allow_fence": False}, False),
        ('Sure! {"a": 1}', {"type": "json"}, False),
    ],
)
def test_checks_pass_or_fail_as_counted_by_hand(text: str, check: dict[str, object], passed: bool) -> None:
    assert run_check(text, check)[0] is passed


SCHEMA = {
    "type": "object",
    "required": ["name", "steps"],
    "properties": {"name": {"type": "string"}, "steps": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
    "additionalProperties": False,
}


def test_json_matching_the_schema_passes() -> None:
    assert run_check('{"name": "toast", "steps": ["toast bread"]}', {"type": "json", "schema": SCHEMA}) == (
        True,
        "valid JSON matching the schema",
    )


def test_schema_problems_name_the_path() -> None:
    assert schema_problems({"name": 3, "steps": [], "extra": True}, SCHEMA) == [
        "$.name: expected string, got int",
        "$.steps: fewer than 1 items",
        "$: unexpected property 'extra'",
    ]


def test_an_unsupported_schema_keyword_is_refused_not_ignored() -> None:
    with pytest.raises(ValueError, match="unsupported JSON Schema keyword 'oneOf'"):
        schema_problems({}, {"oneOf": []})


async def test_scorer_combines_task_checks_and_sample_checks_with_a_breakdown() -> None:
    scorer = build_scorer(ScorerSpec(name="instructions", args={"checks": [{"type": "lowercase"}]}))
    sample = Sample(
        id="s",
        input="?",
        target="x",
        metadata={"checks": [{"type": "word_count", "max": 3}, {"type": "include", "keywords": ["tea"]}]},
    )
    score = await scorer.score("i like coffee", sample)
    assert score.value == pytest.approx(2 / 3)
    assert score.metadata["breakdown"] == {"lowercase": 1.0, "word_count": 1.0, "include": 0.0}
    assert score.explanation == "2/3 checks passed; failed: include: missing 'tea'"


async def test_all_mode_gives_one_only_when_every_check_passes() -> None:
    scorer = build_scorer(ScorerSpec(name="instructions", args={"mode": "all"}))
    sample = Sample(id="s", input="?", target="x", metadata={"checks": [{"type": "lowercase"}, {"type": "lowercase"}]})
    score = await scorer.score("Mixed", sample)
    assert score.value == 0.0 and set(score.metadata["breakdown"]) == {"lowercase", "lowercase_2"}


def test_a_bad_task_level_check_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"checks\[0\]: unknown check type 'shout'"):
        build_scorer(ScorerSpec(name="instructions", args={"checks": [{"type": "shout"}]}))


def test_a_check_with_an_unknown_parameter_is_a_config_error() -> None:
    with pytest.raises(
        ConfigError, match=r"checks\[0\]: check 'word_count': got an unexpected keyword argument 'most'"
    ):
        build_scorer(ScorerSpec(name="instructions", args={"checks": [{"type": "word_count", "most": 3}]}))


async def test_a_bad_sample_check_is_a_scoring_error_for_that_sample_only() -> None:
    pipeline = ScoringPipeline([ScorerSpec(name="instructions")])
    result = await pipeline.score("text", Sample(id="s", input="?", target="x", metadata={"checks": [{"type": "x"}]}))
    assert result.error is not None and result.final is None
    assert result.error.message.startswith("instructions: metadata.checks[0]: unknown check type 'x'")
