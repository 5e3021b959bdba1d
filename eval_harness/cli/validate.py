"""``eval-harness validate-dataset``: check every line (and, with a task, what run checks of the dataset before its
first call); exit 0 valid, 1 problems found, 2 unreadable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from eval_harness.cli import EXIT_CHECK_FAILED


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
            "that are also samples, its scorers' arguments, and every prompt rendered with its template (no model is "
            "called).",
        ),
    ] = None,
) -> None:
    """Check every line of a dataset and print a summary and each problem as FILE:LINE: field: message."""
    from eval_harness.cli.render.datasets import print_dataset_report, print_preflight
    from eval_harness.cli.stream_guard import verdict_follows
    from eval_harness.validate import Preflight, preflight, task_hint, validate

    checked = validate(path) if task is None else preflight(path, task)
    ok = checked.ok
    if not ok:
        verdict_follows()  # exit 1, after the listing
    if isinstance(checked, Preflight):
        print_preflight(checked)
    else:
        print_dataset_report(checked)
        if (hint := task_hint(path, checked)) is not None:
            print(f"hint: {hint}")
    if not ok:
        raise typer.Exit(EXIT_CHECK_FAILED)


def register(app: typer.Typer) -> None:
    app.command("validate-dataset")(validate_dataset_command)


__all__ = ["register", "validate_dataset_command"]
