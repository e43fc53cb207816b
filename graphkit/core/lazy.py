"""Package attributes imported on first use (PEP 562 ``__getattr__``).

Why: ``graphkit build`` checks whether anything changed before it imports pyarrow, pydantic
or the engine (:mod:`graphkit.builds.uptodate`); a package whose ``__init__`` imported its
modules eagerly would load them all for that check. Standard library only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` that imports ``exports[name]`` (a module path) the
    first time ``name`` is asked for, and keeps the value in the package."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__


def lazy_modules(package: str, names: Collection[str]) -> Callable[[str], Any]:
    """Return a package ``__getattr__`` that imports its submodule ``name`` (one of
    ``names``) the first time ``package.name`` is asked for, as an eager ``from package
    import name`` in its ``__init__`` would have made it available."""

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return import_module(f"{package}.{name}")  # the import sets the attribute too

    return __getattr__


class NoPandas:
    """An import finder refusing pandas, as if it were not installed.

    pyarrow's first ``pa.array``/``pa.table`` of Python objects imports pandas, when it
    can, only to ask whether the input is a pandas object (0.2 CPU-s; a third of
    ``graphkit lineage`` on a 1M-row snapshot). Where nothing in the process uses pandas
    the answer is no either way, and pyarrow converts exactly as without pandas.
    (``sys.modules["pandas"] = None`` is not enough: pyarrow's compiled import takes the
    None as the module.)"""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("graphkit: pandas is not used here", name=name)
