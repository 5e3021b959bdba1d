"""One generic registry for providers, scorers and anything else that is looked up by name.

Built-in entries register through the same hook third parties use: an entry point in the group
``eval_harness.<kind>s`` naming a module whose import runs ``@registry.register(...)`` decorators. Name the
entry point after the name the module registers (one entry point per name).

Loading, on the first lookup of a registry: every plugin's module (an entry point whose module is not part of
``eval_harness``) is imported, so that what a plugin does never depends on which name happens to be looked
up; a built-in module is imported only when a lookup needs it (a run that uses the mock and exact match imports
those two modules, not every provider and scorer: ~50 ms of start-up). So a plugin module should stay cheap to
import (heavy libraries imported inside its factories).

A name belongs to one registrant: a plugin (or script) that registers a name already taken, a built-in's
name included, is refused with a ``ConfigError`` naming both; so is a plugin module that fails to import,
named by its entry point. Either stops every lookup of that registry, whichever name is looked up.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from importlib.metadata import EntryPoint, EntryPoints, entry_points
from typing import Generic, TypeVar

from eval_harness.errors import ConfigError, EvalHarnessError, UnknownNameError

_T = TypeVar("_T")

_PACKAGE = __name__.partition(".")[0]


def _is_builtin(module: str) -> bool:
    """True for a module of eval_harness itself (a built-in entry), False for a plugin's or a script's."""
    return module == _PACKAGE or module.startswith(_PACKAGE + ".")


class Registry(Generic[_T]):
    """Name → object, filled by decorators in modules found through entry points."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.group = f"eval_harness.{kind}s"
        """The entry-point group of this registry."""
        self._entries: dict[str, _T] = {}
        self._discovered = False
        self._plugins_loaded = False
        self._plugin_error: ConfigError | None = None
        """Why the plugins could not be loaded: raised again at each lookup without importing them again."""
        self._found: EntryPoints | None = None
        self._builtins: dict[str, str] | None = None  # built-in name -> its module, once entry points are read

    def register(self, name: str) -> Callable[[_T], _T]:
        """Decorator: register ``obj`` under ``name``; a name already taken is a ``ConfigError``."""

        def decorate(obj: _T) -> _T:
            taken = self._taken_by(name, obj)
            if taken is not None:
                raise self._name_taken(name, taken, obj)
            self._entries[name] = obj
            return obj

        return decorate

    def get(self, name: str) -> _T:
        """Look ``name`` up, importing plugin modules on first use; suggest close names on failure.

        A built-in entry point named like the lookup is imported first, alone; every built-in module only
        when the name is still unknown.
        """
        self._load_plugins()
        if name not in self._entries and not self._discovered:
            for module in sorted({ep.module for ep in self._entry_points() if ep.name == name}):
                importlib.import_module(module)
        if name not in self._entries:
            self.discover()
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError.among(self.kind, name, self._entries) from None

    def names(self) -> list[str]:
        """All registered names, after discovery."""
        self.discover()
        return sorted(self._entries)

    def discover(self) -> None:
        """Import every module that registers into this registry (once)."""
        self._load_plugins()
        if self._discovered:
            return
        self._discovered = True
        for module in sorted({ep.module for ep in self._entry_points() if _is_builtin(ep.module)}):
            importlib.import_module(module)

    def _load_plugins(self) -> None:
        """Import every plugin module (once; a failure is kept and raised again by every later lookup)."""
        if self._plugin_error is not None:
            raise self._plugin_error
        if self._plugins_loaded:
            return
        self._plugins_loaded = True  # before importing: a plugin module may look a name up as it loads
        try:
            builtins = self._builtin_modules()
            for name, obj in self._entries.items():  # registered (by a script) before entry points were read
                if name in builtins and not _is_builtin(_module_of(obj)):
                    raise self._name_taken(name, builtins[name], obj)
            plugins: dict[str, list[EntryPoint]] = {}
            for ep in self._entry_points():
                if not _is_builtin(ep.module):
                    plugins.setdefault(ep.module, []).append(ep)
            for module in sorted(plugins):
                _import_plugin(module, plugins[module])
        except ConfigError as exc:
            self._plugin_error = exc
            raise
        except BaseException:
            self._plugins_loaded = False
            raise

    def _name_taken(self, name: str, holder: str, obj: object) -> ConfigError:
        """The refusal of ``obj`` taking ``name``, which the module ``holder`` registers."""
        return ConfigError(
            f"{self.kind} {name!r} is already registered by {holder}; {_qualified(obj)} needs another name"
        )

    def _taken_by(self, name: str, obj: _T) -> str | None:
        """Who holds ``name`` already, when it is not ``obj`` itself; None when ``obj`` may take it."""
        if name in self._entries:
            existing = self._entries[name]
            if existing is obj or _same_definition(existing, obj):
                return None  # the same module imported again (a reload, or under a second name)
            return _module_of(existing)
        if self._builtins is not None and name in self._builtins and not _is_builtin(_module_of(obj)):
            # the built-in's module is not imported yet; once it is, this name is its own
            return self._builtins[name]
        return None

    def _builtin_modules(self) -> dict[str, str]:
        if self._builtins is None:
            self._builtins = {ep.name: ep.module for ep in self._entry_points() if _is_builtin(ep.module)}
        return self._builtins

    def _entry_points(self) -> EntryPoints:
        if self._found is None:
            self._found = entry_points(group=self.group)
        return self._found


def _import_plugin(module: str, points: list[EntryPoint]) -> None:
    """Import a plugin's module; what goes wrong is a ``ConfigError`` naming its entry point(s)."""
    try:
        importlib.import_module(module)
    except Exception as exc:
        place = _entry_point_text(module, points)
        if isinstance(exc, EvalHarnessError):  # a name it registers is taken, ...: the message says what
            raise ConfigError(f"{place}: {exc}") from None
        package = _package(points)
        fix = f"; fix or uninstall the package {package}" if package else ""
        raise ConfigError(f"{place}: failed to import: {type(exc).__name__}: {exc}{fix}") from None


def _entry_point_text(module: str, points: list[EntryPoint]) -> str:
    """``plugin entry point NAME = MODULE (group G, package P)``, as a pyproject.toml declares it."""
    names = sorted({ep.name for ep in points})
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    package = _package(points)
    where = f"group {points[0].group}" + (f", package {package}" if package else "")
    return f"plugin entry point{'s' if len(names) > 1 else ''} {shown} = {module} ({where})"


def _package(points: list[EntryPoint]) -> str | None:
    dist = getattr(points[0], "dist", None)
    return str(dist.name) if dist is not None else None


def _module_of(obj: object) -> str:
    return str(getattr(obj, "__module__", None) or "?")


def _qualified(obj: object) -> str:
    """``module.qualname`` of a registered object, for messages."""
    return f"{_module_of(obj)}.{getattr(obj, '__qualname__', type(obj).__name__)}"


def _same_definition(a: object, b: object) -> bool:
    """True when ``a`` and ``b`` are one definition, loaded twice: the same name in the same source file."""
    if getattr(a, "__qualname__", None) != getattr(b, "__qualname__", None):
        return False
    files = [getattr(sys.modules.get(_module_of(x)), "__file__", None) for x in (a, b)]
    return files[0] == files[1] if None not in files else _module_of(a) == _module_of(b)


__all__ = ["Registry"]
