"""SEED-GNN sequential GNN editing (Zhong et al., ICML 2024), with EGNN, fine-tuning and GRE as peers."""

from ..extras import require

require("torch_geometric", extra="graphs", what="seed_gnn")

from .baselines import EGNNEditor, FineTuneEditor, GREEditor, rewire  # noqa: E402
from .editor import EditRecord, GnnMlpEditor, SeedGNNEditor, SequentialEditor, summarize  # noqa: E402
from .experiments import (  # noqa: E402
    load_graph,
    make_editor,
    per_class_split,
    pretrained,
    run_editors,
    select_targets,
)

__all__ = [
    "SeedGNNEditor",
    "EGNNEditor",
    "FineTuneEditor",
    "GREEditor",
    "rewire",
    "GnnMlpEditor",
    "SequentialEditor",
    "EditRecord",
    "summarize",
    "load_graph",
    "per_class_split",
    "pretrained",
    "select_targets",
    "make_editor",
    "run_editors",
]
