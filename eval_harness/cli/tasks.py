"""``eval-harness tasks``: the tasks on the search path with their dataset, template and scorers."""

from __future__ import annotations

import typer


def tasks_command() -> None:
    """List the available tasks (and, on stderr, the task files that cannot be loaded, with why)."""
    import sys

    from eval_harness.cli import visible
    from eval_harness.cli.render.datasets import print_tasks
    from eval_harness.tasks import scan_tasks

    tasks, problems = scan_tasks()
    print_tasks(tasks)
    for problem in problems:  # a file's name may hold an escape sequence: shown, not sent, as run -t shows it
        print(f"left out: {visible(problem)}", file=sys.stderr)


def register(app: typer.Typer) -> None:
    app.command("tasks")(tasks_command)


__all__ = ["register", "tasks_command"]
