"""The capability profile view: one row per axis with its interval, cost and latency."""

from __future__ import annotations

from rich.table import Table

from eval_harness.cli.render import bar, millis, money, pct, per_dollar, stdout
from eval_harness.types import AxisStats, RunSummary


def profile_table(summary: RunSummary, title: str | None = None) -> Table:
    """The capability profile: one row per axis, then the overall row."""
    table = Table(title=title or f"{summary.model} on {summary.task}", title_justify="left", show_lines=False)
    for name, justify in [
        ("axis", "left"),
        ("n", "right"),
        ("mean %", "right"),
        ("95% CI", "right"),
        ("pass %", "right"),
        ("cost/sample", "right"),
        ("acc per $", "right"),
        ("p50 ms", "right"),
        ("p95 ms", "right"),
        ("err %", "right"),
        ("", "left"),
    ]:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]

    def row(stats: AxisStats, style: str | None = None) -> None:
        ci = f"{pct(stats.ci[0])}–{pct(stats.ci[1])}" if stats.ci else "–"
        table.add_row(
            stats.axis,
            f"{stats.n:,}",
            pct(stats.mean),
            ci,
            pct(stats.pass_rate),
            money(stats.cost_mean_usd),
            per_dollar(stats.accuracy_per_dollar),
            millis(stats.latency_p50_ms),
            millis(stats.latency_p95_ms),
            pct(stats.error_rate),
            bar(stats.mean),
            style=style,
        )

    for stats in summary.axes:
        row(stats)
    table.add_section()
    row(summary.overall, style="bold")
    return table


def headline(summary: RunSummary) -> str:
    """Macro and micro means, labelled, with the error policy and the CI method."""
    methods = sorted({a.ci_method for a in summary.axes})
    parts = [
        f"macro mean (over {len(summary.axes)} axes) {pct(summary.macro_mean)}%",
        f"micro mean (over {summary.records:,} samples) {pct(summary.micro_mean)}%",
        summary.error_policy,
        f"CI: {', '.join(methods)}",
    ]
    if summary.missing:
        parts.append(f"INCOMPLETE: {summary.missing:,} of {summary.expected_records:,} records missing")
    return " · ".join(parts)


def print_profile(summary: RunSummary, title: str | None = None) -> None:
    stdout.print(profile_table(summary, title))
    stdout.print(headline(summary))
    totals = summary.overall
    cost = money(totals.cost_total_usd)
    extra = f" · judge cost {money(summary.judge_cost_usd)}" if summary.judge_cost_usd is not None else ""
    retries = sum(summary.retries_by_cause.values())
    stdout.print(
        f"tokens {totals.prompt_tokens:,} in / {totals.completion_tokens:,} out · cost {cost}{extra}"
        f" · wall {summary.wall_time_s or 0:.1f}s · retries {retries} · backoff {summary.backoff_s:.1f}s"
        + (f" · cached {summary.cached_records:,}" if summary.cached_records else "")
    )
