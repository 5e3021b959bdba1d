"""Instruction-following checks without a model; counts below were made by hand."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from conftest import TaskRoot

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


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("The answer is no. We cannot do it.", 2),  # "no" is the word here
        ("See item No. 5 on the list.", 1),  # "No." before a digit is the abbreviation
        ("I love the U.S. It is big.", 2),
        ("The U.S. army is big.", 1),  # a lower-case word cannot start a sentence
        # a dotted acronym or name suffix ends a sentence only before a sentence starter (IFEval's rule);
        # before: "The U.S. Senate ..." and "King Jr. Day ..." counted 2
        ("The U.S. Senate voted on Tuesday.", 1),
        ("Martin Luther King Jr. Day is a holiday.", 1),
        ("He works for Acme Inc. However, he is leaving.", 2),
        ("I met Jan. Then we left.", 2),
        ("We met on Jan. 5 at noon.", 1),
        ("Buy apples, pears, etc. Then go home.", 2),
        ("Apples, pears, etc. are fruit.", 1),
        ("J. R. R. Tolkien wrote it.", 1),  # single-letter initials always join, as in IFEval
        ("Mr. Smith met Dr. Jones. They talked.", 2),  # titles always join
    ],
)
def test_an_abbreviation_ends_a_sentence_unless_what_follows_cannot_start_one(text: str, sentences: int) -> None:
    # counted by hand
    assert count_sentences(text) == sentences


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "str"}, "unknown JSON Schema type 'str' at $.type"),
        ({"type": "array", "items": {"type": "strng"}}, "unknown JSON Schema type 'strng' at $.items.type"),
        ({"type": ["string", "nil"]}, "unknown JSON Schema type 'nil' at $.type"),
        (
            {"type": "object", "properties": {"a": {"oneOf": []}}},
            "unsupported JSON Schema keyword 'oneOf' at $.properties.a",
        ),
        (
            {"properties": {"a": {"items": {"minItems": -1}}}},
            "minItems must be a whole number >= 0 at $.properties.a.items",
        ),
        ({"additionalProperties": {"type": "string"}}, "additionalProperties must be true or false"),
        ({"type": "number", "minimum": float("nan")}, "minimum must be a finite number at $.minimum"),
        ("object", "a JSON Schema is a table, got str at $"),
    ],
)
def test_every_schema_of_a_json_check_is_checked_when_the_scorer_is_built(schema: Any, message: str) -> None:
    # nested problems got through and became a KeyError (or a scoring error) on every sample
    with pytest.raises(ConfigError) as caught:
        build_scorer(ScorerSpec(name="instructions", args={"checks": [{"type": "json", "schema": schema}]}))
    assert str(caught.value).startswith("task: scorer 'instructions': checks[0]: check 'json': schema: ")
    assert message in str(caught.value)


def test_a_bad_schema_in_a_task_spec_stops_the_run_with_one_line_and_exit_2(
    cli: Callable[..., Any], task_root: TaskRoot
) -> None:
    spec = task_root.task(
        "badschema",
        'name = "badschema"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "instructions"\nargs = { checks = [ { type = "json", schema = { type = "str" } } ] }\n',
    )
    result = cli("run", "--task", spec, "--model", "mock/m", "--output-dir", task_root.root / "out", "--quiet")
    assert result.code == 2
    assert "Traceback" not in result.err and len(result.err.strip().splitlines()) == 1
    assert f"{spec}:5: scorer 'instructions': checks[0]: check 'json': schema: unknown JSON Schema type 'str'" in (
        result.err
    )


async def test_a_bad_schema_in_a_sample_check_is_that_samples_scoring_error() -> None:
    pipeline = ScoringPipeline([ScorerSpec(name="instructions")])
    checks = [{"type": "json", "schema": {"type": "array", "items": {"type": "strng"}}}]
    result = await pipeline.score("[]", Sample(id="s", input="?", target="x", metadata={"checks": checks}))
    assert result.error is not None and result.error.type == "ValueError"
    assert "unknown JSON Schema type 'strng' at $.items.type" in result.error.message


@pytest.mark.parametrize(
    ("text", "schema", "passed"),
    [
        ("true", {"enum": [1]}, False),  # JSON true is not the number 1 (Python's True == 1 is)
        ("1", {"const": True}, False),
        ("[true]", {"const": [1]}, False),
        ("1.0", {"enum": [1]}, True),  # 1.0 and 1 are the same JSON number
        ("3.0", {"type": "integer"}, True),  # draft 6 on: an integer is a value with no fractional part
        ("3.5", {"type": "integer"}, False),
    ],
)
def test_json_enum_and_const_tell_booleans_from_numbers(text: str, schema: dict[str, Any], passed: bool) -> None:
    # by hand, from the JSON Schema validation spec (enum/const use JSON equality; integer since draft 6)
    assert run_check(text, {"type": "json", "schema": schema})[0] is passed


@pytest.mark.parametrize(
    ("text", "phrase"),
    [('He said "yes"', 'He said "yes"'), ("It is 'done'", "'done'"), ('"Any questions?"', "Any questions?")],
)
def test_ends_with_ignores_trailing_quotes_on_both_sides(text: str, phrase: str) -> None:
    assert run_check(text, {"type": "ends_with", "phrase": phrase})[0] is True


@pytest.mark.parametrize(
    ("text", "passed"),
    [("123 456", False), ("", False), ("ǅemal", False), ("東京", False), ("abc 123", True)],
)
def test_lowercase_needs_a_lower_case_letter_and_no_other_cased_one_as_in_ifeval(text: str, passed: bool) -> None:
    # IFEval's check is value.islower() (and English): false with no cased letter, and for titlecase "ǅ"
    assert run_check(text, {"type": "lowercase"})[0] is passed


@pytest.mark.parametrize(
    ("check", "problem"),
    [
        ({"type": "word_count", "min": "ten"}, "min: Input should be a valid integer, got 'ten'"),
        ({"type": "sentence_count", "exactly": "3"}, "exactly: Input should be a valid integer, got '3'"),
        ({"type": "word_count", "min": True}, "min: Input should be a valid integer, got True"),
        ({"type": "word_count", "min": 1.5}, "min: Input should be a valid integer, got 1.5"),
        ({"type": "word_count", "min": -5}, "min: Input should be greater than or equal to 0, got -5"),
        ({"type": "word_count"}, "needs min, max or exactly"),
        ({"type": "bullet_count", "min": 1, "exactly": 2}, "give exactly alone, or min and/or max"),
        ({"type": "paragraph_count", "min": 5, "max": 2}, "min 5 is above max 2: no answer could pass"),
        ({"type": "bullet_count", "min": 1, "numbered": "yes"}, "numbered: Input should be a valid boolean, got 'yes'"),
        ({"type": "ends_with", "phrase": 5}, "phrase: Input should be a valid string, got 5"),
        ({"type": "ends_with", "phrase": "  "}, "phrase: an empty phrase ends every answer"),
        ({"type": "include", "keywords": []}, "keywords must be a non-empty list of non-empty strings, got []"),
        ({"type": "exclude", "keywords": 5}, "keywords must be a non-empty list of non-empty strings, got 5"),
        ({"type": "json", "allow_fence": 1}, "allow_fence: Input should be a valid boolean, got 1"),
    ],
)
def test_a_check_parameter_of_the_wrong_kind_is_refused_when_the_scorer_is_built(
    check: dict[str, Any], problem: str
) -> None:
    """Only the names were checked: min = "ten" failed every sample with a TypeError, exactly = "3" failed
    every answer ("3 sentences, expected exactly 3"), min = -5 passed every one."""
    with pytest.raises(ConfigError) as caught:
        build_scorer(ScorerSpec(name="instructions", args={"checks": [check]}))
    assert str(caught.value) == f"task: scorer 'instructions': checks[0]: check {check['type']!r}: {problem}"


def test_one_keyword_may_be_given_as_a_string() -> None:
    assert run_check("a budget plan", {"type": "include", "keywords": "budget"}) == (True, "all keywords present")


async def test_a_sample_check_parameter_of_the_wrong_kind_is_that_sample_s_error_naming_it() -> None:
    """It used to be the raw TypeError of a comparison, naming neither the check nor the parameter."""
    pipeline = ScoringPipeline([ScorerSpec(name="instructions")])
    checks = [{"type": "lowercase"}, {"type": "word_count", "min": "ten"}]
    result = await pipeline.score("text", Sample(id="s", input="?", target="x", metadata={"checks": checks}))
    assert result.error is not None and result.final is None
    assert result.error.message == (
        "instructions: metadata.checks[1]: check 'word_count': min: Input should be a valid integer, got 'ten'"
    )


def test_a_check_parameter_of_the_wrong_kind_in_a_task_spec_stops_the_run_with_one_line_and_exit_2(
    cli: Callable[..., Any], task_root: TaskRoot
) -> None:
    spec = task_root.task(
        "badcheck",
        'name = "badcheck"\ntemplate = "plain.jinja2"\n[dataset]\npath = "data/adder.jsonl"\n'
        '[[scorers]]\nname = "instructions"\nargs = { checks = [ { type = "word_count", min = "ten" } ] }\n',
    )
    result = cli("run", "--task", spec, "--model", "mock/m", "--output-dir", task_root.root / "out", "--quiet")
    assert result.code == 2 and len(result.err.strip().splitlines()) == 1, result.err
    assert f"{spec}:5: scorer 'instructions': checks[0]: check 'word_count': min: Input should be a valid integer" in (
        result.err
    )


def test_a_whole_number_written_as_a_float_is_a_count() -> None:
    """pandas writes a column of counts with a gap as floats (min: 300.0, max: null): such checks scored before
    the values were checked, and must go on doing so."""
    assert run_check("a b c", {"type": "word_count", "min": 3.0, "max": None}) == (True, "3 words, expected at least 3")


def test_json_nested_too_deeply_to_read_fails_the_check_instead_of_erring() -> None:
    # before: RecursionError, a scoring error for the record rather than a failed check
    assert run_check("[" * 100_000, {"type": "json"}) == (False, "not JSON: nested too deeply to read")


@pytest.mark.parametrize(
    ("text", "value"), [("NaN", "NaN"), ('{"a": Infinity}', "Infinity"), ("[-Infinity]", "-Infinity")]
)
def test_nan_and_infinity_are_not_json(text: str, value: str) -> None:
    # before: "valid JSON" (Python's json reads them; RFC 8259 has no such values)
    assert run_check(text, {"type": "json"}) == (False, f"not JSON: {value} is no JSON value")
