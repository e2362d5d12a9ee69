"""Small instances whose answer enumeration settles: subgraphs of MUTAG graphs, random models of the official
architecture, their brute-force minimum margin, the robust ones among them (:func:`robust_subgraphs`), and the
MIP solved to optimality against that minimum with every bound mode (:func:`exactness_cases`, paper §3.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from .baselines import brute_force_minimum
from .io import mutag_instance, mutag_model
from .mip import CertificationMIP
from .models import SAGEGraphClassifier
from .network import SageNetwork
from .problem import build_space, compute_bounds
from .reading import network_from_module
from .scip_settings import SETTINGS


def robust_subgraphs(
    indices: Sequence[int], k: int, global_budget: int, strength: int = 2, label_shift: int = 1
) -> list[tuple[int, object, int]]:
    """The robust instances among the subgraphs of MUTAG graphs ``indices`` on their first ``k`` nodes.

    Robust: the brute-force minimum margin over every feasible flip set (``Delta = global_budget``) is positive.
    The instances are chosen by that exact test alone, before any solver runs.

    Parameters
    ----------
    indices : sequence of int
        MUTAG graphs.
    k : int
        Nodes kept (the whole graph when it is smaller).
    global_budget : int
    strength : int, default 2
    label_shift : int, default 1

    Returns
    -------
    list of (int, torch_geometric.data.Data, int)
        ``(graph index, subgraph, target)`` cases for :func:`certify_cases`.
    """
    _, net = mutag_model()
    out = []
    for i in indices:
        data = mutag_subgraph(i, k)
        if data.edge_index.shape[1] == 0:
            continue
        _, _, _, t, minimum = brute_force_case(net, data, global_budget, strength, label_shift)
        if minimum > 0:
            out.append((i, data, t))
    return out


def brute_force_case(net: SageNetwork, data, global_budget: int, strength: int, label_shift: int = 1):
    """The attack space of ``data`` and its brute-force minimum margin.

    Parameters
    ----------
    net : SageNetwork
    data : torch_geometric.data.Data
    global_budget : int
        Delta.
    strength : int
    label_shift : int, default 1

    Returns
    -------
    space : AttackSpace
    x : numpy.ndarray
        The features.
    prediction : int
        The clean prediction ``c``.
    target : int
        ``(c + label_shift) mod C``.
    minimum : float
        The brute-force minimum of ``logit[c] - logit[target]``.
    """
    space, x, _, _ = build_space(net, data, global_budget=global_budget, strength=strength)
    c = int(np.argmax(net.forward(x, space.adj.astype(np.float64))))
    t = (c + label_shift) % net.num_classes
    return space, x, c, t, brute_force_minimum(net, space, c, t)[0]


def mutag_subgraph(index: int, k: int):
    """The subgraph of MUTAG graph ``index`` induced by its first ``k`` nodes (a small real instance).

    Parameters
    ----------
    index : int
        MUTAG graph (0-187).
    k : int
        Nodes kept; the whole graph when it has fewer.

    Returns
    -------
    torch_geometric.data.Data
    """
    from torch_geometric.data import Data
    from torch_geometric.utils import subgraph

    inst = mutag_instance(index)
    k = min(k, int(inst.data.num_nodes))
    ei, _ = subgraph(torch.arange(k), inst.data.edge_index, relabel_nodes=True, num_nodes=inst.data.num_nodes)
    return Data(x=inst.data.x[:k].clone(), edge_index=ei)


def synthetic_case(seed: int, n: int = 6, hidden: int = 8):
    """A random instance of the official architecture, with one-hot MUTAG-like features.

    ``SAGEGraphClassifier(7, 2, hidden, 3 layers)`` with PyTorch's default initialisation (under a forked
    global RNG seeded with ``seed``) and a random graph (edge probability 0.4).

    Parameters
    ----------
    seed : int
    n : int, default 6
        Nodes.
    hidden : int, default 8
        Width of the SAGE layers.

    Returns
    -------
    net : SageNetwork
    data : torch_geometric.data.Data
    """
    from torch_geometric.data import Data

    rng = np.random.default_rng(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = SAGEGraphClassifier(7, 2, hidden_channels=hidden, num_layers=3)
    model.eval()
    adj = np.triu(rng.random((n, n)) < 0.4, 1)
    adj = adj | adj.T
    x = np.zeros((n, 7), dtype=np.float32)
    x[np.arange(n), rng.integers(0, 7, n)] = 1.0
    data = Data(x=torch.tensor(x), edge_index=torch.tensor(np.stack(np.nonzero(adj)), dtype=torch.long))
    return network_from_module(model), data


@dataclass
class ExactCase:
    """One (case, budget, mode) of :func:`exactness_cases`.

    Parameters
    ----------
    name : str
    k : int
        Nodes of the graph.
    budget : int
        Delta.
    mode : str
    brute : float
        The brute-force minimum margin.
    primal, dual : float
        SCIP's bounds on it.
    status : str
        SCIP's status ("optimal" when solved).
    seconds : float
    nodes : int
        Branch-and-bound nodes.
    """

    name: str
    k: int
    budget: int
    mode: str
    brute: float
    primal: float
    dual: float
    status: str
    seconds: float
    nodes: int


def exactness_cases(
    cases: Sequence[tuple[str, object, object]],
    budgets: Sequence[int],
    modes: Sequence[str],
    *,
    strength: int = 2,
    time_limit: float = 60.0,
    settings: str = "fast",
    seed: int = 0,
) -> list[ExactCase]:
    """Solve the MIP to optimality with every mode and compare with brute-force enumeration (paper §3.1).

    Parameters
    ----------
    cases : sequence of (str, SageNetwork, torch_geometric.data.Data)
        Named instances.
    budgets : sequence of int
        Global budgets Delta to try on each.
    modes : sequence of str
    strength : int, default 2
    time_limit : float, default 60
        CPU seconds per solve (``limits/gap = 0``).
    settings : {"fast", "official"}, default "fast"
    seed : int, default 0

    Returns
    -------
    list of ExactCase
    """
    params = {**SETTINGS[settings], "timing/clocktype": 1}
    out: list[ExactCase] = []
    for name, net, data in cases:
        for g in budgets:
            space, x, c, t, bf = brute_force_case(net, data, g, strength)
            for mode in modes:
                mip = CertificationMIP(
                    net, space, compute_bounds(net, space, mode), c, t, separator=(mode == "abt"), clean_x=x
                )
                r = mip.solve(time_limit=time_limit, seed=seed, decision=False, params=params)
                out.append(
                    ExactCase(
                        name=name,
                        k=int(space.n),
                        budget=g,
                        mode=mode,
                        brute=bf,
                        primal=r.primal,
                        dual=r.dual,
                        status=r.status,
                        seconds=r.seconds,
                        nodes=r.nodes,
                    )
                )
                mip.free()
    return out


__all__ = [
    "robust_subgraphs",
    "brute_force_case",
    "mutag_subgraph",
    "synthetic_case",
    "ExactCase",
    "exactness_cases",
]
