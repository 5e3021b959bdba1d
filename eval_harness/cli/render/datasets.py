"""Views of datasets and tasks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from eval_harness.cli.render import counted, stdout
from eval_harness.cli.render.tables import Column, FittedTable
from eval_harness.datasets import DatasetReport
from eval_harness.tasks import LoadedTask

if TYPE_CHECKING:
    from eval_harness.validate import FewShotCheck, Preflight, Problems


def print_dataset_report(report: DatasetReport) -> None:
    axes = ", ".join(f"{axis} {count:,}" for axis, count in sorted(report.axis_counts.items())) or "none"
    stdout.print(
        f"{report.path}: {counted(report.lines, 'line')}, {report.valid:,} valid, {len(report.blank_lines):,} blank, "
        f"{counted(len(report.duplicate_ids), 'duplicate id')}, {counted(report.problem_count, 'problem')}",
        markup=False,
        soft_wrap=True,
    )
    if report.members:
        stdout.print(f"files: {', '.join(report.members)}", markup=False, soft_wrap=True)
    if report.passed_over:
        stdout.print(report.passed_over, markup=False, soft_wrap=True)
    # one line each however long, for a script reading them (rich wraps at the terminal's width, 160 in a pipe),
    # and an axis named like markup ("[b]") as written
    stdout.print(f"axes: {axes}", markup=False, soft_wrap=True)
    stdout.print(f"sha256: {report.sha256}", soft_wrap=True)  # copied whole
    if report.blank_lines and not report.members:  # a directory's numbers would mix its files
        shown = ", ".join(map(str, report.blank_lines[:10]))
        more = f" (+{len(report.blank_lines) - 10} more)" if len(report.blank_lines) > 10 else ""
        stdout.print(f"blank lines (allowed, skipped): {shown}{more}")
    _print_findings([str(repeat) for repeat in report.repeats[:10]], report.problem_lines())


def _print_findings(warnings: Sequence[str], problems: Sequence[str]) -> None:
    for warning in warnings:
        stdout.print(f"warning: {warning}", markup=False, soft_wrap=True)
    for line in problems:
        stdout.print(line, markup=False, soft_wrap=True)


def print_preflight(checked: Preflight) -> None:
    """The dataset's report, then what run checks of it besides its lines: the few-shot examples and the
    prompts."""
    print_dataset_report(checked.dataset)
    if checked.scorer_note is not None:
        stdout.print(f"note: {checked.scorer_note}", markup=False, soft_wrap=True)
    if checked.few_shot is not None:
        _print_few_shot(checked.few_shot)
    render = checked.render
    if render is None:
        stdout.print(f"template: not rendered: {checked.not_rendered}", markup=False, soft_wrap=True)
        return
    problems = counted(render.problems.count, "problem")
    stdout.print(
        f"template: {render.template} with {counted(render.examples, 'few-shot example')}: "
        f"{counted(render.samples, 'sample')}, {render.rendered:,} rendered, {problems}",
        markup=False,
        soft_wrap=True,
    )
    _print_findings((), render.problems.lines())
    instruction_fields = [name for name, _ in render.check_fields]
    _print_sample_checks("instruction checks", instruction_fields, render.samples, render.check_problems)
    code_fields = [name for pair in render.code_fields for name in pair]
    _print_sample_checks("code tests", code_fields, render.samples, render.code_problems)


def _print_sample_checks(what: str, fields: list[str], samples: int, problems: Problems) -> None:
    """A line counting what a scorer of the task checks in each sample's ``fields`` (none: nothing to say), then
    the problems found."""
    if not fields:
        return
    shown = ", ".join(dict.fromkeys(f"metadata.{name}" for name in fields))
    stdout.print(
        f"{what} ({shown}): {counted(samples, 'sample')}, {counted(problems.count, 'problem')}",
        markup=False,
        soft_wrap=True,
    )
    _print_findings((), problems.lines())


def _print_few_shot(check: FewShotCheck) -> None:
    report = check.report
    if check.unreadable is not None:
        stdout.print(f"few-shot: not checked: {check.unreadable}", markup=False, soft_wrap=True)
    elif check.held_out is not None:
        stdout.print(f"few-shot: {counted(check.held_out, 'sample')} of the dataset held out as examples")
    elif report is not None:
        examples = report.lines - len(report.blank_lines)
        overlap = ""
        if report.ok:
            also = "a sample" if check.also_samples == 1 else "samples"
            overlap = f", {check.also_samples:,} also {also} of the dataset"
        stdout.print(
            f"few-shot: {report.path}: {counted(examples, 'example')}, {report.valid:,} valid, "
            f"{counted(report.problem_count, 'problem')}{overlap}",
            markup=False,
            soft_wrap=True,
        )
        _print_findings([str(repeat) for repeat in report.repeats[:10]], report.problem_lines())
    _print_findings([check.note] if check.note else [], [check.refusal] if check.refusal else [])


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


__all__ = [
    "print_dataset_report",
    "print_preflight",
    "print_tasks",
]
