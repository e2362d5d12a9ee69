"""Lazy package namespaces (PEP 562): a method package names its public API and imports each name on first use,
so that importing the package, its ``paper.py`` or its ``cli.py`` costs no torch, PyG or transformers."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Callable, Mapping, Sequence


class _LazyPackage(ModuleType):
    """A package whose exported names win over its submodules of the same name: ``gnn_certify.certify`` stays the
    function (as an eager ``from .certify import certify`` leaves it) after some module imported the submodule
    ``gnn_certify/certify.py``, which binds the submodule to the package's attribute."""

    def __getattribute__(self, name: str):
        value = ModuleType.__getattribute__(self, name)
        if isinstance(value, ModuleType) and not name.startswith("_"):
            namespace = ModuleType.__getattribute__(self, "__dict__")
            if name in namespace.get("__lazy_exports__", ()) and value.__name__ == f"{namespace['__name__']}.{name}":
                value = getattr(value, name)
                namespace[name] = value
        return value


def lazy_package(
    package: str, exports: Mapping[str, Sequence[str]], *, require: Callable[[], None] | None = None
) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of a package whose names are imported on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to sequence of str
        Relative module (``".baselines"``, ``"..data.tabular"``) -> the names it provides.
    require : callable, optional
        Called before the first import (e.g. ``require("torch_geometric", extra="graphs")``): a missing optional
        dependency is then one :class:`~icml24.extras.MissingExtra` line, not an ImportError.

    Returns
    -------
    (callable, callable, list of str)
        ``__getattr__(name)`` and ``__dir__()`` for the package's module, and its ``__all__`` (every exported
        name, in the order of ``exports``): the table is the one list of the package's public names.
    """
    where = {name: module for module, names in exports.items() for name in names}
    module_object = sys.modules[package]
    namespace = module_object.__dict__
    namespace["__lazy_exports__"] = where
    folders = [Path(p) for p in getattr(module_object, "__path__", [])]
    if any((folder / f"{name}.py").is_file() for folder in folders for name in where):
        module_object.__class__ = _LazyPackage

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if require is not None:
            require()
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__, list(where)


__all__ = ["lazy_package"]
