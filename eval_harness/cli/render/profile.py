"""The capability profile views: the per-axis table of a run summary (``run``) and the full report
(``report``) as a terminal table, Markdown or JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from rich.console import Console

from eval_harness.cli.render import (
    bar,
    counted,
    counted_n,
    interval,
    method_name,
    millis,
    money,
    pct,
    per_dollar,
    percent,
    run_state,
    sparkline,
    stdout,
)
from eval_harness.cli.render.tables import (
    LEFT_OUT_HINT,
    Column,
    FittedTable,
    markdown_line,
    markdown_table,
    markdown_text,
)
from eval_harness.tally import nothing_billed
from eval_harness.types import AxisStats, RunSummary

if TYPE_CHECKING:  # the run command draws summaries only; it should not import the report module
    from eval_harness.report import EpochReport, Headline, ProfileReport, ReportAxis, RunInfo
    from eval_harness.scorers.reliability import JudgeReliability


# --------------------------------------------------------------------------------------------------
# the profile table
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Row:
    """The cells of one profile row, from a summary's AxisStats or a report's ReportAxis."""

    axis: str
    n: int
    samples: int | None
    """The units of the interval when a sample has several records (epochs)."""
    mean: float | None
    ci: tuple[float, float] | None
    ci_method: str
    mean_excluding_errors: float | None
    ci_excluding_errors: tuple[float, float] | None
    """Its interval (a report's rows; a run's summary has none)."""
    pass_rate: float | None
    cost_mean: float | None
    accuracy_per_dollar: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    error_rate: float
    unbilled: bool
    """No record of the row was a priced call (errors and cache hits only): its 0 is not a price."""

    @classmethod
    def of(cls, stats: AxisStats | ReportAxis, run_unbilled: bool = False) -> _Row:
        """The row of ``stats``; ``run_unbilled``: no record of the whole run was a priced call."""
        cost = stats.cost_mean_usd if isinstance(stats, AxisStats) else stats.cost_mean
        total = stats.cost_total_usd if isinstance(stats, AxisStats) else stats.cost_total
        excluding = None if isinstance(stats, AxisStats) else stats.ci_excluding_errors
        return cls(
            axis=stats.axis,
            n=stats.n,
            samples=stats.samples,
            mean=stats.mean,
            ci=stats.ci,
            ci_method=stats.ci_method,
            mean_excluding_errors=stats.mean_excluding_errors,
            ci_excluding_errors=excluding,
            pass_rate=stats.pass_rate,
            cost_mean=cost,
            accuracy_per_dollar=stats.accuracy_per_dollar,
            latency_p50_ms=stats.latency_p50_ms,
            latency_p95_ms=stats.latency_p95_ms,
            error_rate=stats.error_rate,
            unbilled=run_unbilled or nothing_billed(stats.n, stats.errors, 0, total),
        )

    def cells(self, with_excluding: bool, with_method: bool = False) -> list[str]:
        cells = [self.axis, counted_n(self.n, self.samples), pct(self.mean), interval(self.ci)]
        if with_method:
            cells.append(method_name(self.ci_method))
        if with_excluding:
            excluding = pct(self.mean_excluding_errors)
            if self.ci_excluding_errors is not None:
                excluding += f" ({interval(self.ci_excluding_errors)})"
            cells.append(excluding)
        cells += [
            pct(self.pass_rate),
            "–" if self.unbilled or not self.n else money(self.cost_mean),
            per_dollar(self.accuracy_per_dollar),
            millis(self.latency_p50_ms),
            millis(self.latency_p95_ms),
            pct(self.error_rate) if self.n else "–",  # no record: 0 of 0 is no rate
        ]
        return cells


def _per_record(rows: Sequence[_Row]) -> bool:
    """Whether the rows hold several epochs of a sample (their n counts records, beside the samples)."""
    return any(row.samples is not None for row in rows)


def _with_method(rows: Sequence[_Row]) -> bool:
    """Whether the rows' intervals come from more than one method: then each row names its own."""
    return len({row.ci_method for row in rows if row.n}) > 1


# The profile is read for the mean and its interval; the error rate says whether the mean can be trusted,
# then the sample count and (when rows differ) how the interval was made; cost and latency matter less per
# axis (the totals carry them); the bar restates the mean, so it gives way first.
_BAR = Column("", "left", rank=9, drawn=(20, 10), label="bar")


def _columns(
    with_excluding: bool, with_method: bool = False, name: str = "axis", per_record: bool = False
) -> list[Column]:
    """``per_record``: the rows hold several epochs a sample, so the mean cost is a record's (an answer's), not a
    sample's (its epochs together)."""
    columns = [Column(name, "left"), Column("n", rank=2), Column("mean %"), Column("95% CI")]
    if with_method:
        columns.append(Column("CI method", "left", rank=3))
    if with_excluding:
        columns.append(Column("mean % (errors excluded)", rank=3))
    columns += [
        Column("pass %", rank=4),
        Column("cost/record" if per_record else "cost/sample", rank=5),
        Column("acc per $", rank=7),
        Column("p50 ms", rank=6),
        Column("p95 ms", rank=8),
        Column("err %", rank=1),
    ]
    return columns


def _table(
    rows: Sequence[_Row], overall: _Row | None, title: str, with_excluding: bool, hint: str, name: str = "axis"
) -> FittedTable:
    """The rows, then the overall row under a rule (the tags' table has none: its rows overlap)."""
    every = [*rows, *([overall] if overall is not None else [])]
    with_method = _with_method(every)
    columns = [*_columns(with_excluding, with_method, name, _per_record(every)), _BAR]
    table = FittedTable(columns, title=title, title_justify="left", hint=hint)
    for row in rows:
        table.add_row(*row.cells(with_excluding, with_method), partial(bar, row.mean))
    if overall is not None:
        table.add_section()
        table.add_row(*overall.cells(with_excluding, with_method), partial(bar, overall.mean), style="bold")
    return table


def _unbilled(summary: RunSummary) -> bool:
    overall = summary.overall
    return nothing_billed(summary.records, overall.errors, summary.cached_records, overall.cost_total_usd)


UNBILLED_COST = "– (nothing billed: every record is an error or a cache hit)"
"""The cost of a run without a priced call: '$0' would read as the model's price, which it says nothing of."""


def _total_cost(records: int, unbilled: bool, cost: float | None) -> str:
    """A run's cost as its totals line says it: – with no record (no cost to know), ``UNBILLED_COST``, or the sum."""
    if not records:
        return "–"
    return UNBILLED_COST if unbilled else money(cost)


def profile_table(summary: RunSummary, title: str | None = None) -> FittedTable:
    """The capability profile of a run summary: one row per axis, then the overall row."""
    unbilled = _unbilled(summary)
    return _table(
        [_Row.of(a, unbilled) for a in summary.axes],
        _Row.of(summary.overall, unbilled),
        title or f"{summary.model} on {summary.task}",
        with_excluding=summary.overall.errors > 0,
        hint="`eval-harness report --format markdown` shows every column",
    )


def _counted(records: int, samples: int | None) -> str:
    """What a micro mean is over: its samples, and with epochs the records they hold."""
    if samples is None:
        return counted(records, "sample")
    return f"{counted(samples, 'sample')}, {counted(records, 'record')}"


def headline(summary: RunSummary) -> str:
    """Macro and micro means, labelled, with the error policy and the CI method."""
    methods = sorted({a.ci_method for a in [*summary.axes, summary.overall] if a.n}) or ["none"]
    parts = [
        f"macro mean (over {counted(len(summary.axes), 'axis', 'axes')}) {percent(summary.macro_mean)}",
        f"micro mean (over {_counted(summary.records, summary.overall.samples)}) {percent(summary.micro_mean)}",
        summary.error_policy,
        f"CI: {', '.join(methods)}",
    ]
    if summary.missing:
        parts.append(f"INCOMPLETE: {summary.missing:,} of {summary.expected_records:,} records missing")
    return " · ".join(parts)


def _retries_text(by_cause: Mapping[str, int]) -> str:
    """``retries 14 (rate_limit 12, server_error 2)``: the total, and by cause when there were any."""
    text = f"retries {sum(by_cause.values()):,}"
    causes = [f"{cause} {count:,}" for cause, count in sorted(by_cause.items()) if count]
    return f"{text} ({', '.join(causes)})" if causes else text


def print_profile(summary: RunSummary, title: str | None = None) -> None:
    """The profile of a run summary with its headline and totals (shown at the end of ``run``)."""
    stdout.print(profile_table(summary, title))
    stdout.print(headline(summary), markup=False)
    totals = summary.overall
    cost = _total_cost(summary.records, _unbilled(summary), totals.cost_total_usd)
    extra = f" · judge cost {money(summary.judge_cost_usd)}" if summary.judge_cost_usd is not None else ""
    stdout.print(
        f"tokens {totals.prompt_tokens:,} in / {totals.completion_tokens:,} out · cost {cost}{extra}"
        f" · wall {summary.wall_time_s or 0:.1f}s · {_retries_text(summary.retries_by_cause)}"
        f" · backoff {summary.backoff_s:.1f}s"
        + (f" · cached {summary.cached_records:,}" if summary.cached_records else ""),
        markup=False,
    )


# --------------------------------------------------------------------------------------------------
# the report: text shared by the terminal and Markdown views
# --------------------------------------------------------------------------------------------------


def _title(report: ProfileReport) -> str:
    run = report.run
    if run.complete and run.status in ("complete", "running"):
        state = f"complete ({counted(run.records, 'record')})"
    elif run.complete:  # a session stopped once every key had a record: one retrying errors, or at its very end
        state = f"{run.status.upper()}, every record written ({counted(run.records, 'record')})"
    elif run.status == "complete":  # the run finished, then lines were taken out of its samples.jsonl
        missing = f"{run.missing:,} of {run.expected_records:,} records missing"
        state = f"INCOMPLETE: the manifest says complete, but samples.jsonl has {missing}"
    else:
        state = run_state(run.status, run.records, run.expected_records)
    return f"{run.model} on {run.task} · run {run.run_id} · {state}"


def _report_unbilled(report: ProfileReport) -> bool:
    overall = report.overall
    return nothing_billed(overall.n, overall.errors, report.totals.cached_records, overall.cost_total)


def _report_rows(report: ProfileReport) -> list[_Row]:
    """The report's rows, the axes then overall."""
    unbilled = _report_unbilled(report)
    return [_Row.of(a, unbilled) for a in [*report.axes, report.overall]]


def _with_excluding(report: ProfileReport) -> bool:
    return report.overall.errors > 0


_TAG_TITLE = "by tag (a record with several tags counts in each)"


def _tag_rows(report: ProfileReport) -> list[_Row]:
    unbilled = _report_unbilled(report)
    return [_Row.of(t, unbilled) for t in report.by_tag]


def _untagged_note(report: ProfileReport) -> str:
    """Under the tags' table: how many records are in none of its rows."""
    records = report.overall.n
    if not report.by_tag:
        return "no record has a tag (a sample's tags field): no row to show"
    if not report.untagged_records:
        return f"every record has a tag ({counted(records, 'record')})"
    return f"{report.untagged_records:,} of {counted(records, 'record')} have no tag and are in no row"


def _notes_shown(report: ProfileReport, by_tag: bool) -> list[str]:
    """The report's notes; without --by-tag, then that the records carry tags and how to see them."""
    if by_tag or not report.by_tag:
        return report.notes
    tags = counted(len(report.by_tag), "distinct tag")
    return [*report.notes, f"records carry {tags}: --by-tag shows a row for each"]


def _headline_lines(report: ProfileReport) -> list[str]:
    h = report.headline
    lines = [
        f"headline, {h.policy}: macro mean (over {counted(h.axes, 'axis', 'axes')}) {percent(h.macro_mean)} · "
        f"micro mean (over {_counted(h.records, h.samples)}) {percent(h.micro_mean)} [95% CI {interval(h.micro_ci)}]",
        f"errors excluded instead: macro mean{_axes_without_errors(h)} {percent(h.macro_mean_excluding_errors)} · "
        f"micro mean {percent(h.micro_mean_excluding_errors)}",
        "intervals: " + ("; ".join(h.ci_methods) or "none (see the notes)"),
    ]
    return lines


def _axes_without_errors(h: Headline) -> str:
    """Which axes the macro mean without errors is over, when not all of the headline's: an axis of errors only
    has no mean to take part."""
    if h.axes_excluding_errors in (0, h.axes):
        return ""
    return f" (over the {counted(h.axes_excluding_errors, 'axis', 'axes')} with a record that is no error)"


def _epoch_columns(report: ProfileReport) -> list[Column]:
    k = report.epochs[0].k
    return [
        Column("axis", "left"),
        Column("samples", rank=2),
        Column("pass@1 %"),
        Column(f"pass@{k} %"),
        Column(f"samples with all {k} epochs", rank=4),
        Column("agreement %", rank=1),
        Column("pairwise %", rank=3),
    ]


def _epoch_cells(e: EpochReport) -> list[str]:
    return [
        e.axis,
        f"{e.samples:,}",
        pct(e.pass_at_1),
        pct(e.pass_at_k),
        f"{e.complete_samples:,}",
        pct(e.agreement),
        pct(e.pairwise_agreement),
    ]


_SCORER_COLUMNS = [
    Column("scorer", "left"),
    Column("n", rank=2),
    Column("mean"),
    Column("median", rank=3),
    Column("std", rank=4),
    Column("p10", rank=5),
    Column("p90", rank=5),
    Column("histogram 0 → 1", "left", rank=1),
]


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _precision_lines(report: ProfileReport) -> list[str]:
    lines = []
    for p in report.precision:
        samples = counted(p.n, "sample")
        beyond = "" if p.dataset_samples is None else f", more than the whole dataset's {p.dataset_samples:,}"
        if p.ci is None or p.width is None:
            lines.append(
                f"{p.axis}: no interval from {samples}; ±3 points needs at most {p.needed_worst_case:,} samples "
                f"(the worst case: there is no spread to estimate from){beyond}"
            )
            continue
        # the width of the interval as printed (72.8–88.0 is 15.2 points, whatever the digits beyond)
        width = round(100 * p.ci[1], 1) - round(100 * p.ci[0], 1)
        lines.append(
            f"{p.axis}: 95% interval {interval(p.ci)}, {width:.1f} points wide, from {samples}; ±3 points "
            f"needs about {p.needed:,} samples (at {p.needed_basis}; at most {p.needed_worst_case:,}){beyond}"
        )
    return lines


def _totals_line(report: ProfileReport) -> str:
    t = report.totals
    parts = [f"tokens {t.prompt_tokens:,} in / {t.completion_tokens:,} out"]
    if t.judge_used:
        parts.append(f"judge tokens {t.judge_prompt_tokens:,} in / {t.judge_completion_tokens:,} out")
    parts.append(f"cost {_total_cost(report.overall.n, _report_unbilled(report), t.cost_usd)}")
    if t.judge_used or t.judge_cost_usd is not None:
        parts.append(f"judge cost {money(t.judge_cost_usd)} (apart)")
    parts.append(f"wall {t.wall_time_s:,.1f}s" if t.wall_time_s is not None else "wall –")
    parts.append(f"errors {t.errors:,}")
    if t.errors_by_type:
        parts[-1] += " (" + ", ".join(f"{k} {v:,}" for k, v in sorted(t.errors_by_type.items())) + ")"
    parts.append(f"{_retries_text(t.retries_by_cause)} · backoff {t.backoff_s:.1f}s")
    if t.cached_records:
        parts.append(f"cached {t.cached_records:,}")
    return " · ".join(parts)


_RELIABILITY_TITLE = "judge reliability (verdicts compared as pass/fail at 0.5, whatever the task's pass threshold)"


_RELIABILITY_COLUMNS = [
    Column("judge", "left"),
    Column("kind", "left", rank=3),
    Column("verdicts", rank=2),
    Column("position swap flips", "left", lines=4),
    Column("self-consistency agreement", "left", rank=1, lines=4),
    Column("disagrees with", "left", rank=1, lines=4),
    Column("kappa"),
]


def _share(part: int, whole: int, rate: float | None) -> str:
    return "–" if not whole else f"{part:,}/{whole:,} ({percent(rate)})"


def _reliability_cells(r: JudgeReliability) -> list[str]:
    flips = _share(r.flips, r.swapped, r.flip_rate)
    if r.swapped and (r.bias_first or r.bias_second):
        flips += f", toward first {r.bias_first:,} / second {r.bias_second:,}"
    agreement = "–" if r.agreement is None else f"{percent(r.agreement)} over {r.multi_sample:,}"
    if r.unanimous_rate is not None:
        agreement += f", unanimous {percent(r.unanimous_rate)}"
    disagreements = _share(r.disagreements, r.compared, r.disagreement_rate)
    versus = "–" if r.reference is None else f"{r.reference}: {disagreements}"
    return [r.judge, r.kind, f"{r.records:,}", flips, agreement, versus, _num(r.kappa)]


def reliability_table(figures: Sequence[JudgeReliability]) -> FittedTable:
    """How far to trust each judge of a run (shown by ``report``, and by ``run`` when it had a judge)."""
    table = FittedTable(_RELIABILITY_COLUMNS, title=_RELIABILITY_TITLE, title_justify="left")
    for r in figures:
        table.add_row(*_reliability_cells(r))
    return table


def _gate_lines(report: ProfileReport) -> list[str]:
    return [f"{'PASS' if g.passed else 'FAIL'} {g.text}" for g in report.gates]


# --------------------------------------------------------------------------------------------------
# terminal
# --------------------------------------------------------------------------------------------------


def print_report(report: ProfileReport, console: Console | None = None, *, by_tag: bool = False) -> None:
    """The full report on a terminal (or a file console for ``--output``); ``by_tag``: with the tags' table."""
    out = console or stdout
    *rows, overall = _report_rows(report)
    out.print(_table(rows, overall, _title(report), _with_excluding(report), LEFT_OUT_HINT))
    for line in _headline_lines(report):
        out.print(line, markup=False, soft_wrap=True)
    if by_tag:
        if report.by_tag:
            with_excluding = _with_excluding(report)
            out.print(_table(_tag_rows(report), None, _TAG_TITLE, with_excluding, LEFT_OUT_HINT, name="tag"))
        out.print(f"note: {_untagged_note(report)}", markup=False, soft_wrap=True)
    if report.epochs:
        title = f"epochs: pass@k (unbiased estimator) and agreement across {report.epochs[0].k} epochs"
        table = FittedTable(_epoch_columns(report), title=title)
        for e in report.epochs:
            table.add_row(*_epoch_cells(e), style="bold" if e.axis == "overall" else None)
        out.print(table)
    if report.scorers:
        table = FittedTable(_SCORER_COLUMNS, title="scorers", title_justify="left")
        for s in report.scorers:
            table.add_row(
                s.name,
                f"{s.n:,}",
                _num(s.mean),
                _num(s.median),
                _num(s.std),
                _num(s.p10),
                _num(s.p90),
                f"▕{sparkline(s.histogram)}▏",
            )
        out.print(table)
    if report.judge_reliability:
        out.print(reliability_table(report.judge_reliability))
    for line in _precision_lines(report):
        out.print(f"precision: {line}", markup=False, soft_wrap=True)
    out.print(_totals_line(report), markup=False, soft_wrap=True)
    for line in _gate_lines(report):
        out.print(f"gate {line}", style=None if line.startswith("PASS") else "bold red", markup=False, soft_wrap=True)
    for note in _notes_shown(report, by_tag):
        out.print(f"note: {note}", markup=False, soft_wrap=True)


# --------------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------------


def report_markdown(report: ProfileReport, *, by_tag: bool = False) -> str:
    """The full report as GitHub-flavoured Markdown; ``by_tag``: with the tags' table."""
    with_excluding = _with_excluding(report)
    profile_rows = _report_rows(report)
    with_method = _with_method(profile_rows)
    rows = [row.cells(with_excluding, with_method) for row in profile_rows]
    columns = _columns(with_excluding, with_method, per_record=_per_record(profile_rows))
    table = markdown_table(columns, rows, strong_last_row=True)
    lines = [f"## {markdown_line(_title(report), heading=True)}", "", *table, ""]
    lines += [f"- {markdown_line(line)}" for line in _headline_lines(report)]
    if by_tag:
        lines += ["", f"### {_TAG_TITLE[0].upper()}{_TAG_TITLE[1:]}", ""]
        if report.by_tag:
            tag_rows = _tag_rows(report)
            tag_method = _with_method(tag_rows)
            tag_cells = [row.cells(with_excluding, tag_method) for row in tag_rows]
            tag_columns = _columns(with_excluding, tag_method, "tag", _per_record(tag_rows))
            lines += [*markdown_table(tag_columns, tag_cells), ""]
        lines.append(f"- {markdown_line(_untagged_note(report))}")
    if report.epochs:
        lines += ["", f"### Epochs (k = {report.epochs[0].k})", ""]
        lines += markdown_table(_epoch_columns(report), [_epoch_cells(e) for e in report.epochs])
    if report.scorers:
        lines += ["", "### Scorers", ""]
        scorer_rows = [
            [s.name, f"{s.n:,}", _num(s.mean), _num(s.median), _num(s.std), _num(s.p10), _num(s.p90),
             sparkline(s.histogram)]
            for s in report.scorers
        ]  # fmt: skip
        lines += markdown_table(_SCORER_COLUMNS, scorer_rows, code_columns=frozenset({7}))
    if report.judge_reliability:
        lines += ["", f"### {_RELIABILITY_TITLE[0].upper()}{_RELIABILITY_TITLE[1:]}", ""]
        reliability_rows = [_reliability_cells(r) for r in report.judge_reliability]
        lines += markdown_table(_RELIABILITY_COLUMNS, reliability_rows)
    if report.precision:
        lines += ["", "### Precision", ""] + [f"- {markdown_line(line)}" for line in _precision_lines(report)]
    lines += ["", "### Totals", "", f"- {markdown_line(_totals_line(report))}"]
    if report.run.settings is not None:
        lines += ["", "### Configuration", ""] + [f"- {markdown_line(line)}" for line in _settings_lines(report.run)]
    if report.gates:
        gate_lines = [f"- {markdown_line(line)}" for line in _gate_lines(report)]
        lines += ["", f"### Gates (on {markdown_text(report.gate_on)})", "", *gate_lines]
    notes = _notes_shown(report, by_tag)
    if notes:
        lines += ["", "### Notes", ""] + [f"- {markdown_line(note)}" for note in notes]
    return "\n".join(lines) + "\n"


def _settings_lines(run: RunInfo) -> list[str]:
    """How the run was made, one line a topic: what a pull request showing the figures needs beside them."""
    settings = run.settings
    assert settings is not None
    args = " ".join(
        f"{key}={_setting(value)}" for key, value in settings.model_args.items() if value not in (None, {}, [])
    )
    generation = " · ".join(f"{key} {_setting(value)}" for key, value in settings.generation.items()) or "defaults"
    few_shot = settings.few_shot
    if few_shot and few_shot.get("k"):
        source = next((f"{key} {_setting(few_shot[key])}" for key in _FEW_SHOT_SOURCES if few_shot.get(key)), "")
        shots = f"k {few_shot['k']} ({source}, seed {few_shot.get('seed', 0)})"
    else:
        shots = "none"
    limits = [f"--limit {settings.limit}"] if settings.limit is not None else []
    limits += [f"--limit-per-axis {settings.limit_per_axis}"] if settings.limit_per_axis is not None else []
    judge = f" · judge {settings.judge}" if settings.judge else ""
    return [
        f"model {run.model}" + (f" · args {args}" if args else ""),
        f"generation: {generation}",
        f"template {settings.template} (sha256 {settings.template_sha256[:12]})"
        f"{' · with a system prompt' if settings.system_prompt else ''} · few-shot: {shots}",
        f"dataset {run.dataset} (sha256 {run.dataset_sha256[:12]}) · epochs {run.epochs} · seed {run.seed}"
        + "".join(f" · {limit}" for limit in limits),
        f"scorers {', '.join(settings.scorers)}{judge}",
        f"eval-harness {settings.harness_version} · run {run.run_id}, started {run.created_at}",
    ]


_FEW_SHOT_SOURCES = ("path", "path_from_dataset", "holdout_fraction")


def _setting(value: object) -> str:
    """A setting's value as written in a spec: text as is, a list or table as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def report_json(report: ProfileReport) -> str:
    """The report as indented JSON (the scripting interface)."""
    return report.model_dump_json(indent=2) + "\n"


__all__ = [
    "headline",
    "print_profile",
    "print_report",
    "profile_table",
    "reliability_table",
    "report_json",
    "report_markdown",
]
