"""Where in a TOML text a key is defined, so that an error about a field can name its line.

``tomllib`` returns plain values without positions, so this reads the (already valid) text once more and
maps every key path it defines — table headers, ``[[array]]`` entries by index, ``key = value`` lines with
dotted keys — to its line number. It does not parse values: a key inside an inline table or a multi-line
array is found through the line of the key that holds it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

KeyPath = tuple[str | int, ...]

_BARE_OR_QUOTED = r'(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_DOTTED = rf"{_BARE_OR_QUOTED}(?:\s*\.\s*{_BARE_OR_QUOTED})*"
_ARRAY_HEADER = re.compile(rf"^\s*\[\[\s*({_DOTTED})\s*\]\]")
_TABLE_HEADER = re.compile(rf"^\s*\[\s*({_DOTTED})\s*\]")
_ASSIGNMENT = re.compile(rf"^\s*({_DOTTED})\s*=")
_PART = re.compile(_BARE_OR_QUOTED)
_MULTILINE_QUOTES = ('"""', "'''")


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(p[1:-1] if p[0] in "\"'" else p for p in _PART.findall(dotted))


def key_lines(text: str) -> dict[KeyPath, int]:
    """``{key path: 1-based line}`` for every key path the text defines; array-of-tables entries are numbered
    from 0, like the lists ``tomllib`` returns."""
    lines: dict[KeyPath, int] = {}
    entries: dict[KeyPath, int] = {}
    table: KeyPath = ()
    open_quote: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if open_quote is not None:
            close = line.find(open_quote)
            if close != -1:  # the string ends here; what follows on the line may open another
                open_quote = _open_quote(line, close + len(open_quote))
            continue
        if match := _ARRAY_HEADER.match(line):
            *parents, name = _parts(match.group(1))
            array = (*_resolve(tuple(parents), entries), name)
            index = entries[array] = entries.get(array, -1) + 1
            table = (*array, index)
            lines.setdefault(array, number)
            lines[table] = number
        elif match := _TABLE_HEADER.match(line):
            table = _resolve(_parts(match.group(1)), entries)
            lines.setdefault(table, number)
        elif match := _ASSIGNMENT.match(line):
            key = _parts(match.group(1))
            for depth in range(1, len(key) + 1):
                lines.setdefault((*table, *key[:depth]), number)
        # a value that opens a multi-line string and does not close it on this line hides the lines after it
        open_quote = _open_quote(line)
    return lines


def _open_quote(line: str, start: int = 0) -> str | None:
    """The multi-line string delimiter (\"\"\" or ''') a line leaves open, reading from ``start``: one-line
    strings (which may hold three quotes, as in ``stop = ['\"\"\"']``) and comments are skipped."""
    position = start
    while position < len(line):
        char = line[position]
        if char == "#":
            return None
        if line.startswith(_MULTILINE_QUOTES, position):
            quote = line[position : position + 3]
            close = line.find(quote, position + 3)
            if close == -1:
                return quote
            position = close + 3
        elif char in "\"'":
            position += 1
            while position < len(line) and line[position] != char:
                position += 2 if char == '"' and line[position] == "\\" else 1
            position += 1
        else:
            position += 1
    return None


def _resolve(parts: tuple[str, ...], entries: dict[KeyPath, int]) -> KeyPath:
    """A header's key path with the current index of every array of tables it passes through
    (``[[scorers.parts]]`` after the second ``[[scorers]]`` is ``("scorers", 1, "parts")``)."""
    resolved: list[str | int] = []
    for part in parts:
        resolved.append(part)
        if tuple(resolved) in entries:
            resolved.append(entries[tuple(resolved)])
    return tuple(resolved)


def line_of(text: str, location: Sequence[str | int]) -> int | None:
    """The line that defines ``location`` or, failing that, its closest enclosing key; None when the text
    defines none of them."""
    return line_in(key_lines(text), location)


def line_in(lines: Mapping[KeyPath, int], location: Sequence[str | int]) -> int | None:
    """``line_of`` in the ``key_lines`` of a text."""
    path = tuple(location)
    for depth in range(len(path), 0, -1):
        if path[:depth] in lines:
            return lines[path[:depth]]
    return None


def nesting_line(text: str, limit: int) -> int | None:
    """The first line where arrays and inline tables open more than ``limit`` levels deep, reading past strings
    and comments; None when none does. For a text nested too deeply for ``tomllib`` to parse (it recurses per
    level), so it reads characters, not lines, and needs no valid TOML."""
    depth, line, position, quote = 0, 1, 0, ""
    while position < len(text):
        char = text[position]
        if char == "\n":
            line += 1
        if quote:  # inside a string: only its end (or an escape in a basic one) matters
            if char == "\\" and quote[0] == '"':
                line += text.startswith("\n", position + 1)
                position += 2
                continue
            if text.startswith(quote, position):
                position += len(quote)
                quote = ""
                continue
        elif char == "#":
            end = text.find("\n", position)
            position = len(text) if end == -1 else end
            continue
        elif char in "\"'":
            quote = text[position : position + 3] if text.startswith(_MULTILINE_QUOTES, position) else char
            position += len(quote)
            continue
        elif char in "[{":
            depth += 1
            if depth > limit:
                return line
        elif char in "]}":
            depth -= 1
        position += 1
    return None


__all__ = ["KeyPath", "key_lines", "line_in", "line_of", "nesting_line"]
