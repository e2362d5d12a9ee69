"""The experiments behind the claims of dynamic attention maintenance (``paper.py``), and the workloads and
measurements they share with the benchmark.

Everything here drives the public API (:class:`DynamicAttention` and the baselines) on seeded random
inputs; times are the calling thread's CPU time (``time.thread_time``; every measurement runs on one thread)
around single calls, so that a shared machine's preemptions are not counted as the method's cost; work comes
from the maintainers' counters.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from ..claims import Scale
from ..runs import save_figure
from ..threads import single_thread
from .baselines import DenseLazyAttention, EagerAttention, FullRecompute, NaiveAttention
from .maintainer import AttentionMaintainer, blocked_attention
from .paper import TAUS
from .structure import DynamicAttention, rebuild_period


def clock() -> float:
    """The calling thread's CPU time in seconds (``time.thread_time``): the clock of every measurement here.

    Returns
    -------
    float
    """
    return time.thread_time()


# omega(1,1,tau) is not known in closed form. We report the standard upper bound obtained by interpolating
# between omega(1,1,alpha) = 2 and omega(1,1,1) = omega (Huang & Pan 1998; the bound is convex in tau), with
# omega < 2.371552 and alpha > 0.321334 (Vassilevska Williams, Xu, Xu, Zhou, SODA 2024). Only for reporting.
OMEGA = 2.371552
ALPHA = 0.321334


def omega(tau: float) -> float:
    """An upper bound on omega(1,1,tau), the exponent of multiplying n x n by n x n^tau matrices.

    Parameters
    ----------
    tau : float
        In ``[0, 1]``.

    Returns
    -------
    float
        2 for ``tau <= alpha``, then linear up to omega at ``tau = 1``.

    References
    ----------
    Huang and Pan 1998 (convexity); Vassilevska Williams, Xu, Xu, Zhou, SODA 2024 (omega, alpha).
    """
    if tau <= ALPHA:
        return 2.0
    return 2.0 + (OMEGA - 2.0) * (tau - ALPHA) / (1.0 - ALPHA)


def paper_exponents(tau: float) -> dict[str, float]:
    """The paper's bounds for ``d = n`` (Theorem 1.3): amortised update ``n^{omega(1,1,tau) - tau}``, worst-case
    query ``n^{1+tau}``.

    Parameters
    ----------
    tau : float

    Returns
    -------
    dict
        ``{"update": exponent, "query": exponent}``.
    """
    return {"update": omega(tau) - tau, "query": 1.0 + tau}


def classical_exponents(tau: float) -> dict[str, float]:
    """The paper's bounds with classical (cubic) matrix multiplication, ``omega(1,1,tau) = 2 + tau``, for ``d = n``.

    Parameters
    ----------
    tau : float

    Returns
    -------
    dict
        ``{"update": 2.0, "query": 1 + tau}``: one ``m x k x d`` product per ``k`` updates, ``k d`` work per query.
    """
    return {"update": 2.0, "query": 1.0 + tau}


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ``log(y)`` against ``log(x)``.

    Parameters
    ----------
    xs, ys : sequence of float

    Returns
    -------
    float
    """
    x, y = np.log(np.asarray(xs, dtype=float)), np.log(np.maximum(np.asarray(ys, dtype=float), 1e-300))
    return float(np.polyfit(x, y, 1)[0])


def random_qkv(n: int, d: int, seed: int, dtype=torch.float64, dv: int | None = None, scale: float | None = None):
    """Gaussian ``Q``, ``K``, ``V``, with ``Q`` and ``K`` scaled so that the logits ``Q K^T`` are O(1).

    Parameters
    ----------
    n, d : int
        Rows and width (``Q`` and ``K`` are ``n x d``).
    seed : int
    dtype : torch.dtype, default torch.float64
    dv : int, optional
        Width of ``V`` (default ``d``).
    scale : float, optional
        Standard deviation of ``Q`` and ``K``'s entries (default ``1 / sqrt(d)``).

    Returns
    -------
    (Q, K, V) : tuple of torch.Tensor
    """
    g = torch.Generator().manual_seed(seed)
    s = scale if scale is not None else 1.0 / math.sqrt(d)
    return (
        torch.randn(n, d, generator=g, dtype=dtype) * s,
        torch.randn(n, d, generator=g, dtype=dtype) * s,
        torch.randn(n, dv or d, generator=g, dtype=dtype),
    )


# --------------------------------------------------------------------------------------------- exactness
@dataclass
class ExactnessResult:
    """What :func:`exactness_sweep` found.

    Parameters
    ----------
    max_err : dict of str to float
        The largest absolute error of each maintainer (``lazy``, ``eager``, ``dense_lazy``, ``naive``).
    queries, rebuilds, boundary_queries : int
        Queries asked, rebuilds of the lazy structure, queries asked right after a rebuild.
    max_pending_over_k : float
        The most pending updates seen, over ``k``.
    repairs : int
        Rows the lazy structures' precision guard recomputed.
    """

    max_err: dict[str, float]
    queries: int
    rebuilds: int
    boundary_queries: int
    max_pending_over_k: float
    repairs: int = 0


def exactness_sweep(
    configs: Sequence[tuple[int, int, float, int | None]],
    ops: int,
    seed: int,
    mix: tuple[float, float, float] = (0.4, 0.4, 0.2),
    delta_std: float = 0.1,
    dtype=torch.float64,
) -> ExactnessResult:
    """Random mixed sequences of UpdateK / UpdateV / Query on every maintainer; every answer is compared
    with softmax attention recomputed from the current K and V (the naive ground truth).

    A fifth of the updates repeat the previous entry, and after every rebuild the next query is issued at once
    (queries straddle rebuild boundaries).

    Parameters
    ----------
    configs : sequence of (n, d, tau, k)
        ``k=None``: ``ceil(n^tau)``.
    ops : int
        Operations per configuration.
    seed : int
    mix : (float, float, float), default (0.4, 0.4, 0.2)
        Shares of K updates, V updates and queries.
    delta_std : float, default 0.1
        Standard deviation of the increments.
    dtype : torch.dtype, default torch.float64

    Returns
    -------
    ExactnessResult
    """
    rng = np.random.default_rng(seed)
    errs = {"lazy": 0.0, "eager": 0.0, "dense_lazy": 0.0, "naive": 0.0}
    queries = rebuilds = boundary = repairs = 0
    worst_fill = 0.0
    for ci, (n, d, tau, k) in enumerate(configs):
        Q, K, V = random_qkv(n, d, seed * 1000 + ci, dtype=dtype, scale=1.0)
        ms: dict[str, AttentionMaintainer] = {
            "lazy": DynamicAttention(Q, K, V, tau, k=k),
            "eager": EagerAttention(Q, K, V),
            "dense_lazy": DenseLazyAttention(Q, K, V, tau, k=k),
            "naive": NaiveAttention(Q, K, V),
        }
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
            truth = float(blocked_attention(lazy.Q, lazy.K, lazy.V)[i, j])
            for name, m in ms.items():
                errs[name] = max(errs[name], abs(m.query(i, j) - truth))
            queries += 1
        row = blocked_attention(lazy.Q, lazy.K, lazy.V)
        for name, m in ms.items():
            errs[name] = max(errs[name], float((m.to_dense() - row).abs().max()))
        rebuilds += lazy.counters.rebuilds
        repairs += lazy.counters.repairs
        worst_fill = max(worst_fill, lazy.counters.max_pending / lazy.k)
    return ExactnessResult(errs, queries, rebuilds, boundary, worst_fill, repairs)


def adversarial_sweep(
    n: int, d: int, ops: int, seed: int, k: int | None = None, dtype=torch.float64
) -> dict[str, float]:
    """Dominant keys inserted and removed, logits up to about +-700, values near zero: the lazy structure's and
    eager maintenance's answers against attention recomputed from scratch.

    Each step either makes one key dominate one query row (a logit of 30 to 700 above the rest), removes the
    last dominant key again, edits a value down to ``1e-12`` of itself, makes a small update, or queries;
    the error of an answer is measured relative to ``softmax(Q_i K^T) |V[:, j]|``, the scale of its own
    conditioning.

    Parameters
    ----------
    n, d : int
        Rows and width of ``Q``, ``K``, ``V``.
    ops : int
        Steps.
    seed : int
    k : int, optional
        Rebuild period (default ``ceil(n^0.5)``).
    dtype : torch.dtype, default torch.float64

    Returns
    -------
    dict of str to float
        ``lazy_max_rel_err``, ``eager_max_rel_err``, ``queries``, ``dominant_edits``, and the lazy
        structure's ``repairs``, ``fallbacks`` and ``rebuilds``.
    """
    rng = np.random.default_rng(seed)
    Q, K, V = random_qkv(n, d, seed, dtype=dtype, scale=1.0)
    lazy, eager = DynamicAttention(Q, K, V, 0.5, k=k), EagerAttention(Q, K, V)
    err = {"lazy": 0.0, "eager": 0.0}
    queries = dominant = 0
    last = None
    for _ in range(ops):
        r = rng.random()
        if r < 0.15:  # make key c dominate row i: K[c] += t Q[i] / |Q[i]|^2 raises logit (i, c) by t
            i, c = int(rng.integers(n)), int(rng.integers(n))
            t = float(rng.choice([30.0, 60.0, 200.0, 700.0]))
            q = lazy.Q[i]
            step = (q / float(q @ q) * t).tolist()
            for j in range(d):
                lazy.update_k(c, j, step[j])
                eager.update_k(c, j, step[j])
            last, dominant = (c, step), dominant + 1
        elif r < 0.3 and last is not None:  # remove it again
            c, step = last
            for j in range(d):
                lazy.update_k(c, j, -step[j])
                eager.update_k(c, j, -step[j])
            last = None
        elif r < 0.4:
            i, j = int(rng.integers(n)), int(rng.integers(d))
            delta = -float(lazy.V[i, j]) * (1 - 1e-12)
            lazy.update_v(i, j, delta)
            eager.update_v(i, j, delta)
        elif r < 0.7:
            i, j, delta = int(rng.integers(n)), int(rng.integers(d)), float(rng.normal(0, 0.3))
            (lazy.update_k if r < 0.55 else lazy.update_v)(i, j, delta)
            (eager.update_k if r < 0.55 else eager.update_v)(i, j, delta)
        else:
            i = int(rng.integers(n))
            logits = lazy.K.double() @ lazy.Q[i].double()
            p = torch.softmax(logits, dim=0)
            truth, scale = p @ lazy.V.double(), p @ lazy.V.double().abs()
            for name, m in (("lazy", lazy), ("eager", eager)):
                got = torch.tensor([m.query(i, j) for j in range(d)], dtype=torch.float64)
                rel = float(((got - truth).abs() / scale.clamp(min=1e-300)).nan_to_num(1.0).max())
                err[name] = max(err[name], min(rel, 1.0))  # 1: all accuracy lost (capped)
            queries += 1
    c = lazy.counters
    return {
        "lazy_max_rel_err": err["lazy"],
        "eager_max_rel_err": err["eager"],
        "queries": float(queries),
        "dominant_edits": float(dominant),
        "repairs": float(c.repairs),
        "fallbacks": float(c.fallbacks),
        "rebuilds": float(c.rebuilds),
    }


# ------------------------------------------------------------------------------------------------- cost
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


# -------------------------------------------------------------------------------------------- workloads
def mixed_workload(n: int, d: int, ops: int, query_fraction: float, seed: int) -> list[tuple[str, int, int, float]]:
    """A seeded sequence of operations with the given share of queries.

    Parameters
    ----------
    n, d : int
    ops : int
    query_fraction : float
    seed : int

    Returns
    -------
    list of (str, int, int, float)
        ``("k" | "v" | "q", i, j, delta)``.
    """
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
    """Run a workload on a maintainer.

    Parameters
    ----------
    m : AttentionMaintainer
    ops : sequence of (str, int, int, float)
        As :func:`mixed_workload` returns.

    Returns
    -------
    (float, list of float)
        Seconds (construction excluded) and the answers of the queries.
    """
    answers = []
    t0 = clock()
    for op, i, j, delta in ops:
        if op == "q":
            answers.append(m.query(i, j))
        elif op == "k":
            m.update_k(i, j, delta)
        else:
            m.update_v(i, j, delta)
    return clock() - t0, answers


# ------------------------------------------------------------------------------------------------- claims


def run_exact(scale: Scale, seed: int) -> dict[str, float]:
    """Every answer of every maintainer against attention recomputed from scratch, over many configurations.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        The largest absolute error of each maintainer (float64, and the lazy structure's in float32), the
        numbers of queries, rebuilds and queries right after a rebuild, the fullest pending buffer over ``k``.
    """
    ns = scale.pick((8, 17), (8, 17, 64), (8, 17, 64))
    ds = scale.pick((1, 4), (1, 4, 16), (1, 4, 16))
    ops = scale.pick(150, 500, 2000)
    configs = [(n, d, tau, None) for n in ns for d in ds for tau in (0.25, 0.5, 1.0)] + [(9, 3, 0.5, 1)]
    with single_thread():  # tiny matrices: threads only add synchronisation cost
        r = exactness_sweep(configs, ops, seed)
        r32 = exactness_sweep([(17, 4, 0.5, None), (64, 16, 0.5, None)], ops, seed, dtype=torch.float32)
        adv = [
            adversarial_sweep(n, 4, ops, seed * 100 + t)
            for t, n in enumerate(scale.pick((12, 40), (12, 40, 96), (12, 40, 96)))
        ]
    return {
        "adversarial_lazy_max_rel_err": max(a["lazy_max_rel_err"] for a in adv),
        "adversarial_eager_max_rel_err": max(a["eager_max_rel_err"] for a in adv),
        "adversarial_queries": sum(a["queries"] for a in adv),
        "adversarial_dominant_edits": sum(a["dominant_edits"] for a in adv),
        "adversarial_repairs": sum(a["repairs"] for a in adv),
        "adversarial_fallbacks": sum(a["fallbacks"] for a in adv),
        "repairs": float(r.repairs),
        "lazy_max_abs_err": r.max_err["lazy"],
        "eager_max_abs_err": r.max_err["eager"],
        "dense_lazy_max_abs_err": r.max_err["dense_lazy"],
        "naive_max_abs_err": r.max_err["naive"],
        "lazy_max_abs_err_float32": r32.max_err["lazy"],
        "queries": float(r.queries),
        "rebuilds": float(r.rebuilds),
        "queries_after_rebuild": float(r.boundary_queries),
        "max_pending_over_k": r.max_pending_over_k,
        "configs": float(len(configs)),
    }


def time_updates(m: AttentionMaintainer, n: int, d: int, count: int, rng: np.random.Generator) -> float:
    """Seconds per update, amortised over ``count`` alternating K and V updates of random entries.

    Parameters
    ----------
    m : AttentionMaintainer
    n, d : int
        Rows and width of ``K`` (and of ``V``, which must have ``d`` columns too).
    count : int
    rng : numpy.random.Generator

    Returns
    -------
    float
    """
    idx = [(int(rng.integers(n)), int(rng.integers(d))) for _ in range(count)]
    t = clock()
    for u, (i, j) in enumerate(idx):
        if u % 2:
            m.update_k(i, j, 0.01)
        else:
            m.update_v(i, j, 0.01)
    return (clock() - t) / count


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


def update_cost(n: int, d: int, tau: float, seed: int, repeats: int = 7) -> tuple[float, float, int, float]:
    """:func:`update_costs` at one size.

    Parameters
    ----------
    n, d : int
    tau : float
    seed : int
    repeats : int, default 7

    Returns
    -------
    (float, float, int, float)
        Seconds per update (minimum over repeats), multiply-adds per update, ``k``, and the ratio of the lazy
        structure's minimum time to eager maintenance's on the same updates.
    """
    return update_costs([n], d, tau, seed, repeats)[0]


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


def run_cost(scale: Scale, seed: int) -> dict[str, float]:
    """Log-log slopes in ``n`` of the lazy structure's measured amortised update time (``m = n`` queries, fixed
    ``d``) and worst-case query time (overhead-corrected, fixed ``d``), for three ``tau``, with the slopes the
    analysis predicts under classical multiplication and the work counters beside them as diagnostics.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        ``tau<t>_update_time_slope``, ``tau<t>_query_time_slope`` (judged), ``tau<t>_update_work_slope``,
        ``tau<t>_query_work_slope`` (diagnostics), ``tau<t>_predicted_{update,query}``, ``tau<t>_k_at_nmin``,
        and the times at the largest ``n``.
    """
    ns_u = scale.pick((512, 1024, 2048), (1024, 2048, 4096), (1024, 2048, 4096, 8192))
    ns_q = scale.pick((512, 2048, 8192), (1024, 4096, 16384), (1024, 4096, 16384, 65536))
    du, dq = 64, 256
    reps, qreps = scale.pick((5, 5), (11, 5), (15, 7))
    out: dict[str, float] = {"n_min": float(ns_u[0]), "n_max": float(ns_u[-1]), "d_update": du, "d_query": dq}
    out["predicted_update_over_eager_slope"] = 0.0  # both Theta(m d) per update with classical multiplication
    rows = []
    with single_thread():
        for tau in TAUS:
            up = update_costs(ns_u, du, tau, seed, repeats=reps)
            qu = [query_cost(n, dq, tau, seed, repeats=qreps) for n in ns_q]
            key = f"tau{tau:g}"
            out[f"{key}_update_time_slope"] = loglog_slope(ns_u, [x[0] for x in up])
            out[f"{key}_update_over_eager_slope"] = loglog_slope(ns_u, [x[3] for x in up])
            out[f"{key}_update_over_eager_at_nmax"] = up[-1][3]
            out[f"{key}_query_time_slope"] = loglog_slope(ns_q, [x[0] for x in qu])
            out[f"{key}_update_work_slope"] = loglog_slope(ns_u, [x[1] for x in up])
            out[f"{key}_query_work_slope"] = loglog_slope(ns_q, [x[2] for x in qu])
            out[f"{key}_predicted_update"] = 1.0  # O(m k d) per k updates with m = n, d fixed
            out[f"{key}_predicted_query"] = tau  # O(k d) = O(n^tau d)
            out[f"{key}_k_at_nmin"] = float(min(up[0][2], qu[0][3]))
            out[f"{key}_update_us_at_nmax"] = 1e6 * up[-1][0]
            out[f"{key}_query_us_at_nmax"] = 1e6 * qu[-1][0]
            rows.append((tau, up, qu))
    _plot_cost(ns_u, ns_q, rows)
    return out


def _plot_cost(ns_u, ns_q, rows) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    ax = fig.subplots(1, 2)
    for tau, up, qu in rows:
        ax[0].loglog(ns_u, [x[0] for x in up], "o-", label=f"tau={tau:g}")
        ax[1].loglog(ns_q, [x[0] for x in qu], "o-", label=f"tau={tau:g}")
    ax[0].set(title="amortised update time (m = n, d fixed)", xlabel="n", ylabel="seconds")
    ax[1].set(title="worst-case query time, overhead removed", xlabel="n", ylabel="seconds")
    for a in ax:
        a.legend(fontsize=8)
    save_figure(fig, "dynamic_attention-cost")


TRADEOFF_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 0.9, 0.99)


def _crossover(fracs: Sequence[float], diff: Sequence[float]) -> float:
    """The first query share where ``diff`` (peer time minus lazy time) changes sign, by linear interpolation;
    -1 when the lazy structure is never faster, 2 when it always is."""
    if all(x <= 0 for x in diff):
        return -1.0
    if all(x > 0 for x in diff):
        return 2.0
    for a, b, da, db in zip(fracs, fracs[1:], diff, diff[1:]):
        if (da > 0) != (db > 0):
            return float(a + (b - a) * da / (da - db))
    return -1.0


def run_tradeoff(scale: Scale, seed: int) -> dict[str, float]:
    """CPU time of update/query mixes on the lazy structure, vectorised eager maintenance and naive
    per-query recomputation, next to what a per-operation cost model predicts: the experiment that the tradeoff
    and beats-eager claims judge.

    Every mix spans several rebuild periods and is run on all three (one instance each per repeat, driven
    through the same operations, interleaved; the minimum over repeats; same answers). Each operation is timed
    on its own, so the per-operation costs ``U`` (updates, rebuilds included) and ``Q`` (queries, pending lists
    spread over the rebuild period) come from the same runs (the minimum over repeats of each); the model
    predicts a mix's time as ``(1 - f) U + f Q`` and the query share ``f`` where the lazy structure and each peer
    cost the same.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        ``q<p>_{lazy,eager,naive}_us`` per operation and ``q<p>_{eager,naive}_over_lazy`` for each query share
        ``p`` in percent; ``{eager,naive}_crossover_{measured,predicted}`` (-1: the lazy structure never wins
        on these mixes, 2: always); the per-operation costs and their ratios; ``max_answer_diff``.
    """
    n, d, tau = scale.pick((2048, 64, 0.5), (4096, 64, 0.5), (4096, 64, 0.5))
    # every mix spans several rebuild periods, so that rebuilds amortise
    return tradeoff_mixes(n, d, tau, seed, reps=scale.pick(2, 3, 5), periods=scale.pick(2, 4, 8))


def tradeoff_mixes(
    n: int, d: int, tau: float, seed: int, reps: int = 3, periods: int = 4, plot: bool = True
) -> dict[str, float]:
    """The measurement behind :func:`run_tradeoff` at one size (also used by the benchmark).

    Parameters
    ----------
    n, d : int
        Rows of ``Q``, ``K``, ``V`` and their width.
    tau : float
    seed : int
    reps : int, default 3
        Repeats, interleaved (minima over them).
    periods : int, default 4
        Rebuild periods each mix spans.
    plot : bool, default True
        Save the crossover figure.

    Returns
    -------
    dict of str to float
        As :func:`run_tradeoff`.
    """
    Q, K, V = random_qkv(n, d, seed)
    k = rebuild_period(n, tau)
    out: dict[str, float] = {"n": float(n), "d": float(d), "tau": tau, "k": float(k), "periods": float(periods)}
    makers = {
        "lazy": lambda: DynamicAttention(Q, K, V, tau),
        "eager": lambda: EagerAttention(Q, K, V),
        "naive": lambda: NaiveAttention(Q, K, V),
    }
    fr = TRADEOFF_FRACTIONS
    wls = [mixed_workload(n, d, int(periods * k / (1 - f)), f, seed + int(f * 1000)) for f in fr]
    per: dict[str, list[list[float]]] = {name: [[] for _ in wls] for name in makers}
    # per repeat: update seconds, updates, query seconds, queries, pooled over the mixes
    pooled: dict[str, list[list[float]]] = {name: [] for name in makers}
    max_diff = 0.0
    with single_thread():
        for _ in range(reps):
            inst = {name: make() for name, make in makers.items()}
            for name in makers:
                pooled[name].append([0.0, 0, 0.0, 0])
            for t_, wl in enumerate(wls):
                answers = {}
                for name, m in inst.items():  # interleaved, so that load changes hit all three alike
                    tu, nu, tq, nq, answers[name] = split_workload(m, wl)
                    per[name][t_].append((tu + tq) / len(wl))
                    acc = pooled[name][-1]
                    acc[0], acc[1], acc[2], acc[3] = acc[0] + tu, acc[1] + nu, acc[2] + tq, acc[3] + nq
                for peer in ("naive", "eager"):
                    max_diff = max([max_diff] + [abs(x - y) for x, y in zip(answers["lazy"], answers[peer])])
    # the minimum over repeats of each (a loaded machine only ever adds time)
    cost = {
        name: (min(a[0] / max(a[1], 1) for a in acc), min(a[2] / max(a[3], 1) for a in acc))
        for name, acc in pooled.items()
    }
    times = {name: [float(np.min(x)) for x in per[name]] for name in makers}
    for name in makers:
        out[f"{name}_update_us"], out[f"{name}_query_us"] = 1e6 * cost[name][0], 1e6 * cost[name][1]
    for t_, f in enumerate(fr):
        key = f"q{int(round(f * 100))}"
        for name in makers:
            out[f"{key}_{name}_us"] = 1e6 * times[name][t_]
        out[f"{key}_eager_over_lazy"] = times["eager"][t_] / times["lazy"][t_]
        out[f"{key}_naive_over_lazy"] = times["naive"][t_] / times["lazy"][t_]
    model = {name: [(1 - f) * cost[name][0] + f * cost[name][1] for f in fr] for name in makers}
    for peer in ("eager", "naive"):
        out[f"{peer}_crossover_measured"] = _crossover(fr, [a - b for a, b in zip(times[peer], times["lazy"])])
        # the model's crossover in closed form: (1 - f) dU = f dQ
        du, dq = cost[peer][0] - cost["lazy"][0], cost["lazy"][1] - cost[peer][1]
        if du > 0 and dq <= 0:
            out[f"{peer}_crossover_predicted"] = 2.0
        elif du <= 0 and dq >= 0:
            out[f"{peer}_crossover_predicted"] = -1.0
        else:
            f_star = du / (du + dq)
            out[f"{peer}_crossover_predicted"] = f_star if du < 0 or 0 <= f_star <= 1 else -1.0
    out["model_max_rel_err"] = max(
        abs(model[name][t] - times[name][t]) / times[name][t] for name in makers for t in range(len(fr))
    )
    out["best_eager_over_lazy"] = max(times["eager"][t] / times["lazy"][t] for t in range(len(fr)))
    out["update_eager_over_lazy"] = cost["eager"][0] / cost["lazy"][0]
    out["query_naive_over_lazy"] = cost["naive"][1] / cost["lazy"][1]
    out["max_answer_diff"] = max_diff
    if plot:
        _plot_tradeoff(fr, times, model)
    return out


def split_workload(
    m: AttentionMaintainer, ops: Sequence[tuple[str, int, int, float]]
) -> tuple[float, int, float, int, list[float]]:
    """Run a workload, timing each operation.

    Parameters
    ----------
    m : AttentionMaintainer
    ops : sequence of (str, int, int, float)
        As :func:`mixed_workload` returns.

    Returns
    -------
    (float, int, float, int, list of float)
        Seconds in updates, updates, seconds in queries, queries, and the answers.
    """
    tu = tq = 0.0
    nu = nq = 0
    answers = []
    for op, i, j, delta in ops:
        t = clock()
        if op == "q":
            answers.append(m.query(i, j))
            tq += clock() - t
            nq += 1
            continue
        if op == "k":
            m.update_k(i, j, delta)
        else:
            m.update_v(i, j, delta)
        tu += clock() - t
        nu += 1
    return tu, nu, tq, nq, answers


def timed_queries(m: AttentionMaintainer, ops: Sequence[tuple[str, int, int, float]]) -> tuple[float, int]:
    """Run a workload, timing only its queries.

    Parameters
    ----------
    m : AttentionMaintainer
    ops : sequence of (str, int, int, float)

    Returns
    -------
    (float, int)
        Seconds spent in queries and their number.
    """
    total, count = 0.0, 0
    for op, i, j, delta in ops:
        if op == "q":
            t = clock()
            m.query(i, j)
            total += clock() - t
            count += 1
        elif op == "k":
            m.update_k(i, j, delta)
        else:
            m.update_v(i, j, delta)
    return total, count


def _plot_tradeoff(fr, times, model) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    for name, style in (("lazy", "o-"), ("eager", "s-"), ("naive", "^-")):
        line = ax.semilogy(fr, [1e6 * x for x in times[name]], style, label=f"{name} (measured)")[0]
        ax.semilogy(fr, [1e6 * x for x in model[name]], ":", color=line.get_color(), label=f"{name} (model)")
    ax.set(title="mixed workloads: time per operation", xlabel="share of queries", ylabel="microseconds")
    ax.legend(fontsize=7)
    save_figure(fig, "dynamic_attention-crossover")


def revised_memory(
    docs: int = 4096,
    users: int = 1024,
    d: int = 64,
    revisions: int = 300,
    reads: int = 4,
    tau: float = 0.5,
    seed: int = 0,
) -> dict[str, float]:
    """An example a user recognises: attention over a retrieval memory whose documents are revised.

    ``users`` fixed query vectors attend over ``docs`` documents (key and value rows). Each revision replaces
    one document's key and value rows (two row updates); after each revision ``reads`` users read their whole
    attention output (:meth:`query_row`). The same stream runs on the lazy structure, eager maintenance and
    naive recomputation (one softmax row per read); all give the same outputs.

    Parameters
    ----------
    docs, users, d : int
        Documents, fixed queries, embedding width.
    revisions : int
        Documents revised, one after the other.
    reads : int
        Users reading after each revision.
    tau : float
        The lazy structure's trade-off parameter.
    seed : int

    Returns
    -------
    dict of str to float
        ``{lazy,eager,naive}_ms`` per revision (its two row updates and its reads), the lazy structure's
        ``rebuilds``, ``repairs`` and ``fallbacks``, and ``max_answer_diff``.
    """
    g = torch.Generator().manual_seed(seed)
    Q = torch.randn(users, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    K = torch.randn(docs, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    V = torch.randn(docs, d, generator=g, dtype=torch.float64)
    rng = np.random.default_rng(seed)
    stream = [
        (
            int(rng.integers(docs)),
            rng.normal(0, 1 / math.sqrt(d), d),
            rng.normal(0, 1, d),
            [int(x) for x in rng.integers(users, size=reads)],
        )
        for _ in range(revisions)
    ]
    out: dict[str, float] = {}
    answers: dict[str, list[torch.Tensor]] = {}
    with single_thread():
        for name, make in (
            ("lazy", lambda: DynamicAttention(Q, K, V, tau)),
            ("eager", lambda: EagerAttention(Q, K, V)),
            ("naive", lambda: NaiveAttention(Q, K, V)),
        ):
            m = make()
            got = []
            t0 = clock()
            for doc, key, value, readers in stream:
                m.update_k_row(doc, key - m._Kn[doc])
                m.update_v_row(doc, value - m._Vn[doc])
                got.extend(m.query_row(u) for u in readers)
            out[f"{name}_ms"] = 1e3 * (clock() - t0) / revisions
            answers[name] = got
            if name == "lazy":
                c = m.counters
                out["rebuilds"], out["repairs"], out["fallbacks"] = (
                    float(c.rebuilds),
                    float(c.repairs),
                    float(c.fallbacks),
                )
    out["max_answer_diff"] = max(
        float((a - b).abs().max()) for peer in ("eager", "naive") for a, b in zip(answers["lazy"], answers[peer])
    )
    return out


__all__ = [
    "clock",
    "revised_memory",
    "omega",
    "paper_exponents",
    "classical_exponents",
    "loglog_slope",
    "random_qkv",
    "exactness_sweep",
    "measure_lazy",
    "measure_peer",
    "mixed_workload",
    "run_workload",
    "CostPoint",
    "ExactnessResult",
    "TRADEOFF_FRACTIONS",
    "adversarial_sweep",
    "time_updates",
    "timed_queries",
    "split_workload",
    "tradeoff_mixes",
    "update_cost",
    "update_costs",
    "timed_updates",
    "query_cost",
    "run_exact",
    "run_cost",
    "run_tradeoff",
]
