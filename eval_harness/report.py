"""The capability profile of a run, recomputed from its artifacts: per axis a score with its interval,
its cost and its latency; the macro and micro headline; epochs, scorer distributions, totals, the
precision each axis reached, and the gates.

Reads only ``manifest.json`` and ``samples.jsonl`` (never the dataset) and works on runs that are still
running or were interrupted: the document says how many records are missing.
"""

from __future__ import annotations

import contextlib
import inspect
import math
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, Field, ValidationError

from eval_harness.aggregate import (
    BY_SAMPLE,
    RunColumns,
    ScorerDistribution,
    axis_stats,
    default_workers,
    epoch_stats,
    finish_reasons,
    length_stopped,
    load_run_columns,
    per_axis,
    per_sample_means,
    per_tag,
    scorer_distributions,
    stopped_short_rows,
    summarize_columns,
    units_without_errors,
    untagged,
)
from eval_harness.artifacts import RunPaths, judged_records, observed_status, read_manifest
from eval_harness.errors import ConfigError, EvalHarnessError
from eval_harness.gates import GateResult, evaluate_gates
from eval_harness.scorers.base import SCORERS
from eval_harness.scorers.reliability import JudgeReliability, judge_reliability
from eval_harness.stats import (
    NO_INTERVAL,
    NORMAL_CI_MIN_ITEMS,
    is_binary,
    mean_ci,
    sample_size,
    wilson_sample_size,
)
from eval_harness.tally import (
    CONTEXT_WINDOW_ADVICE,
    CONTEXT_WINDOW_STOP,
    LENGTH_STOPS,
    SERVER_LIMIT,
    limit_said,
    nothing_billed,
)
from eval_harness.types import (
    AxisStats,
    GateSettings,
    RunManifest,
    RunSummary,
    ScorerSpec,
    check_expected_records_bounds,
    held_out_said,
)

REPORT_SCHEMA_VERSION = 3
"""Version of ``report --format json``. 2: a scorer's ``std`` over one value is null (it was 0.0), the headline
has ``axes_excluding_errors``; 3: ``axes_without_records``, ``totals.length_stops_short``."""
CI_CHOICES = ("auto", "wilson", "clopper-pearson", "bootstrap")
PRECISION_WARNING = 0.05
"""An axis whose interval is wider than 10 points (or that has none) gets a line saying how many samples an
interval of ±3 points would need."""
PRECISION_TARGET = 0.03
BOOTSTRAP_APPROXIMATE_BELOW = 30
"""Below this many samples ``--ci bootstrap`` gets a note: the percentile bootstrap under-covers there."""
ERROR_POLICY = "errors counted as wrong (score 0)"

_CI_LABELS = {
    "wilson": "Wilson (0/1 scores)",
    "clopper-pearson": "Clopper-Pearson (0/1 scores)",
    "t": "Student-t, clipped to 0–100 (scores other than 0/1)",
    "bootstrap": "percentile bootstrap, 2,000 resamples",
    "normal": f"normal (CLT): more than {NORMAL_CI_MIN_ITEMS:,} scores with many distinct values, "
    "where it matches the bootstrap",
    "wald": "Wald (0/1 scores)",
    NO_INTERVAL: "no interval (one sample, or values all equal: no spread to estimate one from)",
}


class ReportAxis(BaseModel):
    """One row of the profile (an axis, or the whole run as ``overall``)."""

    axis: str
    n: int = Field(description="Records, errors included.")
    errors: int
    error_rate: float
    mean: float | None = Field(description="Mean final score, errors counted as 0 (the headline policy).")
    ci: tuple[float, float] | None = Field(
        description="95% interval of ``mean``; None when there is none (no records, one sample, values all equal)."
    )
    ci_method: str = Field(
        description="wilson, clopper-pearson, t, bootstrap, normal or none (no interval), with -by-sample when "
        "the units are samples (each the mean of its epochs)."
    )
    mean_excluding_errors: float | None = Field(description="Mean over the records without an error.")
    ci_excluding_errors: tuple[float, float] | None
    pass_rate: float | None
    cost_mean: float | None = Field(description="Mean cost per record in USD; None when a price is unknown.")
    cost_total: float | None
    cost_known: bool
    accuracy_per_dollar: float | None = Field(description="mean / cost_mean.")
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    prompt_tokens: int
    completion_tokens: int
    half_width: float | None = Field(
        description="Half the width of the 95% interval (which need not be symmetric about the mean)."
    )
    samples: int | None = Field(
        default=None,
        description="Samples the mean and intervals are over (each the mean of its epochs) when a sample has "
        "several records; None when n counts the samples.",
    )
    length_stops: int = Field(
        default=0,
        description="Records whose answer stopped at the output-token limit (finish_reason length, or "
        "Anthropic's max_tokens) or filled the model's context window (model_context_window_exceeded): perhaps cut "
        "short.",
    )


class Headline(BaseModel):
    """The two one-number summaries, labelled, under both error policies."""

    policy: str = Field(description="The error policy of ``macro_mean``, ``micro_mean`` and the gates.")
    macro_mean: float | None = Field(description="Mean over axes of the per-axis means.")
    micro_mean: float | None = Field(description="Mean over all records.")
    micro_ci: tuple[float, float] | None
    macro_mean_excluding_errors: float | None
    micro_mean_excluding_errors: float | None
    axes_excluding_errors: int = Field(
        default=0, description="The axes macro_mean_excluding_errors is over: those with a record that is no error."
    )
    axes: int
    records: int
    samples: int | None = Field(
        default=None, description="Samples the micro mean is over, when a sample has several records (epochs)."
    )
    ci_methods: list[str] = Field(description="The interval methods used, described.")


class RunSettings(BaseModel):
    """The settings a reader of a report needs beside its figures (what lm-evaluation-harness prints with every
    table): never a key, since the manifest records none."""

    harness_version: str
    model_args: dict[str, Any] = Field(description="The model's recorded arguments (no credentials).")
    generation: dict[str, Any] = Field(description="The generation settings sent (those set: temperature, ...).")
    template: str
    template_sha256: str
    system_prompt: bool = Field(description="Whether a system prompt was sent.")
    few_shot: dict[str, Any] | None = Field(description="The task's [few_shot] table (k and its source), if any.")
    limit: int | None
    limit_per_axis: int | None
    judge: str | None = Field(description="The judge model of judge scorers, if any.")
    scorers: list[str] = Field(description="The scorers, by the key each is recorded under.")


class RunInfo(BaseModel):
    """Which run this is and how complete it is."""

    run_id: str
    status: str
    complete: bool = Field(description="All expected records are present.")
    task: str
    model: str
    dataset: str
    dataset_sha256: str
    epochs: int
    seed: int
    created_at: str
    records: int
    expected_records: int
    missing: int
    torn_bytes: int = Field(description="Bytes of a torn last line that were ignored.")
    settings: RunSettings | None = Field(
        default=None, description="How the run was made, from its manifest: what a review of the figures needs."
    )


class EpochReport(BaseModel):
    """pass@k and agreement across epochs for one axis (or ``overall``)."""

    axis: str
    samples: int
    k: int
    pass_at_1: float | None
    pass_at_k: float | None
    complete_samples: int = Field(description="Samples with all k epochs recorded (the basis of pass@k).")
    agreement: float | None = Field(description="Share of samples whose epochs all passed or all failed.")
    pairwise_agreement: float | None


class Totals(BaseModel):
    """What the run spent. Unknown costs are None, never 0."""

    prompt_tokens: int
    completion_tokens: int
    judge_prompt_tokens: int
    judge_completion_tokens: int
    cost_usd: float | None
    cost_known: bool
    judge_cost_usd: float | None = Field(description="Spent by model-based scorers; None when none ran or unpriced.")
    judge_used: bool
    wall_time_s: float | None
    errors: int
    errors_by_type: dict[str, int]
    retries_by_cause: dict[str, int]
    backoff_s: float
    cached_records: int
    length_stops: int = Field(
        default=0,
        description="Records whose answer stopped at the output-token limit or filled the model's context window "
        "(as the axes' sum; finish_reasons tells the two apart).",
    )
    finish_reasons: dict[str, int] = Field(
        default_factory=dict, description="Records by finish reason as the providers reported it (null left out)."
    )
    length_stops_short: int = Field(
        default=0,
        description="Of length_stops (the context window's own stop aside), those with fewer completion tokens "
        "than the task's max_tokens: stopped by the server's own limit (a local server's context window), which "
        "a larger max_tokens does not raise.",
    )


class PrecisionNote(BaseModel):
    """An axis whose interval is wider than 10 points, or that has none, and what ±3 points would take."""

    axis: str
    n: int = Field(description="Samples the interval is over.")
    ci: tuple[float, float] | None = Field(description="The axis's 95% interval; None when it has none.")
    width: float | None = Field(description="high − low: the interval need not be symmetric about the mean.")
    half_width: float | None = Field(description="width / 2.")
    needed: int = Field(description="Samples for a 95% interval of ±3 points, on the basis ``needed_basis`` says.")
    needed_basis: str = Field(
        description="What ``needed`` assumes: the samples' observed standard deviation (scores other than 0/1), "
        "p at the interval's end nearest 50% (0/1 scores), or the worst case when there is nothing to go on."
    )
    needed_worst_case: int = Field(description="The same at p = 0.5, the most samples it can take.")
    dataset_samples: int | None = Field(
        default=None,
        description="The whole dataset's valid samples (every axis), when ``needed`` is more: ±3 points is beyond its "
        "reach (epochs do not help: a sample's epochs are not independent). An axis's own share is not recorded, so "
        "an axis that needs more than it holds but less than the whole dataset gets none.",
    )


class ProfileReport(BaseModel):
    """``eval-harness report --format json``."""

    schema_version: int = REPORT_SCHEMA_VERSION
    run: RunInfo
    headline: Headline
    axes: list[ReportAxis]
    axes_without_records: list[str] = Field(
        default_factory=list,
        description="The dataset's axes with no record in an incomplete run (sorted; none of a complete run): "
        "``axes`` and the macro mean leave them out.",
    )
    overall: ReportAxis
    epochs: list[EpochReport] = Field(description="Per axis, then overall; empty when the run has one epoch.")
    scorers: list[ScorerDistribution]
    totals: Totals
    precision: list[PrecisionNote]
    gates: list[GateResult]
    gate_on: Literal["mean", "ci-low"]
    notes: list[str]
    judge_reliability: list[JudgeReliability] = Field(
        default_factory=list,
        description="Per judge scorer: flips under position swap, self-consistency agreement and disagreement "
        "with the run's deterministic scorer; empty when no judge gave a verdict.",
    )
    by_tag: list[ReportAxis] = Field(
        default_factory=list,
        description="One row per tag of the samples, by tag name, as the axes' rows: a record with several tags "
        "counts in each; empty when no record has a tag.",
    )
    untagged_records: int = Field(default=0, description="Records without a tag, in no row of ``by_tag``.")

    @property
    def gates_failed(self) -> list[GateResult]:
        """The gates that failed."""
        return [g for g in self.gates if not g.passed]


def _report_axis(stats: AxisStats, rows: RunColumns, ci_method: str, seed: int) -> ReportAxis:
    clean_units = units_without_errors(rows)  # with epochs, a sample is one unit, as in ``ci``
    ci_excluding: tuple[float, float] | None = None
    if clean_units.size:
        _, low, high, method = mean_ci(clean_units, method=ci_method, seed=seed)
        ci_excluding = None if method == NO_INTERVAL else (low, high)
    half = (stats.ci[1] - stats.ci[0]) / 2 if stats.ci is not None else None
    return ReportAxis(
        axis=stats.axis,
        n=stats.n,
        errors=stats.errors,
        error_rate=stats.error_rate,
        mean=stats.mean,
        ci=stats.ci,
        ci_method=stats.ci_method,
        mean_excluding_errors=stats.mean_excluding_errors,
        ci_excluding_errors=ci_excluding,
        pass_rate=stats.pass_rate,
        cost_mean=stats.cost_mean_usd,
        cost_total=stats.cost_total_usd,
        cost_known=stats.cost_known,
        accuracy_per_dollar=stats.accuracy_per_dollar,
        latency_p50_ms=stats.latency_p50_ms,
        latency_p95_ms=stats.latency_p95_ms,
        prompt_tokens=stats.prompt_tokens,
        completion_tokens=stats.completion_tokens,
        half_width=half,
        samples=stats.samples,
        length_stops=int(np.count_nonzero(length_stopped(rows))),
    )


def _units(rows: RunColumns) -> NDArray[np.float64]:
    """What an axis's mean and interval are over: its records' final scores, or with epochs each sample's mean."""
    final = rows.final
    units = per_sample_means(rows, final)
    return final if units is None else units


def _precision(axis: ReportAxis, rows: RunColumns, dataset_samples: int) -> PrecisionNote | None:
    """How many samples ±3 points would take, for an axis whose interval is wider than 10 points or missing.

    0/1 scores: the binomial formula at the interval's end nearest 50%, never at an observed 0% or 100% (5 of
    5 right does not mean a sample of 1 would do). Other scores: their standard deviation (the
    binomial p(1-p) only bounds it), at their 95% upper bound; with no spread to measure, the worst case."""
    if axis.mean is None or axis.errors == axis.n:  # all errors: nothing was measured to be precise about
        return None
    if axis.ci is not None and axis.ci[1] - axis.ci[0] <= 2 * PRECISION_WARNING:
        return None
    units = _units(rows)
    binary = is_binary(units)
    # 0/1 scores get Wilson's interval, so their sizes are Wilson's, as `plan` gives them (1,064 at 50%); other
    # scores' intervals are Student-t, sized by the normal approximation (1,068 at the largest spread)
    worst = wilson_sample_size(PRECISION_TARGET, p=0.5) if binary else sample_size(PRECISION_TARGET, p=0.5)
    needed, basis = worst, "the worst case: no spread to estimate from"
    if axis.ci is not None and binary:
        low, high = axis.ci
        p = 0.5 if low <= 0.5 <= high else (high if high < 0.5 else low)
        basis = f"p = {100 * p:.1f}%, the interval's end nearest 50%" if p != 0.5 else "p = 50%, inside the interval"
        needed = wilson_sample_size(PRECISION_TARGET, p=p)
    elif axis.ci is not None:
        from scipy.special import chdtri

        sd = float(np.std(units, ddof=1))
        # like the binary case, not the point estimate: a few samples can show a small spread by chance (3 of
        # them said "about 4 samples" where 4 give ±4.9), so the SD's one-sided 95% upper bound,
        # s·sqrt((n-1)/χ²(0.05, n-1)), capped at 0.5, the largest SD a [0, 1] score can have
        upper = sd * math.sqrt((units.size - 1) / float(chdtri(units.size - 1, 0.95)))
        bound = min(0.5, upper)
        needed = min(worst, sample_size(PRECISION_TARGET, sd=bound))
        basis = f"SD ≤ {bound:.3f}, the 95% upper bound of the observed {sd:.3f} over {units.size:,} samples"
        if upper > 0.5:  # the bound past the cap would read as a bound below what was observed
            basis = (
                f"SD ≤ 0.500, the most a score of 0 to 1 can have: the observed {sd:.3f} over {units.size:,} "
                "samples bounds nothing tighter"
            )
    width = None if axis.ci is None else axis.ci[1] - axis.ci[0]
    return PrecisionNote(
        axis=axis.axis,
        n=int(units.size),
        ci=axis.ci,
        width=width,
        half_width=None if width is None else width / 2,
        needed=needed,
        needed_basis=basis,
        needed_worst_case=worst,
        dataset_samples=dataset_samples if needed > dataset_samples else None,
    )


def _epochs(columns: RunColumns, epochs: int) -> list[EpochReport]:
    if epochs <= 1:
        return []
    parts = [*per_axis(columns), ("overall", columns)]
    out = []
    for name, rows in parts:
        stats = epoch_stats(rows, epochs)
        out.append(
            EpochReport(
                axis=name,
                samples=stats.samples,
                k=stats.k,
                pass_at_1=stats.pass_at_1,
                pass_at_k=stats.pass_at_k,
                complete_samples=stats.complete_samples,
                agreement=stats.agreement,
                pairwise_agreement=stats.pairwise_agreement,
            )
        )
    return out


def _alike_epochs_notes(epochs: list[EpochReport], manifest: RunManifest) -> list[str]:
    """Why pass@k says nothing more than pass@1 when every sample's epochs agree at temperature 0 (a deterministic
    model repeats its answer there): the epochs were bought for nothing a temperature above 0 would have given."""
    overall = epochs[-1] if epochs else None
    if overall is None or overall.agreement != 1.0 or manifest.task.generation.temperature != 0:
        return []
    return [
        f"epochs: every sample's {overall.k} epochs passed or failed alike, at temperature 0, where a deterministic "
        f"model repeats its answer: pass@{overall.k} equals pass@1; for pass@k, sample with --temperature above 0 "
        "(e.g. 0.8)"
    ]


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _units_of(axis: ReportAxis) -> int:
    return axis.n if axis.samples is None else axis.samples


def _no_interval(axis: ReportAxis) -> str:
    """Why an axis with records has no interval (``mean_ci``: one unit, or units all equal)."""
    units = _units_of(axis)
    if units == 1:
        return "no interval from 1 sample (a mean of one has no spread to estimate one from)"
    return f"no interval: all {units:,} values equal ({100 * (axis.mean or 0.0):.1f}%), no spread to estimate one from"


class _Unpriced(NamedTuple):
    """The records of a run without a price: billed ones, whose cost is unknown, and those of a failed call, which
    billed nothing and need none (``RunColumns.billed``)."""

    billed: int
    not_billed: int


def _unpriced_note(unpriced: _Unpriced, overall: ReportAxis) -> str:
    """How many billed records have no price (a failed call's record has none, and needs none)."""
    if unpriced.billed + unpriced.not_billed < overall.n:
        return f"{unpriced.billed:,} of {overall.n:,} records have no price: the cost is unknown, not zero"
    if unpriced.not_billed:
        failed = (
            "1 error record is a failed call"
            if unpriced.not_billed == 1
            else f"{unpriced.not_billed:,} error records are failed calls"
        )
        return f"no billed call has a price ({failed}, which billed nothing): the cost is unknown, not zero"
    return "no record has a price: the cost is unknown, not zero"


def _takes_a_judge(spec: ScorerSpec) -> bool:
    """Whether the scorer ``spec`` names uses the run's judge model: a judge, or a composite with one among
    its parts (a composite is handed the judge for them)."""
    try:
        factory = SCORERS.get(spec.name)
    except EvalHarnessError:  # a plugin scorer no longer installed: the report does not need it
        return False
    if "judge" not in inspect.signature(factory).parameters:
        return False
    parts = spec.args.get("scorers")
    if not isinstance(parts, list):
        return True
    specs = []
    for part in parts:
        with contextlib.suppress(ValidationError):
            specs.append(ScorerSpec.model_validate(part))
    return any(_takes_a_judge(part) for part in specs)


def _all_error_notes(report_axes: list[ReportAxis], overall: ReportAxis, run_dir: Path | None) -> list[str]:
    """Rows whose every record is an error: their 0% and its interval come from errors counted as wrong, and would
    read as a measurement of the model's answers, of which there were none (their precision lines are left out)."""
    where = f"eval-harness inspect --run {run_dir if run_dir is not None else 'RUN_DIR'} --errors"
    if overall.n and overall.errors == overall.n:
        return [
            "every record is an error (counted as wrong): the means and intervals measure the errors, not the "
            f"model's answers, of which there were none; see {where}"
        ]
    axes = [a.axis for a in report_axes if a.n and a.errors == a.n]
    if not axes:
        return []
    whose = (
        f"of {axes[0]} is an error (counted as wrong): its mean and interval"
        if len(axes) == 1
        else (f"of {', '.join(axes)} is an error (counted as wrong): their means and intervals")
    )
    return [f"every record {whose} measure the errors, not the model's answers; see {where}"]


def _surplus_notes(run: RunInfo, manifest: RunManifest) -> list[str]:
    """A note when samples.jsonl holds more records than the run's dataset and limits give: each record counts in
    the figures, as every reader counts a well-formed record, but the run never wrote one of them for its own
    samples. None after any forced resume: one across a changed few-shot hold-out keeps the records of samples it
    no longer runs without recounting (only a changed dataset or [dataset] table is recounted), and
    ``forced_changes`` names a session's changes as text only."""
    surplus = run.records - run.expected_records
    if surplus <= 0 or manifest.forced_changes:
        return []
    them = "it" if surplus == 1 else "them"
    return [
        f"samples.jsonl holds {run.records:,} records where the run's dataset and limits give "
        f"{run.expected_records:,}: {surplus:,} more (copied in from another run, or edited by hand?); the figures "
        f"count {them}"
    ]


def _skipped_judge_notes(manifest: RunManifest, scorers: list[ScorerDistribution], records: int) -> list[str]:
    """A judge scorer with no value because the run had no judge model: the table's empty row says nothing of
    why (each record's explanation does)."""
    if manifest.judge is not None or not records:
        return []
    specs = {spec.key: spec for spec in manifest.task.scorers}
    return [
        f"{s.name}: skipped on every sample: no --judge-model was given (pass one to score with this judge)"
        for s in scorers
        if s.n == 0 and s.name in specs and _takes_a_judge(specs[s.name])
    ]


def _failed_judge_notes(
    manifest: RunManifest, scorers: list[ScorerDistribution], totals: Totals, run_dir: Path | None
) -> list[str]:
    """A judge scorer with no value on any record although the judge was called: a weight-0 judge whose every call
    failed leaves no error record and no row value, only each record's explanation (and the judge's spend)."""
    called = totals.judge_prompt_tokens + totals.judge_completion_tokens > 0 or bool(totals.judge_cost_usd)
    if manifest.judge is None or not called:
        return []
    specs = {spec.key: spec for spec in manifest.task.scorers}
    where = run_dir if run_dir is not None else "RUN_DIR"
    return [
        f"{s.name}: no value on any record, though the judge was called (its calls failed, or staged scoring "
        f"skipped it everywhere); see why with eval-harness inspect --run {where} --scorer {s.name}"
        for s in scorers
        if s.n == 0 and s.name in specs and _takes_a_judge(specs[s.name])
    ]


def _cached_judge_notes(manifest: RunManifest, totals: Totals) -> list[str]:
    """A judge whose tokens cost nothing in a run with ``--cache``: its verdicts came from the cache (a judge's
    cache hit costs 0 and, unlike a model's answer, is not marked on the record), so the $0 is no price."""
    called = totals.judge_prompt_tokens + totals.judge_completion_tokens > 0
    judge = manifest.judge
    # the mock is never cached (and costs what its arguments say): its $0 is its price
    if judge is None or judge.id.startswith("mock/") or not manifest.cache or not called:
        return []
    if totals.judge_cost_usd is None:
        return []
    if totals.judge_cost_usd == 0:
        return [
            "the judge's calls cost $0: with --cache, verdicts served from the response cache cost nothing (a "
            "judge's hits are not marked on the records), so unless the judge is free the $0 is not its price"
        ]
    return [
        "with --cache, the judge's verdicts served from the response cache cost $0 here (a judge's hits are not "
        "marked on the records): the judge cost is what this run paid, below the judge's price where they were"
    ]


def _length_stop_notes(totals: Totals, manifest: RunManifest, run_dir: Path | None) -> list[str]:
    """How many answers stopped at the output-token limit, and how many filled the model's context window: a
    score of 0 from a wrong answer and from one cut off before its last line look alike. The answers are the
    records with a finish reason (a failed call has none). The two limits have different remedies."""
    if not totals.length_stops:
        return []
    answers = sum(totals.finish_reasons.values())
    where = run_dir if run_dir is not None else "RUN_DIR"
    see = f"see them with eval-harness inspect --run {where} --show-failures"
    context = totals.finish_reasons.get(CONTEXT_WINDOW_STOP, 0)
    notes = []
    reasons = " or ".join(sorted(r for r in totals.finish_reasons if r in LENGTH_STOPS and r != CONTEXT_WINDOW_STOP))
    limit = manifest.task.generation.max_tokens
    short = totals.length_stops_short
    at_limit = totals.length_stops - context - short
    if at_limit:
        sent = manifest.max_tokens_sent
        at = "max_tokens" if limit is None else f"max_tokens {limit:,}"
        if limit is None and sent is None:
            unset = " (the task sets none: the provider's default or the server's own limit)"
        elif limit is None:
            unset = f" ({limit_said(limit, sent, unset='the task sets none')})"
        else:
            unset = f" (sent as {sent:,} with room to think or reason)" if sent is not None and sent != limit else ""
        notes.append(
            f"{at_limit:,} of {answers:,} answers stopped at {at} (finish_reason {reasons})"
            f"{unset}: raise --max-tokens if they were cut short, or {see}"
        )
    if short:
        notes.append(
            f"{short:,} of {answers:,} answers stopped at a length limit (finish_reason {reasons}) with fewer "
            f"completion tokens than max_tokens {limit:,}: {SERVER_LIMIT}; {see}"
        )
    if context:
        notes.append(
            f"{context:,} of {answers:,} answers stopped at the model's context window (finish_reason "
            f"{CONTEXT_WINDOW_STOP}): {CONTEXT_WINDOW_ADVICE}; {see}"
        )
    return notes


def _axes_without_records(report_axes: list[ReportAxis], run: RunInfo, manifest: RunManifest) -> list[str]:
    """The dataset's axes of which an incomplete run has no record yet: left out of the table and of the macro
    mean, they would pass unseen (a complete run's other axes are ones its limits did not take)."""
    if run.complete or not manifest.dataset.axes:
        return []
    seen = {a.axis for a in report_axes}
    return sorted(axis for axis in manifest.dataset.axes if axis not in seen)


def _settings(manifest: RunManifest) -> RunSettings:
    task = manifest.task
    return RunSettings(
        harness_version=manifest.harness_version,
        model_args=manifest.model.args,
        generation=task.generation.model_dump(exclude_none=True),
        template=task.template,
        template_sha256=task.template_sha256,
        system_prompt=task.system_prompt is not None,
        few_shot=task.few_shot,
        limit=manifest.limit,
        limit_per_axis=manifest.limit_per_axis,
        judge=manifest.judge.id if manifest.judge is not None else None,
        scorers=[scorer.key for scorer in task.scorers],
    )


def _held_out_notes(manifest: RunManifest) -> list[str]:
    """The samples a few-shot hold-out took out of the dataset: a reader of n should not have to guess where they
    went (a run of the whole dataset only: under --limit the count is the limit's)."""
    few_shot = manifest.task.few_shot or {}
    if not few_shot.get("holdout_fraction") or not few_shot.get("k") or manifest.limit or manifest.limit_per_axis:
        return []
    total = manifest.dataset.sample_count
    held = total - manifest.expected_records // manifest.epochs
    if held <= 0:
        return []
    return [held_out_said(held, total)]  # the words of the run's start, where the reader met them first


def _notes(
    report_axes: list[ReportAxis],
    overall: ReportAxis,
    run: RunInfo,
    ci: str,
    summary: RunSummary,
    run_dir: Path | None,
    unpriced: _Unpriced,
) -> list[str]:
    notes: list[str] = []
    if not run.complete and run.status == "running":
        notes.append(
            f"run still running: {run.missing:,} of {run.expected_records:,} records not written yet; "
            "this report is of the records so far"
        )
    elif not run.complete:
        where = run_dir if run_dir is not None else "RUN_DIR"
        state = run.status
        if run.status == "complete":
            samples = RunPaths(run_dir).samples if run_dir is not None else None
            if samples is not None and not samples.exists():
                state = "complete, but its samples.jsonl does not exist"
            elif run.records == 0 and not run.torn_bytes:
                state = "complete, but its samples.jsonl is empty"
            else:
                state = "complete, but samples.jsonl lost records"
        notes.append(
            f"run {state}: {run.missing:,} of {run.expected_records:,} records missing; "
            f"continue it with: eval-harness resume {where}"
        )
    elif run.status not in ("complete", "running"):
        where = run_dir if run_dir is not None else "RUN_DIR"
        left = (
            f"{overall.errors:,} error record{'s' if overall.errors != 1 else ''} left: retry them with: "
            f"eval-harness resume {where} --retry-errors"
            if overall.errors
            else f"eval-harness resume {where} marks it complete"
        )
        notes.append(f"run {run.status} after every record was written (a session retrying errors, say); {left}")
    if run.torn_bytes:
        notes.append(f"a torn last line ({run.torn_bytes:,} bytes) was ignored")
    rows = [*report_axes, overall] if len(report_axes) != 1 else report_axes  # one axis: overall is the same
    if ci in ("wilson", "clopper-pearson"):
        for method, scores in (
            ("t", "other scores"),
            ("t" + BY_SAMPLE, "samples whose epochs disagree (means of 0/1)"),
        ):
            axes = [a.axis for a in report_axes if a.ci_method == method]
            if axes:
                have = "has" if len(axes) == 1 else "have"
                notes.append(f"--ci {ci} applies to 0/1 scores; {', '.join(axes)} {have} {scores}: Student-t")
    if ci == "bootstrap":
        fallback = [a.axis for a in rows if a.ci_method.removesuffix(BY_SAMPLE) == "wilson"]
        if fallback:
            notes.append(
                f"--ci bootstrap: {', '.join(fallback)} scored all right or all wrong, where every resample is "
                "the same and a bootstrap interval has zero width: Wilson instead"
            )
        few = [
            a.axis
            for a in rows
            if a.ci_method.removesuffix(BY_SAMPLE) == "bootstrap" and _units_of(a) < BOOTSTRAP_APPROXIMATE_BELOW
        ]
        if few:
            notes.append(
                f"--ci bootstrap is approximate below {BOOTSTRAP_APPROXIMATE_BELOW} samples ({', '.join(few)}): "
                "its 95% interval covered the mean 82% of the time at 5 samples and 88% at 10 in a simulation of "
                "continuous scores, where the default Student-t interval kept close to 95% (the default of 0/1 "
                "scores is Wilson's)"
            )
    for a in rows:
        if a.ci is None and a.mean is not None:
            notes.append(f"{a.axis}: {_no_interval(a)}")
    if any(a.samples is not None for a in rows):
        notes.append(
            "several epochs: each sample is one unit of the intervals (the mean of its epochs), since the "
            "epochs of one sample are not independent"
        )
    normal = [a.axis for a in report_axes if a.ci_method.removesuffix(BY_SAMPLE) == "normal"]
    if normal:
        names = ", ".join(normal)
        notes.append(f"normal (CLT) intervals for {names}: {_CI_LABELS['normal']}")
    if unpriced.billed:
        notes.append(_unpriced_note(unpriced, overall))
    if nothing_billed(overall.n, overall.errors, summary.cached_records, overall.cost_total):
        notes.append(
            "nothing was billed: every record is an error or a cache hit, so the cost shows – rather than $0, which "
            "would read as the model's price"
        )
    if summary.cached_records:
        records = "1 record was" if summary.cached_records == 1 else f"{summary.cached_records:,} records were"
        notes.append(
            f"{records} served from the response cache: they cost $0 here and keep the latency of the call that "
            "produced them, so where they are the cost figures are below the model's price"
        )
    return notes


def build_report(
    run_dir: Path | str,
    *,
    ci: str = "auto",
    gates: GateSettings | None = None,
    workers: int | None = None,
) -> ProfileReport:
    """The profile of the run in ``run_dir``.

    ``ci`` is ``auto`` (Wilson for 0/1 scores, Student-t otherwise), ``wilson``, ``clopper-pearson`` or
    ``bootstrap`` (see ``stats.mean_ci``). ``workers`` processes read a large samples file in parallel
    (default: one per CPU above 64 MB; it forks, so call from a single-threaded process). Raises
    ``ArtifactError`` for an unreadable run, ``ConfigError`` for a bad ``ci`` or a gate on an axis the run does
    not have.
    """
    if ci not in CI_CHOICES:
        raise ConfigError(f"--ci: {ci!r} is not one of {', '.join(CI_CHOICES[1:])}")
    run_dir = Path(run_dir)
    manifest = read_manifest(run_dir)
    check_expected_records_bounds(manifest, RunPaths(run_dir).manifest)
    samples = RunPaths(run_dir).samples
    columns = load_run_columns(samples, manifest, workers=workers if workers is not None else default_workers(samples))
    reliability = run_judge_reliability(run_dir, manifest)
    return _report_from_columns(columns, manifest, ci=ci, gates=gates, run_dir=run_dir, reliability=reliability)


def run_judge_reliability(run_dir: Path, manifest: RunManifest | None = None) -> list[JudgeReliability]:
    """How far to trust the run's judge (see ``scorers.reliability``); empty for a run without a judge model.

    The figures need each record's judge details, which the report's columns do not hold, so the lines with a
    judge's verdict are read once more (the others are not parsed), and only for runs that had a judge."""
    manifest = manifest or read_manifest(run_dir)
    if manifest.judge is None:
        return []
    # all the figures read: the rest of each record is let go at once
    return judge_reliability(judged_records(RunPaths(run_dir).samples, ("error", "scores", "score_metadata")))


def _report_from_columns(
    columns: RunColumns,
    manifest: RunManifest,
    *,
    ci: str = "auto",
    gates: GateSettings | None = None,
    run_dir: Path | None = None,
    reliability: list[JudgeReliability] | None = None,
) -> ProfileReport:
    """The profile from already-loaded columns (see :func:`build_report`)."""
    summary = summarize_columns(columns, manifest, ci)
    seed = manifest.seed
    by_axis = dict(per_axis(columns))
    report_axes = [_report_axis(stats, by_axis[stats.axis], ci, seed) for stats in summary.axes]
    overall = _report_axis(summary.overall, columns, ci, seed)
    run = RunInfo(
        run_id=manifest.run_id,
        status=observed_status(run_dir, manifest) if run_dir is not None else manifest.status,
        complete=summary.missing == 0,
        task=manifest.task.name,
        model=manifest.model.id,
        dataset=manifest.dataset.path,
        dataset_sha256=manifest.dataset.sha256,
        epochs=manifest.epochs,
        seed=manifest.seed,
        created_at=manifest.created_at,
        records=summary.records,
        expected_records=summary.expected_records,
        missing=summary.missing,
        torn_bytes=columns.torn_bytes,
        settings=_settings(manifest),
    )
    methods = sorted({a.ci_method for a in [*report_axes, overall] if a.ci_method != "none"})
    labels = {m: _CI_LABELS.get(m.removesuffix(BY_SAMPLE), m) for m in methods}
    labels.update(
        {m: f"{labels[m]}, over samples (each the mean of its epochs)" for m in methods if m.endswith(BY_SAMPLE)}
    )
    headline = Headline(
        policy=ERROR_POLICY,
        macro_mean=summary.macro_mean,
        micro_mean=summary.micro_mean,
        micro_ci=overall.ci,
        macro_mean_excluding_errors=_mean([a.mean_excluding_errors for a in report_axes]),
        axes_excluding_errors=sum(a.mean_excluding_errors is not None for a in report_axes),
        micro_mean_excluding_errors=overall.mean_excluding_errors,
        axes=len(report_axes),
        records=summary.records,
        samples=summary.overall.samples,
        ci_methods=[f"{m}: {labels[m]}" for m in methods],
    )
    judge_cost = summary.judge_cost_usd
    cost_known = summary.overall.cost_known
    totals = Totals(
        prompt_tokens=summary.overall.prompt_tokens,
        completion_tokens=summary.overall.completion_tokens,
        judge_prompt_tokens=int(columns.judge_prompt_tokens.sum()),
        judge_completion_tokens=int(columns.judge_completion_tokens.sum()),
        cost_usd=summary.overall.cost_total_usd if cost_known else None,
        cost_known=cost_known,
        judge_cost_usd=judge_cost,
        judge_used=bool(np.any(columns.judge_used)),
        wall_time_s=summary.wall_time_s,
        errors=summary.overall.errors,
        errors_by_type=summary.errors_by_type,
        retries_by_cause=summary.retries_by_cause,
        backoff_s=summary.backoff_s,
        cached_records=summary.cached_records,
        length_stops=overall.length_stops,
        finish_reasons=finish_reasons(columns),
        length_stops_short=int(np.count_nonzero(stopped_short_rows(columns, manifest.task.generation.max_tokens))),
    )
    spec = gates or GateSettings()
    scorers = scorer_distributions(columns)
    billed = columns.billed()
    unpriced = _Unpriced(int(np.count_nonzero(np.isnan(columns.cost_usd) & billed)), int(np.count_nonzero(~billed)))
    notes = _notes(report_axes, overall, run, ci, summary, run_dir, unpriced)
    without = _axes_without_records(report_axes, run, manifest)
    if without:
        limited = " (with its --limit, the run may not take them)" if manifest.limit is not None else ""
        notes.append(
            f"no record yet of {len(without)} of the dataset's {len(manifest.dataset.axes or [])} axes: "
            f"{', '.join(without)}{limited}; the macro mean is over the {len(report_axes)} with records"
        )
    notes += _all_error_notes(report_axes, overall, run_dir)
    notes += _surplus_notes(run, manifest)
    notes += _held_out_notes(manifest)
    notes += _skipped_judge_notes(manifest, scorers, summary.records)
    notes += _failed_judge_notes(manifest, scorers, totals, run_dir)
    notes += _cached_judge_notes(manifest, totals)
    notes += _length_stop_notes(totals, manifest, run_dir)
    epochs = _epochs(columns, manifest.epochs)
    notes += _alike_epochs_notes(epochs, manifest)
    return ProfileReport(
        run=run,
        headline=headline,
        axes=report_axes,
        axes_without_records=without,
        overall=overall,
        epochs=epochs,
        scorers=scorers,
        totals=totals,
        precision=[
            note
            for a in report_axes
            if (note := _precision(a, by_axis[a.axis], manifest.dataset.sample_count)) is not None
        ],
        # as the run is seen now: a killed run's manifest still says running
        gates=evaluate_gates(summary.model_copy(update={"status": run.status}), spec, manifest.dataset.axes),
        gate_on=spec.gate_on,
        notes=notes,
        judge_reliability=reliability or [],
        by_tag=[_report_axis(axis_stats(rows, tag, ci, seed), rows, ci, seed) for tag, rows in per_tag(columns)],
        untagged_records=untagged(columns),
    )


__all__ = [
    "BOOTSTRAP_APPROXIMATE_BELOW",
    "CI_CHOICES",
    "ERROR_POLICY",
    "PRECISION_TARGET",
    "PRECISION_WARNING",
    "REPORT_SCHEMA_VERSION",
    "EpochReport",
    "Headline",
    "PrecisionNote",
    "ProfileReport",
    "ReportAxis",
    "RunInfo",
    "RunSettings",
    "Totals",
    "build_report",
    "run_judge_reliability",
]
