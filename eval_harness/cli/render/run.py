"""Views of a run: progress while it goes, the dry-run preview, the result at the end."""

from __future__ import annotations

import math
import os
import sys
import time
from typing import TYPE_CHECKING

from eval_harness.cli.render import counted, money, percent, stderr, stdout
from eval_harness.cli.render.profile import print_profile
from eval_harness.planning import DryRun
from eval_harness.runner import Progress as RunProgress
from eval_harness.runner import RunResult
from eval_harness.tally import nothing_billed

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID


def print_result(result: RunResult) -> None:
    if result.summary.records:  # a run stopped before its first record (a refused key, no server) has no profile
        print_profile(result.summary)
    stdout.print(
        f"run {result.manifest.run_id}: {result.status}, {result.new_records:,} new records, "
        f"{result.skipped:,} already done → {result.run_dir}",
        markup=False,
        soft_wrap=True,  # one line however narrow the terminal: the directory is copied from it
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
        f"{counted(dry.count, 'prompt')} rendered; nothing was called or written. Estimated prompt tokens "
        f"{dry.prompt_tokens:,}, output tokens {outputs}, {cost}",
        soft_wrap=True,
    )
    if dry.longest_prompt_sample is not None:
        stdout.print(longest_prompt_line(dry), soft_wrap=True)


def longest_prompt_line(dry: DryRun) -> str:
    """The longest prompt's estimated size, and with max_tokens what the model's context must hold: the
    first question of a local model's user is whether the prompts fit."""
    line = f"Longest prompt ≈ {dry.longest_prompt_tokens:,} tokens (sample {dry.longest_prompt_sample})"
    if dry.max_tokens is not None:
        line += f", ≈ {dry.longest_prompt_tokens + dry.max_tokens:,} with max_tokens {dry.max_tokens:,}"
    return (
        f"{line}: the model's context must hold it. Estimated at about 4 characters a token; a server's "
        "tokenizer may differ (a small model's vocabulary can need 2-3 times as many)"
    )


def rate_text(per_s: float) -> str:
    """Samples a second: whole numbers from 10 up, two significant digits below (a local model doing 0.47 a
    second is not '0/s'), at most 8 characters."""
    if per_s >= 9.95:
        return f"{per_s:,.0f}/s"
    if per_s == 0:
        return "0/s"
    if per_s < 0.001:
        return "<0.001/s"
    decimals = 1 - math.floor(math.log10(per_s))
    return f"{per_s:.{decimals}f}/s"


def time_left(progress: RunProgress, per_s: float) -> str:
    """The time left at this session's rate, as h:mm:ss (rich's bar shows the same); -:--:-- before a rate."""
    left = progress.total - progress.done
    if left <= 0:
        return "0:00:00"
    if per_s <= 0:
        return "-:--:--"
    minutes, seconds = divmod(math.ceil(left / per_s), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}"


_STATS_WIDTH = len("scored mean 100.0% · errors 10,000 · cost $1,000.0000")


class ProgressDisplay:
    """A rich progress bar on a terminal; a plain line every few seconds otherwise (to stderr)."""

    def __init__(self, total: int, label: str, plain_interval_s: float = 5.0) -> None:
        # a terminal that cannot move its cursor (TERM=dumb: Emacs' shell, some CI logs) shows no live bar (rich
        # draws none there): it gets the plain lines, as a pipe does
        self._interactive = sys.stderr.isatty() and os.environ.get("TERM", "") not in ("dumb", "unknown")
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
        if not progress.cost_known:
            cost = "unknown"
        elif nothing_billed(progress.session_done, progress.session_errors, progress.session_cached, progress.cost_usd):
            cost = "–"  # as the summary at the end shows it: no call was billed yet, and $0 would read as a price
        else:
            cost = money(progress.cost_usd)  # as the tables write it: "$0", "$0.0147", "$2.1e-05"
        # the mean of the answers scored so far, errors left out: the headline, which counts errors as 0, is lower
        stats = f"scored mean {percent(progress.mean)} · errors {progress.errors} · cost {cost}"
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=progress.done, rate=rate_text(rate), stats=stats)
            return
        now = time.monotonic()
        if now - self._last_plain >= self._interval or progress.done == progress.total:
            self._last_plain = now
            print(
                f"{self._label}: {progress.done:,}/{progress.total:,} done · {rate_text(rate)} · "
                f"eta {time_left(progress, rate)} · {stats}",
                file=sys.stderr,
                flush=True,
            )

    def note(self, message: str) -> None:
        stderr.print(message, markup=False)


__all__ = [
    "ProgressDisplay",
    "longest_prompt_line",
    "print_dry_run",
    "print_result",
    "rate_text",
    "time_left",
]
