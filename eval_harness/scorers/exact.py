"""Exact match in three modes: strict, lenient (case/punctuation/whitespace folded) and numeric.

Numeric mode reads the predicted number the way a grader of worked solutions would: the number after the
last ``####``, else after the last "answer is" / "answer:", else inside the last ``\\boxed{}``, else the
last number in the text. An answer stated as a calculation ("The answer is 9 × 2 = 18.") is read at its
result: the first number after the last "=" in that sentence or line. Numbers may carry signs, currency
symbols, thousands separators, decimals, fractions, percent signs, attached units ("260km"), be written in
words ("forty-two") or with a scale word ("$1.45 million" is 1450000).
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from dataclasses import dataclass
from decimal import Decimal

from eval_harness.scorers.answers import read_answer
from eval_harness.scorers.base import FunctionScorer, Scorer, register_scorer, require_text
from eval_harness.types import Sample, Score

MODES = ("strict", "lenient", "numeric")

# The lookahead demands a digit: every part after it is optional, and without it the pattern matched the empty
# string at every position of a text (a 400-word article: ~2,500 empty matches to throw away).
_NUMBER = re.compile(
    r"(?<![\w.,])(?=[-−+]?[$€£¥]?\.?\d)(?P<sign>[-−+]?)[$€£¥]?(?P<int>\d{1,3}(?:,\d{3})+|\d+)?(?P<frac>\.\d+)?"
    r"(?:\s?/\s?(?P<den>\d+)(?!\.\d))?(?P<pct>\s?%|\s?(?i:percent)\b)?(?!\d)"
)
_MARKERS = (
    re.compile(r"####"),
    re.compile(r"\banswer\b\s*(?:is\b|:|=)\s*:?", re.IGNORECASE),
)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
# Thousands separators other than the comma, between a digit and a group of three: LaTeX's "{,}" (a comma
# without the space math mode puts after one: "\boxed{1{,}600}") and thin space "\,", and the thin spaces of
# SI and French typesetting (U+2009, U+202F); read as commas. A plain space is not one: "3 100-page books".
_GROUP_SEPARATOR = re.compile(r"(?<=\d)(?:\{,\}|\\,|[\u2009\u202f])(?=\d{3}(?!\d))")
# After a number (and any closing brackets): an operator, so the number opens a calculation ("9 × 2 = 18",
# "(100/120)*48 = 40") rather than being a result.
_OPERATOR = re.compile(r"[)\]]*\s*(?:[-−+*/×÷=^]|x(?=\s*[$€£¥]?\d))")
# The end of the sentence or line an answer is stated in; a decimal point is followed by a digit, not a space.
_SENTENCE_END = re.compile(r"\n|[.!?](?=\s|$)")
_SCALE_AFTER = re.compile(r"\s*(thousand|million|billion)(?![-\w])", re.IGNORECASE)
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
# "One day, ..." opening a story, "One must ...": a determiner or a pronoun, not the number 1 — only where "One"
# opens a sentence or line ("It takes one day." states 1, and "can" is a noun as often: "one can of soup").
_OPENING_ONE_IDIOM = re.compile(
    r"\s+(?:day|night|morning|afternoon|evening|time|must|could|should|would|may|might|will)\b", re.IGNORECASE
)
# A sentence opens at the text's start, after a line break, or after its end mark (and any closing quote) and a
# space; an opening quote or bracket may stand before its first word (a story's line of speech: "One day, ...").
_SENTENCE_OPENS = re.compile(r"(?:^|[.!?][\"'”’)\]]*\s|\n)\s*[\"'“‘(\[«„]*$")
# "one's", "one another": a pronoun wherever it stands.
_PRONOUN_AFTER_ONE = re.compile(r"(?:['’]s\b|\s+another\b)", re.IGNORECASE)


@dataclass(frozen=True)
class Number:
    """A number read from text; ``percent`` remembers a trailing % so 50% can equal 0.5 as well as 50."""

    value: float
    percent: bool = False
    position: int = 0
    integer: int | None = None
    """The exact value of a number written as digits without a fraction: a float holds integers only to 2**53."""

    def __str__(self) -> str:
        if self.integer is not None:
            return f"{self.integer}%" if self.percent else str(self.integer)
        # 15 significant digits: every decimal a text can state that a float holds (12345.67, not :g's 12345.7)
        text = str(int(self.value)) if self.value.is_integer() and abs(self.value) < 1e15 else f"{self.value:.15g}"
        return f"{text}%" if self.percent else text


# ASCII punctuation is exactly what unicodedata calls P* among ASCII characters, so plain-ASCII text (most
# answers) can skip the per-character category lookup, which dominates the cost of a lenient match.
_ASCII_PUNCTUATION = str.maketrans({ch: " " for ch in map(chr, range(128)) if unicodedata.category(ch)[0] == "P"})
# A minus before a digit (not after a letter or digit: "1-2" is a range, "e-5" a word) and a % after a digit
# (spaces between dropped) belong to the number: folded away, "-5" and "5%" would match "5".
_ATTACHED = re.compile(r"(?<!\w)-(?=\.?\d)|(?<=\d)\s*%")


def _without_punctuation(text: str) -> str:
    if text.isascii():
        return text.translate(_ASCII_PUNCTUATION)
    return "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text)


def _lenient(text: str) -> str:
    """``text`` as lenient mode compares it (the rule is spelt out in ``exact_match``)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text).replace("\u2212", "-")  # U+2212 MINUS SIGN is a minus too
    if "-" in text or "%" in text:
        pieces: list[str] = []
        last = 0
        for match in _ATTACHED.finditer(text):
            pieces += [_without_punctuation(text[last : match.start()]), match.group().strip()]
            last = match.end()
        pieces.append(_without_punctuation(text[last:]))
        text = "".join(pieces)
    else:
        text = _without_punctuation(text)
    return " ".join(text.casefold().split())


def _digits_number(match: re.Match[str]) -> Number | None:
    whole, fraction = match.group("int"), match.group("frac")
    if whole is None and fraction is None:
        return None
    digits = (whole or "0").replace(",", "")
    value = float(digits + (fraction or ""))
    denominator = match.group("den")
    if denominator is not None:
        if int(denominator) == 0:
            return None
        value /= int(denominator)
    negative = match.group("sign") in ("-", "−")
    if negative:
        value = -value
    integer = int(digits) * (-1 if negative else 1) if fraction is None and denominator is None else None
    return Number(value, match.group("pct") is not None, match.start(), integer)


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


def numbers_in(text: str, *, stated: bool = False) -> list[Number]:
    """Every number in ``text``, written in digits or in words, in reading order. ``stated``: ``text`` is what
    follows an answer marker, where a "One" opening it is the answer ("Answer:\nOne day.")."""
    found = [n for m in _NUMBER.finditer(text) if (n := _digits_number(m)) is not None]
    opening: list[Number] = []  # "One day ..." / "One will ...": the number 1 only beside another number
    for match in _WORD_NUMBER.finditer(text):
        phrase = text[match.start() : match.start("pct") if match.group("pct") else match.end()]
        if phrase.strip().lower() == "one":
            kind = _kind_of_one(text, match, stated)
            if kind == "pronoun":
                continue
            if kind == "opening":
                opening.append(Number(1.0, False, match.start()))
                continue
        value = _words_value(phrase)
        if value is not None:
            found.append(Number(value, match.group("pct") is not None, match.start()))
    # a story with no number ("One day, a little girl...") reads none, not 1
    return sorted([*found, *opening] if found else [], key=lambda n: n.position)


def _kind_of_one(text: str, one: re.Match[str], stated: bool) -> str:
    """What the word "one" at ``one`` is: "pronoun" ("the one", "no one", "one's", "one another": never a number),
    "opening" (a sentence opened by "One day" / "One will": a story's opener, or the answer "One will remain."
    beside the numbers it follows from) or "number"."""
    # the words just before it decide (searching all the text before each "one" made a long text quadratic)
    before = text[max(0, one.start() - 40) : one.start()]
    if _PRONOUN_ONE.search(before) or _PRONOUN_AFTER_ONE.match(text, one.end()):
        return "pronoun"
    opens = text[one.start()] == "O" and _SENTENCE_OPENS.search(before) is not None
    return "opening" if opens and not stated and _OPENING_ONE_IDIOM.match(text, one.end()) else "number"


def extract_number(text: str) -> Number | None:
    """The predicted number: after the last '####', else after the last 'answer is'/'answer:', else in the
    last \\boxed{}, else the last number in the text.

    After a marker, an answer stated as a calculation ("The answer is 16 - 3 - 4 = 9 eggs, sold for 9 * $2 =
    $18.") is read at its result, the first number after the last '=' in that sentence or line, unless that
    number opens a calculation itself. '<number> thousand/million/billion' is one number ("$1.45 million").
    Full-width digits and signs read as ASCII ones ("１，０００" is 1000).
    """
    if not text.isascii():
        text = text.translate(_FULL_WIDTH)
    if "\\" in text or "{,}" in text or not text.isascii():
        text = _GROUP_SEPARATOR.sub(",", text)
    for marker in _MARKERS:
        matches = list(marker.finditer(text))
        if matches:
            stated = text[matches[-1].end() :]
            after = _scaled(stated, numbers_in(stated, stated=True))
            if after:
                return _result(stated, after)
    boxed = _BOXED.findall(text)
    if boxed:
        inside = _scaled(boxed[-1], numbers_in(boxed[-1], stated=True))
        if inside:
            return inside[-1]
    numbers = _scaled(text, numbers_in(text))
    return numbers[-1] if numbers else None


def _calculation_after(text: str, number: Number) -> int | None:
    """Where ``number`` ends when an arithmetic operator follows it ("9 × 2 = 18"), else None."""
    digits = _NUMBER.match(text, number.position)
    if digits is None or _digits_number(digits) is None:
        return None  # a number in words ("forty-two") is not the operand of a written calculation
    return digits.end() if _OPERATOR.match(text, digits.end()) else None


def _result(stated: str, numbers: list[Number]) -> Number:
    """The first number of a stated answer, or the result of the calculation it opens."""
    first = numbers[0]
    operand_end = _calculation_after(stated, first)
    if operand_end is None:
        return first
    end = _SENTENCE_END.search(stated, operand_end)
    sentence = stated[: end.start() if end else len(stated)]
    equals = sentence.rfind("=")
    result = next((n for n in numbers if equals < n.position < len(sentence)), None) if equals >= 0 else None
    return result if result is not None and _calculation_after(stated, result) is None else first


def _scaled(text: str, numbers: list[Number]) -> list[Number]:
    """``numbers`` with '<digits> thousand/million/billion' read as one number: '$1.45 million' is 1450000.

    Numeric mode only; elsewhere (faithfulness) the digits and the scale word stay two numbers."""
    merged: list[Number] = []
    skip = -1
    for index, number in enumerate(numbers):
        if index == skip:
            continue
        digits = _NUMBER.match(text, number.position)
        scale = _SCALE_AFTER.match(text, digits.end()) if digits and _digits_number(digits) else None
        following = numbers[index + 1] if index + 1 < len(numbers) else None
        if scale and not number.percent and following and following.position == scale.start(1):
            factor = _SCALES[scale.group(1).lower()]
            if following.value == factor:  # the scale word alone, not "million and five"
                # Decimal keeps 2.01 million exactly 2010000 (in floats 2.01 * 1e6 is 2009999.9999999998).
                merged.append(Number(float(Decimal(repr(number.value)) * factor), False, number.position))
                skip = index + 1
                continue
        merged.append(number)
    return merged


_FLOAT_ROUNDING = 4 * sys.float_info.epsilon
_FULL_WIDTH = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
"""Full-width forms (U+FF01-FF5E) → ASCII, as NFKC maps them; not NFKC itself, which makes "10²" "102"."""


def same_number(predicted: Number, expected: Number, tolerance: float = 1e-9) -> bool:
    """Equal by value; a percentage also equals its fraction (50% == 0.5) when only one side has %."""

    def close(a: float, b: float) -> bool:
        # relative slack of a few units in the last place, for floats' own rounding (1.1% is 0.011000000000000001)
        # and no more: 1,000,000,001 is not 1,000,000,000
        return math.isclose(a, b, rel_tol=_FLOAT_ROUNDING, abs_tol=tolerance)

    if predicted.integer is not None and expected.integer is not None and predicted.percent == expected.percent:
        return abs(predicted.integer - expected.integer) <= tolerance  # exactly, past a float's 2**53 too
    if close(predicted.value, expected.value):
        return True
    if predicted.percent != expected.percent:
        if predicted.percent:
            return close(predicted.value / 100, expected.value)
        return close(predicted.value, expected.value / 100)
    return False


def exact_match(prediction: str, reference: str, mode: str = "strict") -> float:
    """1.0 when ``prediction`` matches ``reference`` under ``mode`` (strict | lenient | numeric), else 0.0.

    strict: identical after stripping outer whitespace (no case, Unicode or punctuation folding).

    lenient: equal after, in this order, (1) Unicode NFKC normalisation (full-width letters and digits, ligatures,
    "Ⅻ" → "XII"; accents are kept) with U+2212 MINUS SIGN read as "-"; (2) every Unicode punctuation character
    (category P*: . , ; : ! ? ' " ( ) [ ] - – — … « » and so on) replaced by a space, except a "-" directly
    before a digit that does not follow a letter or digit (a sign: "-5") and a "%" after a digit (spaces
    between dropped: "5 %" is "5%"); (3) case folding ("Straße" == "STRASSE"); (4) runs of whitespace made one
    space, outer whitespace dropped. Symbols (categories S*: $ € + ^ = < > | ~ °) are kept, and articles are
    not removed. So "-5" != "5", "−5" == "-5", "5%" != "5", "(5)" == "5", "$5" != "5", "e-mail" != "email",
    and "3.5" reads "3 5". For numbers use numeric mode.

    numeric: the number read from the prediction (see ``extract_number``) equals the reference's by value.

    The strings are compared as given: it is the registered ``exact_match`` scorer that reads an output's
    ``<answer>`` tag first (``scorers.answers.read_answer``).
    """
    require_text("exact_match", prediction=prediction, reference=reference)
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
    """Exact match of the output's answer (its last non-empty ``<answer>`` tag, else the whole output) against any
    of the sample's targets; ``tolerance`` is the absolute slack of numeric mode (floats' own rounding aside)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
    if tolerance < 0:
        raise ValueError("tolerance must be >= 0")

    def score(output: str, sample: Sample) -> Score:
        targets = sample.targets
        expected = " or ".join(map(repr, targets))
        answer = read_answer(output)
        if mode == "numeric":
            predicted = extract_number(answer.text)
            if predicted is None:
                where = "the <answer> tag" if answer.tagged else "the output"
                return Score(
                    value=0.0, answer=answer.extracted, explanation=f"no number found in {where}; expected {expected}"
                )
            references = [n for t in targets if (n := extract_number(t)) is not None]
            if not references:
                return Score(value=0.0, answer=str(predicted), explanation=f"no number in the reference {expected}")
            hit = any(same_number(predicted, reference, tolerance) for reference in references)
            verdict = "equals" if hit else "differs from"
            source = " in the <answer> tag" if answer.tagged else ""
            explanation = f"read {predicted}{source}; {verdict} {expected}"
            return Score(value=float(hit), answer=str(predicted), explanation=explanation)
        best = max([exact_match(answer.text, target, mode) for target in targets])
        verdict = "matches" if best else "does not match"
        what = "the <answer> tag" if answer.tagged else "output"
        return Score(value=best, answer=answer.extracted, explanation=f"{mode}: {what} {verdict} {expected}")

    return FunctionScorer(score)


__all__ = ["MODES", "Number", "exact_match", "exact_match_scorer", "extract_number", "numbers_in", "same_number"]
