"""SEED-GNN sequential GNN editing (Zhong et al., ICML 2024), with EGNN, fine-tuning and GRE as peers."""

from .baselines import EGNNEditor, FineTuneEditor, GREEditor, rewire
from .editor import EditRecord, GnnMlpEditor, SeedGNNEditor, SequentialEditor, summarize
from .protocol import load_graph, make_editor, pretrained, run_editors, select_targets

__all__ = ["SeedGNNEditor", "EGNNEditor", "FineTuneEditor", "GREEditor", "rewire", "GnnMlpEditor",
           "SequentialEditor", "EditRecord", "summarize", "load_graph", "pretrained", "select_targets", "make_editor",
           "run_editors"]
