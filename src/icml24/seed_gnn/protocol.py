"""The paper's evaluation protocol: data, pretrained backbones, edit targets, and sequential runs.

As the official ``eval_edit_gnn.py``: the backbone is pretrained inductively (best validation checkpoint);
the targets are misclassified *validation* nodes of that plain GNN, 50 of them, in the order of a seeded
permutation, each to be corrected to its true label; drawdown is measured against the plain GNN's test
accuracy before the MLP warm-up; the success rate after edit i is over all targets so far.
"""

from __future__ import annotations

import functools

import logging

import torch
from torch import nn
from torch_geometric.data import Data

from ..data import csbm, planetoid
from ..errors import DataUnavailable, InputError
from ..nn.gnn import PretrainResult, build_backbone, pretrain_inductive
from .baselines import EGNNEditor, FineTuneEditor, GREEditor
from .editor import EditRecord, SeedGNNEditor, SequentialEditor, check_graph, gnn_outputs

log = logging.getLogger(__name__)

CSBM_SNR = 0.12
EDITORS = {"seed": SeedGNNEditor, "egnn": EGNNEditor, "finetune": FineTuneEditor, "gre": GREEditor,
           "gre+": functools.partial(GREEditor, splits=3)}


def _train_rest_split(data: Data, num_val: int, num_test: int, seed: int) -> Data:
    """PyG's ``RandomNodeSplit('train_rest', num_val, num_test)`` with a private seeded generator."""
    n = data.num_nodes
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    data.val_mask = torch.zeros(n, dtype=torch.bool)
    data.test_mask = torch.zeros(n, dtype=torch.bool)
    data.val_mask[perm[:num_val]] = True
    data.test_mask[perm[num_val:num_val + num_test]] = True
    data.train_mask = ~(data.val_mask | data.test_mask)
    return data


def load_graph(name: str = "auto", *, seed: int = 42, num_val: int = 500, num_test: int = 500,
               csbm_nodes: int = 2000) -> Data:
    """The editing graph with the official split: ``"cora"`` (real, from the data root; ``NormalizeFeatures``
    and ``train_rest`` with 500 validation and 500 test nodes, as ``data.py``), ``"csbm"`` (a contextual SBM
    standing in for Cora: 5 classes, degree 8, homophily 0.7, 300-word binary bags of 18 words, row-normalised), or ``"auto"`` (Cora when the data
    root has it, else CSBM). ``data.name`` says which was loaded."""
    import torch_geometric.transforms as T

    key = str(name).lower()
    if key not in ("auto", "cora", "csbm"):
        raise InputError(f"unknown data {name!r}", "choose cora, csbm or auto")
    if key in ("auto", "cora"):
        try:
            data = planetoid("Cora", transform=T.NormalizeFeatures())
            data.name = "cora"
            return _train_rest_split(data, num_val, num_test, seed)
        except DataUnavailable:
            if key == "cora":
                raise
            log.warning("Cora is not in the data root; using a contextual SBM instead")
    data = csbm(csbm_nodes, n_classes=5, avg_degree=8.0, homophily=0.7, snr=CSBM_SNR, n_features=300,
                features="bow", words_per_node=18, num_train_per_class=0, num_val=0, num_test=0, seed=seed)
    data = T.NormalizeFeatures()(data)
    data.name = "csbm"
    return _train_rest_split(data, min(num_val, csbm_nodes // 4), min(num_test, csbm_nodes // 4), seed)


def pretrained(model: str, data: Data, *, seed: int = 0, epochs: int = 200) -> tuple[nn.Module, PretrainResult]:
    """An official-config backbone (2 layers, hidden 32, dropout 0.1) pretrained inductively on ``data``."""
    check_graph(data)
    gnn = build_backbone(model, data.num_features, int(data.y.max()) + 1, seed=seed)
    res = pretrain_inductive(gnn, data, epochs=epochs, seed=seed)
    return gnn, res


def select_targets(gnn: nn.Module, data: Data, num: int = 50, *, seed: int = 42) -> tuple[list[int], list[int]]:
    """Misclassified validation nodes of the plain GNN in a seeded random order, with their true labels."""
    check_graph(data)
    pred = gnn_outputs(gnn, data.x, data.edge_index).argmax(-1)
    val = data.val_mask.nonzero().view(-1)
    wrong = val[pred[val] != data.y[val]]
    order = torch.randperm(wrong.numel(), generator=torch.Generator().manual_seed(seed))
    chosen = wrong[order[:num]]
    if chosen.numel() < num:
        log.warning("only %d misclassified validation nodes; editing all of them", chosen.numel())
    return chosen.tolist(), data.y[chosen].tolist()


def make_editor(kind: str, gnn: nn.Module, data: Data, **kwargs) -> SequentialEditor:
    if kind not in EDITORS:
        raise InputError(f"unknown editor {kind!r}", f"choose one of: {', '.join(EDITORS)}")
    return EDITORS[kind](gnn, data, **kwargs)


def run_editors(gnn: nn.Module, data: Data, nodes, labels, kinds=("seed", "egnn", "finetune"),
                progress: bool = False) -> dict[str, list[EditRecord]]:
    """Each editor on the same GNN, graph and targets, from scratch; returns their edit logs."""
    return {k: make_editor(k, gnn, data).edit_many(nodes, labels, progress=progress) for k in kinds}
