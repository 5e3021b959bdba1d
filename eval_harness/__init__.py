"""eval-harness: an async, crash-safe LLM evaluation runner that reports capability profiles."""

# The one place the version is written (pyproject.toml reads it from here): looking it up through
# importlib.metadata cost ~12 ms of start-up (it imports email and scans the installed distributions).
__version__ = "0.1.0"

__all__ = ["__version__"]
