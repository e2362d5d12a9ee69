"""Timed costs: the lazy structure's amortised update time and worst-case query time at one size, and its peers'
(the measurements of the cost claim and the benchmark); work comes from the maintainers' counters."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from .baselines import EagerAttention, FullRecompute, NaiveAttention
from .maintainer import AttentionMaintainer
from .structure import DynamicAttention
from .workloads import clock, random_qkv

__all__ = ["CostPoint", "measure_lazy", "measure_peer", "timed_updates", "update_costs", "query_cost"]


@dataclass
class CostPoint:
    """The cost of one maintainer at one size (see :func:`measure_lazy`).

    Parameters
    ----------
    n, d : int
    tau : float
    k : int
        Rebuild period.
    update_time : float
        Seconds per update, amortised (rebuilds included).
    query_time : float
        Median seconds per query with ``k - 1`` pending updates (the worst case).
    update_work : float
        Multiply-adds per update, amortised.
    query_work : float
        Multiply-adds of the worst query.
    init_time : float
    rebuilds : int
    """

    n: int
    d: int
    tau: float
    k: int
    update_time: float  # seconds per update, amortised (rebuilds included)
    query_time: float  # median seconds per query with k - 1 pending updates (the worst case)
    update_work: float  # multiply-adds per update, amortised
    query_work: float  # multiply-adds of the worst query
    init_time: float
    rebuilds: int


def measure_lazy(
    n: int, d: int, tau: float, seed: int, rounds: int = 2, queries: int = 15, repeats: int = 1
) -> CostPoint:
    """Amortised update and worst-case query cost of :class:`DynamicAttention` at one size.

    Each round issues ``k - 1`` updates (alternating K and V, random entries), then ``queries`` queries
    (the worst case: ``k - 1`` pending), then the ``k``-th update, which triggers the rebuild. With
    ``repeats > 1`` the whole measurement is repeated and the minima are kept (the usual estimator under
    contention, which only ever adds time).

    Parameters
    ----------
    n, d : int
    tau : float
    seed : int
    rounds : int, default 2
        Rebuild periods measured.
    queries : int, default 15
        Queries per round.
    repeats : int, default 1

    Returns
    -------
    CostPoint
    """
    pts = []
    for rep in range(repeats):
        Q, K, V = random_qkv(n, d, seed + 7919 * rep)
        t0 = clock()
        s = DynamicAttention(Q, K, V, tau)
        t_init = clock() - t0
        rng = np.random.default_rng(seed + rep)
        t_up, n_up, q_times = 0.0, 0, []
        for _ in range(rounds):
            for u in range(s.k):
                i, j = int(rng.integers(n)), int(rng.integers(d))
                t = clock()
                if u % 2:
                    s.update_k(i, j, 0.01)
                else:
                    s.update_v(i, j, 0.01)
                t_up += clock() - t
                n_up += 1
                if u == s.k - 2 or s.k == 1:
                    for _ in range(queries):
                        a, b = int(rng.integers(n)), int(rng.integers(d))
                        t = clock()
                        s.query(a, b)
                        q_times.append(clock() - t)
        c = s.counters
        pts.append(
            CostPoint(
                n,
                d,
                tau,
                s.k,
                t_up / n_up,
                float(np.median(q_times)),
                (c.update_work + c.rebuild_work) / c.updates,
                float(c.max_query_work),
                t_init,
                c.rebuilds,
            )
        )
    # times: the minimum over repeats (contention only ever adds time); work: identical across repeats
    pick = lambda f: float(np.min([getattr(p, f) for p in pts]))  # noqa: E731
    p0 = pts[0]
    return CostPoint(
        n,
        d,
        tau,
        p0.k,
        pick("update_time"),
        pick("query_time"),
        pick("update_work"),
        pick("query_work"),
        pick("init_time"),
        p0.rebuilds,
    )


def measure_peer(kind: str, n: int, d: int, seed: int, updates: int = 20, queries: int = 15) -> tuple[float, float]:
    """The cost of a baseline at one size.

    Parameters
    ----------
    kind : {"naive", "eager", "full"}
    n, d : int
    seed : int
    updates, queries : int

    Returns
    -------
    (float, float)
        Seconds per update and median seconds per query.
    """
    cls: Callable = {"naive": NaiveAttention, "eager": EagerAttention, "full": FullRecompute}[kind]
    Q, K, V = random_qkv(n, d, seed)
    m = cls(Q, K, V)
    rng = np.random.default_rng(seed)
    t_up = 0.0
    for u in range(updates):
        i, j = int(rng.integers(n)), int(rng.integers(d))
        t = clock()
        (m.update_k if u % 2 else m.update_v)(i, j, 0.01)
        t_up += clock() - t
    qt = []
    for _ in range(queries):
        a, b = int(rng.integers(n)), int(rng.integers(d))
        t = clock()
        m.query(a, b)
        qt.append(clock() - t)
    return t_up / updates, float(np.median(qt))


def timed_updates(m: AttentionMaintainer, idx: Sequence[tuple[int, int]]) -> np.ndarray:
    """Seconds of each of the updates ``idx`` (alternating V and K updates of ``+0.01`` at entry ``(i, j)``).

    Parameters
    ----------
    m : AttentionMaintainer
    idx : sequence of (int, int)

    Returns
    -------
    numpy.ndarray
        One time per update.
    """
    out = np.empty(len(idx))
    for u, (i, j) in enumerate(idx):
        t = clock()
        if u % 2:
            m.update_k(i, j, 0.01)
        else:
            m.update_v(i, j, 0.01)
        out[u] = clock() - t
    return out


def update_costs(
    ns: Sequence[int], d: int, tau: float, seed: int, repeats: int = 7
) -> list[tuple[float, float, int, float]]:
    """Amortised update time and work of :class:`DynamicAttention` with ``m = n`` queries at each size in ``ns``,
    interleaved with eager maintenance's on the same updates; minima over repeats.

    At each size one rebuild period (``k`` updates, the rebuild included) is drawn once; each repeat runs it on
    the lazy structure and at once on eager maintenance (lazy, eager, lazy, eager, ...), timing every update on
    its own. Each update's time is its minimum over the repeats, and the amortised time is their mean: single
    updates are short beside a scheduler's time slice, so the minima are runs that no other process interrupted
    or evicted from the caches (a loaded machine only ever adds time).

    Parameters
    ----------
    ns : sequence of int
        Sizes (rows of ``Q``, ``K`` and ``V``).
    d : int
    tau : float
    seed : int
    repeats : int, default 7

    Returns
    -------
    list of (float, float, int, float)
        For each size: seconds per update (amortised, minima), multiply-adds per update (counters), ``k``, and
        the lazy structure's time over eager maintenance's on the same updates.
    """
    out = []
    for n in ns:
        Q, K, V = random_qkv(n, d, seed)
        s, e = DynamicAttention(Q, K, V, tau), EagerAttention(Q, K, V)
        rng = np.random.default_rng(seed)
        idx = [(int(rng.integers(n)), int(rng.integers(d))) for _ in range(s.k)]
        tl, te = np.full(s.k, np.inf), np.full(s.k, np.inf)
        for _ in range(repeats):
            tl = np.minimum(tl, timed_updates(s, idx))
            te = np.minimum(te, timed_updates(e, idx))
        out.append((float(tl.mean()), s.counters.amortized_update_work, s.k, float(tl.sum() / te.sum())))
    return out


def query_cost(
    n: int, d: int, tau: float, seed: int, m: int = 64, queries: int = 41, repeats: int = 5
) -> tuple[float, float, float, int]:
    """Worst-case query time of :class:`DynamicAttention` (``k - 1`` pending updates), corrected for the
    per-call overhead by subtracting the time of the same queries with nothing pending.

    Two structures are built on the same inputs, one left without pending updates and one given ``k - 1``;
    each query is then asked of both in turn, ``repeats`` times (empty, full, empty, full, ...), and each
    query's time is its minimum over repeats; the medians over queries are compared. Queries cost ``O(k d)``
    whatever ``m`` is, so a few query rows (``m``) keep the construction cheap.

    Parameters
    ----------
    n, d : int
    tau : float
    seed : int
    m : int, default 64
        Query rows.
    queries : int, default 41
        Distinct queries timed (medians over them).
    repeats : int, default 5
        Times each query is asked of each structure (minima over them).

    Returns
    -------
    (float, float, float, int)
        Corrected seconds per query, the raw worst-case seconds, the work of the worst query, and ``k``.
    """
    g = torch.Generator().manual_seed(seed)
    s_ = 1.0 / math.sqrt(d)
    Q = torch.randn(m, d, generator=g, dtype=torch.float64) * s_
    K = torch.randn(n, d, generator=g, dtype=torch.float64) * s_
    V = torch.randn(n, d, generator=g, dtype=torch.float64)
    empty, full = DynamicAttention(Q, K, V, tau), DynamicAttention(Q, K, V, tau)
    del Q, K, V
    rng = np.random.default_rng(seed)
    asks = [(int(rng.integers(m)), int(rng.integers(d))) for _ in range(queries)]
    for u in range(full.k - 1):
        i, j = int(rng.integers(n)), int(rng.integers(d))
        (full.update_k if u % 2 else full.update_v)(i, j, 0.01)
    t_empty = [math.inf] * queries
    t_full = [math.inf] * queries
    for _ in range(repeats):
        for q, a in enumerate(asks):
            t = clock()
            empty.query(*a)
            t_empty[q] = min(t_empty[q], clock() - t)
            t = clock()
            full.query(*a)
            t_full[q] = min(t_full[q], clock() - t)
    e, f = float(np.median(t_empty)), float(np.median(t_full))
    return max(f - e, 1e-9), f, float(full.counters.max_query_work), full.k
