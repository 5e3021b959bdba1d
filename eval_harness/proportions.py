"""Binomial proportions without numpy: the Wilson interval every run's summary needs.

Kept apart from ``stats`` (which imports numpy) so that the summary of a run with 0/1 scores, the common
case, costs no numpy import: about a fifth of a second, and on a busy event loop far more (see
``tally``).
"""

from __future__ import annotations

import math
from statistics import NormalDist


def check_confidence(confidence: float) -> None:
    # `not (0 < x < 1)` also rejects NaN, which a plain range comparison would let through.
    if not (0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence!r}")


def check_counts(successes: int, n: int) -> None:
    if n < 0:
        raise ValueError(f"n must be non-negative, got n={n}")
    if not (0 <= successes <= n):
        raise ValueError(f"successes must be in [0, n]; got successes={successes}, n={n}")


def z_value(confidence: float) -> float:
    # The standard library's NormalDist.inv_cdf (Wichura's AS241, ~1e-16 accurate) instead of
    # scipy.stats.norm.ppf: importing scipy.stats costs >1 s, and every run's summary needs z.
    upper = 0.5 + confidence / 2.0
    if not 0.5 <= upper < 1.0:  # a confidence within 1e-16 of 1 rounds to the 1.0 quantile: z is infinite
        raise ValueError(f"confidence must be strictly between 0 and 1 (and not within 1e-16 of 1), got {confidence!r}")
    return NormalDist().inv_cdf(upper)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval (no continuity correction) for a binomial proportion.

    Returns ``(low, high)``. ``n == 0`` gives ``(0.0, 1.0)``. Raises ``ValueError`` if ``successes`` is
    outside ``[0, n]`` or ``confidence`` is outside (0, 1). This is the recommended default for
    accuracy-style metrics: it keeps good coverage near 0 and 1 where the Wald interval collapses.
    """
    check_confidence(confidence)
    check_counts(successes, n)
    if n == 0:
        return 0.0, 1.0
    # Closed form rather than scipy's binomtest: same values (checked against statsmodels in the tests)
    # without the >1 s scipy.stats import that every run summary would otherwise pay.
    z = z_value(confidence)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1.0 + z * z / n)
    half = wilson_half_width(p, n, z)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def wilson_half_width(p: float, n: int, z: float) -> float:
    """Half the width of the Wilson interval around a proportion ``p`` (a count's, or a fractional one when
    planning) of ``n`` items at the normal quantile ``z``."""
    return z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1.0 + z * z / n)


def signed_points(value: float | None, digits: int = 1, *, bound: bool = False) -> str:
    """A difference of two proportions in percentage points with its sign: -0.26 → '−26.0'; one that rounds to
    zero is '0.0' ('−0.0' read as a loss), unless it is an interval's ``bound``, whose sign says on which side
    of 0 the interval ends."""
    if value is None or math.isnan(value):
        return "–"
    text = f"{100 * abs(value):.{digits}f}"
    if not bound and float(text) == 0:
        return text
    return f"+{text}" if value > 0 else (f"−{text}" if value < 0 else text)


__all__ = ["check_confidence", "check_counts", "signed_points", "wilson_half_width", "wilson_interval", "z_value"]
