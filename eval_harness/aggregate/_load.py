"""Loading: samples.jsonl read in blocks of complete lines (in worker processes for a large file), each line
by the fast path or else the slow one, into deduplicated ``RunColumns``; and whole records read back by
byte offset.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np
import orjson
from numpy.typing import NDArray

from eval_harness.aggregate._arrays import U64
from eval_harness.aggregate._buffer import _Buffer
from eval_harness.aggregate._columns import (
    _NAMED_COLUMNS,
    _ROW_COLUMNS,
    RunColumns,
    _Chunk,
    _join_lists,
    _run_wide_codes,
)
from eval_harness.aggregate._fast import _fast_rows
from eval_harness.aggregate._hashing import _hash_strings, _key_hash
from eval_harness.aggregate._slow import _BadField, _slow_row, _SlowNames
from eval_harness.artifacts import line_number_at, open_run_file, record_error, regular_status
from eval_harness.errors import ArtifactError
from eval_harness.types import RunManifest

_CHUNK_BYTES: Final[int] = 1 << 24
# The runner's end-of-session summary reads in small blocks: the parse's temporaries then stay ~10 MB
# whatever the file's size, so a run's peak memory does not grow with its records (bench/overhead.py),
# at no cost in speed; report and compare, one-shot readers of files up to GBs, use the larger blocks.
SMALL_BLOCK_BYTES: Final[int] = 1 << 20
# Zero bytes after each chunk, so that checking a key at the very end never indexes past the buffer.
_PAD: Final[int] = 64


class _DamagedLine(Exception):
    """A complete line that is not a record; carries its byte offset (worker processes do not know line numbers)
    and the problem as ``record_problem`` gives it (None: not JSON)."""

    def __init__(self, offset: int, problem: tuple[str, str] | None) -> None:
        super().__init__(offset, problem)
        self.offset = offset
        self.problem = problem


def _parse_chunk(b: _Buffer, base_offset: int, keys: Sequence[str], fast: bool, light: bool) -> _Chunk:
    chunk = _Chunk.empty(b.ends.size)
    chunk.offset[:] = base_offset + b.starts
    ok = _fast_rows(b, chunk, keys, light) if fast else np.zeros(b.ends.size, dtype=np.bool_)
    slow = np.flatnonzero(~ok)
    chunk.fast = chunk.size - slow.size
    if slow.size == 0:
        return chunk
    names = _SlowNames.of(chunk)
    ids: list[str] = []
    for row in slow.tolist():
        try:
            record = orjson.loads(b.text(int(b.starts[row]), int(b.ends[row])))
            _slow_row(record, chunk, row, names, ids, light)
        except orjson.JSONDecodeError:
            raise _DamagedLine(base_offset + int(b.starts[row]), None) from None
        except _BadField as exc:
            raise _DamagedLine(base_offset + int(b.starts[row]), exc.problem) from None
    chunk.sample_hash[slow] = _hash_strings(ids)
    if names.tag_rows:
        chunk.tag_entries.append((np.array(names.tag_rows, dtype=np.int64), np.array(names.tag_codes, dtype=np.int32)))
    return chunk


class _Blocks:
    """Bytes ``start:stop`` of the file as buffers of complete lines, with the byte offset of each; ``torn``
    is the length of an incomplete last line, once iteration has finished.

    Reads straight into one reusable numpy buffer (no copy of the data); the incomplete line at the end
    of a block moves to the front for the next block. A line longer than the buffer doubles it.
    """

    def __init__(self, path: Path, start: int = 0, stop: int | None = None, capacity: int = _CHUNK_BYTES) -> None:
        self.path = path
        self.start = start
        self.stop = stop
        self.capacity = capacity
        self.torn = 0

    def __iter__(self) -> Iterator[tuple[_Buffer, int]]:
        capacity = self.capacity
        buf = np.zeros(capacity + 2 * _PAD, dtype=np.uint8)
        filled = 0
        offset = self.start
        with self.path.open("rb") as handle:
            handle.seek(self.start)
            left = math.inf if self.stop is None else self.stop - self.start
            while True:
                room = int(min(capacity - filled, left))
                read = (handle.readinto(buf.data[filled : filled + room]) or 0) if room > 0 else 0
                left -= read
                total = filled + read
                if not read:
                    self.torn = total
                    return
                tail = max(0, total - (1 << 20))
                newlines = np.flatnonzero(buf[tail:total] == 10)
                if not newlines.size:
                    tail = 0
                    newlines = np.flatnonzero(buf[:total] == 10)
                cut = tail + int(newlines[-1]) + 1 if newlines.size else 0
                if cut == 0:
                    if total == capacity:
                        capacity *= 2
                        grown = np.zeros(capacity + 2 * _PAD, dtype=np.uint8)
                        grown[:total] = buf[:total]
                        buf = grown
                    filled = total
                    continue
                # The sentinel comma points into padding that reads never touch: no key ever matches there.
                yield _Buffer(buf, cut, sentinel=capacity + _PAD), offset
                offset += cut
                filled = total - cut
                buf[:filled] = buf[cut:total].copy()


_EMPTY: Final = np.zeros(0)
_EMPTY_HASHES: Final = np.zeros((0, 2), dtype=np.uint64)


def _concat(parts: list[Any], dtype: Any, shape: tuple[int, ...] = ()) -> Any:
    return np.concatenate(parts) if parts else np.zeros((0, *shape), dtype=dtype)


def _load_range(
    path: Path, start: int, stop: int | None, keys: Sequence[str], fast: bool, light: bool, block_bytes: int
) -> tuple[list[_Chunk], int]:
    """The chunks of bytes ``start:stop`` and the length of a torn tail (run in a worker process)."""
    blocks = _Blocks(path, start, stop, block_bytes)
    chunks = [_parse_chunk(block, offset, keys, fast, light) for block, offset in blocks]
    return chunks, blocks.torn


def _ranges(path: Path, size: int, parts: int, base: int = 0) -> list[tuple[int, int | None]]:
    """``parts`` byte ranges of about equal size within the ``size`` bytes after ``base`` (offsets relative
    to ``base``), each starting at the beginning of a line."""
    cuts = [0]
    with path.open("rb") as handle:
        for i in range(1, parts):
            handle.seek(base + max(cuts[-1], size * i // parts))
            handle.readline()
            position = handle.tell() - base
            if position < size:
                cuts.append(position)
    return [(start, stop) for start, stop in zip(cuts, [*cuts[1:], None], strict=True)]


def default_workers(samples_path: Path) -> int:
    """Processes worth using to read a samples file: one per CPU (at most 4) above 64 MB, else one."""
    import os

    if not samples_path.exists() or samples_path.stat().st_size < (64 << 20):
        return 1
    return max(1, min(4, len(os.sched_getaffinity(0))))


def load_columns(
    samples_path: Path,
    scorer_keys: Sequence[str] = (),
    *,
    fast: bool = True,
    workers: int = 1,
    light: bool = False,
    start: int = 0,
    block_bytes: int = _CHUNK_BYTES,
) -> RunColumns:
    """Stream samples.jsonl into columns, keeping the latest record of every ``(sample_id, epoch)``.

    ``scorer_keys`` are the task's scorer keys in order (``scorer_keys(manifest)``); they let the fast
    path read the per-scorer values. ``fast=False`` parses every line with orjson (for tests: both
    paths must give the same columns). ``workers`` processes read equal byte ranges of the file in
    parallel; they are forked, so the caller must not have threads running (see :func:`default_workers`).
    ``light`` reads only what a comparison needs (identity, axis, epoch, score, error and its type,
    passed, latency, cost) in about half the time; the other columns are then zero (counts, backoff), NaN
    (judge cost) or empty (scorers, retries) for every row. It refuses what a full read refuses, but for
    the values of the fields it leaves out (usage, judge_usage, judge_cost_usd, cached, backoff_s, scores,
    retries), which neither path looks at then. A missing file reads as no records, and one that is not a
    regular file is refused; a torn last line (no newline) is dropped; a complete line that is not a record
    raises ``ArtifactError`` naming file, line and field. ``start`` (the beginning of a line) reads only the bytes
    from there; line numbers then count from it. ``block_bytes`` is the size of the blocks read (the parse's
    temporaries scale with it).
    """
    keys = [] if light else list(scorer_keys)  # a light read fills no scorer columns
    # a pipe or a device (a link to /dev/zero) has size 0 and would read as no records at all: refused by name
    status = regular_status(samples_path)
    size = status.st_size if status is not None else 0
    ranges = (
        [(start + a, None if b is None else start + b) for a, b in _ranges(samples_path, size - start, workers, start)]
        if size > start
        else []
    )
    try:
        if len(ranges) > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # fork: a fresh interpreter would pay the imports again. Only ``compare`` asks for workers, from
            # the single-threaded CLI; the runner (which has threads, unsafe to fork) never does.
            with ProcessPoolExecutor(len(ranges), mp_context=multiprocessing.get_context("fork")) as pool:
                read = (keys, fast, light, block_bytes)
                futures = [pool.submit(_load_range, samples_path, a, b, *read) for a, b in ranges]
                parts = [future.result() for future in futures]
        else:
            parts = [_load_range(samples_path, a, b, keys, fast, light, block_bytes) for a, b in ranges]
    except _DamagedLine as exc:
        raise record_error(samples_path, line_number_at(samples_path, exc.offset), exc.problem) from None
    chunks = [chunk for part, _ in parts for chunk in part]
    torn = parts[-1][1] if parts else 0
    del parts  # the chunks alone now hold the data, freed as soon as they are concatenated
    tables: dict[str, list[str]] = {column: [] for column in _NAMED_COLUMNS}
    indexes: dict[str, dict[str, int]] = {column: {} for column in _NAMED_COLUMNS}
    tag_names: list[str] = []
    tag_index: dict[str, int] = {}
    tag_lists = []
    lines = 0
    for chunk in chunks:
        chunk.line = lines + 1 + np.arange(chunk.size, dtype=np.int64)
        lines += chunk.size
        # Per-chunk name codes become run-wide codes.
        for column, (_, chunk_names) in _NAMED_COLUMNS.items():
            lut = _run_wide_codes(tables[column], indexes[column], getattr(chunk, chunk_names))
            setattr(chunk, column, lut[getattr(chunk, column)])
        offsets, codes = chunk.tag_lists()
        tag_lists.append((offsets, _run_wide_codes(tag_names, tag_index, chunk.tag_name)[codes]))
        chunk.tag_entries = []
    names = list(dict.fromkeys([*keys, *(name for c in chunks for name in c.scorers)]))
    scorers = {}
    for name in names:
        joined = [c.scorers.pop(name) if name in c.scorers else np.full(c.size, np.nan) for c in chunks]
        scorers[name] = _concat(joined, np.float64)
        del joined
    retries_by_row: dict[int, dict[str, int]] = {}
    base = 0
    for c in chunks:
        retries_by_row.update({base + row: value for row, value in c.retries.items()})
        base += c.size
    # Column by column, each chunk's part dropped once joined: the peak holds one column twice, not all.
    rows = {}
    for name, (dtype, _) in _ROW_COLUMNS.items():
        rows[name] = _concat([getattr(c, name) for c in chunks], dtype)
        for c in chunks:
            setattr(c, name, _EMPTY)
    sample_hash = _concat([c.sample_hash for c in chunks], np.uint64, (2,))
    for c in chunks:
        c.sample_hash = _EMPTY_HASHES
    tag_offsets, tag_ids = _join_lists(tag_lists)
    del tag_lists
    columns = RunColumns(
        axes=tables["axis"],
        error_types=tables["error_type"],
        finish_reasons=tables["finish_reason"],
        scorers=scorers,
        tag_names=tag_names,
        tag_offsets=tag_offsets,
        tag_ids=tag_ids,
        sample_hash=sample_hash,
        key_hash=_key_hash(sample_hash, rows["epoch"]),
        lines_read=lines,
        fast_lines=sum(c.fast for c in chunks),
        torn_bytes=torn,
        **rows,
    )
    del chunks
    keep = _latest_rows(columns.key_hash)
    if keep is not None:
        retries_by_row = {row: retries_by_row[row] for row in keep.tolist() if row in retries_by_row}
        columns = columns.take(keep)
    totals: Counter[str] = Counter()
    for value in retries_by_row.values():
        totals.update(value)
    columns.retries = dict(totals)
    return columns


def _latest_rows(key_hash: U64) -> NDArray[np.intp] | None:
    """Rows to keep so that each key appears once, at its last occurrence; None when keys never repeat."""
    first = key_hash[:, 0]
    if first.size < 2:
        return None
    order = np.argsort(first, kind="stable")
    sorted_first = first[order]
    repeated = sorted_first[1:] == sorted_first[:-1]
    if not repeated.any():
        return None
    # Rare (only --retry-errors writes a key twice): settle the candidates with both hashes in Python.
    candidates = np.unique(np.concatenate((order[1:][repeated], order[:-1][repeated])))
    last: dict[tuple[int, int], int] = {}
    for row in sorted(candidates.tolist()):
        last[(int(key_hash[row, 0]), int(key_hash[row, 1]))] = row
    drop = np.setdiff1d(candidates, np.fromiter(last.values(), dtype=np.intp))
    if drop.size == 0:
        return None
    mask = np.ones(first.size, dtype=np.bool_)
    mask[drop] = False
    return np.flatnonzero(mask)


def read_records_at(samples_path: Path, offsets: Sequence[int]) -> list[dict[str, Any]]:
    """The whole records at these byte offsets (from ``RunColumns.offset``), in the order given."""
    return list(iter_records_at(samples_path, offsets))


def iter_records_at(samples_path: Path, offsets: Sequence[int]) -> Iterator[dict[str, Any]]:
    """``read_records_at`` one record at a time, for a caller that keeps little of each (a run of 200,000
    errors held whole took 800 MB)."""
    if not offsets:  # nothing to read: a run with no samples.jsonl yet (killed before its first record) is empty
        return
    with open_run_file(samples_path) as handle:
        for offset in offsets:
            handle.seek(int(offset))
            line = handle.readline()
            try:
                yield orjson.loads(line)
            except orjson.JSONDecodeError:
                raise ArtifactError(f"{samples_path}: byte {offset}: {_unreadable(line)}") from None


def _unreadable(line: bytes) -> str:
    """Why a record read back at its offset is none: bytes that are not UTF-8 (a hand edit: every record written is
    UTF-8, and the columns read only its numbers), else the file changed under the reader."""
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return (
            f"the record there holds a byte that is not UTF-8 (0x{line[exc.start]:02x}, byte {exc.start} of the "
            "line): samples.jsonl was edited; no record eval-harness writes holds one"
        )
    return "not a sample record; the file changed"


def scorer_keys(manifest: RunManifest) -> list[str]:
    """The keys under which the run's scorers store their values, in the task's order."""
    return [spec.key for spec in manifest.task.scorers]


__all__ = ["SMALL_BLOCK_BYTES", "default_workers", "iter_records_at", "load_columns", "read_records_at", "scorer_keys"]
