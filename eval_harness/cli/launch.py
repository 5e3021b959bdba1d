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


def _quit_now(signum: int, frame: object) -> None:
    """Ctrl-C or SIGTERM outside a run's own handling (``cli.run._Interrupts``): the process ends here, saying so.
    Raised as KeyboardInterrupt instead, it landed inside a C extension's module setup (orjson's segfaulted, numpy's
    failed to import, exit 1), inside pydantic's schema building (a SchemaError traceback), or in a callback that
    printed and ignored it (the command ran on to exit 0). What a command writes is atomic (temp file, rename): at
    worst a temporary is left, which ``resume`` and ``cache clear`` remove."""
    os.write(2, b"interrupted\n")
    os._exit(130)


def entered_as_process() -> bool:
    """Whether this is the eval-harness process (``run``), not the CLI called in-process by a host, whose signal
    handlers stay its own."""
    return _entered_as_process


def run() -> None:  # never returns (run_process exits); typing is not imported before the handlers are set
    """Parse the command line and run the command, with the collector paused for start-up."""
    global _paused, _entered_as_process
    _entered_as_process = True
    # SIGTERM (a CI runner's timeout) ends a command as Ctrl-C does: 'interrupted', exit 130, where its default
    # kills the process without a word (143); a run's own handler (cli.run._Interrupts) takes over while it runs.
    # A signal ignored when the process started (SIGINT in a background job of a script, nohup) stays ignored.
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, _quit_now)
    if gc.isenabled():
        gc.disable()
        _paused = True
    from eval_harness.cli.app import run_process

    run_process()


def resume_collection() -> None:
    """End the start-up pause (the command starts now): freeze what exists, collect from here on.

    Does nothing unless ``run`` paused the collector: the CLI called in-process (as the tests do) leaves the
    host's collector as it was, on or off."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


__all__ = ["entered_as_process", "resume_collection", "run"]
