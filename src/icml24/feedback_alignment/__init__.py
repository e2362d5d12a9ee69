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

Rules: ``"fa"`` (fixed random B), ``"backprop"`` (the reference), ``"dfa"``, ``"usf"``, ``"frsf"``.
"""

from .baselines import BACKPROP, DFA, FRSF, USF
from .diagnostics import (
    AlignmentRecorder,
    UpdateAlignment,
    alignment_angles,
    conserved_quantity,
    incoming_norms,
    layer_conserved_quantity,
    potential,
    update_alignment,
)
from .network import (
    RULES,
    FeedbackLinearFunction,
    FeedbackNetwork,
    accuracy,
    align_init_,
    get_rule,
    loss_fn,
    make_mlp,
    train,
)
from .rules import FA, Rule

__all__ = [
    "FeedbackNetwork",
    "FeedbackLinearFunction",
    "Rule",
    "RULES",
    "FA",
    "BACKPROP",
    "DFA",
    "USF",
    "FRSF",
    "get_rule",
    "make_mlp",
    "align_init_",
    "train",
    "accuracy",
    "loss_fn",
    "conserved_quantity",
    "layer_conserved_quantity",
    "incoming_norms",
    "potential",
    "alignment_angles",
    "update_alignment",
    "UpdateAlignment",
    "AlignmentRecorder",
]
