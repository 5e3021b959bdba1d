"""The columns: the per-row columns and their ranges, a run's columns (``RunColumns``) and those of a chunk
being read (``_Chunk``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from eval_harness.aggregate._arrays import F64, I64, U64, Bool
from eval_harness.artifacts import record_error
from eval_harness.types import RESERVED_AXIS, RESERVED_AXIS_MESSAGE, beyond_epochs

# The per-row columns shared by RunColumns and a chunk being read: dtype, and the value of a row that has
# not been read (NaN: unknown; -1: no error type, no finish reason).
_ROW_COLUMNS: Final[dict[str, tuple[Any, Any]]] = {
    "axis": (np.int32, 0),
    "epoch": (np.int64, 0),
    "score": (np.float64, np.nan),
    "error": (np.bool_, False),
    "error_type": (np.int32, -1),
    "finish_reason": (np.int32, -1),
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
    finish_reason: NDArray[np.int32]
    """Index into the finish reason names; -1 when the record has none (no answer, or none reported)."""
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

    def billed(self) -> Bool:
        """Which rows were billed calls, as ``tally.was_billed`` says of a record: no error, or an answer came (its
        latency is known; a light read keeps latencies, not token counts)."""
        return ~self.error | ~np.isnan(self.latency_ms)


# The row columns that hold a code into a table of names: the table's attribute in RunColumns and in a chunk being
# read (whose codes are per chunk until the run's tables are joined).
_NAMED_COLUMNS: Final[dict[str, tuple[str, str]]] = {
    "axis": ("axes", "axis_name"),
    "error_type": ("error_types", "error_type_name"),
    "finish_reason": ("finish_reasons", "finish_reason_name"),
}

_NO_IDS: Final = np.zeros(0, dtype=np.int32)


@dataclass
class RunColumns(_Rows):
    """A run's records as numpy columns, one row per ``(sample_id, epoch)`` (the latest record), in file order.

    A record's tags, a list of any length, are held as one list per row in compressed sparse rows: row ``i``'s
    tags are ``tag_names[tag_ids[tag_offsets[i]:tag_offsets[i + 1]]]``, in the record's order."""

    axes: list[str]
    """Axis names; ``axis`` holds indices into this list."""
    error_types: list[str]
    """Error type names; ``error_type`` holds indices into this list."""
    finish_reasons: list[str]
    """Finish reasons as the providers reported them; ``finish_reason`` holds indices into this list."""
    scorers: dict[str, F64]
    """Per-scorer values; NaN where the scorer has no value for the record."""
    sample_hash: U64
    """``(n, 2)`` 128-bit identity of the sample id."""
    key_hash: U64
    """``(n, 2)`` 128-bit identity of ``(sample_id, epoch)``."""
    tag_names: list[str]
    """Tag names; ``tag_ids`` holds indices into this list."""
    tag_offsets: I64
    """``(n + 1,)``: row ``i``'s tags are ``tag_ids[tag_offsets[i]:tag_offsets[i + 1]]``."""
    tag_ids: NDArray[np.int32]
    """Every row's tags one after another, as indices into ``tag_names``."""
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
        tag_offsets, tag_ids = _take_lists(self.tag_offsets, self.tag_ids, rows)
        return replace(
            self,
            scorers={name: values[rows] for name, values in self.scorers.items()},
            sample_hash=self.sample_hash[rows],
            key_hash=self.key_hash[rows],
            tag_offsets=tag_offsets,
            tag_ids=tag_ids,
            **{name: getattr(self, name)[rows] for name in _ROW_COLUMNS},
        )

    def tag_rows(self) -> I64:
        """The row of each entry of ``tag_ids``."""
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.tag_offsets))

    def with_tag(self, name: str) -> Bool:
        """Which rows carry the tag ``name`` (none when no row does)."""
        rows = np.zeros(self.n, dtype=np.bool_)
        if name in self.tag_names:
            rows[self.tag_rows()[self.tag_ids == self.tag_names.index(name)]] = True
        return rows


def check_run_values(columns: RunColumns, samples_path: Path, epochs: int) -> None:
    """Refuse a record whose values no session of its run writes, naming the file, its line and the field, as a
    value out of its field's range is: an epoch at or past the manifest's ``epochs`` (a key no resume looks for,
    whose record would count beyond the run's), or the axis ``overall`` (the report's row for the whole run, which
    no dataset may name). They need the manifest, which the columns are read without; checked on the columns
    however they were read (either path, or the cache), a comparison of one column: a millisecond a million rows.
    The axis part is for a columns cache written before the readers refused the name (they send such a line to the
    full check, which refuses it), the epoch part for every read: only the manifest knows the run's epochs."""
    beyond = columns.epoch >= epochs
    bad = beyond
    if RESERVED_AXIS in columns.axes:  # a name of the table may be only a superseded record's
        bad = beyond | (columns.axis == columns.axes.index(RESERVED_AXIS))
    if not bad.any():
        return
    rows = np.flatnonzero(bad)
    row = int(rows[np.argmin(columns.line[rows])])
    if beyond[row]:
        problem = ("epoch", beyond_epochs(int(columns.epoch[row]), epochs))
    else:
        problem = ("axis", RESERVED_AXIS_MESSAGE)
    raise record_error(samples_path, int(columns.line[row]), problem)


def _take_lists(offsets: I64, ids: NDArray[np.int32], rows: NDArray[np.intp] | Bool) -> tuple[I64, NDArray[np.int32]]:
    """The lists of ``rows`` (an index array or a mask) of compressed sparse rows ``offsets``, ``ids``, in the
    order of ``rows``."""
    if not ids.size:  # most runs carry no tags: their rows' lists are all empty, whichever rows
        size = int(np.count_nonzero(rows)) if rows.dtype == np.bool_ else int(rows.size)
        return np.zeros(size + 1, dtype=np.int64), _NO_IDS
    counts = np.diff(offsets)[rows]
    taken = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=taken[1:])
    # each entry: its row's start in ``ids``, plus its place within the row's list
    index = np.repeat(offsets[:-1][rows] - taken[:-1], counts) + np.arange(int(taken[-1]), dtype=np.int64)
    return taken, ids[index]


def _join_lists(parts: Sequence[tuple[I64, NDArray[np.int32]]]) -> tuple[I64, NDArray[np.int32]]:
    """Compressed sparse rows, one part's rows after another's."""
    if not any(part_ids.size for _, part_ids in parts):  # no tags: zeros the system gives untouched, no memory
        return np.zeros(sum(part_offsets.size - 1 for part_offsets, _ in parts) + 1, dtype=np.int64), _NO_IDS
    offsets, base = [np.zeros(1, dtype=np.int64)], 0
    for part_offsets, part_ids in parts:
        offsets.append(part_offsets[1:] + base)
        base += part_ids.size
    ids = [part_ids for _, part_ids in parts if part_ids.size]
    return np.concatenate(offsets), np.concatenate(ids) if ids else _NO_IDS


def _lists_problem(offsets: I64, ids: NDArray[np.int32], rows: int, names: int) -> bool:
    """Whether compressed sparse rows are not ``rows`` lists of indices into ``names`` names (a damaged cache)."""
    return bool(
        offsets.shape != (rows + 1,)
        or offsets[0] != 0
        or offsets[-1] != ids.size
        or np.any(np.diff(offsets) < 0)
        or (ids.size and (int(ids.min()) < 0 or int(ids.max()) >= names))
    )


@dataclass
class _Chunk(_Rows):
    """The columns of one chunk's lines, before deduplication; names are still per-chunk strings."""

    size: int
    axis_name: list[str]
    error_type_name: list[str]
    finish_reason_name: list[str]
    tag_name: list[str]
    scorers: dict[str, F64]
    sample_hash: U64
    retries: dict[int, dict[str, int]]
    tag_entries: list[tuple[I64, NDArray[np.int32]]] = field(default_factory=list)
    """Tags as (rows, codes into ``tag_name``) pairs, a row's in its record's order; a row's tags are in one pair."""
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
            finish_reason_name=[],
            tag_name=[],
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

    def tag_lists(self) -> tuple[I64, NDArray[np.int32]]:
        """The rows' tags as compressed sparse rows (``RunColumns.tag_offsets`` and ``tag_ids``)."""
        offsets = np.zeros(self.size + 1, dtype=np.int64)
        entries = [(rows, codes) for rows, codes in self.tag_entries if rows.size]
        if not entries:
            return offsets, _NO_IDS
        rows = np.concatenate([rows for rows, _ in entries])
        codes = np.concatenate([codes for _, codes in entries]).astype(np.int32, copy=False)
        if np.any(rows[1:] < rows[:-1]):  # the slow path's rows come after the fast path's
            codes = codes[np.argsort(rows, kind="stable")]  # stable: keeps each row's tags in their order
        np.cumsum(np.bincount(rows, minlength=self.size), out=offsets[1:])
        return offsets, codes


def _code(names: list[str], index: dict[str, int], name: str) -> int:
    code = index.get(name)
    if code is None:
        code = index[name] = len(names)
        names.append(name)
    return code


def _run_wide_codes(names: list[str], index: dict[str, int], part_names: Sequence[str]) -> NDArray[np.int32]:
    """For a part's codes into ``part_names``: the codes into the run's ``names`` (extended as needed), the code
    -1 (none) staying -1: index the result with the part's codes."""
    return np.array([_code(names, index, name) for name in part_names] + [-1], dtype=np.int32)


__all__ = ["RunColumns", "check_run_values"]
