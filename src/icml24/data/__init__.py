"""Datasets: loaders of real data from the data root, and synthetic generators with known ground truth.

The data root is ``$ICML24_DATA``, else ``~/.cache/icml24``; it may be read-only. Missing files raise
:class:`~icml24.errors.DataUnavailable` naming them and the folder; nothing is ever downloaded.
"""

from ._root import cache_dir, data_root
from .graphs import csbm
from .planetoid import planetoid
from .tabular import Split, digits, fashion_mnist, gaussian_mixture

__all__ = ["data_root", "cache_dir", "planetoid", "digits", "fashion_mnist", "csbm", "gaussian_mixture", "Split"]
