"""Replacing a file so that a crash at any instant leaves either the old file or the new one, never a mix.

The one way every persisted document is written: run manifests and summaries (``artifacts``), the columns
cache (``aggregate``) and the response cache (``cache``). Below every other module: it imports nothing of
ours.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

TEMP_SUFFIX = ".tmp"


def temp_name(path: Path) -> Path:
    """A temporary beside ``path`` that no other writer (process or thread) picks: ``.NAME.PID.RANDOM.tmp``."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TEMP_SUFFIX}")


@contextmanager
def atomic_file(path: Path, mode: int = 0o644, sync_directory: bool = True) -> Iterator[BinaryIO]:
    """A file to write that replaces ``path`` when the block ends without error.

    It is written to a temporary beside ``path``, fsync'ed, renamed over ``path`` and (``sync_directory``)
    the directory fsync'ed, so that the rename itself survives a power loss. On an error the temporary is
    removed and ``path`` is untouched.
    """
    tmp = temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        # the rename too: a directory where the file should be refuses it, and the temporary must not stay
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if sync_directory:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a reader sees the old or the new file, never a mix."""
    with atomic_file(path) as handle:
        handle.write(data)


def remove_stale_temporaries(documents: Iterable[Path]) -> None:
    """Remove the temporaries (``temp_name``) of ``documents`` that a writer killed mid-write left beside them:
    those whose process is gone. A live writer's (a ``report`` saving its columns cache) is left alone."""
    by_directory: dict[Path, list[str]] = {}
    for document in documents:
        by_directory.setdefault(document.parent, []).append(re.escape(document.name))
    for directory, names in by_directory.items():
        # temp_name's form: .NAME.PID.RANDOM.tmp
        pattern = re.compile(rf"^\.(?:{'|'.join(names)})\.(\d+)\.[0-9a-f]{{8}}{re.escape(TEMP_SUFFIX)}$")
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        for entry in entries:
            found = pattern.match(entry)
            if found is not None and not _alive(int(found.group(1))):
                with contextlib.suppress(OSError):
                    (directory / entry).unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # another user's process, or a pid no process has: keep what may be someone's
    return True


__all__ = ["TEMP_SUFFIX", "atomic_file", "remove_stale_temporaries", "temp_name", "write_atomic"]
