"""DeSA: decentralised federated learning with synthetic anchors (Huang et al., ICML 2024, arXiv 2405.11525).

Clients with data from different domains and models of different architectures share synthetic anchors once
(distribution matching, optionally under DP-SGD) and their logits on the anchors each round; each trains with
cross-entropy on local data and anchors, knowledge distillation from the other clients' anchor logits and a
supervised-contrastive regulariser that pulls local features towards the anchors'. No server, no weight
exchange. The engine runs one OS process per client over ``torch.distributed`` (gloo) or all in-process.
"""

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
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
