"""The comparison of two runs: per-axis scores with intervals, the paired difference and its test, the
verdict, and the latency/cost/error trade-offs; as a terminal table, Markdown or JSON."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Final

from rich.console import Console

from eval_harness.cli.render import counted_n, interval, millis, money, p_value, pct, percent, signed_points, stdout
from eval_harness.cli.render.tables import (
    Column,
    FittedTable,
    markdown_code,
    markdown_line,
    markdown_table,
    markdown_text,
)

if TYPE_CHECKING:
    from eval_harness.compare import CompareAxis, Comparison, UnpairedAxis
    from eval_harness.types import PairedInterval, PairedTest

_VERDICTS = {"a_better": "A better", "b_better": "B better", "no_difference": "no detectable difference"}
# When the width is short (see FittedTable), the axis, the difference and the verdict stay. The paired
# interval of the difference goes last: it is what tells the two runs apart; then the two means; then the
# Holm-adjusted p, the one the verdict reads. The per-run intervals are in each run's `report`; with many
# axes the unadjusted p misleads; the test is the same on most rows; overlapping intervals is a
# conservative screen the paired interval supersedes. The interval of the difference is per axis, not
# adjusted for the number of axes as the verdict is: its header says so.
_SCORE_COLUMNS = [
    Column("axis", "left"),
    Column("n", rank=5),
    Column("A %", rank=3),
    Column("A 95% CI", rank=6),
    Column("B %", rank=3),
    Column("B 95% CI", rank=6),
    Column("B − A (points)"),
    Column("95% CI of diff (unadjusted)", rank=2),
    Column("test", "left", rank=8),
    Column("p", rank=7),
    Column("p (Holm)", rank=4),
    Column("CIs overlap", rank=9),
    Column("verdict", "left", lines_to_keep_columns=2),
]
# Of the trade-offs, the deltas stay; the absolute latencies go first, p95 before p50.
_TRADE_COLUMNS: Final = [
    Column("axis", "left"),
    Column("p50 ms A", rank=5),
    Column("p50 ms B", rank=5),
    Column("Δ p50 ms"),
    Column("p95 ms A", rank=6),
    Column("p95 ms B", rank=6),
    Column("Δ p95 ms", rank=2),
    Column("cost/sample A", rank=1),
    Column("cost/sample B", rank=1),
    Column("err % A", rank=4),
    Column("err % B", rank=4),
    Column("Δ err (points)"),
]


def _trade_columns(c: Comparison) -> list[Column]:
    """The trade-offs' columns; with several epochs a sample, the mean cost is a paired record's, not a sample's."""
    if c.overall.n == c.overall.samples:
        return _TRADE_COLUMNS
    return [replace(column, header=column.header.replace("/sample", "/record")) for column in _TRADE_COLUMNS]


def _signed_ms(value: float | None) -> str:
    if value is None:
        return "–"
    return f"+{value:,.0f}" if value > 0 else f"−{abs(value):,.0f}" if value < 0 else "0"


def _score_cells(a: CompareAxis, overall: bool = False) -> list[str]:
    return [
        a.axis,
        counted_n(a.n, a.samples),
        pct(a.mean_a),
        interval(a.ci_a),
        pct(a.mean_b),
        interval(a.ci_b),
        signed_points(a.diff),
        interval(a.diff_ci, signed=True),
        a.test,
        p_value(a.p_value),
        "–" if overall else p_value(a.p_adjusted),
        "–" if a.intervals_overlap is None else "yes" if a.intervals_overlap else "no",
        _VERDICTS[a.verdict],
    ]


def _unpaired_cells(u: UnpairedAxis) -> list[str]:
    """The row of an axis with no pair: named in the table where a reader looks for it, with nothing to show."""
    return [u.axis, "0", *["–"] * (len(_SCORE_COLUMNS) - 3), "not compared"]


def _trade_cells(a: CompareAxis) -> list[str]:
    return [
        a.axis,
        millis(a.latency_p50_ms_a),
        millis(a.latency_p50_ms_b),
        _signed_ms(a.latency_p50_diff_ms),
        millis(a.latency_p95_ms_a),
        millis(a.latency_p95_ms_b),
        _signed_ms(a.latency_p95_diff_ms),
        _cost(a.cost_mean_a, a.billed_nothing_a),
        _cost(a.cost_mean_b, a.billed_nothing_b),
        pct(a.error_rate_a),
        pct(a.error_rate_b),
        signed_points(a.error_rate_diff),
    ]


def _cost(mean: float | None, billed_nothing: bool) -> str:
    """A run's cost per record; – where no record was billed (no price to show)."""
    return "–" if mean is None and billed_nothing else money(mean)


def _title(c: Comparison) -> str:
    runs = f"A = {c.run_a.model} ({c.run_a.run_id})  vs  B = {c.run_b.model} ({c.run_b.run_id}) on {c.run_a.task}"
    # with records left out, each column is over the pairs, not its run's own figure (the run's report)
    return f"{runs}, over their {c.paired:,} paired records only" if c.only_a or c.only_b else runs


def _headline_label(c: Comparison) -> str:
    if not (c.only_a or c.only_b):
        return "headline gap (B − A)"
    unpaired = ", ".join(u.axis for u in c.unpaired_axes)
    return "headline gap (B − A) over the paired records only" + (f" ({unpaired} not compared)" if unpaired else "")


_SAME_SETTINGS = (
    "no setting (the same model and arguments, generation, prompt, dataset, scorers, seed, epochs and limit)"
)


def _differs_line(c: Comparison, code: bool = False) -> str:
    """The settings that tell the runs apart: the one clue beyond the run ids when the model is the same."""
    if not c.differs:
        return f"differs: {_SAME_SETTINGS}"
    return "differs: " + " · ".join(markdown_code(change.text) if code else change.text for change in c.differs)


def _incomplete_lines(c: Comparison) -> list[str]:
    """A line for each run with records missing: its records only in the other run are left out of the pairs."""
    lines = []
    for side, run in c.incomplete:
        expected = run.records + run.missing
        if run.status == "running":
            lines.append(
                f"RUNNING: {side} ({run.run_id}) is still being written: {run.records:,} of {expected:,} records so "
                "far; the comparison pairs those"
            )
            continue
        state = "records lost" if run.status == "complete" else run.status
        lines.append(
            f"INCOMPLETE ({state}): {side} ({run.run_id}) has {run.missing:,} of {expected:,} records missing; the "
            f"comparison pairs the rest (continue it with: eval-harness resume {run.run_dir})"
        )
    return lines


def _summary_lines(c: Comparison) -> list[str]:
    h = c.headline
    lines = [
        f"{_headline_label(c)}: macro {percent(h.macro_a)} → {percent(h.macro_b)} "
        f"({signed_points(h.macro_diff)} points) · "
        f"micro {percent(h.micro_a)} → {percent(h.micro_b)} ({signed_points(h.micro_diff)} points, "
        f"95% CI {interval(h.diff_ci, signed=True)}, {h.test} p {p_value(h.p_value)}: "
        f"{_VERDICTS[h.verdict]})",
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
    lines.append(_methods_line(c))
    return lines


def _interval_name(method: PairedInterval) -> str | None:
    """The interval of a difference as the methods line describes it; None: no interval."""
    match method:
        case "newcombe":
            return "Newcombe's score interval for paired proportions (0/1 scores)"
        case "t":
            return "Student-t on the paired differences"
        case "none":
            return None


def _test_name(test: PairedTest) -> str | None:
    """The paired test as the methods line describes it; None: no test."""
    match test:
        case "mcnemar":
            return "McNemar exact (0/1 scores)"
        case "sign-flip":
            return "sign-flip (paired randomization, exact over every sign pattern)"
        case "paired-t":
            return "paired t-test"
        case "none":
            return None


def _methods_line(c: Comparison) -> str:
    """How the intervals of the difference and the p-values were made, as far as the rows use them."""
    rows = [*c.axes, c.overall]
    intervals = [name for method in sorted({a.diff_ci_method for a in rows}) if (name := _interval_name(method))]
    tests = [name for test in sorted({a.test for a in rows}) if (name := _test_name(test))]
    shown = f"{'; '.join(intervals)} (95% per axis, unadjusted)" if intervals else "none"
    return (
        f"intervals of B − A: {shown} · tests: {'; '.join(tests) or 'none'} · per-run "
        "intervals: Wilson for 0/1 scores, Student-t otherwise"
    )


def print_comparison(c: Comparison, console: Console | None = None) -> None:
    """The comparison on a terminal."""
    out = console or stdout
    # the header is printed above the table, not as its title: a title wraps at the table's width, and the
    # settings line under it is as long as the differences are many
    out.print(_title(c), style="table.title", markup=False, soft_wrap=True)
    out.print(_differs_line(c), markup=False, soft_wrap=True)
    for line in _incomplete_lines(c):
        out.print(line, style="bold yellow", markup=False, soft_wrap=True)
    scores = FittedTable(_SCORE_COLUMNS)
    for axis in c.axes:
        style = "green" if axis.verdict == "b_better" else "red" if axis.verdict == "a_better" else None
        scores.add_row(*_score_cells(axis), style=style)
    for unpaired in c.unpaired_axes:
        scores.add_row(*_unpaired_cells(unpaired), style="yellow")
    scores.add_section()
    scores.add_row(*_score_cells(c.overall, overall=True), style="bold")
    out.print(scores)
    trade = FittedTable(_trade_columns(c), title="latency, cost and errors (B − A)", title_justify="left")
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


def comparison_markdown(c: Comparison) -> str:
    """The comparison as GitHub-flavoured Markdown."""
    score_rows = [_score_cells(a) for a in c.axes] + [_unpaired_cells(u) for u in c.unpaired_axes]
    score_rows.append(_score_cells(c.overall, overall=True))
    trade_rows = [_trade_cells(a) for a in c.axes] + [_trade_cells(c.overall)]
    lines = [f"## {markdown_line(_title(c), heading=True)}", "", _differs_line(c, code=True), ""]
    lines += [f"**{markdown_line(line)}**" for line in _incomplete_lines(c)] + ([""] if c.incomplete else [])
    lines += [*markdown_table(_SCORE_COLUMNS, score_rows), ""]
    lines += ["### Latency, cost and errors", "", *markdown_table(_trade_columns(c), trade_rows), ""]
    lines += [f"- {markdown_line(line)}" for line in _summary_lines(c)]
    lines += [f"- **FORCED**: compared although the runs have {markdown_text(item)}" for item in c.forced]
    lines += [f"- note: {markdown_text(note)}" for note in c.notes]
    return "\n".join(lines) + "\n"


def comparison_json(c: Comparison) -> str:
    """The comparison as indented JSON (the scripting interface)."""
    return c.model_dump_json(indent=2) + "\n"


__all__ = [
    "comparison_json",
    "comparison_markdown",
    "print_comparison",
]
