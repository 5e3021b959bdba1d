"""Task specs: find ``tasks/<name>.toml`` on the search path and parse it into a ``TaskSpec``.

A task root is the directory holding ``tasks/``, ``templates/`` and ``data/``; paths inside a spec are
relative to it. The search path is ``$EVAL_HARNESS_HOME``, then the current directory, then the tasks
bundled with the package, so a user's own task of the same name wins over a built-in one.
"""

from __future__ import annotations

import codecs
import os
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from eval_harness.errors import ConfigError, UnknownNameError
from eval_harness.textfiles import NotUtf8Error, home_expanded, near_name, utf8_text
from eval_harness.toml_lines import KeyPath, key_lines, line_in, line_of, nesting_line
from eval_harness.types import TaskSpec, error_places, problem_message

_PACKAGE_DIR = Path(__file__).resolve().parent

MAX_NESTING = 64
"""How deeply arrays and tables may nest in a spec: far beyond any real one (a composite of composites takes three
levels each), and far within what the readers of a spec's values can take (tomllib recurses per level and the
run's fingerprint, orjson, stops at 255: either was a traceback)."""


@dataclass(frozen=True)
class LoadedTask:
    """A parsed task spec and where it came from."""

    spec: TaskSpec
    path: Path
    root: Path
    scorer_lines: tuple[int | None, ...] = ()
    """The line of the spec file where each of ``spec.scorers`` begins (None where it is not known)."""
    lines: dict[KeyPath, int] = field(default_factory=dict, hash=False, compare=False)
    """The line of the spec file where each key path is written (``toml_lines.key_lines``)."""

    def place(self, *key: str | int) -> str:
        """``path:line: key`` for an error about a field of the spec: the line it is written on (or that of its
        closest enclosing key), the dotted key."""
        where = _at(self.path, line_in(self.lines, key))
        return f"{where}: {'.'.join(map(str, key))}" if key else where

    @property
    def lookup_name(self) -> str:
        """What ``--task`` takes to find this spec on the search path: its file name without ``.toml`` (the
        spec's ``name``, recorded in manifests, may differ)."""
        return self.path.stem

    @property
    def dataset_reading(self) -> dict[str, Any]:
        """How the spec reads its dataset, as a manifest records it (``TaskInfo.dataset_reading``)."""
        return self.spec.dataset.reading(defaults=False)

    @property
    def templates_dir(self) -> Path:
        """Where the spec's template is looked up."""
        return self.root / "templates"

    def resolve(self, relative: str) -> Path:
        """A path from the spec, made absolute against the task root."""
        path = home_expanded(relative)
        return path if path.is_absolute() else self.root / path

    def elsewhere(self, relative: str) -> Path | None:
        """``relative`` (a template or a data file the spec names) in another task root, when this root lacks it:
        what a task copied out of the built-ins to change one line should copy too. None for an absolute path."""
        if Path(relative).is_absolute() or (self.root / relative).exists():
            return None
        here = self.root.resolve()
        return next((r / relative for r in search_roots() if r != here and (r / relative).is_file()), None)

    def dataset_path(self, override: Path | None = None) -> Path:
        """The dataset to run: the override when given, else the spec's default."""
        if override is not None:
            return override
        if self.spec.dataset.path is None:
            raise ConfigError(f"{self.path}: the task names no dataset; pass --dataset")
        path = self.resolve(self.spec.dataset.path)
        if not path.exists() and not path.is_symlink():
            # the spec's line names what to fix (the dataset's path alone read as a file gone missing)
            raise ConfigError(f"{self.place('dataset', 'path')}: {path}: {_missing(path)} (or pass --dataset)")
        return path


def _missing(path: Path) -> str:
    """What of ``path`` is not there: the file, or the first directory on the way; with the near name that is."""
    missing = path
    while not missing.parent.exists() and missing.parent != missing:
        missing = missing.parent
    if not missing.parent.is_dir():  # a file (or a broken link) where a directory should be
        return f"{missing.parent} is not a directory"
    try:
        names = [p.name for p in missing.parent.iterdir()]
    except OSError:  # a directory that cannot be listed: no near name to offer
        names = []
    close = near_name(missing.name, [name for name in names if name != missing.name])
    guess = f"; did you mean {close!r}?" if close else ""
    return f"no such {'file' if missing == path else f'directory {missing}'}{guess}"


def search_roots() -> list[Path]:
    """Task roots in priority order (existing ones only, no duplicates)."""
    candidates = []
    home = os.environ.get("EVAL_HARNESS_HOME")
    if home:
        candidates.append(Path(home))
    candidates.append(Path.cwd())
    candidates.append(_PACKAGE_DIR / "_bundled")  # installed wheel
    candidates.append(_PACKAGE_DIR.parent)  # editable install / source tree
    roots: list[Path] = []
    for candidate in candidates:
        resolved = candidate.resolve()
        if (resolved / "tasks").is_dir() and resolved not in roots:
            roots.append(resolved)
    return roots


def root_of(spec: Path) -> Path:
    """The task root of a spec given by its (resolved) path: the directory above its ``tasks/``, else its own
    directory (where its ``templates/`` and ``data/`` are looked for)."""
    return spec.parent.parent if spec.parent.name == "tasks" else spec.parent


def find_task(name_or_path: str) -> LoadedTask:
    """Load a task by name (search path) or by the path of a .toml spec."""
    as_path = home_expanded(name_or_path)
    if as_path.suffix == ".toml" or os.sep in name_or_path:
        if not as_path.is_file():
            raise ConfigError(f"{as_path}: no such task spec file")
        return load_task_file(as_path, root_of(as_path.resolve()))
    for root in search_roots():
        candidate = root / "tasks" / f"{name_or_path}.toml"
        if candidate.is_file():
            return load_task_file(candidate, root)
    raise UnknownNameError.among("task", name_or_path, {t.lookup_name for t in list_tasks()})


def load_task_file(path: Path, root: Path) -> LoadedTask:
    """Parse one spec file; errors name the file, the line (where the field is written in it) and the field."""
    text = _spec_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per level of nesting; the scan does not
        raise ConfigError(f"{_at(path, nesting_line(text, MAX_NESTING))}: {_TOO_DEEP}") from None
    deep = _too_deep(data, (), 0)
    if deep is not None:
        raise ConfigError(f"{_at(path, line_of(text, deep))}: {_shown_key(deep)}: {_TOO_DEEP}")
    data.setdefault("name", path.stem)  # a spec without a name is named as its file is
    try:
        spec = TaskSpec.model_validate(data, strict=True)  # strict reaches [generation] too, which is not a spec model
    except ValidationError as exc:
        location, message = _told_problem(exc, path)
        raise ConfigError(
            f"{_at(path, line_of(text, location))}: {'.'.join(map(str, location)) or 'spec'}: {message}"
        ) from None
    lines = key_lines(text)
    scorer_lines = tuple(lines.get(("scorers", i), lines.get(("scorers",))) for i in range(len(spec.scorers)))
    return LoadedTask(spec=spec, path=path.resolve(), root=root.resolve(), scorer_lines=scorer_lines, lines=lines)


def _at(path: Path, line: int | None) -> str:
    """``path:line``, or the path alone when the line is not known."""
    return f"{path}:{line}" if line else str(path)


def _spec_text(path: Path) -> str:
    """The spec file's text, newlines read as ``read_text`` reads them; a byte-order mark or bytes that are not
    UTF-8 are refused naming their line (TOML is UTF-8 without one: tomllib said 'Invalid statement' at line 1,
    and Python a byte's position in the file)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the task spec: {exc}") from None
    if raw.startswith(codecs.BOM_UTF8):
        raise ConfigError(
            f"{path}:1: starts with a UTF-8 byte-order mark, which TOML does not allow; save it without BOM"
        )
    try:
        return utf8_text(raw)
    except NotUtf8Error as exc:
        raise ConfigError(
            f"{path}:{exc.line}: not UTF-8 text (byte 0x{exc.byte:02x}); save the file as UTF-8"
        ) from None


_TOO_DEEP = f"arrays and tables nested more than {MAX_NESTING} levels deep"


def _too_deep(value: Any, key: KeyPath, depth: int) -> KeyPath | None:
    """The key path of the first array or table of ``value`` nested more than ``MAX_NESTING`` levels deep (its own
    ``depth`` counted), None when there is none. It recurses at most that deep."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    if depth > MAX_NESTING:
        return key
    for part, item in items:
        found = _too_deep(item, (*key, part), depth + 1)
        if found is not None:
            return found
    return None


_SHOWN_PARTS = 6


def _shown_key(key: KeyPath) -> str:
    """A key path too deep to show whole: its first parts."""
    shown = ".".join(map(str, key[:_SHOWN_PARTS]))
    return shown + ("..." if len(key) > _SHOWN_PARTS else "")


def _told_problem(error: ValidationError, path: Path) -> tuple[KeyPath, str]:
    """The problem of a spec to tell, and its location without the union members pydantic tried: the first one,
    except that a key the spec's table does not know goes before a field missing from it (``kk = 2`` meant ``k``:
    the missing ``k`` follows from the typo, which is what to fix)."""
    problems = error.errors(include_url=False)
    places = [place.loc for place in error_places(error)]
    told = 0
    if problems[0]["type"] == "missing":
        told = next(
            (
                i
                for i, (problem, loc) in enumerate(zip(problems, places, strict=True))
                if problem["type"] == "extra_forbidden" and loc[:-1] == places[0][:-1]
            ),
            0,
        )
    problem, location = problems[told], places[told]
    if problem["type"] == "extra_forbidden":
        return location, str(UnknownNameError.among("key", str(location[-1]), _keys_at(location[:-1])))
    return location, problem_message(problem)


def _keys_at(location: KeyPath) -> list[str]:
    """The keys the spec's table at ``location`` takes (the fields of the model read there)."""
    model: type[BaseModel] | None = TaskSpec
    for part in location:
        if model is None:
            return []
        if isinstance(part, int):  # an entry of an array of tables: the model is the entries'
            continue
        found = model.model_fields.get(part)
        model = _model_in(found.annotation) if found is not None else None
    return list(model.model_fields) if model is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model an annotation holds: itself, or the one in ``X | None`` or ``list[X]``."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next(filter(None, map(_model_in, typing.get_args(annotation))), None)


def list_tasks() -> list[LoadedTask]:
    """Every task on the search path by the name ``--task`` finds it under; a name found twice is listed once
    (the first root wins, as it does for ``find_task``)."""
    return scan_tasks()[0]


def scan_tasks() -> tuple[list[LoadedTask], list[str]]:
    """``list_tasks``, and the error of every task file on the search path that cannot be loaded."""
    seen: dict[str, LoadedTask] = {}
    problems: list[str] = []
    for root in search_roots():
        for path in sorted((root / "tasks").glob("*.toml")):
            try:
                task = load_task_file(path, root)
            except ConfigError as exc:
                problems.append(str(exc))
                continue
            seen.setdefault(task.lookup_name, task)  # the first root wins, as in find_task
    return list(seen.values()), problems


__all__ = [
    "MAX_NESTING",
    "LoadedTask",
    "find_task",
    "list_tasks",
    "load_task_file",
    "root_of",
    "scan_tasks",
    "search_roots",
]
