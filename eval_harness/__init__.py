"""eval-harness: an async, crash-safe LLM evaluation runner that reports capability profiles."""

from typing import Any

__all__ = ["__version__"]


def __getattr__(name: str) -> Any:
    # Resolved on first use: importlib.metadata costs tens of milliseconds that `--help` should not pay.
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("eval-harness")
        except PackageNotFoundError:  # a source tree that was never installed
            found = "0.0.0+source"
        globals()["__version__"] = found  # looked up once: the manifest and the user agent both ask
        return found
    raise AttributeError(f"module 'eval_harness' has no attribute {name!r}")
