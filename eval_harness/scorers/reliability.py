"""How far to trust a run's judge: position-swap flips, self-consistency agreement, and disagreement with
a cheap deterministic scorer on the same samples — computed from the records alone, after the run.

Records are the dicts of ``samples.jsonl``. A judge's details are read from ``record["score_metadata"]
[key]`` (what ``ScoringResult.metadata`` holds for the record), its value from ``record["scores"][key]``.
Samples where a staged judge was skipped have no judge value and take no part: disagreement with the
deterministic scorer is then measured only where that scorer was not decisive.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, Field

from eval_harness.stats import cohen_kappa

JUDGE_KINDS = ("rubric", "pairwise")


class JudgeReliability(BaseModel):
    """Reliability figures of one judge scorer over one run."""

    judge: str = Field(description="The judge's scorer key in the records.")
    kind: str = Field(description="rubric or pairwise.")
    records: int = Field(description="Records with a verdict from this judge.")
    threshold: float = Field(description="A value at or above this counts as a pass when verdicts are compared.")
    swapped: int = Field(default=0, description="Records judged in both orders (pairwise).")
    flips: int = Field(default=0, description="Records whose verdict changed when the two responses swapped places.")
    flip_rate: float | None = Field(default=None, description="flips / swapped.")
    bias_first: int = Field(default=0, description="Flips where the judge favoured whichever response came first.")
    bias_second: int = Field(default=0, description="Flips where the judge favoured whichever response came second.")
    multi_sample: int = Field(default=0, description="Records judged with two or more self-consistency samples.")
    agreement: float | None = Field(
        default=None, description="Mean share of a record's samples that agree with its majority pass/fail."
    )
    unanimous_rate: float | None = Field(default=None, description="Share of records whose samples all agree.")
    mean_spread: float | None = Field(default=None, description="Mean of max - min over a record's samples.")
    reference: str | None = Field(default=None, description="The deterministic scorer compared with the judge.")
    compared: int = Field(default=0, description="Records with both a judge and a reference value.")
    disagreements: int = Field(default=0, description="Records where one passes and the other fails.")
    disagreement_rate: float | None = Field(default=None, description="disagreements / compared.")
    kappa: float | None = Field(default=None, description="Cohen's kappa of the two pass/fail labels.")


def _judge_keys(records: list[Mapping[str, Any]]) -> dict[str, str]:
    keys: dict[str, str] = {}
    for record in records:
        for key, metadata in (record.get("score_metadata") or {}).items():
            if isinstance(metadata, Mapping) and metadata.get("judge") in JUDGE_KINDS:
                keys.setdefault(key, str(metadata["judge"]))
    return keys


def _default_reference(records: list[Mapping[str, Any]], judges: Mapping[str, str]) -> str | None:
    for record in records:
        for key in record.get("scores") or {}:
            if key not in judges and "." not in key:
                return str(key)
    return None


def judge_reliability(
    records: Iterable[Mapping[str, Any]], *, reference: str | None = None, threshold: float = 0.5
) -> list[JudgeReliability]:
    """One ``JudgeReliability`` per judge scorer found in ``records``, in order of first appearance.

    ``reference`` names the deterministic scorer to compare with (default: the first scorer key that is
    neither a judge nor a breakdown part); ``threshold`` turns values into pass/fail for the comparison
    and for self-consistency agreement.
    """
    rows = [r for r in records if r.get("error") is None]
    judges = _judge_keys(rows)
    other = reference or _default_reference(rows, judges)
    results = []
    for key, kind in judges.items():
        judged = [r for r in rows if key in (r.get("scores") or {})]
        metadata = [(r.get("score_metadata") or {}).get(key) or {} for r in judged]
        report = JudgeReliability(judge=key, kind=kind, records=len(judged), threshold=threshold)
        _swaps(report, metadata)
        _consistency(report, metadata, threshold)
        if other is not None and other != key:
            _agreement(report, judged, key, other, threshold)
        results.append(report)
    return results


def _swaps(report: JudgeReliability, metadata: list[Mapping[str, Any]]) -> None:
    swapped = [m for m in metadata if "flip" in m]
    report.swapped = len(swapped)
    report.flips = sum(bool(m["flip"]) for m in swapped)
    report.bias_first = sum(m.get("position_bias") == "first" for m in swapped)
    report.bias_second = sum(m.get("position_bias") == "second" for m in swapped)
    report.flip_rate = report.flips / report.swapped if report.swapped else None


def _consistency(report: JudgeReliability, metadata: list[Mapping[str, Any]], threshold: float) -> None:
    shares, unanimous, spreads = [], 0, []
    for m in metadata:
        samples = m.get("samples")
        if not isinstance(samples, list) or len(samples) < 2:
            continue
        passes = sum(float(v) >= threshold for v in samples)
        majority = max(passes, len(samples) - passes)
        shares.append(majority / len(samples))
        unanimous += majority == len(samples)
        spreads.append(max(samples) - min(samples))
    report.multi_sample = len(shares)
    if shares:
        report.agreement = statistics.fmean(shares)
        report.unanimous_rate = unanimous / len(shares)
        report.mean_spread = statistics.fmean(spreads)


def _agreement(
    report: JudgeReliability, judged: list[Mapping[str, Any]], key: str, other: str, threshold: float
) -> None:
    pairs = [(r["scores"][key] >= threshold, r["scores"][other] >= threshold) for r in judged if other in r["scores"]]
    report.reference = other
    report.compared = len(pairs)
    report.disagreements = sum(a != b for a, b in pairs)
    if pairs:
        report.disagreement_rate = report.disagreements / len(pairs)
        report.kappa = cohen_kappa([a for a, _ in pairs], [b for _, b in pairs])


__all__ = ["JUDGE_KINDS", "JudgeReliability", "judge_reliability"]
