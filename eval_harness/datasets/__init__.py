"""Datasets: stream a JSONL or CSV file into ``Sample`` records, validate every line, hash the content.

Files are read line by line in binary, so a 1 GB file never sits in memory, invalid UTF-8 is reported on
the line where it occurs, and a pathological 10 MB line is refused without being parsed.

The scan and its report are here (``validate_dataset``, ``iter_samples``, ``iter_positioned``: one pass that
splits the file into lines or rows, parses them, derives the ids and counts the problems); the package has one
private module per job beside it (import from ``eval_harness.datasets``):

- ``_files``: byte access: opening the file (gzip read through), its sha256, a line of bounded length.
- ``_fields``: field checking: one record mapped and type-checked into ``Sample`` fields.
- ``_subsets``: subsets of samples (``sample``, ``split``).

The three import nothing from each other, nor from here.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from eval_harness.datasets._fields import _check_id, _FieldProblem, _header_misses, _sample_fields, _source
from eval_harness.datasets._files import (
    _FOREIGN_MAGIC,
    MAX_LINE_BYTES,
    _gzip_errors,
    _HashingRaw,
    _HashingReader,
    _open,
    _read_line,
    file_sha256,
    file_stamp,
    is_compressed,
    why_missing,
)
from eval_harness.datasets._subsets import sample, split
from eval_harness.errors import (
    DatasetError,
    DatasetUnreadableError,
    json_type_name,
    named_briefly,
    undecodable_shown,
)
from eval_harness.seen import SeenStrings
from eval_harness.types import DatasetSpec, Sample

PROBLEMS_SHOWN = 50
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Position:
    """Where a line of a JSONL dataset is: byte offset, 1-based line number, offset of the next line; and, in a
    dataset directory, the name of the file it is in (None for a dataset of one file)."""

    offset: int
    line: int
    next_offset: int
    member: str | None = None

    def file_in(self, dataset: Path) -> Path:
        """The file of ``dataset`` (a file, or a directory of them) this line is in."""
        return dataset / self.member if self.member else dataset


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a dataset, shown as ``FILE:LINE: field: message``."""

    path: str
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.field}: {self.message}"

    def says_what(self, other: Problem) -> bool:
        """Whether ``other`` is this problem on another line (the same field, the same message)."""
        return (self.field, self.message) == (other.field, other.message)


def listed_problems(shown: Sequence[Problem], count: int, alike: bool) -> list[str]:
    """The shown problems, then a count of the rest; problems that all say the same (``alike``: a misspelt field
    mapping says it on every line, 1,319 copies of one line that told nothing more) are the first, then how many
    more lines say it."""
    if alike and len(shown) > 2:
        return [str(shown[0]), f"... and the same on {count - 1:,} more lines"]
    hidden = count - len(shown)
    return [str(p) for p in shown] + ([f"... and {hidden} more problems"] if hidden > 0 else [])


@dataclass(frozen=True)
class Repeat:
    """A line without an id whose content an earlier line has: it is evaluated again under a derived id."""

    path: str
    line: int
    sample_id: str
    """The id derived for it (``<hash>-2``...)."""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: duplicate content; id {self.sample_id} was derived"


@dataclass
class UnlistedLines:
    """Lines that are problems but are counted rather than listed: how many, the first and the last."""

    count: int = 0
    first: int = 0
    last: int = 0
    path: str = ""
    """The file they are in (a dataset directory's: each file has its own)."""

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
    members: list[str] = field(default_factory=list)
    """The names of a dataset directory's files, in the order they are read (empty for a dataset of one file)."""
    members_sha256: list[str] = field(default_factory=list)
    """The sha256 of each of ``members``, in their order (empty for a dataset of one file)."""
    blank_lines: list[int] = field(default_factory=list)
    axis_counts: Counter[str] = field(default_factory=Counter)
    duplicate_ids: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    problem_count: int = 0
    problems_alike: bool = True
    """Every problem (listed one by one) says what the first one says, on another line."""
    passed_over: str | None = None
    """A note naming the files of a dataset directory that look like dataset files but are not read (see
    ``passed_over``); None when there are none."""
    repeats: list[Repeat] = field(default_factory=list)
    """Lines without an id that repeat an earlier one's content (validate-dataset warns of each)."""
    not_json: UnlistedLines | None = None
    """Set when the first line of the file being read is not JSON at all (a CSV header, text): later such lines
    of that file are only counted."""
    not_json_spans: list[UnlistedLines] = field(default_factory=list)
    """Every file's ``not_json``, in order (a dataset directory may have several)."""

    @property
    def ok(self) -> bool:
        """True when no problem was found (blank lines and warnings are allowed)."""
        return self.problem_count == 0

    @property
    def problems_counted(self) -> str:
        """``1 problem``, ``3 problems``: for messages."""
        return f"{self.problem_count:,} problem{'s' if self.problem_count != 1 else ''}"

    def add(self, problem: Problem) -> None:
        self.problem_count += 1
        if self.problems and not self.problems[0].says_what(problem):
            self.problems_alike = False
        if len(self.problems) < PROBLEMS_SHOWN:
            self.problems.append(problem)

    def add_problems_of(self, other: DatasetReport) -> None:
        """``other``'s problems after this report's, as if added one by one (a sum of files' reports): whether
        they are all alike takes both reports' in."""
        if other.problems and (
            not other.problems_alike or (self.problems and not self.problems[0].says_what(other.problems[0]))
        ):
            self.problems_alike = False
        self.problems += other.problems[: PROBLEMS_SHOWN - len(self.problems)]
        self.problem_count += other.problem_count

    def add_not_json(self, line: int) -> None:
        """Count a line that is not JSON, after the first line said what the file looks like."""
        self.problem_count += 1
        if self.not_json is None:
            self.not_json = UnlistedLines(path=self.path)
            self.not_json_spans.append(self.not_json)
        self.not_json.add(line)

    def problem_lines(self) -> list[str]:
        """The shown problems, then a count of the rest (see ``listed_problems``)."""
        if not self.not_json_spans:
            return listed_problems(self.problems, self.problem_count, self.problems_alike)
        lines = [str(p) for p in self.problems]
        hidden = self.problem_count - len(self.problems)
        for span in self.not_json_spans:
            if not span.count:
                continue
            hidden -= span.count
            which = f"line {span.first}" if span.count == 1 else f"lines {span.first}-{span.last}"
            if span.path != self.path:  # a dataset directory's file
                which += f" of {span.path}"
            more = "1 more line that is" if span.count == 1 else f"{span.count} more lines that are"
            lines.append(f"... and {more} not JSON either ({which}), not listed one by one")
        if hidden > 0:
            lines.append(f"... and {hidden} more problems")
        return lines


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
    members: list[str] = field(default_factory=list)
    """The files of a dataset directory read so far, the current one last (empty for a dataset of one file)."""
    before: tuple[int, int, int] = (0, 0, 0)
    """The report's lines, blank lines and problems when the current file began: its own are counted from them."""

    @property
    def member(self) -> str | None:
        return self.members[-1] if self.members else None

    def place(self, line: int) -> int:
        """``line`` of the current file as one number over the whole dataset (ids are compared across files)."""
        return (max(len(self.members) - 1, 0) << 32) + line

    def where(self, place: int) -> str:
        """A ``place`` as a message names it: ``line 3`` in the current file, ``x.csv:3`` in another."""
        index, line = place >> 32, place & 0xFFFFFFFF
        if not self.members or index == len(self.members) - 1:
            return f"line {line}"
        return f"{self.members[index]}:{line}"


class OverlapWatcher(Protocol):
    """What ``validate_dataset`` feeds every valid line to, in its one pass (e.g. the few-shot leak check,
    ``planning._few_shot.PoolOverlap``)."""

    def see(self, sample_id: str, fields: dict[str, Any], member: str | None, /) -> None:
        """One valid sample of the dataset, as ``Sample`` fields, and the dataset directory's file it is in (None
        for a dataset of one file)."""


def validate_dataset(
    path: Path, spec: DatasetSpec | None = None, *, task: str | None = None, overlap: OverlapWatcher | None = None
) -> DatasetReport:
    """Check every line of ``path``; never raises for content problems, only for an unreadable file.

    ``task`` (the name of the task that reads the file) only makes messages clearer. ``overlap`` is shown every
    valid sample of the file in the same pass (see ``OverlapWatcher``)."""
    scan = _ScanState(DatasetReport(path=str(path)), validating=True, overlap=overlap)
    if task is not None:
        scan.reader = f"task {task!r} reads JSONL"
    for _ in _scan_dataset(path, spec or DatasetSpec(), scan):
        pass
    return scan.report


def iter_samples(path: Path, spec: DatasetSpec | None = None) -> Iterator[Sample]:
    """Stream the valid samples of ``path`` in file order (call ``validate_dataset`` first)."""
    for _, item in iter_positioned(path, spec):
        yield item


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
    for item in _scan_dataset(path, spec or DatasetSpec(), scan):
        yield scan.position, item


def load_samples(path: Path, spec: DatasetSpec | None = None) -> list[Sample]:
    """Validate and load a whole (small) file, raising ``DatasetError`` listing its problems."""
    report = validate_dataset(path, spec)
    if not report.ok:
        raise DatasetError(f"{path}: {report.problems_counted} in the dataset", report.problem_lines())
    return list(iter_samples(path, spec))


MEMBER_SUFFIXES = {"jsonl": (".jsonl", ".jsonl.gz"), "csv": (".csv", ".csv.gz")}
"""The files a dataset directory is read from, by the task's format."""

_NEAR_SUFFIXES = {"jsonl": (".json", ".json.gz", ".ndjson", ".ndjson.gz"), "csv": ()}
"""Names a file of the format may have been given by mistake, beside its own in another case (``a.JSONL``): a
directory holding only such files is refused naming them, since they are not read (names are matched as written,
so that the files read are the ones ``ls *.jsonl`` lists)."""


def dataset_members(path: Path, spec: DatasetSpec | None = None) -> list[Path]:
    """The files a dataset is read from: ``path``, or, when it is a directory, the files directly in it whose
    names end as the format's do (``MEMBER_SUFFIXES``), by name; a hidden one is passed over. A directory
    without one is refused, saying what it holds when that tells the slip (``_holds``)."""
    if not path.is_dir():
        return [path]
    suffixes = MEMBER_SUFFIXES[(spec or DatasetSpec()).format]
    entries = _entries(path)
    members = [entry for entry in entries if _is_member(entry, suffixes)]
    names = {member.name for member in members}
    twice = next((name for name in sorted(names) if name.endswith(".gz") and name[:-3] in names), None)
    if twice is not None:  # `gzip -k` leaves both: every sample would be evaluated twice
        raise DatasetUnreadableError(
            f"{path}: cannot read the dataset: it holds both {twice[:-3]} and {twice}, the same file twice as "
            "far as can be told; keep one"
        )
    broken = next((name for name in sorted(names) if any(ord(char) < 32 or ord(char) == 127 for char in name)), None)
    if broken is not None:  # every message about it is FILE:LINE: ... on one line, and inspect's source too
        raise DatasetUnreadableError(
            f"{path}: cannot read the dataset: the file {broken!r} has a control character (a line break?) in its "
            "name, which would break every line that names it; rename it"
        )
    foreign = next((shown for name in sorted(names) if (shown := undecodable_shown(name)) is not None), None)
    if foreign is not None:  # every record names its file, and JSON holds only UTF-8: run could not write them
        raise DatasetUnreadableError(
            f"{path}: cannot read the dataset: the file '{foreign}' has a name that is not valid UTF-8 (a name from "
            "another encoding?); rename it"
        )
    if not members:
        raise DatasetUnreadableError(
            f"{path}: cannot read the dataset: the directory holds no {' or '.join(suffixes)} file"
            f"{_holds(entries, (spec or DatasetSpec()).format)}"
        )
    return members


def foreign_format(path: Path, spec: DatasetSpec | None = None) -> str | None:
    """The format (a key of ``MEMBER_SUFFIXES``) other than ``spec``'s that the dataset at ``path`` is in, as far
    as names tell: a file named as another format's (``x.csv`` read as JSONL), or a directory holding no file of
    ``spec``'s format but some of another's. None otherwise: what names do not tell, reading the lines does."""
    own = (spec or DatasetSpec()).format
    if path.is_file():
        return next((fmt for fmt, ends in MEMBER_SUFFIXES.items() if fmt != own and path.name.endswith(ends)), None)
    if not path.is_dir():
        return None  # missing, a pipe: the reader says so, whatever the name
    try:
        entries = _entries(path)
    except DatasetUnreadableError:
        return None
    if any(_is_member(entry, MEMBER_SUFFIXES[own]) for entry in entries):
        return None
    return _other_format(entries, own)


def passed_over(path: Path, spec: DatasetSpec | None = None) -> str | None:
    """A note naming the files of the dataset directory ``path`` that look like dataset files but are not read
    (named as another format's, or near the format's own: ``c.csv``, ``a.json``, ``b.JSONL``); None when it has
    none, or ``path`` is one file. Passing them over is the rule, but a file dropped in with the wrong name
    would otherwise leave the run short of it without a word."""
    if not path.is_dir():
        return None
    fmt = (spec or DatasetSpec()).format
    names = _lookalikes(_entries(path), fmt)
    if not names:
        return None
    files = "1 file" if len(names) == 1 else f"{len(names):,} files"
    return (
        f"note: {path}: passed over {files} not read as part of the dataset ({named_briefly(names)}): only its "
        f"{' and '.join(MEMBER_SUFFIXES[fmt])} files are"
    )


def _lookalikes(entries: list[Path], fmt: str) -> list[str]:
    """The names of the files among ``entries`` that look like dataset files but are not read as files of the
    format ``fmt``: named as another format's, or near ``fmt``'s own (``a.json``, ``b.JSONL``)."""
    looks = tuple(end for ends in MEMBER_SUFFIXES.values() for end in ends) + _NEAR_SUFFIXES[fmt]
    return [
        entry.name
        for entry in entries
        if entry.name.lower().endswith(looks) and not _is_member(entry, MEMBER_SUFFIXES[fmt]) and not entry.is_dir()
    ]


def _entries(path: Path) -> list[Path]:
    """What the directory ``path`` holds, by name, but its hidden entries (a dataset never reads them)."""
    try:
        return sorted((entry for entry in path.iterdir() if not entry.name.startswith(".")), key=lambda p: p.name)
    except OSError as exc:
        raise DatasetUnreadableError(f"{path}: cannot read the dataset: {exc.strerror}") from None


def _is_member(entry: Path, suffixes: tuple[str, ...]) -> bool:
    return entry.name.endswith(suffixes) and not entry.is_dir()


def _other_format(entries: list[Path], own: str) -> str | None:
    """The first format but ``own`` that a file among ``entries`` is named as."""
    others = [(fmt, ends) for fmt, ends in MEMBER_SUFFIXES.items() if fmt != own]
    return next((fmt for fmt, ends in others if any(_is_member(entry, ends) for entry in entries)), None)


def _holds(entries: list[Path], own: str) -> str:
    """What a directory holding no file of the format ``own`` holds, when that explains the slip, as the message's
    closing parenthesis: files of another format, files of a name near the format's (``a.json``, ``b.JSONL``),
    subdirectories (the parent of ``test/`` given for it); or, failing these, its first entries ("" when it holds
    none but hidden ones)."""
    other = _other_format(entries, own)
    if other is not None:
        return f" (it holds {other.upper()} files: a task that reads {other.upper()} reads them)"
    near = _lookalikes(entries, own)  # no file of another format is among them: of a name near the format's
    if near:
        return (
            f" (it holds {named_briefly(near)}: only files whose names end in {' or '.join(MEMBER_SUFFIXES[own])}, "
            "in lower case, are read)"
        )
    folders = [entry.name for entry in entries if entry.is_dir()]
    if folders:
        which = "the directory" if len(folders) == 1 else "the directories"
        return f" (it holds {which} {named_briefly(folders)}: subdirectories are not read)"
    return f" (it holds {named_briefly([entry.name for entry in entries])})" if entries else ""


def dataset_sha256(path: Path, spec: DatasetSpec | None = None) -> str:
    """The dataset's sha256, as ``validate_dataset`` reports it: the file's, or a directory's (see
    ``_member_digest``)."""
    members = dataset_members(path, spec)
    if members == [path]:
        return file_sha256(path)
    digest = hashlib.sha256()
    for member in members:
        _member_digest(digest, member.name, file_sha256(member))
    return digest.hexdigest()


def dataset_stamp(path: Path, spec: DatasetSpec | None = None) -> tuple[int, ...] | None:
    """``file_stamp`` of the dataset; of a directory, its files' sizes summed, the latest of their times, how many
    there are and their names (not the directory's own time: a run's output or an editor's file beside them
    changes it)."""
    if not path.is_dir():
        return file_stamp(path)
    try:
        members = dataset_members(path, spec)
    except DatasetUnreadableError:
        return None
    stamps = [stamp for stamp in map(file_stamp, members) if stamp is not None]
    if len(stamps) < len(members):
        return None
    # a rename keeps sizes and times: the names are part of the stamp too
    names = zlib.crc32("\0".join(member.name for member in members).encode("utf-8", "surrogateescape"))
    return sum(size for size, _ in stamps), max(time for _, time in stamps), len(stamps), names


def _member_digest(digest: hashlib._Hash, name: str, sha256: str) -> None:
    """A directory's sha256 covers each file's name and content, in order: renaming, adding or changing one
    changes it (hashing the files' bytes end to end would not see a line moved across two of them)."""
    digest.update(f"{name}\0{sha256}\n".encode("utf-8", "surrogateescape"))


def _scan_dataset(path: Path, spec: DatasetSpec, scan: _ScanState) -> Iterator[Sample]:
    """``_scan`` of the file, or of each file of a directory in turn, as one dataset."""
    members = dataset_members(path, spec)
    if members == [path]:
        yield from _scan(path, spec, scan)
        return
    if scan.start is not None:
        raise ValueError("a dataset directory is not read from a position")
    digest = hashlib.sha256() if scan.validating else None
    scan.report.members = [member.name for member in members]
    if scan.validating:
        scan.report.passed_over = passed_over(path, spec)
    for member in members:
        scan.members.append(member.name)
        yield from _scan(member, spec, scan)
        if digest is not None:
            _member_digest(digest, member.name, scan.report.sha256)
            scan.report.members_sha256.append(scan.report.sha256)
    if digest is not None:
        scan.report.sha256 = digest.hexdigest()


def _scan(path: Path, spec: DatasetSpec, scan: _ScanState) -> Iterator[Sample]:
    report = scan.report
    scan.before = (report.lines, len(report.blank_lines), report.problem_count)
    lines_before, blank_before, problems_before = scan.before
    # Only validation reports the file's sha256; the runner's second pass already has it.
    digest = hashlib.sha256() if scan.validating else None
    with _open(path) as handle:
        with _gzip_errors(path):  # a gzip header over garbage fails at the first read, here
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
    lines, blank = report.lines - lines_before, len(report.blank_lines) - blank_before
    clean = report.problem_count == problems_before
    if lines == 0 and clean:
        report.add(Problem(str(path), 1, "file", "the file is empty"))
    elif lines == blank and clean:
        report.add(Problem(str(path), 1, "file", "the file holds only blank lines"))


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
        scan.position = Position(offset, lineno, offset + consumed, scan.member)
        offset += consumed
        report.lines += 1
        if too_long:
            report.add(Problem(where, lineno, "line", f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MB"))
            continue
        if lineno == 1 and raw.startswith(_BOM):
            # the line is a problem line like any other: --skip-invalid leaves it out, as its note says (it ran it)
            report.add(Problem(where, 1, "file", "starts with a UTF-8 byte-order mark; save it without BOM"))
            continue
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
        if stripped.count(b"{") + stripped.count(b"[") > MAX_NESTING and _depth(obj) > MAX_NESTING:
            report.add(Problem(where, lineno, "line", f"arrays and objects nested more than {MAX_NESTING} levels deep"))
            continue
        sample = _checked_sample(obj, stripped, spec, scan, where, lineno, path)
        if sample is not None:
            yield sample


MAX_NESTING = 200
"""How deep a line's arrays and objects may nest: the JSON writer of records and fingerprints stops at 255 levels
(a few-shot example nested deeper was a traceback of the run), and no dataset needs a tenth of it."""


def _depth(value: object) -> int:
    """How deep ``value``'s arrays and objects nest (a scalar: 0), by a walk of its own (not recursion: the value may
    be nested past Python's recursion limit)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        node, depth = pending.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        pending.extend((child, depth + 1) for child in children)
    return deepest


def _not_json(text: str, refused: orjson.JSONDecodeError, scan: _ScanState, where: str, lineno: int) -> None:
    """Report a line that is not JSON. When the file's first line is not JSON at all (a CSV header, prose),
    one problem says what the file looks like, and later lines like it are counted instead of each saying
    "invalid JSON" again; a line that begins like JSON ('{' or '[') always gets its own JSON error."""
    report = scan.report
    meant_as_json = text.startswith(("{", "["))
    if report.not_json is not None and report.not_json.path == where and not meant_as_json:
        report.add_not_json(lineno)
        return
    lines_before, blank_before, _ = scan.before
    first_line = scan.start is None and report.lines - lines_before == len(report.blank_lines) - blank_before + 1
    if first_line and not meant_as_json:
        report.add(
            Problem(
                where,
                lineno,
                "line",
                f"not JSON: this looks like {_looks_like(text)}; {scan.reader} (one JSON object per line)",
            )
        )
        report.not_json = UnlistedLines(path=where)
        report.not_json_spans.append(report.not_json)
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
    # the csv module's own limit (128 KiB a field) would refuse a long-context item its JSONL twin takes
    csv.field_size_limit(max(csv.field_size_limit(), MAX_LINE_BYTES))
    rows = csv.reader(text)
    columns = spec.csv_columns
    unreadable = False
    last_line = 0
    try:
        for row in rows:
            # a row whose quoted field holds line breaks is named by the line it starts on, where an editor finds
            # it (csv counts the lines it has read: the row's last)
            lineno, last_line = last_line + 1, rows.line_num
            scan.position = Position(-1, lineno, -1, scan.member)  # CSV records may span lines: no byte positions
            try:
                raw = "\x1f".join(row).encode("utf-8")
            except UnicodeEncodeError as exc:
                bad_line, byte = _undecodable(exc, lineno)
                if columns is None:
                    report.add(Problem(where, bad_line, "line", f"invalid UTF-8 {byte} in the header; reading stopped"))
                    return
                report.lines += 1
                report.add(Problem(where, bad_line, "line", f"invalid UTF-8 {byte}"))
                continue
            if columns is None:
                columns = [c.strip() for c in row]
                unreadable = _header_problems(columns, spec, path, lineno, report)
                continue
            report.lines += 1
            if not row or (len(row) in (1, len(columns)) and all(not cell.strip() for cell in row)):
                # a spreadsheet writes an empty row as its columns' commas: blank too; any other count of
                # empty cells is a row of the wrong width, said as such below
                report.blank_lines.append(lineno)
                continue
            if unreadable:
                continue  # the header's problem is every row's: said once, on the header's line
            if len(row) != len(columns):
                message = f"expected {len(columns)} columns, got {len(row)}"
                if last_line > lineno:  # a quote left open reads the lines after it into its cell
                    message += (
                        f" (the row runs from line {lineno:,} to line {last_line:,}: a quote opened here and not "
                        "closed takes in the lines after it, which are not read as rows)"
                    )
                if report.problem_count == 0 and row[0].lstrip().startswith(("{", "[")):
                    message += f" (this looks like JSONL; this file is read as CSV: {', '.join(columns)})"
                report.add(Problem(where, lineno, "row", message))
                continue
            obj: dict[str, Any] = dict(zip(columns, row, strict=True))
            sample = _checked_sample(obj, raw, spec, scan, where, lineno, path)
            if sample is not None:
                yield sample
    except csv.Error as exc:
        message = str(exc)
        if message.startswith("field larger than field limit"):
            message = f"a field longer than {MAX_LINE_BYTES // (1024 * 1024)} MB"
        report.add(Problem(where, rows.line_num, "row", f"malformed CSV: {message}; reading stopped"))


def _header_problems(columns: list[str], spec: DatasetSpec, path: Path, lineno: int, report: DatasetReport) -> bool:
    """Report, on the header's line, each column the rows must hold that the header lacks; True when there is
    one (no row can then be read)."""
    misses = _header_misses(columns, spec, path)
    for column, purpose in misses:
        message = f"no such column in the header ({purpose}); its columns: {', '.join(columns)}; no row can be read"
        report.add(Problem(str(path), lineno, column, message))
    # a column named twice: a row's value would silently be its last one's
    twice = sorted({column for column in columns if column and columns.count(column) > 1})
    for column in twice:
        places = ", ".join(str(number) for number, name in enumerate(columns, 1) if name == column)
        message = f"the header names this column more than once (columns {places}); rename one; no row can be read"
        report.add(Problem(str(path), lineno, column, message))
    return bool(misses or twice)


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
        first = scan.seen_ids.first(sample_id, scan.place(lineno))
        if first is not None:
            report.add(Problem(where, lineno, "id", f"duplicate id {sample_id!r} (first on {scan.where(first)})"))
            report.duplicate_ids.append(sample_id)
            return None
        if scan.overlap is not None:
            scan.overlap.see(sample_id, fields, scan.member)
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
            scan.report.repeats.append(Repeat(where, lineno, f"{sample_id}-{count}"))
        sample_id = f"{sample_id}-{count}"
    return sample_id


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
        said = f"{exc.msg.removesuffix(' at')} at column {exc.colno}"  # "Unterminated string starting at"
        if exc.msg == "Extra data" and "\r" in text[: exc.pos]:  # a file whose lines end in CR alone: one line
            said += "; its lines end with a carriage return alone (CR, old Mac line ends): convert them to LF"
        return said
    except (RecursionError, ValueError):
        pass
    return f"{_ORJSON_REASONS.get(refused.msg, refused.msg)} at column {refused.colno}"


__all__ = [
    "MAX_LINE_BYTES",
    "MEMBER_SUFFIXES",
    "PROBLEMS_SHOWN",
    "DatasetReport",
    "OverlapWatcher",
    "Position",
    "Problem",
    "Repeat",
    "UnlistedLines",
    "dataset_members",
    "dataset_sha256",
    "dataset_stamp",
    "file_sha256",
    "file_stamp",
    "foreign_format",
    "is_compressed",
    "iter_positioned",
    "iter_samples",
    "listed_problems",
    "load_samples",
    "passed_over",
    "sample",
    "split",
    "validate_dataset",
    "why_missing",
]
