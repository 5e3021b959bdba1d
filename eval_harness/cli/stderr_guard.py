"""The process's stderr when its reader goes away (`2>&1 | head -1`): silenced, never raised into what was being
said. Not in ``eval_harness.cli`` itself, which the entry imports before its Ctrl-C guard is in place."""

from __future__ import annotations

import os
import sys
from typing import Any

_stderr_gone = False


def silence_stderr() -> None:
    """The reader of stderr went away: what is still said there goes nowhere, and ``stderr_gone`` says so."""
    global _stderr_gone
    _stderr_gone = True
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)


def stderr_gone() -> bool:
    """Whether the reader of stderr went away during the command (a command that succeeded then ends 141)."""
    return _stderr_gone


class _StderrGuard:
    """sys.stderr for the process: a write that meets a closed pipe (`2>&1 | head -1`) silences stderr instead of
    raising into whatever was being said — a progress line mid-run (the run ended "failed" with every record
    written), the note of a Ctrl-C (the stop was never asked for), an error's own line (its exit code lost)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            silence_stderr()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            silence_stderr()
            self._stream.flush()  # what the buffer held goes to /dev/null now

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_stderr() -> None:
    """Install the guard (the process entry does; the CLI called in-process leaves the host's stream alone)."""
    if not isinstance(sys.stderr, _StderrGuard):
        sys.stderr = _StderrGuard(sys.stderr)


__all__ = ["guard_stderr", "silence_stderr", "stderr_gone"]
