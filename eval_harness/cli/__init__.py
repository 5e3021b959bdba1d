"""The command line: one module per command, ``render/`` the only place that draws with rich."""

import os
import re
import sys
from typing import Any

# The exit codes of every command (README "Exit codes"); an EvalHarnessError carries its own (2, or 1 for a
# failed gate), since errors.py, a building block, cannot import the CLI.
EXIT_CHECK_FAILED = 1
"""A quality gate failed, or validate-dataset found problems: the command worked and the answer is no."""
EXIT_BAD_INPUT = 2
"""Bad flags, configuration or data, or an error from the OS (disk full, permission denied)."""
EXIT_INTERRUPTED = 130
"""128 + SIGINT: Ctrl-C or SIGTERM stopped the command (a run can be resumed)."""
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE, what a shell reports when the reader of stdout went away (`| head`): not 1, which is a failed
gate or a dataset with problems."""

# Control characters other than line breaks and tabs, shown as escapes: a dataset value or a model's output
# holding ESC[2J (clear the screen), an OSC title sequence or a bare carriage return must not act on the
# terminal of the user who reads it, in a table or in an error message.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with its control characters (but line breaks and tabs) written as escapes (``\\x1b``)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text) if _CONTROL.search(text) else text


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


__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_CHECK_FAILED",
    "EXIT_INTERRUPTED",
    "guard_stderr",
    "silence_stderr",
    "stderr_gone",
    "visible",
]
