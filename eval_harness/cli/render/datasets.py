"""Views of datasets and tasks."""

from __future__ import annotations

from collections.abc import Sequence

from eval_harness.cli.render import counted, stdout
from eval_harness.cli.render.tables import Column, FittedTable
from eval_harness.datasets import DatasetReport
from eval_harness.tasks import LoadedTask


def print_dataset_report(report: DatasetReport) -> None:
    axes = ", ".join(f"{axis} {count:,}" for axis, count in sorted(report.axis_counts.items())) or "none"
    stdout.print(
        f"{report.path}: {counted(report.lines, 'line')}, {report.valid:,} valid, {len(report.blank_lines):,} blank, "
        f"{counted(len(report.duplicate_ids), 'duplicate id')}, {counted(report.problem_count, 'problem')}"
    )
    stdout.print(f"axes: {axes}")
    stdout.print(f"sha256: {report.sha256}")
    if report.blank_lines:
        shown = ", ".join(map(str, report.blank_lines[:10]))
        more = f" (+{len(report.blank_lines) - 10} more)" if len(report.blank_lines) > 10 else ""
        stdout.print(f"blank lines (allowed, skipped): {shown}{more}")
    for warning in report.warnings[:10]:
        stdout.print(f"warning: {warning}", markup=False, soft_wrap=True)
    for line in report.problem_lines():
        stdout.print(line, markup=False, soft_wrap=True)


# The name is what --task takes, so it is never cut; at a narrow width the template goes first, then the
# description, then the dataset, and the table names what it left out.
_TASK_COLUMNS = [
    Column("task", justify="left"),
    Column("dataset", justify="left", rank=2),
    Column("template", justify="left", rank=4),
    Column("scorers", justify="left", rank=1, lines=4, lines_to_keep_columns=4),
    Column("description", justify="left", rank=3, lines=12, lines_to_keep_columns=12),
]


def print_tasks(tasks: Sequence[LoadedTask]) -> None:
    table = FittedTable(_TASK_COLUMNS, title="tasks", title_justify="left", hint="a wider terminal shows them")
    for task in tasks:
        spec = task.spec
        scorers = ", ".join(s.key for s in spec.scorers)
        table.add_row(task.lookup_name, spec.dataset.path or "(--dataset)", spec.template, scorers, spec.description)
    stdout.print(table)
