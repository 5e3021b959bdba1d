"""Views of datasets and tasks."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from eval_harness.cli.render import counted, stdout
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


def print_tasks(tasks: Sequence[LoadedTask]) -> None:
    table = Table(title="tasks", title_justify="left")
    table.add_column("task", no_wrap=True)
    table.add_column("dataset", no_wrap=True)
    table.add_column("template", no_wrap=True)
    table.add_column("scorers")
    table.add_column("description", ratio=1)
    for task in tasks:
        spec = task.spec
        scorers = ", ".join(s.key for s in spec.scorers)
        table.add_row(spec.name, spec.dataset.path or "(--dataset)", spec.template, scorers, spec.description)
    stdout.print(table)
