"""SEED-GNN sequential GNN editing (Zhong et al., ICML 2024), with EGNN, fine-tuning and GRE as peers."""

from ..extras import require
from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".editor": (
        "SeedGNNEditor",
        "GnnMlpEditor",
    ),
    ".sequential": ("SequentialEditor",),
    ".records": (
        "EditRecord",
        "summarize",
    ),
    ".baselines": (
        "EGNNEditor",
        "FineTuneEditor",
        "GREEditor",
        "rewire",
    ),
    ".workflow": (
        "load_graph",
        "per_class_split",
        "pretrained",
        "select_targets",
        "make_editor",
        "run_editors",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(
    __name__, _EXPORTS, require=lambda: require("torch_geometric", extra="graphs", what="seed_gnn")
)
