"""Where a command may write: never into a run it reads, never over a file such a run was made from, never onto
a directory, never into a missing one.

Checked before the command reads or writes anything, so a refused ``--output`` leaves every artifact as it was.
Imported at every start (``app`` imports each command module): it needs nothing beyond the standard library.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from eval_harness.errors import ArtifactError, ConfigError, EvalHarnessError
from eval_harness.textfiles import home_expanded


def _shown(path: Path, target: Path) -> str:
    """``path`` as typed, with where it really leads when a symlink (or ``..``) takes it elsewhere."""
    return str(path) if Path(os.path.abspath(path)) == target else f"{path} (→ {target})"


def refuse_inside_runs(option: str, path: Path, runs: Iterable[Path], command: str) -> None:
    """``ConfigError`` when ``path``, symlinks followed, is one of ``runs`` or lies anywhere inside one: writing
    there would replace an artifact (or add a stranger to the run) of a run the command is reading."""
    target = path.resolve()
    for run in runs:
        run_dir = run.resolve()
        if target.is_relative_to(run_dir):
            raise ConfigError(
                f"{option} {_shown(path, target)}: {'is' if target == run_dir else 'is inside'} the run directory "
                f"{run} that {command} reads; writing there would damage the run, choose a path outside it"
            )


def _refuse_hard_links(option: str, path: Path, runs: Iterable[Path], command: str) -> None:
    """The same refusal for another name (a hard link) of a file in a run, which no path comparison sees."""
    try:
        status = path.stat()
    except OSError:
        return  # nothing there yet: it cannot be a run's file
    if status.st_nlink < 2:
        return
    for run in runs:
        try:
            entries = list(os.scandir(run))
        except OSError:
            continue  # the command itself says why the run cannot be read
        for entry in entries:
            try:
                other = entry.stat()
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (status.st_dev, status.st_ino):
                raise ConfigError(
                    f"{option} {path}: the same file (a hard link) as {entry.path} in the run directory {run} "
                    f"that {command} reads; writing it would damage the run, choose a path outside it"
                )


def _refuse_other_runs(option: str, path: Path, target: Path) -> None:
    """The same refusal for any run directory (one holding a ``manifest.json`` and a ``samples.jsonl``, a
    ``summary.json`` or a ``.lock``: one whose samples.jsonl was lost is still a run), not only those read: a slip
    such as ``--output results/model-b/samples.jsonl`` would destroy another run."""
    directory = target.parent
    others = ("samples.jsonl", "summary.json", ".lock")
    if (directory / "manifest.json").is_file() and any((directory / name).exists() for name in others):
        raise ConfigError(
            f"{option} {_shown(path, target)}: is inside the run directory {directory}; writing there could "
            "damage that run, choose a path outside it"
        )


@dataclass(frozen=True)
class _RunInputs:
    """What a run was made from, as its manifest names it."""

    files: list[tuple[str, Path]]
    """Each file with what it is to the run (its dataset, task spec, template, few-shot file...)."""
    directory: tuple[Path, tuple[str, ...]] | None = None
    """A dataset directory and the endings of the files read from it (None: the dataset is one file)."""


def _run_inputs(run: Path) -> _RunInputs:
    """The files ``run``'s manifest names as what the run was made from; none when the manifest cannot be read
    (the command itself then says why, before it writes anything)."""
    import re

    from eval_harness.artifacts import read_manifest  # here: pydantic is not worth importing at every start
    from eval_harness.datasets import MEMBER_SUFFIXES
    from eval_harness.tasks import root_of, search_roots
    from eval_harness.types import split_rewrite

    try:
        manifest = read_manifest(run)
    except EvalHarnessError:
        return _RunInputs([])
    task, dataset = manifest.task, Path(manifest.dataset.path)
    members = [dataset / name for name in manifest.dataset.files or []]  # a directory's files (none: one file)
    inputs = [("dataset", dataset), *((f"dataset file {member.name}", member) for member in members)]
    directory = (dataset, MEMBER_SUFFIXES[manifest.dataset.format]) if members else None
    if task.source is None:  # a run made before the spec was recorded: where its template is is not known
        return _RunInputs(inputs, directory)
    spec = Path(task.source)
    inputs.append(("task spec", spec))
    if task.scorers_source not in (None, task.source):
        inputs.append(("task spec its scorers came from", Path(task.scorers_source)))
    root = root_of(spec)
    inputs.append(("template", root / "templates" / task.template))
    # a judge's rubric (inside a composite too), found where the scorer finds it (scorers.judge.find_rubric): the
    # templates/ of the spec its scorers came from, else of the task search path. A changed one refuses a resume
    scorers_root = root_of(Path(task.scorers_source)) if task.scorers_source else root
    folders = [scorers_root / "templates", *(other / "templates" for other in search_roots())]
    for name in _rubrics([s.args for s in task.scorers]):
        found = next((folder / name for folder in folders if (folder / name).is_file()), None)
        if found is not None:
            inputs.append(("judge rubric", found))
    few_shot = task.few_shot or {}
    if isinstance(few_shot.get("path"), str):
        examples = home_expanded(few_shot["path"])
        inputs.append(("few-shot file", examples if examples.is_absolute() else root / examples))
    elif isinstance(few_shot.get("path_from_dataset"), str):
        pattern, replacement = split_rewrite(few_shot["path_from_dataset"])
        with contextlib.suppress(re.error, IndexError):  # a hand-edited rewrite: nothing it could name
            for source in members or [dataset]:  # each file of a directory has its own
                inputs.append(("few-shot file", Path(re.sub(pattern, replacement, str(source.resolve())))))
    return _RunInputs(inputs, directory)


def _rubrics(value: object) -> Iterator[str]:
    """Every ``rubric`` named in ``value`` (scorer arguments, nested in a composite's at any depth)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "rubric" and isinstance(item, str):
                yield item
            else:
                yield from _rubrics(item)
    elif isinstance(value, list):
        for item in value:
            yield from _rubrics(item)


def _same_file(target: Path, other: Path) -> bool:
    """Whether ``target`` (resolved) is ``other``: the same path with symlinks followed, or another name (a hard
    link) of the same file."""
    if target == other.resolve():
        return True
    try:
        mine, theirs = target.stat(), other.stat()
    except OSError:
        return False
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def _refuse_run_inputs(option: str, path: Path, target: Path, runs: Iterable[Path], command: str) -> None:
    """The same refusal for a file a run read was made from (its dataset, task spec, template or few-shot file):
    a slip such as ``--output data/x.jsonl`` would replace it, and the run's resume and rescore check its sha256."""
    for run in runs:
        inputs = _run_inputs(run)
        for what, source in inputs.files:
            if _same_file(target, source):
                raise ConfigError(
                    f"{option} {_shown(path, target)}: is the {what} of the run {run} that {command} reads; writing "
                    f"there would replace it, and the run could no longer be resumed or rescored; choose another path"
                )
        if inputs.directory is not None:
            folder, endings = inputs.directory
            if target.parent == folder.resolve() and target.name.endswith(endings) and not target.name.startswith("."):
                raise ConfigError(
                    f"{option} {_shown(path, target)}: would be a new file of the dataset directory {folder} of the "
                    f"run {run} that {command} reads (its {' and '.join(endings)} files are the dataset); the run "
                    "could no longer be resumed or rescored; choose another path"
                )


def check_output_file(option: str, path: Path, runs: Iterable[Path], command: str) -> None:
    """Refuse, with a ``ConfigError`` naming ``option``, a file to write that is in (or a hard link into) one of
    the ``runs`` the command reads or inside any other run directory, a file one of the ``runs`` was made from
    (under any name), an existing directory, or in a directory that does not exist."""
    runs = list(runs)
    refuse_inside_runs(option, path, runs, command)
    _refuse_hard_links(option, path, runs, command)
    target = path.resolve()
    _refuse_run_inputs(option, path, target, runs, command)
    _refuse_other_runs(option, path, target)
    if target.is_dir():
        raise ConfigError(f"{option} {_shown(path, target)}: is a directory; give the name of a file to write")
    if not target.parent.is_dir():
        parent = path.parent if Path(os.path.abspath(path)) == target else target.parent
        raise ConfigError(f"{option} {_shown(path, target)}: the directory {parent} does not exist")


@contextmanager
def writing_output(option: str, path: Path | None) -> Iterator[None]:
    """Turn the OS refusing to write ``path`` (permission denied, disk full ...) into an ``ArtifactError`` that
    names ``option``; with no ``path`` (standard output) errors pass through as they are."""
    if path is None:
        yield
        return
    try:
        yield
    except OSError as exc:
        raise ArtifactError(f"{option} {path}: cannot write it: {exc.strerror or exc}") from exc


__all__ = ["check_output_file", "refuse_inside_runs", "writing_output"]
