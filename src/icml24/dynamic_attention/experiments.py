"""Workloads and measurements shared by the claims (paper.py) and the benchmark.

Everything here drives the public API (:class:`DynamicAttention` and the baselines) on seeded random
inputs; times are ``time.perf_counter`` around single calls, work comes from the maintainers' counters.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from ..threads import single_thread
from ._common import AttentionMaintainer, _attention
from .baselines import DenseLazyAttention, EagerAttention, FullRecompute, NaiveAttention
from .structure import DynamicAttention, rebuild_period

# omega(1,1,tau) is not known in closed form. We report the standard upper bound obtained by interpolating
# between omega(1,1,alpha) = 2 and omega(1,1,1) = omega (Huang & Pan 1998; the bound is convex in tau), with
# omega < 2.371552 and alpha > 0.321334 (Vassilevska Williams, Xu, Xu, Zhou, SODA 2024). Only for reporting.
OMEGA = 2.371552
ALPHA = 0.321334


def omega(tau: float) -> float:
    """An upper bound on omega(1,1,tau), the exponent of multiplying n x n by n x n^tau matrices:
    2 for tau <= alpha, then linear up to omega at tau = 1."""
    if tau <= ALPHA:
        return 2.0
    return 2.0 + (OMEGA - 2.0) * (tau - ALPHA) / (1.0 - ALPHA)


def paper_exponents(tau: float) -> dict[str, float]:
    """The paper's bounds for d = n: amortised update n^{omega(1,1,tau) - tau}, worst-case query n^{1+tau}."""
    return {"update": omega(tau) - tau, "query": 1.0 + tau}


def classical_exponents(tau: float) -> dict[str, float]:
    """The same bounds with classical (cubic) matrix multiplication, omega(1,1,tau) = 2 + tau, for d = n:
    amortised update n^2 (one m x k x d product per k updates), worst-case query n^{1+tau} (k d work)."""
    return {"update": 2.0, "query": 1.0 + tau}


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log(y) against log(x)."""
    x, y = np.log(np.asarray(xs, dtype=float)), np.log(np.maximum(np.asarray(ys, dtype=float), 1e-300))
    return float(np.polyfit(x, y, 1)[0])


def random_qkv(n: int, d: int, seed: int, dtype=torch.float64, dv: int | None = None, scale: float | None = None):
    """Gaussian Q, K, V scaled so that logits Q K^T are O(1) (entries N(0, 1/d))."""
    g = torch.Generator().manual_seed(seed)
    s = scale if scale is not None else 1.0 / math.sqrt(d)
    return (torch.randn(n, d, generator=g, dtype=dtype) * s, torch.randn(n, d, generator=g, dtype=dtype) * s,
            torch.randn(n, dv or d, generator=g, dtype=dtype))


# --------------------------------------------------------------------------------------------- exactness
@dataclass
class ExactnessResult:
    max_err: dict[str, float]
    queries: int
    rebuilds: int
    boundary_queries: int
    max_pending_over_k: float


def exactness_sweep(configs: Sequence[tuple[int, int, float, int | None]], ops: int, seed: int,
                    mix: tuple[float, float, float] = (0.4, 0.4, 0.2), delta_std: float = 0.1,
                    dtype=torch.float64) -> ExactnessResult:
    """Random mixed sequences of UpdateK / UpdateV / Query on every maintainer; every answer is compared
    with softmax attention recomputed from the current K and V (the naive ground truth).

    Each config is ``(n, d, tau, k)`` (``k=None``: ceil(n^tau)). A fifth of the updates repeat the previous
    entry, and after every rebuild the next query is issued at once (queries straddle rebuild boundaries).
    """
    rng = np.random.default_rng(seed)
    errs = {"lazy": 0.0, "eager": 0.0, "dense_lazy": 0.0, "naive": 0.0}
    queries = rebuilds = boundary = 0
    worst_fill = 0.0
    for ci, (n, d, tau, k) in enumerate(configs):
        Q, K, V = random_qkv(n, d, seed * 1000 + ci, dtype=dtype, scale=1.0)
        ms: dict[str, AttentionMaintainer] = {
            "lazy": DynamicAttention(Q, K, V, tau, k=k), "eager": EagerAttention(Q, K, V),
            "dense_lazy": DenseLazyAttention(Q, K, V, tau, k=k), "naive": NaiveAttention(Q, K, V)}
        lazy = ms["lazy"]
        last = None
        for _ in range(ops):
            r = rng.random()
            before = lazy.counters.rebuilds
            if r < mix[0] + mix[1]:
                which = "k" if r < mix[0] else "v"
                if last is not None and last[0] == which and rng.random() < 0.2:
                    i, j = last[1], last[2]  # the same entry again
                else:
                    i, j = int(rng.integers(n)), int(rng.integers(d))
                delta = float(rng.normal(0.0, delta_std))
                for m in ms.values():
                    (m.update_k if which == "k" else m.update_v)(i, j, delta)
                last = (which, i, j)
                if lazy.counters.rebuilds == before:
                    continue
                boundary += 1  # a rebuild just happened: query right away
            i, j = int(rng.integers(n)), int(rng.integers(d))
            truth = float(_attention(lazy.Q, lazy.K, lazy.V)[i, j])
            for name, m in ms.items():
                errs[name] = max(errs[name], abs(m.query(i, j) - truth))
            queries += 1
        row = _attention(lazy.Q, lazy.K, lazy.V)
        for name, m in ms.items():
            errs[name] = max(errs[name], float((m.to_dense() - row).abs().max()))
        rebuilds += lazy.counters.rebuilds
        worst_fill = max(worst_fill, lazy.counters.max_pending / lazy.k)
    return ExactnessResult(errs, queries, rebuilds, boundary, worst_fill)


# ------------------------------------------------------------------------------------------------- cost
@dataclass
class CostPoint:
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


def measure_lazy(n: int, d: int, tau: float, seed: int, rounds: int = 2, queries: int = 15,
                 repeats: int = 1) -> CostPoint:
    """Amortised update and worst-case query cost of :class:`DynamicAttention` at one size.

    Each round issues ``k - 1`` updates (alternating K and V, random entries), then ``queries`` queries
    (the worst case: ``k - 1`` pending), then the ``k``-th update, which triggers the rebuild. With
    ``repeats > 1`` the whole measurement is repeated and the minima are kept (the usual estimator under
    contention, which only ever adds time).
    """
    pts = []
    for rep in range(repeats):
        Q, K, V = random_qkv(n, d, seed + 7919 * rep)
        t0 = time.perf_counter()
        s = DynamicAttention(Q, K, V, tau)
        t_init = time.perf_counter() - t0
        rng = np.random.default_rng(seed + rep)
        t_up, n_up, q_times = 0.0, 0, []
        for _ in range(rounds):
            for u in range(s.k):
                i, j = int(rng.integers(n)), int(rng.integers(d))
                t = time.perf_counter()
                if u % 2:
                    s.update_k(i, j, 0.01)
                else:
                    s.update_v(i, j, 0.01)
                t_up += time.perf_counter() - t
                n_up += 1
                if u == s.k - 2 or s.k == 1:
                    for _ in range(queries):
                        a, b = int(rng.integers(n)), int(rng.integers(d))
                        t = time.perf_counter()
                        s.query(a, b)
                        q_times.append(time.perf_counter() - t)
        c = s.counters
        pts.append(CostPoint(n, d, tau, s.k, t_up / n_up, float(np.median(q_times)),
                             (c.update_work + c.rebuild_work) / c.updates, float(c.max_query_work), t_init,
                             c.rebuilds))
    # times: the minimum over repeats (contention only ever adds time); work: identical across repeats
    pick = lambda f: float(np.min([getattr(p, f) for p in pts]))  # noqa: E731
    p0 = pts[0]
    return CostPoint(n, d, tau, p0.k, pick("update_time"), pick("query_time"), pick("update_work"),
                     pick("query_work"), pick("init_time"), p0.rebuilds)


def measure_peer(kind: str, n: int, d: int, seed: int, updates: int = 20, queries: int = 15) -> tuple[float, float]:
    """(seconds per update, median seconds per query) of a baseline: "naive", "eager" or "full"."""
    cls: Callable = {"naive": NaiveAttention, "eager": EagerAttention, "full": FullRecompute}[kind]
    Q, K, V = random_qkv(n, d, seed)
    m = cls(Q, K, V)
    rng = np.random.default_rng(seed)
    t_up = 0.0
    for u in range(updates):
        i, j = int(rng.integers(n)), int(rng.integers(d))
        t = time.perf_counter()
        (m.update_k if u % 2 else m.update_v)(i, j, 0.01)
        t_up += time.perf_counter() - t
    qt = []
    for _ in range(queries):
        a, b = int(rng.integers(n)), int(rng.integers(d))
        t = time.perf_counter()
        m.query(a, b)
        qt.append(time.perf_counter() - t)
    return t_up / updates, float(np.median(qt))


# -------------------------------------------------------------------------------------------- workloads
def mixed_workload(n: int, d: int, ops: int, query_fraction: float, seed: int) -> list[tuple[str, int, int, float]]:
    """A seeded sequence of ("k" | "v" | "q", i, j, delta) with the given share of queries."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(ops):
        r = rng.random()
        i, j = int(rng.integers(n)), int(rng.integers(d))
        if r < query_fraction:
            out.append(("q", i, j, 0.0))
        else:
            out.append(("k" if rng.random() < 0.5 else "v", i, j, float(rng.normal(0, 0.01))))
    return out


def run_workload(m: AttentionMaintainer, ops: Sequence[tuple[str, int, int, float]]) -> tuple[float, list[float]]:
    """Seconds to run ``ops`` on ``m`` (construction excluded) and the answers of its queries."""
    answers = []
    t0 = time.perf_counter()
    for op, i, j, delta in ops:
        if op == "q":
            answers.append(m.query(i, j))
        elif op == "k":
            m.update_k(i, j, delta)
        else:
            m.update_v(i, j, delta)
    return time.perf_counter() - t0, answers


__all__ = ["omega", "paper_exponents", "classical_exponents", "loglog_slope", "random_qkv", "exactness_sweep",
           "measure_lazy", "measure_peer", "mixed_workload", "run_workload", "CostPoint", "ExactnessResult",
           "rebuild_period", "single_thread"]

