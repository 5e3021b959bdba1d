"""What a text scorer compares with the references: the ``<answer>`` an XML-output template asks for, else the
whole output.

A template with ``xml_output`` asks for ``<reasoning>...</reasoning>`` and then ``<answer>...</answer>``. Scored
whole, such an output is mostly reasoning and markup: under SQuAD's normalisation ``<answer>Paris</answer>`` is
the one token "answerparisanswer" (token F1 0 against "Paris"), rouge-score's tokens gain "answer" twice, and
"the answer is 40" in the reasoning outranks ``<answer>42</answer>`` in numeric matching. So the registered
scorers ``exact_match``, ``token_f1``, ``squad_em``, ``rouge``, ``embedding_similarity`` and ``faithfulness``
read the output through :func:`read_answer`, one rule for all of them:

- the tag is ``<answer>`` ... ``</answer>`` in any letter case, without attributes; its text may span lines and
  is compared without its outer whitespace;
- the last tag whose text is not blank wins (a model that corrects itself ends with the corrected tag; an empty
  ``<answer></answer>`` echoed from the instructions is no answer);
- an unclosed tag (an answer cut at the length limit) is no tag;
- an output without such a tag is scored whole, as it always was.

References are dataset values and are never read this way. The public functions (``exact_match``, ``token_f1``,
``rouge``) compare the strings they are given, as the SQuAD script and rouge-score do; to reproduce a
registered scorer's value in Python, pass them ``read_answer(output).text``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A tag's text may not hold another opening tag: a lone "<answer>" in the reasoning ("I put 42 in the <answer>
# tag") would otherwise open a match that runs to the real tag's end and swallows it.
_ANSWER_TAG = re.compile(r"<answer>((?:(?!<answer>).)*?)</answer>", re.DOTALL | re.IGNORECASE)


def answer_tag(output: str) -> str | None:
    """The stripped text of the last non-empty ``<answer>...</answer>`` in ``output``, else None."""
    found = [text.strip() for text in _ANSWER_TAG.findall(output) if text.strip()]
    return found[-1] if found else None


@dataclass(frozen=True)
class Answer:
    """The text a scorer compares, and whether it was read from an ``<answer>`` tag."""

    text: str
    tagged: bool

    @property
    def extracted(self) -> str | None:
        """What the record shows as the scorer's extracted answer: the tag's text, or None for a whole output."""
        return self.text if self.tagged else None

    @property
    def note(self) -> str:
        """The end of an explanation that says the tag was read ("" for a whole output)."""
        return "; read from the <answer> tag" if self.tagged else ""


def read_answer(output: str) -> Answer:
    """The last non-empty ``<answer>`` tag's text when ``output`` has one, else the whole output (see the module's
    docstring for the rule)."""
    tagged = answer_tag(output)
    return Answer(output, tagged=False) if tagged is None else Answer(tagged, tagged=True)


__all__ = ["Answer", "answer_tag", "read_answer"]
