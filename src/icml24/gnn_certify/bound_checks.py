"""The falsifiable check of the bounds (paper §3.2-3.3: they are valid): sampled feasible attacks must stay inside
them (:func:`bound_violations`), also under random branching decisions, i.e. at a branch-and-bound node
(:func:`random_fixings`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bounds import Bounds
from .network import GRAPH, SageNetwork
from .space import AttackSpace


@dataclass
class Violations:
    """How often sampled attacks left the bounds (:func:`bound_violations`).

    Parameters
    ----------
    samples : int
        Feasible attacks drawn.
    values : int
        Pre-activation values checked.
    count : int
        Values outside their bounds, beyond the tolerance.
    max_excess : float
        Largest excess over a bound (0 when none).
    """

    samples: int
    values: int
    count: int
    max_excess: float


def _bound_list(net: SageNetwork, space: AttackSpace, b: Bounds) -> list[tuple[np.ndarray, np.ndarray]]:
    out = list(zip(b.pre_lo, b.pre_hi))
    if net.task == GRAPH:
        out.append((b.out_lo[-1].sum(axis=0), b.out_hi[-1].sum(axis=0)))
        out.extend(zip(b.dense_pre_lo, b.dense_pre_hi))
    out.append((b.logit_lo, b.logit_hi))
    return out


def bound_violations(
    net: SageNetwork,
    space: AttackSpace,
    b: Bounds,
    samples: int,
    rng: np.random.Generator,
    fixed_on: np.ndarray | None = None,
    fixed_off: np.ndarray | None = None,
    tol: float = 1e-7,
) -> Violations:
    """Count sampled feasible attacks whose pre-activations leave ``b`` (paper §3.2-3.3: the bounds are valid).

    Draws feasible flip sets (and features from the box), runs the network on them and compares every
    pre-activation (SAGE layers, pooled vector, dense layers, logits) with its bounds.

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace
    b : Bounds
        The bounds to check (basic, sbt, or abt under ``fixed_on`` / ``fixed_off``).
    samples : int
        Attacks to draw.
    rng : numpy.random.Generator
    fixed_on, fixed_off : bool array [S], optional
        Branching decisions the attacks must respect (slot present / absent after the attack).
    tol : float, default 1e-7
        Relative tolerance: a value counts when it leaves a bound by more than ``tol * (1 + |bound|)``.

    Returns
    -------
    Violations
        All zero when the fixings admit no attack.
    """
    flips, feats = [], []
    for _ in range(samples):
        f = space.sample_flips(rng, fixed_on, fixed_off)
        if f is None:
            break
        flips.append(f)
        feats.append(space.sample_features(rng) if not space.fixed_features else space.x_lb)
    if not flips:
        return Violations(0, 0, 0, 0.0)
    adj = space.flipped_adj(np.array(flips)).astype(np.float64)
    trace = net.trace(np.array(feats), adj)
    bl = _bound_list(net, space, b)
    if net.task != GRAPH:  # node task: logits are the target node's
        trace = trace[:-1] + [trace[-1][:, space.target_node]]
    count, values, excess = 0, 0, 0.0
    for vals, (lo, hi) in zip(trace, bl):
        scale = tol * (1.0 + np.maximum(np.abs(lo), np.abs(hi)))
        below = lo - vals
        above = vals - hi
        count += int(((below > scale) | (above > scale)).sum())
        values += int(vals.size)
        excess = max(excess, float(np.max(below)), float(np.max(above)))
    return Violations(samples=len(flips), values=values, count=count, max_excess=max(excess, 0.0))


def random_fixings(space: AttackSpace, rng: np.random.Generator, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Branching decisions on ``k`` random slots: each fixed to its clean state or (within the budgets) flipped.

    Parameters
    ----------
    space : AttackSpace
    rng : numpy.random.Generator
    k : int
        Slots to fix (at most all of them).

    Returns
    -------
    fixed_on, fixed_off : bool array [S]
        The slot's edge is fixed present / absent (the ``slot_lo = 1`` / ``slot_hi = 0`` of
        :func:`~icml24.gnn_certify.bounds.topology_bounds`).
    """
    on = np.zeros(space.num_slots, dtype=bool)
    off = np.zeros(space.num_slots, dtype=bool)
    present = space.slot_present
    inc = space.incidence
    counts = np.zeros(space.n, dtype=np.int64)
    used = 0
    for s in rng.choice(space.num_slots, size=min(k, space.num_slots), replace=False):
        touch = inc[:, s]
        flip = rng.random() < 0.5 and used < space.global_budget and (counts[touch] < space.local_budget[touch]).all()
        if space.directed and flip and not present[s]:
            flip = False
        if flip:
            used += 1
            counts[touch] += 1
        state = present[s] ^ flip
        (on if state else off)[s] = True
    return on, off


__all__ = [
    "Violations",
    "bound_violations",
    "random_fixings",
]
