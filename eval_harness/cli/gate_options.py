"""The gate options, declared once for every command that gates (``run``, ``resume``, ``report``).

Every gate also fails on a run with records missing (interrupted, still running), and ``run`` records its gates
so that ``resume`` applies them again unless they are given anew."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

FailBelow = Annotated[
    float | None,
    typer.Option(help="Exit 1 when the overall mean is below X (0-1), or when the run has records missing."),
]
FailBelowAxis = Annotated[
    list[str] | None,
    typer.Option("--fail-below-axis", metavar="AXIS=X", help="AXIS=X: exit 1 when that axis is below X (repeatable)."),
]
GateOn = Annotated[
    Literal["mean", "ci-low"],
    typer.Option(
        help="What the gates compare: the mean, or the 95% interval's low end (strict: it must clear X, so a "
        "small or noisy sample fails)."
    ),
]
ResumedGateOn = Annotated[
    Literal["mean", "ci-low"],
    typer.Option(
        "--gate-on",
        show_default=False,
        help="What the gates compare: the mean, or the 95% interval's low end (default: as the run recorded it).",
    ),
]
MaxErrorRate = Annotated[
    float | None,
    typer.Option(help="Exit 1 when the error rate is above X (0-1), or when the run has records missing."),
]


__all__ = ["FailBelow", "FailBelowAxis", "GateOn", "MaxErrorRate", "ResumedGateOn"]
