"""The experiments behind the claims of dynamic attention maintenance (``paper.py``), and the workloads and
measurements they share with the benchmark.

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

from ..claims import Scale
from ..runs import save_figure
from ..threads import single_thread
from .baselines import DenseLazyAttention, EagerAttention, FullRecompute, NaiveAttention
from .maintainer import AttentionMaintainer, blocked_attention
from .paper import TAUS
from .structure import DynamicAttention

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
    """

    max_err: dict[str, float]
    queries: int
    rebuilds: int
    boundary_queries: int
    max_pending_over_k: float


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
    queries = rebuilds = boundary = 0
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
        worst_fill = max(worst_fill, lazy.counters.max_pending / lazy.k)
    return ExactnessResult(errs, queries, rebuilds, boundary, worst_fill)


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
    t0 = time.perf_counter()
    for op, i, j, delta in ops:
        if op == "q":
            answers.append(m.query(i, j))
        elif op == "k":
            m.update_k(i, j, delta)
        else:
            m.update_v(i, j, delta)
    return time.perf_counter() - t0, answers


# ------------------------------------------------------------------------------------------------- claims
QUERY_FRACTIONS = (0.1, 0.5, 0.9, 0.99)
FULL_OPS = 40  # full recomputation is timed on this many operations and scaled to the workload


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
    return {
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


def run_cost(scale: Scale, seed: int) -> dict[str, float]:
    """Log-log slopes in ``n`` (``d = n``) of the lazy structure's amortised update and worst-case query cost,
    counted and timed, for each ``tau``, with the predicted exponents and the peers' time slopes.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        ``tau<t>_{update,query}_{work,time}_slope``, ``tau<t>_predicted_{update,query}`` (classical matrix
        multiplication), ``tau<t>_paper_{update,query}`` (fast multiplication), where the work dominates
        (``tau<t>_k_at_nmin``, ``tau<t>_query_work_at_nmin``), and the eager and naive peers' slopes.
    """
    ns = scale.pick((128, 256, 512), (512, 1024, 2048), (1024, 2048, 4096))
    out: dict[str, float] = {"n_min": float(ns[0]), "n_max": float(ns[-1])}
    rows = []
    with single_thread():
        for tau in TAUS:
            pts = [
                measure_lazy(n, n, tau, seed, rounds=scale.pick(2, 3, 4), queries=15, repeats=scale.pick(1, 3, 3))
                for n in ns
            ]
            pred, paper = classical_exponents(tau), paper_exponents(tau)
            key = f"tau{tau:g}"
            out[f"{key}_update_work_slope"] = loglog_slope(ns, [p.update_work for p in pts])
            out[f"{key}_query_work_slope"] = loglog_slope(ns, [p.query_work for p in pts])
            out[f"{key}_update_time_slope"] = loglog_slope(ns, [p.update_time for p in pts])
            out[f"{key}_query_time_slope"] = loglog_slope(ns, [p.query_time for p in pts])
            out[f"{key}_predicted_update"] = pred["update"]
            out[f"{key}_predicted_query"] = pred["query"]
            out[f"{key}_paper_update"] = paper["update"]
            out[f"{key}_paper_query"] = paper["query"]
            out[f"{key}_k_at_nmin"] = float(pts[0].k)
            out[f"{key}_query_work_at_nmin"] = pts[0].query_work
            out[f"{key}_update_ms_at_nmax"] = 1e3 * pts[-1].update_time
            out[f"{key}_query_us_at_nmax"] = 1e6 * pts[-1].query_time
            rows.append((tau, pts))
        # the peers at the same sizes: eager maintenance (update O(n d)) and naive queries (O(n d))
        eager_up, naive_q = [], []
        for n in ns:
            eager_up.append(measure_peer("eager", n, n, seed, updates=scale.pick(10, 20, 20))[0])
            naive_q.append(measure_peer("naive", n, n, seed, updates=2)[1])
        out["eager_update_time_slope"] = loglog_slope(ns, eager_up)
        out["naive_query_time_slope"] = loglog_slope(ns, naive_q)
        out["eager_update_ms_at_nmax"] = 1e3 * eager_up[-1]
        out["naive_query_us_at_nmax"] = 1e6 * naive_q[-1]
    _plot_cost(ns, rows, eager_up, naive_q)
    return out


def _plot_cost(ns, rows, eager_up, naive_q) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    ax = fig.subplots(1, 2)
    for tau, pts in rows:
        ax[0].loglog(ns, [p.update_time for p in pts], "o-", label=f"lazy tau={tau:g}")
        ax[1].loglog(ns, [p.query_time for p in pts], "o-", label=f"lazy tau={tau:g}")
    ax[0].loglog(ns, eager_up, "k--", label="eager")
    ax[1].loglog(ns, naive_q, "k--", label="naive")
    ax[0].set(title="amortised update (d = n)", xlabel="n", ylabel="seconds")
    ax[1].set(title="worst-case query (d = n)", xlabel="n", ylabel="seconds")
    for a in ax:
        a.legend(fontsize=8)
    save_figure(fig, "dynamic_attention-cost")


def run_tradeoff(scale: Scale, seed: int) -> dict[str, float]:
    """Wall-clock time of mixed workloads (several shares of queries) on the lazy structure and its peers.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        ``q<p>_{lazy,naive,eager}_s`` and the ratios ``q<p>_naive_over_lazy``, ``q<p>_eager_over_lazy`` for each
        query share ``p`` in percent; ``full_over_lazy`` at 50 % queries; ``max_answer_diff`` between the
        lazy structure's answers and the peers'.
    """
    n, d = scale.pick((1024, 64), (4096, 64), (4096, 64))
    ops = scale.pick(120, 300, 1000)
    tau = 0.5
    Q, K, V = random_qkv(n, d, seed)
    out: dict[str, float] = {"n": float(n), "d": float(d), "tau": tau, "ops": float(ops)}
    max_diff = 0.0
    with single_thread():
        for p in QUERY_FRACTIONS:
            wl = mixed_workload(n, d, ops, p, seed + int(p * 1000))
            lazy = DynamicAttention(Q, K, V, tau)
            t_lazy, a_lazy = run_workload(lazy, wl)
            t_naive, a_naive = run_workload(NaiveAttention(Q, K, V), wl)
            t_eager, _ = run_workload(EagerAttention(Q, K, V), wl)
            max_diff = max([max_diff] + [abs(x - y) for x, y in zip(a_lazy, a_naive)])
            key = f"q{int(round(p * 100))}"
            out[f"{key}_lazy_s"], out[f"{key}_naive_s"], out[f"{key}_eager_s"] = t_lazy, t_naive, t_eager
            out[f"{key}_naive_over_lazy"] = t_naive / t_lazy
            out[f"{key}_eager_over_lazy"] = t_eager / t_lazy
            if p == 0.5:
                # Full recomputation after every update costs the same O(n^2 d) per update, so it is timed on
                # the workload's first FULL_OPS operations and scaled linearly to the whole workload.
                prefix = wl[:FULL_OPS]
                t_full, a_full = run_workload(FullRecompute(Q, K, V), prefix)
                n_up_prefix = sum(op != "q" for op, *_ in prefix)
                n_up = sum(op != "q" for op, *_ in wl)
                max_diff = max([max_diff] + [abs(x - y) for x, y in zip(a_lazy, a_full)])
                out["q50_full_s"] = t_full * n_up / max(n_up_prefix, 1)
                out["full_over_lazy"] = out["q50_full_s"] / t_lazy
    out["max_answer_diff"] = max_diff
    return out


__all__ = [
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
    "QUERY_FRACTIONS",
    "FULL_OPS",
    "run_exact",
    "run_cost",
    "run_tradeoff",
]
