"""A compact record of the strings met so far and where: duplicate detection in bounded memory per entry.

Validation must find duplicate sample ids in files of millions of lines. A ``dict`` of id to line number
costs about 130 bytes an id (the string, the int, the table); this keeps a 96-bit key and the line of each
id in flat arrays, found through an open-addressing table of indices: 32 to 40 bytes an id. The key is the
string's own 64-bit hash (SipHash, cached on the string) and its CRC-32, two unrelated functions; two ids
with the same key are taken as equal. Among ten million distinct ids the chance that any two share a key
is below 1e-15. Written by hand because neither the standard library nor our dependencies offer a compact
set of fixed-size keys (numpy has no hash table).
"""

from __future__ import annotations

import zlib
from array import array

_EMPTY = -1


class SeenStrings:
    """Strings met so far, each with the number it was first met with (a line number)."""

    def __init__(self) -> None:
        self._keys = array("q")
        """Two numbers a string, its hash and its CRC-32, in the order first met."""
        self._where = array("q")
        self._slots = array("i", [_EMPTY]) * 1024
        """Index into ``_where`` per slot, found by linear probing from the hash's low bits."""

    def __len__(self) -> int:
        return len(self._where)

    def first(self, text: str, where: int) -> int | None:
        """Where ``text`` was first met; None when it is new, and then it is remembered as met at ``where``."""
        hashed, check = hash(text), zlib.crc32(text.encode("utf-8", "surrogatepass"))
        slots, keys = self._slots, self._keys
        mask = len(slots) - 1
        slot = hashed & mask
        while (index := slots[slot]) != _EMPTY:
            if keys[2 * index] == hashed and keys[2 * index + 1] == check:
                return self._where[index]
            slot = (slot + 1) & mask
        slots[slot] = len(self._where)
        keys.append(hashed)
        keys.append(check)
        self._where.append(where)
        if 2 * len(self._where) > len(slots):  # keep probes short: at most half the slots in use
            self._grow()
        return None

    def _grow(self) -> None:
        slots = array("i", [_EMPTY]) * (2 * len(self._slots))
        mask = len(slots) - 1
        keys = self._keys
        for index in range(len(self._where)):
            slot = keys[2 * index] & mask
            while slots[slot] != _EMPTY:
                slot = (slot + 1) & mask
            slots[slot] = index
        self._slots = slots


__all__ = ["SeenStrings"]
