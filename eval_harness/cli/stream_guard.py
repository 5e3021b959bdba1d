"""The process's stdout and stderr when their reader goes away (`| head -1`, `2>&1 | head -1`): silenced, never a
traceback, and the exit code the shell gives a closed pipe (141) only for a command that did not fail otherwise.

stderr (progress, notes) going away never stops a command: a run goes on quietly to its end. stdout going away
stops a command at once (`inspect --n 5000 | head -1` need not draw 5,000 samples into nothing), unless the
command judges something after printing (``verdict_follows``: a gate, problems found): then stdout goes quiet and
the command goes on, so that its verdict (exit 1) is not lost to 141. Not in ``eval_harness.cli``'s own module,
which the entry imports before its Ctrl-C guard is in place."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from eval_harness.cli import EXIT_BROKEN_PIPE

_gone: set[int] = set()
"""The descriptors (1, 2) whose reader went away during the command."""
_verdict_follows = False


def begin_command() -> None:
    """Forget what an earlier command of this process was told (the CLI called in-process, as tests call it, runs
    several commands in one process)."""
    global _verdict_follows
    _verdict_follows = False
    _gone.clear()


def verdict_follows() -> None:
    """The command judges something after its output (a gate, a dataset's problems): a reader of stdout going
    away must not end it before its exit code is known."""
    global _verdict_follows
    _verdict_follows = True


def _silence(descriptor: int, *, reader_left: bool = True) -> None:
    """What is still written to ``descriptor`` goes nowhere (the interpreter's last flush must not fail on the
    closed pipe either); ``reader_left``: because its reader went away (not a full disk)."""
    if reader_left:
        _gone.add(descriptor)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)


def stderr_broke() -> None:
    """The reader of stderr went away: stderr goes quiet, the command goes on."""
    _silence(2)


def stdout_broke() -> None:
    """The reader of stdout went away: stdout goes quiet, and the command ends at once with 141 unless a verdict
    follows its output (``verdict_follows``)."""
    _silence(1)
    if not _verdict_follows:
        raise SystemExit(EXIT_BROKEN_PIPE)


def stderr_failed(error: OSError) -> None:
    """stderr cannot be written (`2>/dev/full`): it goes quiet, and the command's own exit code stands (no reader
    went away; the message that would say so has nowhere to go)."""
    _silence(2, reader_left=False)


def stdout_failed(error: OSError) -> None:
    """stdout cannot be written (`>/dev/full`): an error named by the stream, as an error about a file names the
    file."""
    raise OSError(error.errno, error.strerror, "standard output") from None


def reader_gone() -> bool:
    """Whether the reader of stdout or stderr went away during the command (one that succeeded then ends 141)."""
    return bool(_gone)


class _StreamGuard:
    """sys.stdout or sys.stderr for the process: a write that meets a closed pipe calls ``broke`` (one that fails
    otherwise, a full disk, ``failed``) instead of raising into whatever was being said — a progress line mid-run
    (the run ended "failed" with every record written), the note of a Ctrl-C (the stop was never asked for), an
    error's own line (its exit code lost), a quiet run's directory before its gate (the failed gate read 141)."""

    def __init__(self, stream: Any, broke: Callable[[], None], failed: Callable[[OSError], None]) -> None:
        self._stream = stream
        self._broke = broke
        self._failed = failed

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            self._broke()
            return len(text)
        except OSError as exc:
            self._failed(exc)
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._broke()
            self._stream.flush()  # what the buffer held goes to /dev/null now
        except OSError as exc:
            self._failed(exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guard_streams() -> None:
    """Install the guards (the process entry does; the CLI called in-process leaves the host's streams alone). A
    stream the process was started without (`>&-`, `2>&-`: Python makes it None) writes to /dev/null: what is said
    there is lost, as the caller chose, and the exit code stays the command's own."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the process's stream, never closed
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the process's stream, never closed
    if not isinstance(sys.stderr, _StreamGuard):
        sys.stderr = _StreamGuard(sys.stderr, stderr_broke, stderr_failed)
    if not isinstance(sys.stdout, _StreamGuard):
        sys.stdout = _StreamGuard(sys.stdout, stdout_broke, stdout_failed)


__all__ = [
    "begin_command",
    "guard_streams",
    "reader_gone",
    "stderr_broke",
    "stderr_failed",
    "stdout_broke",
    "stdout_failed",
    "verdict_follows",
]
