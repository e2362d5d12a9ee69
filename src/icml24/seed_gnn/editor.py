"""SEED-GNN: sequential editing of a trained GNN through a frozen-GNN + trainable-MLP model.

Faithful to the official code (github.com/henryzhongsc/gnn_editing at 7e0064e; ``pipelines/seed_gnn``):

1. The GNN ``g`` is never trained (the caller's model is only read: its outputs are cached under
   ``torch.no_grad``; nothing is frozen in place); the model is ``f(v) = g(v) + MLP(x_v)`` with an MLP of
   the GNN's depth, width and dropout (EGNN's design). Only the MLP is ever trained.
2. Warm-up (``finetune_mlp``): 100 iterations, each on 32 training nodes drawn with replacement, minimising
   ``CE(MLP(x) + g, y) + KL(p_g || p_{MLP+g})`` (batchmean), Adam at the *edit* learning rate. As in the
   official code the GNN outputs of the warm-up come from the inductive train-node subgraph, and the model is
   in eval mode (no dropout).
3. Editing uses cached GNN outputs on the whole graph: ``out_v = g_cached(v) + MLP(x_v)``; no message passing.
4. Edit ``i`` (``seed_gnn_edit`` / ``select_mixup_training_nodes`` / ``edit``): the batch is all targets so far
   with their labels plus ``beta = 100`` anchors: ``floor(alpha * beta) = 25`` correctly predicted training
   nodes from the smallest k-hop neighbourhood (k <= 4) of the target holding at least ``beta`` nodes, and
   75 more from all correctly predicted training nodes; "correctly predicted" by the post-warm-up model,
   not the edited one; anchor labels are the ground truth. If the current model already predicts the target
   right the edit is skipped (0 steps). Otherwise up to 500 Adam steps (lr 1e-3) on the mean cross-entropy
   of the batch, stopping as soon as every target so far is predicted right. One Adam optimizer persists
   across all edits. Editing runs in eval mode (the official checks switch it and never switch back).
5. The official RNG is reseeded with the edit index before each edit (``set_seeds_all(i)``); we draw anchors
   from a private generator seeded with ``seed + i`` (``seed = 0`` by default), so results are reproducible
   without touching global state, though not bit-identical to the official run.

Two official-code details we keep, each with a switch:

- ``official_neighbor_quirk``: the official neighbour filter compares *positions within the training set*
  with *global node ids*, so few anchors are really near the target. ``False`` (default) filters by global
  ids as intended; ``True`` reproduces the quirk for parity checks.
- The stopping test reads the predictions computed *before* the optimizer step of the same iteration (the
  model that stops has had one more step than the one checked). This is kept as is.
"""

from __future__ import annotations

import copy
import io
import math
import os
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.utils import k_hop_subgraph, subgraph

from ..errors import InputError
from ..nn.gnn import MLP
from ..runs import atomic_write_bytes
from ..validation import check_bool, check_float, check_int, check_probability, check_seed, check_tensor

# --------------------------------------------------------------------------------------------- graph inputs
EVAL_MASKS = ("train_mask", "val_mask", "test_mask")


def _is_torch_sparse(a: Any) -> bool:
    return isinstance(a, Tensor) and a.layout in (torch.sparse_coo, torch.sparse_csr, torch.sparse_csc)


def _is_sparse_tensor(a: Any) -> bool:  # torch_sparse.SparseTensor, without importing torch_sparse
    return type(a).__name__ == "SparseTensor" and hasattr(a, "coo") and hasattr(a, "sparse_sizes")


def edges_of(adj: Any, num_nodes: int) -> tuple[Tensor, Tensor | None]:
    """``edge_index`` (source, target) and edge values of a graph structure as PyG models take it.

    Parameters
    ----------
    adj : torch.Tensor or torch_sparse.SparseTensor
        A 2 x E ``edge_index``, or an ``adj_t`` (a torch sparse tensor or a ``SparseTensor``) whose entry
        ``[i, j]`` is the edge ``j -> i``, as PyG's ``ToSparseTensor`` lays it out.
    num_nodes : int
        Nodes of the graph.

    Returns
    -------
    edge_index : torch.Tensor
        2 x E, long.
    values : torch.Tensor or None
        The edge values of a sparse ``adj_t`` (None for an ``edge_index`` or a value-less ``SparseTensor``).

    Raises
    ------
    InputError
        When ``adj`` is neither, or is not ``num_nodes x num_nodes``.
    """
    if _is_sparse_tensor(adj):
        if tuple(adj.sparse_sizes()) != (num_nodes, num_nodes):
            raise InputError(f"data.adj_t must be {num_nodes} x {num_nodes}, got {tuple(adj.sparse_sizes())}")
        row, col, val = adj.coo()
        return torch.stack([col, row]).long(), val
    if _is_torch_sparse(adj):
        if tuple(adj.shape) != (num_nodes, num_nodes):
            raise InputError(f"data.adj_t must be {num_nodes} x {num_nodes}, got {tuple(adj.shape)}")
        coo = adj.to_sparse_coo().coalesce()
        row, col = coo.indices()
        return torch.stack([col, row]).long(), coo.values()
    ei = check_tensor(adj, "data.edge_index", shape=(2, None), dtype="integer", allow_empty=True)
    if ei.dtype != torch.long:
        raise InputError(f"data.edge_index must be a 2 x E long tensor, got dtype {ei.dtype}")
    if ei.numel() and (int(ei.min()) < 0 or int(ei.max()) >= num_nodes):
        raise InputError(f"data.edge_index refers to nodes outside 0..{num_nodes - 1}")
    return ei, None


def structure_like(like: Any, edge_index: Tensor, num_nodes: int, values: Tensor | None = None) -> Any:
    """A (sub)graph's structure in the layout of ``like``: an ``edge_index``, a torch sparse ``adj_t`` of the
    same layout, or a ``SparseTensor``, so that the user's model receives what it was built for.

    Parameters
    ----------
    like : torch.Tensor or torch_sparse.SparseTensor
        The structure the user's graph came with.
    edge_index : torch.Tensor
        2 x E edges (source, target) of the (sub)graph.
    num_nodes : int
        Its nodes.
    values : torch.Tensor, optional
        Edge values aligned with ``edge_index`` (for a sparse ``adj_t``; ones when absent).

    Returns
    -------
    torch.Tensor or torch_sparse.SparseTensor
    """
    if _is_sparse_tensor(like):
        return type(like)(row=edge_index[1], col=edge_index[0], value=values, sparse_sizes=(num_nodes, num_nodes))
    if _is_torch_sparse(like):
        if values is None:
            values = torch.ones(edge_index.size(1), device=edge_index.device)
        adj = torch.sparse_coo_tensor(edge_index.flip(0), values, (num_nodes, num_nodes)).coalesce()
        if like.layout == torch.sparse_csr:
            return adj.to_sparse_csr()
        return adj.to_sparse_csc() if like.layout == torch.sparse_csc else adj
    return edge_index


def check_graph(data: Data, *, masks: bool | Sequence[str] = True, name: str = "data") -> Data:
    """Validate a node-classification graph: features, structure, labels and masks.

    Parameters
    ----------
    data : torch_geometric.data.Data
        With ``x`` (float, nodes x features, finite), ``edge_index`` (2 x E, long, ids in range) or ``adj_t``
        (a torch sparse tensor or a ``SparseTensor``, nodes x nodes), and ``y`` (integer, one label per node).
    masks : bool or sequence of str, default True
        The boolean masks that must be present: ``True`` for all of ``train_mask``, ``val_mask`` and
        ``test_mask``, ``False`` for none, or their names. Masks present but not required are checked too.
        A required ``train_mask`` must select at least one node.
    name : str, default "data"
        The argument's name in the caller, used in the messages (``data.x``, ``data.y``...).

    Returns
    -------
    torch_geometric.data.Data
        ``data`` itself.

    Raises
    ------
    InputError
        Naming the attribute at fault: a graph without nodes, features that are not a finite float
        matrix, edges outside the graph, labels that are not one non-negative long per node, masks that
        are not one boolean per node.
    """
    if not isinstance(data, Data):
        raise InputError(f"{name} must be a torch_geometric.data.Data, got {type(data).__name__}")
    x = check_tensor(getattr(data, "x", None), f"{name}.x", ndim=2, dtype="float", allow_empty=True)
    n = x.size(0)
    if n == 0 or x.size(1) == 0:
        raise InputError(
            f"{name} is empty: {name}.x has shape {tuple(x.shape)}", "give a graph with nodes and features"
        )
    adj = getattr(data, "edge_index", None)
    if adj is None:
        adj = getattr(data, "adj_t", None)
        if adj is None:
            raise InputError(f"{name} has neither edge_index nor adj_t", "give the graph's edges in one of them")
    try:
        edges_of(adj, n)
    except InputError as exc:
        raise InputError(str(exc).replace("data.", f"{name}.", 1)) from None
    y = check_tensor(getattr(data, "y", None), f"{name}.y", shape=(n,), dtype="integer", allow_empty=True)
    if y.dtype != torch.long:
        raise InputError(f"{name}.y must be a long tensor of {n} class labels, got dtype {y.dtype}")
    if int(y.min()) < 0:
        raise InputError(f"{name}.y has negative labels (down to {int(y.min())})", "labels are 0..classes-1")
    required = EVAL_MASKS if masks is True else () if masks is False else tuple(masks)
    for mask in EVAL_MASKS:
        if mask in required or getattr(data, mask, None) is not None:
            check_tensor(getattr(data, mask, None), f"{name}.{mask}", shape=(n,), dtype="bool", allow_empty=True)
    if "train_mask" in required and not bool(data.train_mask.any()):
        raise InputError(f"{name}.train_mask selects no node")
    return data


def placement(model: nn.Module) -> tuple[torch.device, torch.dtype]:
    """The device and floating dtype of a model's first floating parameter or buffer (CPU, float32 if none).

    Parameters
    ----------
    model : torch.nn.Module

    Returns
    -------
    tuple of (torch.device, torch.dtype)
    """
    for t in list(model.parameters()) + list(model.buffers()):
        if t.is_floating_point():
            return t.device, t.dtype
    return torch.device("cpu"), torch.get_default_dtype()


def prepare_graph(data: Data, model: nn.Module, *, masks: Sequence[str] = ("train_mask",)) -> Data:
    """The editors' own view of the user's graph (the user's ``Data`` is never modified).

    Validated with :func:`check_graph`; features cast to the model's floating dtype (float64 features for
    a float32 model, say) and every tensor moved to the model's device; ``edge_index`` derived from
    ``adj_t`` when only that is given, with ``adj`` holding what the model is called with (the user's own
    ``edge_index`` or ``adj_t``); missing validation and test masks become empty masks (their accuracies
    are then NaN).

    Parameters
    ----------
    data : torch_geometric.data.Data
        The user's graph.
    model : torch.nn.Module
        The GNN, whose first parameter gives the device and dtype.
    masks : sequence of str, default ("train_mask",)
        The masks that must be present.

    Returns
    -------
    torch_geometric.data.Data
        A new ``Data`` with ``x``, ``y``, ``edge_index``, ``edge_weight`` (the ``adj_t`` values or None),
        ``adj`` and the three masks, on the model's device.
    """
    check_graph(data, masks=masks)
    device, dtype = placement(model)
    n = data.x.size(0)
    adj = data.edge_index if getattr(data, "edge_index", None) is not None else data.adj_t
    ei, w = edges_of(adj, n)
    out = Data(x=data.x.to(device=device, dtype=dtype), y=data.y.to(device), edge_index=ei.to(device))
    out.edge_weight = None if w is None else w.to(device)
    out.adj = adj.to(device) if hasattr(adj, "to") else adj
    for name in EVAL_MASKS:
        m = getattr(data, name, None)
        setattr(out, name, torch.zeros(n, dtype=torch.bool, device=device) if m is None else m.to(device))
    out.num_nodes = n
    return out


def induced(data: Data, nodes: Tensor) -> tuple[Tensor, Any]:
    """Features and structure (in the user's layout, :func:`structure_like`) of the subgraph induced by
    ``nodes``, relabelled ``0..len(nodes)-1``, from a graph of :func:`prepare_graph`.

    Parameters
    ----------
    data : torch_geometric.data.Data
        From :func:`prepare_graph`.
    nodes : torch.Tensor
        Node ids (or a boolean mask).

    Returns
    -------
    x : torch.Tensor
    adj : torch.Tensor or torch_sparse.SparseTensor
    """
    ei, w = subgraph(nodes, data.edge_index, data.edge_weight, relabel_nodes=True, num_nodes=data.num_nodes)
    k = int(nodes.sum()) if nodes.dtype == torch.bool else nodes.numel()
    return data.x[nodes], structure_like(data.adj, ei, k, w)


@torch.no_grad()
def gnn_outputs(gnn: nn.Module, x: Tensor, edge_index: Any) -> Tensor:
    """The GNN's outputs in eval mode (its mode is restored).

    Parameters
    ----------
    gnn : torch.nn.Module
        ``gnn(x, edge_index) -> (nodes x classes)``.
    x : torch.Tensor
        Node features.
    edge_index : torch.Tensor or torch_sparse.SparseTensor
        Edges, 2 x E, or an ``adj_t``: whatever the model takes.

    Returns
    -------
    torch.Tensor
        The outputs, nodes x classes.
    """
    was = gnn.training
    gnn.eval()
    try:
        out = gnn(x, edge_index)
    except Exception as exc:
        raise InputError(
            f"the GNN failed on this graph: {type(exc).__name__}: {exc}",
            "the model must take (x, edge_index) (or the graph's adj_t) and match data.x's feature size",
        ) from None
    finally:
        gnn.train(was)
    if not isinstance(out, Tensor) or out.dim() != 2 or out.size(0) != x.size(0):
        raise InputError("the GNN must return a (nodes x classes) tensor")
    return out


def mlp_shape(
    gnn: nn.Module, hidden: int | None = None, layers: int | None = None, dropout: float | None = None
) -> tuple[int, int, float]:
    """The MLP's width, depth and dropout: those given, else the GNN's own, else 32, 2 and 0.1 (the official
    Cora config).

    The GNN's own are its ``hidden_channels``, ``num_layers`` and ``dropout`` attributes, which
    :mod:`icml24.nn` backbones and PyG's ``torch_geometric.nn.models`` (``GCN``, ``GraphSAGE``, ``GIN``,
    ``GAT``) expose; PyG keeps ``dropout`` as a ``torch.nn.Dropout`` module, whose ``p`` is read.

    Parameters
    ----------
    gnn : torch.nn.Module
    hidden, layers : int, optional
        Positive integers.
    dropout : float, optional
        In ``[0, 1)``.

    Returns
    -------
    tuple of (int, int, float)
    """

    def own(name: str, default):
        v = getattr(gnn, name, None)
        if isinstance(v, nn.Dropout):
            v = v.p
        return default if isinstance(v, (nn.Module, Tensor)) or v is None else v

    h = check_int(hidden if hidden is not None else own("hidden_channels", 32), "mlp_hidden", min_val=1)
    n = check_int(layers if layers is not None else own("num_layers", 2), "mlp_layers", min_val=1)
    p = check_float(
        dropout if dropout is not None else own("dropout", 0.1),
        "mlp_dropout",
        min_val=0.0,
        max_val=1.0,
        include_boundaries="left",
    )
    return h, n, p


@torch.no_grad()
def chunked_outputs(gnn: nn.Module, data: Data, hops: int, batch_size: int) -> Tensor:
    """The GNN's outputs on the whole graph, ``batch_size`` nodes at a time, for graphs whose full-graph
    forward does not fit in memory: memory for the outputs and one receptive field, not all activations.

    Each chunk runs the GNN (eval mode, restored) on the ``hops + 1``-hop subgraph around its nodes (all
    edges into every node within ``hops + 1`` hops), so every node within ``hops`` hops keeps all its
    in-edges and degrees, and the chunk's outputs equal the full-graph ones up to float rounding, for
    message passing with ``hops`` layers (GCN's normalisation, mean/sum aggregation, batch norm in eval
    mode).

    Parameters
    ----------
    gnn : torch.nn.Module
        ``gnn(x, edge_index) -> (nodes x classes)``.
    data : torch_geometric.data.Data
        From :func:`prepare_graph`.
    hops : int
        The GNN's message-passing layers (``gnn.num_layers`` for ours and PyG's models).
    batch_size : int
        Nodes per chunk.

    Returns
    -------
    torch.Tensor
        Nodes x classes.
    """
    hops = check_int(hops, "hops", min_val=1)
    batch_size = check_int(batch_size, "inference_batch", min_val=1)
    n = data.num_nodes
    out = None
    for start in range(0, n, batch_size):
        nodes = torch.arange(start, min(start + batch_size, n), device=data.x.device)
        subset, ei, mapping, mask = k_hop_subgraph(nodes, hops + 1, data.edge_index, relabel_nodes=True, num_nodes=n)
        w = None if data.edge_weight is None else data.edge_weight[mask]
        part = gnn_outputs(gnn, data.x[subset], structure_like(data.adj, ei, subset.numel(), w))[mapping]
        if out is None:
            out = part.new_empty((n, part.size(1)))
        out[nodes] = part
    return out


def _check_same_layout(state: Any, current: dict[str, Any]) -> None:
    """Raise ``ValueError`` unless a saved state has the layout of the editor's own: the same parts, the same
    tensors (names and shapes) in each model, and optimizers with as many parameters per group."""
    if not isinstance(state, dict) or set(state) != set(current):
        raise ValueError(f"parts {sorted(state) if isinstance(state, dict) else type(state).__name__}")
    for key, mine in current.items():
        theirs = state[key]
        if not isinstance(theirs, dict):
            raise ValueError(f"{key} is a {type(theirs).__name__}")
        if "param_groups" in mine:
            groups = theirs.get("param_groups")
            if not isinstance(groups, list) or [len(g.get("params", ())) for g in groups] != [
                len(g["params"]) for g in mine["param_groups"]
            ]:
                raise ValueError(f"{key} has other parameter groups")
            continue
        shapes = {k: tuple(v.shape) for k, v in mine.items()}
        if {k: tuple(v.shape) if isinstance(v, Tensor) else None for k, v in theirs.items()} != shapes:
            raise ValueError(f"{key} holds other tensors")


def _path_arg(path: Any, name: str) -> Path:
    """A file path argument: a non-empty ``str`` or ``os.PathLike``."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise InputError(f"{name} must be a file path (str or pathlib.Path), got {type(path).__name__}")
    if not str(path).strip():
        raise InputError(f"{name} is empty", "give a file name")
    return Path(path)


# ------------------------------------------------------------------------------------------------ records
@dataclass
class EditRecord:
    """One edit of a sequence: what was asked, what it cost, and the model's quality after it.

    Parameters
    ----------
    index : int
        0-based position in the sequence.
    node, label : int
        The target and the label it was edited to.
    steps : int
        Optimizer steps (0: the target was already right and the edit was skipped).
    seconds : float
        Wall time of the edit.
    target_correct : bool
        The model predicts this target right after the edit.
    success_rate : float
        Fraction of all targets so far predicted right after the edit (the paper's SR).
    train_acc, val_acc, test_acc : float
        Accuracies after the edit.
    drawdown : float
        Base test accuracy minus test accuracy, in percentage points (the paper's DD).
    batch_size : int, default 1
        Rows of the edit's training batch.
    anchors_near : int, default 0
        Anchors drawn from the target's neighbourhood.
    """

    index: int  # 0-based position in the sequence
    node: int
    label: int
    steps: int  # optimizer steps (0: already right, skipped)
    seconds: float
    target_correct: bool  # the model predicts this target right after the edit
    success_rate: float  # fraction of all targets so far predicted right after the edit
    train_acc: float
    val_acc: float
    test_acc: float
    drawdown: float  # base test accuracy minus test accuracy, in percentage points
    batch_size: int = 1
    anchors_near: int = 0  # anchors drawn from the target's neighbourhood

    def as_dict(self) -> dict[str, Any]:
        """The record as a plain dictionary (for JSON).

        Returns
        -------
        dict of str to object
        """
        return asdict(self)


def summarize(records: Sequence[EditRecord], checkpoints: Sequence[int] = (1, 10, 25, 50)) -> dict[str, float]:
    """The paper's figures of an edit sequence.

    Parameters
    ----------
    records : sequence of EditRecord
        An editor's log.
    checkpoints : sequence of int, default (1, 10, 25, 50)
        The edits at which drawdown and success rate are reported (those reached).

    Returns
    -------
    dict of str to float
        ``dd@c`` and ``sr@c`` per checkpoint, ``edits``, ``dd_last``, ``sr_last``, ``max_dd``, ``mean_dd``
        (the paper's Avg DD), ``mean_sr``, ``mean_steps`` and ``ms_per_edit``; empty for an empty log.
    """
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
        raise InputError(f"records must be a list of EditRecord, got {type(records).__name__}")
    bad = next((r for r in records if not isinstance(r, EditRecord)), None)
    if bad is not None:
        raise InputError(f"records must hold EditRecord entries (an editor's log), got {type(bad).__name__}")
    if isinstance(checkpoints, (str, bytes)) or not isinstance(checkpoints, Sequence):
        raise InputError(f"checkpoints must be a sequence of edit counts, got {type(checkpoints).__name__}")
    checkpoints = [check_int(c, "checkpoints", min_val=1) for c in checkpoints]
    if not records:
        return {}
    out: dict[str, float] = {}
    for c in checkpoints:
        if c <= len(records):
            out[f"dd@{c}"] = records[c - 1].drawdown
            out[f"sr@{c}"] = records[c - 1].success_rate
    last = records[-1]
    out.update(
        {
            "edits": float(len(records)),
            "dd_last": last.drawdown,
            "sr_last": last.success_rate,
            "max_dd": max(r.drawdown for r in records),
            "mean_dd": sum(r.drawdown for r in records) / len(records),
            "mean_sr": sum(r.success_rate for r in records) / len(records),
            "mean_steps": sum(r.steps for r in records) / len(records),
            "ms_per_edit": 1e3 * sum(r.seconds for r in records) / len(records),
        }
    )
    return out


# ------------------------------------------------------------------------------------------------ editors
class SequentialEditor:
    """What every editor shares: inputs, the base accuracy, the edit log, undo, and save/load.

    Parameters
    ----------
    gnn : torch.nn.Module
        A trained node classifier, ``gnn(x, edge_index) -> (nodes x classes)``.
    data : torch_geometric.data.Data
        The graph with ``x``, ``edge_index``, ``y`` and the three masks (:func:`check_graph`).

    Attributes
    ----------
    base_acc : tuple of float
        Train, validation and test accuracy of the unedited GNN (drawdown is measured against the last).
    log : list of EditRecord
        One record per edit so far.
    """

    name = "editor"

    def __init__(self, gnn: nn.Module, data: Data, *, inference_batch: int | None = None) -> None:
        if not isinstance(gnn, nn.Module):
            raise InputError(f"gnn must be a torch.nn.Module, got {type(gnn).__name__}")
        self.data = data = prepare_graph(data, gnn, masks=self._required_masks)
        self.device = data.x.device
        self.inference_batch = check_int(inference_batch, "inference_batch", min_val=1, allow_none=True)
        if self.inference_batch is not None and not isinstance(getattr(gnn, "num_layers", None), int):
            raise InputError(
                "inference_batch needs the GNN's depth, read from gnn.num_layers",
                "give the model a num_layers attribute or leave inference_batch unset",
            )
        self._base_out = base = self.outputs_of(gnn)
        self.num_classes = int(base.size(1))
        if data.y.numel() and int(data.y.max()) >= self.num_classes:
            raise InputError(
                f"data.y has labels up to {int(data.y.max())} but the GNN outputs {self.num_classes} classes"
            )
        self.base_acc = self.accuracy_from(base.argmax(-1))
        self.log: list[EditRecord] = []
        self.targets: list[int] = []
        self.labels: list[int] = []
        self._snapshots: list[dict[str, Any]] = []
        self.closed = False

    _required_masks: tuple[str, ...] = ("train_mask",)

    def outputs_of(self, model: nn.Module) -> Tensor:
        """A GNN's outputs on the whole graph (eval mode): one full-graph forward, or chunk by chunk
        (:func:`chunked_outputs`) when the editor was given ``inference_batch``.

        Parameters
        ----------
        model : torch.nn.Module
            The GNN (or the editor's copy of it).

        Returns
        -------
        torch.Tensor
            Nodes x classes.
        """
        if self.inference_batch is None:
            return gnn_outputs(model, self.data.x, self.data.adj)
        return chunked_outputs(model, self.data, model.num_layers, self.inference_batch)

    # -- lifetime
    def close(self) -> None:
        """Release the editor's model, caches and history; later calls raise :class:`InputError`.

        The caller's GNN is never modified by an editor (no parameter, ``requires_grad`` flag or mode is
        left changed: the editors read it under ``torch.no_grad`` and restore its mode, or edit a copy), so
        closing only frees memory. Editors are also context managers (``with SeedGNNEditor(...) as ed:``).
        """
        self.closed = True
        self._snapshots = []
        self._release()

    def _release(self) -> None:
        """Drop the subclass's models and caches (see :meth:`close`)."""

    def __enter__(self) -> "SequentialEditor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_open(self) -> None:
        if getattr(self, "closed", False):
            raise InputError(f"this {self.name} editor is closed", "build a new one")

    # -- subclasses provide
    def logits(self) -> Tensor:  # pragma: no cover - abstract
        """The current model's outputs on the whole graph (eval mode).

        Returns
        -------
        torch.Tensor
            Nodes x classes.
        """
        raise NotImplementedError

    def _edit(self, node: int, label: int, index: int) -> tuple[int, int, int]:  # pragma: no cover
        """Apply one edit; return (steps, batch size, anchors near the target)."""
        raise NotImplementedError

    def _state(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _load_state(self, state: dict[str, Any]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- the API
    def check_target(self, node, label) -> tuple[int, int]:
        """Validate an edit target.

        Parameters
        ----------
        node : int
            A node id: a Python or NumPy integer, or a one-element tensor.
        label : int
            A class of the GNN (the same types).

        Returns
        -------
        tuple of (int, int)
        """
        self._check_open()
        n = self.data.num_nodes
        if isinstance(node, Tensor) and node.numel() == 1:
            node = node.reshape(()).item()
        if isinstance(label, Tensor) and label.numel() == 1:
            label = label.reshape(()).item()
        node, label = int(check_int(node, "node")), int(check_int(label, "label"))
        if not 0 <= node < n:
            raise InputError(f"node={node!r} is out of range", f"node ids are 0..{n - 1}")
        if not 0 <= label < self.num_classes:
            raise InputError(f"label={label!r} is outside the classes", f"labels are 0..{self.num_classes - 1}")
        return node, label

    def predict(self) -> Tensor:
        """Predicted class of every node.

        Returns
        -------
        torch.Tensor
            Long, one class per node.
        """
        self._check_open()
        return self.logits().argmax(-1)

    def accuracy(self) -> tuple[float, float, float]:
        """Train, validation and test accuracy of the current model.

        Returns
        -------
        tuple of float
        """
        return self.accuracy_from(self.predict())

    def edit(self, node: int, label: int) -> EditRecord:
        """Make the model predict ``label`` for ``node``, on top of all earlier edits; log and return it.

        Parameters
        ----------
        node : int
            The target node.
        label : int
            The class it should be predicted as.

        Returns
        -------
        EditRecord
        """
        node, label = self.check_target(node, label)
        index = len(self.log)
        if not self._snapshots:
            self._snapshots.append(self._snapshot())
        self.targets.append(node)
        self.labels.append(label)
        t0 = time.perf_counter()
        steps, batch, near = self._edit(node, label, index)
        seconds = time.perf_counter() - t0
        pred = self.predict()
        tgt = torch.tensor(self.targets, device=pred.device)
        sr = float((pred[tgt] == torch.tensor(self.labels, device=pred.device)).float().mean())
        tr, va, te = self.accuracy_from(pred)
        rec = EditRecord(
            index,
            node,
            label,
            steps,
            seconds,
            bool(pred[node] == label),
            sr,
            tr,
            va,
            te,
            100.0 * (self.base_acc[2] - te),
            batch,
            near,
        )
        self.log.append(rec)
        self._snapshots.append(self._snapshot())
        return rec

    def accuracy_from(self, pred: Tensor) -> tuple[float, float, float]:
        """Train, validation and test accuracy of the given predictions.

        Parameters
        ----------
        pred : torch.Tensor
            One class per node.

        Returns
        -------
        tuple of float
        """
        self._check_open()
        d = self.data
        check_tensor(pred, "pred", shape=(d.num_nodes,), dtype="integer")
        return tuple(
            float((pred[m] == d.y[m]).float().mean()) if int(m.sum()) else float("nan")
            for m in (d.train_mask, d.val_mask, d.test_mask)
        )

    def edit_many(self, nodes: Sequence[int], labels: Sequence[int], progress: bool = False) -> list[EditRecord]:
        """Edit the targets one after another.

        Parameters
        ----------
        nodes, labels : sequence of int
            The targets and their labels, in order.
        progress : bool, default False
            Show a progress bar.

        Returns
        -------
        list of EditRecord
        """
        self._check_open()
        for value, arg in ((nodes, "nodes"), (labels, "labels")):
            if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or not hasattr(value, "__iter__"):
                raise InputError(f"{arg} must be a sequence of integers, got {type(value).__name__}")
        if len(nodes) != len(labels):
            raise InputError(f"{len(nodes)} nodes but {len(labels)} labels", "give one label per node in labels")
        progress = check_bool(progress, "progress")
        # every target is checked before the first edit: a bad one leaves the editor as it was
        targets = [self.check_target(n, l) for n, l in zip(nodes, labels)]
        from tqdm.auto import tqdm

        out = []
        bar = tqdm(targets, disable=not progress, desc=self.name, unit="edit")
        for n, l in bar:
            rec = self.edit(n, l)
            bar.set_postfix(dd=f"{rec.drawdown:.1f}", sr=f"{rec.success_rate:.2f}")
            out.append(rec)
        return out

    def summary(self) -> dict[str, float]:
        """:func:`summarize` of this editor's log.

        Returns
        -------
        dict of str to float
        """
        return summarize(self.log)

    def undo(self, to_edit: int | None = None) -> None:
        """Return to the state after edit ``to_edit`` (a count: 0 is before any edit; default: drop the last).

        Model, optimizer state, targets and log are restored exactly as they were.

        Parameters
        ----------
        to_edit : int, optional
            Between 0 and the number of edits so far.
        """
        self._check_open()
        n = len(self.log)
        if to_edit is None:
            to_edit = n - 1
        to_edit = check_int(to_edit, "to_edit", min_val=0, max_val=n)
        if to_edit == n:
            return
        if self._snapshots[to_edit] is None:
            raise InputError(
                f"edit {to_edit} predates the state this editor was loaded from",
                f"undo can reach back to edit {len(self.log) - len(self._snapshots) + 1} at most",
            )
        self._restore(self._snapshots[to_edit])
        del self._snapshots[to_edit + 1 :]
        del self.log[to_edit:]
        del self.targets[to_edit:]
        del self.labels[to_edit:]

    def _snapshot(self) -> dict[str, Any]:
        return copy.deepcopy(self._state())

    def _restore(self, snap: dict[str, Any]) -> None:
        self._load_state(copy.deepcopy(snap))

    # -- persistence: plain tensors, ints, floats and lists, readable with torch.load(weights_only=True)
    def state_dict(self) -> dict[str, Any]:
        """The editor's state: model, optimizer, targets and log, as plain tensors and lists.

        Returns
        -------
        dict of str to object
        """
        self._check_open()
        return {
            "format": f"icml24.seed_gnn/{self.name}/1",
            "state": self._state(),
            "targets": list(self.targets),
            "labels": list(self.labels),
            "log": [r.as_dict() for r in self.log],
            "fingerprint": self._fingerprint(),
        }

    def load_state_dict(self, sd: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict` of an editor built on the same GNN and graph.

        Parameters
        ----------
        sd : dict of str to object
        """
        if not isinstance(sd, dict) or sd.get("format") != f"icml24.seed_gnn/{self.name}/1":
            raise InputError(f"sd is not a saved {self.name} editor state", "give what state_dict() returned")
        self._check_open()
        fp = sd.get("fingerprint")
        if not isinstance(fp, Tensor) or fp.shape != self._fingerprint().shape:
            raise InputError("sd has no valid fingerprint", "give what state_dict() returned")
        if not torch.allclose(fp, self._fingerprint(), rtol=1e-5, atol=1e-6, equal_nan=True):
            raise InputError(
                "sd was saved by an editor made for another GNN or graph",
                "load it into an editor built from the same model and data",
            )
        try:  # everything is read before anything is changed; a failed load leaves the editor as it was
            targets, labels = [int(t) for t in sd["targets"]], [int(v) for v in sd["labels"]]
            log = [EditRecord(**r) for r in sd["log"]]
            if not len(targets) == len(labels) == len(log):
                raise ValueError("targets, labels and log differ in length")
            _check_same_layout(sd["state"], self._state())
            before = self._snapshot()
            try:
                self._load_state(sd["state"])
            except Exception:
                self._restore(before)
                raise
        except Exception as exc:  # noqa: BLE001 - a malformed state, reported as such
            raise InputError(f"sd is not a valid {self.name} editor state: {type(exc).__name__}: {exc}") from None
        self.targets, self.labels = targets, labels
        self.log = log
        # history before a load is not kept: undo reaches back to the loaded state only
        self._snapshots = [None] * len(self.log) + [self._snapshot()]  # type: ignore[list-item]

    def save(self, path: str | Path) -> Path:
        """Write the editor's state atomically (``torch.save`` of plain tensors; load with :meth:`load`).

        Parameters
        ----------
        path : str or pathlib.Path

        Returns
        -------
        pathlib.Path
            The file written.
        """
        path = _path_arg(path, "path")
        if path.is_dir():
            raise InputError(f"path {str(path)!r} is a folder", "give a file name")
        buf = io.BytesIO()
        torch.save(self.state_dict(), buf)
        try:
            return atomic_write_bytes(path, buf.getvalue())
        except OSError as exc:
            raise InputError(f"path {str(path)!r} cannot be written: {exc.strerror or exc}") from None

    def load(self, path: str | Path) -> None:
        """Read a state written by :meth:`save` (``weights_only=True``: nothing is unpickled).

        Parameters
        ----------
        path : str or pathlib.Path
        """
        path = _path_arg(path, "path")
        if not path.is_file():
            raise InputError(f"path {str(path)!r}: no saved editor there")
        try:
            sd = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:
            raise InputError(f"path {str(path)!r} is not a saved editor state: {type(exc).__name__}") from None
        self.load_state_dict(sd)

    def _fingerprint(self) -> Tensor:
        """A summary of the base model's outputs, to refuse loading a state into another model or graph."""
        return torch.tensor(self.base_acc + (float(self.data.num_nodes), float(self.num_classes)))


class GnnMlpEditor(SequentialEditor):
    """The frozen-GNN + MLP editor with SEED-GNN's batch (``replay=True``, ``beta`` anchors) or EGNN's
    single-target batch (``replay=False``, ``beta=0``). See the module docstring for the procedure.

    Parameters
    ----------
    gnn : torch.nn.Module
        A trained node classifier, ``gnn(x, edge_index)``; only read, never modified.
    data : torch_geometric.data.Data
        The graph with its three masks.
    lr : float
        Adam learning rate of the warm-up and the edits (> 0).
    max_steps : int, default 500
        At most this many steps per edit.
    replay : bool, default True
        Train each edit on all targets so far (SEED-GNN) instead of the current one (EGNN).
    alpha : float, default 0.25
        Fraction of the anchors drawn from the target's neighbourhood, in [0, 1].
    beta : int, default 100
        Anchors per edit (0: none).
    warmup_iters, warmup_batch : int, default 100 and 32
        The MLP warm-up.
    mlp_hidden, mlp_layers, mlp_dropout : optional
        The MLP's shape (:func:`mlp_shape`).
    official_neighbor_quirk : bool, default False
        Reproduce the official neighbour-index bug.
    seed : int, default 0
        Seeds the MLP, the warm-up batches and the anchors.
    fast : bool, default True
        Edit steps with the MLP's backward written out (same gradients as autograd up to rounding).
    inference_batch : int, optional
        Cache the GNN's outputs this many nodes at a time (:func:`chunked_outputs`; needs
        ``gnn.num_layers``), for graphs whose full-graph forward does not fit in memory. Default: one
        full-graph forward.
    """

    name = "gnn_mlp"

    def __init__(
        self,
        gnn: nn.Module,
        data: Data,
        *,
        lr: float,
        max_steps: int = 500,
        replay: bool = True,
        alpha: float = 0.25,
        beta: int = 100,
        warmup_iters: int = 100,
        warmup_batch: int = 32,
        mlp_hidden: int | None = None,
        mlp_layers: int | None = None,
        mlp_dropout: float | None = None,
        official_neighbor_quirk: bool = False,
        seed: int = 0,
        fast: bool = True,
        inference_batch: int | None = None,
    ) -> None:
        super().__init__(gnn, data, inference_batch=inference_batch)
        self.fast = check_bool(fast, "fast")
        lr = check_float(lr, "lr", min_val=0.0, include_boundaries="right")
        max_steps = check_int(max_steps, "max_steps", min_val=1)
        beta = check_int(beta, "beta", min_val=0)
        warmup_iters = check_int(warmup_iters, "warmup_iters", min_val=0)
        warmup_batch = check_int(warmup_batch, "warmup_batch", min_val=1)
        seed = check_seed(seed)
        alpha = check_probability(alpha, "alpha")
        self.lr, self.max_steps, self.replay = lr, max_steps, check_bool(replay, "replay")
        self.alpha, self.beta, self.seed = alpha, beta, seed
        self.quirk = check_bool(official_neighbor_quirk, "official_neighbor_quirk")
        # the caller's GNN is only read, under no_grad and with its mode restored: never frozen in place
        self.gnn = gnn
        data = self.data
        h, layers, p = mlp_shape(gnn, mlp_hidden, mlp_layers, mlp_dropout)
        gen = torch.Generator().manual_seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=gen)))
            self.mlp = MLP(data.num_features, h, self.num_classes, layers, p)
        self.mlp.to(device=self.device, dtype=data.x.dtype)
        self.g, self._base_out = self._base_out, None  # the GNN's outputs, cached once on the whole graph
        self._ei_cpu = data.edge_index.cpu()  # the anchors' neighbourhoods are found on the CPU
        # sparse (bag-of-words) features on the CPU: the fused step's first layer uses sparse products
        x = data.x
        self._sparse_x = x.numel() > 0 and x.device.type == "cpu" and float((x != 0).float().mean()) < 0.2
        self.optimizer = self._adam()
        self._warmup(warmup_iters, warmup_batch, gen)
        # anchors come from the post-warm-up model, fixed for the whole sequence
        pred = self.predict().cpu()
        y = data.y.cpu()
        self.train_nodes = data.train_mask.cpu().nonzero().view(-1)
        self.correct_pos = (pred[self.train_nodes] == y[self.train_nodes]).nonzero().view(-1)
        self.warm_acc = self.accuracy_from(pred.to(self.device))
        # the official finetune_mlp uses its own optimizer; editing starts with a fresh one that persists
        self.optimizer = self._adam()

    def _adam(self) -> torch.optim.Adam:
        # fused: the same update as the official (single-tensor) Adam, in one kernel per step
        return torch.optim.Adam(self.mlp.parameters(), lr=self.lr, fused=True)

    def _release(self) -> None:
        self.gnn = self.mlp = self.g = self.optimizer = None  # type: ignore[assignment]

    def _warmup(self, iters: int, batch: int, gen: torch.Generator) -> None:
        d, mask = self.data, self.data.train_mask
        train_x, train_adj = induced(d, mask)
        train_y = d.y[mask]
        if self.inference_batch is None:
            g_train = gnn_outputs(self.gnn, train_x, train_adj)
        else:
            ei, w = subgraph(mask, d.edge_index, d.edge_weight, relabel_nodes=True, num_nodes=d.num_nodes)
            sub = Data(x=train_x, edge_index=ei, num_nodes=train_x.size(0))
            sub.edge_weight, sub.adj = w, train_adj
            g_train = chunked_outputs(self.gnn, sub, self.gnn.num_layers, self.inference_batch)
        log_p_gnn = F.log_softmax(g_train, dim=-1)
        self.mlp.eval()  # as in the official finetune_mlp: the model is in eval mode
        for _ in range(iters):
            idx = torch.randint(0, train_x.size(0), (batch,), generator=gen).to(self.device)
            self.optimizer.zero_grad()
            out = self.mlp(train_x[idx]) + g_train[idx]
            log_q = F.log_softmax(out, dim=-1)
            loss = F.cross_entropy(out, train_y[idx]) + F.kl_div(
                log_q, log_p_gnn[idx], log_target=True, reduction="batchmean"
            )
            loss.backward()
            self.optimizer.step()

    @torch.no_grad()
    def logits(self) -> Tensor:
        self.mlp.eval()
        return self.g + self.mlp(self.data.x)

    def forward_nodes(self, nodes: Tensor) -> Tensor:
        """Cached forward: ``g_cached[nodes] + MLP(x[nodes])`` (no message passing).

        Parameters
        ----------
        nodes : torch.Tensor
            Node ids.

        Returns
        -------
        torch.Tensor
            Logits, one row per node.
        """
        return self.g[nodes] + self.mlp(self.data.x[nodes])

    def anchors(self, node: int, index: int) -> tuple[Tensor, int]:
        """SEED-GNN's anchors for the edit of ``node`` and how many come from its neighbourhood.

        Parameters
        ----------
        node : int
            The target.
        index : int
            The edit's position in the sequence (seeds the draw with ``seed + index``).

        Returns
        -------
        anchors : torch.Tensor
            Global node ids of the anchors.
        near : int
            How many of them lie in the target's neighbourhood.
        """
        if self.beta == 0:
            return torch.zeros(0, dtype=torch.long), 0
        gen = torch.Generator().manual_seed(self.seed + index)
        ei = self._ei_cpu
        hops, hood = 0, torch.zeros(0, dtype=torch.long)
        while hood.numel() < self.beta and hops < 4:
            hops += 1
            hood, _, _, _ = k_hop_subgraph(node, hops, ei, num_nodes=self.data.num_nodes)
        in_hood = torch.zeros(self.data.num_nodes, dtype=torch.bool)
        in_hood[hood] = True
        if self.quirk:  # official: positions within the train set tested against global ids
            keep = self.correct_pos[(self.correct_pos < self.data.num_nodes) & in_hood[self.correct_pos]]
        else:
            keep = self.correct_pos[in_hood[self.train_nodes[self.correct_pos]]]
        n_near = int(self.beta * self.alpha)
        near = keep[torch.randperm(keep.numel(), generator=gen)[:n_near]]
        rand = self.correct_pos[torch.randperm(self.correct_pos.numel(), generator=gen)[n_near : self.beta]]
        pos = torch.cat([near, rand])
        anchors = self.train_nodes[pos]
        true_near = int(in_hood[self.train_nodes[near]].sum())
        return anchors, true_near

    def _edit(self, node: int, label: int, index: int) -> tuple[int, int, int]:
        if self.replay:
            nodes, labels = list(self.targets), list(self.labels)
        else:
            nodes, labels = [node], [label]
        n_targets = len(nodes)
        anchors, near = self.anchors(node, index)
        batch = torch.cat([torch.tensor(nodes), anchors]).to(self.device)
        y = torch.cat([torch.tensor(labels, device=self.device), self.data.y[batch[n_targets:]]])
        self.mlp.eval()  # editing runs without dropout, as in the official code after its first check
        with torch.no_grad():
            if int(self.forward_nodes(batch[n_targets - 1 : n_targets]).argmax(-1)) == label:
                return 0, int(batch.numel()), near
        xb, gb = self.data.x[batch], self.g[batch]  # the batch is fixed within an edit: gather once
        step = self._fused_step(xb, gb, y, n_targets) if self.fast else self._autograd_step(xb, gb, y, n_targets)
        steps = 0
        while steps < self.max_steps:
            steps += 1
            if step():  # all targets right, checked on the logits before the step (as the official code)
                break
        return steps, int(batch.numel()), near

    def _autograd_step(self, xb: Tensor, gb: Tensor, y: Tensor, n_targets: int):
        """One edit step with autograd: mean cross-entropy of ``gb + MLP(xb)``, one Adam step."""

        def step() -> bool:
            self.optimizer.zero_grad()
            out = gb + self.mlp(xb)
            loss = F.cross_entropy(out, y)
            done = bool((out[:n_targets].argmax(-1) == y[:n_targets]).all())
            loss.backward()
            self.optimizer.step()
            return done

        return step

    def _fused_step(self, xb: Tensor, gb: Tensor, y: Tensor, n_targets: int):
        """The same step with the MLP's backward written out (eval mode: Linear and ReLU, no dropout), the
        first layer on sparse features when they are sparse (bag-of-words), gradients written straight into
        one flat buffer and Adam applied to it (:meth:`_flat_adam`). Same gradients and update as autograd
        and ``torch.optim.Adam`` up to float rounding; several times fewer operations per step."""
        lins = list(self.mlp.layers)
        params = [p for lin in lins for p in (lin.weight, lin.bias)]
        sparse = self._sparse_x and xb.numel() > 0
        with warnings.catch_warnings():  # torch calls CSR support "beta"; these two products are exact
            warnings.simplefilter("ignore", UserWarning)
            xs = xb.to_sparse_csr() if sparse else None
            xt = xb.t().contiguous().to_sparse_csr() if sparse else None
        onehot = F.one_hot(y, self.num_classes).to(gb.dtype)
        inv_b = 1.0 / y.numel()
        # with sparse features the first weight is stored transposed (in x in, out order) so that both of
        # its sparse products read and write contiguous memory
        adam, grads = self._flat_adam(params, transposed=(0,) if sparse else ())
        last = len(lins) - 1
        wt = [lin.weight.t() for lin in lins]  # views: they follow the in-place updates
        g0t = grads[0].t()  # (in x out), contiguous when the first weight is stored transposed

        @torch.no_grad()
        def step() -> bool:
            hs, zs = [xb], []
            h = xb
            for i, lin in enumerate(lins):
                z = torch.addmm(lin.bias, xs if (i == 0 and sparse) else h, wt[i])
                zs.append(z)
                h = torch.relu(z) if i < last else z
                hs.append(h)
            out = gb + h
            done = bool((out[:n_targets].argmax(-1) == y[:n_targets]).all())
            dz = torch.softmax(out, -1).sub_(onehot).mul_(inv_b)
            for i in range(last, -1, -1):
                if i == 0 and sparse:
                    torch.mm(xt, dz, out=g0t)
                else:
                    torch.mm(dz.t(), hs[i], out=grads[2 * i])
                torch.sum(dz, 0, out=grads[2 * i + 1])
                if i:
                    dz = (dz @ lins[i].weight).mul_(zs[i - 1] > 0)
            adam()
            return done

        return step

    def _flat_adam(self, params: list[Tensor], transposed: Sequence[int] = ()):
        """``torch.optim.Adam``'s update (its single-tensor formula) on one flat buffer per quantity, with
        public tensor operations only: eight operations per step instead of the optimizer's per-call
        Python overhead (replacing the earlier call into torch's private functional Adam).

        The parameters, their gradients and the optimizer's ``exp_avg``/``exp_avg_sq`` become views of flat
        buffers (``params[i]`` for ``i`` in ``transposed`` stored transposed); the optimizer's state is
        copied into the buffers at each edit and stays the one source of truth (state_dict, undo, save).
        The second-moment buffer is read through ``max(v, 1e-30)`` before the square root: on these CPUs
        the square root of zero or of tiny numbers takes a slow path (4-50 times slower), and the change,
        at most ``3e-14`` on a denominator of at least ``eps = 1e-8``, is below float32 resolution there.
        Falls back to ``optimizer.step`` for settings it does not cover (amsgrad, weight decay, maximize,
        several groups).

        Returns
        -------
        step : callable
            One Adam step from the gradients in ``grads``.
        grads : list of torch.Tensor
            Views of the flat gradient buffer, one per parameter (also set as ``p.grad``).
        """
        opt = self.optimizer
        group = opt.param_groups[0]
        if len(opt.param_groups) != 1 or group.get("amsgrad") or group.get("weight_decay") or group.get("maximize"):
            grads = [torch.zeros_like(p) for p in params]
            for p, g in zip(params, grads):
                p.grad = g
            return opt.step, grads
        sizes = [p.numel() for p in params]
        dev, dt = params[0].device, params[0].dtype

        def views(flat: Tensor) -> list[Tensor]:
            return [
                v.view(p.shape[::-1]).t() if i in transposed else v.view_as(p)
                for i, (v, p) in enumerate(zip(flat.split(sizes), params))
            ]

        flat_p = self._flat_params(params, views)
        flat_g, flat_m, flat_v = (torch.zeros(sum(sizes), device=dev, dtype=dt) for _ in range(3))
        grads = views(flat_g)
        step_t = None
        for p, g, m, v in zip(params, grads, views(flat_m), views(flat_v)):
            p.grad = g
            st = opt.state[p]
            if st:
                m.copy_(st["exp_avg"])
                v.copy_(st["exp_avg_sq"])
                step_t = st["step"] if step_t is None else step_t
            st["exp_avg"], st["exp_avg_sq"] = m, v
        if step_t is None:
            step_t = torch.zeros((), dtype=torch.float32, device=dev if group.get("fused") else None)
        for p in params:  # one step counter, shared (Adam keeps equal counters for one group anyway)
            opt.state[p]["step"] = step_t
        b1, b2 = group["betas"]
        lr, eps = float(group["lr"]), float(group["eps"])
        count = [int(step_t)]
        denom = torch.empty_like(flat_v)

        def step() -> None:
            count[0] += 1
            step_t.add_(1)
            t = count[0]
            bc1, bc2 = 1.0 - b1**t, 1.0 - b2**t
            flat_m.lerp_(flat_g, 1.0 - b1)
            flat_v.mul_(b2).addcmul_(flat_g, flat_g, value=1.0 - b2)
            torch.clamp(flat_v, min=1e-30, out=denom).sqrt_().div_(math.sqrt(bc2)).add_(eps)
            flat_p.addcdiv_(flat_m, denom, value=-lr / bc1)

        return step, grads

    def _flat_params(self, params: list[Tensor], views) -> Tensor:
        """One flat buffer holding the MLP's parameters (each parameter a view of it, laid out by ``views``),
        made once per editor."""
        flat = getattr(self, "_flat", None)
        if flat is not None and all(p.data_ptr() == v.data_ptr() for p, v in zip(params, views(flat))):
            return flat
        with torch.no_grad():
            flat = torch.empty(sum(p.numel() for p in params), device=params[0].device, dtype=params[0].dtype)
            for p, v in zip(params, views(flat)):
                v.copy_(p)
                p.data = v
        self._flat = flat
        return flat

    def _state(self) -> dict[str, Any]:
        return {
            "mlp": {k: v.detach().clone() for k, v in self.mlp.state_dict().items()},
            "optimizer": self.optimizer.state_dict(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.mlp.load_state_dict(state["mlp"])
        self.optimizer.load_state_dict(state["optimizer"])

    def _fingerprint(self) -> Tensor:
        return torch.cat([super()._fingerprint(), self.g.sum(0).double().float().cpu()])


class SeedGNNEditor(GnnMlpEditor):
    """SEED-GNN (Zhong et al., ICML 2024): GNN + MLP editing with replayed targets and anchors.

    Parameters
    ----------
    gnn : a trained node classifier, ``gnn(x, edge_index) -> (nodes x classes)``: our backbones, PyG's own
        ``torch_geometric.nn.models.GCN``/``GraphSAGE``/``GIN`` or any module with that forward. It is only
        read (under ``torch.no_grad``, its mode restored) and never modified: no parameter, ``requires_grad``
        flag or mode of the caller's model changes, during editing or after :meth:`close`. The editor runs
        on the model's device and in its floating dtype.
    data : the graph: ``x``, ``edge_index`` or ``adj_t`` (torch sparse or ``SparseTensor``; the model is called
        with what the graph has), ``y`` and ``train_mask``; ``val_mask`` and ``test_mask`` are optional (needed
        only for the accuracies and the drawdown, NaN without them). The user's ``Data`` is not modified.
    lr : edit (and warm-up) learning rate, Adam; official default 1e-3.
    max_steps : at most this many steps per edit (500).
    alpha, beta : the anchor batch: ``floor(alpha * beta)`` from the target's neighbourhood, ``beta`` in all
        (0.25 and 100).
    warmup_iters, warmup_batch : the MLP warm-up (100 iterations of 32 nodes; the official code uses 512
        for Amazon and Coauthor).
    mlp_hidden, mlp_layers, mlp_dropout : the MLP's shape; by default the GNN's own (``hidden_channels``,
        ``num_layers``, ``dropout`` attributes, as ours and PyG's models have them; :func:`mlp_shape`), else
        32, 2, 0.1. Give them for a model without those attributes.
    official_neighbor_quirk : reproduce the official neighbour-index bug (see the module docstring).
    seed : seeds the MLP initialisation, the warm-up batches and (``seed + i``) the anchors of edit ``i``.
    fast : edit steps with the MLP's backward written out and sparse first-layer products (default); ``False``
        uses autograd. Both give the same gradients up to float rounding.
    inference_batch : cache the GNN's outputs this many nodes at a time, for graphs whose full-graph forward
        does not fit in memory (:func:`chunked_outputs`; needs ``gnn.num_layers``). Default: one full forward.

    References
    ----------
    S. Zhong et al. GNNs Also Deserve Editing, and They Need It More Than Once. ICML 2024, PMLR 235:61727.
    """

    name = "seed_gnn"

    def __init__(
        self,
        gnn: nn.Module,
        data: Data,
        *,
        lr: float = 1e-3,
        max_steps: int = 500,
        alpha: float = 0.25,
        beta: int = 100,
        warmup_iters: int = 100,
        warmup_batch: int = 32,
        mlp_hidden: int | None = None,
        mlp_layers: int | None = None,
        mlp_dropout: float | None = None,
        official_neighbor_quirk: bool = False,
        seed: int = 0,
        fast: bool = True,
        inference_batch: int | None = None,
    ) -> None:
        super().__init__(
            gnn,
            data,
            inference_batch=inference_batch,
            lr=lr,
            max_steps=max_steps,
            replay=True,
            alpha=alpha,
            beta=beta,
            warmup_iters=warmup_iters,
            warmup_batch=warmup_batch,
            mlp_hidden=mlp_hidden,
            mlp_layers=mlp_layers,
            mlp_dropout=mlp_dropout,
            official_neighbor_quirk=official_neighbor_quirk,
            seed=seed,
            fast=fast,
        )
