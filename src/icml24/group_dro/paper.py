"""The paper's claims as executable checks (Yu, Cai, Jiang, Zhang, ICML 2024, arXiv 2403.03562).

The claims run on the spec's synthetic multi-group problem (:func:`~icml24.group_dro.synthetic.
synthetic_problem`: logistic loss, ``W = {||w|| <= 5}``, ``d = 20``, ``n_i = 100`` at quick scale) and count
per-sample gradient evaluations (IFO). Except in claim 2b, every method's step factor is tuned by the same
procedure on the same grid (:func:`~icml24.group_dro.compare.tune`); the problem's data seed is ``seed`` and
the methods' sampling seed is ``seed + 1``.

1. ``beats-every-baseline``: ALEG reaches duality gap 1e-3 with fewer IFO than each of SMD, the one-level
   variance-reduced mirror prox, deterministic mirror prox and online GroupDRO (abstract).
2. ``sqrt-m-advantage``: the IFO ratio one-level / ALEG grows like ``sqrt(m)`` (abstract: "outperforms the
   state-of-the-art method by a factor of sqrt(m)"): the fitted log-log slope over ``m in {4, 8, 16, 32}``
   lies within 0.25 of 0.5, i.e. closer to the prediction than to "no gain" (0) or "linear gain" (1).
   2b. ``sqrt-m-at-analysed-steps``: the same test for the algorithms the analysis is about: both methods at
   their theory steps (``gamma = 0.99``, untuned), on ``W = {||w|| <= 1}``, the radius at which the
   analysis' own constants predict the gain (at radius 5 they predict slope 0.12). Target gap 3e-2 at quick
   scale, 1e-2 at paper scale.
3. ``alem-beats-smd-mero``: at an equal IFO budget, ALEM's worst-group excess risk is below that of the
   two-stage SMD approach to MERO (abstract: ALEM's rate "surpassing the rates of existing methods").

Measured (2026-11-29/30, seed 0, quick): claims 1 and 2 do not hold; 2b and 3 do. ALEG needs 678k IFO to gap
1e-3 at m = 16, the one-level method 470k; with tuned steps the IFO ratio one-level / ALEG is 1.17, 0.76,
0.86, 0.84 over m = 4..32 (slope -0.12), and with ``W = {||w|| <= 1}`` slope 0.08 (``benchmarks/group_dro.py
--radius 1``). At the analysed steps (2b) the ratio is 1.25, 1.74, 2.42, 3.63 (slope 0.51; seed 1: 0.43),
as the analysis' constants predict (1.28, 1.73, 2.41, 3.53).

Why tuning erases the gain (reported in claim 2's metrics, :func:`~icml24.group_dro.compare.
estimator_moments`): near the solution, the one-level estimator's q-block second moment in the paper's
``l_inf`` norm is ``m^1.5``-fold that of the group-sampled one (5.5, 14, 39, 114 for m = 4..32; the analysis
bounds it by ``m^2``), which would leave the sqrt(m) gain. But in the local norm of the entropy at ``q`` (what
an exponentiated-gradient step feels while ``eta ln(m) |g_q|`` is small) it is exactly ``m``-fold, and the
w-block's about ``m``-fold too; an ``m``-fold second moment costs ``sqrt(m)`` in step size, which the one-level
method's ``m``-fold cheaper steps pay back exactly. The moments predict ratios 0.95, 0.93, 0.91, 0.86 in the
local norm (slope -0.05) against 0.97, 1.04, 1.24, 1.60 in ``l_inf`` (slope 0.24); the tuned runs measure
1.17, 0.76, 0.86, 0.84. The sqrt(m) is a property of the worst-case step sizes of the analysis, and it is
real for them (2b); a user who tunes both steps should not expect it on problems like this one.
"""

from __future__ import annotations

import math

import numpy as np

from ..claims import Claim, Scale, finite
from ..registry import method
from .compare import GDRO_METHODS, measure, moments_near_aleg, tune, tune_mero, worst_excess_risk
from .mirror import Geometry
from .reference import group_optima, minimax_reference
from .synthetic import synthetic_problem

SLUG = "group_dro"
BASELINES = ("one_level_vr", "smd", "mirror_prox", "online_group_dro")
#: ``sqrt-m-at-analysed-steps``: the step factor of the analysis (``gamma < 1``) and the radius of W at which
#: the analysis' own constants predict the sqrt(m) gain (slope 0.49 over m = 4..32; at the spec's radius 5
#: they predict 0.12, because the w-block term ``D^2 L`` dominates both Lipschitz constants there).
ANALYSED_GAMMA, ANALYSED_RADIUS = 0.99, 1.0


def _single_thread():
    """One BLAS thread: these problems are tiny, and on a shared machine threads only add overhead."""
    from ..threads import single_thread

    return single_thread()


def _plot_curves(tuned: dict, N: int, title: str, name: str, target: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..runs import artifact_dir, save_figure

    if artifact_dir() is None:
        return
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for meth, t in tuned.items():
        xs = [i / N for i, _ in t.best.curve]
        ys = [g for _, g in t.best.curve]
        ax.loglog(xs, ys, label=f"{meth} (gamma={t.best.gamma:.3g})", lw=2 if meth == "aleg" else 1.2)
    ax.axhline(target, color="k", ls=":", lw=0.8)
    ax.set_xlabel("IFO / N (passes over the data)")
    ax.set_ylabel("duality gap of the output")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    save_figure(fig, name)


# ------------------------------------------------------------------------------- 1. every baseline
def _run_baselines(scale: Scale, seed: int) -> dict[str, float]:
    m, n, d = scale.pick(4, 16, 16), scale.pick(40, 100, 100), scale.pick(10, 20, 20)
    target = scale.pick(1e-2, 1e-3, 1e-3)
    cap, pilot = scale.pick(300, 1000, 3000), scale.pick(10, 25, 25)
    with _single_thread():
        p = synthetic_problem(m, n, d, seed=seed)
        N = p.n_total
        tuned = {meth: tune(p, meth, targets=(10 * target, target), max_ifo=cap * N, pilot=pilot * N, seed=seed + 1)
                 for meth in GDRO_METHODS}
        _plot_curves(tuned, N, f"GDRO, m={m}, n_i={n}, d={d}: duality gap vs IFO (best tuned step)",
                     "group_dro-gap-vs-ifo", target)
    out = {"m": float(m), "N": float(N), "target": target, "cap_ifo": float(cap * N)}
    for meth, t in tuned.items():
        out[f"ifo_{meth}"] = t.ifo(target)
        out[f"ifo10_{meth}"] = t.ifo(10 * target)  # IFO to ten times the target gap
        out[f"gamma_{meth}"] = t.best.gamma
        out[f"gap_{meth}"] = t.best.final_gap
    out["ifo_best_baseline"] = min(out[f"ifo_{b}"] for b in BASELINES)
    out["ratio_best_baseline"] = out["ifo_best_baseline"] / out["ifo_aleg"] if out["ifo_aleg"] > 0 else math.nan
    return out


def _holds_baselines(mt) -> bool:
    a = mt["ifo_aleg"]
    return finite(a) and all(a < mt[f"ifo_{b}"] for b in BASELINES)


# ------------------------------------------------------------------------------------ 2. sqrt(m)
def _run_sqrt_m(scale: Scale, seed: int) -> dict[str, float]:
    ms = scale.pick((2, 4, 8), (4, 8, 16, 32), (4, 8, 16, 32))
    n, d = scale.pick(40, 100, 100), scale.pick(10, 20, 20)
    target = scale.pick(1e-2, 1e-2, 1e-3)
    cap, pilot = scale.pick(200, 300, 1000), scale.pick(5, 10, 25)
    out: dict[str, float] = {"target": target}
    rows = []
    with _single_thread():
        for m in ms:
            p = synthetic_problem(m, n, d, seed=seed)
            N = p.n_total
            a = tune(p, "aleg", targets=(target,), max_ifo=cap * N, pilot=pilot * N, seed=seed + 1)
            o = tune(p, "one_level_vr", targets=(target,), max_ifo=cap * N, pilot=pilot * N, seed=seed + 1)
            theory = Geometry(p).one_level_ratio()  # what the theory's own constants predict for this problem
            ia, io = a.ifo(target), o.ifo(target)
            # why tuning erases the gain: the estimators' second moments near ALEG's solution (not judged)
            for key, value in moments_near_aleg(p, a.best.gamma, seed=seed).items():
                out[f"{key}_m{m}"] = value
            out[f"ifo_aleg_m{m}"], out[f"ifo_one_level_m{m}"] = ia, io
            out[f"gamma_aleg_m{m}"], out[f"gamma_one_level_m{m}"] = a.best.gamma, o.best.gamma
            out[f"ratio_m{m}"] = io / ia if finite(ia, io) else math.nan
            out[f"theory_ratio_m{m}"] = theory
            rows.append((m, ia, io, theory))
    logm = _fit_slopes(out, rows)
    for norm in ("inf", "local"):
        preds = [out[f"pred_ratio_{norm}_m{r[0]}"] for r in rows]
        out[f"{norm}_norm_moments_slope"] = float(np.polyfit(logm, np.log(preds), 1)[0])
    _plot_sqrt_m(rows, target, "group_dro-sqrt-m", "tuned steps")
    return out


def _fit_slopes(out: dict[str, float], rows) -> np.ndarray:
    """Log-log slopes over m of the measured ratios ``out["ratio_m<m>"]`` and of the theory constants' ratios
    (``rows`` of ``(m, ifo_aleg, ifo_one_level, theory_ratio)``), into ``out``; returns ``log m``."""
    logm = np.log([r[0] for r in rows])
    ratios = np.array([out[f"ratio_m{r[0]}"] for r in rows])
    out["slope"] = float(np.polyfit(logm, np.log(ratios), 1)[0]) if np.all(np.isfinite(ratios)) else math.nan
    out["theory_constants_slope"] = float(np.polyfit(logm, np.log([r[3] for r in rows]), 1)[0])
    out["predicted_slope"] = 0.5
    out["ratio_largest_m"] = float(ratios[-1])
    return logm


def _plot_sqrt_m(rows, target: float, name: str, steps: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..runs import artifact_dir, save_figure

    if artifact_dir() is None:
        return
    ms = np.array([r[0] for r in rows], dtype=float)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.8))
    ax1.loglog(ms, [r[1] for r in rows], "o-", label="ALEG")
    ax1.loglog(ms, [r[2] for r in rows], "s-", label="one-level VR mirror prox")
    ax1.set_xlabel("m (groups)")
    ax1.set_ylabel(f"IFO to duality gap {target:g}")
    ax1.legend(fontsize=8)
    ratio = np.array([r[2] / r[1] for r in rows])
    ax2.loglog(ms, ratio, "o-", label="measured IFO ratio one-level / ALEG")
    ax2.loglog(ms, ratio[0] * np.sqrt(ms / ms[0]), "k--", label="sqrt(m) (paper)")
    ax2.loglog(ms, [r[3] for r in rows], "g:", label="theory constants of this problem")
    ax2.set_xlabel("m (groups)")
    ax2.set_title(steps, fontsize=9)
    ax2.legend(fontsize=7)
    save_figure(fig, name)


def _holds_sqrt_m(mt) -> bool:
    s = mt["slope"]
    return finite(s) and abs(s - mt["predicted_slope"]) <= 0.25 and mt["ratio_largest_m"] > 1.0


# ---------------------------------------------------------------- 2b. sqrt(m) at the analysed steps
def _run_sqrt_m_analysed(scale: Scale, seed: int) -> dict[str, float]:
    ms = scale.pick((2, 4, 8), (4, 8, 16, 32), (4, 8, 16, 32))
    n, d = scale.pick(40, 100, 100), scale.pick(10, 20, 20)
    target = scale.pick(1e-1, 3e-2, 1e-2)
    cap = scale.pick(300, 1500, 3000)
    out: dict[str, float] = {"target": target, "radius": ANALYSED_RADIUS, "gamma": ANALYSED_GAMMA}
    rows = []
    with _single_thread():
        for m in ms:
            p = synthetic_problem(m, n, d, radius=ANALYSED_RADIUS, seed=seed)
            N = p.n_total
            runs = {meth: measure(p, meth, ANALYSED_GAMMA, targets=(target,), max_ifo=cap * N, seed=seed + 1)
                    for meth in ("aleg", "one_level_vr")}
            theory = Geometry(p).one_level_ratio()
            ia, io = runs["aleg"].hits[target], runs["one_level_vr"].hits[target]
            out[f"ifo_aleg_m{m}"], out[f"ifo_one_level_m{m}"] = ia, io
            out[f"ratio_m{m}"] = io / ia if finite(ia, io) else math.nan
            out[f"theory_ratio_m{m}"] = theory
            rows.append((m, ia, io, theory))
    _fit_slopes(out, rows)
    if math.isfinite(out["slope"]):
        _plot_sqrt_m(rows, target, "group_dro-sqrt-m-analysed-steps", f"analysed steps (gamma={ANALYSED_GAMMA})")
    return out


# ------------------------------------------------------------------------------------- 3. ALEM
def _run_alem(scale: Scale, seed: int) -> dict[str, float]:
    m, n, d = scale.pick(4, 8, 16), scale.pick(50, 100, 100), scale.pick(10, 20, 20)
    passes = scale.pick(100, 100, 200)
    with _single_thread():
        p = synthetic_problem(m, n, d, seed=seed)
        budget = passes * p.n_total
        optima = group_optima(p)
        ref = minimax_reference(p, offsets=optima)
        v_alem, g_alem, _ = tune_mero(p, "alem", budget=budget, optima=optima, seed=seed + 1)
        v_smd, g_smd, _ = tune_mero(p, "smd_mero", budget=budget, optima=optima, seed=seed + 1)
    return {"m": float(m), "budget_ifo": float(budget), "mero_opt": ref.value,
            "excess_alem": v_alem, "excess_smd_mero": v_smd,
            "subopt_alem": v_alem - ref.value, "subopt_smd_mero": v_smd - ref.value,
            "gamma_alem": g_alem, "gamma_smd_mero": g_smd,
            "worst_excess_at_gdro_opt": worst_excess_risk(p, minimax_reference(p).w, optima)}


def _holds_alem(mt) -> bool:
    return finite(mt["excess_alem"], mt["excess_smd_mero"]) and mt["excess_alem"] < mt["excess_smd_mero"]


CLAIMS = (
    Claim(f"{SLUG}/beats-every-baseline",
          "On the spec's synthetic multi-group logistic problem (m=16), ALEG reaches duality gap 1e-3 with fewer "
          "per-sample gradient evaluations than SMD, the one-level variance-reduced mirror prox (Alacaoglu-"
          "Malitsky), deterministic mirror prox and online GroupDRO, each with its step tuned on the same grid.",
          _run_baselines, _holds_baselines, "ifo_aleg", "ifo_best_baseline"),
    Claim(f"{SLUG}/sqrt-m-advantage",
          "ALEG's advantage over the one-level variance-reduced mirror prox grows like sqrt(m): the log-log slope "
          "of the IFO ratio (one-level / ALEG, to reach the target gap) over m in {4, 8, 16, 32} is within 0.25 "
          "of 0.5, and the ratio exceeds 1 at the largest m.",
          _run_sqrt_m, _holds_sqrt_m, "slope", "predicted_slope"),
    Claim(f"{SLUG}/sqrt-m-at-analysed-steps",
          "With the step sizes of the analysis (gamma=0.99 times each method's own theory step, no tuning) on the "
          "synthetic problem with W={||w||<=1}, where the analysis' constants are dominated by the q-block, the IFO "
          "ratio one-level VR / ALEG to reach the target gap grows like sqrt(m): log-log slope over m in "
          "{4, 8, 16, 32} within 0.25 of 0.5, and the ratio exceeds 1 at the largest m.",
          _run_sqrt_m_analysed, _holds_sqrt_m, "slope", "predicted_slope"),
    Claim(f"{SLUG}/alem-beats-smd-mero",
          "At an equal budget of per-sample gradient evaluations, ALEM (two-stage ALEG) reaches a lower "
          "worst-group excess risk max_i [R_i(w) - R_i*] than the two-stage SMD approach to MERO.",
          _run_alem, _holds_alem, "excess_alem", "excess_smd_mero"),
)

METHOD = method(SLUG, CLAIMS)

__all__ = ["METHOD", "CLAIMS"]
