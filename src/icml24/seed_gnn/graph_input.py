"""The editors' view of the user's graph: validation, the structure in the user's layout (``edge_index``, a torch
sparse ``adj_t`` or a ``SparseTensor``), induced subgraphs, and the GNN's outputs (whole graph or chunk by chunk).

The user's ``Data`` and model are only read: :func:`prepare_graph` builds a new ``Data`` on the model's device
and dtype, and :func:`gnn_outputs` runs the model under ``torch.no_grad`` with its mode restored.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import Tensor, nn

from ..extras import require

require("torch_geometric", extra="graphs", what="seed_gnn")  # one line naming the extra, not a raw ImportError

from torch_geometric.data import Data
from torch_geometric.utils import is_torch_sparse_tensor, k_hop_subgraph, subgraph, to_edge_index

from ..errors import InputError
from ..validation import check_int, check_tensor

__all__ = ["check_graph", "prepare_graph", "gnn_outputs", "chunked_outputs", "edges_of", "structure_like", "check_seed"]


def check_seed(seed, name: str = "seed") -> int:
    """A seed: an integer in [0, 2^63 - 1], so that ``seed + i`` still seeds a ``torch.Generator``.

    Parameters
    ----------
    seed : int
    name : str, default "seed"

    Returns
    -------
    int
    """
    return check_int(seed, name, min_val=0, max_val=2**63 - 1)


EVAL_MASKS = ("train_mask", "val_mask", "test_mask")


def _is_sparse_tensor(a: Any) -> bool:
    """A ``torch_sparse.SparseTensor`` (or a look-alike), told by its type's name and methods.

    Kept rather than ``isinstance(a, torch_geometric.typing.SparseTensor)``: that class is a placeholder when
    torch_sparse is missing, and this test also takes objects of the same interface, as it always has.
    """
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
    # not PyG's to_edge_index for a SparseTensor: it returns ones for a value-less one, where the user's model
    # must get the structure back without values (structure_like), so the values stay None here
    if _is_sparse_tensor(adj):
        if tuple(adj.sparse_sizes()) != (num_nodes, num_nodes):
            raise InputError(f"data.adj_t must be {num_nodes} x {num_nodes}, got {tuple(adj.sparse_sizes())}")
        row, col, val = adj.coo()
        return torch.stack([col, row]).long(), val
    if is_torch_sparse_tensor(adj):
        if tuple(adj.shape) != (num_nodes, num_nodes):
            raise InputError(f"data.adj_t must be {num_nodes} x {num_nodes}, got {tuple(adj.shape)}")
        # coalesced first (duplicates summed, row-major order) whatever the layout: to_edge_index only marks a
        # COO tensor coalesced and keeps a CSC tensor's column-major order
        ei, val = to_edge_index(adj.to_sparse_coo().coalesce())
        return ei.flip(0), val  # adj_t[i, j] is the edge j -> i
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
    if is_torch_sparse_tensor(like):
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
