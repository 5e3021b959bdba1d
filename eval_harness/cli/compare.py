"""``eval-harness compare``: two runs of the same items, axis by axis, with paired tests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer


def compare_command(
    run_a: Annotated[Path, typer.Option("--run-a", help="Run directory of A (the baseline).")],
    run_b: Annotated[Path, typer.Option("--run-b", help="Run directory of B (the candidate).")],
    format_: Annotated[Literal["table", "markdown", "json"], typer.Option("--format", help="Output format.")] = "table",
    fail_on_regression: Annotated[
        bool, typer.Option(help="Exit 1 when any axis is significantly worse in B (Holm-adjusted, 5%).")
    ] = False,
    force: Annotated[bool, typer.Option(help="Compare even though the datasets or scorers differ.")] = False,
) -> None:
    """Join two runs on (sample_id, epoch) and test each axis: McNemar with Newcombe's interval for 0/1 scores,
    otherwise the paired t-test with a t interval (sign-flip test below 30 pairs), Holm across axes; with
    latency, cost and error-rate deltas, the headline gap, and the settings that differ between the runs."""
    from eval_harness.cli.render import emit, p_value, signed_points, stderr
    from eval_harness.cli.render.compare import comparison_json, comparison_markdown, print_comparison
    from eval_harness.compare import compare_runs
    from eval_harness.errors import GateFailedError

    comparison = compare_runs(run_a, run_b, force=force)
    for item in comparison.forced:
        stderr.print(f"--force: comparing although the runs have {item}", markup=False)
    emit(
        format_,
        None,
        json_text=lambda: comparison_json(comparison),
        markdown_text=lambda: comparison_markdown(comparison),
        draw=lambda console: print_comparison(comparison, console),
    )
    if fail_on_regression and comparison.regressions:
        worse = ", ".join(
            f"{a.axis} ({signed_points(a.diff)} points, p_adj {p_value(a.p_adjusted)})" for a in comparison.regressions
        )
        raise GateFailedError(f"regression: B is significantly worse on {worse}")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_command)
