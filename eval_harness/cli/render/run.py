"""Views of a run: progress while it goes, the dry-run preview, the result at the end."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

from eval_harness.cli.render import money, pct, stderr, stdout
from eval_harness.cli.render.profile import print_profile
from eval_harness.planning import DryRun
from eval_harness.runner import Progress as RunProgress
from eval_harness.runner import RunResult

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


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
    if dry.estimated_cost_usd is None:
        cost = "cost unknown (no price for this model)"
    elif dry.max_output_tokens is None:  # what the prompts cost is a floor, not a bound
        cost = f"cost ≥ {money(dry.estimated_cost_usd)} (the prompts; set max_tokens for an upper bound)"
    else:
        cost = f"cost ≤ {money(dry.estimated_cost_usd)}"
    outputs = f"≤ {dry.max_output_tokens:,}" if dry.max_output_tokens is not None else "unbounded (no max_tokens)"
    stdout.print(
        f"{dry.count:,} prompts rendered; nothing was called or written. Estimated prompt tokens "
        f"{dry.prompt_tokens:,}, output tokens {outputs}, {cost}",
        soft_wrap=True,
    )


_STATS_WIDTH = len("scored mean 100.0% · errors 10,000 · cost $1,000.0000")


class ProgressDisplay:
    """A rich progress bar on a terminal; a plain line every few seconds otherwise (to stderr)."""

    def __init__(self, total: int, label: str, plain_interval_s: float = 5.0) -> None:
        self._interactive = sys.stderr.isatty()
        self._label = label
        self._interval = plain_interval_s
        self._last_plain = time.monotonic()
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if self._interactive:
            # Imported here: a run whose output is not a terminal never draws the bar.
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
            from rich.table import Column

            # Every column gets a fixed width that fits the terminal (rich's own shrinking would squeeze the
            # count and the time left to nothing first): the label, then the running figures, give way and
            # are cut with "…" on a narrow terminal.
            count, rate, eta, gaps = 2 * len(str(total)) + 1, 8, 7, 5
            bar = 10 if stderr.width < 120 else 30
            fixed = count + bar + rate + eta + gaps
            stats = max(12, min(_STATS_WIDTH, stderr.width - fixed - 12))
            description = max(8, min(len(label), stderr.width - fixed - stats))

            def cut(width: int) -> Column:
                return Column(width=width, no_wrap=True, overflow="ellipsis")

            self._progress = Progress(
                TextColumn("{task.description}", markup=False, table_column=cut(description)),
                MofNCompleteColumn(table_column=cut(count)),
                BarColumn(bar_width=bar, table_column=cut(bar)),
                TextColumn("{task.fields[rate]}", markup=False, table_column=cut(rate)),
                TimeRemainingColumn(table_column=cut(eta)),
                TextColumn("{task.fields[stats]}", markup=False, table_column=cut(stats)),
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
        rate = progress.session_done / progress.elapsed_s if progress.elapsed_s > 0 else 0.0
        cost = f"${progress.cost_usd:.4f}" if progress.cost_known else "unknown"
        # the mean of the answers scored so far, errors left out: the headline, which counts errors as 0, is lower
        stats = f"scored mean {pct(progress.mean)}% · errors {progress.errors} · cost {cost}"
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
