"""The peers: basic interval bounds (the paper's baseline) and brute-force enumeration (the exact reference).

**basic** mirrors ``SCIPcomputeBoundsGNN`` (``gnn_bounds.c``) with the settings of the official
``settings/*_basic.set`` (``useenhancedbounds = FALSE``, ``useinputbasedbounds = FALSE``):

- the input features are only known to lie in [0, 1] (the official code assumes inputs scaled to [0, 1];
  we take the hull of [0, 1] and the feature box so the bound stays sound for other features;
  ``input_based=True`` uses the box alone, the official ``useinputbasedbounds = TRUE``);
- a SAGE layer's bound at ``v`` adds, for *every* possible neighbour ``u`` (every ``u != v`` in graph
  classification, every ``u`` in node classification), the worst case of ``W2 . z_{v,u}`` over
  ``z in [min(0, L_u), max(0, U_u)]``: it ignores the clean graph and the budgets (paper §3.1).

**brute force** enumerates every feasible flip set (and, with feature boxes, samples features) and evaluates
the network on all of them in one batched forward pass: the exact minimum margin for small budgets.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..validation import check_bool, check_int
from ._checks import as_array, check_class
from .bounds import Bounds, affine_lo_hi, propagate_head
from .network import SageNetwork, check_network
from .space import AttackSpace, check_space


def basic_bounds(net: SageNetwork, space: AttackSpace, input_based: bool = False) -> Bounds:
    """Interval bounds that ignore topology and budgets: the paper's baseline (official ``SCIPcomputeBoundsGNN``).

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace
    input_based : bool, default False
        Use the feature box alone (official ``useinputbasedbounds = TRUE``); default: the hull of [0, 1] and
        the box (the official basic settings assume inputs in [0, 1]).

    Returns
    -------
    Bounds
        ``mode`` "basic" or "basic-input".
    """
    net = check_network(net)
    space = check_space(space, net)
    input_based = check_bool(input_based, "input_based")
    if input_based:
        lo, hi = space.x_lb.copy(), space.x_ub.copy()
    else:
        lo, hi = np.minimum(space.x_lb, 0.0), np.maximum(space.x_ub, 1.0)
    b = Bounds(mode="basic" + ("-input" if input_based else ""), inp_lo=lo, inp_hi=hi)
    n = space.n
    for layer in net.sage:
        zl, zh = np.minimum(lo, 0.0), np.maximum(hi, 0.0)
        b.aux_lo.append(zl[space.msg_src])
        b.aux_hi.append(zh[space.msg_src])
        r_lo, r_hi = affine_lo_hi(lo, hi, layer.w_root)
        c_lo, c_hi = affine_lo_hi(zl, zh, layer.w_nbr)
        tot_lo, tot_hi = c_lo.sum(axis=0), c_hi.sum(axis=0)
        if space.directed:  # every u, self included
            pre_lo = layer.bias + r_lo + tot_lo[None, :].repeat(n, axis=0)
            pre_hi = layer.bias + r_hi + tot_hi[None, :].repeat(n, axis=0)
        else:  # every u != v
            pre_lo = layer.bias + r_lo + (tot_lo[None, :] - c_lo)
            pre_hi = layer.bias + r_hi + (tot_hi[None, :] - c_hi)
        lo, hi = b.add_layer(pre_lo, pre_hi, layer.relu)
    return propagate_head(net, space, b)


def margins(
    net: SageNetwork, space: AttackSpace, flip_sets: np.ndarray, orig: int, target: int, x: np.ndarray | None = None
) -> np.ndarray:
    """``logit[orig] - logit[target]`` for every flip set, in one batched forward pass.

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace
    flip_sets : bool array [B, S]
    orig, target : int
        Classes.
    x : float array [n, F], optional
        Features (default ``space.x_lb``).

    Returns
    -------
    float array [B]
        One margin per row of ``flip_sets``.
    """
    net = check_network(net)
    space = check_space(space, net)
    f = as_array(flip_sets, "flip_sets", ndim=2, dtype=None, allow_empty=True)
    if f.shape[1] != space.num_slots:
        raise InputError(
            f"flip_sets must be [B, S={space.num_slots}] (one column per slot of the space), got {f.shape}",
            "space.slots lists the slots; build flip sets with np.zeros((B, space.num_slots), bool)",
        )
    if f.dtype.kind not in "biu" or not np.isin(f, (0, 1)).all():
        raise InputError("flip_sets must hold booleans (or 0/1)")
    f = f.astype(bool)
    if space.directed and (f & ~space.slot_present).any():
        raise InputError("flip_sets adds arcs, but node classification only deletes existing ones")
    orig, target = _classes(net, orig, target)
    if x is None:
        feats = space.x_lb
    else:
        feats = as_array(x, "x", shape=space.x_lb.shape)
        if (feats < space.x_lb).any() or (feats > space.x_ub).any():
            raise InputError("x must lie in the space's feature box [x_lb, x_ub]")
    return _margins(net, space, f, orig, target, feats)


def _classes(net: SageNetwork, orig, target) -> tuple[int, int]:
    orig = check_class(orig, "orig", net.num_classes)
    target = check_class(target, "target", net.num_classes)
    if orig == target:
        raise InputError(f"target must differ from orig ({orig})")
    return orig, target


def _margins(net: SageNetwork, space: AttackSpace, flip_sets: np.ndarray, orig: int, target: int, feats=None):
    feats = space.x_lb if feats is None else feats
    adj = space.flipped_adj(flip_sets).astype(np.float64)
    out = net.forward(feats, adj)
    if space.target_node is not None and out.ndim == 3:
        out = out[:, space.target_node]
    return out[:, orig] - out[:, target]


def brute_force_minimum(
    net: SageNetwork, space: AttackSpace, orig: int, target: int, chunk: int = 4096, max_sets: int = 10_000_000
) -> tuple[float, np.ndarray]:
    """The exact minimum of ``logit[orig] - logit[target]`` over every feasible flip set (fixed features).

    Exponential in the budget: small spaces only.

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace
    orig, target : int
        Classes.
    chunk : int, default 4096
        Flip sets per forward pass.
    max_sets : int, default 10_000_000
        Refuse spaces with more flip sets than this (counted without the local budgets).

    Returns
    -------
    minimum : float
    flips : bool array [S]
        A minimising flip set.
    """
    net = check_network(net)
    space = check_space(space, net)
    orig, target = _classes(net, orig, target)
    chunk = check_int(chunk, "chunk", min_val=1)
    max_sets = check_int(max_sets, "max_sets", min_val=1)
    if not space.fixed_features:
        raise InputError("space has a feature box; brute force enumerates flips with fixed features only")
    if space.count_flip_sets() > max_sets:
        raise InputError(
            f"space has up to {space.count_flip_sets()} flip sets, more than max_sets={max_sets}",
            "brute force is for small budgets; raise max_sets to try anyway",
        )
    best, best_flips = np.inf, np.zeros(space.num_slots, dtype=bool)
    batch: list[tuple[int, ...]] = []

    def flush() -> None:
        nonlocal best, best_flips
        f = np.zeros((len(batch), space.num_slots), dtype=bool)
        for i, combo in enumerate(batch):
            f[i, list(combo)] = True
        m = _margins(net, space, f, orig, target)
        i = int(np.argmin(m))
        if m[i] < best:
            best, best_flips = float(m[i]), f[i]
        batch.clear()

    for combo in space.flip_sets():
        batch.append(combo)
        if len(batch) >= chunk:
            flush()
    if batch:
        flush()
    return best, best_flips


__all__ = ["basic_bounds", "brute_force_minimum", "margins"]
