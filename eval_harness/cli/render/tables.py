"""Tables that fit the console's width: ``FittedTable`` (a rich renderable), its ``Column``s, and the same
columns as a Markdown table. Used by every view that draws a table of axes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

# Left alone, rich fits a wide table into a narrow console by shrinking the widest columns and cutting their
# cells with an ellipsis: on MMLU's 57 subjects 'professional_…' stood for four of them and '53.3–6…' for an
# interval. A FittedTable lays itself out for the width it is drawn at instead. When the table fits as it is,
# it is drawn exactly as a plain rich table (so the default-width output does not change). Otherwise:
# 1. a name (column 0), a number or an interval is never cut or wrapped: its column is at least as wide as
#    its widest cell;
# 2. what gives way first is a header (onto two lines), a drawn cell (the bar, down to half its width) and
#    prose (the verdict onto two lines); the widest of these shrinks first, as rich does, so a table that
#    fits this way keeps every column and looks as it did;
# 3. when that is not enough, whole columns are left out, the least essential first (each column's rank),
#    and the table says which. Once columns go anyway, a row keeps to one line (the verdict does not wrap):
#    57 subjects on 57 lines are read down at a glance, on 114 they are not. Leaving a column out beats the
#    other ways to fit: a left-out column is named, a cut cell is not, and a table split in two makes the
#    reader match 57 rows across tables;
# 4. only when the always-shown columns still do not fit on one line do their cells wrap; and the name,
#    last of all (an axis name of 50+ characters at 80 columns), onto more lines at its underscores,
#    hyphens, dots or spaces, so it stays whole. A name too long for the always-shown columns to fit beside it
#    (a tag of a sentence) wraps anyway, so it wraps down to _NAME_FLOOR before any column is left out for
#    it: one such name would otherwise empty every row. A name that fits beside them is not wrapped to keep
#    an optional column: like any name, it gives way last.
# The markdown and json formats always carry every column.

_HEADER_LINES = 2  # a header may wrap onto two lines before a column is left out
_NAME_FLOOR = 48
"""The width a name that has to wrap anyway wraps to before columns are left out for it: MMLU's longest
subject (high_school_government_and_politics) is 35; a tag of a sentence (300 characters) wraps to this instead
of pushing every other column out of the table."""
LEFT_OUT_HINT = "--format markdown or json shows every column"

Cell = str | Callable[[int], str]
"""A cell's text, or a function that draws it at the width its column gets (the profile's bar)."""


@dataclass(frozen=True)
class Column:
    """One column of a FittedTable."""

    header: str
    justify: Literal["left", "right"] = "right"
    rank: int = 0
    """0: always shown; otherwise the columns of the highest rank are left out first when the width is short."""
    lines: int = 1
    """How many lines a cell may wrap onto at its spaces (1: never wraps, as for numbers and intervals)."""
    lines_to_keep_columns: int = 1
    """How many lines a cell may wrap onto while that keeps every column (or the always-shown ones need it)."""
    drawn: tuple[int, int] | None = None
    """For drawn cells: the width they are drawn at when there is room, and the narrowest they may get."""
    label: str | None = None
    """The column's name in the note that lists left-out columns, when its header is blank."""


def _wrapped_lines(text: str, width: int) -> int:
    """How many lines rich wraps ``text`` onto at its spaces in ``width`` cells, no word being wider."""
    lines, used = 1, 0
    for word in text.split():
        size = cell_len(word)
        if used and used + 1 + size > width:
            lines, used = lines + 1, size
        else:
            used += (1 if used else 0) + size
    return lines


def _narrowest(text: str, lines: int) -> int:
    """The narrowest width at which ``text`` wraps onto at most ``lines`` lines."""
    whole = cell_len(text)
    if lines <= 1 or " " not in text:
        return whole
    width = max(cell_len(word) for word in text.split())
    while width < whole and _wrapped_lines(text, width) > lines:
        width += 1
    return width


def _span(widths: Iterable[int]) -> int:
    """The width of a table whose columns' texts are ``widths`` wide: one cell of padding either side of each
    and a rule between and around them."""
    widths = list(widths)
    return sum(widths) + 3 * len(widths) + 1


def _cells_prefix(text: str, width: int) -> int:
    """How many characters of ``text`` fill at most ``width`` cells (at least one: a character wider than the
    line still has to go somewhere). A CJK character takes two cells: cut by characters, rich would fold the
    line again and leave one character on a line of its own."""
    used = 0
    for count, char in enumerate(text):
        used += cell_len(char)
        if used > width:
            return max(1, count)
    return len(text)


def _break_name(name: str, width: int) -> str:
    """``name`` on lines of at most ``width`` cells, broken after '_', '-', '/', '.' or ' ' where it can be."""
    lines = [""]
    for piece in re.findall(r"[^_\-/. ]*[_\-/. ]|[^_\-/. ]+", name):
        while piece:
            room = width - cell_len(lines[-1])
            if cell_len(piece) <= room:
                lines[-1] += piece
                piece = ""
            elif lines[-1]:
                lines.append("")
            else:  # one piece longer than a line: the only place left to break it is inside it
                cut = _cells_prefix(piece, width)
                lines[-1], piece = piece[:cut], piece[cut:]
                lines.append("")
    return "\n".join(line for line in lines if line)


@dataclass(frozen=True)
class _Layout:
    kept: list[int]
    widths: list[int] | None  # None: the table fits as it is
    name_width: int | None  # the name column had to wrap at this width


def _floors(columns: Sequence[Column], texts: Sequence[Sequence[str]], keep_columns: bool) -> list[int]:
    """How narrow each column may get: headers on two lines, cells on as many as they may."""
    floors = []
    for column, cells in zip(columns, texts, strict=True):
        lines = max(column.lines, column.lines_to_keep_columns) if keep_columns else column.lines
        drawn = (column.drawn or (0, 0))[1]
        floors.append(max([_narrowest(column.header, _HEADER_LINES), drawn, *(_narrowest(c, lines) for c in cells)]))
    return floors


def _keep(columns: Sequence[Column], floor: Sequence[int], width: int) -> list[int]:
    """The columns to show: the least essential rank after rank leaves until the rest fits (a narrower, less
    essential column does not come back into the room left over: what goes first is what matters least)."""
    kept = list(range(len(columns)))
    for rank in sorted({c.rank for c in columns if c.rank}, reverse=True):
        if _span(floor[i] for i in kept) <= width:
            break
        kept = [i for i in kept if columns[i].rank != rank]
    return kept


def _fit(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], width: int) -> _Layout:
    texts = [[cell for cell in (row[i] for row in rows) if isinstance(cell, str)] for i in range(len(columns))]
    natural = [
        max([cell_len(column.header), (column.drawn or (0, 0))[0], *(cell_len(c) for c in cells)])
        for column, cells in zip(columns, texts, strict=True)
    ]
    if _span(natural) <= width:
        return _Layout(list(range(len(columns))), None, None)
    floor = _floors(columns, texts, keep_columns=True)
    one_line = _floors(columns, texts, keep_columns=False)
    core_fits = _span(one_line[i] for i, c in enumerate(columns) if not c.rank) <= width
    if _span(floor) > width and core_fits:  # columns go: rows keep to one line
        floor = one_line
    if not core_fits:  # the name wraps whatever goes, so no column goes for more of it than _NAME_FLOOR
        floor[0] = min(floor[0], max(_NAME_FLOOR, cell_len(columns[0].header)))
    kept = _keep(columns, floor, width)
    widths = {i: natural[i] for i in kept}
    excess = _span(widths.values()) - width
    while excess > 0:  # the widest column that may give way gives one cell, as rich collapses a table
        room = [i for i in kept if widths[i] > floor[i]]
        if not room:
            break
        widest = max(room, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    name_width = None
    if kept and kept[0] == 0:
        if excess > 0:
            widths[0] = max(1, widths[0] - excess)
        if widths[0] < natural[0]:
            name_width = widths[0]
    return _Layout(kept, [widths[i] for i in kept], name_width)


class FittedTable:
    """A table that lays itself out for the width it is drawn at (see the comment above): a rich renderable
    with the ``add_row``/``add_section`` of a rich Table."""

    def __init__(
        self,
        columns: Sequence[Column],
        title: str | None = None,
        title_justify: Literal["left", "center", "right"] = "center",
        hint: str = LEFT_OUT_HINT,
    ) -> None:
        self.columns = list(columns)
        self.title = title
        self.title_justify = title_justify
        self.hint = hint
        self._rows: list[tuple[list[Cell], str | None]] = []
        self._sections: set[int] = set()  # a rule follows these rows

    def add_row(self, *cells: Cell, style: str | None = None) -> None:
        """A row of cells, one per column."""
        self._rows.append((list(cells), style))

    def add_section(self) -> None:
        """A rule under the last row."""
        if self._rows:
            self._sections.add(len(self._rows) - 1)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        layout = _fit(self.columns, [cells for cells, _ in self._rows], options.max_width)
        table = Table(title=self.title, title_justify=self.title_justify)
        for n, i in enumerate(layout.kept):
            column = self.columns[i]
            if layout.widths is None:
                table.add_column(column.header, justify=column.justify)
            else:
                table.add_column(column.header, justify=column.justify, width=layout.widths[n], overflow="fold")
        for index, (cells, style) in enumerate(self._rows):
            texts = []
            for n, i in enumerate(layout.kept):
                cell = cells[i]
                drawn = self.columns[i].drawn
                if not isinstance(cell, str):
                    cell = cell((drawn or (0, 0))[0] if layout.widths is None else layout.widths[n])
                if i == 0 and layout.name_width is not None:
                    cell = _break_name(cell, layout.name_width)
                texts.append(cell)
            table.add_row(*texts, style=style)
            if index in self._sections:
                table.add_section()
        yield table
        left_out = [c.label or c.header for i, c in enumerate(self.columns) if i not in layout.kept]
        if left_out:
            yield Text(f"left out to fit {options.max_width} columns: {', '.join(left_out)} ({self.hint})")


_MARKDOWN_MARKUP = re.compile(r"[`*<~]|\\(?=[!-/:-@\[-`{-~]|$)|(?<![^\W_])_|_(?![^\W_])|\](?=[(\[:])|&(?=#?\w+;)")
"""What GitHub would read as markup in text from the data: code (`), emphasis (*), HTML and autolinks (<),
strike-through (~), a backslash that escapes the punctuation (or, at the end, the ``**`` closing a bold line)
after it, an ``_`` at a word's edge, a ``]`` that closes a link, an image or a reference definition (``[x](y)``,
``![a](b)``, ``[x][y]``, ``[x]: y``) and an ``&`` that starts an entity (``&amp;``). An ``_`` between letters or
digits emphasises nothing in GFM, so ``snake_case`` names and paths stay as they are, and copyable; a bracket
that closes nothing (the report's own ``[95% CI 72.8–88.0]``) stays bare too: with every ``]:`` escaped, the
document defines no reference a bare ``[x]`` could link to."""

_BLOCK_MARKER = re.compile(r"[#>+\-=]|\[(?=[ xX]\])|\d{1,9}(?=[.)](?:[ \t]|$))")
"""What starts a block when a line begins with it (the text of a bullet, a heading, a bold line): a heading (#),
a quote (>), a list item or a thematic break (+, -, and * and _ which every place escapes), a setext underline
(=), a task list's box ([ ] or [x]) and an ordered list item (1. or 1)), whose dot or parenthesis is escaped."""

_CLOSING_HASHES = re.compile(r"(?:^|(?<=[ \t]))#(?=#*[ \t]*$)")
"""A run of # at the end of a heading, after a space: CommonMark drops it as the heading's closing sequence."""


def markdown_text(text: str) -> str:
    """``text`` (an axis, a tag, a run id, a note naming them) as literal Markdown inside a line: a line break
    would end a table row or a list item, a tag such as ``*new*`` would render as emphasis, ``[x](y)`` as a link
    and ``&amp;`` as ``&``. Text that begins a line needs ``markdown_line`` as well."""
    return _MARKDOWN_MARKUP.sub(lambda found: "\\" + found.group(), " ".join(text.splitlines()))


def _leading_blanks(shown: str) -> str:
    """``shown`` with its leading spaces and tabs as character references: Markdown drops them at the start of
    a table cell, and four of them start a code block at the start of a line."""
    kept = shown.lstrip(" \t")
    return "".join(f"&#{ord(blank)};" for blank in shown[: len(shown) - len(kept)]) + kept


def markdown_line(text: str, *, heading: bool = False) -> str:
    """``text`` as literal Markdown where it begins a line (a bullet's text, a heading, a bold line): as
    ``markdown_text``, and what would start a block at a line's start is escaped too (``# x``, ``> x``,
    ``- x``, ``1. x``, ``---``, leading spaces); ``heading``: also a closing run of ``#`` at its end."""
    shown = _leading_blanks(markdown_text(text))
    marker = _BLOCK_MARKER.match(shown)
    if marker:
        at = marker.end() if marker.group()[0].isdigit() else 0
        shown = f"{shown[:at]}\\{shown[at:]}"
    return _CLOSING_HASHES.sub(r"\\#", shown) if heading else shown


def markdown_code(text: str) -> str:
    """``text`` as a Markdown code span (literal, monospaced), whatever backticks it holds: its fence is one
    backtick longer than its longest run of them, and a space pads text that starts or ends with one (or
    with a space at both ends, which CommonMark would strip)."""
    text = " ".join(text.splitlines())
    if not text:
        return ""
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    padded = text[0] == "`" or text[-1] == "`" or (text[0] == text[-1] == " " and text.strip() != "")
    return f"{fence} {text} {fence}" if padded else f"{fence}{text}{fence}"


def markdown_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    *,
    strong_last_row: bool = False,
    code_columns: frozenset[int] = frozenset(),
) -> list[str]:
    """A GitHub-flavoured Markdown table of ``rows`` under the columns' headers, aligned as they are; every cell
    is literal text (``markdown_text``, its leading spaces kept), then the last row is bold (``strong_last_row``:
    a total) and the ``code_columns`` monospaced (a sparkline)."""

    def cell(text: str, column: int = -1, strong: bool = False) -> str:
        if column in code_columns:
            shown = markdown_code(text)
        else:
            shown = _leading_blanks(markdown_text(text))
            shown = f"**{shown}**" if strong and shown not in ("", "–") else shown
        return shown.replace("|", "\\|")

    last = len(rows) - 1
    lines = ["| " + " | ".join(cell(c.header) for c in columns) + " |"]
    lines.append("|" + "|".join("---:" if c.justify == "right" else ":---" for c in columns) + "|")
    lines += [
        "| " + " | ".join(cell(c, i, strong_last_row and n == last) for i, c in enumerate(row)) + " |"
        for n, row in enumerate(rows)
    ]
    return lines


__all__ = [
    "LEFT_OUT_HINT",
    "Column",
    "FittedTable",
    "markdown_code",
    "markdown_line",
    "markdown_table",
    "markdown_text",
]
