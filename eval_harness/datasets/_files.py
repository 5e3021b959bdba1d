"""Byte access to a dataset file: open it (refusing what is not a regular file), read gzip through, hash it.

The first bytes also tell a file that is not UTF-8 text at all (``_FOREIGN_MAGIC``: UTF-16, a zip archive, Parquet).

The scan reads through ``_HashingReader``, which feeds every byte it reads to the sha256, so one pass both
validates and hashes; ``_read_line`` reads one line at most ``MAX_LINE_BYTES`` long, discarding the rest of a
longer one unparsed.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import stat
import typing
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from eval_harness.errors import DatasetUnreadableError

MAX_LINE_BYTES = 10 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_FOREIGN_MAGIC = {
    b"\xff\xfe": "it is UTF-16 encoded; save it as UTF-8",
    b"\xfe\xff": "it is UTF-16 encoded; save it as UTF-8",
    b"PK\x03\x04": "it is a zip archive, not JSONL",
    # a Hugging Face download's usual format
    b"PAR1": "it is a Parquet file, which is not read: convert it to JSONL (pandas: "
    "read_parquet(path).to_json(out, orient='records', lines=True))",
}


def file_sha256(path: Path) -> str:
    """sha256 of the file's bytes (decompressed, for a gzip file)."""
    digest = hashlib.sha256()
    with _open(path) as handle, _gzip_errors(path):
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def why_missing(path: Path) -> str:
    """Why a file that was not found is not there, in a message's words: a symbolic link whose target is gone is
    listed in its directory, so "no such file" would contradict what ``ls`` shows."""
    try:
        target = os.readlink(path)
    except OSError:
        return "no such file"
    return f"it is a broken symbolic link: its target {target} does not exist"


def file_stamp(path: Path) -> tuple[int, int] | None:
    """Size and modification time (ns): cheap evidence that a file was not rewritten (None: unreadable).

    The runner reads the dataset twice, to check it and then to run it; comparing this stamp taken before
    the check with one taken after the run catches a file edited in between (hashing it again would cost a
    second full read)."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status.st_size, status.st_mtime_ns


@contextlib.contextmanager
def _gzip_errors(path: Path) -> Iterator[None]:
    try:
        yield
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise DatasetUnreadableError(
            f"{path}: cannot read the dataset: the gzip data is corrupt or truncated ({exc})"
        ) from None


def is_compressed(path: Path) -> bool:
    """Whether ``path`` is gzip-compressed (read through; its byte positions are not the file's)."""
    try:
        with path.open("rb") as handle:
            return handle.read(2) == _GZIP_MAGIC
    except OSError:
        return False


def _open(path: Path) -> IO[bytes]:
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            raise DatasetUnreadableError(f"{path}: cannot read the dataset: it is a directory")
        if not stat.S_ISREG(mode):
            # a pipe (`<(cmd)`, a FIFO) or a device: it is read twice, to check it and to run it, and a pipe
            # would hang the second read or end it empty
            raise DatasetUnreadableError(
                f"{path}: cannot read the dataset: it is not a regular file (a pipe or a device); "
                "the dataset is read more than once: save it to a file first"
            )
        handle = path.open("rb")
        if handle.peek(2)[:2] != _GZIP_MAGIC:
            return handle
        # read through: HumanEval ships as .jsonl.gz; the sha256 and the lines are the decompressed ones
        handle.close()
        return typing.cast(IO[bytes], gzip.open(path, "rb"))  # it closes the file it opens
    except FileNotFoundError:
        raise DatasetUnreadableError(f"{path}: cannot read the dataset: {why_missing(path)}") from None
    except OSError as exc:
        raise DatasetUnreadableError(f"{path}: cannot read the dataset: {exc.strerror}") from None


class _HashingReader:
    """Feeds every byte read to a digest (when given one), so one pass both validates and hashes."""

    def __init__(self, raw: IO[bytes], digest: hashlib._Hash | None) -> None:
        self._raw = raw
        self._digest = digest

    def readline(self, limit: int = -1) -> bytes:
        data = self._raw.readline(limit)
        if self._digest is not None:
            self._digest.update(data)
        return data

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        if self._digest is not None:
            self._digest.update(data)
        return data


class _HashingRaw(io.RawIOBase):
    """The same, as a raw stream, so that the csv module can read through a TextIOWrapper."""

    def __init__(self, reader: _HashingReader) -> None:
        self._reader = reader

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._reader.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _read_line(reader: _HashingReader) -> tuple[bytes, bool, int]:
    """One line, whether it exceeded ``MAX_LINE_BYTES`` (then it is discarded), and the bytes consumed."""
    line = reader.readline(MAX_LINE_BYTES + 1)
    if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
        return line, False, len(line)
    consumed = len(line)
    while line and not line.endswith(b"\n"):
        line = reader.readline(1 << 20)
        consumed += len(line)
    return b"", True, consumed


__all__ = ["MAX_LINE_BYTES", "file_sha256", "file_stamp", "is_compressed", "why_missing"]
