"""Which scripts a text is written in, for the text scorers whose reference tokenisations drop some.

rouge-score keeps only a-z and 0-9, and the SQuAD script splits on whitespace, which Chinese and Japanese do
not write between words: their scores are then 0 (or all-or-nothing) whatever the answer says. The scorers use
these tests to refuse such a reference with the fix named, and :func:`split_ideographs` for their ``unicode``
tokenisers, which give each ideograph or kana a token of its own (the usual way to score those scripts without
a word segmenter, as MLQA's evaluation does for Chinese).
"""

from __future__ import annotations

import re
import unicodedata

# Han ideographs (with extension A and the compatibility block), hiragana and katakana.
IDEOGRAPHS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_IDEOGRAPH = re.compile(f"[{IDEOGRAPHS}]")
_IDEOGRAPH_OR_RUN = re.compile(f"[{IDEOGRAPHS}]|[^{IDEOGRAPHS}]+")


def mostly_ideographs(text: str) -> bool:
    """Whether more than half of the letters of ``text`` are Chinese/Japanese ideographs or kana ("Yuan dynasty
    (元朝)" is not: its reference tokens still mean something to a whitespace tokenizer)."""
    letters = [c for c in text if c.isalpha()]
    return len(_IDEOGRAPH.findall(text)) * 2 > len(letters) > 0


def word_tokens(text: str) -> list[str]:
    """Runs of letters, combining marks and digits of any script (a Devanagari or Thai vowel sign is a mark,
    not a separator: "नमस्ते" is one word), each ideograph or kana a token of its own; the rest separates.
    A loop over Unicode categories: ``re`` has no class for marks."""
    tokens: list[str] = []
    word: list[str] = []
    for char in text:
        if _IDEOGRAPH.match(char):
            if word:
                tokens.append("".join(word))
                word = []
            tokens.append(char)
        elif unicodedata.category(char)[0] in "LMN":
            word.append(char)
        elif word:
            tokens.append("".join(word))
            word = []
    if word:
        tokens.append("".join(word))
    return tokens


def mostly_non_latin(text: str) -> bool:
    """Whether more than half of the letters of ``text`` are outside a-z and A-Z: accented letters count as
    outside, so a short accented word ("été") is mostly non-Latin, a sentence with a few accents is not."""
    letters = [c for c in text if c.isalpha()]
    outside = sum(1 for c in letters if not ("a" <= c <= "z" or "A" <= c <= "Z"))
    return outside * 2 > len(letters)


def split_ideographs(token: str) -> list[str]:
    """``token`` with each ideograph or kana split off as a token of its own: "gpt的答案" -> gpt 的 答 案."""
    return _IDEOGRAPH_OR_RUN.findall(token)


__all__ = ["IDEOGRAPHS", "mostly_ideographs", "mostly_non_latin", "split_ideographs", "word_tokens"]
