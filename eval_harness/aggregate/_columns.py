"""The columns: the per-row columns and their ranges, a run's columns (``RunColumns``) and those of a chunk
being read (``_Chunk``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from eval_harness.aggregate._arrays import F64, I64, U64, Bool

# The per-row columns shared by RunColumns and a chunk being read: dtype, and the value of a row that has
# not been read (NaN: unknown; -1: no error type).
_ROW_COLUMNS: Final[dict[str, tuple[Any, Any]]] = {
    "axis": (np.int32, 0),
    "epoch": (np.int64, 0),
    "score": (np.float64, np.nan),
    "error": (np.bool_, False),
    "error_type": (np.int32, -1),
    "passed": (np.bool_, False),
    "latency_ms": (np.float64, np.nan),
    "cost_usd": (np.float64, np.nan),
    "prompt_tokens": (np.int64, 0),
    "completion_tokens": (np.int64, 0),
    "judge_used": (np.bool_, False),
    "judge_prompt_tokens": (np.int64, 0),
    "judge_completion_tokens": (np.int64, 0),
    "judge_cost_usd": (np.float64, np.nan),
    "cached": (np.bool_, False),
    "backoff_s": (np.float64, 0.0),
    "offset": (np.int64, 0),
    "line": (np.int64, 0),
}


# The ranges of the values read (``Score.value`` is in [0, 1], and so are each of ``scores`` and the final score,
# their weighted mean; the other numbers count or measure): the orjson path refuses a value outside naming its
# field (``_number``, ``_count``, and ``record_problem`` for the epoch), the fast path leaves its line to that
# path, and a columns cache that holds one is not used. NaN (null: unknown) is in range.
_NON_NEGATIVE_COLUMNS: Final = frozenset(
    (
        "epoch",
        "latency_ms",
        "cost_usd",
        "prompt_tokens",
        "completion_tokens",
        "judge_prompt_tokens",
        "judge_completion_tokens",
        "judge_cost_usd",
        "backoff_s",
    )
)


def _out_of_range(columns: Mapping[str, NDArray[Any]], scores: Iterable[F64]) -> Bool:
    """Which rows hold a value outside its field's range: ``columns`` maps ``score`` and any other column names
    to their values (those without a range are ignored), ``scores`` are per-scorer values; all of one length."""
    score = columns["score"]
    bad: Bool = (score < 0) | (score > 1)
    for name, values in columns.items():
        if name in _NON_NEGATIVE_COLUMNS:
            bad |= values < 0
    for values in scores:
        bad |= (values < 0) | (values > 1)
    return bad


@dataclass
class _Rows:
    """The per-row columns (``_ROW_COLUMNS``), shared by a run's columns and by a chunk being read."""

    axis: NDArray[np.int32]
    """Index into the axis names."""
    epoch: I64
    score: F64
    """Final score; NaN when the record has none (an error)."""
    error: Bool
    """True when the record holds an error or has no final score: counted as wrong (score 0)."""
    error_type: NDArray[np.int32]
    """Index into the error type names; -1 when the record holds no error."""
    passed: Bool
    latency_ms: F64
    """NaN when unknown."""
    cost_usd: F64
    """NaN when unknown (no price)."""
    prompt_tokens: I64
    completion_tokens: I64
    judge_used: Bool
    """True when a model-based scorer spent tokens on the record."""
    judge_prompt_tokens: I64
    judge_completion_tokens: I64
    judge_cost_usd: F64
    cached: Bool
    backoff_s: F64
    offset: I64
    """Byte offset of the record's line, to read the whole record back (``read_records_at``)."""
    line: I64
    """1-based line number of the record."""


@dataclass
class RunColumns(_Rows):
    """A run's records as numpy columns, one row per ``(sample_id, epoch)`` (the latest record), in file order."""

    axes: list[str]
    """Axis names; ``axis`` holds indices into this list."""
    error_types: list[str]
    """Error type names; ``error_type`` holds indices into this list."""
    scorers: dict[str, F64]
    """Per-scorer values; NaN where the scorer has no value for the record."""
    sample_hash: U64
    """``(n, 2)`` 128-bit identity of the sample id."""
    key_hash: U64
    """``(n, 2)`` 128-bit identity of ``(sample_id, epoch)``."""
    retries: dict[str, int] = field(default_factory=dict)
    """Retries by cause, summed over the rows."""
    lines_read: int = 0
    fast_lines: int = 0
    """Lines read by the numpy fast path (the others went through orjson)."""
    torn_bytes: int = 0

    @property
    def n(self) -> int:
        """Number of rows (distinct keys)."""
        return int(self.score.size)

    @property
    def final(self) -> F64:
        """Final scores with errors counted as 0 (the default policy)."""
        return np.where(self.error, 0.0, np.nan_to_num(self.score, nan=0.0))

    def take(self, rows: NDArray[np.intp] | Bool) -> RunColumns:
        """A subset of the rows (an index array or a mask), every column alike."""
        return replace(
            self,
            scorers={name: values[rows] for name, values in self.scorers.items()},
            sample_hash=self.sample_hash[rows],
            key_hash=self.key_hash[rows],
            **{name: getattr(self, name)[rows] for name in _ROW_COLUMNS},
        )


@dataclass
class _Chunk(_Rows):
    """The columns of one chunk's lines, before deduplication; names are still per-chunk strings."""

    size: int
    axis_name: list[str]
    error_type_name: list[str]
    scorers: dict[str, F64]
    sample_hash: U64
    retries: dict[int, dict[str, int]]
    fast: int = 0

    @classmethod
    def empty(cls, size: int) -> _Chunk:
        columns: dict[str, Any] = {
            name: np.full(size, fill, dtype=dtype) for name, (dtype, fill) in _ROW_COLUMNS.items()
        }
        return cls(
            size=size,
            axis_name=[],
            error_type_name=[],
            scorers={},
            sample_hash=np.zeros((size, 2), dtype=np.uint64),
            retries={},
            **columns,
        )

    def scorer(self, name: str) -> F64:
        column = self.scorers.get(name)
        if column is None:
            column = self.scorers[name] = np.full(self.size, np.nan)
        return column


def _code(names: list[str], index: dict[str, int], name: str) -> int:
    code = index.get(name)
    if code is None:
        code = index[name] = len(names)
        names.append(name)
    return code
