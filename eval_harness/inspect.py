"""Look inside a run: its worst samples with their outputs and scorer explanations, and its errors by type.

Reads only the run's artifacts (manifest.json and samples.jsonl), never the dataset: the input and the
target shown are the ones recorded with each sample. Finding the worst samples streams the file once
through the columnar reader; only the few records shown (and the ids of samples tied with them) are
read back whole.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from numpy.typing import NDArray
from pydantic import BaseModel, Field

from eval_harness.aggregate import load_columns_cached, read_records_at, scorer_keys
from eval_harness.artifacts import RunPaths, read_manifest
from eval_harness.errors import ConfigError

__all__ = ["ErrorGroup", "InspectedSample", "Inspection", "inspect_run"]

INPUT_CHARS = 300
"""Inputs longer than this are shortened (middle elided) in the listing."""

_HEAD_ID = re.compile(rb'\{"sample_id":"((?:[^"\\]|\\.)*)"')


class InspectedSample(BaseModel):
    """One record as shown by ``inspect``."""

    sample_id: str
    epoch: int
    axis: str
    value: float = Field(description="What the listing is ranked by: the final score or one scorer's value.")
    score: float | None
    passed: bool | None
    input: str = Field(description=f"The recorded input, shortened to about {INPUT_CHARS} characters.")
    target: str | list[str]
    output: str | None
    scores: dict[str, float]
    explanations: dict[str, str]
    answers: dict[str, str]
    latency_ms: float | None
    cost_usd: float | None


class ErrorGroup(BaseModel):
    """The error records of one type, with one example."""

    type: str
    count: int
    stage: str
    example_sample_id: str
    example_epoch: int
    example_axis: str
    example_message: str


class Inspection(BaseModel):
    """``eval-harness inspect --format json``."""

    run_id: str
    model: str
    task: str
    status: str
    records: int
    expected_records: int
    ranked_by: str = Field(description="'score' (the final score) or a scorer's name.")
    axis: str | None = Field(description="The axis the listing was limited to.")
    failures_only: bool
    candidates: int = Field(description="Records eligible for the listing (scored, in the axis, failed if asked).")
    worst: list[InspectedSample] | None = Field(description="Lowest first, ties broken by sample id and epoch.")
    errors: list[ErrorGroup] | None = Field(description="Most frequent first.")


def shorten(text: str, limit: int = INPUT_CHARS) -> str:
    """``text`` with its middle replaced by ' … ' when longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    keep = (limit - 3) // 2
    return f"{text[:keep]} … {text[-keep:]}"


def _input_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(f"[{m.get('role', '?')}] {m.get('content', '')}" for m in value if isinstance(m, dict))
    return str(value)


def _sample_ids(path: Path, offsets: list[int]) -> list[str]:
    """The sample id of the record at each offset, reading only the head of each line."""
    ids: list[str] = []
    with path.open("rb") as handle:
        for offset in offsets:
            handle.seek(offset)
            head = handle.read(512)
            match = _HEAD_ID.match(head)
            if match is not None:
                raw = match.group(1)
                ids.append(orjson.loads(b'"' + raw + b'"') if b"\\" in raw else raw.decode())
            else:
                handle.seek(offset)
                ids.append(str(orjson.loads(handle.readline())["sample_id"]))
    return ids


def _worst_rows(
    path: Path,
    values: NDArray[np.float64],
    eligible: NDArray[np.bool_],
    offsets: NDArray[np.int64],
    epochs: NDArray[np.int64],
    n: int,
) -> list[int]:
    """The ``n`` eligible rows with the lowest value, ties broken by sample id then epoch."""
    rows = np.flatnonzero(eligible)
    if rows.size == 0 or n <= 0:
        return []
    candidate_values = values[rows]
    if rows.size > n:
        cutoff = np.partition(candidate_values, n - 1)[n - 1]
        rows = rows[candidate_values <= cutoff]  # everything tied with the n-th lowest competes on id
    order = np.argsort(offsets[rows], kind="stable")  # read the ids in file order: sequential IO
    rows = rows[order]
    ids = _sample_ids(path, offsets[rows].tolist())
    ranked = sorted(range(rows.size), key=lambda i: (float(values[rows[i]]), ids[i], int(epochs[rows[i]])))
    return [int(rows[i]) for i in ranked[:n]]


def inspect_run(
    run_dir: Path,
    *,
    n: int = 5,
    axis: str | None = None,
    scorer: str | None = None,
    failures_only: bool = False,
    show_worst: bool = True,
    show_errors: bool = True,
) -> Inspection:
    """The worst ``n`` samples of a run (by final score, or by ``scorer``'s value) and its errors by type.

    ``axis`` limits the listing to one axis; ``failures_only`` to samples that did not pass. Records with
    an error have no score and appear under the errors instead. Raises ``ConfigError`` for an axis or
    scorer the run does not have.
    """
    if n < 1:
        raise ConfigError(f"--n: {n} must be at least 1")
    manifest = read_manifest(run_dir)
    path = RunPaths(run_dir).samples
    columns = load_columns_cached(path, scorer_keys(manifest))
    eligible = np.ones(columns.n, dtype=np.bool_)
    if axis is not None:
        if axis not in columns.axes:
            known = ", ".join(sorted(columns.axes)) or "none yet"
            raise ConfigError(f"--axis: the run has no axis {axis!r} (its axes: {known})")
        eligible &= columns.axis == columns.axes.index(axis)
    if scorer is not None:
        if scorer not in columns.scorers:
            raise ConfigError(f"--scorer: the run has no scorer {scorer!r} (its scorers: {', '.join(columns.scorers)})")
        values = columns.scorers[scorer]
    else:
        values = columns.score
    eligible &= ~columns.error & ~np.isnan(values)
    if failures_only:
        eligible &= ~columns.passed
    worst: list[InspectedSample] | None = None
    if show_worst:
        rows = _worst_rows(path, values, eligible, columns.offset, columns.epoch, n)
        records = read_records_at(path, columns.offset[rows].tolist())
        worst = [_sample(record, float(values[row])) for record, row in zip(records, rows, strict=True)]
    errors = _errors(path, columns.error_type, columns.offset, columns.error_types) if show_errors else None
    return Inspection(
        run_id=manifest.run_id,
        model=manifest.model.id,
        task=manifest.task.name,
        status=manifest.status,
        records=columns.n,
        expected_records=manifest.expected_records,
        ranked_by=scorer or "score",
        axis=axis,
        failures_only=failures_only,
        candidates=int(np.count_nonzero(eligible)),
        worst=worst,
        errors=errors,
    )


def _sample(record: dict[str, Any], value: float) -> InspectedSample:
    return InspectedSample(
        sample_id=str(record["sample_id"]),
        epoch=int(record["epoch"]),
        axis=str(record.get("axis", "default")),
        value=value,
        score=record.get("score"),
        passed=record.get("passed"),
        input=shorten(_input_text(record.get("input", ""))),
        target=record.get("target", ""),
        output=record.get("output"),
        scores=record.get("scores") or {},
        explanations=record.get("explanations") or {},
        answers=record.get("answers") or {},
        latency_ms=record.get("latency_ms"),
        cost_usd=record.get("cost_usd"),
    )


def _errors(
    path: Path, error_type: NDArray[np.int32], offsets: NDArray[np.int64], types: list[str]
) -> list[ErrorGroup]:
    rows = np.flatnonzero(error_type >= 0)
    if rows.size == 0:
        return []
    counts = np.bincount(error_type[rows], minlength=len(types))
    # The first record of each type (in file order) is its example.
    backwards = zip(rows[::-1].tolist(), error_type[rows][::-1].tolist(), strict=True)
    first = {int(code): int(row) for row, code in backwards}
    codes = sorted(first, key=lambda code: (-int(counts[code]), types[code]))
    examples = read_records_at(path, [int(offsets[first[code]]) for code in codes])
    groups = []
    for code, record in zip(codes, examples, strict=True):
        error = record.get("error") or {}
        groups.append(
            ErrorGroup(
                type=types[code],
                count=int(counts[code]),
                stage=str(error.get("stage", "generate")),
                example_sample_id=str(record["sample_id"]),
                example_epoch=int(record["epoch"]),
                example_axis=str(record.get("axis", "default")),
                example_message=str(error.get("message", "")),
            )
        )
    return groups
