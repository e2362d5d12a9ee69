"""SEED-GNN's workflow on a user's graph: load or split a graph, pretrain a backbone, pick edit targets, build
and run the editors (the public API; the claims' measurements are in :mod:`icml24.seed_gnn.experiments`).

As the official ``eval_edit_gnn.py``: the backbone is pretrained inductively (best validation checkpoint);
the targets are misclassified *validation* nodes of that plain GNN, 50 of them, in the order of a seeded
permutation, each to be corrected to its true label. :func:`load_graph` with ``"auto"`` (and the ``seed-gnn
edit`` verb) may stand a contextual SBM graph in for a missing Cora below paper scale, announced with
:func:`icml24.runs.note_substitution`.
"""

from __future__ import annotations

import copy
import functools
import inspect
import logging
from typing import Iterable, Sequence

import torch
from torch import nn

from ..extras import require

require("torch_geometric", extra="graphs", what="seed_gnn")  # one line naming the extra, not a raw ImportError

from torch_geometric.data import Data

from ..data import csbm, data_root, planetoid
from ..errors import DataUnavailable, InputError
from ..nn.gnn import PretrainResult, build_backbone, pretrain_inductive
from ..runs import note_substitution
from ..validation import check_bool, check_choice, check_int, check_tensor
from .baselines import EGNNEditor, FineTuneEditor, GREEditor
from .editor import SeedGNNEditor
from .graph_input import check_graph, check_seed, gnn_outputs
from .records import EditRecord
from .sequential import SequentialEditor

log = logging.getLogger(__name__)


CSBM_SNR = 0.12
CORA_STAND_IN = "Cora is not under the data root: a contextual SBM graph stands in"
EDITORS = {
    "seed": SeedGNNEditor,
    "egnn": EGNNEditor,
    "finetune": FineTuneEditor,
    "gre": GREEditor,
    "gre+": functools.partial(GREEditor, splits=3),
    # the ablations of the robustness claim: SEED-GNN's batch with all 100 anchors drawn at random from the
    # correctly predicted training nodes (no neighbourhood anchors), and with no anchors at all (replayed
    # targets only)
    "seed-nohood": functools.partial(SeedGNNEditor, alpha=0.0),
    "seed-noanchor": functools.partial(SeedGNNEditor, beta=0),
}
EDITOR_KEYS = ("seed", "egnn", "finetune")  # the claims' ordering
REPORTED_KEYS = EDITOR_KEYS + ("gre",)  # GRE (gradient rewiring, a later peer) is measured and reported only
ABLATION_KEYS = ("seed-nohood", "seed-noanchor")  # measured in the robustness claim's run
BACKBONES = ("gcn", "sage", "gin")


# ------------------------------------------------------------------------------------------------ protocol
def train_rest_split(data: Data, num_val: int, num_test: int, seed: int) -> Data:
    """PyG's ``RandomNodeSplit('train_rest', num_val, num_test)`` with a private seeded generator.

    Parameters
    ----------
    data : torch_geometric.data.Data
        The graph; its masks are replaced in place.
    num_val, num_test : int
        Sizes of the validation and test sets; every other node is a training node.
    seed : int
        Seeds the permutation.

    Returns
    -------
    torch_geometric.data.Data
        ``data`` with ``train_mask``, ``val_mask`` and ``test_mask``.
    """
    n = data.num_nodes
    num_val = check_int(num_val, "num_val", min_val=0, max_val=n)
    num_test = check_int(num_test, "num_test", min_val=0, max_val=n - num_val)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(check_seed(seed)))
    data.val_mask = torch.zeros(n, dtype=torch.bool)
    data.test_mask = torch.zeros(n, dtype=torch.bool)
    data.val_mask[perm[:num_val]] = True
    data.test_mask[perm[num_val : num_val + num_test]] = True
    data.train_mask = ~(data.val_mask | data.test_mask)
    return data


def per_class_split(data: Data, num_train_per_class: int = 20, num_val_per_class: int = 30, seed: int = 12345) -> Data:
    """The official code's split of the co-purchase and co-author graphs (Amazon Computers/Photo,
    Coauthor CS): per class, ``num_train_per_class`` training and ``num_val_per_class`` validation nodes
    drawn at random; every other node is a test node (the official seed is 12345).

    Parameters
    ----------
    data : torch_geometric.data.Data
        The graph, with ``y``; its masks are replaced in place.
    num_train_per_class, num_val_per_class : int, default 20 and 30
        Nodes per class. A class with fewer nodes gives all it has, training first, as PyG's
        ``RandomNodeSplit(split="random")`` does with ``num_train_per_class`` (it truncates silently).
    seed : int, default 12345
        Seeds a private generator.

    Returns
    -------
    torch_geometric.data.Data
        ``data`` with ``train_mask``, ``val_mask`` and ``test_mask``.

    Raises
    ------
    InputError
        If the split cannot be honoured: the per-class sizes would leave no test node, or no validation node
        although ``num_val_per_class > 0`` (e.g. 10 nodes, 5 training per class). ``data`` is then unchanged.
    """
    num_train_per_class = check_int(num_train_per_class, "num_train_per_class", min_val=1)
    num_val_per_class = check_int(num_val_per_class, "num_val_per_class", min_val=0)
    gen = torch.Generator().manual_seed(check_seed(seed))
    if not isinstance(data, Data):
        raise InputError(f"data must be a torch_geometric.data.Data, got {type(data).__name__}")
    y = check_tensor(getattr(data, "y", None), "data.y", ndim=1, dtype="integer")
    n = y.numel()
    x = getattr(data, "x", None)
    if isinstance(x, torch.Tensor) and x.dim() >= 1 and x.size(0) != n:
        raise InputError(f"data.y has {n} labels but data.x has {x.size(0)} nodes", "give one label per node")
    if int(y.min()) < 0:
        raise InputError(f"data.y has negative labels (down to {int(y.min())})", "labels are 0..classes-1")
    train, val = torch.zeros(n, dtype=torch.bool), torch.zeros(n, dtype=torch.bool)
    for c in torch.unique(y).tolist():
        idx = (y == c).nonzero().view(-1)
        idx = idx[torch.randperm(idx.numel(), generator=gen)]
        train[idx[:num_train_per_class]] = True
        val[idx[num_train_per_class : num_train_per_class + num_val_per_class]] = True
    test = ~(train | val)
    if not bool(test.any()) or (num_val_per_class and not bool(val.any())):
        raise InputError(
            f"num_train_per_class={num_train_per_class} and num_val_per_class={num_val_per_class} leave "
            f"{int(val.sum())} validation and {int(test.sum())} test nodes of {n}",
            "lower them: every split needs nodes",
        )
    data.train_mask, data.val_mask, data.test_mask = train, val, test
    return data


# the official data sets that are not Planetoid graphs: PyG's folder, file and split rule for each
NPZ_GRAPHS = {
    "amazoncomputers": ("amazon/Computers/raw", "amazon_electronics_computers.npz"),
    "amazonphoto": ("amazon/Photo/raw", "amazon_electronics_photo.npz"),
    "coauthorcs": ("coauthor/CS/raw", "ms_academic_cs.npz"),
    "coauthorphysics": ("coauthor/Physics/raw", "ms_academic_phy.npz"),
}
OGB_GRAPHS = ("ogbn-arxiv", "ogbn-products")
GRAPH_NAMES = ("auto", "cora", "citeseer", "pubmed", "csbm", *NPZ_GRAPHS, *OGB_GRAPHS)


def load_graph(
    name: "str | Data | object" = "auto",
    *,
    seed: int = 42,
    num_val: int = 500,
    num_test: int = 500,
    csbm_nodes: int = 2000,
    split: str | None = None,
) -> Data:
    """The editing graph with the official code's split.

    Parameters
    ----------
    name : str, torch_geometric.data.Data or torch_geometric.data.Dataset, default "auto"
        ``"cora"``, ``"citeseer"``, ``"pubmed"``: a Planetoid graph from the data root (``NormalizeFeatures``,
        as the official ``data.py``). ``"amazoncomputers"``, ``"amazonphoto"``, ``"coauthorcs"``,
        ``"coauthorphysics"``: PyG's ``.npz`` file from the data root (``<root>/amazon/Computers/raw/...``,
        as PyG lays it out). ``"ogbn-arxiv"``, ``"ogbn-products"``: not readable offline here; the error says
        so. ``"csbm"``: a contextual SBM standing in for Cora (5 classes, degree 8, homophily 0.7, 300-word
        binary bags of 18 words, row-normalised). ``"auto"``: Cora when the data root has it, else the
        contextual SBM, announced with :func:`icml24.runs.note_substitution`. A user's ``Data`` (or a
        ``Dataset``, whose first graph is taken) is copied, not modified; it keeps its three masks when it
        has them, else it gets the split of ``split``.
    seed : int, default 42
        Seeds the split (and the synthetic graph).
    num_val, num_test : int, default 500
        Validation and test sizes of the ``"train_rest"`` split (capped at a quarter of the nodes each for
        the synthetic graph).
    csbm_nodes : int, default 2000
        Nodes of the synthetic graph.
    split : {"train_rest", "per_class"}, optional
        ``"train_rest"`` (Cora's rule: ``num_val`` and ``num_test`` random nodes, the rest training) or
        ``"per_class"`` (:func:`per_class_split`, the rule for co-purchase and co-author graphs). Default:
        the official rule of the named graph (``per_class`` for Amazon and Coauthor, ``train_rest``
        otherwise); for a user's graph without masks, ``train_rest``.

    Returns
    -------
    torch_geometric.data.Data
        ``data.name`` says which graph was loaded (``"cora"``, ``"csbm"``, ``"user"``...).

    Raises
    ------
    DataUnavailable
        When the named graph's files are not under the data root, naming them and the folder.
    InputError
        For an unknown name or split.
    """
    import torch_geometric.transforms as T
    from torch_geometric.data import Dataset

    seed = check_seed(seed)
    num_val = check_int(num_val, "num_val", min_val=0)
    num_test = check_int(num_test, "num_test", min_val=0)
    csbm_nodes = check_int(csbm_nodes, "csbm_nodes", min_val=4)
    if split is not None:
        split = check_choice(split, "split", ("train_rest", "per_class"))

    def finish(data: Data, default: str) -> Data:
        if (split or default) == "per_class":
            return per_class_split(data, seed=seed)
        return train_rest_split(data, num_val, num_test, seed)

    if isinstance(name, (Data, Dataset)):
        data = name[0] if isinstance(name, Dataset) else name
        data = copy.copy(data)  # a new Data holding the user's tensors: our masks never land on theirs
        check_graph(data, masks=False, name="name")
        data.name = "user"
        if split is None and all(getattr(data, m, None) is not None for m in ("train_mask", "val_mask", "test_mask")):
            return data
        return finish(data, "train_rest")
    if not isinstance(name, str):
        raise InputError(
            f"name must be a graph's name, a Data or a Dataset, got {type(name).__name__}",
            f"choose one of: {', '.join(GRAPH_NAMES)}",
        )
    key = check_choice(name.strip().lower().replace("_", "-"), "name", GRAPH_NAMES)
    if key in OGB_GRAPHS:
        raise DataUnavailable(
            f"{key} is not available offline here (the OGB loaders download it)",
            "load it with ogb's PygNodePropPredDataset on a machine with internet and pass the Data to load_graph",
        )
    if key in NPZ_GRAPHS:
        folder, file = NPZ_GRAPHS[key]
        from torch_geometric.io import read_npz

        path = data_root() / folder / file
        if not path.is_file():
            raise DataUnavailable(
                f"{key} is not in the data root: missing {file} in {path.parent}",
                "put PyG's file there (github.com/shchur/gnn-benchmark, data/npz) or point ICML24_DATA at it",
            )
        data = T.NormalizeFeatures()(read_npz(str(path), to_undirected=True))
        data.name = key
        return finish(data, "per_class")
    if key in ("auto", "cora", "citeseer", "pubmed"):
        try:
            data = planetoid("Cora" if key == "auto" else key, transform=T.NormalizeFeatures())
            data.name = "cora" if key == "auto" else key
            return finish(data, "train_rest")
        except DataUnavailable:
            if key != "auto":
                raise
            note_substitution(CORA_STAND_IN)
    data = csbm(
        csbm_nodes,
        n_classes=5,
        avg_degree=8.0,
        homophily=0.7,
        snr=CSBM_SNR,
        n_features=300,
        features="bow",
        words_per_node=18,
        num_train_per_class=0,
        num_val=0,
        num_test=0,
        seed=seed,
    )
    data = T.NormalizeFeatures()(data)
    data.name = "csbm"
    if split == "per_class":
        return per_class_split(data, seed=seed)
    return train_rest_split(data, min(num_val, csbm_nodes // 4), min(num_test, csbm_nodes // 4), seed)


def pretrained(model: str, data: Data, *, seed: int = 0, epochs: int = 200) -> tuple[nn.Module, PretrainResult]:
    """An official-config backbone (2 layers, hidden 32, dropout 0.1) pretrained inductively on ``data``.

    Parameters
    ----------
    model : {"gcn", "sage", "gin"}
        The backbone.
    data : torch_geometric.data.Data
        The graph with its three masks.
    seed : int, default 0
        Seeds the initialisation and training.
    epochs : int, default 200
        Training epochs (Adam, lr 0.01; the best validation checkpoint is kept).

    Returns
    -------
    gnn : torch.nn.Module
        The pretrained backbone.
    result : icml24.nn.gnn.PretrainResult
        Its best epoch and accuracies.
    """
    if not isinstance(model, str):
        raise InputError(
            f"model must be a backbone's name, got {type(model).__name__}", "choose one of: gcn, sage, gin"
        )
    model = check_choice(model, "model", BACKBONES)
    seed = check_seed(seed)
    epochs = check_int(epochs, "epochs", min_val=1)
    check_graph(data)
    if not bool(data.val_mask.any()):
        raise InputError("data.val_mask selects no node", "pretraining keeps the best validation checkpoint")
    if int(data.y.max()) == 0:
        raise InputError("data.y holds a single class", "a classifier needs at least two classes")
    gnn = build_backbone(model, data.num_features, int(data.y.max()) + 1, seed=seed)
    res = pretrain_inductive(gnn, data, epochs=epochs, seed=seed)
    return gnn, res


def select_targets(gnn: nn.Module, data: Data, num: int = 50, *, seed: int = 42) -> tuple[list[int], list[int]]:
    """Misclassified validation nodes of the plain GNN in a seeded random order, with their true labels.

    Parameters
    ----------
    gnn : torch.nn.Module
        The trained GNN, ``gnn(x, edge_index) -> (nodes x classes)``.
    data : torch_geometric.data.Data
        The graph with its three masks.
    num : int, default 50
        How many targets (fewer when fewer validation nodes are misclassified; a warning says so).
    seed : int, default 42
        Seeds the order.

    Returns
    -------
    nodes : list of int
    labels : list of int
        The targets and their true labels.
    """
    if not isinstance(gnn, nn.Module):
        raise InputError(f"gnn must be a torch.nn.Module, got {type(gnn).__name__}")
    check_graph(data)
    num = check_int(num, "num", min_val=0)
    seed = check_seed(seed)
    if not bool(data.val_mask.any()):
        raise InputError("data.val_mask selects no node", "targets are misclassified validation nodes")
    adj = data.edge_index if getattr(data, "edge_index", None) is not None else data.adj_t
    out = gnn_outputs(gnn, data.x, adj)
    if out.dim() != 2 or out.size(1) <= int(data.y.max()):
        raise InputError(f"data.y has labels up to {int(data.y.max())} but the gnn outputs shape {tuple(out.shape)}")
    pred = out.argmax(-1)
    val = data.val_mask.nonzero().view(-1)
    wrong = val[pred[val] != data.y[val]]
    order = torch.randperm(wrong.numel(), generator=torch.Generator().manual_seed(seed))
    chosen = wrong[order[:num]]
    if chosen.numel() < num:
        log.warning("only %d misclassified validation nodes; editing all of them", chosen.numel())
    return chosen.tolist(), data.y[chosen].tolist()


def make_editor(kind: str, gnn: nn.Module, data: Data, **kwargs) -> SequentialEditor:
    """A fresh editor of one kind on ``gnn`` and ``data``.

    Parameters
    ----------
    kind : {"seed", "egnn", "finetune", "gre", "gre+", "seed-nohood", "seed-noanchor"}
        SEED-GNN, EGNN, whole-GNN fine-tuning, GRE, GRE+ (three anchor splits), or SEED-GNN without
        neighbourhood anchors (``alpha=0``: all anchors random) or without any anchors (``beta=0``).
    gnn : torch.nn.Module
        The trained GNN (never modified).
    data : torch_geometric.data.Data
        The graph with its three masks.
    **kwargs
        Passed to the editor's constructor.

    Returns
    -------
    SequentialEditor
    """
    key = check_choice(kind, "kind", EDITORS, normalise=False)
    accepted = set(inspect.signature(EDITORS[key]).parameters) - {"gnn", "data"}
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise InputError(
            f"unknown argument {unknown[0]!r} for the {key} editor", f"it takes: {', '.join(sorted(accepted))}"
        )
    return EDITORS[key](gnn, data, **kwargs)


def run_editors(
    gnn: nn.Module,
    data: Data,
    nodes: Sequence[int],
    labels: Sequence[int],
    kinds: Sequence[str] = EDITOR_KEYS,
    progress: bool = False,
) -> dict[str, list[EditRecord]]:
    """Each editor on the same GNN, graph and targets, from scratch.

    Parameters
    ----------
    gnn : torch.nn.Module
    data : torch_geometric.data.Data
    nodes, labels : sequence of int
        The targets, edited in this order.
    kinds : sequence of str, default ("seed", "egnn", "finetune")
        Editor kinds, as :func:`make_editor` takes them.
    progress : bool, default False
        Show a progress bar per editor.

    Returns
    -------
    dict of str to list of EditRecord
        The edit log of each editor.
    """
    if isinstance(kinds, (str, bytes)) or not isinstance(kinds, Iterable):
        raise InputError(f"kinds must be a list of editor kinds, got {type(kinds).__name__}")
    kinds = [check_choice(k, "kinds", EDITORS, normalise=False) for k in kinds]
    if not kinds:
        raise InputError("kinds is empty", f"give editor kinds among: {', '.join(EDITORS)}")
    if len(set(kinds)) != len(kinds):
        raise InputError(f"kinds names an editor twice: {kinds}", "each kind runs once")
    for value, arg in ((nodes, "nodes"), (labels, "labels")):
        if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or not hasattr(value, "__iter__"):
            raise InputError(f"{arg} must be a sequence of integers, got {type(value).__name__}")
    if len(nodes) != len(labels):
        raise InputError(f"{len(nodes)} nodes but {len(labels)} labels", "give one label per node in labels")
    progress = check_bool(progress, "progress")
    if not isinstance(gnn, nn.Module):
        raise InputError(f"gnn must be a torch.nn.Module, got {type(gnn).__name__}")
    check_graph(data)
    n = data.num_nodes
    for node in nodes:  # out-of-range targets are refused before any editor is built
        node = node.reshape(()).item() if isinstance(node, torch.Tensor) and node.numel() == 1 else node
        if not 0 <= check_int(node, "node") < n:
            raise InputError(f"node={node!r} is out of range", f"node ids are 0..{n - 1}")
    return {k: make_editor(k, gnn, data).edit_many(nodes, labels, progress=progress) for k in kinds}


__all__ = [
    "CORA_STAND_IN",
    "EDITORS",
    "EDITOR_KEYS",
    "REPORTED_KEYS",
    "ABLATION_KEYS",
    "train_rest_split",
    "per_class_split",
    "GRAPH_NAMES",
    "load_graph",
    "pretrained",
    "select_targets",
    "make_editor",
    "run_editors",
]
