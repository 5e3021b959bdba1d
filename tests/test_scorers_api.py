"""The public Python API of eval_harness.scorers: names and signatures other code imports."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import eval_harness.scorers as scorers
from eval_harness.scorers import SCORERS, choice_letter, exact_match, rouge, token_f1

PUBLIC = {
    "SCORERS",
    "FunctionScorer",
    "Scorer",
    "ScoringPipeline",
    "ScoringResult",
    "SkipScore",
    "build_scorer",
    "choice_letter",
    "combine",
    "exact_match",
    "register_scorer",
    "rouge",
    "token_f1",
}


def test_all_equals_the_public_names() -> None:
    assert set(scorers.__all__) == PUBLIC and len(scorers.__all__) == len(PUBLIC)
    assert all(hasattr(scorers, name) for name in scorers.__all__)


def test_public_functions_keep_their_signatures() -> None:
    signatures = {
        name: str(inspect.signature(getattr(scorers, name)))
        for name in ("exact_match", "choice_letter", "token_f1", "rouge")
    }
    assert signatures == {
        "exact_match": "(prediction: 'str', reference: 'str', mode: 'str' = 'strict') -> 'float'",
        "choice_letter": "(response: 'str', letters: 'str' = 'ABCD') -> 'str | None'",
        "token_f1": "(prediction: 'str', reference: 'str') -> 'float'",
        "rouge": "(prediction: 'str', reference: 'str', use_stemmer: 'bool' = False) -> 'dict[str, dict[str, float]]'",
    }


def test_every_scorer_family_is_registered_through_entry_points() -> None:
    assert set(SCORERS.names()) >= {
        "exact_match", "choice", "token_f1", "squad_em", "rouge", "faithfulness", "instructions", "composite",
        "embedding_similarity", "rubric_judge", "pairwise_judge",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: exact_match(None, "a"), "exact_match: prediction must be a string, got NoneType"),  # type: ignore[arg-type]
        (lambda: exact_match(42, "42", "numeric"), "exact_match: prediction must be a string, got int"),  # type: ignore[arg-type]
        (lambda: token_f1("a", None), "token_f1: reference must be a string, got NoneType"),  # type: ignore[arg-type]
        (lambda: rouge(None, "x"), "rouge: prediction must be a string, got NoneType"),  # type: ignore[arg-type]
        (lambda: choice_letter(None), "choice_letter: response must be a string, got NoneType"),  # type: ignore[arg-type]
    ],
)
def test_the_public_scorer_functions_name_an_argument_that_is_not_text(call: Any, message: str) -> None:
    # api-s30 8: they failed deep inside ("'NoneType' object has no attribute 'strip'")
    with pytest.raises(TypeError) as raised:
        call()
    assert str(raised.value) == message
