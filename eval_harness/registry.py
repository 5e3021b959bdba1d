"""One generic registry for providers, scorers and anything else that is looked up by name.

Built-in entries register through the same hook third parties use: an entry point in the group
``eval_harness.<kind>`` naming a module whose import runs ``@registry.register(...)`` decorators. Name the
entry point after the name the module registers (one entry point per name) and a lookup imports only it.
Modules are imported only when a name is first looked up, so the CLI starts without importing httpx
for a mock run.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from importlib.metadata import EntryPoints, entry_points
from typing import Generic, TypeVar

from eval_harness.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """Name → object, filled by decorators in modules found through entry points."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, T] = {}
        self._discovered = False
        self._found: EntryPoints | None = None

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: register ``obj`` under ``name``."""

        def decorate(obj: T) -> T:
            if name in self._entries and self._entries[name] is not obj:
                existing = self._entries[name]
                if getattr(existing, "__qualname__", None) != getattr(obj, "__qualname__", None):
                    raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._entries[name] = obj
            return obj

        return decorate

    def get(self, name: str) -> T:
        """Look ``name`` up, importing plugin modules on first miss; suggest close names on failure.

        An entry point named like the lookup is imported first, alone: a run that uses the mock and exact
        match imports those two modules, not every provider and scorer (~50 ms of start-up).
        """
        if name not in self._entries and not self._discovered:
            for module in sorted({ep.value for ep in self._entry_points() if ep.name == name}):
                importlib.import_module(module)
        if name not in self._entries:
            self.discover()
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._entries, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            known = ", ".join(sorted(self._entries)) or "none"
            raise UnknownNameError(f"unknown {self.kind} {name!r}{hint} (known: {known})") from None

    def names(self) -> list[str]:
        """All registered names, after discovery."""
        self.discover()
        return sorted(self._entries)

    def discover(self) -> None:
        """Import every module that registers into this registry (once)."""
        if self._discovered:
            return
        self._discovered = True
        for module in sorted({ep.value for ep in self._entry_points()}):
            importlib.import_module(module)

    def _entry_points(self) -> EntryPoints:
        if self._found is None:
            self._found = entry_points(group=f"eval_harness.{self.kind}s")
        return self._found
