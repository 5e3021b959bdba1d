"""A chunk of complete lines as a padded byte array (``_Buffer``): its comma positions, the keys found at
them, and the JSON numbers, integers, literals and names read from byte spans, all with numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray

from eval_harness.aggregate._arrays import F64, I64, U64, Bool
from eval_harness.aggregate._hashing import _FULL, _MASKS, _hash_spans, _masked_words, _words

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


_QUOTES = np.uint64(0x2222222222222222)
_BACKSLASHES = np.uint64(0x5C5C5C5C5C5C5C5C)
_LOW_BITS = np.uint64(0x0101010101010101)
_HIGH_BITS = np.uint64(0x8080808080808080)


def _has_zero_byte(words: U64) -> Bool:
    """Whether each word has a zero byte (the SWAR test: exact, with no false positives)."""
    result: Bool = ((words - _LOW_BITS) & ~words & _HIGH_BITS) != 0
    return result


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
        return self._free_of(start, end, (_BACKSLASHES,))

    def plain(self, start: I64, end: I64) -> Bool:
        """Whether each span is short enough for the fast path and holds no quote or backslash: a JSON string's
        text that reads as its bytes."""
        return self._free_of(start, end, (_QUOTES, _BACKSLASHES))

    def _free_of(self, start: I64, end: I64, repeated: Sequence[np.uint64]) -> Bool:
        """Whether each span is at most ``_MAX_NAME_BYTES`` long and holds none of the bytes that ``repeated``
        (each a byte eight times over) are made of: eight bytes at a time."""
        length = end - start
        ok = (length >= 0) & (length <= _MAX_NAME_BYTES)
        if not ok.any():
            return ok
        length = np.where(ok, length, 0)
        at = np.maximum(start, 0)
        for j in range(-(-int(length.max()) // 8)):
            word = _masked_words(self.words, at, length, j)
            # a byte of word ^ byte is zero where it is that byte (the zeros past the span's end become nonzero)
            for byte in repeated:
                ok &= ~_has_zero_byte(word ^ byte)
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


__all__ = []
