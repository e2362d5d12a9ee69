"""Building blocks shared by several methods: GNN backbones and MLPs (``gnn``, needs the ``graphs`` extra) and
tiny language models (``lm``, needs the ``lm`` extra). Names are imported on first use."""

from __future__ import annotations

import importlib

_LAZY = {name: "gnn" for name in ("GCN", "SAGE", "GIN", "MLP", "build_backbone", "pretrain_inductive", "to_inductive")}

__all__ = list(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
