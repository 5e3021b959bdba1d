"""Read a run's samples.jsonl into numpy columns and aggregate them (summary.json, reports, comparisons).

Reading is the expensive part of every report: a million records are about 900 MB of JSON, and parsing
each line with ``orjson`` takes 7-15 s on a small machine; this reader takes 4-7 s (``bench/report.py``).
:func:`load_columns` reads the file in 16 MB chunks and finds the few fields it needs with numpy: the
newline and comma positions of the chunk are located once, and every field is then reached from a comma
whose bytes are checked against the field's key (its first and last eight bytes, the whole key for
most). This works because records are written by pydantic in a fixed field order with no spaces, and
because the two bytes ``,"`` never occur inside a JSON string (a quote there is escaped), so a comma
followed by ``"key":`` is always a key. Any line that does not have exactly the expected shape (an error
whose scorer failed half-way, retries, escaped characters in the id, a record written by another tool)
is parsed with ``orjson`` instead, so the fast path decides only how fast a line is read, never what is
read from it, nor whether the line is refused. So the values it reads are held to what the orjson path
accepts: JSON's own number grammar (no ``.5``, ``1.``, ``+1`` or ``01``, nothing beyond float64) and the
record's types (``"epoch":0.0`` and ``"prompt_tokens":3.0`` are floats, which the orjson path refuses as
``record_problem`` does) and ranges (a score in [0, 1], no negative epoch, count, time or cost); a value it
cannot tell, or out of range, is left to orjson, which refuses it naming file, line and field. The fast path
checks the structure around the fields it reads, not the validity of the whole line: a line damaged in the
middle of its output text is not noticed.

Records of the same ``(sample_id, epoch)`` may repeat after ``--retry-errors``; the last one wins.
Identities are 128-bit hashes of the UTF-8 sample id (and epoch), computed with numpy, so that a million
keys take milliseconds to deduplicate and join instead of a million Python strings.

Errors are counted as wrong (score 0) in ``mean``; ``mean_excluding_errors`` is the other policy.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import orjson
from numpy.typing import NDArray

from eval_harness.artifacts import json_type_name, line_number_at, record_error, record_problem, tail_digest
from eval_harness.durable import atomic_file
from eval_harness.errors import ArtifactError
from eval_harness.stats import NO_INTERVAL, mean_ci, pass_at_k
from eval_harness.tally import (
    AxisFigures,
    AxisTally,
    SessionTally,
    axis_stats_of,
    judge_cost_total,
    run_summary_of,
)
from eval_harness.types import AxisStats, RunManifest, RunSummary

__all__ = [
    "BY_SAMPLE",
    "EpochStats",
    "RunColumns",
    "ScorerDistribution",
    "axis_stats",
    "default_workers",
    "epoch_stats",
    "errors_by_type",
    "group_means",
    "judge_cost",
    "load_columns",
    "per_axis",
    "per_sample_means",
    "read_records_at",
    "sample_index",
    "scorer_distribution",
    "scorer_distributions",
    "scorer_keys",
    "summarize",
    "summarize_columns",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]
U64 = NDArray[np.uint64]
Bool = NDArray[np.bool_]

_CHUNK_BYTES: Final[int] = 1 << 24
# The runner's end-of-session summary reads in small blocks: the parse's temporaries then stay ~10 MB
# whatever the file's size, so a run's peak memory does not grow with its records (bench/overhead.py),
# at no cost in speed; report and compare, one-shot readers of files up to GBs, use the larger blocks.
SMALL_BLOCK_BYTES: Final[int] = 1 << 20
# Zero bytes after each chunk, so that checking a key at the very end never indexes past the buffer.
_PAD: Final[int] = 64
# Numbers are gathered into fixed-width cells; repr() of any float64 fits in 24 characters.
_NUMBER_WIDTH: Final[int] = 24
# Ids and axis names longer than this go through orjson: it bounds the gather matrix of a chunk.
_MAX_NAME_BYTES: Final[int] = 512

# Each byte's part in the text of a number, as one bit: a digit; a point; what may not follow a point (an
# exponent's letter, or the NUL padding after the text: the bit just above the point's, so that a shift by
# one lines them up); a sign; a byte no number has.
_IS_DIGIT, _IS_POINT, _NOT_AFTER_POINT, _IS_SIGN, _NOT_NUMBER = 0x01, 0x02, 0x04, 0x08, 0x80
_NUMBER_BITS = np.full(256, _NOT_NUMBER, dtype=np.uint8)
_NUMBER_BITS[np.frombuffer(b"0123456789", dtype=np.uint8)] = _IS_DIGIT
_NUMBER_BITS[ord(".")] = _IS_POINT
_NUMBER_BITS[np.frombuffer(b"eE\x00", dtype=np.uint8)] = _NOT_AFTER_POINT
_NUMBER_BITS[np.frombuffer(b"+-", dtype=np.uint8)] = _IS_SIGN
_MINUS, _ZERO_DIGIT = ord("-"), ord("0")
_ANY_NOT_NUMBER = np.uint64(_NOT_NUMBER * 0x0101010101010101)
_ANY_POINT = np.uint64(_IS_POINT * 0x0101010101010101)
_PADDING_WORD = np.uint64(_NOT_AFTER_POINT)
_BYTE, _LAST_BYTE, _ONE_BIT = np.uint64(8), np.uint64(56), np.uint64(1)


# --------------------------------------------------------------------------------------------------
# hashing of byte spans (identities of sample ids, keys and names)
# --------------------------------------------------------------------------------------------------

_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_SEEDS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD1B54A32D192ED03))


def _mix(x: U64) -> U64:
    # The splitmix64 finaliser: every input bit affects every output bit.
    x = x ^ (x >> np.uint64(30))
    x = x * _MIX1
    x = x ^ (x >> np.uint64(27))
    x = x * _MIX2
    return x ^ (x >> np.uint64(31))


def _words(buf: NDArray[np.uint8]) -> U64:
    """Every 8-byte window of ``buf`` as a little-endian uint64 (element i = bytes i..i+7), without copying.

    Gathering one window reads 8 bytes with one index, so comparing a 20-byte key costs three gathers
    instead of twenty."""
    return np.ndarray(shape=(buf.size - 7,), dtype="<u8", buffer=buf, offset=0, strides=(1,))


def _masked_words(words: U64, start: I64, length: I64, j: int) -> U64:
    """Word ``j`` of each span with the bytes past the span's end zeroed."""
    remaining = length - 8 * j
    if not j:
        word = words[start]
    elif remaining.size and int(remaining.min()) >= 8:
        return words[start + 8 * j]
    else:
        # Spans shorter than this word read nothing from it: clip so they cannot index past the buffer.
        word = words[np.minimum(start + 8 * j, words.size - 1)]
    if remaining.size and int(remaining.min()) >= 8:
        return word
    return word & _MASKS[np.clip(remaining, 0, 8)]


_FULL = np.uint64(0xFFFFFFFFFFFFFFFF)
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
_NULL, _ONE, _ZERO, _TRUE, _FALSE = (
    np.uint64(int.from_bytes(text, "little")) for text in (b"null", b"1.0", b"0.0", b"true", b"false")
)
_COLUMNS = np.arange(8, dtype=np.int64)
_ZEROS = np.uint64(0x3030303030303030)
# Lane masks of the SWAR steps: digit pairs into 16-bit lanes, then 32-bit, then the whole word.
_SWAR_1, _SWAR_2 = np.uint64(0x0F000F000F000F00), np.uint64(0x000F000F000F000F)
_SWAR_3, _SWAR_4 = np.uint64(0x00FF000000FF0000), np.uint64(0x000000FF000000FF)
_SWAR_5, _SWAR_6 = np.uint64(0x0000FFFF00000000), np.uint64(0x000000000000FFFF)
_FIRST_BYTE = np.uint64(0xFF)
_POWERS_OF_TEN = np.array([10**k for k in range(9)], dtype=np.uint64)
# Integers of more digits are read by orjson: float64 columns hold integers exactly up to 2**53 only.
_MAX_INTEGER_DIGITS: Final[int] = 15


def _parse_cells(cells: NDArray[np.uint8]) -> tuple[F64, Bool]:
    """Parse rows of NUL-padded number text; (values, which rows were numbers).

    Costs, counts and rounded latencies repeat a lot within a block: when a sample of the rows shows
    few distinct texts, each distinct text is parsed once (string conversion dominates the reading time).
    """
    n, width = cells.shape
    if n == 0:
        return np.zeros(0), np.zeros(0, dtype=np.bool_)
    texts = cells.view(f"S{width}").ravel()
    if n > 256 and np.unique(texts[:256]).size <= 64:
        unique, inverse = np.unique(texts, return_inverse=True)
        values, good = _parse_texts(unique)
        return values[inverse.reshape(-1)], good[inverse.reshape(-1)]
    return _parse_texts(texts)


def _json_number_texts(cells: NDArray[np.uint8]) -> Bool:
    """Which rows of NUL-padded text (a whole number of words wide) spell a JSON number, as far as ``float()``
    does not check it: ``float()`` also takes ``+1``, ``.5``, ``-.5``, ``01``, ``1.`` and ``1.e5``, which orjson
    refuses (what both refuse, such as ``1e`` or ``1+2``, is left to ``float()``).

    The bytes' parts (``_NUMBER_BITS``) are combined eight at a time, a word per row and column, so that the
    check costs no more than a byte-by-byte test of the characters alone."""
    bits = _NUMBER_BITS[cells].view("<u8")
    count = bits.shape[1]
    seen = np.zeros(bits.shape[0], dtype=np.uint64)
    point_then = np.zeros_like(seen)
    for j in range(count):
        word = bits[:, j]
        # each byte's follower: the next word's first byte after the last, the padding after the last word
        after = (word >> _BYTE) | ((bits[:, j + 1] if j + 1 < count else _PADDING_WORD) << _LAST_BYTE)
        seen |= word
        point_then |= word & (after >> _ONE_BIT)
    ok: Bool = ((seen & _ANY_NOT_NUMBER) | (point_then & _ANY_POINT)) == 0
    minus = cells[:, 0] == _MINUS
    lead = np.where(minus, cells[:, 1], cells[:, 0])
    second = np.where(minus, cells[:, 2], cells[:, 1])
    # a digit first (after at most a minus), and no leading zero before another digit
    ok &= (_NUMBER_BITS[lead] == _IS_DIGIT) & ((lead != _ZERO_DIGIT) | (_NUMBER_BITS[second] != _IS_DIGIT))
    return ok


def _parse_texts(texts: NDArray[np.bytes_]) -> tuple[F64, Bool]:
    try:
        return texts.astype(np.float64), np.ones(texts.size, dtype=np.bool_)
    except ValueError:  # characters of numbers that do not form one: leave those lines to orjson
        values = np.full(texts.size, np.nan)
        good = np.zeros(texts.size, dtype=np.bool_)
        for i, text in enumerate(texts.tolist()):
            try:
                values[i] = float(text)
                good[i] = True
            except ValueError:
                pass
        return values, good


def _hash_spans(buf: NDArray[np.uint8], start: I64, length: I64) -> U64:
    """Two independent 64-bit hashes (an ``(n, 2)`` array) of the byte spans ``buf[start:start+length]``.

    ``buf`` must extend at least 7 bytes past every span."""
    n = start.size
    out = np.empty((n, 2), dtype=np.uint64)
    if n == 0:
        return out
    words = _words(buf)
    count = max(1, -(-int(length.max()) // 8))
    hashes = [_mix(length.astype(np.uint64) ^ seed) for seed in _SEEDS]
    for j in range(count):
        word = _masked_words(words, start, length, j)
        # Only a span's own words count, so a hash does not depend on the other spans of the batch.
        own = length > 8 * j
        hashes = [np.where(own, _mix(h ^ word ^ seed), h) for h, seed in zip(hashes, _SEEDS, strict=True)]
    out[:, 0], out[:, 1] = hashes
    return out


def _hash_strings(values: Sequence[str]) -> U64:
    """The :func:`_hash_spans` hashes of the UTF-8 encoding of each string."""
    encoded = [v.encode() for v in values]
    lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
    starts = np.zeros(len(encoded), dtype=np.int64)
    if len(encoded) > 1:
        starts[1:] = np.cumsum(lengths[:-1])
    joined = b"".join(encoded) + bytes(8)
    return _hash_spans(np.frombuffer(joined, dtype=np.uint8), starts, lengths)


def _key_hash(sample_hash: U64, epoch: I64) -> U64:
    """Identity of ``(sample_id, epoch)`` from the sample id's hash and the epoch."""
    e = epoch.astype(np.uint64)
    out = np.empty_like(sample_hash)
    for column, seed in enumerate(_SEEDS):
        out[:, column] = _mix(sample_hash[:, column] ^ _mix(e + seed))
    return out


# --------------------------------------------------------------------------------------------------
# the columns
# --------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------
# the fast path: fields located with numpy
# --------------------------------------------------------------------------------------------------

_HEAD = b'{"sample_id":"'
_EPOCH = b',"epoch":'
_AXIS = b',"axis":"'
_TAGS = b',"tags":'
_LATENCY = b',"latency_ms":'
_PASSED = b',"passed":'
_SCORE = b',"score":'
_SCORES_EMPTY = b',"scores":{}'
_USAGE = b',"usage":{"prompt_tokens":'
_COMPLETION = b',"completion_tokens":'
_CACHED_TOKENS = b',"cached_tokens":'
_REASONING = b',"reasoning_tokens":'
_COST = b',"cost_usd":'
_NO_ERROR = b',"error":null,"attempts":'
_ERROR = b',"error":{"type":"'
_MESSAGE = b',"message":"'
_JUDGE_COST = b',"judge_cost_usd":'
_JUDGE_NULL = b',"judge_usage":null'
_JUDGE_USAGE = b',"judge_usage":{"prompt_tokens":'
_CACHED = b',"cached":'
_RETRIES_EMPTY = b',"retries":{}'
_BACKOFF = b',"backoff_s":'
_INPUT = b',"input":'
_TARGET = b',"target":'
_PROMPT = b',"prompt":['
_FINISHED_AT = b',"finished_at":"'
# What follows the error object of a record that has one (its message may hold commas: found by search), with
# attempts of one digit, as the fast path reads it on the other lines: other values are left to orjson.
_FINISHED_AFTER_ERROR = re.compile(rb'\},"attempts":[0-9],"finished_at":"')
_SCHEMA_VERSION = b',"schema_version":'
_QUOTE, _BRACE, _BACKSLASH = ord('"'), ord("}"), ord("\\")
_PATTERN_WORDS: dict[bytes, list[tuple[int, np.uint64, np.uint64]]] = {}


def _pattern_words(pattern: bytes) -> list[tuple[int, np.uint64, np.uint64]]:
    """``pattern`` as (offset, little-endian value, mask) words for comparison with ``_Buffer.words``.

    A key is compared by its first and last eight bytes (the whole key when it is at most 16 bytes long):
    at the comma where the fixed field order puts it, that tells it from every other field name of the
    record, and long keys would otherwise cost a third and fourth gather per line.
    """
    words = _PATTERN_WORDS.get(pattern)
    if words is None:
        if len(pattern) <= 8:
            mask = _FULL if len(pattern) == 8 else np.uint64((1 << (8 * len(pattern))) - 1)
            words = [(0, np.uint64(int.from_bytes(pattern, "little")), mask)]
        else:
            last = len(pattern) - 8
            words = [
                (offset, np.uint64(int.from_bytes(pattern[offset : offset + 8], "little")), _FULL)
                for offset in (0, last)
            ]
        _PATTERN_WORDS[pattern] = words
    return words


class _Buffer:
    """One chunk of complete lines in a padded byte array, with its comma positions for walking fields.

    Fields are reached by comma *index*: the field after the one at comma ``i`` starts at comma ``i + 1``,
    so walking a record costs an array lookup per field, not a search.
    """

    def __init__(self, buf: NDArray[np.uint8], size: int, sentinel: int) -> None:
        self.buf = buf
        self.words = _words(buf)
        self.ends = np.flatnonzero(buf[:size] == 10).astype(np.int64)
        self.starts = np.empty_like(self.ends)
        if self.ends.size:
            self.starts[0] = 0
            self.starts[1:] = self.ends[:-1] + 1
        # Sentinels: "no comma before" sorts as -1 and "no comma after" as ``sentinel``; both are *read* at
        # ``sentinel``, zero padding where no key matches, so checking a key needs no bounds test.
        self.commas = np.concatenate(([-1], np.flatnonzero(buf[:size] == 44), [sentinel])).astype(np.int64)
        self.positions = self.commas.copy()
        self.positions[0] = sentinel
        self._last = self.commas.size - 1
        self._comma_words: U64 | None = None

    def text(self, start: int, end: int) -> bytes:
        return self.buf[start:end].tobytes()

    def at(self, index: I64, step: int = 0) -> I64:
        """Positions of the commas ``step`` after (or before, if negative) the commas with these indices."""
        return self.positions[np.clip(index + step, 0, self._last)]

    def match(self, pos: I64, pattern: bytes) -> Bool:
        """Whether ``pattern`` starts at each position. Positions come from the commas (or a few bytes
        before one), so they lie inside the buffer or wrap to its end: garbage in, False out, no error."""
        result: Bool | None = None
        for offset, value, mask in _pattern_words(pattern):
            word = self.words[pos + offset] if offset else self.words[pos]
            same = (word == value) if mask == _FULL else ((word & mask) == value)
            result = same if result is None else result & same
        assert result is not None
        return result

    def byte(self, pos: I64) -> NDArray[np.uint8]:
        return self.buf[pos]

    def first_comma_index(self, pos: I64) -> I64:
        """Index of the first comma at or after each position."""
        return np.searchsorted(self.commas, pos, side="left").astype(np.int64)

    def _words_after_commas(self) -> U64:
        """The eight bytes after every inner comma, gathered once per buffer for every key looked up."""
        if self._comma_words is None:
            self._comma_words = self.words[self.commas[1:-1]]
        return self._comma_words

    def _keyed_commas(self, pattern: bytes) -> I64:
        """Indices (into ``commas``) of the commas where ``pattern`` (a comma and a key, 8 to 16 bytes) starts.

        The first eight bytes after every comma are gathered once per buffer and shared by every key looked up:
        one comparison per comma, then one gather of the last eight bytes of the few hits."""
        comma_words = self._words_after_commas()
        head, tail = (np.uint64(int.from_bytes(pattern[k : k + 8], "little")) for k in (0, len(pattern) - 8))
        found = np.flatnonzero(comma_words == head) + 1  # +1: index into self.commas
        if len(pattern) > 8:
            found = found[self.words[self.commas[found] + (len(pattern) - 8)] == tail]
        return found

    def keyed_comma_index(self, pattern: bytes) -> tuple[I64, Bool]:
        """For each line, the comma index where ``pattern`` (a comma and a key) starts, and whether it occurs
        exactly once in the line."""
        found = self._keyed_commas(pattern)
        line = np.searchsorted(self.ends, self.commas[found], side="left")
        count = np.bincount(line, minlength=self.ends.size)
        index = np.zeros(self.ends.size, dtype=np.int64)
        index[line] = found
        return index, count == 1

    def has_keys(self, patterns: Sequence[bytes], low: I64, high: I64, first: Sequence[bytes] = ()) -> Bool:
        """For each line, whether every one of ``patterns`` (a comma and a key, 8 to 16 bytes long) starts at a
        comma strictly between the line's ``low`` and ``high``, followed by one of the bytes ``first[i]`` when
        that is given. One pass over the commas for all the patterns: a comparison per comma and pattern on the
        first words shared with :meth:`keyed_comma_index`, then the rest of the work on the hits only."""
        comma_words = self._words_after_commas()
        heads = np.array([int.from_bytes(p[:8], "little") for p in patterns], dtype=np.uint64)
        hit = comma_words == heads[0]
        for head in heads[1:]:
            hit |= comma_words == head
        found = np.flatnonzero(hit) + 1  # +1: index into self.commas
        order = np.argsort(heads)
        kind = order[np.searchsorted(heads[order], comma_words[found - 1])]
        lengths = np.array([len(p) for p in patterns], dtype=np.int64)[kind]
        tails = np.array([int.from_bytes(p[-8:], "little") for p in patterns], dtype=np.uint64)
        position = self.commas[found]
        good = self.words[position + lengths - 8] == tails[kind]
        if first:
            allowed = np.ones((len(patterns), 256), dtype=np.bool_)
            for i, choices in enumerate(first):
                if choices:
                    allowed[i] = False
                    allowed[i, np.frombuffer(choices, dtype=np.uint8)] = True
            good &= allowed[kind, self.buf[position + lengths]]
        line = np.searchsorted(self.ends, position, side="left")
        good &= (position > low[line]) & (position < high[line])
        counts = np.bincount(line[good] * len(patterns) + kind[good], minlength=self.ends.size * len(patterns))
        return np.asarray((counts.reshape(-1, len(patterns)) > 0).all(axis=1), dtype=np.bool_)

    def no_backslash(self, start: I64, end: I64) -> Bool:
        """Whether each span is short enough for the fast path and holds no escape sequence."""
        length = end - start
        ok = (length >= 0) & (length <= _MAX_NAME_BYTES)
        if not ok.any():
            return ok
        length = np.where(ok, length, 0)
        at = np.maximum(start, 0)
        for j in range(-(-int(length.max()) // 8)):
            cells = _masked_words(self.words, at, length, j).view(np.uint8).reshape(-1, 8)
            ok &= ~np.any(cells == _BACKSLASH, axis=1)
        return ok

    def numbers(self, start: I64, end: I64) -> tuple[F64, Bool]:
        """Parse JSON numbers or ``null`` (NaN) in the spans; the mask says which spans were numbers."""
        n = start.size
        out = np.full(n, np.nan)
        length = end - start
        # Scores are mostly exactly 0 or 1 and many fields null; recognising them from the first word
        # skips the string conversion.
        first = _masked_words(self.words, np.maximum(start, 0), np.clip(length, 0, 8), 0)
        null = (length == 4) & (first == _NULL)
        one = (length == 3) & (first == _ONE)
        zero = (length == 3) & (first == _ZERO)
        out[one] = 1.0
        out[zero] = 0.0
        ok = null | one | zero
        rest = np.flatnonzero(~ok & (length >= 1) & (length <= _NUMBER_WIDTH))
        if rest.size:
            at, size = start[rest], length[rest]
            count = -(-int(size.max()) // 8)
            words = np.stack([_masked_words(self.words, at, size, j) for j in range(count)], axis=1)
            cells = words.view(np.uint8).reshape(rest.size, 8 * count)
            valid = _json_number_texts(cells)
            rest, cells = rest[valid], np.ascontiguousarray(cells[valid])
            parsed, parsed_ok = _parse_cells(cells)
            out[rest] = parsed
            ok[rest] = parsed_ok & np.isfinite(parsed)  # orjson refuses what overflows a float64 (1e400)
        return out, ok

    def integers(self, start: I64, end: I64) -> tuple[F64, Bool]:
        """Parse JSON integers of 1 to 15 digits without a sign in the spans (counts, epochs); the mask says
        which spans were such integers. The others are left to orjson: ``null``, a negative count and
        16 digits or more (beyond float64's exact integers) it reads; ``0.0``, ``3e0`` (floats, which an
        integer field refuses) and ``01`` (not JSON) it refuses.
        """
        length = end - start
        value, ok, word = self._digits(start, np.clip(length, 0, 8))
        ok &= (length >= 1) & (length <= _MAX_INTEGER_DIGITS)
        ok &= ((word & _FIRST_BYTE) != _ZERO_DIGIT) | (length == 1)
        long = np.flatnonzero(ok & (length > 8))
        if long.size:  # read as two runs of digits: the first eight, then the rest
            rest = length[long] - 8
            low, low_ok, _ = self._digits(start[long] + 8, rest)
            value[long] = value[long] * _POWERS_OF_TEN[rest] + low
            ok[long] = low_ok
        return np.where(ok, value, 0).astype(np.float64), ok

    def _digits(self, start: I64, size: I64) -> tuple[U64, Bool, U64]:
        """The ``size`` (1 to 8) bytes at ``start`` read as decimal digits: their values, whether they are all
        digits, and the words they were read from. One word per span, combined with the SWAR digit-combining
        steps (a handful of operations on one uint64) instead of a string conversion."""
        word = _masked_words(self.words, start, size, 0)
        cells = word.view(np.uint8).reshape(-1, 8)
        inside = size[:, None] > _COLUMNS
        ok = np.all(~inside | ((cells >= 48) & (cells <= 57)), axis=1)
        # Digits as values, the most significant in byte 0, right-aligned into 8 places (leading zeros).
        digits = (word - (_ZEROS & _MASKS[size])) << (np.uint64(8) * (np.uint64(8) - size.astype(np.uint64)))
        pairs = ((digits & _SWAR_1) >> np.uint64(8)) + (digits & _SWAR_2) * np.uint64(10)
        quads = ((pairs & _SWAR_3) >> np.uint64(16)) + (pairs & _SWAR_4) * np.uint64(100)
        return ((quads & _SWAR_5) >> np.uint64(32)) + (quads & _SWAR_6) * np.uint64(10000), ok, word

    def literals(self, start: I64, end: I64) -> tuple[Bool, Bool]:
        """``true``/``false``/``null`` in the spans: (value, recognised); null reads as False."""
        length = end - start
        first = _masked_words(self.words, np.maximum(start, 0), np.clip(length, 0, 8), 0)
        true = (length == 4) & (first == _TRUE)
        false = (length == 5) & (first == _FALSE)
        null = (length == 4) & (first == _NULL)
        return true, true | false | null

    def names(self, start: I64, end: I64) -> tuple[list[str], NDArray[np.int32]]:
        """Decode the few distinct names (axes, error types) of the spans: (names, index of each span)."""
        hashes = _hash_spans(self.buf, start, end - start)[:, 0]
        _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        names = [self.text(int(start[i]), int(end[i])).decode(errors="replace") for i in first]
        return names, inverse.astype(np.int32).reshape(-1)


def _fast_rows(b: _Buffer, chunk: _Chunk, keys: Sequence[str], light: bool = False) -> Bool:
    """Fill ``chunk`` for every line of the expected shape; return which lines were filled.

    ``light`` reads only what a comparison needs (identity, axis, score, error, passed, latency, cost) and
    checks the shape of each line only around those fields, the fields every record has and the end of the
    line: about half the work. It does not look inside the values of the fields it does not read.
    """
    starts, ends = b.starts, b.ends
    # Head: {"sample_id":"ID","epoch":N,"axis":"AXIS","tags":
    i_epoch = b.first_comma_index(starts)
    c_epoch, c_axis, c_tags = b.at(i_epoch), b.at(i_epoch, 1), b.at(i_epoch, 2)
    ok = b.match(starts, _HEAD)
    ok &= (b.byte(c_epoch - 1) == _QUOTE) & b.match(c_epoch, _EPOCH)
    ok &= b.match(c_axis, _AXIS)
    ok &= (b.byte(c_tags - 1) == _QUOTE) & b.match(c_tags, _TAGS)
    id_start, id_end = starts + len(_HEAD), c_epoch - 1
    axis_start, axis_end = c_axis + len(_AXIS), c_tags - 1
    ok &= b.no_backslash(id_start, id_end) & b.no_backslash(axis_start, axis_end)

    # The anchor: ,"latency_ms": occurs once per line, after the text fields; its neighbours by comma.
    i_latency, once = b.keyed_comma_index(_LATENCY)
    ok &= once
    c_latency, c_passed, c_score = b.at(i_latency), b.at(i_latency, -1), b.at(i_latency, -2)
    ok &= b.match(c_passed, _PASSED)
    ok &= b.match(c_score, _SCORE) & (b.byte(c_score - 1) == _BRACE) & (c_score > c_tags)

    # Forward from latency: usage, cost, error.
    c_usage, c_completion, c_cached_tokens = b.at(i_latency, 1), b.at(i_latency, 2), b.at(i_latency, 3)
    c_reasoning, c_cost, c_error, c_message = (b.at(i_latency, k) for k in (4, 5, 6, 7))
    ok &= b.match(c_usage, _USAGE) & b.match(c_completion, _COMPLETION)
    ok &= b.match(c_cached_tokens, _CACHED_TOKENS) & b.match(c_reasoning, _REASONING)
    ok &= b.match(c_cost, _COST) & (b.byte(c_cost - 1) == _BRACE)
    no_error = b.match(c_error, _NO_ERROR)
    has_error = b.match(c_error, _ERROR) & (b.byte(c_message - 1) == _QUOTE) & b.match(c_message, _MESSAGE)
    has_error &= b.no_backslash(c_error + len(_ERROR), c_message - 1)
    ok &= no_error | has_error

    # The other fields every record has (see artifacts.record_problem), which the fast path does not read:
    # input, target and prompt between the tags and the score; finished_at after attempts; and no
    # schema_version (a nested one only sends the line to orjson, which looks at the top level alone).
    ok &= b.has_keys((_INPUT, _TARGET, _PROMPT), c_tags, c_score, first=(b'"[', b'"[', b"{]"))
    c_finished = b.at(i_latency, 8)
    ok &= b.match(c_finished, _FINISHED_AT) | has_error
    for row in np.flatnonzero(ok & has_error).tolist():  # about 1% of the lines
        ok[row] = _FINISHED_AFTER_ERROR.search(b.text(int(c_message[row]), int(ends[row]))) is not None
    ok &= ~b.has_keys((_SCHEMA_VERSION,), starts - 1, ends)
    # The end of the line: ,"backoff_s":X} after the error (a line cut short and ended by hand goes to orjson).
    # Its last comma is the one before the next line's first (no comma lies between a line and the next).
    i_backoff = np.concatenate((i_epoch[1:], b.first_comma_index(ends[-1:]))) - 1
    c_backoff = b.at(i_backoff)
    ok &= b.match(c_backoff, _BACKOFF) & (b.byte(ends - 1) == _BRACE) & (c_backoff > c_error)

    spans: dict[str, tuple[I64, I64]] = {
        "epoch": (c_epoch + len(_EPOCH), c_axis),
        "score": (c_score + len(_SCORE), c_passed),
        "latency_ms": (c_latency + len(_LATENCY), c_usage),
        "cost_usd": (c_cost + len(_COST), c_error),
    }
    integers = {"epoch"}
    literals = {"passed": (c_passed + len(_PASSED), c_latency)}
    scorer_spans: list[tuple[I64, I64]] = []
    walk_ok = np.zeros(starts.size, dtype=np.bool_)
    judge_object = np.zeros(starts.size, dtype=np.bool_)
    if not light:
        # The scores dict, walked backwards from its closing brace: one comma per scorer in the task's order.
        empty = c_score - len(_SCORES_EMPTY)
        empty_scores = b.match(empty, _SCORES_EMPTY) & (empty > c_tags)
        walk_ok[:] = bool(keys)
        value_end = c_score - 1
        for j in range(len(keys) - 1, -1, -1):
            comma = b.at(i_latency, -3 - (len(keys) - 1 - j))
            pattern = (b',"scores":{' if j == 0 else b",") + orjson.dumps(keys[j]) + b":"
            walk_ok &= b.match(comma, pattern)
            if j == 0:
                walk_ok &= comma > c_tags
            scorer_spans.append((comma + len(pattern), value_end))
            value_end = comma
        scorer_spans.reverse()
        ok &= walk_ok | empty_scores

        # ,"judge_cost_usd": occurs once per line, after the explanations; the judge usage just before it.
        i_judge, once = b.keyed_comma_index(_JUDGE_COST)
        c_judge, c_cached, c_after_cached = b.at(i_judge), b.at(i_judge, 1), b.at(i_judge, 2)
        ok &= once & (c_judge > c_error) & b.match(c_cached, _CACHED)
        c_j_reasoning, c_j_cached, c_j_completion, c_j_usage = (b.at(i_judge, k) for k in (-1, -2, -3, -4))
        judge_null = b.match(c_j_reasoning, _JUDGE_NULL) & (c_j_reasoning + len(_JUDGE_NULL) == c_judge)
        judge_object = (
            b.match(c_j_usage, _JUDGE_USAGE)
            & b.match(c_j_completion, _COMPLETION)
            & b.match(c_j_cached, _CACHED_TOKENS)
            & b.match(c_j_reasoning, _REASONING)
            & (b.byte(c_judge - 1) == _BRACE)
            & (c_j_usage > c_error)
            & ~judge_null
        )
        ok &= judge_null | judge_object

        # No retries just before the backoff: a record that has some goes to orjson, which reads them.
        c_retries = b.at(i_backoff, -1)
        ok &= b.match(c_retries, _RETRIES_EMPTY) & (c_retries + len(_RETRIES_EMPTY) == c_backoff)
        ok &= c_retries > c_cached
        # attempts, checked and not kept, is one digit (more than one attempt leaves retries) unless the line has
        # an error, whose _FINISHED_AFTER_ERROR checked it
        c_attempts = c_error + len(_NO_ERROR)
        one_digit = (c_finished - c_attempts == 1) & (_NUMBER_BITS[b.byte(c_attempts)] == _IS_DIGIT)
        ok &= has_error | one_digit

        spans |= {
            "prompt_tokens": (c_usage + len(_USAGE), c_completion),
            "completion_tokens": (c_completion + len(_COMPLETION), c_cached_tokens),
            "judge_cost_usd": (c_judge + len(_JUDGE_COST), c_cached),
            "backoff_s": (c_backoff + len(_BACKOFF), ends - 1),
            "judge_prompt_tokens": (c_j_usage + len(_JUDGE_USAGE), c_j_completion),
            "judge_completion_tokens": (c_j_completion + len(_COMPLETION), c_j_cached),
        }
        integers |= {"prompt_tokens", "completion_tokens", "judge_prompt_tokens", "judge_completion_tokens"}
        literals["cached"] = (c_cached + len(_CACHED), c_after_cached)

    rows = np.flatnonzero(ok)
    if rows.size == 0:
        return ok
    good = np.ones(rows.size, dtype=np.bool_)
    judged = judge_object[rows]
    values: dict[str, F64] = {}
    for name, (start, end) in spans.items():
        if name.startswith("judge_") and name.endswith("_tokens"):
            # Only records with a judge usage object have these counts.
            parsed = np.zeros(rows.size)
            if judged.any():
                counted = rows[judged]
                parsed[judged], parsed_ok = b.integers(start[counted], end[counted])
                good[judged] &= parsed_ok
        else:
            parsed, parsed_ok = (b.integers if name in integers else b.numbers)(start[rows], end[rows])
            good &= parsed_ok
        values[name] = parsed
    flags: dict[str, Bool] = {}
    for name, (start, end) in literals.items():
        flags[name], recognised = b.literals(start[rows], end[rows])
        good &= recognised
    if "backoff_s" in values:  # null: the orjson path reads it as 0
        good &= ~np.isnan(values["backoff_s"])
    scored = walk_ok[rows]
    scores: list[F64] = []
    for start, end in scorer_spans:
        parsed, parsed_ok = b.numbers(start[rows], end[rows])
        good &= ~scored | parsed_ok
        scores.append(np.where(scored, parsed, np.nan))

    # A line whose values did not parse, or hold a value out of its field's range, goes to orjson like any
    # other odd line (which refuses the latter naming the field).
    good &= ~_out_of_range(values, scores)
    ok[rows[~good]] = False
    rows = rows[good]
    if rows.size == 0:
        return ok
    chunk.epoch[rows] = values.pop("epoch")[good].astype(np.int64)
    for name, parsed in values.items():
        column = getattr(chunk, name)
        column[rows] = parsed[good].astype(column.dtype)
    for name, flag in flags.items():
        getattr(chunk, name)[rows] = flag[good]
    chunk.judge_used[rows] = judged[good]
    errored = has_error[rows]
    chunk.error[rows] = errored | np.isnan(chunk.score[rows])
    for key, parsed in zip(keys if scorer_spans else (), scores, strict=True):
        chunk.scorer(key)[rows] = parsed[good]
    chunk.sample_hash[rows] = _hash_spans(b.buf, id_start[rows], id_end[rows] - id_start[rows])
    chunk.axis_name, chunk.axis[rows] = b.names(axis_start[rows], axis_end[rows])
    error_rows = rows[errored]
    if error_rows.size:
        type_start = c_error[error_rows] + len(_ERROR)
        chunk.error_type_name, chunk.error_type[error_rows] = b.names(type_start, c_message[error_rows] - 1)
    return ok


# --------------------------------------------------------------------------------------------------
# the slow path: orjson, for lines of any other shape
# --------------------------------------------------------------------------------------------------


class _BadField(Exception):
    """A record's field that the columns cannot be read from: ``(field, message)`` as in ``record_problem``."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(name, message)
        self.problem = (name, message)


def _number(value: Any, name: str, *, unit: bool = False) -> float:
    """A number of a record (every one is at least 0; ``unit``: at most 1 too), NaN for null."""
    if value is None:
        return math.nan
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _BadField(name, f"expected a number or null, got {json_type_name(value)}")
    number = float(value)
    if unit and not 0.0 <= number <= 1.0:
        raise _BadField(name, f"expected a number in [0, 1] or null, got {value!r}")
    if number < 0.0:
        raise _BadField(name, f"expected a non-negative number or null, got {value!r}")
    return number


def _flag(value: Any, name: str) -> bool:
    if value is not None and not isinstance(value, bool):
        raise _BadField(name, f"expected a boolean or null, got {json_type_name(value)}")
    return value is True


def _count(value: Any, name: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadField(name, f"expected an integer or null, got {json_type_name(value)}")
    if value < 0:
        raise _BadField(name, f"expected a non-negative integer or null, got {value}")
    return _int64(value, name)


def _int64(value: int, name: str) -> int:
    # orjson reads integers up to 2**64 - 1 (smaller negative ones as floats); a column holds up to 2**63 - 1
    if value > _INT64_MAX:
        raise _BadField(name, f"{value} is out of range")
    return value


_INT64_MAX: Final[int] = 2**63 - 1


def _object(value: Any, name: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _BadField(name, f"expected an object or null, got {json_type_name(value)}")
    return value


def _usage_tokens(usage: Any, name: str) -> tuple[int, int]:
    fields = _object(usage, name)
    prompt, completion = fields.get("prompt_tokens"), fields.get("completion_tokens")
    return _count(prompt, f"{name}.prompt_tokens"), _count(completion, f"{name}.completion_tokens")


def _slow_row(
    record: Any,
    chunk: _Chunk,
    row: int,
    axis_index: dict[str, int],
    type_index: dict[str, int],
    ids: list[str],
    light: bool,
) -> None:
    """Fill row ``row`` of ``chunk`` from a parsed line; raises ``_BadField`` when it is not a record of this
    schema version (``record_problem``) or a field read here has the wrong type. ``light`` reads (and checks)
    what the fast path's light read does, and nothing else."""
    problem = record_problem(record)
    if problem is not None:
        raise _BadField(*problem)
    chunk.epoch[row] = _int64(record["epoch"], "epoch")
    chunk.axis[row] = _code(chunk.axis_name, axis_index, record["axis"])
    score = _number(record.get("score"), "score", unit=True)
    error = record.get("error")
    chunk.score[row] = score
    chunk.error[row] = error is not None or math.isnan(score)
    if error is not None:
        error_type = _object(error, "error").get("type")
        if not isinstance(error_type, str):
            raise _BadField("error.type", f"expected a string, got {json_type_name(error_type)}")
        chunk.error_type[row] = _code(chunk.error_type_name, type_index, error_type)
    chunk.passed[row] = _flag(record.get("passed"), "passed")
    chunk.latency_ms[row] = _number(record.get("latency_ms"), "latency_ms")
    chunk.cost_usd[row] = _number(record.get("cost_usd"), "cost_usd")
    ids.append(record["sample_id"])
    if not light:
        _slow_heavy_fields(record, chunk, row)


def _slow_heavy_fields(record: dict[str, Any], chunk: _Chunk, row: int) -> None:
    """The fields of a record that a light read leaves out, unread and unchecked on both paths: usage,
    attempts (checked, not kept), judge_usage, judge_cost_usd, cached, backoff_s, scores and retries
    (``compare`` reads none of them)."""
    chunk.prompt_tokens[row], chunk.completion_tokens[row] = _usage_tokens(record.get("usage"), "usage")
    _count(record.get("attempts"), "attempts")
    judge_usage = record.get("judge_usage")
    chunk.judge_used[row] = judge_usage is not None
    chunk.judge_prompt_tokens[row], chunk.judge_completion_tokens[row] = _usage_tokens(judge_usage, "judge_usage")
    chunk.judge_cost_usd[row] = _number(record.get("judge_cost_usd"), "judge_cost_usd")
    chunk.cached[row] = _flag(record.get("cached"), "cached")
    backoff = _number(record.get("backoff_s"), "backoff_s")
    chunk.backoff_s[row] = 0.0 if math.isnan(backoff) else backoff
    for name, value in _object(record.get("scores"), "scores").items():
        chunk.scorer(name)[row] = _number(value, f"scores.{name}", unit=True)
    retries = _object(record.get("retries"), "retries")
    if retries:
        chunk.retries[row] = {cause: _count(count, f"retries.{cause}") for cause, count in retries.items()}


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
    axis_index = {name: i for i, name in enumerate(chunk.axis_name)}
    type_index = {name: i for i, name in enumerate(chunk.error_type_name)}
    ids: list[str] = []
    for row in slow.tolist():
        try:
            record = orjson.loads(b.text(int(b.starts[row]), int(b.ends[row])))
            _slow_row(record, chunk, row, axis_index, type_index, ids, light)
        except orjson.JSONDecodeError:
            raise _DamagedLine(base_offset + int(b.starts[row]), None) from None
        except _BadField as exc:
            raise _DamagedLine(base_offset + int(b.starts[row]), exc.problem) from None
    chunk.sample_hash[slow] = _hash_strings(ids)
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
    retries), which neither path looks at then. A missing file reads as no records; a torn last line
    (no newline) is dropped; a complete line that is not a record raises ``ArtifactError`` naming file,
    line and field. ``start`` (the beginning of a line) reads only the bytes from there; line numbers then
    count from it. ``block_bytes`` is the size of the blocks read (the parse's temporaries scale with it).
    """
    keys = [] if light else list(scorer_keys)  # a light read fills no scorer columns
    size = samples_path.stat().st_size if samples_path.exists() else 0
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
    axes: list[str] = []
    axis_index: dict[str, int] = {}
    types: list[str] = []
    type_index: dict[str, int] = {}
    lines = 0
    for chunk in chunks:
        chunk.line = lines + 1 + np.arange(chunk.size, dtype=np.int64)
        lines += chunk.size
        # Per-chunk name codes become run-wide codes.
        axis_lut = np.array([_code(axes, axis_index, a) for a in chunk.axis_name] or [0], dtype=np.int32)
        chunk.axis = axis_lut[chunk.axis]
        type_lut = np.array([_code(types, type_index, t) for t in chunk.error_type_name] + [-1], dtype=np.int32)
        chunk.error_type = type_lut[chunk.error_type]  # -1 indexes the appended -1
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
    columns = RunColumns(
        axes=axes,
        error_types=types,
        scorers=scorers,
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
    with samples_path.open("rb") as handle:
        for offset in offsets:
            handle.seek(int(offset))
            line = handle.readline()
            try:
                yield orjson.loads(line)
            except orjson.JSONDecodeError:
                raise ArtifactError(f"{samples_path}: byte {offset}: not a sample record; the file changed") from None


def scorer_keys(manifest: RunManifest) -> list[str]:
    """The keys under which the run's scorers store their values, in the task's order."""
    return [spec.key for spec in manifest.task.scorers]


# --------------------------------------------------------------------------------------------------
# aggregation
# --------------------------------------------------------------------------------------------------


def _fsum(values: F64) -> float:
    """The exactly rounded sum of the known (non-NaN) values: independent of their order."""
    return math.fsum(values[~np.isnan(values)].tolist())


def _percentiles(known: F64) -> tuple[float | None, float | None]:
    if not known.size:
        return None, None
    p50, p95 = np.percentile(known, [50, 95]).tolist()
    return float(p50), float(p95)


@dataclass(frozen=True)
class _AxisInputs:
    """What the statistics of a set of records are computed from; built from columns or from a tally."""

    final: F64
    """Final scores, errors as 0, in any order."""
    latency_ms: F64
    """Known latencies."""
    cost_usd: F64
    """Known costs."""
    errors: int
    passed: int
    """Records that passed and hold no error."""
    cost_known: bool
    prompt_tokens: int
    completion_tokens: int
    units: F64 | None = None
    """With several epochs, each sample's mean final score: the units of the interval (None: one epoch, the
    records are the units)."""
    clean_units: F64 | None = None
    """The units' means over their records without an error (a unit with only errors drops out); built from
    columns only (a tally is never used with several epochs)."""

    @classmethod
    def of_columns(cls, columns: RunColumns) -> _AxisInputs:
        latency, cost = columns.latency_ms, columns.cost_usd
        units = per_sample_means(columns, columns.final)
        clean_units = columns.final[~columns.error]
        if units is not None:
            clean = columns.take(~columns.error)
            clean_units = _or_records(per_sample_means(clean, clean.final), clean.final)
        return cls(
            units=units,
            clean_units=clean_units,
            final=columns.final,
            latency_ms=latency[~np.isnan(latency)],
            cost_usd=cost[~np.isnan(cost)],
            errors=int(np.count_nonzero(columns.error)),
            passed=int(np.count_nonzero(columns.passed & ~columns.error)),
            # An errored record has no completion to price; only a completed record with no price is unknown.
            cost_known=not bool(np.any(np.isnan(cost) & ~columns.error)),
            prompt_tokens=int(columns.prompt_tokens.sum()),
            completion_tokens=int(columns.completion_tokens.sum()),
        )

    @classmethod
    def of_tally(cls, tally: AxisTally) -> _AxisInputs:
        return cls(
            final=np.frombuffer(tally.final, dtype=np.float64),
            latency_ms=np.frombuffer(tally.latency_ms, dtype=np.float64),
            cost_usd=np.frombuffer(tally.cost_usd, dtype=np.float64),
            errors=tally.errors,
            passed=tally.passed,
            cost_known=not tally.cost_unknown,
            prompt_tokens=tally.prompt_tokens,
            completion_tokens=tally.completion_tokens,
        )

    @classmethod
    def joined(cls, parts: Sequence[_AxisInputs]) -> _AxisInputs:
        if len(parts) == 1:
            return parts[0]
        # a sample is on one axis: the axes' units together are the run's
        units = clean_units = None
        if any(p.units is not None for p in parts):
            units = np.concatenate([_or_records(p.units, p.final) for p in parts])
            clean_units = np.concatenate([_clean_units(p) for p in parts])
        return cls(
            units=units,
            clean_units=clean_units,
            final=np.concatenate([p.final for p in parts]) if parts else np.empty(0),
            latency_ms=np.concatenate([p.latency_ms for p in parts]) if parts else np.empty(0),
            cost_usd=np.concatenate([p.cost_usd for p in parts]) if parts else np.empty(0),
            errors=sum(p.errors for p in parts),
            passed=sum(p.passed for p in parts),
            cost_known=all(p.cost_known for p in parts),
            prompt_tokens=sum(p.prompt_tokens for p in parts),
            completion_tokens=sum(p.completion_tokens for p in parts),
        )


def _clean_units(inputs: _AxisInputs) -> F64:
    assert inputs.clean_units is not None, "units come from columns, which give clean units too"
    return inputs.clean_units


def _or_records(units: F64 | None, records: F64) -> F64:
    return records if units is None else units


def per_sample_means(columns: RunColumns, values: F64) -> F64 | None:
    """Each sample's mean of ``values`` (one per row of ``columns``), when some sample has several rows
    (epochs); None when every row is a sample of its own.

    Several epochs of one sample are not independent evidence (a temperature-0 model repeats itself), so
    with epochs the intervals and tests take one unit per sample, the mean of its epochs."""
    if values.size == 0 or not np.any(columns.epoch != 0):
        return None
    sample = sample_index(columns.sample_hash[:, 0])
    return None if sample is None else group_means(values, sample)


def sample_index(sample_ids: U64) -> NDArray[np.intp] | None:
    """Each row's sample as 0..k-1 (``sample_ids``: a 64-bit identity of each row's sample), or None when no
    sample has two rows (then the rows are the units)."""
    samples, index = np.unique(sample_ids, return_inverse=True)
    return None if samples.size == sample_ids.size else index.astype(np.intp)


def group_means(values: F64, group: NDArray[np.intp]) -> F64:
    """The mean of ``values`` in each group (0..k-1), summed in value order within each group: the means must
    not depend on the order of the records."""
    order = np.lexsort((values, group))
    means: F64 = np.bincount(group[order], weights=values[order]) / np.bincount(group)
    return means


BY_SAMPLE = "-by-sample"
"""Appended to an interval method computed over per-sample means (several epochs)."""


def axis_stats(columns: RunColumns, name: str, ci_method: str = "auto", seed: int = 0) -> AxisStats:
    """Aggregates of all rows of ``columns`` (select rows first with ``take``) under the label ``name``."""
    return _axis_stats(_AxisInputs.of_columns(columns), name, ci_method, seed)


def _axis_stats(inputs: _AxisInputs, name: str, ci_method: str, seed: int) -> AxisStats:
    # Sorted, and summed exactly (fsum): the statistics must not depend on the order of the records,
    # which a crash and resume changes, down to the last bit.
    final = np.sort(inputs.final)
    if final.size and inputs.units is not None:
        # the mean over samples, as its interval (equal to the records' mean when every sample has all its
        # epochs; an interrupted run's samples each count once, whatever their number of epochs)
        mean, low, high, method = mean_ci(np.sort(inputs.units), method=ci_method, seed=seed)
        if method != NO_INTERVAL:
            method += BY_SAMPLE
    elif final.size:
        mean, low, high, method = mean_ci(final, method=ci_method, seed=seed)
    else:
        mean, low, high, method = None, None, None, "none"
    p50, p95 = _percentiles(inputs.latency_ms)
    figures = AxisFigures(
        n=int(final.size),
        errors=inputs.errors,
        passed=inputs.passed,
        mean=mean,
        ci=_interval_or_none(low, high),
        ci_method=method,
        final_sum=math.fsum(final),
        cost_total=math.fsum(inputs.cost_usd) if inputs.cost_known else None,
        cost_known=inputs.cost_known,
        latency_p50_ms=p50,
        latency_p95_ms=p95,
        prompt_tokens=inputs.prompt_tokens,
        completion_tokens=inputs.completion_tokens,
        samples=None if inputs.units is None else int(inputs.units.size),
        mean_excluding_errors_by_sample=_clean_mean(inputs),
    )
    return axis_stats_of(figures, name)


def _interval_or_none(low: float | None, high: float | None) -> tuple[float, float] | None:
    """The interval, or None when there is none (no records; or NaN: one unit, or units all equal)."""
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return None
    return low, high


def _clean_mean(inputs: _AxisInputs) -> float | None:
    """With several epochs, the mean over samples of their records without an error (as the report's interval
    excluding errors); None otherwise, or when every record is an error."""
    if inputs.units is None or inputs.clean_units is None or not inputs.clean_units.size:
        return None
    return math.fsum(np.sort(inputs.clean_units)) / inputs.clean_units.size


def per_axis(columns: RunColumns) -> list[tuple[str, RunColumns]]:
    """The rows of each axis, axes sorted by name."""
    order = sorted(range(len(columns.axes)), key=lambda code: columns.axes[code])
    out = []
    for code in order:
        rows = np.flatnonzero(columns.axis == code)
        if rows.size:
            out.append((columns.axes[code], columns.take(rows)))
    return out


def judge_cost(columns: RunColumns) -> float | None:
    """Total judge cost; None when no judge was used or a judged record has no price."""
    known = ~np.isnan(columns.judge_cost_usd)
    return judge_cost_total(columns.judge_cost_usd[known], bool(np.any(columns.judge_used & ~known)))


def errors_by_type(columns: RunColumns) -> dict[str, int]:
    """Error records by error type."""
    codes = columns.error_type[columns.error_type >= 0]
    counts = np.bincount(codes, minlength=len(columns.error_types))
    return {columns.error_types[i]: int(c) for i, c in enumerate(counts) if c}


def summarize_columns(columns: RunColumns, manifest: RunManifest, ci_method: str = "auto") -> RunSummary:
    """The summary of already-loaded columns, with the manifest's status."""
    seed = manifest.seed
    parts = [(name, _AxisInputs.of_columns(rows)) for name, rows in per_axis(columns)]
    return run_summary_of(
        manifest,
        [_axis_stats(inputs, name, ci_method, seed) for name, inputs in parts],
        _axis_stats(_AxisInputs.joined([inputs for _, inputs in parts]), "overall", ci_method, seed),
        judge_cost_usd=judge_cost(columns),
        errors_by_type=errors_by_type(columns),
        retries=dict(columns.retries),
        backoff_s=_fsum(columns.backoff_s),
        cached=int(np.count_nonzero(columns.cached)),
    )


def summarize_tally(tally: SessionTally, manifest: RunManifest, ci_method: str = "auto") -> RunSummary:
    """The summary of a run whose every record went through ``tally`` (a session that began on an empty
    artifact): equal to ``summarize`` of its samples.jsonl, without reading it."""

    def stats(name: str, parts: list[AxisTally]) -> AxisStats:
        inputs = _AxisInputs.joined([_AxisInputs.of_tally(part) for part in parts])
        return _axis_stats(inputs, name, ci_method, manifest.seed)

    return tally.summary(manifest, stats)


def summarize(
    samples_path: Path, manifest: RunManifest, ci_method: str = "auto", *, keep_cache: bool = False
) -> RunSummary:
    """The summary of the whole artifact (every session), with the manifest's status.

    With ``keep_cache`` (the runner, which holds the run's lock) the columns are read through the columns
    cache and the cache is brought up to date, so the next session reads only what it appends.
    """
    keys = scorer_keys(manifest)
    if not keep_cache:
        return summarize_columns(load_columns(samples_path, keys), manifest, ci_method)
    columns = load_columns_cached(samples_path, keys, block_bytes=SMALL_BLOCK_BYTES)
    save_columns_cache(samples_path, columns, keys)
    return summarize_columns(columns, manifest, ci_method)


# --------------------------------------------------------------------------------------------------
# the columns cache: a session reads only the records appended since the last one
# --------------------------------------------------------------------------------------------------

COLUMNS_CACHE = ".columns.npz"
# 3: the values are held to their fields' ranges (``_out_of_range``); a cache of version 2 may hold a value out
# of range that its build read without a word, so it is read again (and refused) rather than used.
_CACHE_VERSION: Final[int] = 3
# The cache names the bytes it covers by their length and a digest of their last few KB (tail_digest):
# samples.jsonl is append-only, so a file that still ends that way at that length is the one it was made from.
# That alone misses a hand edit of earlier bytes that keeps the length (a score changed from 0.0 to 1.0), so
# the cache also keeps the file's size and mtime when it was written: a file no longer than it was then but
# with another mtime was rewritten in place, and is read whole. A longer file had records appended (the
# next session's incremental read) and its mtime moved with them: only length and digest are checked then,
# so an in-place edit of the covered bytes followed by an append is not noticed, nor is an edit that keeps
# size and mtime (touch -r, cp -p, or within the file system's timestamp granularity of the cache's write).
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
        "scorers": list(columns.scorers),
        "retries": columns.retries,
        "lines_read": columns.lines_read,
        "fast_lines": columns.fast_lines,
    }
    arrays: dict[str, Any] = {name: getattr(columns, name) for name in _ROW_COLUMNS}
    arrays.update(sample_hash=columns.sample_hash, key_hash=columns.key_hash)
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
        with np.load(target, allow_pickle=False) as data:
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
                scorers={name: data[f"scorer_{i}"] for i, name in enumerate(meta["scorers"])},
                sample_hash=data["sample_hash"],
                key_hash=data["key_hash"],
                retries=dict(meta["retries"]),
                lines_read=int(meta["lines_read"]),
                fast_lines=int(meta["fast_lines"]),
                **rows,
            )
    except (OSError, ValueError, KeyError, orjson.JSONDecodeError):
        return None  # a damaged cache is only a slower read, never an error
    if _cached_out_of_range(columns):
        return None  # the full read refuses the line, naming the file, the line and the field
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
    axes, types = list(first.axes), list(first.error_types)
    axis_index = {name: i for i, name in enumerate(axes)}
    type_index = {name: i for i, name in enumerate(types)}
    axis_lut = np.array([_code(axes, axis_index, a) for a in second.axes] or [0], dtype=np.int32)
    type_lut = np.array([_code(types, type_index, t) for t in second.error_types] + [-1], dtype=np.int32)
    remapped: dict[str, Any] = {
        "axis": axis_lut[second.axis],
        "error_type": type_lut[second.error_type],
        "line": second.line + first.lines_read,
    }
    rows = {
        name: np.concatenate((getattr(first, name), remapped.get(name, getattr(second, name)))) for name in _ROW_COLUMNS
    }
    names = list(dict.fromkeys([*first.scorers, *second.scorers]))
    scorers = {
        name: np.concatenate(
            (first.scorers.get(name, np.full(first.n, np.nan)), second.scorers.get(name, np.full(second.n, np.nan)))
        )
        for name in names
    }
    retries = Counter(first.retries)
    retries.update(second.retries)
    return RunColumns(
        axes=axes,
        error_types=types,
        scorers=scorers,
        sample_hash=np.concatenate((first.sample_hash, second.sample_hash)),
        key_hash=np.concatenate((first.key_hash, second.key_hash)),
        retries=dict(retries),
        lines_read=first.lines_read + second.lines_read,
        fast_lines=first.fast_lines + second.fast_lines,
        torn_bytes=second.torn_bytes,
        **rows,
    )


# --------------------------------------------------------------------------------------------------
# epochs and scorer distributions
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EpochStats:
    """Repeated sampling of the same items (epochs > 1) over one axis or the whole run."""

    samples: int
    """Distinct sample ids."""
    k: int
    """The epoch count of the run: pass@k is reported for k = 1 and k = this."""
    pass_at_1: float | None
    pass_at_k: float | None
    complete_samples: int
    """Samples with all k epochs recorded: pass@k is their mean (fewer after an interruption)."""
    agreement: float | None
    """Share of samples (with two or more epochs) whose epochs all passed or all failed."""
    pairwise_agreement: float | None
    """Mean over samples of the share of epoch pairs with the same pass/fail outcome."""


def epoch_stats(columns: RunColumns, epochs: int) -> EpochStats:
    """pass@1 and pass@``epochs`` with the unbiased estimator, and the per-sample agreement across epochs.

    A sample's n is the number of its epochs recorded and c the number that passed (an error fails).
    """
    if columns.n == 0:
        return EpochStats(0, epochs, None, None, 0, None, None)
    _, group = np.unique(columns.sample_hash, axis=0, return_inverse=True)
    group = group.reshape(-1)
    n = np.bincount(group)
    c = np.bincount(group, weights=(columns.passed & ~columns.error).astype(np.float64)).astype(np.int64)
    # pass@k depends only on (n, c) and n <= epochs in practice: tabulate it instead of calling per sample.
    table: dict[tuple[int, int, int], float] = {}

    def estimate(k: int) -> tuple[float | None, int]:
        eligible = n >= k
        if not eligible.any():
            return None, 0
        pairs = np.stack((n[eligible], c[eligible]), axis=1)
        unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
        values = np.array([table.setdefault((int(a), int(b), k), pass_at_k(int(a), int(b), k)) for a, b in unique])
        return float(values[inverse.reshape(-1)].mean()), int(eligible.sum())

    at_1, _ = estimate(1)
    at_k, complete = estimate(epochs)
    multi = n >= 2
    agreement = pairwise = None
    if multi.any():
        nm, cm = n[multi].astype(np.float64), c[multi].astype(np.float64)
        agreement = float(np.mean((cm == 0) | (cm == nm)))
        pairs_total = nm * (nm - 1) / 2
        pairwise = float(np.mean((cm * (cm - 1) / 2 + (nm - cm) * (nm - cm - 1) / 2) / pairs_total))
    return EpochStats(int(n.size), epochs, at_1, at_k, complete, agreement, pairwise)


@dataclass(frozen=True)
class ScorerDistribution:
    """The values one scorer gave: summary statistics and a 10-bin histogram over [0, 1]."""

    name: str
    n: int
    mean: float | None
    median: float | None
    std: float | None
    p10: float | None
    p90: float | None
    histogram: list[int]
    """Counts in the bins [0, 0.1), [0.1, 0.2), ..., [0.9, 1.0]."""


def scorer_distribution(name: str, values: F64, bins: int = 10) -> ScorerDistribution:
    """Summary of one scorer's values (NaN = no value, skipped)."""
    known = values[~np.isnan(values)]
    counts, _ = np.histogram(np.clip(known, 0.0, 1.0), bins=bins, range=(0.0, 1.0))
    if not known.size:
        return ScorerDistribution(name, 0, None, None, None, None, None, counts.tolist())
    p10, median, p90 = np.percentile(known, [10, 50, 90]).tolist()
    return ScorerDistribution(
        name=name,
        n=int(known.size),
        mean=float(known.mean()),
        median=float(median),
        std=float(known.std(ddof=1)) if known.size > 1 else 0.0,
        p10=float(p10),
        p90=float(p90),
        histogram=[int(x) for x in counts],
    )


def scorer_distributions(columns: RunColumns) -> list[ScorerDistribution]:
    """One distribution per scorer, in the task's order."""
    return [scorer_distribution(name, values) for name, values in columns.scorers.items()]
