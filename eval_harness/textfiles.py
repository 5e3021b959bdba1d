"""Text files a user writes by hand (task specs, templates): UTF-8, read with universal newlines, a byte that is
not UTF-8 named by its line."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path


class NotUtf8Error(ValueError):
    """Bytes that are not UTF-8: the 1-based line and byte offset of the first, the byte and the decoder's reason."""

    def __init__(self, line: int, offset: int, byte: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason} at byte offset {offset}")
        self.line, self.offset, self.byte, self.reason = line, offset, byte, reason


def utf8_text(raw: bytes) -> str:
    """``raw`` decoded as UTF-8, every line break (``\\r\\n``, ``\\r``) as ``\\n``, as ``Path.read_text`` reads
    it; raises ``NotUtf8Error`` naming the line of the first byte that is not UTF-8."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUtf8Error(raw.count(b"\n", 0, exc.start) + 1, exc.start, raw[exc.start], exc.reason) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def near_name(name: str, names: Sequence[str]) -> str | None:
    """The one of ``names`` that ``name`` most likely misspells, or None: close as a whole and by stem
    (``tset.jsonl`` → ``test.jsonl``, ``adder.jsnl`` → ``adder.jsonl``; ``zzz.jsonl`` shares only ``.jsonl`` with
    ``bad.jsonl``, which a comparison of whole names would offer)."""
    stem = name.partition(".")[0] or name  # a dotfile is its own stem
    for close in difflib.get_close_matches(name, names, n=3):
        other = close.partition(".")[0] or close
        if difflib.SequenceMatcher(None, stem, other).ratio() >= _CLOSE:
            return close
    return None


_CLOSE = 0.6
"""difflib's own cutoff for a close match."""


def home_expanded(path: str | Path) -> Path:
    """A path a user wrote, ``~`` and ``~user`` expanded as a shell expands them: one that names no known user (or a
    home that cannot be found) stays as written, as the shell leaves it, rather than failing (pathlib raises)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        return Path(path)


__all__ = ["NotUtf8Error", "home_expanded", "near_name", "utf8_text"]
