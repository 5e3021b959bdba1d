"""The on-disk response cache: one file per answer, keyed by a hash of what was asked.

``<dir>/<first two hex digits>/<sha256>.json`` holds a ``CacheEntry``: ``{"schema_version", "key",
"completion", "origin"}``. Each entry
is written to a temporary file in the same directory, fsync-ed and renamed into place, so a crash leaves
either the whole entry or none of it; an unreadable entry is treated as a miss. ``clear`` deletes only
files this module writes, never anything else a user keeps in the directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import orjson
from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from eval_harness.durable import TEMP_SUFFIX, atomic_file
from eval_harness.errors import ConfigError
from eval_harness.types import Completion

CACHE_SCHEMA_VERSION = 1
_ENTRY_SUFFIX = ".json"
# Entries, and the temporaries of atomic_file (``.KEY.json.PID.RANDOM.tmp``; ``.KEY.PID.RANDOM.tmp`` from
# earlier builds): `cache clear` deletes only what it recognises.
_OURS = re.compile(r"^([0-9a-f]{64}\.json|\.[0-9a-f]{64}(\.json)?\.\d+\.[0-9a-f]+\.tmp)$")
_SHARD = re.compile(r"[0-9a-f]{2}")


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/eval-harness/responses``, or ``~/.cache/eval-harness/responses``; a ``ConfigError`` when
    neither can be found (no HOME, and a user id without a home: a container's)."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:
            raise ConfigError(
                "the response cache has no directory: no home directory is set (HOME) or known for this user; set "
                "EVAL_HARNESS_CACHE_DIR (or, to cache info and clear, give --cache-dir)"
            ) from None
    return Path(base) / "eval-harness" / "responses"


SCORED_EPOCH: ContextVar[int | None] = ContextVar("eval_harness_scored_epoch", default=None)
"""The epoch of the record being scored, set by the runner around its scoring: a judge's call is keyed by it too."""


def cache_key(
    scope: str,
    model: str,
    body: Any,
    epoch: int = 0,
    stop_applied: list[str] | None = None,
    scored_epoch: int | None = None,
) -> str:
    """sha256 of (provider scope, model, full request body, epoch, the stop sequences the provider cuts the answer
    at itself when the API takes none, and, for a judge, the epoch of the record it judges).

    The epoch is part of the key so that ``--epochs K`` draws K answers instead of replaying the first. A judge's
    request carries its own call index as its epoch; without the record's epoch, epoch 1 of a sample whose answer
    equals epoch 0's got epoch 0's verdict from the cache (free, or charged twice after a kill).
    """
    payload: dict[str, Any] = {"scope": scope, "model": model, "body": body, "epoch": epoch}
    if stop_applied:  # only then: the keys of every other request stay what they were
        payload["stop_applied"] = stop_applied
    if scored_epoch:  # a judge's call beyond epoch 0 (the model's keys, and epoch 0's, stay what they were)
        payload["scored_epoch"] = scored_epoch
    return hashlib.sha256(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass(frozen=True)
class CacheInfo:
    """What a cache directory holds."""

    directory: Path
    entries: int
    bytes: int
    temp_files: int


class Origin(NamedTuple):
    """The run (its directory, and when it was created), session and record that paid for a cached answer."""

    run: str
    session: int
    created_at: str | None = None
    """The run's ``created_at``: a run deleted and started again under the same directory is another run."""
    record: str | None = None
    """The record the answer was paid for (``sample_id``, epoch): another sample of the same prompt is not it."""

    def earlier_session_of(self, other: Origin) -> bool:
        """Whether this is another session of ``other``'s run that paid for ``other``'s record without recording
        it (a kill between the two). An entry written before the run's creation and the record were kept
        (``None``) is judged by the directory alone, as it was then."""
        return (
            self.run == other.run
            and self.session != other.session
            and self.created_at in (None, other.created_at)
            and self.record in (None, other.record)
        )


_Paid = tuple[StrictStr, StrictInt, StrictStr | None, StrictStr | None]
"""An ``Origin`` as an entry stores it."""


class CacheEntry(BaseModel):
    """One cache file: the answer to one request, and the run session that paid for it (the format on disk)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    schema_version: Literal[1] = Field(description="CACHE_SCHEMA_VERSION: an entry of another version is a miss.")
    key: str = Field(description="The request's key, which also names the file: a file renamed by hand is a miss.")
    completion: Completion = Field(description="The answer as the provider gave it (``cached`` left out).")
    origin: _Paid | tuple[StrictStr, StrictInt] | None = Field(
        default=None,
        description="(run directory, session, the run's created_at, the record) that paid for it; (run directory, "
        "session) from a build before the other two were kept; None when not recorded.",
    )
    also_paid: list[_Paid] = Field(
        default_factory=list,
        description="Earlier payers of the same request (another sample of the same prompt, in flight at once), the "
        "answer kept being the last one's (``origin``): after a kill, each finds its own payment here.",
    )


class Entry(NamedTuple):
    """What a lookup finds: the answer, who paid for it last, and who paid for the same request before."""

    completion: Completion
    origin: Origin | None
    also_paid: tuple[Origin, ...] = ()

    def paid_by(self, asking: Origin) -> bool:
        """Whether one of the payers is an earlier session of ``asking``'s run that paid for its record without
        recording it (``Origin.earlier_session_of``)."""
        return any(paid.earlier_session_of(asking) for paid in (self.origin, *self.also_paid) if paid is not None)


_PAYERS_KEPT = 32
"""Payers an entry remembers (the latest): a prompt repeated in thousands of samples keeps its file small."""


class ResponseCache:
    """Completions stored on disk under their request's key."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}{_ENTRY_SUFFIX}"

    def check_writable(self) -> None:
        """Refuse a cache that could store nothing (a file, a read-only folder): a run with ``--cache`` would
        otherwise complete without caching a single answer, and say nothing."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryFile(dir=self.directory):
                pass
        except OSError as exc:
            # mkdir's "File exists" of a file in its place says the wrong thing
            why = "it is not a directory" if self.directory.exists() and not self.directory.is_dir() else None
            raise ConfigError(
                f"--cache: cannot write the cache directory {self.directory}: {why or exc.strerror or exc} "
                "(set EVAL_HARNESS_CACHE_DIR to another)"
            ) from None

    def get(self, key: str) -> Completion | None:
        """The stored completion for ``key``, or None (absent, torn or from another schema version)."""
        entry = self.entry(key)
        return None if entry is None else entry[0]

    def entry(self, key: str) -> Entry | None:
        """The stored completion for ``key`` and the run sessions that paid for it (None: not recorded)."""
        try:
            stored = CacheEntry.model_validate_json(self._path(key).read_bytes())
        except (OSError, ValidationError):  # absent, torn, of another version, or not ours: a miss
            return None
        if stored.key != key:
            return None
        origin = None if stored.origin is None else Origin(*stored.origin)
        return Entry(stored.completion, origin, tuple(Origin(*paid) for paid in stored.also_paid))

    def put(self, key: str, completion: Completion, origin: Origin | None = None) -> None:
        """Store ``completion`` atomically: temp file, fsync, rename (``durable.atomic_file``)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        earlier = self.entry(key) if origin is not None else None  # None too when there is no entry yet
        also_paid: list[list[Any]] = []
        if earlier is not None:  # another record paid for this request too: both payments stay known
            payers = [paid for paid in (*earlier.also_paid, earlier.origin) if paid is not None and paid != origin]
            also_paid = [list(paid) for paid in dict.fromkeys(payers)][-_PAYERS_KEPT:]
        data = orjson.dumps(
            {
                "schema_version": CACHE_SCHEMA_VERSION,
                "key": key,
                "completion": completion.model_dump(mode="json", exclude={"cached"}),
                "origin": None if origin is None else list(origin),
                "also_paid": also_paid,
            }
        )  # CacheEntry's fields, dumped from a dict: the completion's dump is the one pass that matters
        # Entries are cheap to recompute: no directory fsync per entry (a lost rename is a cache miss).
        with atomic_file(path, mode=0o600, sync_directory=False) as handle:
            handle.write(data)

    def _files(self) -> list[Path]:
        """The files named as the cache names its entries and temporaries (whatever they are: see ``info``)."""
        if not self.directory.is_dir():
            return []
        found: list[Path] = []
        for shard in self.directory.iterdir():
            if shard.is_dir() and _SHARD.fullmatch(shard.name):
                found.extend(p for p in shard.iterdir() if _OURS.match(p.name))
        return found

    def info(self) -> CacheInfo:
        """Entry count and size on disk: of regular files alone (a link or a directory under an entry's name is
        no entry of ours, and a link's size is its target's)."""
        entries = size = temps = 0
        for path in self._files():
            try:
                status = path.lstat()
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(status.st_mode):
                continue
            size += status.st_size
            if path.name.endswith(TEMP_SUFFIX):
                temps += 1
            else:
                entries += 1
        return CacheInfo(self.directory, entries, size, temps)

    def clear(self) -> tuple[int, list[Path]]:
        """Delete every entry (and leftover temp file); returns how many entries were deleted, and what could not
        be (a directory under an entry's name, a file the OS refuses to remove): the rest is deleted all the same."""
        removed = 0
        left: list[Path] = []
        for path in self._files():
            try:
                answer = stat.S_ISREG(path.lstat().st_mode)  # a link under an entry's name is removed, not counted
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError:  # a directory (IsADirectoryError, or EPERM on some systems), a read-only shard
                left.append(path)
                continue
            if answer and path.name.endswith(_ENTRY_SUFFIX):
                removed += 1
        if self.directory.is_dir():
            for shard in self.directory.iterdir():
                if shard.is_dir() and _SHARD.fullmatch(shard.name):  # only the shards entries go into
                    with contextlib.suppress(OSError):  # it holds something we did not write: leave it
                        shard.rmdir()
        return removed, left


__all__ = [
    "CACHE_SCHEMA_VERSION",
    "SCORED_EPOCH",
    "CacheEntry",
    "CacheInfo",
    "Entry",
    "Origin",
    "ResponseCache",
    "cache_key",
    "default_cache_dir",
]
