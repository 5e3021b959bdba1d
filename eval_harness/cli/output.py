"""Where a command may write: never into a run it reads, never onto a directory, never into a missing one.

Checked before the command reads or writes anything, so a refused ``--output`` leaves every artifact as it was.
Imported at every start (``app`` imports each command module): it needs nothing beyond the standard library.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from eval_harness.errors import ArtifactError, ConfigError


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
    """The same refusal for any run directory (one holding a ``manifest.json`` and a ``samples.jsonl``), not
    only those read: a slip such as ``--output results/model-b/samples.jsonl`` would destroy another run."""
    directory = target.parent
    if (directory / "manifest.json").is_file() and (directory / "samples.jsonl").exists():
        raise ConfigError(
            f"{option} {_shown(path, target)}: is inside the run directory {directory}; writing there could "
            "damage that run, choose a path outside it"
        )


def check_output_file(option: str, path: Path, runs: Iterable[Path], command: str) -> None:
    """Refuse, with a ``ConfigError`` naming ``option``, a file to write that is in (or a hard link into) one of
    the ``runs`` the command reads or inside any other run directory, an existing directory, or in a directory
    that does not exist."""
    runs = list(runs)
    refuse_inside_runs(option, path, runs, command)
    _refuse_hard_links(option, path, runs, command)
    target = path.resolve()
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
