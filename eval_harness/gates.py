"""Quality gates: ``--fail-below``, ``--fail-below-axis AXIS=X``, ``--gate-on mean|ci-low``, ``--max-error-rate``.

A gate compares one number of a run summary with a threshold and the outcome is data (``GateResult``), so
``run`` and ``report`` evaluate the same gates the same way and each decides how to show them. With
``--gate-on ci-low`` a score gate compares the lower end of the 95% interval instead of the mean: it passes
only when the interval's lower end clears the threshold, that is when the run has shown it is above the bar.
A small or noisy sample therefore fails even when its mean is well above the threshold, and so does a row
with no interval at all (one sample; continuous scores that are all equal). Gates use the headline's error
policy: errors counted as wrong.

A gate judges a whole run: on a run with records missing (interrupted, still running, or records lost) every
gate set fails as well, naming why, since a few percent of the data can clear any bar. A run records its gates
in its manifest (``types.GateSettings``, the one type of a run's gates, from the flags or from the manifest), so
that ``resume``, whose printed command names none, applies them again.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Literal, get_args

from pydantic import BaseModel, Field

from eval_harness.errors import ConfigError, GateFailedError
from eval_harness.types import AxisStats, GateBasis, GateSettings, RunSummary

__all__ = [
    "GateBasis",
    "GateResult",
    "check_basis_used",
    "evaluate_gates",
    "gate_failure",
    "gate_flags",
    "gates_from_flags",
]


def _fraction(text: str, flag: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(f"{flag}: {text!r} is not a number; give a fraction between 0 and 1") from None
    if not 0.0 <= value <= 1.0 or math.isnan(value):
        raise ConfigError(f"{flag}: {text} is outside 0-1; give a fraction, e.g. 0.8 for 80%")
    return value


def gates_from_flags(
    fail_below: float | None = None,
    fail_below_axis: Sequence[str] | None = None,
    gate_on: str = "mean",
    max_error_rate: float | None = None,
) -> GateSettings:
    """The gates the command-line flags ask for; a bad value is a ``ConfigError`` naming its flag (the model's
    own validation would name a field, not the flag the user typed)."""
    if gate_on not in get_args(GateBasis):
        raise ConfigError(f"--gate-on: {gate_on!r} is not one of {', '.join(get_args(GateBasis))}")
    if fail_below is not None:
        _fraction(str(fail_below), "--fail-below")
    if max_error_rate is not None:
        _fraction(str(max_error_rate), "--max-error-rate")
    axes: list[tuple[str, float]] = []
    for item in fail_below_axis or []:
        axis, sep, value = item.rpartition("=")
        if not sep or not axis:
            raise ConfigError(f"--fail-below-axis: {item!r} is not AXIS=X, e.g. arithmetic=0.8")
        axes.append((axis, _fraction(value, f"--fail-below-axis {axis}")))
    return GateSettings(
        fail_below=fail_below,
        fail_below_axis=axes,
        gate_on=gate_on,  # checked against GateBasis above
        max_error_rate=max_error_rate,
    )


def check_basis_used(gates: GateSettings | None) -> None:
    """Refuse ``--gate-on ci-low`` where no score gate is set: it changes what ``--fail-below`` and
    ``--fail-below-axis`` compare, and alone (or beside ``--max-error-rate``) it would gate nothing, silently."""
    if gates is not None and gates.gate_on == "ci-low" and gates.fail_below is None and not gates.fail_below_axis:
        raise ConfigError(
            "--gate-on ci-low: it applies to --fail-below and --fail-below-axis, and neither is set, so it would "
            "change no gate; give one (e.g. --fail-below 0.8)"
        )


class GateResult(BaseModel):
    """One gate's outcome."""

    target: str = Field(description="'overall' or the axis name.")
    measure: Literal["mean", "ci-low", "error-rate", "complete"] = Field(
        description="The number compared; 'complete': the share of the expected records present (every gate of a "
        "run with records missing fails on it)."
    )
    threshold: float = Field(description="The bound from the flag.")
    value: float | None = Field(
        description="The run's number; None when the run has no records there, or no interval (see reason)."
    )
    passed: bool
    reason: str | None = Field(
        default=None, description="Why there is no value, e.g. 'no interval from 1 sample' (the gate then fails)."
    )

    @property
    def text(self) -> str:
        """One line, e.g. 'arithmetic ci-low 61.3% is below 80%', 'error rate 5.0% is above 2%' or
        'overall ci-low: no interval from 1 sample'."""
        if self.measure == "complete":
            return f"run incomplete: {self.reason}"
        if self.value is None and self.reason is not None:
            return f"{self.target} {self.measure}: {self.reason}"
        shown = "–" if self.value is None else _percent_beside(self.value, self.threshold, self.passed, self.measure)
        bound = _percent_as_given(self.threshold)
        if self.measure == "error-rate":
            return f"error rate {shown} {'is within' if self.passed else 'is above'} {bound}%"
        verdict = "meets" if self.passed else "is below"
        return f"{self.target} {self.measure} {shown} {verdict} {bound}%"


def _percent_as_given(fraction: float) -> str:
    """A threshold as a percentage with every digit it was given with: 0.78750001 is '78.750001', 0.8 '80' (``:g``
    keeps six digits, and 78.75 beside a value of 78.75 then read as a contradiction)."""
    return format((Decimal(repr(fraction)) * 100).normalize(), "f")


def _percent_beside(value: float, threshold: float, passed: bool, measure: str) -> str:
    """``value`` as a percentage with one decimal, or as many more as it takes to read on the side of the
    threshold (shown whole) that the gate found it on: 52/60 against 0.867 is '86.67% is below 86.7%', never
    '86.7% is below 86.7%'. In decimal, from each number's shortest form: 100 × 0.7999999999999999 is 80.0 in
    floating point, which no rounding of it shows below 80."""
    exact, bound = Decimal(repr(value)) * 100, Decimal(repr(threshold)) * 100

    def on_its_side(shown: Decimal) -> bool:
        # a score gate passes at the bound or above it, an error-rate gate at the bound or below it
        if measure == "error-rate":
            return shown <= bound if passed else shown > bound
        return shown >= bound if passed else shown < bound

    for decimals in range(1, 20):
        if on_its_side(shown := exact.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_EVEN)):
            return f"{shown}%"
    return f"{exact}%"


def _score(stats: AxisStats, basis: GateBasis) -> tuple[float | None, str | None]:
    """The number the gate compares, or None with the reason there is none."""
    if stats.mean is None:
        return None, "no records"
    if basis == "mean":
        return stats.mean, None
    if stats.ci is not None:
        return stats.ci[0], None
    # mean_ci gives no interval for one unit, or for units (samples, with epochs) that are all equal
    units = stats.samples if stats.samples is not None else stats.n
    return None, "no interval from 1 sample" if units == 1 else f"no interval: all {units:,} values equal"


def _score_gate(target: str, stats: AxisStats, basis: GateBasis, threshold: float) -> GateResult:
    value, reason = _score(stats, basis)
    passed = value is not None and value >= threshold
    return GateResult(target=target, measure=basis, threshold=threshold, value=value, passed=passed, reason=reason)


def _completeness(summary: RunSummary) -> GateResult | None:
    """A failed result when the run has records missing: its gates would judge part of it (None: complete).
    ``summary.status`` is the run's as a reader states it (``artifacts.observed_status``)."""
    if summary.missing <= 0:
        return None
    expected = summary.expected_records
    if summary.status == "running":
        reason = f"still running, {summary.missing:,} of {expected:,} records not written yet; wait for it to end"
    else:
        reason = f"{summary.missing:,} of {expected:,} records missing; resume it first"
    present = summary.records / expected if expected else 0.0
    return GateResult(target="overall", measure="complete", threshold=1.0, value=present, passed=False, reason=reason)


def evaluate_gates(
    summary: RunSummary, spec: GateSettings, dataset_axes: Collection[str] | None = None
) -> list[GateResult]:
    """Every gate of ``spec`` against ``summary``, after a failed ``complete`` result first when records are
    missing. An axis a complete run does not have is a ``ConfigError``; in an incomplete run it may only have
    no records yet, and its gate fails saying so, unless ``dataset_axes`` (the manifest's) lacks it too."""
    if not spec.active:
        return []
    incomplete = _completeness(summary)
    results: list[GateResult] = [] if incomplete is None else [incomplete]
    if spec.fail_below is not None:
        results.append(_score_gate("overall", summary.overall, spec.gate_on, spec.fail_below))
    by_name = {a.axis: a for a in summary.axes}
    for axis, threshold in spec.fail_below_axis:
        stats = by_name.get(axis)
        if stats is None and dataset_axes is not None and axis not in dataset_axes:
            known = ", ".join(sorted(dataset_axes)) or "none"
            raise ConfigError(f"--fail-below-axis: the run's dataset has no axis {axis!r} (its axes: {known})")
        if stats is None and incomplete is not None:
            results.append(
                GateResult(
                    target=axis, measure=spec.gate_on, threshold=threshold, value=None, passed=False,
                    reason="no records yet",
                )
            )  # fmt: skip
            continue
        if stats is None:
            known = ", ".join(sorted(by_name)) or "none yet"
            raise ConfigError(f"--fail-below-axis: the run has no axis {axis!r} (its axes: {known})")
        results.append(_score_gate(axis, stats, spec.gate_on, threshold))
    if spec.max_error_rate is not None:
        rate = summary.overall.error_rate
        results.append(
            GateResult(
                target="overall",
                measure="error-rate",
                threshold=spec.max_error_rate,
                value=rate,
                passed=rate <= spec.max_error_rate,
            )
        )
    return results


def gate_failure(results: Sequence[GateResult]) -> GateFailedError | None:
    """The error to raise (exit 1) when any gate failed, naming every failed gate; None when all passed."""
    failed = [r.text for r in results if not r.passed]
    if not failed:
        return None
    return GateFailedError(f"gate failed: {'; '.join(failed)}")


def gate_flags(settings: GateSettings | None) -> list[str]:
    """Each recorded gate as the flag that sets it: ['--fail-below 0.95', '--fail-below-axis alpha=0.8', ...];
    ``--gate-on`` only when it is not the default (the mean)."""
    if settings is None:
        return []
    flags = [] if settings.fail_below is None else [f"--fail-below {settings.fail_below:.15g}"]
    flags += [f"--fail-below-axis {axis}={threshold:.15g}" for axis, threshold in settings.fail_below_axis]
    flags += [] if settings.gate_on == "mean" else [f"--gate-on {settings.gate_on}"]
    flags += [] if settings.max_error_rate is None else [f"--max-error-rate {settings.max_error_rate:.15g}"]
    return flags
