"""The process entry (the ``eval-harness`` script and ``python -m eval_harness``): start-up without the
cyclic garbage collector.

Start-up allocates ~40,000 long-lived objects (modules, classes, pydantic's validators, typer's
parameter adapters) and leaves ~800 of them as cyclic garbage. With the collector on, that churn triggers
~90 young-generation collections, ~30-40 ms of a 0.5 s start (measured with ``gc.callbacks``); and the
first full collection of a run then walks all 40,000 objects, a 30 ms stall with every sample in flight
waiting. So the collector is paused from the first import to the start of the command
(``resume_collection``), and what start-up built is frozen: later collections never walk it again.
"""

from __future__ import annotations

import gc
import os
import signal

_paused = False
_entered_as_process = False
_int_ignored = False


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _quit_starting(signum: int, frame: object) -> None:
    """Ctrl-C or SIGTERM while the process imports and parses: nothing is written yet, so it ends here. Raised as
    KeyboardInterrupt instead, it could land inside a C extension's module setup (orjson's segfaulted), or in a
    callback that prints and ignores it (the command then ran on to exit 0)."""
    os.write(2, b"interrupted\n")
    os._exit(130)


def entered_as_process() -> bool:
    """Whether this is the eval-harness process (``run``), not the CLI called in-process by a host, whose signal
    handlers stay its own."""
    return _entered_as_process


def run() -> None:  # never returns (run_process exits); typing is not imported before the handlers are set
    """Parse the command line and run the command, with the collector paused for start-up."""
    global _paused, _entered_as_process, _int_ignored
    _entered_as_process = True
    # SIGTERM (a CI runner's timeout) ends a command as Ctrl-C does: 'interrupted', exit 130, where its default
    # kills the process without a word (143); a run's own handler (cli.run._Interrupts) takes over while it runs.
    # A SIGINT ignored when the process started (a background job of a script) stays ignored.
    _int_ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if not _int_ignored:
        signal.signal(signal.SIGINT, _quit_starting)
    signal.signal(signal.SIGTERM, _quit_starting)
    if gc.isenabled():
        gc.disable()
        _paused = True
    import orjson  # noqa: F401 - every command reads or writes with it: imported under the handlers above

    from eval_harness.cli.app import run_process

    run_process()


def command_begins() -> None:
    """The command starts: interrupts raise KeyboardInterrupt from here, so what it writes is cleaned up and it says
    what it stopped (see ``run``), and the start-up pause of the collector ends (``resume_collection``)."""
    if _entered_as_process:
        if not _int_ignored:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _terminated)
    resume_collection()


def resume_collection() -> None:
    """End the start-up pause (the command starts now): freeze what exists, collect from here on.

    Does nothing unless ``run`` paused the collector: the CLI called in-process (as the tests do) leaves the
    host's collector as it was, on or off."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


__all__ = ["command_begins", "entered_as_process", "resume_collection", "run"]
