"""The problem :func:`~icml24.gnn_certify.certify` solves, read from its arguments: the model as a network, the
graph's arrays, the attack space under the budgets and feature box (for node classification on the k-hop
subgraph of the node), and the root bounds of a bound mode."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_choice, check_float, check_int
from ._checks import BUDGET_MAX, as_array
from .baselines import basic_bounds
from .bounds import MODES, Bounds, topology_bounds
from .models import module_from_network
from .network import GRAPH, SageNetwork, check_network
from .reading import network_from_module
from .space import AttackSpace, check_space, official_graph_budgets


def as_network(model, task: str | None, relu) -> tuple[torch.nn.Module, SageNetwork]:
    """The PyG module to run and the network to verify, from a PyG model or a SageNetwork."""
    if isinstance(model, SageNetwork):
        return module_from_network(model), model
    if not isinstance(model, torch.nn.Module):
        raise InputError(f"model must be a PyG torch.nn.Module or a SageNetwork, got {type(model).__name__}")
    return model, network_from_module(model, task=task, relu=relu)


def graph_arrays(data) -> tuple[np.ndarray, np.ndarray]:
    """``x`` (float64) and ``edge_index`` (int64) of one graph, checked."""
    if data is None or isinstance(data, (str, bytes, np.ndarray, torch.Tensor, list, tuple, dict)):
        raise InputError(f"data must be a torch_geometric Data with x and edge_index, got {type(data).__name__}")
    x = getattr(data, "x", None)
    ei = getattr(data, "edge_index", None)
    if x is None or ei is None:
        raise InputError("data must have x [n, F] and edge_index [2, E] (a torch_geometric Data)")
    num_graphs = getattr(data, "num_graphs", 1) if getattr(data, "batch", None) is not None else 1
    if isinstance(num_graphs, int) and num_graphs > 1:
        raise InputError(
            f"data is a batch of {num_graphs} graphs; certify takes one graph",
            "certify each graph of a Batch, Dataset or DataLoader with certify_dataset",
        )
    x = as_array(x, "data.x", ndim=2).astype(np.float64)
    ei = as_array(ei, "data.edge_index", shape=(2, None), dtype="integer", allow_empty=True)
    if ei.size and (ei.min() < 0 or ei.max() >= x.shape[0]):
        raise InputError(f"data.edge_index refers to nodes outside [0, {x.shape[0]})")
    return x, ei.astype(np.int64)


def _feature_box(x: np.ndarray, lb, ub) -> tuple[np.ndarray, np.ndarray]:
    def box(value, name):
        if value is None:
            return x.copy()
        arr = as_array(value, name, ndim=(0, 1, 2))
        try:
            return np.broadcast_to(arr, x.shape).astype(np.float64).copy()
        except ValueError:
            raise InputError(f"{name} must broadcast to data.x's shape {x.shape}, got {arr.shape}") from None

    lo, hi = box(lb, "feature_lb"), box(ub, "feature_ub")
    if not (lo <= x).all():
        raise InputError("feature_lb <= data.x must hold")
    if not (x <= hi).all():
        raise InputError("data.x <= feature_ub must hold")
    return lo, hi


def _local(local_budget, n: int, default: np.ndarray, subset: np.ndarray | None = None) -> np.ndarray:
    """Q_v: one integer or one per node of ``data`` (``n`` nodes); node task: restricted to ``subset``."""
    if local_budget is None:
        return default
    q = as_array(local_budget, "local_budget", ndim=(0, 1), dtype="integer")
    if q.ndim == 1 and q.shape[0] != n:
        raise InputError(f"local_budget must be one integer or one per node of data ({n}), got {q.shape[0]} entries")
    if (q < 0).any():
        raise InputError("local_budget must be integers >= 0 (one, or one per node)")
    q = np.broadcast_to(q, (n,)).astype(np.int64)
    return q if subset is None else q[subset]


def check_budget_args(budget, global_budget) -> tuple[float | None, int | None]:
    budget = check_float(budget, "budget", min_val=0.0, max_val=1.0, allow_none=True)
    global_budget = check_int(global_budget, "global_budget", min_val=0, max_val=BUDGET_MAX, allow_none=True)
    return budget, global_budget


def _global(budget, global_budget, entries: int) -> int | None:
    budget, global_budget = check_budget_args(budget, global_budget)
    if global_budget is not None:
        return global_budget
    if budget is None:
        return None
    return math.ceil(entries * budget)


def build_space(
    net: SageNetwork,
    data,
    *,
    budget: float | None = 0.1,
    global_budget: int | None = None,
    strength: int = 2,
    local_budget=None,
    node: int | None = None,
    feature_lb=None,
    feature_ub=None,
    max_nodes: int = 64,
) -> tuple[AttackSpace, np.ndarray, np.ndarray, np.ndarray]:
    """The attack space of ``data`` and, for node classification, the k-hop subgraph it lives on.

    Parameters
    ----------
    net : SageNetwork
    data : torch_geometric.data.Data
    budget, global_budget, strength, local_budget, node, feature_lb, feature_ub, max_nodes
        As in :func:`~icml24.gnn_certify.certify`.

    Returns
    -------
    space : AttackSpace
    x : float array
        The features of the modelled nodes.
    subset : int array
        Their indices in ``data``.
    edge_index : int array [2, E]
        The edges of ``data``.
    """
    net = check_network(net)
    check_budget_args(budget, global_budget)
    strength = check_int(strength, "strength", min_val=0, max_val=BUDGET_MAX)
    max_nodes = check_int(max_nodes, "max_nodes", min_val=1)
    x, ei = graph_arrays(data)
    n, F = x.shape
    if F != net.in_features:
        raise InputError(f"data.x has {F} features but the model's input size is {net.in_features}")
    if net.task == GRAPH:
        if node is not None:
            raise InputError("node is for node classification; this model classifies graphs")
        if n > max_nodes:
            raise InputError(
                f"the graph has {n} nodes, more than max_nodes={max_nodes}",
                "the MIP grows as n^2 x hidden width per layer; raise max_nodes to try anyway",
            )
        adj = np.zeros((n, n), dtype=bool)
        if (ei[0] == ei[1]).any():
            raise InputError(
                "data.edge_index has self-loops, which graph classification does not model",
                "remove them (the official MIP ignores self-loops)",
            )
        adj[ei[0], ei[1]] = True
        if (adj != adj.T).any():
            raise InputError("data.edge_index must be undirected (both directions of every edge)")
        if adj.sum() != ei.shape[1]:
            raise InputError("data.edge_index has duplicate edges")
        strength = check_int(strength, "strength", min_val=0, max_val=BUDGET_MAX)
        g = _global(budget, global_budget, ei.shape[1])
        if g is None:
            raise InputError("give budget (a fraction of the edges) or global_budget (a number of flips)")
        _, q_default = official_graph_budgets(ei.shape[1], adj.sum(axis=1), 0.0, int(strength))
        q = _local(local_budget, n, q_default)
        lo, hi = _feature_box(x, feature_lb, feature_ub)
        return (
            AttackSpace(adj=adj, directed=False, global_budget=g, local_budget=q, x_lb=lo, x_ub=hi),
            x,
            np.arange(n),
            ei,
        )
    # node classification: the k-hop subgraph around the node (official k_hop_subgraph(index, 2, ...))
    if node is None:
        raise InputError("node must be given for node classification", f"a node index in [0, {n})")
    node = check_int(node, "node", min_val=0, max_val=n - 1)
    from torch_geometric.utils import k_hop_subgraph

    subset, sub_ei, mapping, _ = k_hop_subgraph(
        int(node), len(net.sage), torch.as_tensor(ei), relabel_nodes=True, num_nodes=n
    )
    subset = subset.numpy()
    sub_ei = sub_ei.numpy()
    k = len(subset)
    if k > max_nodes:
        raise InputError(
            f"the {len(net.sage)}-hop subgraph of node {node} has {k} nodes, more than max_nodes={max_nodes}",
            "raise max_nodes to try anyway",
        )
    adj = np.zeros((k, k), dtype=bool)
    adj[sub_ei[0], sub_ei[1]] = True
    if adj.sum() != sub_ei.shape[1]:
        raise InputError("data.edge_index has duplicate arcs")
    g = _global(budget, global_budget, sub_ei.shape[1])
    if g is None:
        raise InputError("give global_budget (a number of arc deletions) for node classification")
    strength = check_int(strength, "strength", min_val=0, max_val=BUDGET_MAX)
    q = _local(local_budget, n, np.full(k, int(strength), dtype=np.int64), subset)
    lo, hi = _feature_box(x, feature_lb, feature_ub)
    space = AttackSpace(
        adj=adj,
        directed=True,
        global_budget=g,
        local_budget=q,
        x_lb=lo[subset],
        x_ub=hi[subset],
        target_node=int(mapping[0]),
    )
    return space, x[subset], subset, ei


def compute_bounds(net: SageNetwork, space: AttackSpace, mode: str) -> Bounds:
    """The root bounds of a bound mode.

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace
    mode : {"basic", "sbt", "abt"}
        ``basic`` (official basic settings), ``sbt`` or ``abt`` (the root bounds of abt are the sbt bounds;
        the abt separator tightens them below the root).

    Returns
    -------
    Bounds
    """
    net = check_network(net)
    space = check_space(space, net)
    mode = check_choice(mode, "mode", MODES)
    if mode == "basic":
        return basic_bounds(net, space)
    return topology_bounds(net, space)


__all__ = [
    "build_space",
    "compute_bounds",
]
