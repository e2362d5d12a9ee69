"""Measuring methods in the paper's currency: per-sample gradient evaluations (IFO) to reach a duality gap.

Every method's step is ``gamma`` times its own theory step (ALEG and the one-level method: ``gamma sqrt(1 -
alpha) / L``; mirror prox: ``gamma / L``; SMD and online GroupDRO: ``gamma sqrt(2 Omega) / (M sqrt(.))``). The
theory's worst-case constants are loose by different factors for different methods, so every method's
``gamma`` is tuned on the same grid :data:`GRID` by the same procedure (:func:`tune`):

1. pilot runs to ``pilot`` IFO, scored by the duality gap of their output there: every value of the coarse
   grid :data:`GRID` (factor 4 apart), then the two neighbours of the best at factor 2, then at factor
   sqrt(2) (eleven pilots in all);
2. full runs of the ``keep`` best values (and up to ``extra`` more while none reaches the target), best
   first, each stopped as soon as its gap reaches the target, or
   when it cannot beat the best IFO found so far, or when its gap exceeds ``diverge`` times its best gap.

The gap is evaluated on a geometric IFO schedule (every ``resolution`` = 5 % of IFO, at least one pass), the
same for every method, so IFO-to-target is measured to within 5 %.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import InputError
from .aleg import aleg, alem
from .baselines import mirror_prox, one_level_vr, online_group_dro, smd, smd_mero
from .mirror import Geometry, check_count, check_positive, check_problem, check_seed
from .problem import GroupProblem
from .reference import duality_gap

#: Coarse step factors relative to each method's theory step, shared by every method; :func:`tune` refines
#: around the best of them by factors 2 and sqrt(2).
GRID: tuple[float, ...] = (0.25, 1.0, 4.0, 16.0, 64.0, 256.0, 1024.0)

Runner = Callable[..., object]


def _run_aleg(problem, gamma, max_ifo, horizon, seed, callback):
    return aleg(problem, max_ifo=max_ifo, gamma=gamma, seed=seed, callback=callback)


def _run_one_level(problem, gamma, max_ifo, horizon, seed, callback):
    return one_level_vr(problem, max_ifo=max_ifo, gamma=gamma, seed=seed, callback=callback)


def _run_smd(problem, gamma, max_ifo, horizon, seed, callback):
    return smd(problem, max_ifo=max_ifo, gamma=gamma, seed=seed, callback=callback)


def _run_mp(problem, gamma, max_ifo, horizon, seed, callback):
    return mirror_prox(problem, max_ifo=max_ifo, gamma=gamma, callback=callback)


def _run_groupdro(problem, gamma, max_ifo, horizon, seed, callback):
    # constant steps tuned for the horizon (the full budget), whatever IFO the run is stopped at
    return online_group_dro(problem, max_ifo=max_ifo, horizon=max(1, horizon // problem.m), gamma=gamma,
                            seed=seed, callback=callback, output="average")


#: The GDRO methods compared in the claims and the benchmark: name -> runner.
GDRO_METHODS: dict[str, Runner] = {
    "aleg": _run_aleg,
    "one_level_vr": _run_one_level,
    "smd": _run_smd,
    "mirror_prox": _run_mp,
    "online_group_dro": _run_groupdro,
}


@dataclass
class Run:
    """One run: its step factor, the IFO at which each target gap was first reached (inf: not reached within
    the budget), the measured ``(ifo, gap)`` curve and wall time."""

    method: str
    gamma: float
    hits: dict[float, float]
    curve: list[tuple[int, float]] = field(default_factory=list)
    final_gap: float = math.inf
    seconds: float = 0.0


def measure(problem: GroupProblem, method: str, gamma: float, *, targets: tuple[float, ...], max_ifo: int,
            seed: int, horizon: int | None = None, resolution: float = 0.05, diverge: float = 10.0,
            stop_ifo: float = math.inf) -> Run:
    """Run ``method`` with step factor ``gamma`` and record when its output's duality gap reaches each target.

    Stops at the smallest target, at ``max_ifo``, past ``stop_ifo`` (a better run already reached the
    smallest target there), or when the gap exceeds ``diverge`` times its best value (a diverging step).
    """
    N = problem.n_total
    hits = {t: math.inf for t in targets}
    curve: list[tuple[int, float]] = []
    state = {"next": float(N), "best": math.inf}
    smallest = min(targets)

    def callback(ifo: int, w: np.ndarray, q: np.ndarray) -> bool:
        if ifo > stop_ifo:
            return True
        if ifo < state["next"]:
            return False
        state["next"] = max(ifo * (1.0 + resolution), ifo + N)
        g = duality_gap(problem, w, q)
        curve.append((ifo, g))
        for t in targets:
            if g <= t and hits[t] == math.inf:
                hits[t] = float(ifo)
        state["best"] = min(state["best"], g)
        return g <= smallest or not math.isfinite(g) or g > diverge * state["best"]

    t0 = time.perf_counter()
    res = GDRO_METHODS[method](problem, gamma, max_ifo, horizon or max_ifo, seed, callback)
    final = curve[-1][1] if curve and curve[-1][0] == res.ifo else duality_gap(problem, res.w, res.q)
    if not curve or curve[-1][0] != res.ifo:
        curve.append((res.ifo, final))
    return Run(method, gamma, hits, curve, final, time.perf_counter() - t0)


def pilot_gap(problem: GroupProblem, method: str, gamma: float, *, budget: int, horizon: int, seed: int) -> float:
    """The duality gap of ``method``'s output after ``budget`` IFO (the pilot score of :func:`tune`)."""
    res = GDRO_METHODS[method](problem, gamma, budget, horizon, seed, None)
    g = duality_gap(problem, res.w, res.q)
    return g if math.isfinite(g) else math.inf


@dataclass
class Tuned:
    """The result of :func:`tune`: the best run and every run made (pilot scores included)."""

    best: Run
    runs: list[Run]
    pilot: dict[float, float]

    def ifo(self, target: float) -> float:
        return self.best.hits.get(target, math.inf)


def tune(problem: GroupProblem, method: str, *, targets: tuple[float, ...], max_ifo: int, pilot: int, seed: int,
         grid: tuple[float, ...] = GRID, keep: int = 3, extra: int = 2) -> Tuned:
    """IFO for ``method`` to reach ``min(targets)``, with ``gamma`` tuned on ``grid`` (see module doc)."""
    scores: dict[float, float] = {}

    def score(gs):
        for g in gs:
            if g not in scores:
                scores[g] = pilot_gap(problem, method, g, budget=pilot, horizon=max_ifo, seed=seed)

    score(grid)
    for factor in (2.0, math.sqrt(2.0)):
        g_best = min(scores, key=lambda g: (scores[g], -g))
        score((g_best / factor, g_best * factor))
    order = sorted(scores, key=lambda g: (scores[g], -g))
    runs: list[Run] = []
    best_ifo = math.inf
    smallest = min(targets)
    for rank, g in enumerate(order):
        # the `keep` best pilots, and further ones (up to `keep + extra`) while none has reached the target
        if rank >= keep + extra or (rank >= keep and best_ifo < math.inf):
            break
        run = measure(problem, method, g, targets=targets, max_ifo=max_ifo, seed=seed, horizon=max_ifo,
                      stop_ifo=best_ifo)
        runs.append(run)
        best_ifo = min(best_ifo, run.hits[smallest])

    def key(r: Run):
        return (r.hits[smallest], r.final_gap if r.hits[smallest] == math.inf else 0.0)

    return Tuned(min(runs, key=key), runs, scores)


# ------------------------------------------------------------------------------------ estimator moments
@dataclass
class Moments:
    """Exact second moments of the difference ``F_xi(z) - F_xi(z_bar)`` (the same draw at both points) of the
    group-sampled estimator (one sample from every group) and of the one-level estimator (one sample
    ``(i, j)``, weighted by ``m``): what the variance-reduced methods' step sizes must absorb.

    ``w``: ``E ||dg_w||^2``; ``q_inf``: ``E ||dg_q||_inf^2`` (the norm of the paper's analysis);
    ``q_local``: ``E sum_i q_i dg_{q,i}^2``, the local norm of the entropy at ``q``, which is what an
    exponentiated-gradient step actually feels while ``eta ln(m) |dg_q|`` is small.
    """

    group_w: float
    group_q_inf: float
    group_q_local: float
    one_level_w: float
    one_level_q_inf: float
    one_level_q_local: float
    m: int
    D2: float
    lnm: float

    def total(self, estimator: str, norm: str) -> float:
        """``D^2 E||dg_w||^2 + ln m E||dg_q||^2`` in the ``inf`` or ``local`` q-norm (the dual norm of the
        distance-generating function of :mod:`~icml24.group_dro.mirror`)."""
        w = getattr(self, f"{estimator}_w")
        q = getattr(self, f"{estimator}_q_{norm}")
        return self.D2 * w + self.lnm * q

    def predicted_ifo_ratio(self, norm: str) -> float:
        """IFO(one-level) / IFO(ALEG) predicted by the variance-reduced mirror-prox bound
        ``IFO ~ cost_per_step * sqrt(K) * L / eps`` with ``L^2`` the measured second moment:
        ``sqrt(M_one / M_group) / sqrt(m)`` (one-level: ``K = N``, 1 IFO a step; ALEG: ``K = N / m``, ``m``)."""
        return math.sqrt(self.total("one_level", norm) / self.total("group", norm)) / math.sqrt(self.m)


def estimator_moments(problem: GroupProblem, w, q, w_bar, q_bar) -> Moments:
    """Exact :class:`Moments` of both estimators between ``z = (w, q)`` and ``z_bar = (w_bar, q_bar)``.

    Exact expectations over the draws (2 full passes, not counted as IFO): the one-level terms and every
    local-norm term in closed form; the group-sampled ``E max_i b_{i j_i}^2`` from the per-group
    distributions (the ``j_i`` are independent). Note ``one_level_q_local = m * group_q_local`` identically.
    """
    problem = check_problem(problem)
    m, geo = problem.m, Geometry(problem)
    points = {}
    for name, value, size in (("w", w, problem.dim), ("q", q, m), ("w_bar", w_bar, problem.dim),
                              ("q_bar", q_bar, m)):
        a = np.asarray(value, dtype=float)
        if a.shape != (size,) or not np.all(np.isfinite(a)):
            raise InputError(f"{name} must be a finite vector of length {size}")
        points[name] = a
    w, q, w_bar, q_bar = points["w"], points["q"], points["w_bar"], points["q_bar"]
    v1, g1 = problem.full_eval(w)
    v0, g0 = problem.full_eval(w_bar)
    group = problem.group_of
    b = v1 - v0  # per-sample q-block difference (up to sign)
    a = q[group, None] * g1 - q_bar[group, None] * g0  # per-sample w-block contribution
    a2 = problem.group_means(np.einsum("nd,nd->n", a, a))  # E_j ||a_ij||^2 per group
    mu = problem.group_means(a)  # E_j a_ij per group
    b2 = problem.group_means(b * b)  # E_j b_ij^2 per group
    group_w = float(np.sum(mu.sum(0) ** 2) + np.sum(a2 - np.einsum("id,id->i", mu, mu)))
    one_w = float(m * a2.sum())
    # E max_i b_{i j_i}^2 = integral of P(max > t): a step function between the sorted per-sample values
    sq = b * b
    levels = np.unique(np.concatenate([[0.0], sq]))
    cdf = np.ones(len(levels))
    for i in range(m):
        vals = np.sort(sq[problem.offsets[i]:problem.offsets[i] + problem.sizes[i]])
        cdf *= np.searchsorted(vals, levels, side="right") / len(vals)
    group_inf = float(np.sum(np.diff(levels) * (1.0 - cdf[:-1])))
    return Moments(group_w=group_w, group_q_inf=group_inf, group_q_local=float(q @ b2),
                   one_level_w=one_w, one_level_q_inf=float(m * b2.sum()), one_level_q_local=float(m * (q @ b2)),
                   m=m, D2=geo.D2, lnm=geo.lnm)


def moments_near(problem: GroupProblem, w, q, *, directions: int = 5, size: float = 0.01,
                 seed: int = 0) -> dict[str, float]:
    """:func:`estimator_moments` between ``z_bar = (w, q)`` and ``directions`` points ``(w + delta, q)`` with
    random ``||delta|| = size * D``, averaged: the predicted IFO ratio one-level / ALEG in the paper's norm
    (``pred_ratio_inf``) and in the entropy's local norm (``pred_ratio_local``), and the one-level / group
    ratios of the q-block (``q_inf_ratio``) and w-block (``w_ratio``) second moments."""
    problem = check_problem(problem)
    size = check_positive(size, "size", upper=1.0)
    rng = check_seed(seed)
    w = np.asarray(w, dtype=float)
    rows = []
    for _ in range(check_count(directions, "directions")):
        delta = rng.standard_normal(problem.dim)
        delta *= size * problem.domain.radius / np.linalg.norm(delta)
        mo = estimator_moments(problem, problem.domain.project(w + delta), q, w, q)
        rows.append((mo.predicted_ifo_ratio("inf"), mo.predicted_ifo_ratio("local"),
                     mo.one_level_q_inf / mo.group_q_inf, mo.one_level_w / mo.group_w))
    mean = np.mean(rows, axis=0)
    return {"pred_ratio_inf": float(mean[0]), "pred_ratio_local": float(mean[1]), "q_inf_ratio": float(mean[2]),
            "w_ratio": float(mean[3])}


def moments_near_aleg(problem: GroupProblem, gamma: float, *, epochs: int = 20, seed: int = 0) -> dict[str, float]:
    """:func:`moments_near` at the output of ``epochs`` epochs of ALEG with step factor ``gamma`` (sampling seed
    ``seed + 1``, directions seed ``seed``): the estimators' moments near the solution a run approaches."""
    near = aleg(problem, epochs=epochs, gamma=gamma, seed=seed + 1)
    return moments_near(problem, near.w, near.q, seed=seed)


# ------------------------------------------------------------------------------------------------- MERO
def worst_excess_risk(problem: GroupProblem, w: np.ndarray, optima: np.ndarray) -> float:
    """``max_i (R_i(w) - R_i^*)``, the MERO objective."""
    return float((problem.risks(w) - optima).max())


def tune_mero(problem: GroupProblem, method: str, *, budget: int, optima: np.ndarray, seed: int,
              grid: tuple[float, ...] = GRID) -> tuple[float, float, dict[float, float]]:
    """Best worst-excess-risk of ``alem`` or ``smd_mero`` at an IFO ``budget`` over the step grid.

    Returns ``(best value, its gamma, {gamma: value})``.
    """
    values = {}
    for g in grid:
        if method == "alem":
            res = alem(problem, max_ifo=budget, gamma=g, seed=seed)
        else:
            res = smd_mero(problem, max_ifo=budget, gamma=g, seed=seed)
        v = worst_excess_risk(problem, res.w, optima)
        values[g] = v if math.isfinite(v) else math.inf
    g_best = min(values, key=lambda g: (values[g], -g))
    return values[g_best], g_best, values


__all__ = ["GRID", "GDRO_METHODS", "Run", "Tuned", "measure", "tune", "pilot_gap", "Moments", "estimator_moments",
           "moments_near", "moments_near_aleg", "worst_excess_risk", "tune_mero"]
