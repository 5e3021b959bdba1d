"""The comparison of two runs: per-axis scores with intervals, the paired difference and its test, the
verdict, and the latency/cost/error trade-offs; as a terminal table, Markdown or JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from eval_harness.cli.render import interval, millis, money, p_value, pct, signed_points, stdout

if TYPE_CHECKING:
    from eval_harness.compare import CompareAxis, Comparison

_VERDICTS = {"a_better": "A better", "b_better": "B better", "no_difference": "no detectable difference"}
_SCORE_HEADERS = [
    "axis",
    "n",
    "A %",
    "A 95% CI",
    "B %",
    "B 95% CI",
    "B − A (points)",
    "95% CI of diff",
    "test",
    "p",
    "p (Holm)",
    "CIs overlap",
    "verdict",
]
_TRADE_HEADERS = [
    "axis",
    "p50 ms A",
    "p50 ms B",
    "Δ p50",
    "p95 ms A",
    "p95 ms B",
    "Δ p95",
    "cost/sample A",
    "cost/sample B",
    "err % A",
    "err % B",
    "Δ err (points)",
]


def _signed_ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"+{value:,.0f}" if value > 0 else f"−{abs(value):,.0f}" if value < 0 else "0"


def _score_cells(a: CompareAxis, overall: bool = False) -> list[str]:
    return [
        a.axis,
        f"{a.n:,}",
        pct(a.mean_a),
        interval(a.ci_a),
        pct(a.mean_b),
        interval(a.ci_b),
        signed_points(a.diff),
        interval(a.diff_ci, signed=True),
        a.test,
        p_value(a.p_value),
        "–" if overall else p_value(a.p_adjusted),
        "yes" if a.intervals_overlap else "no",
        _VERDICTS[a.verdict],
    ]


def _trade_cells(a: CompareAxis) -> list[str]:
    return [
        a.axis,
        millis(a.latency_p50_ms_a),
        millis(a.latency_p50_ms_b),
        _signed_ms(a.latency_p50_diff_ms),
        millis(a.latency_p95_ms_a),
        millis(a.latency_p95_ms_b),
        _signed_ms(a.latency_p95_diff_ms),
        money(a.cost_mean_a),
        money(a.cost_mean_b),
        pct(a.error_rate_a),
        pct(a.error_rate_b),
        signed_points(a.error_rate_diff),
    ]


def _title(c: Comparison) -> str:
    return f"A = {c.run_a.model} ({c.run_a.run_id})  vs  B = {c.run_b.model} ({c.run_b.run_id}) on {c.run_a.task}"


def _summary_lines(c: Comparison) -> list[str]:
    h = c.headline
    lines = [
        f"headline gap (B − A): macro {pct(h.macro_a)}% → {pct(h.macro_b)}% ({signed_points(h.macro_diff)} points) · "
        f"micro {pct(h.micro_a)}% → {pct(h.micro_b)}% ({signed_points(h.micro_diff)} points, "
        f"95% CI {interval(h.diff_ci, signed=True)}, {h.test} p {p_value(h.p_value)}: {_VERDICTS[h.verdict]})",
    ]
    better = []
    if h.axes_a_better:
        better.append(f"A is better on {', '.join(h.axes_a_better)}")
    if h.axes_b_better:
        better.append(f"B is better on {', '.join(h.axes_b_better)}")
    lines.append(
        ("; ".join(better) if better else "no axis differs detectably")
        + f" (Holm-adjusted, {100 * c.alpha:g}% family-wise; errors counted as wrong)"
    )
    lines.append(f"paired records {c.paired:,} · only in A {c.only_a:,} · only in B {c.only_b:,} (excluded)")
    return lines


def print_comparison(c: Comparison, console: Console | None = None) -> None:
    """The comparison on a terminal."""
    out = console or stdout
    scores = Table(title=_title(c), title_justify="left")
    for i, name in enumerate(_SCORE_HEADERS):
        scores.add_column(name, justify="left" if i in (0, 8, 12) else "right")
    for axis in c.axes:
        style = "green" if axis.verdict == "b_better" else "red" if axis.verdict == "a_better" else None
        scores.add_row(*_score_cells(axis), style=style)
    scores.add_section()
    scores.add_row(*_score_cells(c.overall, overall=True), style="bold")
    out.print(scores)
    trade = Table(title="latency, cost and errors (B − A)", title_justify="left")
    for i, name in enumerate(_TRADE_HEADERS):
        trade.add_column(name, justify="left" if i == 0 else "right")
    for axis in c.axes:
        trade.add_row(*_trade_cells(axis))
    trade.add_section()
    trade.add_row(*_trade_cells(c.overall), style="bold")
    out.print(trade)
    for line in _summary_lines(c):
        out.print(line, markup=False, soft_wrap=True)
    for item in c.forced:
        out.print(f"FORCED: compared although the runs have {item}", style="bold yellow", markup=False, soft_wrap=True)
    for note in c.notes:
        out.print(f"note: {note}", markup=False, soft_wrap=True)


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]], left: set[int]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |"]
    lines.append("|" + "|".join(":---" if i in left else "---:" for i in range(len(headers))) + "|")
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def comparison_markdown(c: Comparison) -> str:
    """The comparison as GitHub-flavoured Markdown."""
    score_rows = [_score_cells(a) for a in c.axes] + [_score_cells(c.overall, overall=True)]
    trade_rows = [_trade_cells(a) for a in c.axes] + [_trade_cells(c.overall)]
    lines = [f"## {_title(c)}", "", *_md_table(_SCORE_HEADERS, score_rows, {0, 8, 12}), ""]
    lines += ["### Latency, cost and errors", "", *_md_table(_TRADE_HEADERS, trade_rows, {0}), ""]
    lines += [f"- {line}" for line in _summary_lines(c)]
    lines += [f"- **FORCED**: compared although the runs have {item}" for item in c.forced]
    lines += [f"- note: {note}" for note in c.notes]
    return "\n".join(lines) + "\n"


def comparison_json(c: Comparison) -> str:
    """The comparison as indented JSON (the scripting interface)."""
    return c.model_dump_json(indent=2) + "\n"
