"""The columns cache (.columns.npz beside samples.jsonl): a session reads only the records appended since
the last one.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import orjson

from eval_harness.aggregate._columns import (
    _NAMED_COLUMNS,
    _NON_NEGATIVE_COLUMNS,
    _ROW_COLUMNS,
    RunColumns,
    _join_lists,
    _lists_problem,
    _out_of_range,
    _run_wide_codes,
    check_run_values,
)
from eval_harness.aggregate._load import _CHUNK_BYTES, SMALL_BLOCK_BYTES, load_columns, scorer_keys
from eval_harness.artifacts import COLUMNS_CACHE, tail_digest
from eval_harness.durable import atomic_file
from eval_harness.types import RunManifest

# 3: the values are held to their fields' ranges (``_out_of_range``); a cache of version 2 may hold a value out
# of range that its build read without a word, so it is read again (and refused) rather than used.
# 4: the records' finish reasons and tags; a cache of version 3 has neither, so it is read again.
_CACHE_VERSION: Final[int] = 4
# The cache names the bytes it covers by their length and a digest of their last few KB (tail_digest):
# samples.jsonl is append-only, so a file that still ends that way at that length is the one it was made from.
# That alone misses a hand edit of earlier bytes that keeps the length (a score changed from 0.0 to 1.0), so
# the cache also keeps the file's size and mtime when it was written: a file no longer than it was then but
# with another mtime was rewritten in place, and is read whole. A longer file had records appended (the
# next session's incremental read) and its mtime moved with them: only length and digest are checked then,
# so a resume reads the cache before its session appends (runner._check_records), while an edit between
# sessions still shows in the mtime. Not noticed: an edit that keeps size and mtime (touch -r, cp -p, or within
# the file system's timestamp granularity of the cache's write), or one made while a session appends.
# Delete .columns.npz after editing samples.jsonl by hand.


def save_columns_cache(samples_path: Path, columns: RunColumns, scorer_keys: Sequence[str]) -> None:
    """Write the columns of every complete line of ``samples_path`` beside it, atomically."""
    stat = samples_path.stat() if samples_path.exists() else None
    covered = stat.st_size - columns.torn_bytes if stat is not None else 0
    meta = {
        "version": _CACHE_VERSION,
        "covered_bytes": covered,
        "samples_size": stat.st_size if stat is not None else 0,
        "samples_mtime_ns": stat.st_mtime_ns if stat is not None else 0,
        "covered_digest": tail_digest(samples_path, covered) if covered else "",
        "scorer_keys": list(scorer_keys),
        "axes": columns.axes,
        "error_types": columns.error_types,
        "finish_reasons": columns.finish_reasons,
        "tag_names": columns.tag_names,
        "scorers": list(columns.scorers),
        "retries": columns.retries,
        "lines_read": columns.lines_read,
        "fast_lines": columns.fast_lines,
    }
    arrays: dict[str, Any] = {name: getattr(columns, name) for name in _ROW_COLUMNS}
    arrays.update(
        sample_hash=columns.sample_hash,
        key_hash=columns.key_hash,
        tag_offsets=columns.tag_offsets,
        tag_ids=columns.tag_ids,
    )
    arrays.update({f"scorer_{i}": values for i, values in enumerate(columns.scorers.values())})
    arrays["meta"] = np.frombuffer(orjson.dumps(meta), dtype=np.uint8)
    # A lost rename only means a slower next read (the cache names the bytes it covers): no directory fsync.
    # For the same reason a disk that refuses the cache (full, read-only) fails nothing: the old one, if any,
    # stays whole and is checked against the bytes it covers before use.
    with contextlib.suppress(OSError), atomic_file(samples_path.with_name(COLUMNS_CACHE), sync_directory=False) as out:
        np.savez(out, **arrays)


def _read_columns_cache(samples_path: Path, scorer_keys: Sequence[str]) -> tuple[RunColumns, int] | None:
    """The cached columns and the bytes they cover, or None when the cache is missing, stale or foreign."""
    target = samples_path.with_name(COLUMNS_CACHE)
    if not target.is_file() or not samples_path.is_file():
        return None
    try:
        # opened here, not by np.load: given a path, it leaves the file open when the zip cannot be read
        with target.open("rb") as handle, np.load(handle, allow_pickle=False) as data:
            meta = orjson.loads(data["meta"].tobytes())
            covered = int(meta["covered_bytes"])
            stat = samples_path.stat()
            if (
                meta.get("version") != _CACHE_VERSION
                or meta["scorer_keys"] != list(scorer_keys)
                or covered > stat.st_size
                or (stat.st_size <= meta["samples_size"] and stat.st_mtime_ns != meta["samples_mtime_ns"])
                or (covered and meta["covered_digest"] != tail_digest(samples_path, covered))
            ):
                return None
            rows = {name: data[name] for name in _ROW_COLUMNS}
            columns = RunColumns(
                axes=list(meta["axes"]),
                error_types=list(meta["error_types"]),
                finish_reasons=list(meta["finish_reasons"]),
                scorers={name: data[f"scorer_{i}"] for i, name in enumerate(meta["scorers"])},
                sample_hash=data["sample_hash"],
                key_hash=data["key_hash"],
                tag_names=list(meta["tag_names"]),
                tag_offsets=data["tag_offsets"],
                tag_ids=data["tag_ids"],
                retries=dict(meta["retries"]),
                lines_read=int(meta["lines_read"]),
                fast_lines=int(meta["fast_lines"]),
                **rows,
            )
        if _cached_out_of_range(columns):
            return None  # the full read refuses the line, naming the file, the line and the field
        if _lists_problem(columns.tag_offsets, columns.tag_ids, columns.n, len(columns.tag_names)):
            return None
    # Any exception: a cut-short zip raises EOFError or BadZipFile, a member of another shape AttributeError,
    # TypeError or IndexError, and no list of them is complete. A damaged cache is only a slower read, never an
    # error (it is not the run's data; the full read that replaces it checks every line).
    except Exception:
        return None
    return columns, covered


def _cached_out_of_range(columns: RunColumns) -> bool:
    """Whether cached columns hold a value out of its field's range, which no read of the lines accepts (a cache
    this build did not write): a few milliseconds for a million rows, against a report of a value nothing checked."""
    ranged = {name: getattr(columns, name) for name in ("score", *_NON_NEGATIVE_COLUMNS)}
    return bool(_out_of_range(ranged, columns.scorers.values()).any()) or any(
        not isinstance(count, int) or count < 0 for count in columns.retries.values()
    )


def load_columns_cached(
    samples_path: Path,
    scorer_keys: Sequence[str] = (),
    *,
    workers: int = 1,
    light: bool = False,
    block_bytes: int = _CHUNK_BYTES,
) -> RunColumns:
    """``load_columns`` that reads only the lines appended since the cache was written, when it is valid.

    Every session of the runner leaves the cache, so a report on a million-record run reads a few MB of
    numpy instead of a GB of JSON. When an appended line repeats a key of the cached part
    (``--retry-errors``), the whole file is read again: the cache keeps no per-row retries, so the
    superseded row could not be taken out exactly. ``workers`` and ``light`` apply to a full read.
    """
    cached = _read_columns_cache(samples_path, scorer_keys)
    if cached is None:
        return load_columns(samples_path, scorer_keys, workers=workers, light=light, block_bytes=block_bytes)
    base, covered = cached
    tail = load_columns(samples_path, scorer_keys, start=covered, block_bytes=block_bytes)
    if tail.lines_read == 0:
        return replace(base, torn_bytes=tail.torn_bytes)
    if tail.n != tail.lines_read or np.isin(tail.key_hash[:, 0], base.key_hash[:, 0]).any():
        return load_columns(samples_path, scorer_keys, workers=workers, light=light, block_bytes=block_bytes)
    return _concat_columns(base, tail)


def _concat_columns(first: RunColumns, second: RunColumns) -> RunColumns:
    """``second``'s rows after ``first``'s, with its name codes and line numbers made run-wide."""
    tables: dict[str, list[str]] = {}
    remapped: dict[str, Any] = {"line": second.line + first.lines_read}
    for column, (table, _) in _NAMED_COLUMNS.items():
        tables[column] = list(getattr(first, table))
        index = {name: i for i, name in enumerate(tables[column])}
        remapped[column] = _run_wide_codes(tables[column], index, getattr(second, table))[getattr(second, column)]
    tag_names = list(first.tag_names)
    tag_index = {name: i for i, name in enumerate(tag_names)}
    second_ids = _run_wide_codes(tag_names, tag_index, second.tag_names)[second.tag_ids]
    tag_offsets, tag_ids = _join_lists([(first.tag_offsets, first.tag_ids), (second.tag_offsets, second_ids)])
    rows = {
        name: np.concatenate((getattr(first, name), remapped.get(name, getattr(second, name)))) for name in _ROW_COLUMNS
    }
    scorers = {
        name: np.concatenate(
            (first.scorers.get(name, np.full(first.n, np.nan)), second.scorers.get(name, np.full(second.n, np.nan)))
        )
        for name in dict.fromkeys([*first.scorers, *second.scorers])
    }
    retries = Counter(first.retries)
    retries.update(second.retries)
    return RunColumns(
        axes=tables["axis"],
        error_types=tables["error_type"],
        finish_reasons=tables["finish_reason"],
        scorers=scorers,
        sample_hash=np.concatenate((first.sample_hash, second.sample_hash)),
        key_hash=np.concatenate((first.key_hash, second.key_hash)),
        tag_names=tag_names,
        tag_offsets=tag_offsets,
        tag_ids=tag_ids,
        retries=dict(retries),
        lines_read=first.lines_read + second.lines_read,
        fast_lines=first.fast_lines + second.fast_lines,
        torn_bytes=second.torn_bytes,
        **rows,
    )


def load_run_columns(
    samples_path: Path,
    manifest: RunManifest,
    *,
    workers: int = 1,
    light: bool = False,
    block_bytes: int = _CHUNK_BYTES,
) -> RunColumns:
    """The records of the run ``manifest`` describes, as every reader takes them: through the columns cache
    (``load_columns_cached``, with the scorer keys the manifest names), a record holding a value no session of
    that run writes refused (``check_run_values``: an epoch past its epochs, the axis ``overall``)."""
    columns = load_columns_cached(
        samples_path, scorer_keys(manifest), workers=workers, light=light, block_bytes=block_bytes
    )
    check_run_values(columns, samples_path, manifest.epochs)
    return columns


def refresh_run_columns(samples_path: Path, manifest: RunManifest) -> RunColumns:
    """``load_run_columns`` with the columns cache brought up to date, so the next read takes only what is appended
    after it: for the run's writer, which holds the run's lock (a session's start and its summary)."""
    columns = load_run_columns(samples_path, manifest, block_bytes=SMALL_BLOCK_BYTES)
    save_columns_cache(samples_path, columns, scorer_keys(manifest))
    return columns


__all__ = ["COLUMNS_CACHE", "load_columns_cached", "load_run_columns", "refresh_run_columns", "save_columns_cache"]
