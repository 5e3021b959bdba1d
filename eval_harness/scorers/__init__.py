"""Scorers: one family per file, each registered by name; the public functions users import.

``exact_match``, ``choice_letter``, ``token_f1`` and ``rouge`` are the stable Python API. Model-based and
heavier families (judge, embeddings, reliability) are imported from their modules when needed, so that
importing this package stays cheap.
"""

from eval_harness.scorers.base import (
    SCORERS,
    FunctionScorer,
    Scorer,
    ScoringPipeline,
    ScoringResult,
    SkipScore,
    build_scorer,
    combine,
    register_scorer,
)
from eval_harness.scorers.choice import choice_letter
from eval_harness.scorers.exact import exact_match
from eval_harness.scorers.rouge import rouge
from eval_harness.scorers.squad import token_f1

__all__ = [
    "SCORERS",
    "FunctionScorer",
    "Scorer",
    "ScoringPipeline",
    "ScoringResult",
    "SkipScore",
    "build_scorer",
    "choice_letter",
    "combine",
    "exact_match",
    "register_scorer",
    "rouge",
    "token_f1",
]
