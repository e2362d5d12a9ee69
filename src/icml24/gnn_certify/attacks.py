"""A greedy edge-flip attack: an incomplete, fast search for a counterexample (not part of the paper).

Starting from the clean graph, it repeatedly applies the single feasible flip that lowers
``logit[orig] - logit[target]`` most (all candidates in one batched forward pass), until the budget is spent or
no flip helps. ``certify(..., attack_first=True)`` runs it before the MIP: an attack it finds, once re-checked
on the user's PyG model, is a ``not_robust`` certificate without calling SCIP; otherwise the MIP decides as
usual. It never produces a ``robust`` verdict.
"""

from __future__ import annotations

import numpy as np

from .network import SageNetwork
from .space import AttackSpace


def greedy_attack(
    net: SageNetwork, space: AttackSpace, orig: int, target: int, restarts: int = 1, seed: int = 0
) -> tuple[float, np.ndarray]:
    """Greedy flips that lower ``logit[orig] - logit[target]`` most, one at a time (fixed features ``x_lb``).

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace
    orig, target : int
        Classes.
    restarts : int, default 1
        Later restarts break ties at random.
    seed : int, default 0
        Seed of those restarts.

    Returns
    -------
    margin : float
        The best margin found (an upper bound on the minimum).
    flips : bool array [S]
    """
    present = space.slot_present
    inc = space.incidence.astype(np.int64)
    rng = np.random.default_rng(seed)
    best_m, best_f = np.inf, np.zeros(space.num_slots, dtype=bool)
    for r in range(max(1, restarts)):
        flips = np.zeros(space.num_slots, dtype=bool)
        counts = np.zeros(space.n, dtype=np.int64)
        cur = _margin(net, space, flips[None], orig, target)[0]
        for _ in range(space.global_budget):
            ok = (
                ~flips
                & (counts[space.slots[:, 0]] < space.local_budget[space.slots[:, 0]])
                & (counts[space.slots[:, 1]] < space.local_budget[space.slots[:, 1]])
            )
            if space.directed:
                ok &= present
            cand = np.flatnonzero(ok)
            if cand.size == 0:
                break
            trial = np.repeat(flips[None], cand.size, axis=0)
            trial[np.arange(cand.size), cand] = True
            m = _margin(net, space, trial, orig, target)
            if r > 0:  # later restarts: break ties and escape the first greedy path at random
                m = m + rng.normal(scale=1e-3 * (1.0 + np.abs(m).mean()), size=m.shape)
            j = int(np.argmin(m))
            if m[j] >= cur:
                break
            flips[cand[j]] = True
            counts += inc[:, cand[j]]
            cur = m[j]
        cur = _margin(net, space, flips[None], orig, target)[0]
        if cur < best_m:
            best_m, best_f = float(cur), flips.copy()
    return best_m, best_f


def _margin(net: SageNetwork, space: AttackSpace, flips: np.ndarray, orig: int, target: int) -> np.ndarray:
    out = net.forward(space.x_lb, space.flipped_adj(flips).astype(np.float64))
    if out.ndim == 3:
        out = out[:, space.target_node]
    return out[:, orig] - out[:, target]


__all__ = ["greedy_attack"]
