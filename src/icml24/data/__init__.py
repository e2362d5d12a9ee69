"""Datasets: loaders of real data from the data root, and synthetic generators with known ground truth.

The data root is ``$ICML24_DATA``, else ``~/.cache/icml24``; it may be read-only. Missing files raise
:class:`~icml24.errors.DataUnavailable` naming them, the folder and the ``icml24 data fetch NAME`` that gets them;
loaders never download (:mod:`icml24.data.fetch` does, when asked).

Names are imported on first use, so that ``import icml24.data`` needs neither PyG nor transformers; the graph
loaders need the ``graphs`` extra and say so in one line when it is missing.
"""

from __future__ import annotations

import importlib

from ._root import cache_dir, data_root

_LAZY = {
    "csbm": "graphs",
    "planetoid": "planetoid",
    "Split": "tabular",
    "digits": "tabular",
    "fashion_mnist": "tabular",
    "gaussian_mixture": "tabular",
    "GroupedSplit": "grouped",
    "fashion_mnist_inverted": "grouped",
    "SpuriousData": "spurious",
    "spurious_gaussian": "spurious",
    "border_images": "spurious",
    "mnist17_border": "spurious",
    "digits_border": "spurious",
    "fashion_border": "spurious",
}

__all__ = ["data_root", "cache_dir", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
