"""Where a validation error is: pydantic's location without the names of the union members it tried.

pydantic reports one error per member of a union, its location the union's place followed by the member's name
(``input.str``, ``input.list[str]``, ``input.constrained-str``, a model class's name). A key of the data can have
such a name too (an axis called ``int``), so ``first_problem`` and the scorer-argument messages tell them apart
by the errors' shape, not by the name.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from eval_harness.errors import ConfigError
from eval_harness.scorers import build_scorer
from eval_harness.types import ScorerSpec, first_problem


class Point(BaseModel):
    x: int
    y: str


class Other(BaseModel):
    z: int


def _first_place(kind: Any, value: Any) -> str:
    with pytest.raises(ValidationError) as caught:
        TypeAdapter(kind).validate_python(value)
    return first_problem(caught.value)[0]


@pytest.mark.parametrize("key", ["int", "float", "str", "bool", "bytes", "none", "level[2]", "list[str]"])
def test_the_only_bad_key_of_a_table_is_kept_whatever_its_name(key: str) -> None:
    assert _first_place(dict[str, float], {key: "high"}) == key


def test_two_bad_keys_named_like_types_are_both_kept() -> None:
    assert _first_place(dict[str, float], {"int": "high", "float": "low"}) == "int"


def test_two_keys_given_the_same_small_value_are_not_taken_for_union_members() -> None:
    # Python holds one object for 1, so only the way each key rejects it tells keys from members
    assert _first_place(dict[str, str], {"int": 1, "float": 1}) == "int"


def test_a_key_named_like_a_type_keeps_its_name_and_loses_the_member_tried_under_it() -> None:
    assert _first_place(dict[str, str | list[str]], {"str": 3}) == "str"


def test_fields_missing_under_a_key_named_like_a_type_are_named_under_it() -> None:
    assert _first_place(dict[str, Point], {"str": {}}) == "str.x"


@pytest.mark.parametrize(
    ("kind", "value", "place"),
    [
        (Annotated[str, Field(min_length=2)] | list[str], "a", "v"),
        (Point | str, 3, "v"),
        (Point | str, {"x": "one", "y": "two"}, "v.x"),
        (Point | Other, {"x": "one"}, "v.x"),
    ],
    ids=["constrained-str", "model-or-str", "a-field-of-the-model-member", "two-models"],
)
def test_the_union_member_tried_is_left_out_whatever_pydantic_calls_it(kind: Any, value: Any, place: str) -> None:
    assert _first_place(dict[str, kind], {"v": value}) == place


def test_members_that_reject_a_value_alike_are_left_out_and_the_key_above_them_kept() -> None:
    assert _first_place(dict[str, list[int] | list[str]], {"int": 3}) == "int"


def _scorer_problem(args: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        build_scorer(ScorerSpec(name="rubric_judge", args={"rubric": "r.jinja2", **args}), where="t.toml")
    return str(caught.value).removeprefix("t.toml: scorer 'rubric_judge': ")


def test_a_scorer_argument_of_no_member_of_its_union_is_named_once_with_each_alternative() -> None:
    assert _scorer_problem({"criteria": 5}) == "criteria: Input should be a valid dictionary or a valid list (got 5)"


@pytest.mark.parametrize(
    ("criteria", "problem"),
    [
        (
            {"accuracy": 3},
            "criteria.accuracy: Input should be a valid string (got 3), or criteria: Input should be a valid list",
        ),
        (
            ["clarity", 3],
            "criteria: Input should be a valid dictionary, or criteria.1: Input should be a valid string (got 3)",
        ),
    ],
)
def test_alternatives_at_different_places_of_a_scorer_argument_are_joined_by_or(criteria: object, problem: str) -> None:
    assert _scorer_problem({"criteria": criteria}) == problem


def test_problems_of_one_member_are_joined_by_a_semicolon_and_the_other_member_by_or() -> None:
    # both values must be fixed for the table to do, or the whole argument made a list
    assert _scorer_problem({"criteria": {"accuracy": 3, "clarity": 4}}) == (
        "criteria.accuracy: Input should be a valid string (got 3); "
        "criteria.clarity: Input should be a valid string (got 4), or criteria: Input should be a valid list"
    )


def test_two_hyphenated_keys_given_the_same_small_value_keep_their_keys() -> None:
    """Python holds one object for 5 and for "x", so two keys rejecting it alike looked like union members
    unless one was an identifier: an axis called multi-step lost its name from the message."""
    assert _first_place(dict[str, Annotated[float, Field(ge=0, le=1)]], {"multi-step": 5, "long-context": 5}) == (
        "multi-step"
    )
    assert _first_place(dict[str, float], {"multi-step": "x", "long context": "x"}) == "multi-step"


def test_two_keys_shaped_like_pydantic_s_words_but_not_its_names_keep_their_keys() -> None:
    # function-calling is an axis name, not pydantic's function-after[...]
    assert _first_place(dict[str, float], {"function-calling": "x", "function-chaining": "x"}) == "function-calling"


def test_keys_named_like_a_constrained_type_but_not_one_keep_their_keys() -> None:
    assert _first_place(dict[str, float], {"constrained-decoding": "x", "constrained-beam": "x"}) == (
        "constrained-decoding"
    )
