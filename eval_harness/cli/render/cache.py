"""Views of the response cache."""

from __future__ import annotations

from pathlib import Path

from eval_harness.cache import CacheInfo
from eval_harness.cli.render import counted, stderr, stdout


def _size(size: int) -> str:
    if size < 1024:
        return f"{size:,} B"
    value = size / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:,.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GiB"


def print_cache_info(info: CacheInfo) -> None:
    if not info.directory.exists():
        stdout.print(f"{info.directory}: no cache yet (the directory does not exist)", markup=False, soft_wrap=True)
        return
    leftovers = f", {counted(info.temp_files, 'unfinished write')}" if info.temp_files else ""
    answers = counted(info.entries, "cached answer")
    stdout.print(f"{info.directory}: {answers}, {_size(info.bytes)}{leftovers}", markup=False, soft_wrap=True)


def print_cache_cleared(directory: Path, removed: int, left: list[Path]) -> None:
    stdout.print(f"{directory}: removed {counted(removed, 'cached answer')}", markup=False, soft_wrap=True)
    if left:
        first = left[0]
        kind = "a directory" if first.is_dir() and not first.is_symlink() else "refused by the system"
        stderr.print(
            f"warning: {counted(len(left), 'path')} under an entry's name could not be removed (the first: {first}, "
            f"{kind})",
            markup=False,
            soft_wrap=True,
        )


__all__ = [
    "print_cache_cleared",
    "print_cache_info",
]
