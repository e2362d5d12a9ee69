"""Topology-based bounds tightening (paper §3.2, "static bound tightening", sbt; §3.3 "aggressive", abt).

For a SAGE layer, node ``v`` and output feature ``f`` (``gnn_bounds_robustclassify.c`` /
``gnn_bounds_nodeclassify.c``, ``computeBoundGNNSageLayerNode``):

1. start from the bound on the *clean* graph: ``b_f + W1[f] . h_v + sum_{u -> v in G} W2[f] . h_u``, every
   term taken at the end of the previous layer's interval that minimises (lower) / maximises (upper) it;
2. each message ``u -> v`` the adversary may flip changes that bound by
   ``delta_u = mult * W2[f] . h_u`` at the same interval ends, with ``mult = -1`` for a removal (the
   clean term vanishes) and ``+1`` for an addition;
3. flips already forced by the local bounds of the adjacency variables (branching, abt) are applied and
   count against the budget first; of the remaining changes only the ``min(Delta, Q_v) - #forced`` most
   adverse ones (negative for a lower bound) are added.

ReLU clips the pre-activation bounds; the product ``z_{v,u} = a_{uv} h_u`` gets ``[min(0, L_u), max(0, U_u)]``
while ``a_{uv}`` is free and the exact ``[L_u, U_u]`` / ``[0, 0]`` once it is fixed to 1 / 0 (the official
graph-classification code keeps the upper end ``U_u`` for a pair fixed to 0, a looser but valid bound). Global add-pool
sums node bounds; dense layers use interval arithmetic.

The official code lets the input features be in ``[max(0, lb), min(1, ub)]`` (inputs scaled to [0, 1]); we use
the box ``[x_lb, x_ub]`` itself, which is the same for the paper's binary features and stays sound for
features outside [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ._checks import as_array
from .network import GRAPH, SageNetwork, check_network
from .space import AttackSpace, check_space

MODES = ("basic", "sbt", "abt")


@dataclass
class Bounds:
    """Bounds on every quantity of the MIP (paper §3.2; official ``gnn_bounds*.c``).

    Parameters
    ----------
    mode : str
        "basic", "basic-input", "sbt" or "abt".
    inp_lo, inp_hi : float array [n, F]
        The input features.
    pre_lo, pre_hi, out_lo, out_hi : list of float arrays [n, F_l]
        SAGE layer ``l`` (0-based) before and after its activation.
    aux_lo, aux_hi : list of float arrays [M, F_l]
        ``z = a_uv * h_u`` for the messages of :class:`~icml24.gnn_certify.space.AttackSpace`, with ``h`` the
        output of layer ``l - 1`` (``l = 0``: the input).
    dense_pre_lo, dense_pre_hi, dense_out_lo, dense_out_hi : list of float arrays
        The dense layers (graph task) before and after their activation.
    logit_lo, logit_hi : float array [C]
        The logits (graph task) or the target node's logits (node task).
    infeasible : bool
        The forced flips (abt fixings) exceed a budget: no attack reaches this B&B node.
    """

    mode: str
    inp_lo: np.ndarray
    inp_hi: np.ndarray
    pre_lo: list[np.ndarray] = field(default_factory=list)
    pre_hi: list[np.ndarray] = field(default_factory=list)
    out_lo: list[np.ndarray] = field(default_factory=list)
    out_hi: list[np.ndarray] = field(default_factory=list)
    aux_lo: list[np.ndarray] = field(default_factory=list)
    aux_hi: list[np.ndarray] = field(default_factory=list)
    dense_pre_lo: list[np.ndarray] = field(default_factory=list)
    dense_pre_hi: list[np.ndarray] = field(default_factory=list)
    dense_out_lo: list[np.ndarray] = field(default_factory=list)
    dense_out_hi: list[np.ndarray] = field(default_factory=list)
    logit_lo: np.ndarray | None = None
    logit_hi: np.ndarray | None = None
    infeasible: bool = False

    def add_layer(self, pre_lo: np.ndarray, pre_hi: np.ndarray, relu: bool) -> tuple[np.ndarray, np.ndarray]:
        """Record a SAGE layer's pre-activation bounds and return its output bounds (after the ReLU, if any)."""
        self.pre_lo.append(pre_lo)
        self.pre_hi.append(pre_hi)
        lo, hi = (np.maximum(pre_lo, 0.0), np.maximum(pre_hi, 0.0)) if relu else (pre_lo, pre_hi)
        self.out_lo.append(lo)
        self.out_hi.append(hi)
        return lo, hi

    def widths(self) -> np.ndarray:
        """All SAGE pre-activation widths, flattened (the quantity the tightness claim compares)."""
        return np.concatenate([(hi - lo).ravel() for lo, hi in zip(self.pre_lo, self.pre_hi)])


def _split(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.maximum(w, 0.0), np.minimum(w, 0.0)


def affine_lo_hi(lo: np.ndarray, hi: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Interval of ``h @ w.T`` for ``h`` in [lo, hi] (the official sign-by-sign choice of interval ends).

    Parameters
    ----------
    lo, hi : float array [..., in]
    w : float array [out, in]

    Returns
    -------
    lo, hi : float arrays [..., out]
    """
    wp, wn = _split(w)
    return lo @ wp.T + hi @ wn.T, hi @ wp.T + lo @ wn.T


def k_most(values: np.ndarray, groups: np.ndarray, k: np.ndarray, n: int, lower: bool) -> np.ndarray:
    """Per group ``v``: the sum of the ``k[v]`` most adverse values, feature by feature (sbt step 3).

    Parameters
    ----------
    values : float array [m, F]
    groups : int array [m]
        The group (receiving node) of each value, in [0, n).
    k : int array [n]
        How many values each group may take.
    n : int
        Groups.
    lower : bool
        True: the most negative values (counting negative ones only); False: the most positive.

    Returns
    -------
    float array [n, F]
    """
    f = values.shape[1]
    out = np.zeros((n, f))
    if values.shape[0] == 0:
        return out
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    vals = values[order]
    counts = np.bincount(g, minlength=n)
    width = int(counts.max())
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pos = np.arange(len(g)) - start[g]
    dense = np.zeros((n, width, f))
    dense[g, pos] = np.minimum(vals, 0.0) if lower else -np.maximum(vals, 0.0)
    dense.sort(axis=1)  # most adverse first
    csum = np.cumsum(dense, axis=1)
    kk = np.clip(k, 0, width)
    take = np.zeros((n, f))
    has = kk > 0
    take[has] = csum[np.flatnonzero(has), kk[has] - 1]
    return take if lower else -take


def propagate_head(net: SageNetwork, space: AttackSpace, b: Bounds) -> Bounds:
    """Complete ``b`` past the SAGE layers: pool and dense layers (graph task) or the target node's logits.

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace
    b : Bounds
        With every SAGE layer filled in.

    Returns
    -------
    Bounds
        ``b`` itself, with the head's bounds and the logit bounds set.
    """
    if net.task == GRAPH:
        lo = b.out_lo[-1].sum(axis=0)
        hi = b.out_hi[-1].sum(axis=0)
        for d in net.dense:
            plo, phi = affine_lo_hi(lo, hi, d.weight)
            plo, phi = plo + d.bias, phi + d.bias
            b.dense_pre_lo.append(plo)
            b.dense_pre_hi.append(phi)
            lo, hi = (np.maximum(plo, 0.0), np.maximum(phi, 0.0)) if d.relu else (plo, phi)
            b.dense_out_lo.append(lo)
            b.dense_out_hi.append(hi)
        b.logit_lo, b.logit_hi = lo, hi
    else:
        t = space.target_node
        b.logit_lo, b.logit_hi = b.out_lo[-1][t], b.out_hi[-1][t]
    return b


def topology_bounds(
    net: SageNetwork,
    space: AttackSpace,
    slot_lo: np.ndarray | None = None,
    slot_hi: np.ndarray | None = None,
    x_lo: np.ndarray | None = None,
    x_hi: np.ndarray | None = None,
) -> Bounds:
    """Topology-based bounds: sbt (paper §3.2), or abt under local fixings of the adjacency variables (§3.3).

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace
    slot_lo, slot_hi : float array [S], optional
        Local bounds of the adjacency variables: ``slot_lo[s] = 1`` fixes slot s's edge present,
        ``slot_hi[s] = 0`` absent. Omitted: the sbt bounds (every slot free).
    x_lo, x_hi : float array [n, F], optional
        Local bounds of the features replacing the box (the official separator reads the local bounds of the
        input variables).

    Returns
    -------
    Bounds
        ``mode`` "sbt" or "abt"; ``infeasible`` is set when the forced flips exceed a budget.

    References
    ----------
    Hojny, Zhang, Campos, Misener (ICML 2024), §3.2-3.3; official ``computeBoundGNNSageLayerNode``.
    """
    net = check_network(net)
    space = check_space(space, net)
    S = space.num_slots
    s_lo = np.zeros(S) if slot_lo is None else as_array(slot_lo, "slot_lo", shape=(S,), allow_empty=True)
    s_hi = np.ones(S) if slot_hi is None else as_array(slot_hi, "slot_hi", shape=(S,), allow_empty=True)
    for name, arr in (("slot_lo", s_lo), ("slot_hi", s_hi)):
        if ((arr < 0) | (arr > 1)).any():
            raise InputError(f"{name} must lie in [0, 1] (bounds of binary adjacency variables)")
    if (s_lo > s_hi).any():
        raise InputError("slot_lo <= slot_hi must hold for every slot")
    x_lo = None if x_lo is None else as_array(x_lo, "x_lo", shape=space.x_lb.shape)
    x_hi = None if x_hi is None else as_array(x_hi, "x_hi", shape=space.x_lb.shape)
    if x_lo is not None and (x_lo < space.x_lb - 1e-9).any():
        raise InputError("x_lo must lie inside the space's feature box (x_lo >= space.x_lb)")
    if x_hi is not None and (x_hi > space.x_ub + 1e-9).any():
        raise InputError("x_hi must lie inside the space's feature box (x_hi <= space.x_ub)")
    if ((space.x_lb if x_lo is None else x_lo) > (space.x_ub if x_hi is None else x_hi)).any():
        raise InputError("x_lo <= x_hi must hold elementwise")
    return topology_bounds_unchecked(net, space, s_lo, s_hi, x_lo, x_hi, slot_lo is None and slot_hi is None)


def topology_bounds_unchecked(net, space, s_lo, s_hi, x_lo, x_hi, static: bool) -> Bounds:
    """:func:`topology_bounds` on checked arrays (also called by the abt separator at every B&B node).

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace
    s_lo, s_hi : float array [S]
        Local bounds of the adjacency variables.
    x_lo, x_hi : float array [n, F] or None
        Local feature bounds (None: the space's box).
    static : bool
        True for the sbt bounds (every slot free), False for abt.

    Returns
    -------
    Bounds
    """
    n = space.n
    src, dst, sid = space.msg_src, space.msg_dst, space.msg_slot
    present = space.adj[src, dst]
    on = s_lo[sid] > 0.5
    off = s_hi[sid] < 0.5
    free = ~on & ~off
    if space.directed:
        free &= present  # arcs can only be deleted
    forced = (present & off) | (~present & on)
    sign = np.where(present, -1.0, 1.0)
    n_forced = np.bincount(dst[forced], minlength=n)
    k = space.effective_local() - n_forced
    slot_forced = (space.slot_present & (s_hi < 0.5)) | (~space.slot_present & (s_lo > 0.5))
    infeasible = bool(
        (k < 0).any()
        or slot_forced.sum() > space.global_budget
        or (space.incidence.astype(np.int64) @ slot_forced > space.local_budget).any()
    )

    lo = space.x_lb.copy() if x_lo is None else np.asarray(x_lo, dtype=np.float64)
    hi = space.x_ub.copy() if x_hi is None else np.asarray(x_hi, dtype=np.float64)
    b = Bounds(mode="sbt" if static else "abt", inp_lo=lo, inp_hi=hi, infeasible=infeasible)
    for layer in net.sage:
        # aux bounds for z = a_uv * h_u with h the input of this layer
        zl = np.where(free[:, None], np.minimum(lo[src], 0.0), np.where(on[:, None], lo[src], 0.0))
        zh = np.where(free[:, None], np.maximum(hi[src], 0.0), np.where(on[:, None], hi[src], 0.0))
        b.aux_lo.append(zl)
        b.aux_hi.append(zh)

        r_lo, r_hi = affine_lo_hi(lo, hi, layer.w_root)
        m_lo, m_hi = affine_lo_hi(lo, hi, layer.w_nbr)
        base_lo = r_lo + layer.bias
        base_hi = r_hi + layer.bias
        np.add.at(base_lo, dst[present], m_lo[src[present]])
        np.add.at(base_hi, dst[present], m_hi[src[present]])
        if forced.any():  # forced flips: a removal cancels the clean term, an addition adds its bound
            fs = np.flatnonzero(forced)
            np.add.at(base_lo, dst[fs], sign[fs, None] * m_lo[src[fs]])
            np.add.at(base_hi, dst[fs], sign[fs, None] * m_hi[src[fs]])
        fr = np.flatnonzero(free)
        d_lo = sign[fr, None] * m_lo[src[fr]]  # change of the lower bound if u -> v is flipped
        d_hi = sign[fr, None] * m_hi[src[fr]]
        pre_lo = base_lo + k_most(d_lo, dst[fr], k, n, lower=True)
        pre_hi = base_hi + k_most(d_hi, dst[fr], k, n, lower=False)
        pre_hi = np.maximum(pre_hi, pre_lo)  # only an infeasible node could cross them
        lo, hi = b.add_layer(pre_lo, pre_hi, layer.relu)
    return propagate_head(net, space, b)


__all__ = [
    "Bounds",
    "MODES",
    "topology_bounds",
    "topology_bounds_unchecked",
    "propagate_head",
    "affine_lo_hi",
    "k_most",
]
