"""``eval-harness inspect``: the worst samples of a run and its errors, from the artifacts alone."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer


def inspect_command(
    run: Annotated[Path, typer.Option("--run", "-r", help="The run directory.")],
    show_failures: Annotated[
        bool,
        typer.Option(
            "--show-failures",
            help="List the worst samples that failed, error records included (counted as wrong, as in the "
            "report: ranked at score 0, ties by id, and marked ERROR); no error table.",
        ),
    ] = False,
    n: Annotated[int, typer.Option("--n", min=1, help="How many samples to list.")] = 5,
    axis: Annotated[str | None, typer.Option(help="Only samples and errors of this axis.")] = None,
    tag: Annotated[
        str | None, typer.Option(help="Only samples and errors whose records carry this tag (a sample's tags).")
    ] = None,
    scorer: Annotated[
        str | None,
        typer.Option(
            help="Rank by this scorer's value instead of the final score; the errors are then those of records "
            "without its value."
        ),
    ] = None,
    errors: Annotated[
        bool,
        typer.Option(
            "--errors",
            help="Group the error records by type, stage and message (numbers and ids normalised), with counts "
            "and one example each (the smallest sample id); JSON lists each group's sample ids and epochs.",
        ),
    ] = False,
    by_sample: Annotated[
        bool,
        typer.Option(
            "--by-sample",
            help="Rank samples, not records: by their mean over the epochs (an error counts 0, as in the report), "
            "each shown by its worst epoch with every epoch's score, so a sample wrong in every epoch and one "
            "right in some are told apart.",
        ),
    ] = False,
    full: Annotated[
        bool, typer.Option("--full", help="Print long inputs and outputs whole (the table shortens them).")
    ] = False,
    prompt: Annotated[
        bool,
        typer.Option(
            "--prompt",
            help="Show each listed sample's rendered prompt as sent (system message, few-shot examples); JSON "
            "always carries it.",
        ),
    ] = False,
    format_: Annotated[Literal["table", "json"], typer.Option("--format", help="Output format.")] = "table",
) -> None:
    """The worst N samples (lowest score, ties by id) with input (and a multiple-choice item's options),
    target, output, per-scorer scores and explanations, latency and cost; and the errors by cause. Without
    --show-failures or --errors: both. The table shortens texts over 800 characters to their first 200 and
    last 600; JSON carries them whole."""
    from eval_harness.cli.render import emit
    from eval_harness.cli.render.inspect import inspection_json, print_inspection
    from eval_harness.inspect import inspect_run

    both = not show_failures and not errors
    inspection = inspect_run(
        run,
        n=n,
        axis=axis,
        tag=tag,
        scorer=scorer,
        failures_only=show_failures,
        show_worst=show_failures or both,
        show_errors=errors or both,
        by_sample=by_sample,
    )
    emit(
        format_,
        None,
        json_text=lambda: inspection_json(inspection),
        markdown_text=None,
        draw=lambda console: print_inspection(inspection, console, full=full, prompt=prompt),
    )


def register(app: typer.Typer) -> None:
    app.command("inspect")(inspect_command)


__all__ = ["inspect_command", "register"]
