"""The comparison's JSON document (``eval-harness compare --format json``): the pydantic models, the verdicts'
family-wise error rate (``ALPHA``), and which rows have a verdict of their own (``judged_rows``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from eval_harness.types import PairedInterval, PairedTest

COMPARE_SCHEMA_VERSION = 3
"""Version of ``compare --format json``. 2: ``p_floor`` gone (every sign-flip p is exact), ``differing`` added,
the overall row's ``p_adjusted`` null (its own test, outside the Holm family)."""
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
    diff_ci_method: PairedInterval = Field(
        default="none", description="newcombe (0/1 scores), t (Student-t on the differences) or none."
    )
    test: PairedTest = Field(description="mcnemar, sign-flip, paired-t or none.")
    p_value: float
    differing: int = Field(
        default=0,
        description="Units (pairs, or samples with epochs) whose difference is not 0: the only ones an exact test's "
        "p depends on (McNemar's discordant pairs; the sign-flip test's nonzero differences).",
    )
    p_attainable: float | None = Field(
        default=None,
        description="The smallest p the exact test can give over these pairs, 2·0.5^differing (every differing "
        "pair differing the same way); at 0.05 or above, no difference can be found here. None for the paired "
        "t-test, whose p has no floor.",
    )
    p_adjusted: float | None = Field(description="Holm-adjusted across axes; None for overall (its own test).")
    separable: bool = Field(
        description="The verdict's test rejects: p_adjusted < 0.05 (overall: p_value) and the difference is not 0."
    )
    intervals_overlap: bool | None = Field(
        description="Whether A's and B's own 95% intervals overlap; None when either run has none. Not a test: two "
        "unadjusted intervals may fail to overlap beside no detectable difference (few pairs, many axes); the "
        "verdict reads the test."
    )
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
    cost_mean_a: float | None = Field(
        description="USD per record; None when a billed record's price is unknown, or when no record was billed "
        "(billed_nothing_a)."
    )
    cost_mean_b: float | None
    cost_mean_diff: float | None
    billed_nothing_a: bool = Field(
        default=False,
        description="A's paired records billed nothing, as the report says it: every one an error or a cache hit, "
        "their known costs summing to 0: its cost is –, neither $0 nor an unknown price.",
    )
    billed_nothing_b: bool = False
    only_a: int = Field(
        default=0,
        description="A's records on this axis with no pair in B, left out of the row: its A figures are over n of "
        "A's n + only_a records on the axis, so when this is not 0 they are not A's own (its report's). Overall: "
        "the whole run's.",
    )
    only_b: int = Field(default=0, description="B's records on this axis with no pair in A, left out (see only_a).")

    def mostly_errors(self, side: Literal["A", "B"]) -> bool:
        """Whether at least half of ``side``'s paired records here are errors, more than the other run's: its
        figure is then mostly errors counted as wrong, and "no detectable difference" says little of its quality."""
        rate, other = (self.error_rate_a, self.error_rate_b) if side == "A" else (self.error_rate_b, self.error_rate_a)
        return rate is not None and rate >= 0.5 and rate > (other or 0.0)


class UnpairedAxis(BaseModel):
    """An axis with records in one run (or in both, none of them paired): it has no row and no verdict."""

    axis: str
    only_a: int = Field(description="A's records on the axis, none with a pair in B.")
    only_b: int = Field(description="B's records on the axis, none with a pair in A.")

    @property
    def left_out(self) -> str:
        """What the axis holds, as printed: '20 records only in A, none in B'."""
        if not self.only_b:
            return f"{self.only_a:,} {records_word(self.only_a)} only in A, none in B"
        if not self.only_a:
            return f"{self.only_b:,} {records_word(self.only_b)} only in B, none in A"
        return f"{self.only_a:,} {records_word(self.only_a)} in A and {self.only_b:,} in B, none of them paired"


def records_word(count: int) -> str:
    """ "record" or "records", as ``count`` takes it."""
    return "record" if count == 1 else "records"


class CompareHeadline(BaseModel):
    """The one-number gap, and what it hides."""

    macro_a: float | None = Field(description="Mean over axes of A's paired per-axis means.")
    macro_b: float | None
    macro_diff: float | None
    micro_a: float | None = Field(description="Mean over all paired records.")
    micro_b: float | None
    micro_diff: float | None
    diff_ci: tuple[float, float] | None
    diff_ci_method: PairedInterval = "none"
    test: PairedTest
    p_value: float = Field(description="Paired test over all records; not part of the Holm family.")
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


__all__ = [
    "ALPHA",
    "COMPARE_SCHEMA_VERSION",
    "CompareAxis",
    "CompareHeadline",
    "CompareRun",
    "Comparison",
    "SettingChange",
    "UnpairedAxis",
    "Verdict",
    "judged_rows",
    "records_word",
]
