"""``eval-harness validate-dataset``: check every line (and, with a task, what run checks of the dataset before its
first call); exit 0 valid, 1 problems found, 2 unreadable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from eval_harness.cli import EXIT_CHECK_FAILED
from eval_harness.errors import DatasetUnreadableError


def validate_dataset_command(
    path: Annotated[
        Path,
        typer.Option(
            "--path",
            "-p",
            help="The JSONL file to check (a CSV one with a --task that reads CSV), or a directory of them (one "
            "dataset).",
        ),
    ],
    task: Annotated[
        str | None,
        typer.Option(
            "--task",
            "-t",
            help="Check the dataset as this task's run would: its field mapping, its few-shot file, the examples "
            "that are also samples, and every prompt rendered with its template (no model is called).",
        ),
    ] = None,
) -> None:
    """Check every line of a dataset and print a summary and each problem as FILE:LINE: field: message."""
    from eval_harness.cli.render.datasets import print_dataset_report, print_preflight
    from eval_harness.validate import preflight, validate

    if task is None:
        _refuse_another_format(path)
        report = validate(path)
        print_dataset_report(report)
        ok = report.ok
    else:
        checked = preflight(path, task)
        print_preflight(checked)
        ok = checked.ok
    if not ok:
        raise typer.Exit(EXIT_CHECK_FAILED)


def _refuse_another_format(path: Path) -> None:
    """Refuse, in one line, a dataset whose names say it is not JSONL, which is all a check without --task reads:
    each line of a CSV file read as JSONL would be a problem of its own, and a CSV directory holds no file to
    read. Only a task knows a CSV file's columns, hence the advice to give one."""
    from eval_harness.datasets import MEMBER_SUFFIXES, foreign_format
    from eval_harness.tasks import list_tasks

    other = foreign_format(path)
    if other is None:
        return
    kind = other.upper()
    readers = sorted(task.lookup_name for task in list_tasks() if task.spec.dataset.format == other)
    example = f", e.g. --task {readers[0]}" if readers else ""
    advice = f"give --task with a task that reads {kind}{example}"
    if path.is_dir():
        what = f"the directory holds no {' or '.join(MEMBER_SUFFIXES['jsonl'])} file (it holds {kind} files: {advice})"
    else:
        what = f"its name says {kind}, and without --task a file is read as JSONL: {advice}"
    raise DatasetUnreadableError(f"{path}: cannot read the dataset: {what}")


def register(app: typer.Typer) -> None:
    app.command("validate-dataset")(validate_dataset_command)


__all__ = ["register", "validate_dataset_command"]
