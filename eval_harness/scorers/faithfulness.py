"""A model-free faithfulness heuristic for summaries: is what the summary states found in the source?

The summary's checkable units are its numbers, its names (capitalised words that do not start a
sentence) and its other content words (not stop words, four letters or more). Each unit is looked up in
the source document — numbers by value, words by a light suffix-stripped form — and the score is the supported
share, with numbers and names weighing three times as much as other words: a wrong figure or a wrong
name is the typical hallucination, while an unsupported ordinary word is often a paraphrase. It catches
invented facts, not subtle misreadings: pair it with a judge for those.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from eval_harness.scorers.answers import read_answer
from eval_harness.scorers.base import FunctionScorer, Scorer, register_scorer
from eval_harness.scorers.exact import numbers_in
from eval_harness.types import Sample, Score

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n\s*)$")
_STOP_WORDS = frozenset({
    "about", "above", "after", "again", "against", "also", "although", "among", "an", "and", "another", "any",
    "are", "around", "because", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could",
    "did", "does", "doing", "down", "during", "each", "either", "even", "ever", "every", "few", "for", "from",
    "further", "had", "has", "have", "having", "here", "hers", "herself", "him", "himself", "his", "how", "however",
    "into", "its", "itself", "just", "least", "less", "many", "might", "more", "most", "much", "must", "near",
    "neither", "never", "none", "nor", "not", "now", "off", "once", "only", "onto", "other", "others", "ought",
    "our", "ours", "ourselves", "out", "over", "own", "per", "perhaps", "quite", "rather", "said", "same", "says",
    "several", "shall", "she", "should", "since", "some", "still", "such", "than", "that", "their", "theirs",
    "them", "themselves", "then", "there", "these", "they", "this", "those", "though", "through", "thus", "till",
    "too", "toward", "towards", "under", "unless", "until", "upon", "very", "was", "were", "what", "whatever",
    "when", "where", "whether", "which", "while", "who", "whom", "whose", "why", "will", "with", "within",
    "without", "would", "year", "years", "yet", "you", "your", "yours", "yourself", "yourselves", "told",
    "according"
})  # fmt: skip


def _stem(word: str) -> str:
    """A light, symmetric suffix stripper (games/game, running/run, studies/studied/study); NLTK's Porter
    stemmer would be better but costs ~2 s of imports, too much for a heuristic."""
    w = word.lower().replace("’", "'").removesuffix("'s")
    if len(w) > 4 and (w.endswith("ies") or w.endswith("ied")):
        w = w[:-3] + "y"
    elif len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and w.endswith("ed"):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]
    return w


@dataclass(frozen=True)
class _Unit:
    text: str  # what the explanation shows
    kind: str  # number | name | word
    weight: float
    value: float | None = None  # a number's value, compared as read (its text is rounded for display)


def _units(summary: str) -> list[_Unit]:
    units = [
        _Unit(str(n), "number", 3.0, n.value) for n in numbers_in(summary) if not _is_word_number(summary, n.position)
    ]
    for match in _WORD.finditer(summary):
        word = match.group()
        if word.lower() in _STOP_WORDS:
            continue
        starts_sentence = _SENTENCE_START.search(summary[: match.start()]) is not None
        if word[0].isupper() and len(word) > 1 and not starts_sentence:
            units.append(_Unit(word, "name", 3.0))
        elif len(word) >= 4:
            units.append(_Unit(word, "word", 1.0))
    return units


def _is_word_number(text: str, position: int) -> bool:
    return text[position : position + 1].isalpha()


def faithfulness(summary: str, source: str) -> tuple[float, list[str]]:
    """The weighted share of the summary's numbers, names and content words found in ``source``, and
    the units that were not found. An empty summary scores 0 (nothing stated is nothing verified)."""
    units = _units(summary)
    if not units:
        return 0.0, []
    source_numbers = {n.value for n in numbers_in(source)}
    source_stems = {_stem(w) for w in _WORD.findall(source)}
    supported = 0.0
    missing: list[str] = []
    for unit in units:
        if unit.value is not None:
            # no relative slack: 1,000,000,001 is not 1,000,000,000; the same text always reads as the same float
            found = any(abs(unit.value - v) < 1e-9 for v in source_numbers)
        else:
            found = _stem(unit.text) in source_stems
        if found:
            supported += unit.weight
        elif unit.text not in missing:
            missing.append(unit.text)
    return supported / sum(u.weight for u in units), missing


@register_scorer("faithfulness")
def faithfulness_scorer(source: str = "input") -> Scorer:
    """Faithfulness heuristic of the output's answer (its last non-empty ``<answer>`` tag, else the whole output:
    the reasoning is not the summary, and the tags' own word "answer" is rarely in the source) against the
    sample's ``input`` or ``metadata.<key>`` (``source`` names which)."""
    if source != "input" and not source.startswith("metadata."):
        raise ValueError(f"source must be 'input' or 'metadata.<key>', got {source!r}")

    def score(output: str, sample: Sample) -> Score:
        if source == "input":
            document = sample.input if isinstance(sample.input, str) else "\n".join(m.content for m in sample.input)
        else:
            value = sample.metadata.get(source.removeprefix("metadata."))
            if not isinstance(value, str):
                raise ValueError(f"sample {sample.id} has no text in {source}")
            document = value
        if not output.strip():
            return Score(value=0.0, explanation="empty output: nothing to verify")
        answer = read_answer(output)
        value, missing = faithfulness(answer.text, document)
        if not missing and value == 0.0:  # a unit is either supported (value > 0) or missing: there were none
            explanation = "no number, name or content word to check against the source" + answer.note
            return Score(value=0.0, answer=answer.extracted, explanation=explanation)
        shown = ", ".join(repr(m) for m in missing[:8]) + (" ..." if len(missing) > 8 else "")
        detail = f"not in the source: {shown}" if missing else "every number, name and content word is in the source"
        return Score(
            value=value,
            answer=answer.extracted,
            explanation=f"{value:.0%} supported; {detail}{answer.note}",
            metadata={"unsupported": missing},
        )

    return FunctionScorer(score)


__all__ = ["faithfulness", "faithfulness_scorer"]
