"""Exact match in three modes: strict, lenient (case/punctuation/whitespace folded) and numeric.

Numeric mode reads the predicted number the way a grader of worked solutions would: the number after the
last ``####``, else after the last "answer is" / "answer:", else inside the last ``\\boxed{}``, else the
last number in the text. Numbers may carry signs, currency symbols, thousands separators, decimals,
fractions, percent signs, attached units ("260km") or be written in words ("forty-two").
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass

from eval_harness.scorers.base import FunctionScorer, Scorer, register_scorer
from eval_harness.types import Sample, Score

MODES = ("strict", "lenient", "numeric")

_NUMBER = re.compile(
    r"(?<![\w.,])(?P<sign>[-−+]?)[$€£¥]?(?P<int>\d{1,3}(?:,\d{3})+|\d+)?(?P<frac>\.\d+)?"
    r"(?:\s?/\s?(?P<den>\d+))?(?P<pct>\s?%)?(?!\d)"
)
_MARKERS = (
    re.compile(r"####"),
    re.compile(r"\banswer\b\s*(?:is\b|:|=)\s*:?", re.IGNORECASE),
)
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
_SCALES = {"thousand": 1_000, "million": 1_000_000, "billion": 1_000_000_000}
_NUMBER_WORDS = [*_ONES, *_TENS, "hundred", *_SCALES]
_WORD_NUMBER = re.compile(
    r"\b(?:(?:minus|negative)\s+)?(?:"
    + "|".join(_NUMBER_WORDS)
    + r")(?:(?:[\s-]+(?:and\s+)?)(?:"
    + "|".join(_NUMBER_WORDS)
    + r"))*\b(?:\s?(?P<pct>%|percent\b))?",
    re.IGNORECASE,
)
# "the one", "no one", "which one": a pronoun, not the number 1.
_PRONOUN_ONE = re.compile(r"\b(?:the|this|that|no|any|each|every|which|another|someone|a)\s+$", re.IGNORECASE)


@dataclass(frozen=True)
class Number:
    """A number read from text; ``percent`` remembers a trailing % so 50% can equal 0.5 as well as 50."""

    value: float
    percent: bool = False
    position: int = 0

    def __str__(self) -> str:
        text = str(int(self.value)) if self.value.is_integer() and abs(self.value) < 1e15 else f"{self.value:g}"
        return f"{text}%" if self.percent else text


# ASCII punctuation is exactly what unicodedata calls P* among ASCII characters, so plain-ASCII text (most
# answers) can skip the per-character category lookup, which dominates the cost of a lenient match.
_ASCII_PUNCTUATION = str.maketrans({ch: " " for ch in map(chr, range(128)) if unicodedata.category(ch)[0] == "P"})


def _lenient(text: str) -> str:
    if text.isascii():
        return " ".join(text.translate(_ASCII_PUNCTUATION).casefold().split())
    folded = "".join(
        " " if unicodedata.category(ch).startswith("P") else ch for ch in unicodedata.normalize("NFKC", text)
    )
    return " ".join(folded.casefold().split())


def _digits_number(match: re.Match[str]) -> Number | None:
    whole, fraction = match.group("int"), match.group("frac")
    if whole is None and fraction is None:
        return None
    value = float((whole or "0").replace(",", "") + (fraction or ""))
    denominator = match.group("den")
    if denominator is not None:
        if int(denominator) == 0:
            return None
        value /= int(denominator)
    if match.group("sign") in ("-", "−"):
        value = -value
    return Number(value, match.group("pct") is not None, match.start())


def _words_value(phrase: str) -> float | None:
    """``forty-two`` → 42, ``one hundred and five`` → 105, ``minus three`` → -3."""
    words = [w for w in re.split(r"[\s-]+", phrase.lower().strip()) if w and w != "and"]
    sign = 1
    if words and words[0] in ("minus", "negative"):
        sign, words = -1, words[1:]
    total = current = 0
    for word in words:
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
    return float(sign * (total + current)) if words else None


def numbers_in(text: str) -> list[Number]:
    """Every number in ``text``, written in digits or in words, in reading order."""
    found = [n for m in _NUMBER.finditer(text) if (n := _digits_number(m)) is not None]
    for match in _WORD_NUMBER.finditer(text):
        phrase = text[match.start() : match.start("pct") if match.group("pct") else match.end()]
        if phrase.strip().lower() == "one" and _PRONOUN_ONE.search(text[: match.start()]):
            continue
        value = _words_value(phrase)
        if value is not None:
            found.append(Number(value, match.group("pct") is not None, match.start()))
    return sorted(found, key=lambda n: n.position)


def extract_number(text: str) -> Number | None:
    """The predicted number: after the last '####', else after the last 'answer is'/'answer:', else in the
    last \\boxed{}, else the last number in the text."""
    for marker in _MARKERS:
        matches = list(marker.finditer(text))
        if matches:
            after = numbers_in(text[matches[-1].end() :])
            if after:
                return after[0]
    boxed = _BOXED.findall(text)
    if boxed:
        inside = numbers_in(boxed[-1])
        if inside:
            return inside[-1]
    numbers = numbers_in(text)
    return numbers[-1] if numbers else None


def same_number(predicted: Number, expected: Number, tolerance: float = 1e-9) -> bool:
    """Equal by value; a percentage also equals its fraction (50% == 0.5) when only one side has %."""

    def close(a: float, b: float) -> bool:
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=tolerance)

    if close(predicted.value, expected.value):
        return True
    if predicted.percent != expected.percent:
        if predicted.percent:
            return close(predicted.value / 100, expected.value)
        return close(predicted.value, expected.value / 100)
    return False


def exact_match(prediction: str, reference: str, mode: str = "strict") -> float:
    """1.0 when ``prediction`` matches ``reference`` under ``mode`` (strict | lenient | numeric), else 0.0.

    strict: identical after stripping outer whitespace. lenient: also equal after folding case,
    punctuation and runs of whitespace. numeric: the number read from the prediction (see
    ``extract_number``) equals the reference's by value.
    """
    if mode == "strict":
        return float(prediction.strip() == reference.strip())
    if mode == "lenient":
        return float(_lenient(prediction) == _lenient(reference))
    if mode == "numeric":
        predicted, expected = extract_number(prediction), extract_number(reference)
        if predicted is None or expected is None:
            return 0.0
        return float(same_number(predicted, expected))
    raise ValueError(f"unknown exact_match mode {mode!r}; use one of {', '.join(MODES)}")


@register_scorer("exact_match")
def exact_match_scorer(mode: str = "strict", tolerance: float = 1e-9) -> Scorer:
    """Exact match against any of the sample's targets; ``tolerance`` is the absolute slack of numeric mode."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    if tolerance < 0:
        raise ValueError("tolerance must be >= 0")

    def score(output: str, sample: Sample) -> Score:
        targets = sample.targets
        expected = " or ".join(map(repr, targets))
        if mode == "numeric":
            predicted = extract_number(output)
            if predicted is None:
                return Score(value=0.0, explanation=f"no number found in the output; expected {expected}")
            references = [n for t in targets if (n := extract_number(t)) is not None]
            if not references:
                return Score(value=0.0, answer=str(predicted), explanation=f"no number in the reference {expected}")
            hit = any(same_number(predicted, reference, tolerance) for reference in references)
            verdict = "equals" if hit else "differs from"
            return Score(value=float(hit), answer=str(predicted), explanation=f"read {predicted}; {verdict} {expected}")
        best = max([exact_match(output, target, mode) for target in targets])
        verdict = "matches" if best else "does not match"
        return Score(value=best, explanation=f"{mode}: output {verdict} {expected}")

    return FunctionScorer(score)
