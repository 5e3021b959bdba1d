"""Token F1 and exact match with the normalisation of the official SQuAD v1.1 evaluation script.

Normalisation: lower-case, drop ASCII punctuation, drop the articles a/an/the, fold whitespace. As in the
v1.1 script, F1 is 0 when either side has no tokens left (even when both are empty), while exact match
compares the normalised strings, so two empty answers match. The registered scorers read the output's last
non-empty ``<answer>`` tag when it has one (``answers.read_answer``); ``token_f1`` and ``squad_exact_match``
compare the strings they are given, as the script does.

Whitespace tokens leave a Chinese or Japanese answer one token, scored all or nothing, so the scorers refuse a
reference holding ideographs or kana (a scoring error naming the fix) and offer ``tokenizer = "unicode"``, a
normalisation in the style of MLQA's multilingual script: NFKC and case-folded, punctuation of every script
dropped (not only ASCII's: «», 。, ¿), English articles dropped, and each ideograph or kana a token of its own.
It folds more than MLQA's script (which lower-cases without NFKC and drops each language's own articles), so
values can differ from that script's.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable

from eval_harness.scorers.answers import read_answer
from eval_harness.scorers.base import FunctionScorer, Scorer, best_reference, register_scorer, require_text
from eval_harness.scorers.scripts import mostly_ideographs, split_ideographs
from eval_harness.types import Sample, Score

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ASCII_PUNCTUATION = frozenset(string.punctuation)  # with $ + < = > ^ ` | ~, symbols to Unicode, as MLQA drops


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 ``normalize_answer``: lower, remove punctuation, remove articles, fold whitespace."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def normalize_unicode(text: str) -> str:
    """``normalize_answer`` for any script: NFKC, case-folded, Unicode punctuation dropped, articles dropped,
    tokens separated by single spaces with each ideograph or kana a token of its own."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = "".join(c for c in folded if not (unicodedata.category(c).startswith("P") or c in _ASCII_PUNCTUATION))
    return " ".join(t for word in _ARTICLES.sub(" ", kept).split() for t in split_ideographs(word))


TOKENIZERS: dict[str, Callable[[str], str]] = {"squad": normalize_answer, "unicode": normalize_unicode}


def token_f1(prediction: str, reference: str) -> float:
    """Harmonic mean of token precision and recall after SQuAD normalisation (bag of tokens)."""
    require_text("token_f1", prediction=prediction, reference=reference)
    return normalized_f1(prediction, reference, normalize_answer)


def normalized_f1(prediction: str, reference: str, normalize: Callable[[str], str]) -> float:
    """Token F1 after ``normalize`` (a function of :data:`TOKENIZERS`)."""
    predicted = normalize(prediction).split()
    expected = normalize(reference).split()
    common = Counter(predicted) & Counter(expected)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(expected)
    return 2 * precision * recall / (precision + recall)


def squad_exact_match(prediction: str, reference: str, normalize: Callable[[str], str] = normalize_answer) -> float:
    """1.0 when the SQuAD-normalised strings are equal."""
    return float(normalize(prediction) == normalize(reference))


def _normalizer(tokenizer: str) -> Callable[[str], str]:
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; use one of {', '.join(TOKENIZERS)}")
    return TOKENIZERS[tokenizer]


def _refuse_unsplit_scripts(tokenizer: str, sample: Sample) -> None:
    if tokenizer == "squad" and all(mostly_ideographs(reference) for reference in sample.targets):
        raise ValueError(
            "the reference holds Chinese/Japanese characters, which SQuAD's whitespace tokens leave one token "
            '(an answer scores all or nothing); set tokenizer = "unicode" in the scorer\'s args'
        )


@register_scorer("token_f1")
def token_f1_scorer(tokenizer: str = "squad") -> Scorer:
    """SQuAD token F1 of the output's answer (its last non-empty ``<answer>`` tag, else the whole output), the
    maximum over the sample's references; ``tokenizer`` "squad" (the v1.1 script's) or "unicode" (MLQA-style, see
    the module's docstring)."""
    normalize = _normalizer(tokenizer)

    def score(output: str, sample: Sample) -> Score:
        _refuse_unsplit_scripts(tokenizer, sample)
        answer = read_answer(output)
        value, reference = best_reference(sample.targets, lambda r: normalized_f1(answer.text, r, normalize))
        return Score(
            value=value,
            answer=normalize(answer.text),
            explanation=f"token F1 {value:.3f} against {reference!r} (best of {len(sample.targets)}){answer.note}",
        )

    return FunctionScorer(score)


@register_scorer("squad_em")
def squad_exact_match_scorer(tokenizer: str = "squad") -> Scorer:
    """SQuAD exact match after normalisation of the output's answer (as for ``token_f1``), the maximum over the
    sample's references (``tokenizer`` as for ``token_f1``)."""
    normalize = _normalizer(tokenizer)

    def score(output: str, sample: Sample) -> Score:  # whole strings compared: any script is fine
        answer = read_answer(output)
        value, reference = best_reference(sample.targets, lambda r: squad_exact_match(answer.text, r, normalize))
        verdict = f"matches {reference!r}" if value else f"matches none of {len(sample.targets)} reference(s)"
        return Score(
            value=value, answer=normalize(answer.text), explanation=f"normalised answer {verdict}{answer.note}"
        )

    return FunctionScorer(score)


__all__ = [
    "TOKENIZERS",
    "normalize_answer",
    "normalize_unicode",
    "normalized_f1",
    "squad_exact_match",
    "squad_exact_match_scorer",
    "token_f1",
    "token_f1_scorer",
]
