"""``eval-harness cache info|clear``: the on-disk response cache that ``run --cache`` reads and fills."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

_cache_app = typer.Typer(
    help="Inspect or clear the response cache (run --cache).", no_args_is_help=True, rich_markup_mode=None
)

_CacheDirOption = Annotated[
    Path | None,
    typer.Option(
        "--cache-dir",
        help="Cache directory (default: $EVAL_HARNESS_CACHE_DIR, else $XDG_CACHE_HOME/eval-harness/responses, "
        "else ~/.cache/eval-harness/responses).",
    ),
]


def _directory(cache_dir: Path | None) -> Path:
    """The cache directory, refused (one line) when it names a file: '0 cached answers' would hide the slip."""
    from eval_harness.cache import default_cache_dir
    from eval_harness.config import Settings
    from eval_harness.errors import ConfigError

    directory = cache_dir or Settings.load().cache_dir or default_cache_dir()
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{directory}: not a directory; the cache is a directory of answers")
    return directory


@_cache_app.command("info")
def info_command(cache_dir: _CacheDirOption = None) -> None:
    """Show where the cache is, how many answers it holds and their size."""
    from eval_harness.cache import ResponseCache
    from eval_harness.cli.render.cache import print_cache_info

    print_cache_info(ResponseCache(_directory(cache_dir)).info())


@_cache_app.command("clear")
def clear_command(cache_dir: _CacheDirOption = None) -> None:
    """Delete every cached answer (only files the cache wrote)."""
    from eval_harness.cache import ResponseCache
    from eval_harness.cli.render.cache import print_cache_cleared

    directory = _directory(cache_dir)
    print_cache_cleared(directory, *ResponseCache(directory).clear())


def register(app: typer.Typer) -> None:
    app.add_typer(_cache_app, name="cache")


__all__ = ["clear_command", "info_command", "register"]
