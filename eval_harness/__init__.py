"""eval-harness: an async, crash-safe LLM evaluation runner that reports capability profiles."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("eval-harness")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
