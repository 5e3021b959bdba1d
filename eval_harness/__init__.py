"""eval-harness: an async, crash-safe LLM evaluation runner that reports capability profiles."""

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    # Resolved on first use: importlib.metadata costs tens of milliseconds that `--help` should not pay.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("eval-harness")
        except PackageNotFoundError:  # a source tree that was never installed
            return "0.0.0+source"
    raise AttributeError(f"module 'eval_harness' has no attribute {name!r}")
