"""The paper's data model (Section 3.2 of arXiv 2406.01977) as a seeded generator of PyG ``Data``.

Every feature is one of ``2 + num_patterns`` orthonormal patterns plus noise of norm at most ``tau``: the
discriminative patterns mu_+ and mu_- (a fraction ``gamma_d`` of the nodes, half each) and the class-irrelevant
v_1..v_M. A node's label is the discriminative pattern in the majority among the nodes at shortest-path distance
exactly ``core_dist`` (its core neighbourhood); the winning margin is the majority minus the minority count.
Nodes whose margin is below ``min_margin`` (ties included) are marked invalid and kept out of training and
evaluation.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_float, check_int, check_seed
from .shallow import hop_context

__all__ = ["pattern_graph"]


def pattern_graph(
    num_nodes: int = 800,
    *,
    dim: int = 32,
    num_patterns: int = 8,
    gamma_d: float = 0.2,
    tau: float = 0.1,
    degree: float = 4.0,
    core_dist: int = 2,
    hops: int = 3,
    min_margin: int = 1,
    seed: int = 0,
):
    """Draw a graph of the paper's data model with its ground truth.

    Parameters
    ----------
    num_nodes : int, default 800
    dim : int, default 32
        Feature size d; needs ``d >= num_patterns + 2``.
    num_patterns : int, default 8
        M, the non-discriminative patterns.
    gamma_d : float, default 0.2
        Fraction of discriminative nodes, in (0, 1].
    tau : float, default 0.1
        Noise norm bound, in [0, 0.5).
    degree : float, default 4.0
        Mean degree of the Erdos-Renyi graph.
    core_dist : int, default 2
        z_m, in [1, hops].
    hops : int, default 3
        Z, the context radius the data is meant for (only bounds ``core_dist``).
    min_margin : int, default 1
        Nodes with a smaller winning margin are invalid.
    seed : int, default 0

    Returns
    -------
    torch_geometric.data.Data
        ``x`` (N, d) float32, ``edge_index`` (undirected), ``y`` (N,) int64 in {0, 1} (1 is the mu_+ class),
        ``disc`` (N,) in {+1, -1, 0} (the node's own discriminative pattern, 0 if none), ``margin`` (N,),
        ``valid`` (N,) bool, ``patterns`` (2 + M, d) orthonormal rows (mu_+, mu_-, v_1..v_M), ``core_dist``,
        ``gamma_d``.
    """
    from torch_geometric.data import Data
    from torch_geometric.utils import to_undirected

    n = check_int(num_nodes, "num_nodes", min_val=4)
    m = check_int(num_patterns, "num_patterns", min_val=1)
    d = check_int(dim, "dim", min_val=m + 2)
    gamma_d = check_float(gamma_d, "gamma_d", min_val=0.0, max_val=1.0, include_boundaries="right")
    tau = check_float(tau, "tau", min_val=0.0, max_val=0.5, include_boundaries="left")
    degree = check_float(degree, "degree", min_val=0.0, max_val=n - 1.0, include_boundaries="right")
    hops = check_int(hops, "hops", min_val=1)
    core_dist = check_int(core_dist, "core_dist", min_val=1)
    if core_dist > hops:
        raise InputError(f"core_dist={core_dist} exceeds hops={hops}", "choose core_dist <= hops")
    min_margin = check_int(min_margin, "min_margin", min_val=1)
    rng = np.random.default_rng(check_seed(seed))

    patterns = np.linalg.qr(rng.standard_normal((d, d)))[0][:, : m + 2].T  # (2 + M, d), orthonormal rows
    kind = np.where(rng.random(n) < gamma_d, rng.integers(0, 2, n), 2 + rng.integers(0, m, n))
    noise = rng.standard_normal((n, d))
    noise *= (tau * rng.random(n) / np.linalg.norm(noise, axis=1))[:, None]
    x = patterns[kind] + noise
    disc = np.where(kind == 0, 1, np.where(kind == 1, -1, 0))

    p = degree / (n - 1)
    iu = np.triu_indices(n, 1)
    pick = rng.random(len(iu[0])) < p
    edge_index = to_undirected(torch.as_tensor(np.stack([iu[0][pick], iu[1][pick]]), dtype=torch.long), num_nodes=n)

    ctx = hop_context(edge_index, n, core_dist)
    at = (ctx.dist == core_dist).numpy()
    votes = np.zeros(n, dtype=np.int64)
    np.add.at(votes, ctx.target.numpy()[at], disc[ctx.source.numpy()[at]])
    margin = np.abs(votes)
    return Data(
        x=torch.as_tensor(x, dtype=torch.float32),
        edge_index=edge_index,
        y=torch.as_tensor((votes > 0).astype(np.int64)),
        disc=torch.as_tensor(disc, dtype=torch.long),
        margin=torch.as_tensor(margin),
        valid=torch.as_tensor(margin >= min_margin),
        patterns=torch.as_tensor(patterns, dtype=torch.float32),
        core_dist=core_dist,
        gamma_d=gamma_d,
    )
