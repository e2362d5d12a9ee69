"""DeSA: decentralised federated learning with synthetic anchors (Huang et al., ICML 2024, arXiv 2405.11525).

Clients with data from different domains and models of different architectures share synthetic anchors once
(distribution matching, optionally under DP-SGD) and their logits on the anchors each round; each trains with
cross-entropy on local data and anchors, knowledge distillation from the other clients' anchor logits and a
supervised-contrastive regulariser that pulls local features towards the anchors'. No server, no weight
exchange. The engine runs one OS process per client over ``torch.distributed`` (gloo) or all in-process.
"""

from .anchors import DSA_STRATEGY, AnchorSet, diff_augment, dm_loss, global_anchors, synthesize_anchors
from .baselines import anchors_only_training, gossip_fedavg, local_training
from .engine import (
    ClientFailed,
    DesaConfig,
    DesaResult,
    accuracy_matrix,
    domain_summary,
    make_topology,
    run_desa,
    sample_clients,
)
from .fashion import SHIFTS, fashion_domains
from .losses import kd_loss, supcon_loss
from .models import AlexNet, ConvNet, check_model

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
