"""``eval-harness tasks``: the tasks on the search path with their dataset, template and scorers."""

from __future__ import annotations

import typer


def tasks_command() -> None:
    """List the available tasks."""
    from eval_harness.cli.render.datasets import print_tasks
    from eval_harness.tasks import list_tasks

    print_tasks(list_tasks())


def register(app: typer.Typer) -> None:
    app.command("tasks")(tasks_command)
