"""Multiple-choice letter extraction: "B", "b", "(B)", "The answer is B.", "Answer: B) Paris" → "B".

Evidence is ranked and the first rank that names a letter decides, so an explanation that discusses the
rejected options ("B. Paris. Option A is the capital of Italy.") cannot overrule an answer given plainly:

1. the whole response is one letter: "b", "(B)", "**D**";
2. a final answer: "Final answer: B", "<answer>B</answer>", "\\boxed{B}";
3. an answer marker: "The answer is B", "Answer: B) Paris", "The correct option is D";
4. a label opening the response: "B", "B) Paris", "B. Paris", "(B)" (then a line break, text or nothing);
5. anything else: "option B", "choice b", or a capital letter standing alone ("I would say B").

Ambiguity gives None rather than a guess, so a model is never credited for hedging across options: letters
within the deciding rank must agree ("The answer is A. No, the answer is C." → None, where a later "Final
answer: C" would decide), a letter joined to another ("A or B", "the answer is A, B or C") is a hedge, and
a response whose lines open with different labels ("A) Paris\nB) London") echoes the options.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from eval_harness.scorers.base import Scorer, register_scorer, require_text
from eval_harness.tally import LENGTH_STOPS
from eval_harness.types import Completion, Sample, Score

_DECORATION = re.compile(r"[*_`]")
_SURROUND = " \t\r\n.,;:!?()[]{}<>\"'‘’“”"
_CONJUNCTIONS = frozenset({"or", "and", "nor", "vs", "versus"})
# "answer is", "answer would be:", "answer:", "answer =" ... then optionally "option"/"choice" before the letter.
_CONNECTOR = r"(?:\s+(?:is|was|would\s+be|will\s+be|should\s+be|must\s+be)\b\s*[:=\-]?|\s*[:=\-])\s*"
_NAMED = r"(?:(?:option|choice|letter)\s+)?[(\[]?['‘\"“]?"
_PRONOUN_VERBS = frozenset(
    {"think", "believe", "would", "am", "guess", "say", "feel", "suspect", "lean", "choose", "pick", "go", "cannot",
     "can't", "don't", "will", "suppose", "reckon", "know", "need", "must", "should", "could", "might", "can",
     "have", "had", "was", "do", "did", "see", "agree", "prefer", "conclude", "chose", "picked", "went", "want"}
)  # fmt: skip
"""Words after which an "I" is the pronoun, not option I ("Answer: I think it is B", "I would say B")."""


@dataclass(frozen=True)
class _Patterns:
    final: tuple[re.Pattern[str], ...]
    marker: tuple[re.Pattern[str], ...]
    label: re.Pattern[str]
    mention: re.Pattern[str]
    standalone: re.Pattern[str]
    hedge: re.Pattern[str]


@lru_cache(maxsize=64)
def _patterns(letters: str) -> _Patterns:
    upper, lower = re.escape(letters), re.escape(letters.lower())
    # not a letter of a word: "B's", "O'Brien", "don't" (but a quoted 'B' after a marker is a letter)
    option = r"([" + upper + lower + r"])(?!\w)(?!['’]\w)"
    closing = r"['’\"”]?[)\].]?\s*"
    return _Patterns(
        final=(
            re.compile(r"\bfinal\s+answer\b" + _CONNECTOR + _NAMED + option, re.IGNORECASE),
            re.compile(r"<answer>\s*" + _NAMED + option + closing + r"</answer>", re.IGNORECASE),
            re.compile(r"\\boxed\{\s*(?:\\text(?:bf)?\{\s*)?" + _NAMED + option + closing + r"\}", re.IGNORECASE),
        ),
        marker=(
            re.compile(r"\banswer\b" + _CONNECTOR + _NAMED + option, re.IGNORECASE),
            re.compile(r"\b(?:correct|right|best)\s+(?:option|choice|letter)" + _CONNECTOR + _NAMED + option, re.I),
        ),
        label=re.compile(r"^[ \t]*[(\[]?" + option + r"[ \t]*(?:[).:\]]|$)(?P<line>.*)", re.MULTILINE),
        mention=re.compile(r"\b(?:option|choice|answer|letter)\s*[(\[]?" + option, re.IGNORECASE),
        standalone=re.compile(
            r"(?<![\w'’])[(\[]?([" + upper + r"])(?![\w'’])(?P<after>[)\].:]?)(?=(?P<rest>\s*\S{0,16}))"
        ),
        # A second letter joined by a conjunction, a slash or a comma; a lower-case one only when no word
        # follows it, so "B, a classic trap" is not a hedge.
        hedge=re.compile(
            r"[)\]'’\"”]?\s*(?:(?i:or|and|nor)\b(?:\s+(?i:maybe|perhaps|possibly)\b)?|/|,)\s*[(\['‘\"“]?"
            + (r"(?:[" + upper + r"]|[" + lower + r"](?!\w)(?!['’]\w)(?!['’\"”]?\s+[^\W\d_]))(?!\w)(?!['’]\w)")
        ),
    )


def choice_letter(response: str, letters: str = "ABCD") -> str | None:
    """The option letter a response chooses, or None when it names none or several.

    Ranked evidence, the first rank with a letter deciding: the whole response is one letter ("b", "(B)");
    a final answer ("Final answer: B", "<answer>B</answer>", "\\boxed{B}"); an answer marker ("The answer
    is B", "Answer: B) Paris", "The correct option is D"); a label opening the response ("B", "B) Paris",
    "B. Paris", then a line break, text or nothing); finally "option B"/"choice B" mentions and capital
    letters standing alone. Letters within the deciding rank must agree. A capital "A" or "I" standing alone
    and followed by a lower-case word is an article or a pronoun, not an option, and so is an "I" followed by a
    verb after a marker ("Answer: I think it is B"); "A or B", "the answer is A or B" and lines opening with
    different labels are ambiguous. A letter may be quoted in the whole response and after a marker ('B', "B").
    """
    require_text("choice_letter", response=response, letters=letters)
    letters = letters.upper()
    text = _DECORATION.sub("", response).strip()
    if not text or not letters:
        return None
    bare = text.strip(_SURROUND)
    if len(bare) == 1 and bare.upper() in letters:
        return bare.upper()
    patterns = _patterns(letters)
    for rank in (patterns.final, patterns.marker):
        found = _marked(rank, text, patterns.hedge)
        if found is None:
            return None  # a hedge after a marker: "The answer is A or B"
        if found:
            return found.pop() if len(found) == 1 else None
    start = patterns.label.match(text)
    if start is not None:
        if patterns.hedge.match(text, start.start("line")):
            return None  # "(A) or (B)", "B. Or maybe D."
        # Lines opening like the first one with other letters ("A) Paris\nB) London", "A\nB\nC") list the
        # options; "B\n\nA. is wrong" is an answer and its explanation.
        alone = not start.group("line").strip()
        labels = {m.group(1).upper() for m in patterns.label.finditer(text) if alone == (not m.group("line").strip())}
        return start.group(1).upper() if len(labels) == 1 else None
    named = set()
    for match in patterns.mention.finditer(text):
        if _is_option(match.group(1), text, match.end()):
            named.add(match.group(1).upper())
    for match in patterns.standalone.finditer(text):
        word = match.group("rest").strip()
        if match.group(1) in "AI" and not match.group("after") and word[:1].islower() and word not in _CONJUNCTIONS:
            continue  # "A good answer", "I think": an article or a pronoun, not an option
        named.add(match.group(1))
    return named.pop() if len(named) == 1 else None


def _marked(rank: tuple[re.Pattern[str], ...], text: str, hedge: re.Pattern[str]) -> set[str] | None:
    """The letters one rank of markers names; None when a marked letter is joined to another (a hedge)."""
    found = set()
    for pattern in rank:
        for match in pattern.finditer(text):
            letter = match.group(1)
            if _is_option(letter, text, match.end()) and not _pronoun(letter, text, match.end()):
                if hedge.match(text, match.end()):
                    return None
                found.add(letter.upper())
    return found


def _pronoun(letter: str, text: str, end: int) -> bool:
    """Whether an "I" is the pronoun: a verb that follows "I" comes next ("Answer: I think it is B")."""
    word = re.match(r"[ \t]+([a-z']+)", text[end:]) if letter == "I" else None
    return word is not None and word.group(1) in _PRONOUN_VERBS


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
        index = choices.index(stripped)
        if index >= len(letters):
            raise ValueError(
                f"target {stripped!r} is choice {index + 1}, past the {len(letters)} letters {letters}: the choice "
                "scorer reads one letter per choice, at most 26"
            )
        return letters[index]
    return choice_letter(stripped, letters)


@register_scorer("choice")
def choice_scorer(letters: str | None = None, match_text: bool = True) -> Scorer:
    """1.0 when the extracted letter is the target's. ``letters`` defaults to one per choice (else ABCD);
    with ``match_text``, an answer that quotes exactly one choice's text counts as that choice."""
    if letters is not None and (not letters.isalpha() or len(set(letters.upper())) != len(letters)):
        raise ValueError(f"letters must be distinct letters, got {letters!r}")

    def score(output: str, sample: Sample, cut: bool = False) -> Score:
        options = (letters or string.ascii_uppercase[: len(sample.choices or [])] or "ABCD").upper()
        if cut:
            output = _without_a_cut_letter(output, options)
        expected = {t for target in sample.targets if (t := _target_letter(target, sample.choices, options))}
        if not expected:
            raise ValueError(f"target {sample.targets!r} is not one of the letters {options}")
        got, how = (_whole_choice(output, sample.choices, options) if match_text else None), "choice text"
        # an option's whole text in quotes is that option, and no letter can be read inside it: '"A Season"' is
        # not option A; a letter given elsewhere still decides ('B, not "A Season"')
        read, quoted, marked = (
            _quoted_options(output, sample.choices, options) if match_text else (output, set(), set())
        )
        if got is None:
            got, how = choice_letter(read, options), "letter"
        if got is None and len(marked) == 1:
            got, how = next(iter(marked)), "choice text"
        if got is None and len(quoted) == 1 and not _names_another(read, sample.choices, options, quoted):
            got, how = next(iter(quoted)), "choice text"
        if got is None and match_text and sample.choices:
            lettered = sample.choices[: len(options)]  # a choice past the letters has none to be read as
            named = [options[i] for i, c in enumerate(lettered) if c.strip() and _quotes(output, c)]
            if len(named) == 1:
                got, how = named[0], "choice text"
        # the letters quoted, as exact_match quotes its target: inspect's failure kinds read a quoted value as one
        # that varies, so "chose 'A': wrong; expected 'B'" and "chose 'C': wrong; expected 'D'" are one kind
        want = "'" + "/".join(sorted(expected)) + "'"
        if got is None:
            return Score(value=0.0, explanation=f"no single option letter in the output; expected {want}")
        verdict = "correct" if got in expected else f"wrong; expected {want}"
        return Score(value=float(got in expected), answer=got, explanation=f"chose '{got}' (by {how}): {verdict}")

    return _ChoiceScorer(score)


class _ChoiceScorer(Scorer):
    """The choice scorer, told whether the answer was cut at the output-token limit (see ``_without_a_cut_letter``)."""

    def __init__(self, function: Callable[[str, Sample, bool], Score]) -> None:
        self.function = function

    async def score(self, output: str, sample: Sample, completion: Completion | None = None) -> Score:
        cut = completion is not None and completion.finish_reason in LENGTH_STOPS
        return self.function(output, sample, cut)


def _without_a_cut_letter(output: str, letters: str) -> str:
    """An answer cut at the token limit, without a capital letter it ends on that no answer marker introduces: the
    first letter of a word cut off (a story's '"Hell," A' read as option A); a letter after "answer is" or "option",
    or alone in the answer, stays."""
    text = output.rstrip()
    if len(text) < 2 or text[-1] not in letters.upper() or text[-2].isalnum():
        return output
    before = text[:-1]
    patterns = _patterns(letters)
    marked = (
        match.end() == len(text)
        for pattern in (*patterns.final, *patterns.marker, patterns.mention)
        for match in pattern.finditer(text)
    )
    if not before.strip(_SURROUND) or any(marked):
        return output
    return before


def _quotes(output: str, choice: str) -> bool:
    pattern = r"(?<!\w)" + re.escape(choice.strip()) + r"(?!\w)"
    return re.search(pattern, output, re.IGNORECASE) is not None


def _whole_choice(output: str, choices: list[str] | None, letters: str) -> str | None:
    """The letter of the one choice whose whole text the output is: "A Season" is that option, not letter A.

    A bare letter stays a letter even where some choice's text is that letter."""
    said = _as_choice_text(output)
    if not choices or len(said) <= 1:
        return None
    hits = {letters[i] for i, choice in enumerate(choices[: len(letters)]) if _as_choice_text(choice) == said}
    return hits.pop() if len(hits) == 1 else None


_QUOTED = re.compile(r'"([^"\n]{2,300})"|“([^”\n]{2,300})”')
"""A span in double quotes, straight or curly (single quotes are left alone: they are apostrophes too)."""


def _names_another(read: str, choices: list[str] | None, letters: str, quoted: set[str]) -> bool:
    """Whether ``read`` (the output, quoted options blanked) names another option's text: 'It is not "Paris" but
    London.' rejects the quoted one."""
    return any(
        letters[i] not in quoted and choice.strip() and _quotes(read, choice)
        for i, choice in enumerate((choices or [])[: len(letters)])
    )


_AFTER_MARKER = re.compile(r"\banswer\b(?:\s+(?:is|was|would\s+be|will\s+be))?\s*[:=]?\s*$", re.IGNORECASE)
"""What a quoted option right after an answer marker ends with: 'The answer is "London", not Paris.'"""


def _quoted_options(output: str, choices: list[str] | None, letters: str) -> tuple[str, set[str], set[str]]:
    """``output`` with each quoted span that is exactly one option's whole text blanked out, those options'
    letters (so that the letter rules read no letter inside them), and the letters of those quoted right after an
    answer marker (which decide, whatever other option the rest of the output names)."""
    if not choices or ('"' not in output and "“" not in output):
        return output, set(), set()
    lettered = [_as_choice_text(choice) for choice in choices[: len(letters)]]
    found: set[str] = set()
    marked: set[str] = set()

    def blank(match: re.Match[str]) -> str:
        said = _as_choice_text(match.group(1) or match.group(2))
        hits = {letters[i] for i, text in enumerate(lettered) if text == said}
        if len(said) <= 1 or len(hits) != 1:
            return match.group(0)
        found.update(hits)
        if _AFTER_MARKER.search(output, 0, match.start()):
            marked.update(hits)
        return " "

    return _QUOTED.sub(blank, output), found, marked


def _as_choice_text(text: str) -> str:
    return " ".join(text.strip().strip("*_`").strip().strip('"“”').strip().rstrip(".").split()).casefold()


__all__ = ["choice_letter", "choice_scorer"]
