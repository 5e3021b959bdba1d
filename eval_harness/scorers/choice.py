"""Multiple-choice letter extraction: "B", "b", "(B)", "The answer is B.", "Answer: B) Paris" → "B".

Ambiguous answers ("A or B", "The answer is A. No, the answer is C.") give None rather than a guess, so a
model is never credited for hedging across options.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache

from eval_harness.scorers.base import FunctionScorer, Scorer, register_scorer
from eval_harness.types import Sample, Score

_DECORATION = re.compile(r"[*_`]")
_SURROUND = " \t\r\n.,;:!?()[]{}<>\"'"


_CONJUNCTIONS = frozenset({"or", "and", "nor", "vs", "versus"})


@lru_cache(maxsize=64)
def _patterns(letters: str) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    options = re.escape(letters) + re.escape(letters.lower())
    marker = re.compile(
        r"\b(?:answer|option|choice)\b(?:\s+(?:is|would\s+be|will\s+be|should\s+be))?\s*(?:[:=\-]\s*)?"
        r"(?:option\s+|choice\s+)?[(\[]?([" + options + r"])(?![\w'’])",
        re.IGNORECASE,
    )
    leading = re.compile(r"^\s*[(\[]?([" + options + r"])\s*(?:[).:\]]|$)")
    standalone = re.compile(
        r"(?<![\w'’])[(\[]?([" + re.escape(letters) + r"])(?![\w'’])(?P<after>[)\].:]?)(?P<rest>\s*\S*)"
    )
    hedge = re.compile(r"\s*(?:or|and|nor|/|,)\s*[(\[]?[" + options + r"](?![\w'’])", re.IGNORECASE)
    return marker, leading, standalone, hedge


def choice_letter(response: str, letters: str = "ABCD") -> str | None:
    """The option letter a response chooses, or None when it names none or several.

    Read in order: the whole response is one letter ("b", "(B)"); explicit markers ("The answer is B",
    "Answer: B) Paris", "Option C"), which must all agree; a leading "B) Paris" / "B. Paris"; finally one
    capital letter standing alone. A capital "A" or "I" followed by a lower-case word is an article or a
    pronoun, not an option; "A or B" and "the answer is A or B" are ambiguous.
    """
    letters = letters.upper()
    text = _DECORATION.sub("", response).strip()
    if not text or not letters:
        return None
    bare = text.strip(_SURROUND)
    if len(bare) == 1 and bare.upper() in letters:
        return bare.upper()
    marker, leading, standalone, hedge = _patterns(letters)
    marked = set()
    for match in marker.finditer(text):
        if _is_option(match.group(1), text, match.end()):
            if hedge.match(text, match.end()):
                return None  # "The answer is A or B"
            marked.add(match.group(1).upper())
    if marked:
        return marked.pop() if len(marked) == 1 else None
    start = leading.match(text)
    if start is not None:
        return start.group(1).upper()
    alone = set()
    for match in standalone.finditer(text):
        word = match.group("rest").strip()
        if match.group(1) in "AI" and not match.group("after") and word[:1].islower() and word not in _CONJUNCTIONS:
            continue  # "A good answer", "I think": an article or a pronoun, not an option
        alone.add(match.group(1))
    return alone.pop() if len(alone) == 1 else None


def _is_option(letter: str, text: str, end: int) -> bool:
    """A lower-case letter after a marker counts only when nothing word-like follows ("answer is a dog")."""
    if letter.isupper():
        return True
    following = text[end:].lstrip()
    return not following or not following[0].isalpha()


def _target_letter(target: str, choices: list[str] | None, letters: str) -> str | None:
    stripped = target.strip()
    if len(stripped) == 1 and stripped.upper() in letters:
        return stripped.upper()
    if choices and stripped in choices:
        return letters[choices.index(stripped)]
    return choice_letter(stripped, letters)


@register_scorer("choice")
def choice_scorer(letters: str | None = None, match_text: bool = True) -> Scorer:
    """1.0 when the extracted letter is the target's. ``letters`` defaults to one per choice (else ABCD);
    with ``match_text``, an answer that quotes exactly one choice's text counts as that choice."""
    if letters is not None and (not letters.isalpha() or len(set(letters.upper())) != len(letters)):
        raise ValueError(f"letters must be distinct letters, got {letters!r}")

    def score(output: str, sample: Sample) -> Score:
        options = (letters or string.ascii_uppercase[: len(sample.choices or [])] or "ABCD").upper()
        expected = {t for target in sample.targets if (t := _target_letter(target, sample.choices, options))}
        if not expected:
            raise ValueError(f"target {sample.targets!r} is not one of the letters {options}")
        got = choice_letter(output, options)
        how = "letter"
        if got is None and match_text and sample.choices:
            quoted = [options[i] for i, c in enumerate(sample.choices) if c.strip() and _quotes(output, c)]
            if len(quoted) == 1:
                got, how = quoted[0], "choice text"
        want = "/".join(sorted(expected))
        if got is None:
            return Score(value=0.0, explanation=f"no single option letter in the output; expected {want}")
        verdict = "correct" if got in expected else f"wrong; expected {want}"
        return Score(value=float(got in expected), answer=got, explanation=f"chose {got} (by {how}): {verdict}")

    return FunctionScorer(score)


def _quotes(output: str, choice: str) -> bool:
    pattern = r"(?<!\w)" + re.escape(choice.strip()) + r"(?!\w)"
    return re.search(pattern, output, re.IGNORECASE) is not None
