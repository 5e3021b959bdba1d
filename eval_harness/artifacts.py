"""Run directories: the crash-safe on-disk format.

``results/<run_id>/``
  ``manifest.json``  written atomically (temp file, fsync, rename, fsync of the directory)
  ``samples.jsonl``  append-only; one record per line, each line written by a single ``write`` call
  ``summary.json``   written atomically at the end of every session
  ``.lock``          ``flock``-ed by the process writing the run; the kernel drops it when the process dies

A process killed at any instant leaves a samples file whose complete lines are all valid; at most the
last line is torn (it has no newline). Readers drop it and resume truncates it before appending. When a
key ``(sample_id, epoch)`` occurs more than once (``--retry-errors``), the last record wins.

Each file is read only when it is a regular file (a symbolic link to one is followed): a run directory unpacked
from elsewhere may hold a pipe, which blocks a reader for ever, or a link to a device such as /dev/zero, one
endless line. The manifest, the records and the lock are refused by name; the resume point and the columns cache,
which only save time, are ignored and replaced.
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, Final, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from eval_harness.durable import write_atomic
from eval_harness.errors import ArtifactError, RunLockedError, SchemaVersionError, json_type_name
from eval_harness.types import (
    RESERVED_AXIS,
    RESERVED_AXIS_MESSAGE,
    SCHEMA_VERSION,
    ResumePoint,
    RunManifest,
    RunStatus,
    RunSummary,
    SampleRecord,
    beyond_epochs,
    first_problem,
)

_MANIFEST = "manifest.json"
_SAMPLES = "samples.jsonl"
_SUMMARY = "summary.json"
_LOCK = ".lock"
_RESUME_POINT = ".resume.json"
COLUMNS_CACHE = ".columns.npz"
"""The columns cache ``aggregate`` keeps beside samples.jsonl."""
_DIGEST_BYTES = 4096

# Records are written by pydantic with ``sample_id`` then ``epoch`` first and no spaces, so the key of a
# line can be read without parsing it: resuming over a million records takes a second, not ten.
_KEY_PREFIX = re.compile(rb'\{"sample_id":"((?:[^"\\]|\\.)*)","epoch":(\d+),')
_ERROR_MARK = b',"error":{"type":'


_second_text: tuple[int, str] = (-1, "")  # utc_now's last second and its text


def utc_now() -> str:
    """UTC time in ISO 8601 with milliseconds; the text of the second is reused, as this runs once per record."""
    global _second_text
    second, millisecond = divmod(time.time_ns() // 1_000_000, 1000)
    if second != _second_text[0]:
        _second_text = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
    return f"{_second_text[1]}.{millisecond:03d}Z"


def new_run_id() -> str:
    """A sortable, unique default run id: UTC timestamp plus a short random suffix."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)  # a scorer's odd metadata value must not stop the run


def record_line(fields: Mapping[str, Any]) -> bytes:
    """One samples.jsonl line from a record's fields, given in ``SampleRecord``'s field order and with
    values it would accept; the runner's way to write a record without building and validating one
    (a sixth of the harness's CPU per sample). Tests hold this to ``SampleRecord``'s own JSON."""
    return orjson.dumps(fields, default=_jsonable, option=orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY)


def record_key(sample_id: str, epoch: int) -> str:
    """The identity of a record as one string (cheaper to hold a million of than tuples)."""
    return f"{sample_id}\x1f{epoch}"


@dataclass(frozen=True)
class RunPaths:
    """The files of one run directory."""

    dir: Path

    @property
    def manifest(self) -> Path:
        return self.dir / _MANIFEST

    @property
    def samples(self) -> Path:
        return self.dir / _SAMPLES

    @property
    def summary(self) -> Path:
        return self.dir / _SUMMARY

    @property
    def lock(self) -> Path:
        return self.dir / _LOCK

    @property
    def resume_point(self) -> Path:
        return self.dir / _RESUME_POINT

    @property
    def documents(self) -> tuple[Path, ...]:
        """The files replaced whole (``durable.atomic_file``), whose temporaries a killed writer may leave."""
        return (self.manifest, self.summary, self.resume_point, self.dir / COLUMNS_CACHE)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _not_regular(path: Path, mode: int) -> ArtifactError:
    """The refusal of a run file that is not a regular file (``mode`` as ``stat`` gives it), naming what it is."""
    return ArtifactError(f"{path}: not a regular file ({_kind(mode)})")


def _open_regular(path: Path, flags: int) -> int:
    """A descriptor of ``path`` opened with ``flags`` (a new file is 0o644), or ``ArtifactError`` naming it when
    it is not a regular file (a symbolic link to one is followed). A pipe would block the open, or the read, for
    ever, and a device (a link to /dev/zero) is one endless line that fills memory, with Ctrl-C unheard; opened
    without blocking, the file is told by what it is before a byte is read. ``FileNotFoundError`` and other
    ``OSError`` propagate."""
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, 0o644)
    except IsADirectoryError:  # an open for writing is refused before fstat could tell it
        raise _not_regular(path, stat.S_IFDIR) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_run_file(path: Path) -> BinaryIO:
    """``path`` opened for reading, or ``ArtifactError`` naming it when it is not a regular file (``_open_regular``)."""
    return os.fdopen(_open_regular(path, os.O_RDONLY), "rb")


def regular_status(path: Path) -> os.stat_result | None:
    """``stat`` of ``path`` (through a symbolic link), None when it does not exist, ``ArtifactError`` naming it when
    it is not a regular file: told without opening it (a pipe's ``open`` blocks)."""
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(status.st_mode):
        raise _not_regular(path, status.st_mode)
    return status


def check_run_files(paths: RunPaths) -> None:
    """Refuse a run whose manifest or records file is there but is not a regular file, or whose summary is a
    directory, which the summary's atomic replacement cannot replace (a pipe or a link to a device is replaced
    like a file): checked before a session starts, as a refusal at its end would come after it changed the run."""
    regular_status(paths.manifest)
    regular_status(paths.samples)
    try:
        summary = paths.summary.lstat()
    except OSError:
        return
    if stat.S_ISDIR(summary.st_mode):
        raise ArtifactError(f"{paths.summary}: cannot write it: it is a directory")


def write_model(path: Path, model: BaseModel) -> None:
    """Write a pydantic document atomically, pretty-printed for humans; ``ArtifactError`` names the file when
    the disk refuses (the old document stays whole)."""
    data = orjson.dumps(model.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n"
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot write it: {exc.strerror or exc}") from exc


_Document = TypeVar("_Document", bound=BaseModel)


def _read_document(path: Path, model: type[_Document]) -> _Document:
    try:
        with open_run_file(path) as handle:
            raw = orjson.loads(handle.read())
    except FileNotFoundError:
        raise ArtifactError(f"{path}: not found; is {path.parent} a run directory?") from None
    except NotADirectoryError:  # --run results/r1/summary.json, /dev/null
        raise ArtifactError(f"{path.parent} is a file, not a run directory") from None
    except (OSError, orjson.JSONDecodeError) as exc:
        raise ArtifactError(f"{path}: cannot read: {exc}") from None
    if not isinstance(raw, dict):
        raise ArtifactError(f"{path}: expected a JSON object")
    version = raw.get("schema_version")
    if version != SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{path}: schema_version {version!r} cannot be read by this build (it reads {SCHEMA_VERSION})"
        )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        location, message = first_problem(exc)
        raise ArtifactError(f"{path}: {location}: {message}") from None


def read_manifest(run_dir: Path | str) -> RunManifest:
    """The manifest of ``run_dir``, checked against this build's schema version."""
    return _read_document(RunPaths(Path(run_dir)).manifest, RunManifest)


def tail_digest(path: Path, length: int) -> str:
    """sha256 of the last 4 KB of the first ``length`` bytes: with the length, it names an append-only file's
    prefix well enough to notice that the file was replaced or rewritten."""
    import hashlib

    with path.open("rb") as handle:
        handle.seek(max(0, length - _DIGEST_BYTES))
        return hashlib.sha256(handle.read(min(length, _DIGEST_BYTES))).hexdigest()


def records_stamp(run_dir: Path) -> tuple[int, str]:
    """A run's samples.jsonl as it is now: its size and ``tail_digest``, which an append or a rewrite changes."""
    samples = RunPaths(run_dir).samples
    size = samples.stat().st_size
    return size, tail_digest(samples, size)


def read_resume_point(run_dir: Path) -> ResumePoint | None:
    """The run's resume point if it still describes its samples.jsonl, else None (read everything)."""
    paths = RunPaths(run_dir)
    try:
        with open_run_file(paths.resume_point) as handle:
            point = ResumePoint.model_validate_json(handle.read())
        samples = regular_status(paths.samples)
        if samples is None:
            return None
        size = samples.st_size
    except (OSError, ValueError, ArtifactError):  # a cache: whatever is wrong with it, every record is read
        return None
    if point.schema_version != SCHEMA_VERSION or point.samples_bytes > size:
        return None
    if tail_digest(paths.samples, point.samples_bytes) != point.samples_digest:
        return None
    return point


def read_summary(run_dir: Path | str) -> RunSummary:
    """The summary of ``run_dir``."""
    paths = RunPaths(Path(run_dir))
    if not paths.summary.exists() and paths.manifest.exists() and not paths.summary.is_symlink():
        # a session stopped before it wrote one (an API caller's cancellation, a kill): the run is one
        raise ArtifactError(
            f"{paths.summary}: not found: no session of the run has written its summary yet (one was stopped "
            "first); resume the run, or read its records with build_report"
        )
    return _read_document(paths.summary, RunSummary)


class RunLock:
    """An exclusive ``flock`` on the run directory, released by the kernel if the process dies."""

    def __init__(self, run_dir: Path) -> None:
        self._path = RunPaths(run_dir).lock
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        fd = _open_regular(self._path, os.O_RDWR | os.O_CREAT)  # flock refuses a pipe with a bare EINVAL
        try:
            _flock_soon(fd, fcntl.LOCK_EX)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunLockedError(
                f"{self._path.parent} is being written by another process (pid {holder}); "
                "wait for it to finish or stop it first"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _flock_soon(fd: int, operation: int) -> None:
    """``flock`` without blocking, tried again once a moment later: a reader's probe (:func:`writer_pid`)
    holds the lock for microseconds, and a run starting in that instant must not be refused for it."""
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
    except BlockingIOError:
        time.sleep(0.05)
        fcntl.flock(fd, operation | fcntl.LOCK_NB)


def writer_pid(run_dir: Path) -> int | None:
    """The pid of the live process writing ``run_dir`` (0 if it did not say), or None when none is: the
    run's lock is free. A manifest that says "running" with no writer is a run whose process was killed."""
    path = RunPaths(run_dir).lock
    try:
        fd = _open_regular(path, os.O_RDONLY)
    except OSError:
        return None  # no lock file: no session ever took it (or it was deleted with nothing holding it)
    except ArtifactError:
        return None  # no session can take a lock that is not a file (RunLock refuses it)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        text = os.read(fd, 64).decode(errors="replace").strip()
        return int(text) if text.isdigit() else 0
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def observed_status(run_dir: Path, manifest: RunManifest) -> RunStatus:
    """The run's status as a reader should state it: the manifest's, except that a run whose manifest
    still says "running" while no process holds its lock was stopped without closing it (SIGKILL, a
    crash, a lost machine) and is "interrupted", to be resumed. The manifest itself is left as it is."""
    if manifest.status == "running" and writer_pid(run_dir) is None:
        return "interrupted"
    return manifest.status


class SampleWriter:
    """Appends records to samples.jsonl: one ``write`` per line, ``fsync`` at most every interval.

    A line reaches the page cache when ``append`` returns, so killing the process loses nothing already
    appended; an OS crash or power loss can lose the records of the last ``fsync_interval_s`` seconds (plus
    the fsync then in progress). ``sync_soon`` runs the fsync in the writer's own thread: an fsync takes
    milliseconds, and on the event loop it stalled every sample in flight (a few percent of a run's time).
    """

    def __init__(self, path: Path, fsync_interval_s: float = 0.5) -> None:
        self._path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._interval = fsync_interval_s
        self._last_sync = time.monotonic()
        self._dirty = False
        self._syncing: Future[None] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self.written = 0
        self.size = os.fstat(self._fd).st_size

    def append(self, record: SampleRecord | Mapping[str, Any]) -> bool:
        """Write one record (a ``SampleRecord``, or its fields in that order: see ``record_line``); True when
        an fsync is due (call ``sync_soon`` or ``sync``). A failed write (a full disk, a file size limit)
        takes back the part of the line it wrote and raises ``ArtifactError`` naming the file."""
        if type(record) is dict:  # the runner's records; isinstance against a pydantic class is slower
            line = record_line(record)
        else:
            line = SampleRecord.__pydantic_serializer__.to_json(record) + b"\n"
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            self._take_back_torn_line()
            raise ArtifactError(
                f"{self._path}: cannot append a record: {exc.strerror or exc} (the records before it are kept)"
            ) from exc
        self.written += 1
        self.size += len(line)
        self._dirty = True
        return time.monotonic() - self._last_sync >= self._interval

    def _take_back_torn_line(self) -> None:
        # when the file cannot be cut (a device, a failing disk), the next session's repair_tail drops the tail
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self.size)

    def sync_soon(self, then: Callable[[int], None] | None = None) -> None:
        """Make the file durable up to its current size in the writer's thread, then call ``then(size)``
        there; returns at once. While an earlier one runs, this does nothing (the next due one retries)."""
        self._raise_background_error()
        if self._syncing is not None:
            return
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="samples-fsync")
        size = self.size
        self._dirty = False
        self._last_sync = time.monotonic()
        self._syncing = self._executor.submit(self._sync_then, size, then)

    @property
    def syncing(self) -> bool:
        """True while a ``sync_soon`` is still running."""
        return self._syncing is not None and not self._syncing.done()

    def _sync_then(self, size: int, then: Callable[[int], None] | None) -> None:
        self._fsync()
        if then is not None:
            then(size)

    def _raise_background_error(self) -> None:
        syncing = self._syncing
        if syncing is not None and syncing.done():
            self._syncing = None
            syncing.result()  # re-raises what failed in the thread (a full disk: ArtifactError)

    def sync(self) -> None:
        """Make the file durable now (after any sync in progress)."""
        if self._syncing is not None:
            self._syncing.result()
            self._syncing = None
        if self._dirty:
            self._fsync()
            self._dirty = False
        self._last_sync = time.monotonic()

    def _fsync(self) -> None:
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise ArtifactError(f"{self._path}: cannot make the records durable: {exc.strerror or exc}") from exc

    def close(self) -> None:
        try:
            self.sync()
        finally:
            if self._executor is not None:
                self._executor.shutdown()
            os.close(self._fd)


def repair_tail(path: Path) -> int:
    """Truncate a torn last line (no trailing newline); return how many bytes were dropped. ``ArtifactError``
    for a file that is not a regular one."""
    if regular_status(path) is None:
        return 0
    with path.open("r+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        position = size
        chunk = 1 << 16
        while position > 0:
            start = max(0, position - chunk)
            handle.seek(start)
            block = handle.read(position - start)
            newline = block.rfind(b"\n")
            if newline != -1:
                keep = start + newline + 1
                break
            position = start
        else:
            keep = 0
        if keep < size:
            handle.truncate(keep)
            handle.flush()
            os.fsync(handle.fileno())
        return size - keep


@dataclass
class KeyScan:
    """What a resume needs to know of an existing samples file."""

    done: set[str] = field(default_factory=set)
    errored: set[str] = field(default_factory=set)
    lines: int = 0
    torn_bytes: int = 0


# The fields of a record that have no default in ``SampleRecord``, and the JSON types each may have.
_REQUIRED: Final[dict[str, tuple[type, ...]]] = {
    "sample_id": (str,),
    "epoch": (int,),
    "axis": (str,),
    "input": (str, list),
    "target": (str, list),
    "prompt": (list,),
    "finished_at": (str,),
}
_TYPE_NAMES: Final = {str: "a string", int: "an integer", list: "a list"}
# What follows the key on a line written by this build: the required fields of ``_REQUIRED`` after the
# epoch, in ``SampleRecord``'s order (found in turn, so the search passes over a line once at most).
_AXIS_AFTER_KEY = b'"axis":"'
_RESERVED_AXIS_AFTER_KEY = _AXIS_AFTER_KEY + RESERVED_AXIS.encode() + b'"'
_REQUIRED_MARKS: Final = (b',"input":', b',"target":', b',"prompt":[', b',"finished_at":"')
_STRING_OR_LIST_MARKS: Final = _REQUIRED_MARKS[:2]
_VERSION_MARK = b'"schema_version":'


def record_problem(record: object, epochs: int | None = None) -> tuple[str, str] | None:
    """Why a parsed samples.jsonl line is not a record of this schema version, as ``(field, message)``;
    None when it is one as far as readers care. Cheap on purpose (a few dict look-ups, no validation of
    the whole record): it tells a record from a stub or a line of another schema, not a subtly bad one.
    Of the values it looks at, the epoch has a range (0 or more, and below the run's ``epochs`` when given: the
    manifest's), which the key of every reader holds, and the axis may not be the report's row for the whole
    run (``RESERVED_AXIS``)."""
    if not isinstance(record, dict):
        return "line", f"expected a JSON object, got {json_type_name(record)}"
    if "schema_version" in record and record["schema_version"] != SCHEMA_VERSION:
        return (
            "schema_version",
            f"{record['schema_version']!r} cannot be read by this build (it reads {SCHEMA_VERSION})",
        )
    for name, types in _REQUIRED.items():
        if name not in record:
            return name, "required field missing"
        value = record[name]
        if not isinstance(value, types) or isinstance(value, bool):
            expected = " or ".join(_TYPE_NAMES[t] for t in types)
            return name, f"expected {expected}, got {json_type_name(value)}"
        if name == "epoch" and isinstance(value, int) and value < 0:
            return name, f"expected a non-negative integer, got {value}"
        if name == "epoch" and isinstance(value, int) and epochs is not None and value >= epochs:
            return name, beyond_epochs(value, epochs)
        if name == "axis" and value == RESERVED_AXIS:
            return name, RESERVED_AXIS_MESSAGE
    return None


def line_number_at(path: Path, offset: int) -> int:
    """1-based number of the line starting at byte ``offset`` (for error messages only: reads the bytes before)."""
    count = 0
    with path.open("rb") as handle:
        while offset > 0:
            block = handle.read(min(offset, 1 << 24))
            if not block:
                break
            count += block.count(b"\n")
            offset -= len(block)
    return count + 1


def record_error(path: Path, line: int, problem: tuple[str, str] | None) -> ArtifactError:
    """The error for line ``line`` of ``path``: ``problem`` from ``record_problem``, or None for a line that is
    not JSON at all. A record of another schema version is a ``SchemaVersionError``."""
    if problem is None:
        return ArtifactError(f"{path}:{line}: not a sample record ({_why_not_json(path, line)}); the file is damaged")
    field_name, message = problem
    if field_name == "schema_version":
        return SchemaVersionError(f"{path}:{line}: schema_version {message}")
    return ArtifactError(
        f"{path}:{line}: {field_name}: {message}; not a sample record of schema version {SCHEMA_VERSION}"
    )


def _why_not_json(path: Path, line: int) -> str:
    """What line ``line`` of ``path`` is instead of a JSON object, read again for the error (so what to repair by
    hand is said): an empty line, the JSON parser's complaint, another JSON value."""
    try:
        with open_run_file(path) as handle:
            raw = next(itertools.islice(handle, line - 1, None), b"")
    except OSError as exc:
        return f"cannot read it again: {exc.strerror or exc}"
    if not raw.strip():
        return "an empty line"
    try:
        value = orjson.loads(raw.rstrip(b"\r\n"))  # with its newline, the parser counts the column on a line 2
    except orjson.JSONDecodeError as exc:
        return f"not JSON: {exc}"
    return f"a JSON {type(value).__name__}, not an object" if not isinstance(value, dict) else "not a record"


class _BadLine(Exception):
    """A complete line that is not a record: ``problem`` as ``record_problem`` gives it, None when not JSON."""

    def __init__(self, problem: tuple[str, str] | None) -> None:
        super().__init__(problem)
        self.problem = problem


def _looks_complete(line: bytes, after_key: int) -> bool:
    """Whether a line whose key was read without parsing has the fields ``record_problem`` requires, in this
    build's order and shape, and no schema_version; False sends the line to the full check."""
    if not line.startswith(_AXIS_AFTER_KEY, after_key) or line.startswith(_RESERVED_AXIS_AFTER_KEY, after_key):
        return False
    position = after_key
    for mark in _REQUIRED_MARKS:
        position = line.find(mark, position)
        if position < 0:
            return False
        position += len(mark)
        # input and target are a string or a list (of messages, of references), as the other readers check
        if mark in _STRING_OR_LIST_MARKS and line[position : position + 1] not in (b'"', b"["):
            return False
    return _VERSION_MARK not in line


def _parse_key(line: bytes, epochs: int | None = None) -> tuple[str, bool]:
    """The key of a line and whether it holds an error; raises ``_BadLine`` for a line that is not a record (of a
    run of ``epochs``, when given)."""
    match = _KEY_PREFIX.match(line)
    if match is not None and _looks_complete(line, match.end()):
        raw_id, epoch = match.group(1), int(match.group(2))
        if epochs is not None and epoch >= epochs:
            raise _BadLine(("epoch", beyond_epochs(epoch, epochs)))
        sample_id = orjson.loads(b'"' + raw_id + b'"') if b"\\" in raw_id else raw_id.decode()
        return record_key(sample_id, epoch), _ERROR_MARK in line
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise _BadLine(None) from None
    problem = record_problem(obj, epochs)
    if problem is not None:
        raise _BadLine(problem)
    return record_key(obj["sample_id"], obj["epoch"]), obj.get("error") is not None


def _complete_lines(path: Path, start: int = 0) -> Iterator[bytes]:
    """The complete lines of the file from byte ``start``; a torn last line (no newline) is skipped."""
    try:
        handle = open_run_file(path)
    except FileNotFoundError:
        return
    with handle:
        handle.seek(start)
        for line in handle:
            if line.endswith(b"\n"):
                yield line


def judged_records(path: Path, fields: Sequence[str]) -> Iterator[dict[str, Any]]:
    """``fields`` of the latest record of every key among the lines that hold a judge's verdict (``"judge":"``
    in their score metadata); the other lines are not parsed at all. A line that is not JSON raises
    ``ArtifactError`` naming file and line; the fields are not checked again (its callers read the run's
    columns first, which refuse any line that is not a record of this schema version)."""
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    for index, line in enumerate(_complete_lines(path)):
        if b'"judge":"' not in line:
            continue
        try:
            record = orjson.loads(line)
            latest[(record["sample_id"], record["epoch"])] = {name: record.get(name) for name in fields}
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise record_error(path, index + 1, None) from None
    yield from latest.values()


def scan_keys(path: Path, start: int = 0, epochs: int | None = None) -> KeyScan:
    """Keys already recorded (from byte ``start`` on) and, among them, those whose last record holds an error.

    A complete line that is not a record of this schema version (nor of a run of ``epochs``, when given: a key
    of another epoch is one no session of the run looks for) raises ``ArtifactError`` naming the file, its line
    (counted from the top of the file) and the field."""
    scan = KeyScan()
    offset = start
    for line in _complete_lines(path, start):
        try:
            key, has_error = _parse_key(line, epochs)
        except _BadLine as exc:
            raise record_error(path, line_number_at(path, offset), exc.problem) from None
        offset += len(line)
        scan.lines += 1
        scan.done.add(key)
        if has_error:
            scan.errored.add(key)
        else:
            scan.errored.discard(key)
    return scan


def _indexed_record_dicts(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The latest record of every key with its 1-based line number (see ``iter_record_dicts``)."""
    seen: set[str] = set()
    last_line_of: dict[str, int] = {}
    for index, line in enumerate(_complete_lines(path)):
        try:
            key, _ = _parse_key(line)
        except _BadLine as exc:
            raise record_error(path, index + 1, exc.problem) from None
        if key in seen:
            last_line_of[key] = index
        else:
            seen.add(key)
    del seen
    for index, line in enumerate(_complete_lines(path)):
        try:
            record: dict[str, Any] = orjson.loads(line)
        except orjson.JSONDecodeError:
            # the key was read without parsing the line, or the file changed since the first pass
            raise record_error(path, index + 1, None) from None
        problem = record_problem(record)
        if problem is not None:  # the first pass checked only the shape of lines this build writes
            raise record_error(path, index + 1, problem)
        if last_line_of:
            key = record_key(record["sample_id"], record["epoch"])
            if last_line_of.get(key, index) != index:
                continue
        yield index + 1, record


def iter_record_dicts(path: Path) -> Iterator[dict[str, Any]]:
    """Stream the latest record of every key as a plain dict (fast: no model validation).

    Two passes: the first finds keys recorded more than once (rare: only ``--retry-errors`` makes
    them), the second yields each line unless a later line of the same key supersedes it. A complete line
    that is not a record of this schema version (not JSON, a required field missing or of the wrong type,
    another ``schema_version``) raises ``ArtifactError`` naming the file, the line and the field.
    """
    for _, record in _indexed_record_dicts(path):
        yield record


def iter_records(path: Path | str) -> Iterator[SampleRecord]:
    """Stream the latest record of every key as validated ``SampleRecord`` models; a record that does not
    validate raises ``ArtifactError`` naming the file, the line and the field, and so does a file that is not
    there (a mistyped path read as an empty run)."""
    path = Path(path)
    if not path.exists():
        raise ArtifactError(f"{path}: not found (a run's records are RUN_DIR/samples.jsonl)")
    for line, raw in _indexed_record_dicts(path):
        try:
            yield SampleRecord.model_validate(raw)
        except ValidationError as exc:
            location, message = first_problem(exc)
            raise ArtifactError(f"{path}:{line}: {location}: {message}") from None


__all__ = [
    "COLUMNS_CACHE",
    "KeyScan",
    "RunLock",
    "RunPaths",
    "SampleWriter",
    "check_run_files",
    "iter_record_dicts",
    "iter_records",
    "judged_records",
    "line_number_at",
    "new_run_id",
    "observed_status",
    "open_run_file",
    "read_manifest",
    "read_resume_point",
    "read_summary",
    "record_error",
    "record_key",
    "record_line",
    "record_problem",
    "records_stamp",
    "regular_status",
    "repair_tail",
    "scan_keys",
    "tail_digest",
    "utc_now",
    "write_model",
    "writer_pid",
]
