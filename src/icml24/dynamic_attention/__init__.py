"""Dynamic attention maintenance (van den Brand, Song, Zhou; ICML 2024, arXiv 2304.02207).

``DynamicAttention`` is the paper's lazy-update data structure (entry and row updates of ``K`` and ``V``,
entry and row queries, appending and deleting rows, exact in float64 for any finite logits thanks to a precision
guard); ``MultiHeadDynamicAttention`` runs one per head on ``(heads, n, d)`` torch tensors; ``baselines`` holds
the peers (naive per-query recomputation, eager maintenance, the O(n^2)-memory lazy variant, full
recomputation), with the same API.
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".structure": (
        "DynamicAttention",
        "rebuild_period",
    ),
    ".multihead": ("MultiHeadDynamicAttention",),
    ".baselines": (
        "NaiveAttention",
        "EagerAttention",
        "DenseLazyAttention",
        "FullRecompute",
    ),
    ".reference": ("attention",),
    ".maintainer": (
        "WorkCounters",
        "AttentionMaintainer",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
