"""Hashing of byte spans: the 128-bit identities of sample ids, keys and names, computed with numpy; and the
8-byte word views of a buffer that the hashes and the fast path read it through.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from eval_harness.aggregate._arrays import I64, U64

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


__all__ = []
