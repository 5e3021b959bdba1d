"""Everything the CLI draws: tables, progress, profiles. The only module that imports rich."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
from rich.table import Table

from eval_harness.datasets import DatasetReport
from eval_harness.runner import DryRun, RunResult
from eval_harness.runner import Progress as RunProgress
from eval_harness.tasks import LoadedTask
from eval_harness.types import AxisStats, RunSummary

# Piped output has no terminal width; 160 columns keeps the wide profile table on one line per axis.
stdout = Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 160)
stderr = Console(stderr=True, highlight=False)


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


def _per_dollar(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


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
            _per_dollar(stats.accuracy_per_dollar),
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


def print_result(result: RunResult) -> None:
    print_profile(result.summary)
    stdout.print(
        f"run {result.manifest.run_id}: {result.status}, {result.new_records:,} new records, "
        f"{result.skipped:,} already done → {result.run_dir}"
    )


def print_dry_run(dry: DryRun) -> None:
    for index, messages in enumerate(dry.first_prompts, 1):
        stdout.rule(f"prompt {index}")
        for message in messages:
            stdout.print(f"[{message.role}]", style="bold", markup=False)
            stdout.print(message.content, markup=False)
    stdout.rule()
    cost = money(dry.estimated_cost_usd) if dry.estimated_cost_usd is not None else "unknown (no price for this model)"
    outputs = f"≤ {dry.max_output_tokens:,}" if dry.max_output_tokens is not None else "unbounded (no max_tokens)"
    stdout.print(
        f"{dry.count:,} prompts rendered; nothing was called or written. Estimated prompt tokens "
        f"{dry.prompt_tokens:,}, output tokens {outputs}, cost ≤ {cost}"
    )


def print_dataset_report(report: DatasetReport) -> None:
    axes = ", ".join(f"{axis} {count:,}" for axis, count in sorted(report.axis_counts.items())) or "none"
    stdout.print(
        f"{report.path}: {report.lines:,} lines, {report.valid:,} valid, {len(report.blank_lines):,} blank, "
        f"{len(report.duplicate_ids):,} duplicate ids, {report.problem_count:,} problems"
    )
    stdout.print(f"axes: {axes}")
    stdout.print(f"sha256: {report.sha256}")
    if report.blank_lines:
        shown = ", ".join(map(str, report.blank_lines[:10]))
        more = f" (+{len(report.blank_lines) - 10} more)" if len(report.blank_lines) > 10 else ""
        stdout.print(f"blank lines (allowed, skipped): {shown}{more}")
    for warning in report.warnings[:10]:
        stdout.print(f"warning: {warning}", markup=False)
    for line in report.problem_lines():
        stdout.print(line, markup=False)


def print_tasks(tasks: Sequence[LoadedTask]) -> None:
    table = Table(title="tasks", title_justify="left")
    for name in ("task", "dataset", "template", "scorers"):
        table.add_column(name, no_wrap=True)
    table.add_column("description")
    for task in tasks:
        spec = task.spec
        scorers = ", ".join(
            s.name + (f"({', '.join(f'{k}={v}' for k, v in s.args.items())})" if s.args else "") for s in spec.scorers
        )
        table.add_row(spec.name, spec.dataset.path or "(--dataset)", spec.template, scorers, spec.description)
    stdout.print(table)


class ProgressDisplay:
    """A rich progress bar on a terminal; a plain line every few seconds otherwise (to stderr)."""

    def __init__(self, total: int, label: str, enabled: bool = True, plain_interval_s: float = 5.0) -> None:
        self._enabled = enabled
        self._interactive = enabled and sys.stderr.isatty()
        self._label = label
        self._interval = plain_interval_s
        self._last_plain = time.monotonic()
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if self._interactive:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeRemainingColumn(),
                TextColumn("{task.fields[stats]}"),
                console=stderr,
                transient=True,
            )
            self._task = self._progress.add_task(label, total=total, completed=0, rate="", stats="")

    def __enter__(self) -> ProgressDisplay:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def update(self, progress: RunProgress) -> None:
        if not self._enabled:
            return
        rate = progress.session_done / progress.elapsed_s if progress.elapsed_s > 0 else 0.0
        cost = f"${progress.cost_usd:.4f}" if progress.cost_known else "unknown"
        stats = f"mean {pct(progress.mean)}% · errors {progress.errors} · cost {cost}"
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=progress.done, rate=f"{rate:,.0f}/s", stats=stats)
            return
        now = time.monotonic()
        if now - self._last_plain >= self._interval or progress.done == progress.total:
            self._last_plain = now
            print(
                f"{self._label}: {progress.done:,}/{progress.total:,} done · {rate:,.0f}/s · {stats}",
                file=sys.stderr,
                flush=True,
            )

    def note(self, message: str) -> None:
        stderr.print(message, markup=False)
