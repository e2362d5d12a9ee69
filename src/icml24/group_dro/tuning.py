"""Methods measured in the paper's currency, per-sample gradient evaluations (IFO) to reach a duality gap, and
every method's step tuned by one procedure (:func:`tune`): the tools the claims, the benchmark and a user who
compares their own methods share.

Every method's step is ``gamma`` times its own theory step (ALEG and the one-level method: ``gamma sqrt(1 -
alpha) / L``; mirror prox: ``gamma / L``; SMD and online GroupDRO: ``gamma sqrt(2 Omega) / (M sqrt(.))``). The
theory's worst-case constants are loose by different factors for different methods, so every method's
``gamma`` is tuned on the same grid :data:`GRID` by the same procedure (:func:`tune`):

1. pilot runs to ``pilot`` IFO, scored by the duality gap of their output there: every value of the coarse
   grid :data:`GRID` (factor 4 apart), then the two neighbours of the best at factor 2, then at factor
   sqrt(2) (eleven pilots in all);
2. full runs of the ``keep`` best values (and up to ``extra`` more while none reaches the target), best
   first, each stopped as soon as its gap reaches the target, or
   when it cannot beat the best IFO found so far (or a rival's, ``stop_ifo``: in the claims' race, ALEG's), or
   when its gap exceeds ``diverge`` times its best gap.

The gap is evaluated on a geometric IFO schedule (every ``resolution`` = 5 % of IFO, at least one pass), the
same for every method, so IFO-to-target is measured to within 5 %. :func:`tune_mero` tunes the MERO variants on
the worst excess risk (:func:`worst_excess_risk`).

:func:`tune` is also the tool for a user who wants a method's best step to a target gap (``aleg``'s own default,
``gamma="auto"``, is a cheaper pilot: :func:`~icml24.group_dro.aleg.pilot_gamma`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import InputError
from ..validation import check_float, check_int
from .aleg import aleg, alem
from .baselines import mirror_prox, one_level_vr, online_group_dro, smd, smd_mero
from .mirror import check_problem
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
    return online_group_dro(
        problem,
        max_ifo=max_ifo,
        horizon=max(1, horizon // problem.m),
        gamma=gamma,
        seed=seed,
        callback=callback,
        output="average",
    )


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
    """One run of :func:`measure`.

    Attributes
    ----------
    method : str
        A name of :data:`GDRO_METHODS`.
    gamma : float
        Its step factor.
    hits : dict of float to float
        The IFO at which each target gap was first reached (inf: not reached within the budget).
    curve : list of (int, float)
        The measured ``(ifo, gap)`` points.
    final_gap : float
        The gap of the last output.
    seconds : float
        Wall time.
    """

    method: str
    gamma: float
    hits: dict[float, float]
    curve: list[tuple[int, float]] = field(default_factory=list)
    final_gap: float = math.inf
    seconds: float = 0.0


def measure(
    problem: GroupProblem,
    method: str,
    gamma: float,
    *,
    targets: tuple[float, ...],
    max_ifo: int,
    seed: int,
    horizon: int | None = None,
    resolution: float = 0.05,
    diverge: float = 10.0,
    stop_ifo: float = math.inf,
) -> Run:
    """Run ``method`` with step factor ``gamma`` and record when its output's duality gap reaches each target.

    Stops at the smallest target, at ``max_ifo``, past ``stop_ifo`` (a better run already reached the
    smallest target there), or when the gap exceeds ``diverge`` times its best value (a diverging step).

    Parameters
    ----------
    problem : GroupProblem
    method : str
        A name of :data:`GDRO_METHODS`.
    gamma : float
        Step factor relative to the method's theory step.
    targets : tuple of float
        Duality gaps to record.
    max_ifo : int
        Budget.
    seed : int
        Sampling seed.
    horizon : int, optional
        The horizon constant-step methods set their steps for (default ``max_ifo``).
    resolution : float, default 0.05
        Relative IFO spacing of the gap evaluations (at least one pass apart).
    diverge : float, default 10.0
        Stop when the gap exceeds this multiple of its best value.
    stop_ifo : float, default inf
        Stop past this IFO.

    Returns
    -------
    Run
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
    """The duality gap of ``method``'s output after ``budget`` IFO (the pilot score of :func:`tune`).

    Parameters
    ----------
    problem : GroupProblem
    method : str
        A name of :data:`GDRO_METHODS`.
    gamma : float
        Step factor.
    budget : int
        IFO of the pilot run.
    horizon : int
        The horizon constant-step methods set their steps for.
    seed : int
        Sampling seed.

    Returns
    -------
    float
        The gap (inf when the run diverged).
    """
    res = GDRO_METHODS[method](problem, gamma, budget, horizon, seed, None)
    g = duality_gap(problem, res.w, res.q)
    return g if math.isfinite(g) else math.inf


@dataclass
class Tuned:
    """The result of :func:`tune`.

    Attributes
    ----------
    best : Run
        The run that reached the smallest target with the fewest IFO (else the smallest final gap).
    runs : list of Run
        Every full run made.
    pilot : dict of float to float
        The pilot score of every step factor tried.
    """

    best: Run
    runs: list[Run]
    pilot: dict[float, float]

    def ifo(self, target: float) -> float:
        """The best run's IFO to ``target`` (inf: not reached)."""
        return self.best.hits.get(check_float(target, "target", min_val=0.0, include_boundaries="right"), math.inf)


def _positive_floats(values, name: str) -> tuple[float, ...]:
    """A non-empty sequence of positive finite numbers, as a tuple of floats."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InputError(f"{name} must be a sequence of positive numbers, got {type(values).__name__}")
    out = tuple(check_float(v, name, min_val=0.0, include_boundaries="right") for v in values)
    if not out:
        raise InputError(f"{name} is empty", "give at least one positive number")
    return out


def tune(
    problem: GroupProblem,
    method: str,
    *,
    targets: tuple[float, ...],
    max_ifo: int,
    pilot: int,
    seed: int,
    grid: tuple[float, ...] = GRID,
    keep: int = 3,
    extra: int = 2,
    stop_ifo: float = math.inf,
) -> Tuned:
    """IFO for ``method`` to reach ``min(targets)``, with ``gamma`` tuned on ``grid`` (see the module docstring).

    Parameters
    ----------
    problem : GroupProblem
    method : str
        A name of :data:`GDRO_METHODS`.
    targets : tuple of float
        Duality gaps to record; the smallest is the one tuned for.
    max_ifo : int
        Budget of every full run.
    pilot : int
        Budget of every pilot run.
    seed : int
        Sampling seed, the same for every run.
    grid : tuple of float, default :data:`GRID`
        The coarse step factors.
    keep : int, default 3
        Full runs of the best pilots.
    extra : int, default 2
        Further full runs while none has reached the target.
    stop_ifo : float, default inf
        Stop every full run past this IFO (a race against a method that reached the target there: a run
        that has not reached it by then loses whatever it does later, and is recorded as not reaching it).

    Returns
    -------
    Tuned
    """
    problem = check_problem(problem)
    if not isinstance(method, str) or method not in GDRO_METHODS:
        raise InputError(f"unknown method {method!r}", f"choose one of: {', '.join(GDRO_METHODS)}")
    targets = _positive_floats(targets, "targets")
    grid = _positive_floats(grid, "grid")
    max_ifo = check_int(max_ifo, "max_ifo", min_val=1)
    pilot = check_int(pilot, "pilot", min_val=1)
    if not isinstance(seed, np.random.Generator):
        seed = check_int(seed, "seed", min_val=0)
    keep = check_int(keep, "keep", min_val=1)
    extra = check_int(extra, "extra", min_val=0)
    if not (isinstance(stop_ifo, (int, float)) and not isinstance(stop_ifo, bool) and stop_ifo > 0):
        raise InputError(f"stop_ifo must be a positive number (inf: no limit), got {stop_ifo!r}")
    stop_ifo = float(stop_ifo)
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
        stop = min(best_ifo, stop_ifo)
        run = measure(problem, method, g, targets=targets, max_ifo=max_ifo, seed=seed, horizon=max_ifo, stop_ifo=stop)
        runs.append(run)
        best_ifo = min(best_ifo, run.hits[smallest])

    def key(r: Run):
        return (r.hits[smallest], r.final_gap if r.hits[smallest] == math.inf else 0.0)

    return Tuned(min(runs, key=key), runs, scores)


# ------------------------------------------------------------------------------------------------- MERO
def worst_excess_risk(problem: GroupProblem, w: np.ndarray, optima: np.ndarray) -> float:
    """``max_i (R_i(w) - R_i^*)``, the MERO objective.

    Parameters
    ----------
    problem : GroupProblem
    w : numpy.ndarray of shape (dim,)
    optima : numpy.ndarray of shape (m,)
        The ``R_i^*`` (:func:`~icml24.group_dro.reference.group_optima`).

    Returns
    -------
    float
    """
    return float((problem.risks(w) - optima).max())


def tune_mero(
    problem: GroupProblem, method: str, *, budget: int, optima: np.ndarray, seed: int, grid: tuple[float, ...] = GRID
) -> tuple[float, float, dict[float, float]]:
    """Best worst-excess-risk of ``alem`` or ``smd_mero`` at an IFO ``budget`` over the step grid.

    Parameters
    ----------
    problem : GroupProblem
    method : {"alem", "smd_mero"}
    budget : int
        IFO budget of every run.
    optima : numpy.ndarray of shape (m,)
        The ``R_i^*``.
    seed : int
        Sampling seed.
    grid : tuple of float, default :data:`GRID`

    Returns
    -------
    (float, float, dict of float to float)
        The best value, its gamma and every ``{gamma: value}``.
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


__all__ = ["GDRO_METHODS", "GRID", "Run", "Tuned", "measure", "pilot_gap", "tune", "tune_mero", "worst_excess_risk"]
