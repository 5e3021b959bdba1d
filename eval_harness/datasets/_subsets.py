"""Subsets of samples: a deterministic random sample (``sample``) and a split stratified by axis (``split``).

Both rank samples by a hash of (seed, id), so the choice does not depend on the order of the file.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable, Sequence

from eval_harness.types import Sample


def _rank(seed: int, sample_id: str) -> bytes:
    return hashlib.sha256(f"{seed}\x1f{sample_id}".encode()).digest()


def sample(samples: Iterable[Sample], n: int, seed: int) -> list[Sample]:
    """A deterministic random subset of ``n`` samples, in their original order.

    Each sample's rank is a hash of (seed, id), so the choice does not depend on file order and a
    superset file gives a superset sample for the same seed. A negative ``n`` is a ``ValueError``.
    """
    if n < 0:  # heapq would give no samples, read as "the subset is empty"
        raise ValueError(f"a sample size must be 0 or more, got {n}")
    ranked = heapq.nsmallest(n, ((_rank(seed, s.id), index, s) for index, s in enumerate(samples)))
    return [s for _, _, s in sorted(ranked, key=lambda item: item[1])]


def split(
    samples: Iterable[Sample], fractions: Sequence[float] | dict[str, float], seed: int
) -> dict[str, list[Sample]]:
    """Stratified split by axis: within each axis, samples ranked by hash(seed, id) are cut by fraction.

    ``fractions`` may be a list (parts named "0", "1", ...) or a mapping name → fraction; they must sum to
    1. Counts use largest-remainder rounding per axis, so every part gets its share of every axis.
    """
    named = fractions if isinstance(fractions, dict) else {str(i): f for i, f in enumerate(fractions)}
    if abs(sum(named.values()) - 1.0) > 1e-9 or any(f < 0 for f in named.values()):
        raise ValueError("split fractions must be non-negative and sum to 1")
    by_axis: dict[str, list[Sample]] = {}
    for s in samples:
        by_axis.setdefault(s.axis, []).append(s)
    parts: dict[str, list[Sample]] = {name: [] for name in named}
    for axis_samples in by_axis.values():
        ordered = sorted(axis_samples, key=lambda s: _rank(seed, s.id))
        quotas = {name: f * len(ordered) for name, f in named.items()}
        counts = {name: int(q) for name, q in quotas.items()}
        leftover = len(ordered) - sum(counts.values())
        for name in sorted(quotas, key=lambda k: counts[k] - quotas[k])[:leftover]:
            counts[name] += 1
        start = 0
        for name in named:
            parts[name].extend(ordered[start : start + counts[name]])
            start += counts[name]
    return parts


__all__ = ["sample", "split"]
