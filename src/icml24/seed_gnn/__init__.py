"""SEED-GNN sequential GNN editing (Zhong et al., ICML 2024), with EGNN, fine-tuning and GRE as peers."""

from ..extras import require

require("torch_geometric", extra="graphs", what="seed_gnn")

from .baselines import EGNNEditor, FineTuneEditor, GREEditor, rewire  # noqa: E402
from .editor import EditRecord, GnnMlpEditor, SeedGNNEditor, SequentialEditor, summarize  # noqa: E402
from .experiments import load_graph, make_editor, pretrained, run_editors, select_targets  # noqa: E402

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
    "pretrained",
    "select_targets",
    "make_editor",
    "run_editors",
]
