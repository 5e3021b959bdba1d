"""The prose notes of a comparison: what a reader needs to read its rows right (what was left out of them,
what their units are, where an interval and its verdict disagree, where no difference could be found, where a
verdict rests on errors). Each is a function of the pairs and the rows, and returns its notes, often none."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

import numpy as np
from numpy.typing import NDArray

from eval_harness.compare._paired import _exact_test_name, _Pairs, _Run, _Side
from eval_harness.compare._schema import ALPHA, CompareAxis, UnpairedAxis, judged_rows, records_word
from eval_harness.proportions import signed_points
from eval_harness.types import PairedInterval, PairedTest


def _moved_notes(pairs: _Pairs) -> list[str]:
    """Paired records whose axis in B is not their axis in A: they are counted under A's."""
    run_a, run_b = pairs.run_a, pairs.run_b
    # B's axis codes in A's numbering (-1: an axis A does not have), to count records that moved axis.
    lut = np.array([run_a.axes.index(x) if x in run_a.axes else -1 for x in run_b.axes] or [-1])
    moved = int(np.count_nonzero(lut[run_b.axis[pairs.ib]] != pairs.axis)) if pairs.ib.size else 0
    return [f"{moved:,} paired records have another axis in B; they are counted under A's axis"] if moved else []


def _unit_notes(sample: NDArray[np.intp] | None) -> list[str]:
    """With several epochs, the units of the tests and intervals are the samples, not the records."""
    if sample is None:
        return []
    return [
        f"several epochs: each sample is one unit of the paired tests and intervals (the mean of its paired "
        f"epochs), since the epochs of one sample are not independent: {int(sample.max()) + 1:,} samples "
        f"in {sample.size:,} paired records"
    ]


def _left_out_notes(pairs: _Pairs, unpaired: Sequence[UnpairedAxis], moved_b: Collection[str]) -> list[str]:
    """What the paired statistics leave out: the records with no pair, the axes with no pair (``unpaired``), and
    the records of B's axes whose paired records are counted under A's axes (``moved_b``) that have no pair."""
    notes = []
    if pairs.only_a or pairs.only_b:
        notes.append(
            f"{pairs.only_a:,} {records_word(pairs.only_a)} only in A and {pairs.only_b:,} only in B are left out of "
            "the paired statistics"
        )
    notes += [f"{axis.axis}: {axis.left_out}: not compared" for axis in unpaired]
    notes += [
        f"{name}: B's paired records on this axis are counted under A's axes; its other {pairs.unpaired_b[name]:,} "
        "have no pair in A and are left out"
        for name in sorted(moved_b)
        if pairs.unpaired_b.get(name)
    ]
    return notes


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


def _test_name(test: PairedTest) -> str:
    """``test`` as a note names it."""
    match test:
        case "mcnemar":
            return "exact McNemar"
        case "sign-flip":
            return "sign-flip"
        case "paired-t":
            return "paired t"
        case "none":
            return "none"


def _interval_name(interval: PairedInterval) -> str:
    """``interval`` as a note names it."""
    match interval:
        case "newcombe":
            return "Newcombe's score interval"
        case "t":
            return "the Student-t interval"
        case "none":
            return "none"


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
            what = "one pair" if units == 1 else f"all {units:,} differences equal ({signed_points(axis.diff)} points)"
            notes.append(f"{axis.axis}: {what}: no spread to estimate an interval from; the {axis.test} test is exact")
            continue
        if axis.diff_ci is None:
            continue
        excludes = axis.diff_ci[0] > 0 or axis.diff_ci[1] < 0
        if excludes == axis.separable:
            continue
        holm_decides = axis is not overall and (axis.p_value < ALPHA) == excludes
        interval = _interval_name(axis.diff_ci_method)
        shown = "excludes 0" if excludes else "includes 0"
        found = "finds no detectable difference" if not axis.separable else "finds a difference"
        if holm_decides:
            notes.append(
                f"{axis.axis}: the 95% interval of the difference {shown}, but the Holm-adjusted p "
                f"{found} once the {len(axes)} axes are counted; the adjusted test decides"
            )
        else:
            exact = "exact " if axis.test != "paired-t" else ""
            notes.append(
                f"{axis.axis}: the 95% interval of the difference ({interval}) {shown}, but the "
                f"{_test_name(axis.test)} test {found}: two procedures that can disagree near the "
                f"edge; the {exact}test decides"
            )
    return notes


def _unattainable_notes(axes: Sequence[CompareAxis], overall: CompareAxis) -> list[str]:
    """Rows whose pairs are too few for any difference to reach p < 5%: there "no detectable difference" (and a
    regression gate that passes) means the comparison cannot tell, not that the runs are alike. Rows alike in
    their units and test share one note."""
    needed = math.ceil(math.log2(2 / ALPHA))  # the fewest differing pairs whose 2·0.5^n is below ALPHA: 6 at 5%
    groups: dict[tuple[int, int, bool, PairedTest, float, bool], list[str]] = {}
    for axis in judged_rows(axes, overall):
        # none differing: the difference is 0, with an interval that says how large one may be; nothing to note
        if axis.p_attainable is not None and axis.p_attainable >= ALPHA and axis.differing:
            adjusted = axis is not overall and len(axes) > 1
            key = (axis.samples, axis.differing, axis.samples != axis.n, axis.test, axis.p_attainable, adjusted)
            groups.setdefault(key, []).append(axis.axis)
    notes = []
    for (units, differing, by_sample, test, p_min, adjusted), names in groups.items():
        what = ("sample" if units == 1 else "samples") if by_sample else ("pair" if units == 1 else "pairs")
        each = " each" if len(names) > 1 else ""
        unit_note = " (the units, with epochs)" if by_sample else ""
        # the exact tests read only the units that differ: 60 pairs of which 4 differ are 4 as far as p goes
        differ = "" if differing == units else f", {differing:,} of them differing"
        holm = " (Holm's adjustment can only raise it)" if adjusted else ""
        takes = f"{needed} at least" if differing == units else f"{needed} differing at least"
        notes.append(
            f"{', '.join(names)}: {units:,} {what}{each}{unit_note}{differ}: the smallest p the exact "
            f"{_exact_test_name(test)} test can give is {p_min:.3g}{holm}, not below {100 * ALPHA:g}% (that takes "
            f"{takes}), so no difference can be found there: 'no detectable difference' means the "
            "comparison cannot tell"
        )
    return notes


def _overlap_notes(axes: Sequence[CompareAxis], overall: CompareAxis) -> list[str]:
    """Rows whose two intervals do not overlap beside "no detectable difference": a reader takes intervals apart
    for a difference, but each is one run's own and unadjusted, and their overlap is not a test (at few pairs an
    exact test cannot reach 5% where two intervals already part; Holm asks more of each axis of many)."""
    names = [
        axis.axis
        for axis in judged_rows(axes, overall)
        if axis.intervals_overlap is False
        and axis.verdict == "no_difference"
    ]  # fmt: skip
    if not names:
        return []
    return [
        f"{', '.join(names)}: the two runs' 95% intervals do not overlap, but the paired test finds no detectable "
        "difference: each interval is one run's own and unadjusted, and their overlap is not a test; the test "
        "decides"
    ]


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


def _error_share_notes(rows: Sequence[CompareAxis]) -> list[str]:
    """A row with no detectable difference where one run's records are mostly errors (``CompareAxis.mostly_errors``):
    the verdict says little of that run's quality there (two subjects of B over the server's context, every record
    an error, compared 0.0 with A's 0.0 and passed the regression gate unremarked)."""
    notes = []
    for axis in rows:
        if axis.verdict != "no_difference":
            continue
        for name in ("A", "B"):
            if axis.mostly_errors(name):
                rate = axis.error_rate_a if name == "A" else axis.error_rate_b
                errors = round((rate or 0.0) * axis.n)
                share = (
                    f"every one of {name}'s records is an error"
                    if errors == axis.n
                    else f"{errors:,} of {axis.n:,} of {name}'s records are errors"
                )
                notes.append(
                    f"{axis.axis}: {share} (counted as wrong), so no detectable difference says little of {name}'s "
                    f"quality there: check {name}'s errors (inspect --errors)"
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
            are = "is" if gone == 1 else "are"
            left = f"{gone:,} of the {axis.samples:,} samples {are} {every}, so the test rests on the other {rest:,}"
        else:
            left = f"all {gone:,} samples are {every}: no sample is left to tell the runs apart"
        notes.append(f"{axis.axis}: {errors} paired records are errors in both runs (a difference of 0 each); {left}")
    return notes


__all__ = []
