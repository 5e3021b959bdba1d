"""``eval-harness compare``: two runs of the same items, axis by axis, with paired tests."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from eval_harness.compare import CompareAxis, CompareRun, Comparison


def compare_command(
    run_a: Annotated[Path, typer.Option("--run-a", help="Run directory of A (the baseline).")],
    run_b: Annotated[Path, typer.Option("--run-b", help="Run directory of B (the candidate).")],
    format_: Annotated[Literal["table", "markdown", "json"], typer.Option("--format", help="Output format.")] = "table",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the comparison to FILE.")] = None,
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
    from eval_harness.cli.output import check_output_file, writing_output
    from eval_harness.cli.render import emit, stderr
    from eval_harness.cli.render.compare import comparison_json, comparison_markdown, print_comparison
    from eval_harness.cli.stream_guard import verdict_follows
    from eval_harness.compare import compare_runs, judged_rows
    from eval_harness.errors import GateFailedError

    if output is not None:  # before the runs are read: reading them writes their columns caches
        check_output_file("--output", output, [run_a, run_b], "compare")
    comparison = compare_runs(run_a, run_b, force=force)
    if fail_on_regression:
        verdict_follows()
    for item in comparison.forced:
        stderr.print(f"--force: comparing although the runs have {item}", markup=False)
    with writing_output("--output", output):
        emit(
            format_,
            output,
            json_text=lambda: comparison_json(comparison),
            markdown_text=lambda: comparison_markdown(comparison),
            draw=lambda console: print_comparison(comparison, console),
        )
    if not fail_on_regression:
        return
    # paired on part of the data, the verdicts could pass anything: an axis of A that B has no pair for (B run with
    # --limit, or on fewer axes) has no verdict at all, and passing would vouch for it unseen; one of B's with no
    # pair in A has no baseline, so B's figure there is unjudged too
    failed = [f"run {side} incomplete ({run.run_id}): {_missing(run)}" for side, run in comparison.incomplete]
    failed += [f"axis {u.axis} not compared, no pairs ({u.left_out})" for u in comparison.unpaired_axes]
    if comparison.regressions:
        failed.append(f"B is significantly worse on {_rows_said(comparison, comparison.regressions)}")
    if failed:
        raise GateFailedError("regression gate failed: " + "; ".join(failed))
    undecided = [row for row in judged_rows(comparison.axes, comparison.overall) if row.verdict == "no_difference"]
    lower = [row for row in undecided if row.diff is not None and row.diff < 0]
    if lower:  # the notes say why on stdout, which a CI job often sends to a file: its log shows this line
        stderr.print(
            f"regression gate passed, but B is lower on {_rows_said(comparison, lower)}, short of significance at "
            "5% (see the notes)",
            markup=False,
        )
    erred = [row for row in undecided if row.mostly_errors("B")]
    if erred:  # B answered too little there for "no detectable difference" to vouch for it
        said = "; ".join(f"{row.axis}, {100 * (row.error_rate_b or 0):.0f}% errors" for row in erred)
        stderr.print(f"regression gate passed, but B's records are mostly errors ({said}); see the notes",
                     markup=False)  # fmt: skip


def _rows_said(comparison: Comparison, rows: Sequence[CompareAxis]) -> str:
    """Rows as the gate's lines name them: ``alpha (−36.7 points, p_adj 0.00078), overall (−15.0 points, p
    0.00016)`` (an axis's p Holm-adjusted, as its verdict was made; the overall row's its own)."""
    from eval_harness.cli.render import p_value, signed_points

    return ", ".join(
        f"{row.axis} ({signed_points(row.diff)} points, "
        + (f"p {p_value(row.p_value)})" if row is comparison.overall else f"p_adj {p_value(row.p_adjusted)})")
        for row in rows
    )


def _missing(run: CompareRun) -> str:
    """How much of an incomplete run is missing, and what to do about it."""
    expected = run.records + run.missing
    if run.status == "running":
        return f"still running, {run.missing:,} of {expected:,} records not written yet, wait for it to end"
    return f"{run.missing:,} of {expected:,} records missing, resume it first: eval-harness resume {run.run_dir}"


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_command)


__all__ = ["compare_command", "register"]
