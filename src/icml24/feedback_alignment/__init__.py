"""Feedback alignment and its peers, with the conservation law and alignment diagnostics.

Robertson & Koyejo, *Implicit Regularization in Feedback Alignment Learning Mechanisms for Neural
Networks*, ICML 2024 (arXiv 2306.01870). No official code.

Train any ``nn.Sequential`` of Linear layers with ReLU / LeakyReLU / Identity under a chosen rule, with an
ordinary optimizer and loop, and watch why it works::

    import torch, torch.nn.functional as F
    from icml24.feedback_alignment import FeedbackNetwork, make_mlp, AlignmentRecorder

    net = FeedbackNetwork(make_mlp([64, 128, 128, 10], init_scale=0.1), rule="fa", seed=0)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    rec = AlignmentRecorder(net, x, y, every=50)
    for step in range(1000):
        rec(step)
        opt.zero_grad(); F.cross_entropy(net(x), y).backward(); opt.step()
    rec.series("conserved")   # ~ constant: the paper's conservation law
    rec.series("alignment")   # cos(B, W^T) per layer: rises from 0 as the incoming norms grow
    rec.series("rho")         # <g, u> / |g|^2: alignment dominance (> 0: the update descends)

Rules: ``"fa"`` (fixed random B), ``"backprop"`` (the reference), ``"dfa"``, ``"usf"``, ``"frsf"``,
``"brsf"`` (sign symmetry with batchwise random magnitudes), ``"kp"`` (Kolen-Pollack: B learned with W's
update and weight decay) and ``"wm"`` (the weight mirror, our adaptive FA variant). Which of them obey the
conservation law, and why, is tabulated in :mod:`icml24.feedback_alignment.rules`.

Small CNNs train the same way: ``FeedbackNetwork(make_cnn(1, 28, (8, 16)), rule="fa")`` (Conv2d layers
get feedback kernels of the transposed shape; average/max pooling and Flatten pass errors back exactly).
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".network": (
        "FeedbackNetwork",
        "RULES",
        "get_rule",
    ),
    ".autograd": (
        "FeedbackFunction",
        "FeedbackLinearFunction",
    ),
    ".models": (
        "make_mlp",
        "make_cnn",
        "align_init_",
    ),
    ".training": (
        "train",
        "accuracy",
        "loss_fn",
    ),
    ".rules": (
        "Rule",
        "FA",
    ),
    ".baselines": (
        "BACKPROP",
        "DFA",
        "USF",
        "FRSF",
        "BRSF",
        "KOLEN_POLLACK",
        "WEIGHT_MIRROR",
    ),
    ".diagnostics": (
        "conserved_quantity",
        "layer_conserved_quantity",
        "incoming_norms",
        "potential",
        "alignment_angles",
        "update_alignment",
        "UpdateAlignment",
        "AlignmentRecorder",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
