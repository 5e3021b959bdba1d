"""What a reader going away does to a command (cli/stream_guard.py); end to end in test_cli_run.py's pipe tests."""

from __future__ import annotations

import pytest

from eval_harness.cli import EXIT_BROKEN_PIPE, stream_guard


def test_a_verdict_declared_by_one_command_does_not_hold_for_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    # the CLI called in-process runs several commands in one process: a gated report's verdict_follows() kept the
    # next command drawing its whole output into nothing after its reader left
    monkeypatch.setattr(stream_guard, "_silence", lambda descriptor, reader_left=True: None)  # no dup2 over pytest's
    stream_guard.begin_command()
    stream_guard.verdict_follows()
    stream_guard.stdout_broke()  # a verdict follows: the command goes on
    stream_guard.begin_command()
    with pytest.raises(SystemExit) as stopped:
        stream_guard.stdout_broke()
    assert stopped.value.code == EXIT_BROKEN_PIPE
    stream_guard.begin_command()
    assert not stream_guard.reader_gone()
