"""Task specs: find ``tasks/<name>.toml`` on the search path and parse it into a ``TaskSpec``.

A task root is the directory holding ``tasks/``, ``templates/`` and ``data/``; paths inside a spec are
relative to it. The search path is ``$EVAL_HARNESS_HOME``, then the current directory, then the tasks
bundled with the package, so a user's own task of the same name wins over a built-in one.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from eval_harness.errors import ConfigError, UnknownNameError
from eval_harness.toml_lines import key_lines, line_of
from eval_harness.types import TaskSpec, error_places, first_problem

_PACKAGE_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class LoadedTask:
    """A parsed task spec and where it came from."""

    spec: TaskSpec
    path: Path
    root: Path
    scorer_lines: tuple[int | None, ...] = ()
    """The line of the spec file where each of ``spec.scorers`` begins (None where it is not known)."""

    @property
    def lookup_name(self) -> str:
        """What ``--task`` takes to find this spec on the search path: its file name without ``.toml`` (the
        spec's ``name``, recorded in manifests, defaults to it)."""
        return self.path.stem

    @property
    def templates_dir(self) -> Path:
        """Where the spec's template is looked up."""
        return self.root / "templates"

    def resolve(self, relative: str) -> Path:
        """A path from the spec, made absolute against the task root."""
        path = Path(relative).expanduser()
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
        return self.resolve(self.spec.dataset.path)


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


def find_task(name_or_path: str) -> LoadedTask:
    """Load a task by name (search path) or by the path of a .toml spec."""
    as_path = Path(name_or_path).expanduser()
    if as_path.suffix == ".toml" or os.sep in name_or_path:
        if not as_path.is_file():
            raise ConfigError(f"{as_path}: no such task spec file")
        root = as_path.resolve().parent
        if root.name == "tasks":
            root = root.parent
        return load_task_file(as_path, root)
    for root in search_roots():
        candidate = root / "tasks" / f"{name_or_path}.toml"
        if candidate.is_file():
            return load_task_file(candidate, root)
    raise UnknownNameError.among("task", name_or_path, {t.lookup_name for t in list_tasks()})


def load_task_file(path: Path, root: Path) -> LoadedTask:
    """Parse one spec file; errors name the file, the line (where the field is written in it) and the field."""
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the task spec: {exc}") from None
    data.setdefault("name", path.stem)
    try:
        spec = TaskSpec.model_validate(data)
    except ValidationError as exc:
        location, message = first_problem(exc)
        line = line_of(text, error_places(exc, 1)[0].loc)  # the union members pydantic tried are no keys
        place = f"{path}:{line}" if line else str(path)
        raise ConfigError(f"{place}: {location or 'spec'}: {message}") from None
    lines = key_lines(text)
    scorer_lines = tuple(lines.get(("scorers", i), lines.get(("scorers",))) for i in range(len(spec.scorers)))
    return LoadedTask(spec=spec, path=path.resolve(), root=root.resolve(), scorer_lines=scorer_lines)


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


__all__ = ["LoadedTask", "find_task", "list_tasks", "load_task_file", "scan_tasks", "search_roots"]
