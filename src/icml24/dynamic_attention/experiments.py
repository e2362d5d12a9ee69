"""The experiments behind the claims of dynamic attention maintenance (``paper.py``): :func:`run_exact`,
:func:`run_cost` and :func:`run_tradeoff`.

They drive the public API (:class:`DynamicAttention` and the baselines) on seeded random inputs, with the tools
that the benchmark shares: :mod:`.workloads` (inputs, operation streams, the clock), :mod:`.exponents` (predicted
exponents, slope fits), :mod:`.exactness` (answers against a from-scratch oracle), :mod:`.timing` (update and
query costs at one size) and :mod:`.tradeoff` (update/query mixes and the cost model). Times are the calling
thread's CPU time around single calls; work comes from the maintainers' counters.
"""

from __future__ import annotations

import torch

from ..claims import Scale
from ..runs import save_figure
from ..threads import single_thread
from .exactness import ExactnessResult, adversarial_sweep, exactness_sweep  # noqa: F401 - importable from here as before
from .exponents import classical_exponents, loglog_slope, omega, paper_exponents  # noqa: F401 - as before
from .paper import TAUS
from .timing import CostPoint, measure_lazy, measure_peer, query_cost, timed_updates, update_costs  # noqa: F401
from .tradeoff import TRADEOFF_FRACTIONS, tradeoff_mixes  # noqa: F401 - importable from here as before
from .workloads import clock, mixed_workload, random_qkv, revised_memory, split_workload  # noqa: F401 - as before


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
    "CostPoint",
    "ExactnessResult",
    "TRADEOFF_FRACTIONS",
    "adversarial_sweep",
    "split_workload",
    "tradeoff_mixes",
    "update_costs",
    "timed_updates",
    "query_cost",
    "run_exact",
    "run_cost",
    "run_tradeoff",
]
