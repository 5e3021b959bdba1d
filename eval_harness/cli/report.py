"""``eval-harness report``: the capability profile of a run, recomputed from its samples.jsonl."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def report_command(
    run: Annotated[Path, typer.Option("--run", "-r", help="The run directory.")],
    format_: Annotated[str, typer.Option("--format", help="table or json.")] = "table",
) -> None:
    """Print a run's per-axis profile: n, mean, 95% CI, pass rate, cost, latency, errors."""
    from eval_harness.aggregate import summarize
    from eval_harness.artifacts import RunPaths, read_manifest
    from eval_harness.cli.render.profile import print_profile

    manifest = read_manifest(run)
    summary = summarize(RunPaths(run).samples, manifest)
    if format_ == "json":
        typer.echo(summary.model_dump_json(indent=2))
    else:
        print_profile(summary)


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)
