"""``eval-harness validate-dataset``: check every line; exit 0 valid, 1 problems found, 2 unreadable."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def validate_dataset_command(
    path: Annotated[Path, typer.Option("--path", "-p", help="The JSONL (or CSV) file to check.")],
    task: Annotated[str | None, typer.Option("--task", "-t", help="Use this task's field mapping.")] = None,
) -> None:
    """Check every line of a dataset and print a summary and each problem as FILE:LINE: field: message."""
    from eval_harness.cli.render.datasets import print_dataset_report
    from eval_harness.validate import validate

    report = validate(path, task)
    print_dataset_report(report)
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("validate-dataset")(validate_dataset_command)
