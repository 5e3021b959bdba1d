"""``eval-harness plan``: how many samples an axis needs for a confidence interval of a given width."""

from __future__ import annotations

from typing import Annotated

import typer


def plan_command(
    margin: Annotated[float, typer.Option(help="Half-width of the interval, as a fraction: 0.03 = ±3 points.")],
    p: Annotated[float, typer.Option("--p", help="Expected score; 0.5 (the default) is the worst case.")] = 0.5,
    confidence: Annotated[float, typer.Option(help="Confidence level of the interval.")] = 0.95,
) -> None:
    """Samples per axis for an interval (95% by default) at most 2·MARGIN wide around a score near P (Wilson's)."""
    from eval_harness.cli.render import counted, stdout
    from eval_harness.errors import ConfigError
    from eval_harness.stats import wilson_sample_size

    if 0.5 < margin <= 1:  # ±50 points already spans every score from 0 to 1: one sample gives that
        raise ConfigError(f"plan: --margin {margin:g} is wider than the score's range; give at most 0.5 (±50 points)")
    if not 0 < margin <= 1:  # 0, negative, above 1, inf, nan: stats' own range, (0, 1], offers what is refused above
        raise ConfigError(
            f"plan: --margin {margin:g}: give a half-width above 0 and at most 0.5 (e.g. 0.03: ±3 points)"
        )
    try:
        needed = wilson_sample_size(margin, p=p, confidence=confidence)
    except ValueError as exc:
        raise ConfigError(f"plan: {exc}") from None
    stdout.print(
        # "or more": from this size on every size fits, not only this one (whole counts move the width in steps)
        f"{counted(needed, 'sample')} or more per axis give a {_percent(confidence)}% "
        "interval at most "
        f"{200 * margin:g} points wide (±{100 * margin:g}) when the score is near {_percent(p)}% (Wilson's "
        "interval).",
        markup=False,
    )
    if p != 0.5:
        worst = wilson_sample_size(margin, p=0.5, confidence=confidence)
        stdout.print(f"If the score could be anywhere, plan for {worst:,} (the worst case, p = 50%).", markup=False)
    stdout.print("Each axis of a profile needs this many on its own; errors count as samples too.", markup=False)


def _percent(share: float) -> str:
    """``share`` as a percentage with the digits it was given to (0.999999999999 is 99.9999999999, never "100")."""
    return f"{100 * share:.12g}"


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_command)


__all__ = ["plan_command", "register"]
