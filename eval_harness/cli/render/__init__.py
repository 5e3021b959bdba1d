"""Everything the CLI draws lives in this package, the only place that imports rich.

This module holds the two consoles and the small formatters every view shares."""

from __future__ import annotations

import math
import sys

from rich.console import Console

# Piped output has no terminal width; 160 columns keeps the wide profile table on one line per axis.
stdout = Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)  # a resume command must stay one line


def pct(value: float | None, digits: int = 1) -> str:
    """0.8123 → '81.2'; None → '–'."""
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{100 * value:.{digits}f}"


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
