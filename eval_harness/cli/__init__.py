"""The command line: one module per command, ``render.py`` the only place that draws with rich."""
