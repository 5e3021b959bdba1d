"""Compare two runs of the same items, axis by axis, with paired tests that say which differences are real.

The runs are joined on ``(sample_id, epoch)``; samples present in one run only are counted and left out
of the paired statistics, and two runs that share no sample are refused. What is left out is counted where it
changes what a figure means: per axis (``only_a``/``only_b``, and a note when an axis's column is over part of
a run's records on it), per epoch (a run whose epochs are not all paired), and an axis with no pair at all is
named in ``unpaired_axes`` rather than dropped (a regression gate fails on it: nothing there was judged).
Per axis: both means with intervals, the difference B − A with its paired interval and a paired test that
agree with each other (McNemar's exact test with Newcombe's score interval for 0/1 scores; otherwise a
Student-t interval with the paired t-test, or below 30 pairs the sign-flip test), the Holm-adjusted p-value
across axes, whether the two intervals overlap (the conservative screen), and a verdict. The per-axis
intervals are each 95%, not adjusted for the number of axes; when an interval and its verdict still disagree
(the interval excludes 0 beside "no detectable difference", or the reverse) a note says so and which one
decides.
Latency, cost and error-rate deltas sit beside the scores, so the trade-off a single headline number
hides stays visible. Errors count as wrong (score 0), as in the report's headline; a pair that is an error in
both runs is a difference of 0 whatever the models can do, and a note counts such pairs. ``differs`` lists the
settings of the evaluation that are not the same in the two manifests: what tells the runs apart when the
model is the same (temperature 0 against 0.8, another endpoint, an edited template).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, Field

from eval_harness.aggregate import (
    RunColumns,
    default_workers,
    group_means,
    load_columns_cached,
    sample_index,
    scorer_keys,
)
from eval_harness.artifacts import RunPaths, observed_status, read_manifest
from eval_harness.errors import ConfigError
from eval_harness.stats import holm, mean_ci, paired_comparison
from eval_harness.types import RunManifest, ScorerSpec

__all__ = ["ALPHA", "CompareAxis", "Comparison", "SettingChange", "UnpairedAxis", "Verdict", "compare_runs"]

COMPARE_SCHEMA_VERSION = 1
ALPHA = 0.05
"""Family-wise error rate of the verdicts (Holm across axes)."""

Verdict = Literal["a_better", "b_better", "no_difference"]
_Row = TypeVar("_Row")


class CompareRun(BaseModel):
    """One side of the comparison."""

    run_id: str
    run_dir: str
    model: str
    task: str
    status: str
    dataset: str
    dataset_sha256: str
    records: int
    missing: int
    complete: bool = Field(
        default=True, description="All expected records are present (a regression gate fails on a run that is not)."
    )


class CompareAxis(BaseModel):
    """One axis (or ``overall``) of the comparison; ``diff`` and every ``*_diff`` are B − A."""

    axis: str
    n: int = Field(description="Paired records (present in both runs).")
    samples: int = Field(
        description="Distinct samples among them: the units of the paired test and the intervals, each sample "
        "the mean of its paired epochs (epochs of one sample are not independent); n when each has one epoch."
    )
    mean_a: float | None
    mean_b: float | None
    ci_a: tuple[float, float] | None
    ci_b: tuple[float, float] | None
    diff: float | None = Field(description="mean_b − mean_a.")
    diff_ci: tuple[float, float] | None = Field(
        description="95% paired interval of diff, for this axis alone (not adjusted across axes); None when the "
        "differences are all equal (one pair included): no spread to estimate one from."
    )
    diff_ci_method: str = Field(
        default="none", description="newcombe (0/1 scores), t (Student-t on the differences) or none."
    )
    test: str = Field(description="mcnemar, sign-flip, paired-t or none.")
    p_value: float
    p_floor: float | None = Field(
        default=None,
        description="The smallest p a Monte Carlo test can give (sign-flip with more sign patterns than resamples): "
        "p_value equal to it means this or less. None for an exact test.",
    )
    p_attainable: float | None = Field(
        default=None,
        description="The smallest p the exact test can give with this many pairs (2·0.5^n: every pair differing "
        "the same way); at 0.05 or above, no difference can be found here. None for the paired t-test and a "
        "Monte Carlo sign-flip test (see p_floor).",
    )
    p_adjusted: float = Field(description="Holm-adjusted across axes (overall: not adjusted).")
    separable: bool = Field(description="p_adjusted < 0.05: the difference is detectable.")
    intervals_overlap: bool = Field(description="The conservative screen: overlapping intervals.")
    verdict: Verdict
    error_rate_a: float | None
    error_rate_b: float | None
    error_rate_diff: float | None
    errors_both: int = Field(
        description="Paired records that are errors in both runs: each a difference of 0 (both counted as wrong), "
        "whatever the models can do, so they carry no evidence of a difference although n counts them."
    )
    latency_p50_ms_a: float | None
    latency_p50_ms_b: float | None
    latency_p50_diff_ms: float | None
    latency_p95_ms_a: float | None
    latency_p95_ms_b: float | None
    latency_p95_diff_ms: float | None
    cost_mean_a: float | None = Field(description="USD per record; None when a price is unknown.")
    cost_mean_b: float | None
    cost_mean_diff: float | None
    only_a: int = Field(
        default=0,
        description="A's records on this axis with no pair in B, left out of the row: its A figures are over n of "
        "A's n + only_a records on the axis, so when this is not 0 they are not A's own (its report's). Overall: "
        "the whole run's.",
    )
    only_b: int = Field(default=0, description="B's records on this axis with no pair in A, left out (see only_a).")


class UnpairedAxis(BaseModel):
    """An axis with records in one run (or in both, none of them paired): it has no row and no verdict."""

    axis: str
    only_a: int = Field(description="A's records on the axis, none with a pair in B.")
    only_b: int = Field(description="B's records on the axis, none with a pair in A.")

    @property
    def left_out(self) -> str:
        """What the axis holds, as printed: '20 records only in A, none in B'."""
        if not self.only_b:
            return f"{self.only_a:,} records only in A, none in B"
        if not self.only_a:
            return f"{self.only_b:,} records only in B, none in A"
        return f"{self.only_a:,} records in A and {self.only_b:,} in B, none of them paired"


class CompareHeadline(BaseModel):
    """The one-number gap, and what it hides."""

    macro_a: float | None = Field(description="Mean over axes of A's paired per-axis means.")
    macro_b: float | None
    macro_diff: float | None
    micro_a: float | None = Field(description="Mean over all paired records.")
    micro_b: float | None
    micro_diff: float | None
    diff_ci: tuple[float, float] | None
    diff_ci_method: str = "none"
    test: str
    p_value: float = Field(description="Paired test over all records; not part of the Holm family.")
    p_floor: float | None = None
    verdict: Verdict
    axes_a_better: list[str]
    axes_b_better: list[str]


class SettingChange(BaseModel):
    """One setting of the evaluation that is not the same in the two runs' manifests."""

    setting: str = Field(
        description="Where it is in manifest.json: model.id, model.args.endpoint, task.generation.temperature, "
        "task.template_sha256, seed..."
    )
    a: Any = Field(description="A's value (null: not set, the provider's or the harness's default).")
    b: Any = Field(description="B's value (null: not set).")
    text: str = Field(description="As printed: the setting, A's value → B's (generation.temperature 0.0 → 0.8).")


class Comparison(BaseModel):
    """``eval-harness compare --format json``."""

    schema_version: int = COMPARE_SCHEMA_VERSION
    run_a: CompareRun
    run_b: CompareRun
    headline: CompareHeadline
    axes: list[CompareAxis]
    overall: CompareAxis
    paired: int = Field(description="Records present in both runs.")
    only_a: int = Field(description="Records in A only: excluded from the paired statistics.")
    only_b: int = Field(description="Records in B only: excluded from the paired statistics.")
    alpha: float = ALPHA
    forced: list[str] = Field(description="Differences that would have refused the comparison, overridden by --force.")
    notes: list[str]
    differs: list[SettingChange] = Field(
        default_factory=list,
        description="The settings of the evaluation that differ between the runs (empty: none does), from their "
        "manifests; pacing (concurrency, timeout, rpm, tpm, retries, cache) and bookkeeping (run id, times, "
        "status, sessions) are left out.",
    )
    unpaired_axes: list[UnpairedAxis] = Field(
        default_factory=list,
        description="Axes with records but no paired record (in one run only, or disjoint samples): not compared, "
        "so absent from axes and from the headline's macro; a regression gate fails on them.",
    )

    @property
    def regressions(self) -> list[CompareAxis]:
        """The rows significantly worse in B: axes (Holm-adjusted, 5%), then the overall row (its own test at 5%;
        with one axis it is that axis)."""
        return [a for a in judged_rows(self.axes, self.overall) if a.verdict == "a_better"]

    @property
    def incomplete(self) -> list[tuple[str, CompareRun]]:
        """The runs with records missing, as ('A' or 'B', run): a regression gate on them judges part of a run."""
        return [(side, run) for side, run in (("A", self.run_a), ("B", self.run_b)) if not run.complete]


def judged_rows(axes: Sequence[_Row], overall: _Row) -> list[_Row]:
    """The rows with a verdict of their own: the axes, then overall when there are several (with one axis,
    overall is that axis again); also what goes with each row, given in the axes' order."""
    return [*axes, overall] if len(axes) > 1 else list(axes)


def _scorers_text(scorers: Sequence[ScorerSpec]) -> str:
    parts = []
    for spec in scorers:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(spec.args.items()))
        extra = [f"weight={spec.weight:g}"] if spec.weight != 1.0 else []
        extra += ["gate"] if spec.gate else []
        inner = ", ".join([a for a in [args, *extra] if a])
        parts.append(f"{spec.key}({inner})" if inner else spec.key)
    return " + ".join(parts)


def _same_scorers(a: RunManifest, b: RunManifest) -> bool:
    return [s.model_dump() for s in a.task.scorers] == [s.model_dump() for s in b.task.scorers]


def incomparable(a: RunManifest, b: RunManifest) -> list[str]:
    """What differs between the runs' datasets and scorers (empty when they can be compared)."""
    problems = []
    if a.dataset.sha256 != b.dataset.sha256:
        problems.append(
            f"different datasets (A: {a.dataset.path} sha256 {a.dataset.sha256[:12]}, "
            f"B: {b.dataset.path} sha256 {b.dataset.sha256[:12]})"
        )
    if not _same_scorers(a, b):
        problems.append(f"different scorers (A: {_scorers_text(a.task.scorers)}, B: {_scorers_text(b.task.scorers)})")
    return problems


# What tells two runs apart, from their manifests. Left out as not settings of the evaluation: the run id,
# times, status, sessions and wall time (bookkeeping), and concurrency, timeout, rpm, tpm, max_retries and
# cache: they set the pace and the patience of the calls, not what is asked, of which model, or how it is
# scored (a short timeout can turn slow answers into errors, but then the error rates beside the scores show
# it). A dataset's path is left out when its content (sha256) is the same. Manifests hold no secrets (the
# providers drop them from the recorded arguments), so neither does this list.
_SHOWN_CHARS = 40
_LABELS = {"model.id": "model", "judge.id": "judge", "task.name": "task"}
# what the fingerprint covers (see planning._fingerprint_parts) that a manifest also records on its own
_FINGERPRINTED = ("model.", "judge", "dataset.sha256", "task.template_sha256", "task.system_prompt", "task.scorers",
                  "task.pass_threshold", "seed")  # fmt: skip


def differing_settings(a: RunManifest, b: RunManifest) -> list[SettingChange]:
    """The settings of the evaluation that are not the same in manifests ``a`` and ``b``, in the order a reader
    looks for them: model and its arguments, generation, prompt, dataset, scoring, judge, seed, epochs, limit."""
    ta, tb = a.task, b.task
    changes = _leaf_changes("model", a.model.model_dump(mode="json"), b.model.model_dump(mode="json"))
    generation = [t.generation.model_dump(mode="json") for t in (ta, tb)]
    changes += _leaf_changes("task.generation", *generation)
    changes += _leaf_changes("task.name", ta.name, tb.name)
    template = ta.template if ta.template == tb.template else f"{ta.template} → {tb.template}"
    changes += _digest_change("task.template_sha256", f"template {template}", ta.template_sha256, tb.template_sha256)
    changes += _leaf_changes("task.system_prompt", ta.system_prompt, tb.system_prompt)
    changes += _leaf_changes("task.few_shot", ta.few_shot, tb.few_shot)
    # the few-shot spec being the same, the examples' content or the template's variables changed (with the
    # spec changed, its entries say why); None: a run made before this was recorded
    if ta.few_shot == tb.few_shot and ta.prompt_inputs_sha256 is not None and tb.prompt_inputs_sha256 is not None:
        what = "few-shot examples or template variables"
        changes += _digest_change("task.prompt_inputs_sha256", what, ta.prompt_inputs_sha256, tb.prompt_inputs_sha256)
    names = [Path(m.dataset.path).name for m in (a, b)]
    dataset = names[0] if names[0] == names[1] else " → ".join(names)
    changes += _digest_change("dataset.sha256", f"dataset {dataset}", a.dataset.sha256, b.dataset.sha256)
    if not _same_scorers(a, b):
        keys_a, keys_b = (" + ".join(spec.key for spec in t.scorers) for t in (ta, tb))
        # the keys when they tell the scorers apart: the whole specs (in the refusal, or the rescore note) are long
        if keys_a == keys_b:
            keys_a, keys_b = _scorers_text(ta.scorers), _scorers_text(tb.scorers)
        specs_a, specs_b = ([s.model_dump(mode="json") for s in t.scorers] for t in (ta, tb))
        changes.append(SettingChange(setting="task.scorers", a=specs_a, b=specs_b, text=f"scorers {keys_a} → {keys_b}"))
    changes += _leaf_changes("task.pass_threshold", ta.pass_threshold, tb.pass_threshold)
    judges = [m.judge.model_dump(mode="json") if m.judge else None for m in (a, b)]
    changes += _leaf_changes("judge", *judges)
    for name in ("seed", "epochs", "limit"):
        changes += _leaf_changes(name, getattr(a, name), getattr(b, name))
    if a.source_run != b.source_run:  # a rescore's outputs, named by the source run's directory
        ids = " → ".join(Path(run).name if run else "unset" for run in (a.source_run, b.source_run))
        changes.append(SettingChange(setting="source_run", a=a.source_run, b=b.source_run, text=f"source_run {ids}"))
    # not a flag, but another version of the harness may render prompts or score answers differently
    changes += _leaf_changes("harness_version", a.harness_version, b.harness_version)
    if not any(c.setting.startswith(_FINGERPRINTED) for c in changes):
        what = "a judge's rubric or another file a scorer reads"
        changes += _digest_change("fingerprint", what, a.fingerprint, b.fingerprint, "fingerprint")
    return changes


def _digest_change(setting: str, what: str, a: str, b: str, digest: str = "sha256") -> list[SettingChange]:
    """A change of content known by its digest, as ``what (sha256 1a2b3c… → 4d5e6f…)``; none when they match."""
    return [] if a == b else [SettingChange(setting=setting, a=a, b=b, text=f"{what} ({digest} {a[:12]} → {b[:12]})")]


def _leaves(value: Any, path: str) -> dict[str, Any]:
    """``value`` flattened: each non-dict value under its dotted path (an empty dict holds none)."""
    if not isinstance(value, dict):
        return {path: value}
    leaves: dict[str, Any] = {}
    for key, item in value.items():
        leaves.update(_leaves(item, f"{path}.{key}"))
    return leaves


def _leaf_changes(path: str, a: Any, b: Any) -> list[SettingChange]:
    """One change per dotted path under ``path`` whose value differs (a path missing on one side: unset)."""
    leaves_a, leaves_b = _leaves(a, path), _leaves(b, path)
    changes = []
    for key in dict.fromkeys([*leaves_a, *leaves_b]):
        value_a, value_b = leaves_a.get(key), leaves_b.get(key)
        if value_a == value_b:
            continue
        label = _LABELS.get(key) or key.removeprefix("task.")
        shown_a, shown_b = _shown(value_a), _shown(value_b)
        if shown_a == shown_b:  # two long values cut to the same text: their digests tell them apart
            text = f"{label} (sha256 {_digest(value_a)} → {_digest(value_b)})"
        else:
            text = f"{label} {shown_a} → {shown_b}"
        changes.append(SettingChange(setting=key, a=value_a, b=value_b, text=text))
    return changes


def _shown(value: Any) -> str:
    """A setting's value as printed: a plain word bare, other text quoted, the rest as JSON; cut to a line."""
    if value is None:
        return "unset"
    if isinstance(value, str) and value and value != "unset" and not any(c.isspace() or c == '"' for c in value):
        text = value
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + "…"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:12]


def _forced_notes(a: RunManifest, b: RunManifest) -> list[str]:
    """A run resumed with --force across a change holds records made under two settings, while its manifest
    (which ``differs`` reads) keeps the first session's; but for the model's arguments, which it records as a
    forced session changed them (later resumes call the model so)."""
    notes = []
    for side, m in (("A", a), ("B", b)):
        if not m.forced_changes:
            continue
        moved = any(": model args of " in change for change in m.forced_changes)
        held = " (its model arguments: the last forced session's)" if moved else ""
        notes.append(
            f"{side} was resumed with --force across changes ({'; '.join(m.forced_changes)}): its records may mix "
            f"the settings before and after them, while its manifest, which differs compares, holds the first "
            f"session's{held}"
        )
    return notes


def join_keys(keys_a: NDArray[np.uint64], keys_b: NDArray[np.uint64]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Row indices ``(ia, ib)`` of the keys (``RunColumns.key_hash``) present in both runs, in B's order."""
    if keys_a.shape[0] == 0 or keys_b.shape[0] == 0:
        empty = np.zeros(0, dtype=np.intp)
        return empty, empty
    order = np.argsort(keys_a[:, 0])
    first = keys_a[order, 0]
    left = np.searchsorted(first, keys_b[:, 0], side="left")
    right = np.searchsorted(first, keys_b[:, 0], side="right")
    candidate = order[np.minimum(left, order.size - 1)]
    found = (right > left) & (keys_a[candidate, 1] == keys_b[:, 1])
    # Two of A's keys sharing the first 64-bit hash (about one chance in 10^8 per million keys): search
    # the run of equal first hashes for the matching second hash.
    for row in np.flatnonzero((right - left > 1) & ~found).tolist():
        for position in range(int(left[row]), int(right[row])):
            if keys_a[order[position], 1] == keys_b[row, 1]:
                candidate[row], found[row] = order[position], True
                break
    ib = np.flatnonzero(found)
    return candidate[ib].astype(np.intp), ib.astype(np.intp)


@dataclass(frozen=True)
class _Run:
    """What a comparison keeps of one run: a few columns, a fraction of ``RunColumns`` (and of its memory)."""

    axes: list[str]
    axis: NDArray[np.int32]
    epoch: NDArray[np.int64]
    key_hash: NDArray[np.uint64]
    sample: NDArray[np.uint64]
    """The first 64 bits of each row's sample identity: which rows are epochs of one sample."""
    side: _Side

    @classmethod
    def of(cls, columns: RunColumns) -> _Run:
        every = np.arange(columns.n, dtype=np.intp)
        sample = np.ascontiguousarray(columns.sample_hash[:, 0])
        return cls(columns.axes, columns.axis, columns.epoch, columns.key_hash, sample, _Side.of(columns, every))

    @property
    def n(self) -> int:
        return int(self.axis.size)


def _load_run(path: Path, keys: list[str]) -> _Run:
    # light: a comparison needs identity, axis, score, error, latency and cost only.
    return _Run.of(load_columns_cached(path, keys, light=True))


@dataclass(frozen=True)
class _Side:
    """What the comparison uses of one run's paired rows."""

    final: NDArray[np.float64]
    error: NDArray[np.bool_]
    latency_ms: NDArray[np.float64]
    cost_usd: NDArray[np.float64]

    @classmethod
    def of(cls, columns: RunColumns, rows: NDArray[np.intp]) -> _Side:
        return cls(columns.final[rows], columns.error[rows], columns.latency_ms[rows], columns.cost_usd[rows])

    def take(self, rows: NDArray[np.intp]) -> _Side:
        return _Side(self.final[rows], self.error[rows], self.latency_ms[rows], self.cost_usd[rows])

    def percentiles(self) -> tuple[float | None, float | None]:
        known = self.latency_ms[~np.isnan(self.latency_ms)]
        if not known.size:
            return None, None
        p50, p95 = np.percentile(known, [50, 95]).tolist()
        return float(p50), float(p95)

    def cost_mean(self) -> float | None:
        """Mean cost per record; None when a completed record has no price (unknown, not zero)."""
        if self.final.size == 0 or np.any(np.isnan(self.cost_usd) & ~self.error):
            return None
        return math.fsum(self.cost_usd[~np.isnan(self.cost_usd)].tolist()) / self.final.size


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _interval(low: float, high: float) -> tuple[float, float] | None:
    return None if np.isnan(low) or np.isnan(high) else (low, high)


def _per_sample(final: NDArray[np.float64], sample: NDArray[np.intp] | None) -> NDArray[np.float64]:
    """Each sample's mean over its rows (``sample``: a sample index per row), or the rows as they are."""
    return final if sample is None else group_means(final, sample)


def _axis(
    name: str, a: _Side, b: _Side, seed: int, sample: NDArray[np.intp] | None = None, only: tuple[int, int] = (0, 0)
) -> CompareAxis:
    """The comparison of paired rows ``a`` and ``b`` (same length, at least one, same keys in the same order).
    With several epochs, ``sample`` gives each row's sample (0..k-1): the tests and intervals then take one
    unit per sample, the mean of its epochs, since the epochs of one sample are not independent evidence.
    ``only``: the records of A and of B on the axis left out for want of a pair."""
    n = int(a.final.size)
    units_a, units_b = _per_sample(a.final, sample), _per_sample(b.final, sample)
    # means, difference, intervals and test all over the same units (samples, when there are epochs)
    mean_a, low_a, high_a, _ = mean_ci(units_a, seed=seed)
    mean_b, low_b, high_b, _ = mean_ci(units_b, seed=seed)
    ci_a, ci_b = _interval(low_a, high_a), _interval(low_b, high_b)
    paired = paired_comparison(units_a, units_b, seed=seed)
    diff, diff_ci = paired.diff, _interval(paired.low, paired.high)
    p50_a, p95_a = a.percentiles()
    p50_b, p95_b = b.percentiles()
    cost_a, cost_b = a.cost_mean(), b.cost_mean()
    error_a, error_b = float(np.mean(a.error)), float(np.mean(b.error))
    overlap = ci_a is None or ci_b is None or (ci_a[1] >= ci_b[0] and ci_b[1] >= ci_a[0])
    return CompareAxis(
        axis=name,
        n=n,
        samples=int(units_a.size),
        mean_a=mean_a,
        mean_b=mean_b,
        ci_a=ci_a,
        ci_b=ci_b,
        diff=diff,
        diff_ci=diff_ci,
        diff_ci_method=paired.interval,
        test=paired.test,
        p_value=paired.p_value,
        p_floor=paired.p_floor,
        p_attainable=_p_attainable(paired.test, paired.p_floor, int(units_a.size)),
        p_adjusted=paired.p_value,
        separable=False,
        intervals_overlap=overlap,
        verdict="no_difference",
        error_rate_a=error_a,
        error_rate_b=error_b,
        error_rate_diff=_delta(error_a, error_b),
        errors_both=int(np.count_nonzero(a.error & b.error)),
        latency_p50_ms_a=p50_a,
        latency_p50_ms_b=p50_b,
        latency_p50_diff_ms=_delta(p50_a, p50_b),
        latency_p95_ms_a=p95_a,
        latency_p95_ms_b=p95_b,
        latency_p95_diff_ms=_delta(p95_a, p95_b),
        cost_mean_a=cost_a,
        cost_mean_b=cost_b,
        cost_mean_diff=_delta(cost_a, cost_b),
        only_a=only[0],
        only_b=only[1],
    )


def _p_attainable(test: str, p_floor: float | None, units: int) -> float | None:
    """The smallest two-sided p an exact test of ``units`` pairs can give: McNemar's with every pair discordant
    the same way, and the sign-flip test with every difference of one sign, where only 2 of the 2^n sign
    patterns (all plus, all minus) reach the observed mean: both 2·0.5^n."""
    if test not in _EXACT_TESTS or p_floor is not None:
        return None
    return min(1.0, 2.0 * 0.5**units)


def _decide(axis: CompareAxis, p_adjusted: float) -> CompareAxis:
    separable = p_adjusted < ALPHA and axis.diff is not None and axis.diff != 0
    verdict: Verdict = "no_difference"
    if separable and axis.diff is not None:
        verdict = "b_better" if axis.diff > 0 else "a_better"
    return axis.model_copy(update={"p_adjusted": p_adjusted, "separable": separable, "verdict": verdict})


def _run_info(run_dir: Path, manifest: RunManifest, records: int) -> CompareRun:
    missing = max(0, manifest.expected_records - records)
    return CompareRun(
        run_id=manifest.run_id,
        run_dir=str(run_dir),
        model=manifest.model.id,
        task=manifest.task.name,
        status=observed_status(run_dir, manifest),
        dataset=manifest.dataset.path,
        dataset_sha256=manifest.dataset.sha256,
        records=records,
        missing=missing,
        complete=missing == 0,
    )


def _load_both(path_a: Path, keys_a: list[str], path_b: Path, keys_b: list[str], parallel: bool) -> tuple[_Run, _Run]:
    if not parallel:
        return _load_run(path_a, keys_a), _load_run(path_b, keys_b)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # A is read in a forked process while this one reads B: two files, two cores. Only the compact _Run
    # crosses the pipe.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        future = pool.submit(_load_run, path_a, keys_a)
        run_b = _load_run(path_b, keys_b)
        return future.result(), run_b


def compare_runs(run_a: Path, run_b: Path, *, force: bool = False, parallel: bool | None = None) -> Comparison:
    """Compare the runs in ``run_a`` and ``run_b``.

    Refuses with a ``ConfigError`` saying what differs when the runs used different datasets or scorers,
    unless ``force`` (then ``forced`` lists what differed). ``parallel`` reads the two samples files in
    two processes (default: when the files are large; it forks, so call from a single-threaded process).
    """
    manifest_a, manifest_b = read_manifest(run_a), read_manifest(run_b)
    problems = incomparable(manifest_a, manifest_b)
    rescore = _rescore_of(manifest_a, manifest_b, run_a, run_b)
    if rescore is not None:
        # the same outputs under other scorers: what changed is the point of comparing them
        problems = [p for p in problems if not p.startswith("different scorers")]
    if problems and not force:
        raise ConfigError(f"cannot compare {run_a} and {run_b}: {'; '.join(problems)}; pass --force to compare anyway")
    path_a, path_b = RunPaths(run_a).samples, RunPaths(run_b).samples
    if parallel is None:
        parallel = default_workers(path_a) > 1 or default_workers(path_b) > 1
    loaded_a, loaded_b = _load_both(path_a, scorer_keys(manifest_a), path_b, scorer_keys(manifest_b), parallel)
    comparison = _compare(loaded_a, loaded_b, manifest_a, manifest_b, run_a=run_a, run_b=run_b, forced=problems)
    if rescore is not None:
        comparison.notes.insert(0, rescore)
    return comparison


def _rescore_of(a: RunManifest, b: RunManifest, run_a: Path, run_b: Path) -> str | None:
    """A note when one run rescores the other's outputs (``rescore``'s ``source_run``), else None."""
    if b.source_run is not None and Path(b.source_run) == run_a.resolve():
        rescored, source, which = b, a, "B rescores A's outputs"
    elif a.source_run is not None and Path(a.source_run) == run_b.resolve():
        rescored, source, which = a, b, "A rescores B's outputs"
    else:
        return None
    if _same_scorers(rescored, source):
        return f"{which} under the same scorers"
    return (
        f"{which}: the differences are the scorers' (A: {_scorers_text(a.task.scorers)}, "
        f"B: {_scorers_text(b.task.scorers)}), the answers are the same"
    )


def _compare(
    columns_a: _Run,
    columns_b: _Run,
    manifest_a: RunManifest,
    manifest_b: RunManifest,
    *,
    run_a: Path,
    run_b: Path,
    forced: Sequence[str],
) -> Comparison:
    ia, ib = join_keys(columns_a.key_hash, columns_b.key_hash)
    if ia.size == 0:
        raise ConfigError(
            f"the runs share no sample; nothing to compare ({run_a}: {columns_a.n:,} records, {run_b}: "
            f"{columns_b.n:,} records, no (sample_id, epoch) in both)"
        )
    a, b = columns_a.side.take(ia), columns_b.side.take(ib)
    axis_a = columns_a.axis[ia]
    seed = manifest_a.seed
    notes: list[str] = []
    # B's axis codes in A's numbering (-1: an axis A does not have), to count records that moved axis.
    lut = np.array([columns_a.axes.index(x) if x in columns_a.axes else -1 for x in columns_b.axes] or [-1])
    moved = int(np.count_nonzero(lut[columns_b.axis[ib]] != axis_a)) if ib.size else 0
    if moved:
        notes.append(f"{moved:,} paired records have another axis in B; they are counted under A's axis")
    axes: list[CompareAxis] = []
    axis_rows: list[NDArray[np.intp]] = []
    several_epochs = max(manifest_a.epochs, manifest_b.epochs) > 1  # else no sample has two rows: skip the sort
    sample = sample_index(columns_a.sample[ia]) if several_epochs else None
    if sample is not None:
        notes.append(
            f"several epochs: each sample is one unit of the paired tests and intervals (the mean of its paired "
            f"epochs), since the epochs of one sample are not independent: {int(sample.max()) + 1:,} samples "
            f"in {sample.size:,} paired records"
        )
    unpaired_a, unpaired_b = _unpaired_by_axis(columns_a, ia), _unpaired_by_axis(columns_b, ib)
    for code in sorted(range(len(columns_a.axes)), key=lambda c: columns_a.axes[c]):
        rows = np.flatnonzero(axis_a == code)
        if rows.size:
            name = columns_a.axes[code]
            in_axis = None if sample is None else np.unique(sample[rows], return_inverse=True)[1]
            only = (unpaired_a.get(name, 0), unpaired_b.get(name, 0))
            axes.append(_axis(name, a.take(rows), b.take(rows), seed, in_axis, only))
            axis_rows.append(rows)
    adjusted = holm([axis.p_value for axis in axes]) if axes else []
    axes = [_decide(axis, p) for axis, p in zip(axes, adjusted, strict=True)]
    paired = int(ia.size)
    only_a, only_b = columns_a.n - paired, columns_b.n - paired
    overall = _axis("overall", a, b, seed, sample, (only_a, only_b))
    overall = _decide(overall, overall.p_value)
    compared = {axis.axis for axis in axes}
    # a B axis whose paired records all moved to A's axes was compared there: not "no pairs"
    moved_b = {columns_b.axes[c] for c in np.unique(columns_b.axis[ib]).tolist()} - compared
    unpaired_axes = [
        UnpairedAxis(axis=name, only_a=unpaired_a.get(name, 0), only_b=unpaired_b.get(name, 0))
        for name in sorted({*unpaired_a, *unpaired_b} - compared - moved_b)
    ]
    if only_a or only_b:
        notes.append(f"{only_a:,} records only in A and {only_b:,} only in B are left out of the paired statistics")
    notes += [f"{axis.axis}: {axis.left_out}: not compared" for axis in unpaired_axes]
    notes += [
        f"{name}: B's paired records on this axis are counted under A's axes; its other {unpaired_b[name]:,} have "
        "no pair in A and are left out"
        for name in sorted(moved_b)
        if unpaired_b.get(name)
    ]
    epoch_notes, by_epoch = _epoch_notes(columns_a, columns_b, ia, ib)
    notes += _coverage_notes(axes, skip=by_epoch) + epoch_notes
    if manifest_a.task.pass_threshold != manifest_b.task.pass_threshold:
        notes.append("the runs use different pass thresholds; scores are compared, not pass rates")
    notes += _unattainable_notes(axes, overall)
    notes += _interval_notes(axes, overall)
    judged = list(zip(judged_rows(axes, overall), judged_rows(axis_rows, np.arange(paired)), strict=True))
    notes += _error_notes(judged, a, b)
    notes += _both_error_notes(judged, a, b, sample)
    notes += _forced_notes(manifest_a, manifest_b)
    macro_a = _mean_of([axis.mean_a for axis in axes])
    macro_b = _mean_of([axis.mean_b for axis in axes])
    headline = CompareHeadline(
        macro_a=macro_a,
        macro_b=macro_b,
        macro_diff=_delta(macro_a, macro_b),
        micro_a=overall.mean_a,
        micro_b=overall.mean_b,
        micro_diff=overall.diff,
        diff_ci=overall.diff_ci,
        diff_ci_method=overall.diff_ci_method,
        test=overall.test,
        p_value=overall.p_value,
        p_floor=overall.p_floor,
        verdict=overall.verdict,
        axes_a_better=[axis.axis for axis in axes if axis.verdict == "a_better"],
        axes_b_better=[axis.axis for axis in axes if axis.verdict == "b_better"],
    )
    return Comparison(
        run_a=_run_info(run_a, manifest_a, columns_a.n),
        run_b=_run_info(run_b, manifest_b, columns_b.n),
        headline=headline,
        axes=axes,
        overall=overall,
        paired=paired,
        only_a=only_a,
        only_b=only_b,
        forced=list(forced),
        notes=notes,
        differs=differing_settings(manifest_a, manifest_b),
        unpaired_axes=unpaired_axes,
    )


def _unpaired_by_axis(run: _Run, paired_rows: NDArray[np.intp]) -> dict[str, int]:
    """The run's records without a pair, by the run's own axis of them (axes with none left out)."""
    size = len(run.axes)
    left = np.bincount(run.axis, minlength=size) - np.bincount(run.axis[paired_rows], minlength=size)
    return {run.axes[code]: int(left[code]) for code in np.flatnonzero(left).tolist()}


def _coverage_notes(axes: Sequence[CompareAxis], skip: Collection[str] = ()) -> list[str]:
    """For each run (but those in ``skip``), the axes whose column is over part of the run's records on them
    (the rest had no pair): a reader takes "B %" for B's figure, which is the one in B's report only when
    nothing of B was left out (a --limit 30 run against a full one once showed conversion over 10 of B's 20
    samples, unmarked)."""
    notes = []
    for side, other in (("A", "B"), ("B", "A")):
        if side in skip:
            continue
        partial = [(axis.axis, axis.n, axis.n + (axis.only_a if side == "A" else axis.only_b)) for axis in axes]
        partial = [(name, n, total) for name, n, total in partial if total > n]
        rest = f"the rest have no pair in {other} and are left out, so {side} % there is not {side}'s own figure"
        if len(partial) == 1:
            ((name, n, total),) = partial
            notes.append(f"{name}: the {side} column is over {n:,} of {side}'s {total:,} records ({rest})")
        elif partial:
            shown = ", ".join(f"{name} {n:,} of {total:,}" for name, n, total in partial)
            notes.append(f"the {side} columns are over part of {side}'s records on {shown} ({rest})")
    return notes


def _epoch_notes(run_a: _Run, run_b: _Run, ia: NDArray[np.intp], ib: NDArray[np.intp]) -> tuple[list[str], set[str]]:
    """A run with epochs the other lacks (3 against 5): its columns are over the paired epochs only. Also the
    sides ('A', 'B') whose every record left out is of such an epoch: the note says all there is about them."""
    paired = _epochs(run_a.epoch[ia])
    notes, whole = [], set()
    for side, run, rows in (("A", run_a, ia), ("B", run_b, ib)):
        own = _epochs(run.epoch)
        if own == paired:
            continue
        extra = [epoch for epoch in own if epoch not in paired]
        unpaired = np.ones(run.n, dtype=np.bool_)
        unpaired[rows] = False
        if not np.isin(run.epoch[unpaired], paired).any():
            whole.add(side)
        notes.append(
            f"epochs: {side}'s columns are over its {_span(paired)} only, the paired ones: {side}'s records of "
            f"{_span(extra)} are left out, so {side}'s own report, over all {len(own):,} epochs, can differ"
        )
    return notes, whole


def _epochs(epoch: NDArray[np.int64]) -> list[int]:
    return np.flatnonzero(np.bincount(epoch)).tolist() if epoch.size else []


def _span(epochs: Sequence[int]) -> str:
    """Epochs as printed: 'epoch 0', 'epochs 0–2' when they run on, else listed ('epochs 0, 2, 4')."""
    if len(epochs) == 1:
        return f"epoch {epochs[0]}"
    if epochs[-1] - epochs[0] == len(epochs) - 1:
        return f"epochs {epochs[0]}–{epochs[-1]}"
    return "epochs " + ", ".join(str(epoch) for epoch in epochs)


_TESTS = {"mcnemar": "exact McNemar", "sign-flip": "sign-flip", "paired-t": "paired t"}
_EXACT_TESTS = {"mcnemar": "McNemar", "sign-flip": "sign-flip"}
"""The tests of which ``p_attainable`` is known."""
_INTERVALS = {"newcombe": "Newcombe's score interval", "t": "the Student-t interval"}


def _interval_notes(axes: Sequence[CompareAxis], overall: CompareAxis) -> list[str]:
    """What the reader needs to square each interval with its verdict: intervals that are per axis while the
    verdicts are Holm-adjusted, an interval that disagrees with its test, differences with no interval."""
    notes = []
    if len(axes) > 1:
        notes.append(
            f"each axis's 95% interval of the difference is for that axis alone (not adjusted for the {len(axes)} "
            "axes), while its verdict reads the Holm-adjusted p: an interval may exclude 0 beside "
            '"no detectable difference"'
        )
    for axis in judged_rows(axes, overall):
        if axis.diff_ci is None and axis.diff is not None:
            units = axis.samples
            what = "one pair" if units == 1 else f"all {units:,} differences equal ({100 * axis.diff:+.1f} points)"
            notes.append(f"{axis.axis}: {what}: no spread to estimate an interval from; the {axis.test} test is exact")
            continue
        if axis.diff_ci is None:
            continue
        excludes = axis.diff_ci[0] > 0 or axis.diff_ci[1] < 0
        if excludes == axis.separable:
            continue
        holm_decides = axis is not overall and (axis.p_value < ALPHA) == excludes
        interval = _INTERVALS.get(axis.diff_ci_method, axis.diff_ci_method)
        shown = "excludes 0" if excludes else "includes 0"
        found = "finds no detectable difference" if not axis.separable else "finds a difference"
        if holm_decides:
            notes.append(
                f"{axis.axis}: the 95% interval of the difference {shown}, but the Holm-adjusted p "
                f"{found} once the {len(axes)} axes are counted; the adjusted test decides"
            )
        else:
            exact = "exact " if axis.test != "paired-t" and axis.p_floor is None else ""
            notes.append(
                f"{axis.axis}: the 95% interval of the difference ({interval}) {shown}, but the "
                f"{_TESTS.get(axis.test, axis.test)} test {found}: two procedures that can disagree near the "
                f"edge; the {exact}test decides"
            )
    return notes


def _unattainable_notes(axes: Sequence[CompareAxis], overall: CompareAxis) -> list[str]:
    """Rows whose pairs are too few for any difference to reach p < 5%: there "no detectable difference" (and a
    regression gate that passes) means the comparison cannot tell, not that the runs are alike. Rows alike in
    their units and test share one note."""
    needed = math.ceil(math.log2(2 / ALPHA))  # the fewest pairs whose 2·0.5^n is below ALPHA: 6 at 5%
    groups: dict[tuple[int, bool, str, float, bool], list[str]] = {}
    for axis in judged_rows(axes, overall):
        if axis.p_attainable is not None and axis.p_attainable >= ALPHA:
            adjusted = axis is not overall and len(axes) > 1
            key = (axis.samples, axis.samples != axis.n, axis.test, axis.p_attainable, adjusted)
            groups.setdefault(key, []).append(axis.axis)
    notes = []
    for (units, by_sample, test, p_min, adjusted), names in groups.items():
        what = ("sample" if units == 1 else "samples") if by_sample else ("pair" if units == 1 else "pairs")
        each = " each" if len(names) > 1 else ""
        unit_note = " (the units, with epochs)" if by_sample else ""
        holm = " (Holm's adjustment can only raise it)" if adjusted else ""
        notes.append(
            f"{', '.join(names)}: {units:,} {what}{each}{unit_note}: the smallest p the exact "
            f"{_EXACT_TESTS[test]} test can give is {p_min:.3g}{holm}, not below {100 * ALPHA:g}% (that takes "
            f"{needed} at least), so no difference can be found there: 'no detectable difference' means the "
            "comparison cannot tell"
        )
    return notes


def _error_notes(judged: Sequence[tuple[CompareAxis, NDArray[np.intp]]], a: _Side, b: _Side) -> list[str]:
    """A verdict that comes mostly from one run's errors (counted as wrong) may be an outage, not quality.
    ``judged``: each row with a verdict and its paired records."""
    notes = []
    for axis, rows in judged:
        if axis.verdict == "no_difference":
            continue
        b_won = axis.verdict == "b_better"
        winner, loser = ("B", "A") if b_won else ("A", "B")
        diff = b.final[rows] - a.final[rows]
        # the records where the winner scored higher, and among them those where the loser holds an error
        won = diff > 0 if b_won else diff < 0
        loser_error = (a.error if b_won else b.error)[rows]
        errors, total = int(np.count_nonzero(won & loser_error)), int(np.count_nonzero(won))
        if total and 2 * errors > total:
            notes.append(
                f"{axis.axis}: {errors:,} of the {total:,} records where {winner} scored higher are errors in "
                f"{loser} (counted as wrong): check {loser}'s errors before reading this as a difference in quality"
            )
    return notes


def _both_error_notes(
    judged: Sequence[tuple[CompareAxis, NDArray[np.intp]]], a: _Side, b: _Side, sample: NDArray[np.intp] | None
) -> list[str]:
    """Pairs that are errors in both runs are each a difference of 0 (both counted as wrong) whatever the models
    can do: n counts them, the evidence of a difference lies in the other pairs (the same over-context error
    in both runs, 30 pairs of 40, once made n read 40 for a test that rested on 10)."""
    notes = []
    both = a.error & b.error
    for axis, rows in judged:
        if not axis.errors_both:
            continue
        errors = f"{axis.errors_both:,} of {axis.n:,}"
        if sample is None:
            rest = axis.n - axis.errors_both
            left = f"the test rests on the other {rest:,}" if rest else "no pair is left to tell the runs apart"
            notes.append(f"{axis.axis}: {errors} pairs are errors in both runs (a difference of 0 each); {left}")
            continue
        # the units of the test are samples: one whose every paired epoch is an error in both runs is a 0
        rest = int(np.unique(sample[rows][~both[rows]]).size)
        gone, every = axis.samples - rest, "errors in both runs in every epoch"
        if not gone:
            left = f"every sample has an epoch that is not, so the test rests on all {rest:,}"
        elif rest:
            left = f"{gone:,} of the {axis.samples:,} samples are {every}, so the test rests on the other {rest:,}"
        else:
            left = f"all {gone:,} samples are {every}: no sample is left to tell the runs apart"
        notes.append(f"{axis.axis}: {errors} paired records are errors in both runs (a difference of 0 each); {left}")
    return notes


def _mean_of(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None
