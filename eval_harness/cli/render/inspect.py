"""``inspect``: the worst samples of a run, each with its input, target, output and scorer verdicts, and
the error records grouped by type."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from eval_harness.cli.render import millis, money, stdout

if TYPE_CHECKING:
    from eval_harness.inspect import InspectedSample, Inspection


def _target(value: str | list[str]) -> str:
    return value if isinstance(value, str) else " | ".join(value)


def _print_sample(out: Console, rank: int, s: InspectedSample, ranked_by: str) -> None:
    passed = "" if s.passed is None else (" · passed" if s.passed else " · failed")
    out.rule(
        f"{rank}. {s.sample_id} (epoch {s.epoch}) · axis {s.axis} · {ranked_by} {s.value:.3f}{passed} · "
        f"{millis(s.latency_ms)} ms · {money(s.cost_usd)}",
        align="left",
        style="dim",
    )
    out.print(f"input:  {s.input}", markup=False, soft_wrap=True)
    out.print(f"target: {_target(s.target)}", markup=False, soft_wrap=True)
    out.print(f"output: {s.output if s.output is not None else '–'}", markup=False, soft_wrap=True)
    for name, value in s.scores.items():
        answer = f" · extracted {s.answers[name]!r}" if name in s.answers else ""
        explanation = f" — {s.explanations[name]}" if name in s.explanations else ""
        out.print(f"  {name} {value:.3f}{answer}{explanation}", markup=False, soft_wrap=True)


def print_inspection(ins: Inspection, console: Console | None = None) -> None:
    """The inspection on a terminal."""
    out = console or stdout
    incomplete = (
        f" · INCOMPLETE: {ins.expected_records - ins.records:,} of {ins.expected_records:,} records missing"
        if ins.records < ins.expected_records
        else ""
    )
    out.print(
        f"{ins.model} on {ins.task} · run {ins.run_id} · {ins.records:,} records{incomplete}",
        markup=False,
        soft_wrap=True,
    )
    if ins.worst is not None:
        scope = f" in axis {ins.axis}" if ins.axis else ""
        kind = "failed samples" if ins.failures_only else "samples"
        out.print(
            f"worst {len(ins.worst)} {kind}{scope} by {ins.ranked_by} (of {ins.candidates:,}; ties by id):",
            style="bold",
            markup=False,
            soft_wrap=True,
        )
        if not ins.worst:
            out.print("  none", markup=False)
        for rank, sample in enumerate(ins.worst, 1):
            _print_sample(out, rank, sample, ins.ranked_by)
    if ins.errors is not None:
        total = sum(g.count for g in ins.errors)
        out.print(f"errors: {total:,}", style="bold", markup=False)
        if ins.errors:
            table = Table(show_header=True)
            for name in ("type", "count", "stage", "example", "message"):
                table.add_column(name, justify="right" if name == "count" else "left")
            for g in ins.errors:
                table.add_row(
                    g.type,
                    f"{g.count:,}",
                    g.stage,
                    f"{g.example_sample_id} (epoch {g.example_epoch}, {g.example_axis})",
                    g.example_message,
                )
            out.print(table)


def inspection_json(ins: Inspection) -> str:
    """The inspection as indented JSON."""
    return ins.model_dump_json(indent=2) + "\n"
