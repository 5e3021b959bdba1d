"""Everything the CLI draws lives in this package, the only place that imports rich.

This module holds the two consoles and the small formatters every view shares."""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import select
import sys
from collections.abc import Callable
from decimal import ROUND_DOWN, ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

from eval_harness.cli import visible
from eval_harness.cli.stream_guard import stderr_broke, stdout_broke, stdout_failed
from eval_harness.proportions import signed_points

# Piped output has no terminal width; 160 columns keeps the wide profile table on one line per axis, unless
# COLUMNS says how wide the reader is (rich reads it then).
# No console reads markup: what is printed holds data (axis names, provider messages, paths) whose brackets
# are text ("[/messages/0]" would fail as a closing tag, "[local-embeddings]" would vanish as a style).


class _Console(Console):
    def render_str(self, text: str, **options: Any) -> Text:
        """Every string printed (table cells included) reaches the terminal without its control characters."""
        return super().render_str(visible(text), **options)

    def on_broken_pipe(self) -> None:
        """The reader of our output went away (`| head`): as ``stream_guard`` says (rich exits 1 here, a failed
        gate's code). Met in-process only: the process's own streams are guarded before rich writes to them."""
        self.quiet = True
        if self.stderr:
            stderr_broke()
        else:
            stdout_broke()


_WIDTH_GIVEN = sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit()
stdout = _Console(highlight=False, markup=False, soft_wrap=False, width=None if _WIDTH_GIVEN else 160)
stderr = _Console(stderr=True, highlight=False, markup=False, soft_wrap=True)  # a resume command stays one line


def pct(value: float | None, digits: int = 1) -> str:
    """0.8123 → '81.2'; None → '–'."""
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.{digits}f}"


def percent(value: float | None, digits: int = 1) -> str:
    """0.8123 → '81.2%'; None → '–' (a dash is no percentage: '–%' read as a broken figure)."""
    shown = pct(value, digits)
    return shown if shown == "–" else f"{shown}%"


def money(value: float | None) -> str:
    """USD with enough digits for per-sample costs; None (unknown price) → 'unknown'."""
    if value is None:
        return "unknown"
    if value == 0:
        return "$0"
    return f"${value:.2g}" if value < 0.01 else f"${value:,.4f}"


def millis(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def bar(value: float | None, width: int = 20) -> str:
    """A text bar of ``value`` in [0, 1], in eighths of a cell."""
    if value is None or math.isnan(value):
        return ""
    eighths = round(max(0.0, min(1.0, value)) * width * 8)
    full, rest = divmod(eighths, 8)
    partial = " ▏▎▍▌▋▊▉"[rest] if rest else ""
    return ("█" * full + partial).ljust(width)


def per_dollar(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def file_console(handle: TextIO) -> Console:
    """A console that writes plain text (no colour, 160 columns) to an open file, for ``--output``."""
    return _Console(
        file=handle, highlight=False, markup=False, soft_wrap=False, width=160, no_color=True, color_system=None
    )


def interval(bounds: tuple[float, float] | None, signed: bool = False) -> str:
    """A 95% interval in percent, e.g. '61.3–73.1', or in signed points for a difference."""
    if bounds is None:
        return "–"
    if signed:
        return f"[{signed_points(bounds[0], bound=True)}, {signed_points(bounds[1], bound=True)}]"
    return f"{pct(bounds[0])}–{pct(bounds[1])}"


ALPHA = 0.05
"""The level the verdicts read p-values at: a printed p never rounds across it."""


def p_value(value: float | None) -> str:
    """A p-value that never reads as the other side of 0.05: '0.125', '0.0654', '0.0499' (0.04996 is cut to
    it, not rounded up to 0.0500), '3.4e-07', '1'."""
    if value is None or math.isnan(value):
        return "–"
    if value >= 0.9995:
        return "1"
    if value < 0.001:
        return f"{value:#.2g}"  # '#': two significant figures, the second 0 too (0.00020, not 0.0002)
    if value < 0.1:  # three significant figures, cut (not rounded) below ALPHA so the text stays below it
        shown = _significant(value, 3, ROUND_DOWN if value < ALPHA else ROUND_HALF_EVEN)
        if float(shown) < 0.1:
            return shown
    return f"{value:.3f}"


def _significant(value: float, figures: int, rounding: str) -> str:
    """``value`` to ``figures`` significant figures in fixed notation, rounded as ``rounding`` (a decimal mode)."""
    decimals = figures - 1 - math.floor(math.log10(value))
    return f"{Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals), rounding=rounding):f}"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and its noun, singular for one: '1 problem', '3 problems', '1 axis', '2 axes'."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def run_state(status: str, records: int, expected: int) -> str:
    """How far a run is, for a title: 'RUNNING: 30 of 40 records so far' while its process writes it,
    'INCOMPLETE (interrupted): 10 of 40 records missing' when records are missing, '' when none is."""
    if status == "running":
        return f"RUNNING: {records:,} of {expected:,} records so far"
    if records >= expected:
        return ""
    known = "" if status == "complete" else f" ({status})"
    return f"INCOMPLETE{known}: {expected - records:,} of {expected:,} records missing"


def counted_n(n: int, samples: int | None) -> str:
    """A row's record count, with the samples its interval is over when they differ (epochs): '15 (5 samples)'."""
    return f"{n:,}" if samples is None or samples == n else f"{n:,} ({counted(samples, 'sample')})"


def method_name(method: str) -> str:
    """An interval method as a table cell: 'wilson', 't-by-sample'; '–' for no interval."""
    return "–" if method == "none" else method


def sparkline(counts: list[int]) -> str:
    """A histogram as one line of block characters, one per bin; an empty bin is a blank."""
    top = max(counts, default=0)
    if top == 0:
        return " " * len(counts)
    blocks = "▁▂▃▄▅▆▇█"
    return "".join(" " if c == 0 else blocks[min(7, (c * 8 - 1) // top)] for c in counts)


def ascii_json(text: str) -> str:
    """JSON text with every non-ASCII character written as its ``\\uXXXX`` escape: the same document, for an
    output that cannot encode the characters themselves (a Windows runner's cp1252, PYTHONIOENCODING=ascii)."""
    return _NON_ASCII.sub(lambda match: json.dumps(match.group())[1:-1], text)  # json's own \\uXXXX (pairs)


_NON_ASCII = re.compile(r"[^\x00-\x7f]")


def terminal_safe_json(text: str) -> str:
    """JSON text with DEL, the C1 controls and the bidirectional overrides written as ``\\uXXXX`` (JSON may hold them
    raw, which a terminal the document is printed on acts on: U+009B is a control sequence's start). The same
    document: outside its strings JSON holds none of them."""
    return _UNSAFE_RAW.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


_UNSAFE_RAW = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _stdout_is_utf8() -> bool:
    return codecs.lookup(sys.stdout.encoding or "ascii").name == "utf-8"


def emit_text(text: str, output: Path | None, *, is_json: bool = False) -> None:
    """Write ``text`` (JSON, Markdown) to ``output``, or to standard output when None (JSON as escaped ASCII when
    standard output is not UTF-8: a script's parser then reads the same document)."""
    if is_json:
        text = terminal_safe_json(text)
    if output is None:
        _write_stdout(ascii_json(text) if is_json and not _stdout_is_utf8() else text)
    else:
        output.write_text(text, encoding="utf-8")


def _write_stdout(text: str) -> None:
    """``text`` on standard output whole; when its reader went away, as ``stream_guard.stdout_broke`` says.

    Written to the file descriptor, not through ``sys.stdout``: under ``PYTHONUNBUFFERED=1`` (common in
    containers) a text stream drops what a pipe did not take when its reader closed, raising nothing, so a
    JSON document cut by ``| head`` exited 0. ``os.write`` says EPIPE on the next write."""
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture): it takes the text whole
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    sys.stdout.flush()  # what was printed before comes first
    data = memoryview(text.encode(sys.stdout.encoding or "utf-8", sys.stdout.errors or "strict"))
    try:
        while data:
            try:
                data = data[os.write(descriptor, data) :]
            except BlockingIOError:  # a non-blocking pipe a parent shares (node, some CI runners): wait for room
                select.select([], [descriptor], [])
    except BrokenPipeError:
        stdout_broke()  # as the console does (see _Console.on_broken_pipe)
    except OSError as exc:  # `>/dev/full`
        stdout_failed(exc)


def emit_view(draw: Callable[[Console], None], output: Path | None) -> None:
    """Draw a view on the terminal, or as plain text into ``output``."""
    if output is None:
        draw(stdout)
        return
    with output.open("w", encoding="utf-8") as handle:
        draw(file_console(handle))


def emit(
    format_: str,
    output: Path | None,
    *,
    json_text: Callable[[], str],
    markdown_text: Callable[[], str] | None,
    draw: Callable[[Console], None],
) -> None:
    """Show a document as ``json``, ``markdown`` or a terminal ``table``, on standard output or into ``output``."""
    if format_ == "json":
        emit_text(json_text(), output, is_json=True)
    elif format_ == "markdown" and markdown_text is not None:
        emit_text(markdown_text(), output)
    else:
        emit_view(draw, output)


__all__ = [
    "ascii_json",
    "bar",
    "counted",
    "counted_n",
    "emit",
    "emit_text",
    "emit_view",
    "file_console",
    "interval",
    "method_name",
    "millis",
    "money",
    "p_value",
    "pct",
    "per_dollar",
    "percent",
    "run_state",
    "signed_points",
    "sparkline",
    "stderr",
    "stdout",
    "terminal_safe_json",
]
