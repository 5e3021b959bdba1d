"""The command line: one module per command, ``render/`` the only place that draws with rich."""

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
# The bidirectional overrides and isolates too: one reverses how the rest of its line reads on a terminal that
# honours it (what is read is not what the model wrote); the marks and joiners that emoji and scripts need stay.
_CONTROL = r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"


def visible(text: str) -> str:
    """``text`` with its control characters (but line breaks and tabs) written as escapes (``\\x1b``)."""
    # re imported here, not above: this package is imported before the launcher can catch a Ctrl-C, so what it
    # imports at the top widens the moment an interrupt still ends in a traceback (re's cache keeps the pattern)
    import re

    return re.sub(_CONTROL, lambda m: repr(m.group())[1:-1], text) if re.search(_CONTROL, text) else text


__all__ = ["EXIT_BAD_INPUT", "EXIT_BROKEN_PIPE", "EXIT_CHECK_FAILED", "EXIT_INTERRUPTED", "visible"]
