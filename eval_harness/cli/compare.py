"""``eval-harness compare``: two runs of the same items, axis by axis, with paired tests."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

if TYPE_CHECKING:
    from eval_harness.compare import CompareAxis, CompareRun


def compare_command(
    run_a: Annotated[Path, typer.Option("--run-a", help="Run directory of A (the baseline).")],
    run_b: Annotated[Path, typer.Option("--run-b", help="Run directory of B (the candidate).")],
    format_: Annotated[Literal["table", "markdown", "json"], typer.Option("--format", help="Output format.")] = "table",
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            help="Exit 1 when B is significantly worse on any axis (Holm-adjusted, 5%) or overall (5%), when "
            "either run has records missing, or when an axis has records but no pair (not compared)."
        ),
    ] = False,
    force: Annotated[bool, typer.Option(help="Compare even though the datasets or scorers differ.")] = False,
) -> None:
    """Join two runs on (sample_id, epoch) and test each axis: McNemar with Newcombe's interval for 0/1 scores,
    otherwise the paired t-test with a t interval (sign-flip test below 30 pairs), Holm across axes; with
    latency, cost and error-rate deltas, the headline gap, and the settings that differ between the runs."""
    from eval_harness.cli.render import emit, p_value, signed_points, stderr
    from eval_harness.cli.render.compare import comparison_json, comparison_markdown, print_comparison
    from eval_harness.cli.stream_guard import verdict_follows
    from eval_harness.compare import compare_runs, judged_rows
    from eval_harness.errors import GateFailedError

    comparison = compare_runs(run_a, run_b, force=force)
    if fail_on_regression:
        verdict_follows()
    for item in comparison.forced:
        stderr.print(f"--force: comparing although the runs have {item}", markup=False)
    emit(
        format_,
        None,
        json_text=lambda: comparison_json(comparison),
        markdown_text=lambda: comparison_markdown(comparison),
        draw=lambda console: print_comparison(comparison, console),
    )
    if not fail_on_regression:
        return
    failed = [f"run {side} incomplete ({run.run_id}): {_missing(run)}" for side, run in comparison.incomplete]
    # an axis of A that B has no pair for (B run with --limit, or on fewer axes) has no verdict at all: passing
    # would vouch for it unseen. One of B's with no pair in A has no baseline: B's figure there is unjudged too.
    # paired on part of the data, the verdicts could pass anything
    failed += [f"axis {u.axis} not compared, no pairs ({u.left_out})" for u in comparison.unpaired_axes]
    if comparison.regressions:
        worse = ", ".join(
            f"{a.axis} ({signed_points(a.diff)} points, "
            + (f"p {p_value(a.p_value)})" if a is comparison.overall else f"p_adj {p_value(a.p_adjusted)})")
            for a in comparison.regressions
        )
        failed.append(f"B is significantly worse on {worse}")
    if failed:
        raise GateFailedError("regression gate failed: " + "; ".join(failed))
    untold = [a.axis for a in judged_rows(comparison.axes, comparison.overall) if _cannot_reach_alpha(a)]
    if untold:  # the notes say so on stdout, which a CI job often sends to a file: its log shows the exit code
        stderr.print(
            f"regression gate passed, but it cannot tell on {', '.join(untold)}: too few pairs differ there for any "
            "difference to reach p < 0.05 (see the notes)",
            markup=False,
        )


def _cannot_reach_alpha(axis: CompareAxis) -> bool:
    """Whether the row's differing pairs are too few for its exact test to reach ALPHA (see its note)."""
    from eval_harness.compare import ALPHA

    return axis.p_attainable is not None and axis.p_attainable >= ALPHA and axis.differing > 0


def _missing(run: CompareRun) -> str:
    """How much of an incomplete run is missing, and what to do about it."""
    expected = run.records + run.missing
    if run.status == "running":
        return f"still running, {run.missing:,} of {expected:,} records not written yet, wait for it to end"
    return f"{run.missing:,} of {expected:,} records missing, resume it first: eval-harness resume {run.run_dir}"


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_command)


__all__ = ["compare_command", "register"]
