"""ROUGE-1, ROUGE-2 and ROUGE-L with the tokenisation of Google's ``rouge-score`` package.

Tokens: lower-case, every run of characters outside ``[a-z0-9]`` is a separator (so accented and
non-Latin letters separate tokens, exactly as in rouge-score); with ``use_stemmer`` tokens longer than
three characters go through NLTK's Porter stemmer. ROUGE-L uses a bit-parallel LCS (Allison-Dix /
Hyyrö) on Python integers: one pass over the shorter text with a few big-integer operations per token,
instead of the quadratic table, so 200-word pairs score in tens of microseconds.

That tokenisation gives non-Latin text no tokens, so a Russian or Chinese summary scores 0 whatever it says.
The scorer therefore refuses (a scoring error naming the fix) a reference whose letters are mostly outside
a–z, and offers ``tokenizer = "unicode"``: NFKC, case-folded, tokens are runs of letters and digits of any
script, and each Chinese/Japanese ideograph or kana is a token of its own (those scripts write no spaces
between words; a character per token is the usual way to score them without a segmenter).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from eval_harness.scorers.answers import read_answer
from eval_harness.scorers.base import FunctionScorer, Scorer, register_scorer, require_text
from eval_harness.scorers.scripts import mostly_non_latin, word_tokens
from eval_harness.types import Sample, Score

VARIANTS = ("rouge1", "rouge2", "rougeL")
MEASURES = ("precision", "recall", "fmeasure")

_NON_ALPHANUMERIC = re.compile(r"[^a-z0-9]+")
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")
TOKENIZERS = ("rouge-score", "unicode")
_STEMS: dict[str, str] = {}
_stemmer: Any = None


def porter_stem(token: str) -> str:
    """NLTK's Porter stem of a lower-case token (cached; nltk imported on first use)."""
    global _stemmer
    stem = _STEMS.get(token)
    if stem is None:
        if _stemmer is None:
            try:
                from nltk.stem import porter
            except ImportError:  # pragma: no cover - nltk is a declared dependency
                raise ValueError("use_stemmer needs nltk: pip install nltk") from None
            _stemmer = porter.PorterStemmer()
        stem = _stemmer.stem(token)
        if len(_STEMS) < 200_000:  # bounded: a long run over open vocabulary must not grow without limit
            _STEMS[token] = stem
    return stem


def tokenize(text: str, use_stemmer: bool = False) -> list[str]:
    """rouge-score's ``tokenize``: lower-case, split on non-alphanumerics, optionally Porter-stem."""
    tokens = _NON_ALPHANUMERIC.sub(" ", text.lower()).split()
    if use_stemmer:
        tokens = [porter_stem(t) if len(t) > 3 else t for t in tokens]
        tokens = [t for t in tokens if _VALID_TOKEN.match(t)]
    return tokens


def unicode_tokenize(text: str, use_stemmer: bool = False) -> list[str]:
    """Tokens of any script: NFKC and case-folded, runs of letters and digits, each CJK ideograph or kana
    alone; with ``use_stemmer`` the Porter stemmer (an English one) applies to a-z tokens longer than three."""
    tokens = word_tokens(unicodedata.normalize("NFKC", text).casefold())
    if use_stemmer:
        tokens = [porter_stem(t) if len(t) > 3 and _VALID_TOKEN.match(t) else t for t in tokens]
    return tokens


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences (bit-parallel)."""
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    masks: dict[str, int] = {}
    for position, token in enumerate(a):
        masks[token] = masks.get(token, 0) | (1 << position)
    full = (1 << len(a)) - 1
    row = full
    for token in b:
        match = masks.get(token)
        if match:
            common = row & match
            row = (row + common) | (row - common)
    return len(a) - (row & full).bit_count()


def _prf(overlap: int, predicted: int, expected: int) -> dict[str, float]:
    precision = overlap / predicted if predicted else 0.0
    recall = overlap / expected if expected else 0.0
    fmeasure = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return {"precision": precision, "recall": recall, "fmeasure": fmeasure}


def _ngram_overlap(predicted: list[str], expected: list[str], n: int) -> dict[str, float]:
    if n == 1:
        p_grams: Counter[Any] = Counter(predicted)
        e_grams: Counter[Any] = Counter(expected)
    else:
        p_grams = Counter(zip(*(predicted[i:] for i in range(n)), strict=False))
        e_grams = Counter(zip(*(expected[i:] for i in range(n)), strict=False))
    overlap = sum((p_grams & e_grams).values())
    return _prf(overlap, sum(p_grams.values()), sum(e_grams.values()))


def _lcs_scores(predicted: list[str], expected: list[str]) -> dict[str, float]:
    if not predicted or not expected:
        return _prf(0, 0, 0)
    return _prf(lcs_length(predicted, expected), len(predicted), len(expected))


_COMPUTE: dict[str, Callable[[list[str], list[str]], dict[str, float]]] = {
    "rouge1": lambda p, e: _ngram_overlap(p, e, 1),
    "rouge2": lambda p, e: _ngram_overlap(p, e, 2),
    "rougeL": _lcs_scores,
}


def rouge_tokens(
    predicted: list[str], expected: list[str], variants: Sequence[str] = VARIANTS
) -> dict[str, dict[str, float]]:
    """ROUGE of already tokenised texts, for callers that reuse tokens across references."""
    return {variant: _COMPUTE[variant](predicted, expected) for variant in variants}


def rouge(prediction: str, reference: str, use_stemmer: bool = False) -> dict[str, dict[str, float]]:
    """ROUGE-1, ROUGE-2 and ROUGE-L of ``prediction`` against ``reference``.

    Returns ``{"rouge1"|"rouge2"|"rougeL": {"precision": p, "recall": r, "fmeasure": f}}``, the values
    rouge-score's ``RougeScorer(..., use_stemmer).score(reference, prediction)`` gives. The strings are
    compared as given: it is the registered ``rouge`` scorer that reads an output's ``<answer>`` tag first.
    """
    require_text("rouge", prediction=prediction, reference=reference)
    return rouge_tokens(tokenize(prediction, use_stemmer), tokenize(reference, use_stemmer))


@register_scorer("rouge")
def rouge_scorer(
    variant: str = "rougeL", measure: str = "fmeasure", use_stemmer: bool = False, tokenizer: str = "rouge-score"
) -> Scorer:
    """One ROUGE variant and measure of the output's answer (its last non-empty ``<answer>`` tag, else the whole
    output) against the sample's best reference.

    As rouge-score's ``score_multi``, the best reference is the one with the highest F-measure (the first on
    ties), whatever ``measure`` reports: the best recall over references would let a two-word reference give
    recall 1.0. ``tokenizer`` is ``"rouge-score"`` (the package's, a-z and 0-9 only: scores comparable with
    published ones; a reference mostly in another script is a scoring error that names the other) or
    ``"unicode"`` (letters of any script, see the module's docstring)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}")
    if measure not in MEASURES:
        raise ValueError(f"unknown measure {measure!r}; use one of {', '.join(MEASURES)}")
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer {tokenizer!r}; use one of {', '.join(TOKENIZERS)}")
    split = unicode_tokenize if tokenizer == "unicode" else tokenize

    def score(output: str, sample: Sample) -> Score:
        if tokenizer == "rouge-score" and all(mostly_non_latin(reference) for reference in sample.targets):
            raise ValueError(
                "the reference is mostly in a non-Latin script, which rouge-score's tokenisation (a-z, 0-9) "
                'drops, so every answer would score 0; set tokenizer = "unicode" in the scorer\'s args'
            )
        answer = read_answer(output)
        predicted = split(answer.text, use_stemmer)
        best: dict[str, float] | None = None
        for reference in sample.targets:
            scores = rouge_tokens(predicted, split(reference, use_stemmer), (variant,))[variant]
            if best is None or scores["fmeasure"] > best["fmeasure"]:
                best = scores
        assert best is not None
        detail = f"P {best['precision']:.3f} R {best['recall']:.3f} F {best['fmeasure']:.3f}"
        return Score(
            value=best[measure],
            answer=answer.extracted,
            explanation=f"{variant} {measure} {best[measure]:.3f} ({detail}; best of {len(sample.targets)})"
            + answer.note,
            metadata={"precision": best["precision"], "recall": best["recall"], "fmeasure": best["fmeasure"]},
        )

    return FunctionScorer(score)


__all__ = [
    "MEASURES",
    "TOKENIZERS",
    "VARIANTS",
    "lcs_length",
    "porter_stem",
    "rouge",
    "rouge_scorer",
    "rouge_tokens",
    "tokenize",
    "unicode_tokenize",
]
