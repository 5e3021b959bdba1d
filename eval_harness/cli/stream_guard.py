"""The process's stderr and stdout when their reader goes away (`| head -1`): silenced, never raised into what was
being said. Not in ``eval_harness.cli`` itself, which the entry imports before its Ctrl-C guard is in place."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

_stderr_gone = False
_stdout_gone = False


def silence_stderr() -> None:
    """The reader of stderr went away: what is still said there goes nowhere, and ``stderr_gone`` says so."""
    global _stderr_gone
    _stderr_gone = True
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)


def stderr_gone() -> bool:
    """Whether the reader of stderr went away during the command (a command that succeeded then ends 141)."""
    return _stderr_gone


def silence_stdout() -> None:
    """The reader of stdout went away (`| head -1`): what is still printed goes nowhere, the command goes on to its
    own end (a gate it judges after printing still fails it), and ``stdout_gone`` says so."""
    global _stdout_gone
    _stdout_gone = True
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the interpreter's last flush must not fail on the closed pipe either


def stdout_gone() -> bool:
    """Whether the reader of stdout went away during the command (a command that succeeded then ends 141)."""
    return _stdout_gone


class _StreamGuard:
    """sys.stderr or sys.stdout for the process: a write that meets a closed pipe (`| head -1`, `2>&1 | head -1`)
    silences the stream instead of raising into whatever was being said — a progress line mid-run (the run ended
    "failed" with every record written), the note of a Ctrl-C (the stop was never asked for), an error's own line
    (its exit code lost), a quiet run's directory (its failed gate read 141)."""

    def __init__(self, stream: Any, silence: Callable[[], None]) -> None:
        self._stream = stream
        self._silence = silence

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            self._silence()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._silence()
            self._stream.flush()  # what the buffer held goes to /dev/null now

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_streams() -> None:
    """Install the guards (the process entry does; the CLI called in-process leaves the host's streams alone)."""
    if not isinstance(sys.stderr, _StreamGuard):
        sys.stderr = _StreamGuard(sys.stderr, silence_stderr)
    if not isinstance(sys.stdout, _StreamGuard):
        sys.stdout = _StreamGuard(sys.stdout, silence_stdout)


__all__ = ["guard_streams", "silence_stderr", "silence_stdout", "stderr_gone", "stdout_gone"]
