"""The claims of "Algorithm and Hardness for Dynamic Attention Maintenance in Large Language Models".

The paper is theory only (no code, no experiments). We check what its analysis predicts for our exact
implementation: exact answers, the cost exponents (with classical matrix multiplication, which is what BLAS
does), and where the lazy structure pays off against the peers a user would pick instead.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..claims import Claim, Scale
from ..registry import method
from ..runs import save_figure
from .baselines import EagerAttention, FullRecompute, NaiveAttention
from .experiments import (classical_exponents, exactness_sweep, loglog_slope, measure_lazy, measure_peer,
                          mixed_workload, paper_exponents, random_qkv, run_workload, single_thread)
from .structure import DynamicAttention

SLUG = "dynamic_attention"
TAUS = (0.25, 0.5, 0.75)
EXACT_TOL = 1e-9
WORK_TOL = 0.15  # counters follow k = ceil(n^tau) exactly; rounding of the ceiling moves a slope by < 0.1
TIME_TOL = 0.4  # timers: cache effects and shared machines
TIME_MIN_N = 512  # below this, Python's per-call cost (~10 us) hides the O(n d) work: times are not judged
# Times follow the work only where the work dominates, so time exponents are judged only there:
MIN_K_TIME = 16  # update: a rebuild multiplies by k columns; with k < 16 it is memory-bound (k / 4 flops per
                 # byte) and its time jumps where Q leaves the cache (seen: slope 1.9 to 2.5 across seeds at tau 0.25)
MIN_QUERY_WORK_TIME = 5e4  # query: below ~5e4 multiply-adds the ~10 us per-call cost dominates


# ------------------------------------------------------------------------------------------------- exact
def _run_exact(scale: Scale, seed: int) -> dict[str, float]:
    ns = scale.pick((8, 17), (8, 17, 64), (8, 17, 64))
    ds = scale.pick((1, 4), (1, 4, 16), (1, 4, 16))
    ops = scale.pick(150, 500, 2000)
    configs = [(n, d, tau, None) for n in ns for d in ds for tau in (0.25, 0.5, 1.0)] + [(9, 3, 0.5, 1)]
    with single_thread():  # tiny matrices: threads only add synchronisation cost
        r = exactness_sweep(configs, ops, seed)
        r32 = exactness_sweep([(17, 4, 0.5, None), (64, 16, 0.5, None)], ops, seed, dtype=torch.float32)
    return {
        "lazy_max_abs_err": r.max_err["lazy"], "eager_max_abs_err": r.max_err["eager"],
        "dense_lazy_max_abs_err": r.max_err["dense_lazy"], "naive_max_abs_err": r.max_err["naive"],
        "lazy_max_abs_err_float32": r32.max_err["lazy"], "queries": float(r.queries),
        "rebuilds": float(r.rebuilds), "queries_after_rebuild": float(r.boundary_queries),
        "max_pending_over_k": r.max_pending_over_k, "configs": float(len(configs)),
    }


def _holds_exact(m: dict[str, float]) -> bool:
    return (m["lazy_max_abs_err"] <= EXACT_TOL and m["queries"] >= 100 and m["rebuilds"] >= 10
            and m["queries_after_rebuild"] >= 10 and m["max_pending_over_k"] <= 1.0)


EXACT = Claim(
    key=f"{SLUG}/exact",
    statement=("After random mixed sequences of UpdateK, UpdateV and Query (repeated entries, queries right "
               f"after rebuilds, tau in {{0.25, 0.5, 1}} and k = 1), every answer of the lazy structure equals "
               f"softmax attention recomputed from scratch to {EXACT_TOL:g} in float64, as eager maintenance does."),
    run=_run_exact, holds=_holds_exact, headline="lazy_max_abs_err", baseline="eager_max_abs_err",
)


# -------------------------------------------------------------------------------------------------- cost
def _run_cost(scale: Scale, seed: int) -> dict[str, float]:
    ns = scale.pick((128, 256, 512), (512, 1024, 2048), (1024, 2048, 4096))
    out: dict[str, float] = {"n_min": float(ns[0]), "n_max": float(ns[-1])}
    rows = []
    with single_thread():
        for tau in TAUS:
            pts = [measure_lazy(n, n, tau, seed, rounds=scale.pick(2, 3, 4), queries=15, repeats=scale.pick(1, 3, 3))
                   for n in ns]
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
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


def _holds_cost(m: dict[str, float]) -> bool:
    ok = True
    for tau in TAUS:
        key = f"tau{tau:g}"
        ok &= abs(m[f"{key}_update_work_slope"] - m[f"{key}_predicted_update"]) <= WORK_TOL
        ok &= abs(m[f"{key}_query_work_slope"] - m[f"{key}_predicted_query"]) <= WORK_TOL
        # Times: the bounds are O(.) upper bounds, so a time exponent must not exceed the prediction by more than
        # TIME_TOL; slower growth is expected at these sizes, where BLAS throughput still rises with the matrix
        # size (measured 4.5 -> 14 GMAC/s from n = 512 to 2048), so lower slopes are reported, not judged.
        if m["n_min"] >= TIME_MIN_N:
            if m[f"{key}_k_at_nmin"] >= MIN_K_TIME:
                ok &= m[f"{key}_update_time_slope"] <= m[f"{key}_predicted_update"] + TIME_TOL
                ok &= m[f"{key}_update_time_slope"] > 1.0  # and it does grow superlinearly, as n d work does
            if m[f"{key}_query_work_at_nmin"] >= MIN_QUERY_WORK_TIME:
                ok &= m[f"{key}_query_time_slope"] <= m[f"{key}_predicted_query"] + TIME_TOL
                ok &= m[f"{key}_query_time_slope"] > 1.0
    return bool(ok)


COST = Claim(
    key=f"{SLUG}/cost",
    statement=("With d = n and classical matrix multiplication (omega(1,1,tau) = 2 + tau), the amortised update "
               "cost grows as n^2 and the worst-case query cost as n^(1+tau) (the paper's n^(omega(1,1,tau)-tau) "
               "and n^(1+tau) with that omega): log-log slopes of the work counters within "
               f"{WORK_TOL} of those exponents for tau in {{0.25, 0.5, 0.75}}; time slopes above 1 and at most "
               f"{TIME_TOL} above them (O() bounds) when n >= {TIME_MIN_N} and the work dominates (updates: "
               f"rebuilds of k >= {MIN_K_TIME} columns; queries: >= {MIN_QUERY_WORK_TIME:.0e} multiply-adds)."),
    run=_run_cost, holds=_holds_cost, headline="tau0.5_update_time_slope", baseline="tau0.5_predicted_update",
)


# ---------------------------------------------------------------------------------------------- trade-off
QUERY_FRACTIONS = (0.1, 0.5, 0.9, 0.99)
LARGE_FACTOR = 10.0
FULL_OPS = 40


def _run_tradeoff(scale: Scale, seed: int) -> dict[str, float]:
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


def _holds_tradeoff(m: dict[str, float]) -> bool:
    return (m["full_over_lazy"] >= LARGE_FACTOR and m["q99_naive_over_lazy"] > 1.0
            and m["q10_naive_over_lazy"] < 1.0 and m["max_answer_diff"] <= 1e-9)


TRADEOFF = Claim(
    key=f"{SLUG}/tradeoff",
    statement=("At n = 4096, d = 64, tau = 0.5, on a mixed workload (half updates, half queries) the lazy "
               f"structure is at least {LARGE_FACTOR:g}x faster than full recomputation after each update; as its "
               "cost model predicts, it beats naive per-query recomputation when queries dominate (99%) and loses "
               "to it when updates dominate (10% queries), with identical answers."),
    run=_run_tradeoff, holds=_holds_tradeoff, headline="full_over_lazy", baseline="q50_naive_over_lazy",
)

METHOD = method(SLUG, (EXACT, COST, TRADEOFF))
