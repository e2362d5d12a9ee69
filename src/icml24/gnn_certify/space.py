"""What the adversary may change: edge flips under a global and local budgets, and feature boxes.

Paper §2 (problem statement) and the official instance files (``create_temporary_data_*.py``):

- **graph classification** (undirected): every unordered pair ``{u, v}``, ``u != v``, is a *slot*; a flip adds
  a missing edge or removes an existing one. Global budget: ``#flips <= Delta``; local budget: the flips
  touching ``v`` are at most ``Q_v``. The official instance script sets ``Delta = ceil(pct * |edge_index|)``
  (``|edge_index|`` counts both directions of every edge) and ``Q_v = max(0, deg(v) - maxdeg + s)`` with the
  local attack strength ``s``.
- **node classification** (directed): every existing arc ``u -> v`` is a slot and may only be deleted;
  ``Delta`` is an absolute count and every node gets the same local budget ``Q_v = s``, counting the deleted
  arcs that leave *or* enter ``v`` (``probdata_nodeclassify.c``, ``createLocalAttackBudgetCons``).

A *message* is one direction ``u -> v`` of a slot (an undirected slot has two): a SAGE layer at ``v`` sums
``a_uv * h_u`` over messages into ``v``. Features may vary in a box ``[x_lb, x_ub]`` (the paper's encoding
allows it; its experiments and the official MIP fix them, ``x_lb == x_ub``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from ..errors import InputError
from ..validation import check_bool, check_float, check_int, check_rng
from ._checks import BUDGET_MAX, as_array


@dataclass(frozen=True)
class AttackSpace:
    """The feasible perturbations of one graph (paper §2).

    Parameters
    ----------
    adj : bool [n, n]
        Clean messages: ``adj[u, v]`` is True when ``u -> v`` exists (symmetric when undirected).
    directed : bool
        False: graph classification (add/remove undirected edges); True: node classification (delete arcs).
    global_budget : int
        Delta, the most flips in total.
    local_budget : int [n]
        Q_v, the most flips touching node v.
    x_lb, x_ub : float [n, F]
        Feature box; equal when the features are fixed.
    target_node : int or None
        Node classification: the node whose prediction is verified.
    """

    adj: np.ndarray
    directed: bool
    global_budget: int
    local_budget: np.ndarray
    x_lb: np.ndarray
    x_ub: np.ndarray
    target_node: int | None = None
    slots: np.ndarray = field(init=False, repr=False)  # [S, 2]
    msg_src: np.ndarray = field(init=False, repr=False)  # [M]
    msg_dst: np.ndarray = field(init=False, repr=False)  # [M]
    msg_slot: np.ndarray = field(init=False, repr=False)  # [M]

    def __post_init__(self) -> None:
        adj = as_array(self.adj, "adj", ndim=2, dtype=None, allow_empty=False)
        if adj.dtype.kind not in "biuf" or not np.isin(adj, (0, 1)).all():
            raise InputError("adj must hold booleans (or 0/1)")
        adj = adj.astype(bool)
        n = adj.shape[0]
        if adj.shape != (n, n):
            raise InputError(f"adj must be square, got shape {adj.shape}")
        directed = check_bool(bool(self.directed) if isinstance(self.directed, np.bool_) else self.directed, "directed")
        object.__setattr__(self, "directed", directed)
        global_budget = check_int(self.global_budget, "global_budget", min_val=0, max_val=BUDGET_MAX)
        if self.target_node is not None:
            object.__setattr__(
                self, "target_node", check_int(self.target_node, "target_node", min_val=0, max_val=n - 1)
            )
        if self.target_node is not None and not directed:
            raise InputError("target_node is for node classification (directed=True)")
        q = as_array(self.local_budget, "local_budget", ndim=(0, 1), dtype="integer")
        if q.ndim == 1 and q.shape != (n,):
            raise InputError(f"local_budget must have one entry per node ({n}), got {q.shape[0]}")
        if (q < 0).any():
            raise InputError("local_budget must be >= 0")
        q = np.broadcast_to(q, (n,)).astype(np.int64)
        x_lb = as_array(self.x_lb, "x_lb", ndim=2)
        x_ub = as_array(self.x_ub, "x_ub", ndim=2)
        if x_lb.shape[0] != n:
            raise InputError(f"x_lb must be [n={n}, F], got {x_lb.shape}")
        if x_ub.shape != x_lb.shape:
            raise InputError(f"x_ub must have the shape of x_lb {x_lb.shape}, got {x_ub.shape}")
        if (x_lb > x_ub).any():
            raise InputError("x_lb <= x_ub must hold elementwise")
        if not directed and ((adj != adj.T).any() or adj.diagonal().any()):
            raise InputError("adj of an undirected graph must be symmetric without self-loops")
        if directed:
            slots = np.argwhere(adj)
            src, dst, sid = slots[:, 0], slots[:, 1], np.arange(len(slots))
        else:
            iu = np.triu_indices(n, 1)
            slots = np.stack(iu, axis=1)
            sid = np.arange(len(slots))
            src = np.concatenate([slots[:, 0], slots[:, 1]])
            dst = np.concatenate([slots[:, 1], slots[:, 0]])
            sid = np.concatenate([sid, sid])
        object.__setattr__(self, "adj", adj)
        object.__setattr__(self, "local_budget", q)
        object.__setattr__(self, "global_budget", global_budget)
        object.__setattr__(self, "x_lb", x_lb)
        object.__setattr__(self, "x_ub", x_ub)
        object.__setattr__(self, "slots", slots.astype(np.int64).reshape(-1, 2))
        object.__setattr__(self, "msg_src", np.asarray(src, dtype=np.int64))
        object.__setattr__(self, "msg_dst", np.asarray(dst, dtype=np.int64))
        object.__setattr__(self, "msg_slot", np.asarray(sid, dtype=np.int64))

    # ------------------------------------------------------------------------------------------ basics
    @property
    def n(self) -> int:
        return int(self.adj.shape[0])

    @property
    def num_slots(self) -> int:
        return int(self.slots.shape[0])

    @property
    def fixed_features(self) -> bool:
        return bool(np.array_equal(self.x_lb, self.x_ub))

    @property
    def slot_present(self) -> np.ndarray:
        """Whether each slot's edge/arc exists in the clean graph."""
        return self.adj[self.slots[:, 0], self.slots[:, 1]]

    @property
    def frozen(self) -> np.ndarray:
        """bool [S]: slots no feasible attack can flip (an endpoint has Q_v = 0, or Delta = 0)."""
        if self.global_budget == 0:
            return np.ones(self.num_slots, dtype=bool)
        q = self.local_budget
        return (q[self.slots[:, 0]] == 0) | (q[self.slots[:, 1]] == 0)

    @property
    def incidence(self) -> np.ndarray:
        """bool [n, S]: slot s touches node v (counts towards Q_v)."""
        inc = np.zeros((self.n, self.num_slots), dtype=bool)
        s = np.arange(self.num_slots)
        inc[self.slots[:, 0], s] = True
        inc[self.slots[:, 1], s] = True
        return inc

    def effective_local(self) -> np.ndarray:
        """min(Delta, Q_v): the most flips among the messages into v (the official bound's budget)."""
        return np.minimum(self.local_budget, self.global_budget)

    # ------------------------------------------------------------------------------------------ flips
    def _flips(self, flips: Any, name: str = "flips", ndim=1) -> np.ndarray:
        """``flips`` as a bool array of one entry per slot (booleans or 0/1)."""
        f = as_array(flips, name, ndim=ndim, dtype=None, allow_empty=True)
        if f.shape[-1:] != (self.num_slots,):
            raise InputError(f"{name} must have one entry per slot ({self.num_slots}), got shape {f.shape}")
        if f.dtype != bool and (f.dtype.kind not in "iuf" or not np.isin(f, (0, 1)).all()):
            raise InputError(f"{name} must hold booleans (or 0/1)")
        return f.astype(bool)

    def _k_max(self, max_size: Any) -> int:
        max_size = check_int(max_size, "max_size", min_val=0, allow_none=True)
        return self.global_budget if max_size is None else min(max_size, self.global_budget)

    def flipped_adj(self, flips: np.ndarray) -> np.ndarray:
        """The adjacency after flipping the slots where ``flips`` is True (bool [S] or [B, S])."""
        f = self._flips(flips, ndim=(1, 2))
        single = f.ndim == 1
        f = f[None] if single else f
        out = np.broadcast_to(self.adj, (f.shape[0], self.n, self.n)).copy()
        u, v = self.slots[:, 0], self.slots[:, 1]
        b, s = np.nonzero(f)
        out[b, u[s], v[s]] ^= True
        if not self.directed:
            out[b, v[s], u[s]] ^= True
        return out[0] if single else out

    def is_feasible(self, flips: np.ndarray) -> bool:
        """Whether flipping the slots where ``flips`` is True respects the budgets.

        At most ``Delta`` flips in total, at most ``Q_v`` touching each node ``v``, and, when directed, only
        existing arcs (deletions).

        Parameters
        ----------
        flips : bool [S]
            Which slots are flipped.

        Returns
        -------
        bool
        """
        f = self._flips(flips)
        if self.directed and (f & ~self.slot_present).any():
            return False
        return bool(f.sum() <= self.global_budget and (self.incidence.astype(np.int64) @ f <= self.local_budget).all())

    def flip_sets(self, max_size: int | None = None) -> Iterator[tuple[int, ...]]:
        """Every feasible flip set (tuples of slot indices), smallest first. Exponential: small spaces only."""
        return self._flip_sets(self._k_max(max_size))  # max_size is checked now, not at the first next()

    def _flip_sets(self, k_max: int) -> Iterator[tuple[int, ...]]:
        inc = self.incidence
        for k in range(k_max + 1):
            for combo in itertools.combinations(range(self.num_slots), k):
                if k == 0:
                    yield combo
                    continue
                counts = inc[:, list(combo)].sum(axis=1)
                if (counts <= self.local_budget).all():
                    yield combo

    def count_flip_sets(self, max_size: int | None = None) -> int:
        """An upper bound on the number of flip sets (ignores the local budgets)."""
        k_max = self._k_max(max_size)
        return sum(math.comb(self.num_slots, k) for k in range(k_max + 1))

    def sample_flips(
        self, rng: np.random.Generator, fixed_on: np.ndarray | None = None, fixed_off: np.ndarray | None = None
    ) -> np.ndarray | None:
        """A random feasible flip set (bool [S]), optionally respecting slot fixings.

        ``fixed_on``/``fixed_off`` are bool [S]: the slot's edge must be present / absent after the attack
        (branching decisions on the adjacency variables). Returns None when the fixings are infeasible.
        ``rng`` is a ``numpy.random.Generator`` or a seed.
        """
        rng = check_rng(rng, "rng")
        fixed_on = None if fixed_on is None else self._flips(fixed_on, "fixed_on")
        fixed_off = None if fixed_off is None else self._flips(fixed_off, "fixed_off")
        present = self.slot_present
        flips = np.zeros(self.num_slots, dtype=bool)
        free = np.ones(self.num_slots, dtype=bool)
        if fixed_on is not None:
            flips |= fixed_on & ~present
            free &= ~fixed_on
        if fixed_off is not None:
            flips |= fixed_off & present
            free &= ~fixed_off
        if self.directed:
            free &= present
        inc = self.incidence
        counts = inc.astype(np.int64) @ flips
        if flips.sum() > self.global_budget or (counts > self.local_budget).any():
            return None
        room = self.global_budget - int(flips.sum())
        want = int(rng.integers(0, room + 1)) if room > 0 else 0
        for s in rng.permutation(np.flatnonzero(free)):
            if want == 0:
                break
            touch = inc[:, s]
            if (counts[touch] + 1 <= self.local_budget[touch]).all():
                flips[s] = True
                counts[touch] += 1
                want -= 1
        return flips

    def sample_features(self, rng: np.random.Generator) -> np.ndarray:
        """Features drawn uniformly from the box (a box corner half of the time); ``rng``: a Generator or a seed."""
        rng = check_rng(rng, "rng")
        u = rng.random(self.x_lb.shape)
        if rng.random() < 0.5:
            u = np.round(u)
        return self.x_lb + u * (self.x_ub - self.x_lb)


# --------------------------------------------------------------------------------------------- budgets
def official_graph_budgets(
    edge_entries: int, degrees: Sequence[int], budget_fraction: float, strength: int
) -> tuple[int, np.ndarray]:
    """The budgets of the official graph-classification instances (``create_temporary_data_graphclassification.py``).

    Parameters
    ----------
    edge_entries : int
        ``|edge_index|``: both directions of every edge.
    degrees : sequence of int
        Node degrees.
    budget_fraction : float
        ``pct`` in [0, 1].
    strength : int
        Local attack strength ``s`` >= 0.

    Returns
    -------
    global_budget : int
        ``Delta = ceil(|edge_index| * pct)``.
    local_budget : int array [n]
        ``Q_v = max(0, deg(v) - maxdeg + s)``.
    """
    edge_entries = check_int(edge_entries, "edge_entries", min_val=0)
    budget_fraction = check_float(budget_fraction, "budget_fraction", min_val=0.0, max_val=1.0)
    strength = check_int(strength, "strength", min_val=0, max_val=BUDGET_MAX)
    deg = as_array(degrees, "degrees", ndim=1, dtype="integer", allow_empty=True).astype(np.int64)
    if (deg < 0).any():
        raise InputError("degrees must be >= 0")
    if deg.sum() > edge_entries:
        raise InputError(f"degrees sum to {int(deg.sum())}, more than edge_entries={edge_entries}")
    global_budget = math.ceil(edge_entries * budget_fraction)
    max_deg = int(deg.max()) if deg.size else 0
    local = np.maximum(0, deg - max_deg + int(strength))
    return int(global_budget), local


def check_space(space: Any, net=None, name: str = "space"):
    """Refuse anything but an :class:`~icml24.gnn_certify.space.AttackSpace` (matching ``net``'s features).

    Parameters
    ----------
    space : object
    net : SageNetwork, optional
    name : str

    Returns
    -------
    AttackSpace
    """
    if not isinstance(space, AttackSpace):
        raise InputError(f"{name} must be an AttackSpace, got {type(space).__name__}", "build it with build_space")
    if net is not None and space.x_lb.shape[1] != net.in_features:
        raise InputError(
            f"{name} has {space.x_lb.shape[1]} features but the network takes {net.in_features}",
            "build the space from this network's data",
        )
    if net is not None and (net.task == "node") != (space.target_node is not None):
        kind = "a node classification" if space.target_node is not None else "a graph classification"
        raise InputError(
            f"{name} is {kind} space but net is a {net.task} network", "build it with build_space(net, ...)"
        )
    return space


__all__ = ["AttackSpace", "official_graph_budgets"]
