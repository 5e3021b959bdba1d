"""The command line: one module per command, ``render/`` the only place that draws with rich."""

import re

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


__all__ = ["EXIT_BROKEN_PIPE", "visible"]
