"""Update/query mixes on the lazy structure, eager maintenance and naive recomputation, timed, next to what a
per-operation cost model predicts (the measurement the tradeoff and beats-eager claims judge)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..runs import save_figure
from ..threads import single_thread
from .baselines import EagerAttention, NaiveAttention
from .structure import DynamicAttention, rebuild_period
from .workloads import mixed_workload, random_qkv, split_workload

__all__ = ["TRADEOFF_FRACTIONS", "tradeoff_mixes"]


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
