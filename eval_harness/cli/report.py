"""``eval-harness report``: the capability profile of a run, recomputed from its artifacts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from eval_harness.cli.gate_options import FailBelow, FailBelowAxis, GateOn, MaxErrorRate


def report_command(
    run: Annotated[Path, typer.Option("--run", "-r", help="The run directory, e.g. results/<run_id>.")],
    format_: Annotated[Literal["table", "markdown", "json"], typer.Option("--format", help="Output format.")] = "table",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the report to FILE.")] = None,
    ci: Annotated[
        Literal["auto", "wilson", "clopper-pearson", "bootstrap"],
        typer.Option(
            help="Interval method; auto: Wilson for 0/1 scores, Student-t otherwise; bootstrap: the percentile "
            "bootstrap (approximate below 30 samples; Wilson where 0/1 scores are all right or all wrong)."
        ),
    ] = "auto",
    fail_below: FailBelow = None,
    fail_below_axis: FailBelowAxis = None,
    gate_on: GateOn = "mean",
    max_error_rate: MaxErrorRate = None,
    by_tag: Annotated[
        bool,
        typer.Option(
            "--by-tag",
            help="After the axes, a table with a row per tag of the samples (a record with several tags counts in "
            "each). JSON always carries it as by_tag.",
        ),
    ] = False,
) -> None:
    """Per axis: n, mean with 95% CI, pass rate, cost, accuracy per $, latency p50/p95, errors; the headline,
    epochs, scorer distributions, totals and gates. Works on interrupted runs."""
    from eval_harness.aggregate import default_workers
    from eval_harness.artifacts import RunPaths
    from eval_harness.cli.output import check_output_file, writing_output
    from eval_harness.cli.render import emit
    from eval_harness.cli.render.profile import print_report, report_json, report_markdown
    from eval_harness.cli.stream_guard import verdict_follows
    from eval_harness.gates import check_basis_used, gate_failure, gates_from_flags
    from eval_harness.report import build_report

    if output is not None:  # before the run is read: building the report writes its columns cache into it
        check_output_file("--output", output, [run], "report")
    gates = gates_from_flags(fail_below, fail_below_axis, gate_on, max_error_rate)
    check_basis_used(gates)
    report = build_report(run, ci=ci, gates=gates, workers=default_workers(RunPaths(run).samples))
    if report.gates:
        verdict_follows()
    with writing_output("--output", output):
        emit(
            format_,
            output,
            json_text=lambda: report_json(report),
            markdown_text=lambda: report_markdown(report, by_tag=by_tag),
            draw=lambda console: print_report(report, console, by_tag=by_tag),
        )
    failure = gate_failure(report.gates)
    if failure is not None:
        raise failure


def register(app: typer.Typer) -> None:
    app.command("report")(report_command)


__all__ = ["register", "report_command"]
