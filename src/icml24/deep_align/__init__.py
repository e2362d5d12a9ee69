"""Deep-Align: equivariant deep weight-space alignment (Navon, Shamsian, Fetaya, Chechik, Dym, Maron; ICML 2024,
arXiv 2310.13397; official code github.com/AvivNavon/deep-align).

Two networks of one architecture compute the same function under any permutation of their hidden neurons; to
merge or interpolate them, their neurons must first be matched. Deep-Align learns this matching: a Siamese
encoder equivariant to hidden-neuron permutations embeds every neuron, the score matrices of the two networks'
embeddings are projected onto permutations (Sinkhorn while training, Hungarian at inference), and the encoder
is trained without labels on a zoo of networks.

Public API
----------
``DeepAlign``            the aligner: ``fit`` on a zoo, ``align(a, b)`` / ``align_batch``, ``scores``, ``save``/``load``
``permute(net, perms)``  a network with its hidden neurons permuted (same function)
``merge(a, b, alpha, perms)``  ``alpha * a + (1 - alpha) * permute(b, perms)``
``interpolation(a, b, x, y)``  the loss along the linear path, its barrier and AUC
``train_zoo`` / ``Zoo``  a model zoo (small MLPs on digits from different seeds, ``deep_align.world``) as weights
``train_cnn_zoo`` / ``CNNSpec``  a zoo of small CNNs on Fashion-MNIST (the paper's CNN setting; CIFAR-10 is not
                         available offline); every function above also takes CNNs (channels are permuted)
``weight_matching``, ``activation_matching``, ``sinkhorn_rebasin``  the baselines (``baselines.py``)
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".align": (
        "DeepAlign",
        "as_batch",
        "merge",
        "permute",
    ),
    ".baselines": (
        "MatchResult",
        "activation_matching",
        "sinkhorn_rebasin",
        "weight_matching",
        "wm_objective",
    ),
    ".cnn": (
        "CNNSpec",
        "train_cnn_zoo",
    ),
    ".encoder": (
        "DeepAlignNet",
        "EncoderConfig",
    ),
    ".training": (
        "History",
        "TrainConfig",
    ),
    ".weights": ("WeightBatch",),
    ".conversion": (
        "from_sequential",
        "from_state_dict",
        "to_sequential",
    ),
    ".zoo": (
        "Zoo",
        "train_zoo",
    ),
    ".paths": ("interpolation",),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
