"""``inspect``: the worst samples of a run, each with its input, target, output and scorer verdicts, and
the error records grouped by cause."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table

from eval_harness.cli.render import counted, millis, money, run_state, stdout
from eval_harness.inspect import HEAD_CHARS, INPUT_CHARS, shorten
from eval_harness.tally import CONTEXT_WINDOW_STOP, stopped_short

if TYPE_CHECKING:
    from eval_harness.inspect import EpochOutcome, InspectedSample, Inspection


def _target(value: str | list[str]) -> str:
    return value if isinstance(value, str) else " | ".join(value)


NORMAL_STOPS = frozenset({"stop", "end_turn", "stop_sequence"})
"""Finish reasons of an answer that the model ended itself, or a stop sequence ended: nothing to point out."""


def finish_note(sample: InspectedSample, max_tokens: int | None) -> str | None:
    """Why ``sample``'s generation stopped when it was not a normal stop, e.g. 'length (cut off at max_tokens
    32)' or 'content_filter'; None for a normal stop or a record without an answer."""
    reason = sample.finish_reason
    if reason is None or reason in NORMAL_STOPS:
        return None
    if not sample.cut_off:
        return reason
    if reason == CONTEXT_WINDOW_STOP:
        return f"{reason} (cut off at the model's context window: the prompt and the answer fill it)"
    if max_tokens is None:
        return f"{reason} (cut off at the provider's default or the server's limit: the run set no max_tokens)"
    if stopped_short(sample.completion_tokens, max_tokens):
        return (
            f"{reason} (cut off by the server after {sample.completion_tokens:,} tokens, before max_tokens "
            f"{max_tokens:,}: its context window, which the prompt and the answer share, or its own cap)"
        )
    return f"{reason} (cut off at max_tokens {max_tokens:,})"


REASONS_SHOWN = 5
"""The most frequent failure reasons printed (JSON has them all)."""


def _print_reasons(out: Console, ins: Inspection) -> None:
    """The failed records grouped by what their verdicts say, most frequent first: ranked by score, records that
    all fail at 0 come in id order, which says nothing of the kinds of failure among them."""
    assert ins.failure_reasons is not None  # the console escapes control characters (visible) as it renders
    read = ins.failure_reasons_read
    of = f"the first {read:,} of the {ins.candidates:,}" if read < ins.candidates else f"the {read:,}"
    kinds = counted(len(ins.failure_reasons), "kind")
    out.print(f"failures by what the verdicts say ({of}, {kinds}):", markup=False, soft_wrap=True)
    for group in ins.failure_reasons[:REASONS_SHOWN]:
        example = f"{group.example_sample_id}" + (f" (epoch {group.example_epoch})" if ins.epochs > 1 else "")
        out.print(f"  {group.count:>6,} × {group.reason}  (e.g. {example})", markup=False, soft_wrap=True)
    left = len(ins.failure_reasons) - REASONS_SHOWN
    if left > 0:
        out.print(f"  ... and {counted(left, 'other kind')} (--format json lists them)", markup=False, soft_wrap=True)


def _shown_path(path: str) -> str:
    """The dataset's path (recorded absolute) as the user would type it: relative to the working directory
    when the file is under it."""
    if not path:
        return path
    try:
        relative = Path(path).relative_to(Path.cwd())
    except (ValueError, OSError):  # elsewhere, or the working directory is gone
        return path
    return str(relative)


@dataclass(frozen=True)
class _Shown:
    """What the listing shows of each sample beyond the default: long texts whole, the rendered prompt."""

    full: bool
    prompt: bool


def _heading(out: Console, title: str) -> None:
    """A sample's heading: a rule titled with it, or, when it would not fit the width (a rule cuts its title
    with "…", a long sample id's end among them), a rule and the whole heading below it."""
    if cell_len(title) + 6 <= out.width:
        out.rule(title, align="left", style="dim")
    else:
        out.rule(style="dim")
        out.print(title, markup=False, soft_wrap=True)


def _print_sample(
    out: Console, rank: int, s: InspectedSample, ranked_by: str, shown: _Shown, max_tokens: int | None, dataset: str
) -> None:
    def cut(text: str) -> str:
        return text if shown.full else shorten(text, INPUT_CHARS, head=HEAD_CHARS)

    if s.error is not None:
        verdict = f" · ERROR {s.error.type} ({s.error.stage}), counted as wrong"
    else:
        verdict = "" if s.passed is None else (" · passed" if s.passed else " · failed")
        if verdict and ranked_by != "score":  # ranked by one scorer, the verdict is still the final score's
            verdict += " (final score)"
    # a call that failed was not billed (as the report counts it): no price to be unknown
    cost = "not billed" if s.cost_usd is None and s.output is None and s.error is not None else money(s.cost_usd)
    if s.cached:  # its $0 is not the model's price, and its latency is the call's that produced it
        cost = "cached"
    spent = f"{millis(s.latency_ms)} ms · {cost}"
    if s.epochs is None:
        title = (
            f"{rank}. {s.sample_id} (epoch {s.epoch}) · axis {s.axis} · {ranked_by} {s.value:.3f}{verdict} · {spent}"
        )
        _heading(out, title)
    else:
        passed = sum(1 for e in s.epochs if e.passed)
        # the mean leaves out an epoch without a value that is no error (a staged scorer skipped there)
        meaned = sum(1 for e in s.epochs if e.value is not None or e.error_type is not None)
        over = counted(len(s.epochs), "epoch") if meaned == len(s.epochs) else f"{meaned} of {len(s.epochs)} epochs"
        title = f"{rank}. {s.sample_id} · axis {s.axis} · mean {ranked_by} {s.value:.3f} over {over}, {passed} passed"
        _heading(out, title)
        out.print(f"epochs: {' · '.join(_outcome(e) for e in s.epochs)}", markup=False, soft_wrap=True)
        out.print(f"shown:  epoch {s.epoch}{verdict} · {spent}", markup=False, soft_wrap=True)
    if s.dataset_line is not None and dataset:
        # PATH:LINE, the form editors and terminals open at the line
        source = f"{dataset}/{s.dataset_file}" if s.dataset_file else dataset
        out.print(f"source: {source}:{s.dataset_line}", markup=False, soft_wrap=True)
    if shown.prompt:
        for message in s.prompt:
            out.print(f"prompt: [{message.role}] {_indented(cut(message.content))}", markup=False, soft_wrap=True)
        if not s.prompt:
            out.print("prompt: (not recorded)", markup=False, soft_wrap=True)
    out.print(f"input:  {_indented(cut(s.input))}", markup=False, soft_wrap=True)
    for option in s.choices or []:
        out.print(f"        {option}", markup=False, soft_wrap=True)
    out.print(f"target: {_indented(cut(_target(s.target)))}", markup=False, soft_wrap=True)
    out.print(f"output: {_indented(cut(s.output)) if s.output is not None else '–'}", markup=False, soft_wrap=True)
    finish = finish_note(s, max_tokens)
    if finish is not None:
        out.print(f"finish: {finish}", markup=False, soft_wrap=True)
    if s.error is not None:
        out.print(f"error:  {s.error.message}", markup=False, soft_wrap=True)
    outcome = "so the final score is 0" if s.error is None else "which would make the final score 0"
    for gate in s.failed_gates:
        out.print(f"gate:   {gate} {s.scores[gate] or 0.0:.3f} < 1, {outcome}", markup=False, soft_wrap=True)
    for name, value in s.scores.items():
        # an extracted answer or an explanation may quote the whole output: shortened as the output is
        answer = f" · extracted {cut(s.answers[name])!r}" if name in s.answers else ""
        explanation = f" — {cut(s.explanations[name])}" if name in s.explanations else ""
        value_text = "–" if value is None else f"{value:.3f}"
        out.print(f"  {name} {value_text}{answer}{explanation}", markup=False, soft_wrap=True)
        stderr = s.score_metadata.get(name, {}).get("stderr")
        if isinstance(stderr, str) and stderr.strip():  # code_execution's traceback: which assertion failed
            out.print(f"    stderr: {cut(stderr.strip())}", markup=False, soft_wrap=True)


def _indented(text: str) -> str:
    """``text`` with its later lines indented under the first, so a line of a prompt, an input or an output
    ("Answer: 4") does not read as a label of the listing."""
    return "\n".join(f"        {line}" if line and i else line for i, line in enumerate(text.split("\n")))


def _outcome(e: EpochOutcome) -> str:
    """One epoch as the by-sample view lists it: '2 0.000 failed', '3 ERROR ProviderError'."""
    if e.error_type is not None and e.value is None:
        return f"{e.epoch} ERROR {e.error_type}"
    value = "–" if e.value is None else f"{e.value:.3f}"
    verdict = "" if e.passed is None else (" passed" if e.passed else " failed")
    error = f" ERROR {e.error_type}" if e.error_type is not None else ""
    return f"{e.epoch} {value}{verdict}{error}"


def print_inspection(
    ins: Inspection, console: Console | None = None, *, full: bool = False, prompt: bool = False
) -> None:
    """The inspection on a terminal; ``full`` prints long inputs and outputs whole, ``prompt`` each listed
    sample's rendered prompt."""
    out = console or stdout
    state = run_state(ins.status, ins.records, ins.expected_records)
    out.print(
        f"{ins.model} on {ins.task} · run {ins.run_id} · {counted(ins.records, 'record')}"
        + (f" · {state}" if state else ""),
        markup=False,
        soft_wrap=True,
    )
    if ins.samples_missing and ins.expected_records and ins.status != "running":  # damage, not a run starting
        out.print(
            f"note: its samples.jsonl does not exist, though the manifest says {ins.status}",
            markup=False,
            soft_wrap=True,
        )
    if ins.status in ("interrupted", "failed") and ins.run_dir:
        out.print(f"continue it with: eval-harness resume {ins.run_dir}", markup=False, soft_wrap=True)
    if ins.torn_bytes:
        out.print(f"note: a torn last line ({ins.torn_bytes:,} bytes) was ignored", markup=False, soft_wrap=True)
    scope = (f" in axis {ins.axis}" if ins.axis else "") + (f" with tag {ins.tag}" if ins.tag is not None else "")
    if ins.worst is not None:
        kind = "failed sample" if ins.failures_only else "sample"
        errors = "; error records count as wrong, at 0 unless they have a value" if ins.failures_only else ""
        if ins.by_sample:
            kind = "sample"
            errors = "; an error counts 0"
        elif ins.epochs > 1:  # each sample has several records: the listing may hold one sample's epochs
            kind = "failed record" if ins.failures_only else "record"
            errors += "; --by-sample ranks samples over their epochs"
        ranked = f"mean {ins.ranked_by} over their epochs" if ins.by_sample else ins.ranked_by
        failed = " with a failed epoch" if ins.by_sample and ins.failures_only else ""
        out.print(
            f"worst {counted(len(ins.worst), kind)}{failed}{scope} by {ranked} (of {ins.candidates:,}; ties by id"
            f"{errors}):",
            style="bold",
            markup=False,
            soft_wrap=True,
        )
        if not ins.worst:
            out.print("  none", markup=False)
        if ins.failure_reasons:
            _print_reasons(out, ins)
        if ins.without_value:
            what = counted(ins.without_value, "failed record" if ins.failures_only else "scored record")
            skipped = ins.without_value - ins.failed_without_value
            without = f"{what}{scope} without a {ins.ranked_by} value"
            if not ins.failed_without_value:
                without += " (skipped there): not ranked"
            else:  # a weight-0 scorer's failure leaves no error record: said here, or never
                on = "all of them" if not skipped else f"{ins.failed_without_value:,}"
                also = f" and was skipped on {skipped:,}" if skipped else ""
                without += f", not ranked: it failed on {on} (weight 0, not counted){also}"
            out.print(without, markup=False, soft_wrap=True)
            if ins.first_failed is not None:
                out.print(f"  the first it failed on: {ins.first_failed}", markup=False, soft_wrap=True)
        shown = _Shown(full, prompt)
        for rank, sample in enumerate(ins.worst, 1):
            _print_sample(out, rank, sample, ins.ranked_by, shown, ins.max_tokens, _shown_path(ins.dataset_path))
        if ins.failures_only and ins.errors is None and ins.candidate_errors:
            out.print(
                f"{counted(ins.candidate_errors, 'error record')}{scope} among the {ins.candidates:,}: "
                "--errors groups them by cause",
                markup=False,
                soft_wrap=True,
            )
    if ins.errors is not None:
        without = f" without a value for {ins.ranked_by}" if ins.ranked_by != "score" else ""
        out.print(f"errors{scope}{without}: {ins.error_records:,}", style="bold", markup=False, soft_wrap=True)
        if ins.errors:
            table = Table(show_header=True)
            for name in ("type", "count", "stage", "message", "example"):
                # a long name folds onto the next line rather than being cut with "…": it is looked up, copied
                table.add_column(name, justify="right" if name == "count" else "left", overflow="fold")
            for g in ins.errors:
                table.add_row(
                    g.type,
                    f"{g.count:,}",
                    g.stage,
                    g.message,
                    f"{g.example_sample_id} (epoch {g.example_epoch}, {g.example_axis})",
                )
            out.print(table)


def inspection_json(ins: Inspection) -> str:
    """The inspection as indented JSON."""
    return ins.model_dump_json(indent=2) + "\n"


__all__ = [
    "finish_note",
    "inspection_json",
    "print_inspection",
]
