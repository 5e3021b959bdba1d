"""Token F1 and exact match with the normalisation of the official SQuAD v1.1 evaluation script.

Normalisation: lower-case, drop ASCII punctuation, drop the articles a/an/the, fold whitespace. As in the
v1.1 script, F1 is 0 when either side has no tokens left (even when both are empty), while exact match
compares the normalised strings, so two empty answers match.
"""

from __future__ import annotations

import re
import string
from collections import Counter

from eval_harness.scorers.base import FunctionScorer, Scorer, best_reference, register_scorer
from eval_harness.types import Sample, Score

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 ``normalize_answer``: lower, remove punctuation, remove articles, fold whitespace."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def token_f1(prediction: str, reference: str) -> float:
    """Harmonic mean of token precision and recall after SQuAD normalisation (bag of tokens)."""
    predicted = normalize_answer(prediction).split()
    expected = normalize_answer(reference).split()
    common = Counter(predicted) & Counter(expected)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(expected)
    return 2 * precision * recall / (precision + recall)


def squad_exact_match(prediction: str, reference: str) -> float:
    """1.0 when the SQuAD-normalised strings are equal."""
    return float(normalize_answer(prediction) == normalize_answer(reference))


@register_scorer("token_f1")
def token_f1_scorer() -> Scorer:
    """SQuAD token F1, the maximum over the sample's references."""

    def score(output: str, sample: Sample) -> Score:
        value, reference = best_reference(sample.targets, lambda r: token_f1(output, r))
        return Score(
            value=value,
            answer=normalize_answer(output),
            explanation=f"token F1 {value:.3f} against {reference!r} (best of {len(sample.targets)})",
        )

    return FunctionScorer(score)


@register_scorer("squad_em")
def squad_exact_match_scorer() -> Scorer:
    """SQuAD exact match after normalisation, the maximum over the sample's references."""

    def score(output: str, sample: Sample) -> Score:
        value, reference = best_reference(sample.targets, lambda r: squad_exact_match(output, r))
        verdict = f"matches {reference!r}" if value else f"matches none of {len(sample.targets)} reference(s)"
        return Score(value=value, answer=normalize_answer(output), explanation=f"normalised answer {verdict}")

    return FunctionScorer(score)
