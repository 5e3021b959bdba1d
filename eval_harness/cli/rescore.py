"""``eval-harness rescore``: apply other scorers to a finished run's outputs without calling the model."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from eval_harness.cli.run import timeout_seconds


def rescore_command(
    run: Annotated[Path, typer.Option("--run", "-r", help="The run whose outputs are re-scored.")],
    task: Annotated[str | None, typer.Option("--task", "-t", help="Use this task's scorers.")] = None,
    scorer: Annotated[
        list[str] | None,
        typer.Option(
            "--scorer",
            metavar="NAME[:key=value,...]",
            help="Scorer NAME or NAME:key=value,..., alias=KEY for the key it is recorded under (repeatable).",
        ),
    ] = None,
    run_id: Annotated[str | None, typer.Option(help="Run directory name of the new run.")] = None,
    output_dir: Annotated[Path | None, typer.Option(help="Where the new run goes (default: beside --run).")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Samples scored at once (judges call models).")] = 16,
    timeout: Annotated[
        float,
        typer.Option(
            callback=timeout_seconds, help="Per-sample scoring timeout in seconds (a judge's calls included)."
        ),
    ] = 120.0,
    judge_model: Annotated[str | None, typer.Option(help="provider/model for judge scorers.")] = None,
    judge_arg: Annotated[
        list[str] | None, typer.Option("--judge-arg", metavar="KEY=VALUE", help="Judge option KEY=VALUE (repeatable).")
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option("--quiet", "-q", help="No progress and no profile table: stdout gets the run directory only."),
    ] = False,
) -> None:
    """Write a new run whose records reuse RUN's outputs with other scorers; no generation call is made."""
    from eval_harness.cli.output import refuse_inside_runs
    from eval_harness.cli.run import finish_run, print_notes, start_run
    from eval_harness.config import parse_key_values
    from eval_harness.rescore import plan_rescore
    from eval_harness.types import GateSettings

    if output_dir is not None:  # the new run would be written inside the one it re-scores
        refuse_inside_runs("--output-dir", output_dir, [run], "rescore")
    plan = plan_rescore(
        run,
        task=task,
        scorers=scorer,
        output_dir=output_dir,
        run_id=run_id,
        concurrency=concurrency,
        timeout_s=timeout,
        judge_model=judge_model,
        judge_args=parse_key_values(judge_arg or [], "--judge-arg"),
    )
    print_notes(plan)
    finish_run(start_run(plan, quiet), GateSettings(), quiet)


def register(app: typer.Typer) -> None:
    app.command("rescore")(rescore_command)


__all__ = ["register", "rescore_command"]
