"""The command line: one module per command, ``render.py`` the only place that draws with rich."""

EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE, what a shell reports when the reader of stdout went away (`| head`): not 1, which is a failed
gate or a dataset with problems."""
