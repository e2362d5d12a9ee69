"""The shallow graph transformer of "What Improves the Generalization of Graph Transformers? A Theoretical Dive
into the Self-attention and Positional Encoding" (Li, Wang, Ma, Liu, Zhang & Chen, ICML 2024, arXiv 2406.01977):
one self-attention layer over each node's Z-hop context with a trainable relative positional encoding, a
two-layer perceptron with a fixed output vector, hinge loss and mini-batch SGD; its no-PE and uniform-attention
ablations, the paper's data model, the attention instruments, and PyG's GCN / GraphSAGE / GPS as peers.
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".shallow": (
        "ShallowGT",
        "fit_hinge",
        "attention_stats",
        "hop_context",
        "sample_context",
        "HopContext",
        "History",
    ),
    ".world": ("pattern_graph",),
    ".baselines": ("fit_gnn",),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
