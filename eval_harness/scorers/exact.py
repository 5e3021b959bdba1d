"""Exact match in three modes: strict, lenient (case/punctuation/whitespace folded) and numeric."""

from __future__ import annotations

import math
import re
import unicodedata

from eval_harness.scorers.base import FunctionScorer, Scorer, register_scorer
from eval_harness.types import Sample, Score

MODES = ("strict", "lenient", "numeric")

_NUMBER = re.compile(
    r"(?<![\w.])[-−]?\s?[$€£]?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:\s?/\s?\d+)?\s?%?(?!\w)"
    r"|(?<![\w.])[-−]?[$€£]?\.\d+%?"
)
_ANSWER_IS = re.compile(r"answer\s*(?:is|:)\s*[:\-]?\s*", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_ONES = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
    "ninety": 90,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_WORD_NUMBER = re.compile(
    r"\b(?:(?:minus|negative)\s+)?(?:(?:" + "|".join([*_ONES, *_TENS, *_SCALES]) + r")(?:[\s-]+(?:and[\s-]+)?)?)+\b",
    re.IGNORECASE,
)


def _lenient(text: str) -> str:
    folded = "".join(
        " " if unicodedata.category(ch).startswith("P") else ch for ch in unicodedata.normalize("NFKC", text)
    )
    return " ".join(folded.casefold().split())


def _number_value(token: str) -> float | None:
    """The value of one numeric token: separators, currency, percent, unicode minus and a/b fractions."""
    text = token.replace("−", "-").replace(",", "").replace(" ", "")
    text = text.strip("$€£%")
    text = text.replace("$", "").replace("€", "").replace("£", "")
    try:
        if "/" in text:
            numerator, denominator = text.split("/", 1)
            return float(numerator) / float(denominator) if float(denominator) else None
        return float(text)
    except ValueError:
        return None


def _words_value(phrase: str) -> float | None:
    """``forty-two`` → 42, ``one hundred and five`` → 105, ``minus three`` → -3."""
    words = re.split(r"[\s-]+", phrase.lower().strip())
    sign = 1
    if words and words[0] in ("minus", "negative"):
        sign, words = -1, words[1:]
    total = current = 0
    seen = False
    for word in words:
        if word == "and" or not word:
            continue
        if word in _ONES:
            current += _ONES[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = (current or 1) * 100
        elif word in _SCALES:
            total += (current or 1) * _SCALES[word]
            current = 0
        else:
            return None
        seen = True
    return sign * (total + current) if seen else None


def _numbers_in(text: str) -> list[tuple[int, float]]:
    """(position, value) of every number written in digits or in words."""
    found = [(m.start(), v) for m in _NUMBER.finditer(text) if (v := _number_value(m.group())) is not None]
    for match in _WORD_NUMBER.finditer(text):
        value = _words_value(match.group())
        if value is not None:
            found.append((match.start(), value))
    return sorted(found)


def extract_number(text: str) -> float | None:
    """The predicted number: after the last '####', else after the last 'answer is', else \\boxed{},
    else the last number in the text."""
    for marker in ("####",):
        index = text.rfind(marker)
        if index != -1:
            numbers = _numbers_in(text[index + len(marker) :])
            if numbers:
                return numbers[0][1]
    answer_is = list(_ANSWER_IS.finditer(text))
    if answer_is:
        numbers = _numbers_in(text[answer_is[-1].end() :])
        if numbers:
            return numbers[0][1]
    boxed = _BOXED.findall(text)
    if boxed:
        numbers = _numbers_in(boxed[-1])
        if numbers:
            return numbers[-1][1]
    numbers = _numbers_in(text)
    return numbers[-1][1] if numbers else None


def _format_number(value: float | None) -> str:
    if value is None:
        return "no number"
    return str(int(value)) if value.is_integer() else f"{value:g}"


def exact_match(prediction: str, reference: str, mode: str = "strict") -> float:
    """1.0 when ``prediction`` matches ``reference`` under ``mode`` (strict | lenient | numeric), else 0.0."""
    if mode == "strict":
        return float(prediction.strip() == reference.strip())
    if mode == "lenient":
        return float(_lenient(prediction) == _lenient(reference))
    if mode == "numeric":
        predicted, expected = extract_number(prediction), extract_number(reference)
        if predicted is None or expected is None:
            return 0.0
        return float(math.isclose(predicted, expected, rel_tol=1e-9, abs_tol=1e-9))
    raise ValueError(f"unknown exact_match mode {mode!r}; use one of {', '.join(MODES)}")


@register_scorer("exact_match")
def exact_match_scorer(mode: str = "strict") -> Scorer:
    """Exact match against any of the sample's targets."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")

    def score(output: str, sample: Sample) -> Score:
        best = max(exact_match(output, target, mode) for target in sample.targets)
        if mode == "numeric":
            predicted = _format_number(extract_number(output))
            explanation = f"extracted {predicted}; expected {' or '.join(sample.targets)}"
            return Score(value=best, answer=predicted, explanation=explanation)
        verdict = "matches" if best else "does not match"
        return Score(value=best, explanation=f"{mode}: output {verdict} {' or '.join(sample.targets)!r}")

    return FunctionScorer(score)
