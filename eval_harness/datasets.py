"""Datasets: stream a JSONL or CSV file into ``Sample`` records, validate every line, hash the content.

Files are read line by line in binary, so a 1 GB file never sits in memory, invalid UTF-8 is reported on
the line where it occurs, and a pathological 10 MB line is refused without being parsed.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import hashlib
import heapq
import io
import json
import re
import stat
import string
import typing
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

import orjson

from eval_harness.errors import DatasetError, DatasetUnreadableError, json_type_name
from eval_harness.seen import SeenStrings
from eval_harness.types import (
    CHOICES_PATTERN_FLAGS,
    RESERVED_AXIS,
    RESERVED_AXIS_MESSAGE,
    SAMPLE_FIELDS,
    TARGET_PATTERN_FLAGS,
    ChatMessage,
    DatasetSpec,
    Sample,
)

MAX_LINE_BYTES = 10 * 1024 * 1024
PROBLEMS_SHOWN = 50
_BOM = b"\xef\xbb\xbf"
_GZIP_MAGIC = b"\x1f\x8b"
_FOREIGN_MAGIC = {
    b"\xff\xfe": "it is UTF-16 encoded; save it as UTF-8",
    b"\xfe\xff": "it is UTF-16 encoded; save it as UTF-8",
    b"PK\x03\x04": "it is a zip archive, not JSONL",
}
_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Position:
    """Where a line of a JSONL dataset is: byte offset, 1-based line number, offset of the next line."""

    offset: int
    line: int
    next_offset: int


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a dataset, shown as ``FILE:LINE: field: message``."""

    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.message}"


@dataclass
class UnlistedLines:
    """Lines that are problems but are counted rather than listed: how many, the first and the last."""

    count: int = 0
    first: int = 0
    last: int = 0

    def add(self, line: int) -> None:
        self.count += 1
        self.first = self.first or line
        self.last = line


@dataclass
class DatasetReport:
    """The outcome of validating a whole file."""

    path: str
    sha256: str = ""
    lines: int = 0
    valid: int = 0
    blank_lines: list[int] = field(default_factory=list)
    axis_counts: Counter[str] = field(default_factory=Counter)
    duplicate_ids: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    warnings: list[str] = field(default_factory=list)
    not_json: UnlistedLines | None = None
    """Set when the first line is not JSON at all (a CSV header, text): later such lines are only counted."""

    @property
    def ok(self) -> bool:
        """True when no problem was found (blank lines and warnings are allowed)."""
        return self.problem_count == 0

    def add(self, problem: Problem) -> None:
        self.problem_count += 1
        if len(self.problems) < PROBLEMS_SHOWN:
            self.problems.append(problem)

    def add_not_json(self, line: int) -> None:
        """Count a line that is not JSON, after the first line said what the file looks like."""
        self.problem_count += 1
        if self.not_json is None:
            self.not_json = UnlistedLines()
        self.not_json.add(line)

    def problem_lines(self) -> list[str]:
        """The shown problems, then a count of the rest."""
        lines = [str(p) for p in self.problems]
        hidden = self.problem_count - len(self.problems)
        span = self.not_json
        if span is not None and span.count:
            hidden -= span.count
            which = f"line {span.first}" if span.count == 1 else f"lines {span.first}-{span.last}"
            more = "1 more line that is" if span.count == 1 else f"{span.count} more lines that are"
            lines.append(f"... and {more} not JSON either ({which}), not listed one by one")
        if hidden > 0:
            lines.append(f"... and {hidden} more problems")
        return lines


class _FieldProblem(Exception):
    def __init__(self, field_name: str, message: str, *, labelled: bool = False) -> None:
        super().__init__(message)
        self.field_name = field_name
        self.message = message
        self.labelled = labelled


@dataclass
class _ScanState:
    """State shared by validation and iteration so both derive the same ids."""

    report: DatasetReport
    validating: bool = False
    reader: str = "the file is read as JSONL"
    skip: Callable[[str, Position], bool] | None = None
    start: Position | None = None
    position: Position = field(default_factory=lambda: Position(-1, 0, -1))
    seen_ids: SeenStrings = field(default_factory=SeenStrings)
    derived_seen: Counter[str] = field(default_factory=Counter)
    overlap: OverlapWatcher | None = None


class OverlapWatcher(Protocol):
    """What ``validate_dataset`` feeds every valid line to, in its one pass (e.g. the few-shot leak check,
    ``planning._few_shot.PoolOverlap``)."""

    def see(self, sample_id: str, fields: dict[str, Any]) -> None:
        """One valid sample of the dataset, as ``Sample`` fields."""


def validate_dataset(
    path: Path, spec: DatasetSpec | None = None, *, task: str | None = None, overlap: OverlapWatcher | None = None
) -> DatasetReport:
    """Check every line of ``path``; never raises for content problems, only for an unreadable file.

    ``task`` (the name of the task that reads the file) only makes messages clearer. ``overlap`` is shown every
    valid sample of the file in the same pass (see ``OverlapWatcher``)."""
    scan = _ScanState(DatasetReport(path=str(path)), validating=True, overlap=overlap)
    if task is not None:
        scan.reader = f"task {task!r} reads JSONL"
    for _ in _scan(path, spec or DatasetSpec(), scan):
        pass
    return scan.report


def iter_samples(path: Path, spec: DatasetSpec | None = None) -> Iterator[Sample]:
    """Stream the valid samples of ``path`` in file order (call ``validate_dataset`` first)."""
    for _, sample in iter_positioned(path, spec):
        yield sample


def iter_positioned(
    path: Path,
    spec: DatasetSpec | None = None,
    skip: Callable[[str, Position], bool] | None = None,
    start: Position | None = None,
) -> Iterator[tuple[Position, Sample]]:
    """Stream ``(position, sample)`` pairs in file order.

    ``skip(sample_id, position)`` is asked before a sample is built: a resume passes over a million
    finished samples at the cost of reading their ids. ``start`` (a JSONL position from an earlier pass)
    begins the stream there instead of at the top; lines before it are not read at all.
    """
    scan = _ScanState(DatasetReport(path=str(path)), skip=skip, start=start)
    for sample in _scan(path, spec or DatasetSpec(), scan):
        yield scan.position, sample


def load_samples(path: Path, spec: DatasetSpec | None = None) -> list[Sample]:
    """Validate and load a whole (small) file, raising ``DatasetError`` listing its problems."""
    report = validate_dataset(path, spec)
    if not report.ok:
        raise DatasetError(f"{path}: {report.problem_count} problem(s) in the dataset", report.problem_lines())
    return list(iter_samples(path, spec))


def file_sha256(path: Path) -> str:
    """sha256 of the file's bytes (decompressed, for a gzip file)."""
    digest = hashlib.sha256()
    with _open(path) as handle, _gzip_errors(path):
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


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
        raise DatasetUnreadableError(f"{path}: cannot read the dataset: no such file") from None
    except OSError as exc:
        raise DatasetUnreadableError(f"{path}: cannot read the dataset: {exc.strerror}") from None


def _scan(path: Path, spec: DatasetSpec, scan: _ScanState) -> Iterator[Sample]:
    report = scan.report
    # Only validation reports the file's sha256; the runner's second pass already has it.
    digest = hashlib.sha256() if scan.validating else None
    with _open(path) as handle:
        head = handle.peek(8) if hasattr(handle, "peek") else b""
        for magic, why in _FOREIGN_MAGIC.items():
            if head.startswith(magic):
                raise DatasetUnreadableError(f"{path}: cannot read the dataset: {why}")
        if scan.start is not None:
            if spec.format != "jsonl":
                raise ValueError("only a JSONL dataset can be read from a position")
            handle.seek(scan.start.offset)
        hashing = _HashingReader(handle, digest)
        with _gzip_errors(path):
            if spec.format == "csv":
                yield from _scan_csv(path, spec, scan, hashing)
            else:
                yield from _scan_jsonl(path, spec, scan, hashing)
    if digest is None:
        return  # an iteration, or a partial read, proves nothing about the whole file
    report.sha256 = digest.hexdigest()
    if report.lines == 0 and report.problem_count == 0:
        report.add(Problem(str(path), 1, "file", "the file is empty"))
    elif report.lines == len(report.blank_lines) and report.problem_count == 0:
        report.add(Problem(str(path), 1, "file", "the file holds only blank lines"))


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


def _scan_jsonl(path: Path, spec: DatasetSpec, scan: _ScanState, reader: _HashingReader) -> Iterator[Sample]:
    report = scan.report
    where = str(path)
    lineno = scan.start.line - 1 if scan.start else 0
    offset = scan.start.offset if scan.start else 0
    while True:
        raw, too_long, consumed = _read_line(reader)
        if not raw and not too_long:
            break
        lineno += 1
        scan.position = Position(offset, lineno, offset + consumed)
        offset += consumed
        report.lines += 1
        if too_long:
            report.add(Problem(where, lineno, "line", f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MB"))
            continue
        if lineno == 1 and raw.startswith(_BOM):
            report.add(Problem(where, 1, "file", "starts with a UTF-8 byte-order mark; save it without BOM"))
            raw = raw[len(_BOM) :]
        stripped = raw.strip()
        if not stripped:
            report.blank_lines.append(lineno)
            continue
        try:
            obj = orjson.loads(stripped)  # also rejects invalid UTF-8; which of the two is found out below
        except orjson.JSONDecodeError as refused:
            try:
                text = stripped.decode("utf-8")
            except UnicodeDecodeError as exc:
                report.add(Problem(where, lineno, "line", f"invalid UTF-8 at byte {exc.start}"))
                continue
            _not_json(text, refused, scan, where, lineno)
            continue
        if not isinstance(obj, dict):
            report.add(Problem(where, lineno, "line", f"expected a JSON object, got {json_type_name(obj)}"))
            continue
        sample = _checked_sample(obj, stripped, spec, scan, where, lineno, path)
        if sample is not None:
            yield sample


def _not_json(text: str, refused: orjson.JSONDecodeError, scan: _ScanState, where: str, lineno: int) -> None:
    """Report a line that is not JSON. When the file's first line is not JSON at all (a CSV header, prose),
    one problem says what the file looks like, and later lines like it are counted instead of each saying
    "invalid JSON" again; a line that begins like JSON ('{' or '[') always gets its own JSON error."""
    report = scan.report
    meant_as_json = text.startswith(("{", "["))
    if report.not_json is not None and not meant_as_json:
        report.add_not_json(lineno)
        return
    first_line = scan.start is None and report.lines == len(report.blank_lines) + 1
    if first_line and not meant_as_json:
        report.add(
            Problem(
                where,
                lineno,
                "line",
                f"not JSON: this looks like {_looks_like(text)}; {scan.reader} (one JSON object per line)",
            )
        )
        report.not_json = UnlistedLines()
        return
    report.add(Problem(where, lineno, "line", f"invalid JSON: {_json_error(text, refused)}"))


_HEADER_CELL = re.compile(r"[A-Za-z_][\w .()/-]{0,39}")


def _looks_like(text: str) -> str:
    """What a line that is not JSON looks like: a CSV or TSV row (a header when every cell reads as a column
    name), or plain text."""
    kind, cells = ("a TSV file", text.split("\t")) if "\t" in text else ("a CSV file", next(csv.reader([text])))
    if len(cells) < 2:
        return "plain text"
    names = [cell.strip() for cell in cells]
    if all(_HEADER_CELL.fullmatch(name) for name in names):
        shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        return f"{kind} with a header row ({shown})"
    return f"{kind} ({len(cells)} columns)"


def _scan_csv(path: Path, spec: DatasetSpec, scan: _ScanState, reader: _HashingReader) -> Iterator[Sample]:
    report = scan.report
    where = str(path)
    # surrogateescape: an invalid byte becomes a lone surrogate in its row, found and reported there. A strict
    # decoder fails on the 8 KB chunk read ahead, hundreds of rows before the csv reader has reached the byte.
    text = io.TextIOWrapper(
        io.BufferedReader(_HashingRaw(reader)), encoding="utf-8-sig", errors="surrogateescape", newline=""
    )
    rows = csv.reader(text)
    columns = spec.csv_columns
    last_line = 0
    try:
        for row in rows:
            first_line, lineno = last_line + 1, rows.line_num
            last_line = lineno
            scan.position = Position(-1, lineno, -1)  # CSV records may span lines: no byte positions
            try:
                raw = "\x1f".join(row).encode("utf-8")
            except UnicodeEncodeError as exc:
                bad_line, byte = _undecodable(exc, first_line)
                if columns is None:
                    report.add(Problem(where, bad_line, "line", f"invalid UTF-8 {byte} in the header; reading stopped"))
                    return
                report.lines += 1
                report.add(Problem(where, bad_line, "line", f"invalid UTF-8 {byte}"))
                continue
            if columns is None:
                columns = [c.strip() for c in row]
                continue
            report.lines += 1
            if not row or all(not cell.strip() for cell in row):
                report.blank_lines.append(lineno)
                continue
            if len(row) != len(columns):
                message = f"expected {len(columns)} columns, got {len(row)}"
                if report.problem_count == 0 and row[0].lstrip().startswith(("{", "[")):
                    message += f" (this looks like JSONL; this file is read as CSV: {', '.join(columns)})"
                report.add(Problem(where, lineno, "row", message))
                continue
            obj: dict[str, Any] = dict(zip(columns, row, strict=True))
            sample = _checked_sample(obj, raw, spec, scan, where, lineno, path)
            if sample is not None:
                yield sample
    except csv.Error as exc:
        report.add(Problem(where, rows.line_num, "row", f"malformed CSV: {exc}"))


def _undecodable(exc: UnicodeEncodeError, first_line: int) -> tuple[int, str]:
    """The line of a CSV record (starting on ``first_line``) holding its first undecodable byte, and that byte
    as ``(byte 0xE9)``: a byte surrogateescape decoding kept is the lone surrogate U+DC00 + byte."""
    before = exc.object[: exc.start]
    # a line break inside a quoted cell is kept in the cell (newline=""): "\r\n", "\n" or "\r" alone
    breaks = before.count("\n") + before.count("\r") - before.count("\r\n")
    return first_line + breaks, f"(byte 0x{ord(exc.object[exc.start]) - 0xDC00:02X})"


def _checked_sample(
    obj: dict[str, Any], raw: bytes, spec: DatasetSpec, scan: _ScanState, where: str, lineno: int, path: Path
) -> Sample | None:
    """The line's sample, or None: a problem (reported), a skipped id, or a validation-only scan."""
    report = scan.report
    try:
        sample_id = _line_id(obj, raw, spec, scan, where, lineno)
        if scan.skip is not None and scan.skip(sample_id, scan.position):
            report.valid += 1
            return None
        fields = _sample_fields(obj, spec, path, sample_id)
    except _FieldProblem as problem:
        report.add(Problem(where, lineno, problem.field_name, problem.message))
        return None
    if scan.validating:
        first = scan.seen_ids.first(sample_id, lineno)
        if first is not None:
            report.add(Problem(where, lineno, "id", f"duplicate id {sample_id!r} (first on line {first})"))
            report.duplicate_ids.append(sample_id)
            return None
        if scan.overlap is not None:
            scan.overlap.see(sample_id, fields)
    report.valid += 1
    report.axis_counts[fields["axis"]] += 1
    return None if scan.validating else Sample(**fields)


def _line_id(obj: dict[str, Any], raw: bytes, spec: DatasetSpec, scan: _ScanState, where: str, lineno: int) -> str:
    """The sample id: the (mapped) id field, else a hash of the line, made unique among identical lines."""
    source = _source(spec, "id")
    if isinstance(source, list):
        raise _FieldProblem(",".join(source), "id must map to one field")
    try:
        sample_id = _check_id(obj.get(source))
    except _FieldProblem as problem:
        raise _FieldProblem(source, problem.message) from None
    if sample_id:
        return sample_id
    sample_id = hashlib.sha256(raw).hexdigest()[:16]
    scan.derived_seen[sample_id] += 1
    count = scan.derived_seen[sample_id]
    if count > 1:
        if scan.validating:
            scan.report.warnings.append(f"{where}:{lineno}: duplicate content; id {sample_id}-{count} was derived")
        sample_id = f"{sample_id}-{count}"
    return sample_id


def _source(spec: DatasetSpec, name: str) -> str | list[str]:
    return spec.fields.get(name, name)


_SAMPLE_FIELD_SET = frozenset(SAMPLE_FIELDS)


def _mapped(obj: dict[str, Any], spec: DatasetSpec) -> tuple[dict[str, Any], set[str] | frozenset[str]]:
    """The record's values under sample field names, and the source fields they came from."""
    if not spec.fields:
        return obj, _SAMPLE_FIELD_SET
    values: dict[str, Any] = {}
    used: set[str] = set()
    for name in SAMPLE_FIELDS:
        source = spec.fields.get(name, name)
        if isinstance(source, list):
            used.update(source)
            missing = [column for column in source if column not in obj]
            if missing:
                raise _FieldProblem(missing[0], f"missing (mapped to {name})", labelled=True)
            values[name] = [obj[column] for column in source]
        else:
            used.add(source)
            if source in obj:
                values[name] = obj[source]
    return values, used


_PLAIN_KEYS = frozenset({"id", "input", "target", "axis"})


def _plain_fields(obj: dict[str, Any], spec: DatasetSpec, sample_id: str) -> dict[str, Any] | None:
    """The fields of the most common line (no mapping; non-blank string input, target and axis; no other
    keys) with a few checks instead of the general path's many; None for any other line."""
    if spec.fields or spec.target_pattern is not None or spec.axis is not None or spec.axis_pattern is not None:
        return None
    input_value, target, axis = obj.get("input"), obj.get("target"), obj.get("axis", "default")
    if (
        type(input_value) is str
        and type(target) is str
        and type(axis) is str
        and input_value.strip()
        and target.strip()
        and axis.strip()
        and axis != RESERVED_AXIS
        and obj.keys() <= _PLAIN_KEYS
    ):
        return {
            "id": sample_id,
            "input": input_value,
            "target": target,
            "axis": axis,
            "tags": [],
            "choices": None,
            "metadata": {},
        }
    return None


def _sample_fields(obj: dict[str, Any], spec: DatasetSpec, path: Path, sample_id: str) -> dict[str, Any]:
    """Map and type-check one record whose id ``_line_id`` gave; raise ``_FieldProblem`` naming the first bad
    field as the file names it."""
    # Checked by hand, not by Sample.model_validate: a problem must name the file's own column (``question``,
    # not ``input``) after the task's mapping and target_pattern, and a plain line takes a fast path; the
    # Sample built from these fields is still a pydantic model.
    plain = _plain_fields(obj, spec, sample_id)
    if plain is not None:
        return plain
    values, used = _mapped(obj, spec)
    try:
        input_value = _check_input(values.get("input"))
        target = _check_target(values.get("target"), spec.target_pattern)
        axis = _check_axis(values.get("axis"), spec, path)
        tags = _check_str_list(values.get("tags"), "tags") or []
        raw_choices = values.get("choices")
        if isinstance(raw_choices, str) and spec.choices_pattern is not None:
            # a match whose group 1 took no part is no match (an optional group: '^(?:[A-Z]\. (.*))?$')
            matches = _compiled(spec.choices_pattern, CHOICES_PATTERN_FLAGS).finditer(raw_choices)
            raw_choices = [option.strip() for m in matches if (option := m.group(1)) is not None]
            if not raw_choices:
                raise _FieldProblem("choices", f"does not match choices_pattern {spec.choices_pattern!r}")
        choices = _check_str_list(raw_choices, "choices")
        choice_columns = spec.fields.get("choices")
        if isinstance(choice_columns, list):
            _check_choice_letter(target, string.ascii_uppercase[: len(choice_columns)])
        metadata = values.get("metadata")
        if metadata is None:
            metadata = {}
        elif not isinstance(metadata, dict):
            raise _FieldProblem("metadata", f"expected an object, got {json_type_name(metadata)}")
    except _FieldProblem as problem:
        if problem.labelled:
            raise
        raise _FieldProblem(_label(spec, problem.field_name), problem.message, labelled=True) from None
    extra = {k: v for k, v in obj.items() if k not in used}
    if spec.target_pattern is not None:
        target_source = _source(spec, "target")
        if isinstance(target_source, str):
            extra.setdefault("target_raw", obj.get(target_source))
    return {
        "id": sample_id,
        "input": input_value,
        "target": target,
        "axis": axis,
        "tags": tags,
        "choices": choices,
        "metadata": {**extra, **metadata} if extra else metadata,
    }


def _label(spec: DatasetSpec, field_path: str) -> str:
    """``input[0].role`` as the file names it: the mapped source field replaces the sample field."""
    head = field_path.split("[", 1)[0].split(".", 1)[0]
    rest = field_path[len(head) :]
    source = _source(spec, head)
    return (",".join(source) if isinstance(source, list) else source) + rest


def _check_id(value: Any, label: str = "id") -> str:
    if type(value) is str and value.strip():  # the common case first: this runs once per line
        return value
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _FieldProblem(label, f"expected a string, got {json_type_name(value)}")
    text = str(value)
    if not text.strip():
        raise _FieldProblem(label, "is empty")
    return text


def _check_input(value: Any, label: str = "input") -> str | list[ChatMessage]:
    if type(value) is str and value.strip():
        return value
    if value is None:
        raise _FieldProblem(label, "missing (required)")
    if isinstance(value, str):
        if not value.strip():
            raise _FieldProblem(label, "is empty")
        return value
    if isinstance(value, list):
        if not value:
            raise _FieldProblem(label, "is an empty list of messages")
        messages = []
        for index, message in enumerate(value):
            where = f"{label}[{index}]"
            if not isinstance(message, dict):
                raise _FieldProblem(where, f"expected a message object, got {json_type_name(message)}")
            role, content = message.get("role"), message.get("content")
            if role not in _ROLES:
                raise _FieldProblem(f"{where}.role", f"expected one of {', '.join(_ROLES)}, got {role!r}")
            if not isinstance(content, str):
                raise _FieldProblem(f"{where}.content", f"expected a string, got {json_type_name(content)}")
            messages.append(ChatMessage(role=role, content=content))
        if messages[-1].role != "user":
            # the template renders the last message as the user's turn: an assistant or system turn there would
            # silently change role and reach the model as a second user turn
            raise _FieldProblem(
                f"{label}[{len(messages) - 1}].role",
                f"the last message must be the user's (the turn the model answers), got {messages[-1].role!r}",
            )
        return messages
    raise _FieldProblem(label, f"expected a string or a list of messages, got {json_type_name(value)}")


def _scalar_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _check_target(value: Any, pattern: str | None, label: str = "target") -> str | list[str]:
    # An empty target is refused: exact match (and SQuAD EM) would credit a model that says nothing, F1 and
    # ROUGE score every answer 0 against it, and the choice scorer fails on it.
    if type(value) is str and pattern is None and value.strip():
        return value
    if value is None:
        raise _FieldProblem(label, "missing (required)")
    text = _scalar_text(value)
    if text is not None:
        return _non_empty(_apply_pattern(text, label, pattern), label)
    if isinstance(value, list) and value:
        items = [_scalar_text(v) for v in value]
        if any(item is None for item in items):
            raise _FieldProblem(label, "expected a list of strings")
        return [
            _non_empty(_apply_pattern(item, label, pattern), f"{label}[{index}]")
            for index, item in enumerate(items)
            if item is not None
        ]
    if isinstance(value, list):
        raise _FieldProblem(label, "is an empty list")
    raise _FieldProblem(label, f"expected a string or a list of strings, got {json_type_name(value)}")


def _non_empty(text: str, label: str) -> str:
    if not text.strip():
        raise _FieldProblem(label, "is empty")
    return text


def _check_choice_letter(target: str | list[str], letters: str, label: str = "target") -> None:
    """With one column per choice (MMLU's question,A,B,C,D,answer), the target names the right column by its
    letter; lower case and surrounding spaces are read as the choice scorer reads them."""
    for index, value in enumerate([target] if isinstance(target, str) else target):
        letter = value.strip().upper()
        if len(letter) != 1 or letter not in letters:
            where = label if isinstance(target, str) else f"{label}[{index}]"
            raise _FieldProblem(where, f"expected one of the choice letters {', '.join(letters)}, got {value!r}")


def _apply_pattern(text: str, label: str, pattern: str | None) -> str:
    if pattern is None:
        return text
    found = _compiled(pattern).search(text)
    if found is None:
        raise _FieldProblem(label, f"does not match target_pattern {pattern!r}")
    if not found.re.groups:
        return found.group(0).strip()
    group = found.group(1)
    if group is None:  # an optional group that took no part: '(zzz)?\d+'
        raise _FieldProblem(label, f"does not match target_pattern {pattern!r}: its group 1 took no part")
    return group.strip()


def _check_axis(value: Any, spec: DatasetSpec, path: Path, label: str = "axis") -> str:
    if (
        type(value) is str
        and value.strip()
        and value != RESERVED_AXIS
        and spec.axis is None
        and spec.axis_pattern is None
    ):
        return value
    if spec.axis is not None:
        stem = Path(path.name.removesuffix(".gz")).stem  # anatomy_test.csv.gz: anatomy_test
        return _unreserved(spec.axis.replace("{stem}", stem), f"from the task's axis {spec.axis!r}")
    if spec.axis_pattern is not None:
        found = _compiled(spec.axis_pattern).search(path.name)
        # a group that took no part, or matched nothing, is no match: the line's own axis is used
        axis = found.group(1) if found is not None else None
        if axis is not None and axis.strip():
            return _unreserved(axis, f"from axis_pattern {spec.axis_pattern!r} on the file name")
    if value is None:
        return "default"
    if not isinstance(value, str) or not value.strip():
        raise _FieldProblem(label, f"expected a non-empty string, got {json_type_name(value)}")
    if value == RESERVED_AXIS:
        raise _FieldProblem(label, RESERVED_AXIS_MESSAGE)
    return value


def _unreserved(axis: str, source: str) -> str:
    """An axis the task derives from the file name, unless it is the reserved one (then ``source`` says why
    the lines of this file have it)."""
    if axis == RESERVED_AXIS:
        raise _FieldProblem("axis", f"{RESERVED_AXIS_MESSAGE} ({source})", labelled=True)
    return axis


def _check_str_list(value: Any, label: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise _FieldProblem(label, f"expected a list of strings, got {json_type_name(value)}")
    items = [_scalar_text(v) for v in value]
    if any(item is None for item in items):
        raise _FieldProblem(label, "expected a list of strings")
    return [item for item in items if item is not None]


_PATTERNS: dict[tuple[str, int], re.Pattern[str]] = {}


def _compiled(pattern: str, flags: int = TARGET_PATTERN_FLAGS) -> re.Pattern[str]:
    key = (pattern, flags)
    if key not in _PATTERNS:
        _PATTERNS[key] = re.compile(pattern, flags)
    return _PATTERNS[key]


_ORJSON_REASONS = {
    "depth limit exceeded": "nested deeper than 1024 levels",
    "number is infinity when parsed as double": "number too large (infinite as a 64-bit float)",
}


def _json_error(text: str, refused: orjson.JSONDecodeError) -> str:
    """Why a line orjson ``refused`` is not JSON: Python's parser says what it expected where, so its message
    comes first; orjson's reason when Python's parser takes the line (NaN, 1e400) or fails without saying
    (nesting past its recursion limit, an integer past its digit limit)."""
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{exc.msg} at column {exc.colno}"
    except (RecursionError, ValueError):
        pass
    return f"{_ORJSON_REASONS.get(refused.msg, refused.msg)} at column {refused.colno}"


def _rank(seed: int, sample_id: str) -> bytes:
    return hashlib.sha256(f"{seed}\x1f{sample_id}".encode()).digest()


def sample(samples: Iterable[Sample], n: int, seed: int) -> list[Sample]:
    """A deterministic random subset of ``n`` samples, in their original order.

    Each sample's rank is a hash of (seed, id), so the choice does not depend on file order and a
    superset file gives a superset sample for the same seed.
    """
    ranked = heapq.nsmallest(n, ((_rank(seed, s.id), index, s) for index, s in enumerate(samples)))
    return [s for _, _, s in sorted(ranked, key=lambda item: item[1])]


def split(
    samples: Iterable[Sample], fractions: Sequence[float] | dict[str, float], seed: int
) -> dict[str, list[Sample]]:
    """Stratified split by axis: within each axis, samples ranked by hash(seed, id) are cut by fraction.

    ``fractions`` may be a list (parts named "0", "1", ...) or a mapping name → fraction; they must sum to
    1. Counts use largest-remainder rounding per axis, so every part gets its share of every axis.
    """
    named = fractions if isinstance(fractions, dict) else {str(i): f for i, f in enumerate(fractions)}
    if abs(sum(named.values()) - 1.0) > 1e-9 or any(f < 0 for f in named.values()):
        raise ValueError("split fractions must be non-negative and sum to 1")
    by_axis: dict[str, list[Sample]] = {}
    for s in samples:
        by_axis.setdefault(s.axis, []).append(s)
    parts: dict[str, list[Sample]] = {name: [] for name in named}
    for axis_samples in by_axis.values():
        ordered = sorted(axis_samples, key=lambda s: _rank(seed, s.id))
        quotas = {name: f * len(ordered) for name, f in named.items()}
        counts = {name: int(q) for name, q in quotas.items()}
        leftover = len(ordered) - sum(counts.values())
        for name in sorted(quotas, key=lambda k: counts[k] - quotas[k])[:leftover]:
            counts[name] += 1
        start = 0
        for name in named:
            parts[name].extend(ordered[start : start + counts[name]])
            start += counts[name]
    return parts
