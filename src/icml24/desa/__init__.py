"""DeSA: decentralised federated learning with synthetic anchors (Huang et al., ICML 2024, arXiv 2405.11525).

Clients with data from different domains and models of different architectures share synthetic anchors once
(distribution matching, optionally under DP-SGD) and their logits on the anchors each round; each trains with
cross-entropy on local data and anchors, knowledge distillation from the other clients' anchor logits and a
supervised-contrastive regulariser that pulls local features towards the anchors'. No server, no weight
exchange. The engine runs one OS process per client over ``torch.distributed`` (gloo) or all in-process.
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".anchors": (
        "DSA_STRATEGY",
        "AnchorSet",
        "diff_augment",
        "dm_loss",
        "synthesize_anchors",
        "global_anchors",
    ),
    ".models": (
        "ConvNet",
        "AlexNet",
        "check_model",
    ),
    ".losses": (
        "kd_loss",
        "supcon_loss",
    ),
    ".config": (
        "DesaConfig",
        "DesaResult",
        "ClientFailed",
        "make_topology",
        "sample_clients",
    ),
    ".engine": (
        "run_desa",
        "accuracy_matrix",
        "domain_summary",
    ),
    ".baselines": (
        "local_training",
        "anchors_only_training",
        "gossip_fedavg",
    ),
    ".fashion": (
        "SHIFTS",
        "fashion_domains",
    ),
}
__getattr__, __dir__ = lazy_package(__name__, _EXPORTS)
__all__ = [
    "DSA_STRATEGY",
    "AnchorSet",
    "ConvNet",
    "AlexNet",
    "check_model",
    "diff_augment",
    "dm_loss",
    "synthesize_anchors",
    "global_anchors",
    "kd_loss",
    "supcon_loss",
    "DesaConfig",
    "DesaResult",
    "ClientFailed",
    "make_topology",
    "sample_clients",
    "run_desa",
    "accuracy_matrix",
    "domain_summary",
    "local_training",
    "anchors_only_training",
    "gossip_fedavg",
    "SHIFTS",
    "fashion_domains",
]

if TYPE_CHECKING:  # the same names, for readers, IDEs and type checkers
    from .anchors import DSA_STRATEGY, AnchorSet, diff_augment, dm_loss, global_anchors, synthesize_anchors
    from .baselines import anchors_only_training, gossip_fedavg, local_training
    from .config import ClientFailed, DesaConfig, DesaResult, make_topology, sample_clients
    from .engine import accuracy_matrix, domain_summary, run_desa
    from .fashion import SHIFTS, fashion_domains
    from .losses import kd_loss, supcon_loss
    from .models import AlexNet, ConvNet, check_model
