"""The ``eval-harness`` entry point: registers the commands and turns user errors into one line + exit code."""

from __future__ import annotations

import sys

import typer

from eval_harness.errors import DatasetError, EvalHarnessError

app = typer.Typer(
    name="eval-harness",
    help="Async, crash-safe LLM evaluations that report capability profiles with confidence intervals.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _register() -> None:
    from eval_harness.cli import report, run, tasks, validate

    run.register(app)
    validate.register(app)
    tasks.register(app)
    report.register(app)


_register()


def main() -> None:
    """Run the CLI; an ``EvalHarnessError`` becomes its message on stderr and its exit code."""
    try:
        app()
    except DatasetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        sys.exit(exc.exit_code)
    except EvalHarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
