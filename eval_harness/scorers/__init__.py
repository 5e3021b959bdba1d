"""Scorers: one family per file, each registered by name; the public functions users import."""

from eval_harness.scorers.base import (
    SCORERS,
    Scorer,
    ScoringPipeline,
    ScoringResult,
    build_scorer,
    combine,
    register_scorer,
)
from eval_harness.scorers.exact import exact_match

__all__ = [
    "SCORERS",
    "Scorer",
    "ScoringPipeline",
    "ScoringResult",
    "build_scorer",
    "combine",
    "exact_match",
    "register_scorer",
]
