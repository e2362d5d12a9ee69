"""ALEG (Algorithm 1) and ALEM (Algorithm 2) of Yu, Cai, Jiang and Zhang, ICML 2024 (arXiv 2403.03562).

ALEG solves empirical GDRO, ``min_{w in W} max_{q in Delta_m} sum_i q_i R_i(w)``, with a double-loop,
variance-reduced mirror prox (the Bregman variant of Alacaoglu and Malitsky 2022) in which

* the stochastic operator draws **one sample from every group** (``j_i ~ Unif[n_i]`` for all ``i``, cost
  ``m``), which keeps its Lipschitz constant ``O(L + G)`` instead of the one-level estimator's ``m``-fold
  larger q-block constant: :func:`group_sampled_operator`;
* **variance reduction is done for all groups** against a snapshot ``z_bar`` whose full operator ``F(z_bar)``
  is computed once per epoch (``N = sum_i n_i`` IFO): ``v = F(z_bar) + F_xi(z) - F_xi(z_bar)`` with the same
  ``j_i`` in both terms: :func:`vr_operator`;
* the **snapshot and the mirror snapshot** of epoch ``s`` are step-weighted averages of the epoch's iterates
  **shifted by one index** (``z_1 .. z_K`` weighted by ``eta_0 .. eta_{K-1}``, not ``z_0 .. z_{K-1}``): the
  snapshot in the primal space, the mirror snapshot in the dual (mirror) space, i.e. the normalised weighted
  geometric mean of the q iterates: :func:`snapshots`;
* the steps ``eta_k`` may vary with ``k`` inside an epoch;
* the output is the step-weighted ergodic average of the extrapolated points ``z_{k+1/2}`` of every epoch.

Every epoch costs ``N + m K`` per-sample gradient evaluations: the per-sample values and gradients at the
snapshot are stored during the full pass, so an inner step evaluates only the ``m`` new samples at
``z_{k+1/2}`` (the extrapolation step uses ``F(z_bar)`` alone and costs nothing).

Default steps: the theory step is far too small in practice (its ``L`` and ``G`` are worst-case bounds over W),
and the best fixed factor depends on the problem: on synthetic problems large factors are faster at first on
some but stall or drift back up on others, and a small ball favours smaller factors. So by default
(``gamma="auto"``) :func:`pilot_gamma` runs a tenth of the epochs (at most :data:`AUTO_PILOT_EPOCHS`) at each
factor of :data:`AUTO_GRID` (1 to 64, factor 4 apart) and keeps the largest one whose output's duality gap is
within :data:`AUTO_TOLERANCE` of the best; the pilots' IFO are counted in the result (40 % on top of a 100-epoch
run). ``gamma="theory"`` (0.99) gives the analysed step; any number gives that factor. The operator and its
estimators are in :mod:`~icml24.group_dro.operators`.

ALEM solves empirical MERO, ``min_w max_i [R_i(w) - R_i^*]``, in two stages: (1) for every group, ALEG with
``m = 1`` (a variance-reduced extragradient for that group's ERM) gives ``w_i`` and the estimate
``R~_i = R_i(w_i) >= R_i^*``; (2) ALEG on the shifted objective ``sum_i q_i (R_i(w) - R~_i)``.

Remaining guesses ([inferred]; the PDF's Algorithms 1 and 2 could not be read verbatim here):

* the distance-generating function ``||w - c||^2 / (2 D^2) + entropy(q) / ln m`` with ``c`` and ``D`` the centre
  and radius of W (:mod:`~icml24.group_dro.mirror`), and the derived constant ``L_F`` of the default step;
* IFO accounting: the snapshot's per-sample values and gradients are stored during its full pass, so an
  inner step costs ``m`` IFO (not ``2m``); the one-level baseline is counted the same way;
* the defaults ``K = ceil(n_bar)`` inner steps and ``alpha = 1 - 1/K`` (Alacaoglu and Malitsky's choice
  ``p = 1/K``; with it one epoch's inner loop costs about one full pass);
* the theory step ``eta = gamma * sqrt(1 - alpha) / L_F`` with ``gamma = 0.99`` (``gamma="theory"``) and
  ``L_F`` the derived Lipschitz constant of :meth:`Geometry.lipschitz_group_sampled`;
* the exact form of the one-index shift (weights ``eta_k`` on ``z_{k+1}``);
* the arithmetic (primal) ergodic average as the output for both blocks;
* the initial snapshot and mirror snapshot equal the starting point (centre of W, uniform q);
* ALEM: stage 1 runs ALEG with ``m = 1`` for the same number of epochs as stage 2 (or half of ``max_ifo``
  split over groups in proportion to ``n_i``), and ``R~_i`` is the exact risk of stage 1's output (one more
  pass over the group, counted).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import InputError
from ..validation import check_array, check_float, check_int, check_rng
from .domain import COUNT_MAX
from .mirror import Budget, Callback, Geometry, Result, check_offsets, check_problem, check_stop
from .operators import (  # noqa: F401 - importable from here as before
    Snapshot,
    draw_group_samples,
    full_operator,
    group_sampled_operator,
    one_level_vr_operator,
    snapshots,
    vr_operator,
)
from .problem import GroupProblem
from .reference import duality_gap

#: The analysed step factor (``gamma < 1`` in the convergence analysis): ``gamma="theory"``.
THEORY_GAMMA = 0.99
#: The step factors :func:`pilot_gamma` tries by default (``gamma="auto"``), factor 4 apart; larger ones are
#: faster at first on some synthetic problems but stall or drift back up in long runs (module docstring).
AUTO_GRID: tuple[float, ...] = (1.0, 4.0, 16.0, 64.0)
#: Epochs of every pilot run of :func:`pilot_gamma` (an epoch is about ``2 N`` IFO); ``aleg(gamma="auto")``
#: runs a tenth of its own epochs, between 1 and this many.
AUTO_PILOT_EPOCHS = 10
#: :func:`pilot_gamma` keeps the largest factor whose pilot gap is within this multiple of the best one: in a
#: short pilot the larger steps' gaps are often still on the same initial plateau.
AUTO_TOLERANCE = 1.1
#: The stochastic estimators :func:`aleg` can use in its update (``estimator=``).
ESTIMATORS: tuple[str, ...] = ("group", "one_level", "full")


# ------------------------------------------------------------------------------------------- step pilot
def pilot_gamma(
    problem: GroupProblem,
    *,
    grid: Sequence[float] = AUTO_GRID,
    epochs: int = AUTO_PILOT_EPOCHS,
    inner: int | None = None,
    alpha: float | None = None,
    w0: np.ndarray | None = None,
    risk_offsets=None,
    seed: int = 0,
) -> tuple[float, dict[float, float], int]:
    """The step factor of ``aleg(problem, gamma="auto")``: a short pilot run of ALEG at every factor of ``grid``.

    Every pilot runs ``epochs`` epochs from the same start with the same sampling seed and is scored by the
    duality gap of its output (:func:`~icml24.group_dro.reference.duality_gap`, not counted as IFO); the
    largest factor whose gap is within :data:`AUTO_TOLERANCE` of the smallest wins. The grid's top, 64 by
    default, is a ceiling measured on synthetic problems (the module docstring): larger factors can look
    better in a short pilot and stall later. For a longer search on a finer grid, to a target gap, see
    :func:`icml24.group_dro.tuning.tune`.

    Parameters
    ----------
    problem : GroupProblem
    grid : sequence of float, default :data:`AUTO_GRID`
        Positive step factors (relative to the theory step ``sqrt(1 - alpha) / L_F``).
    epochs : int, default :data:`AUTO_PILOT_EPOCHS`
        Epochs of every pilot.
    inner, alpha, w0, risk_offsets
        As in :func:`aleg`.
    seed : int or numpy.random.Generator, default 0
        Seed of the pilots' group sampling.

    Returns
    -------
    gamma : float
        The chosen factor.
    scores : dict of float to float
        The duality gap of every pilot's output (inf: not finite).
    ifo : int
        Per-sample gradient evaluations spent by the pilots.
    """
    problem = check_problem(problem)
    epochs = check_int(epochs, "epochs", min_val=1)
    grid = check_array(grid, "grid", ndim=1)
    factors = [check_float(g, "grid entries", min_val=0.0, include_boundaries="right") for g in grid]
    offsets = check_offsets(risk_offsets, problem.m)
    if w0 is not None:
        w0 = Geometry(problem).start(w0)[0]
    return _pilot(problem, _copy_rng(check_rng(seed)), factors, epochs, inner, alpha, w0, offsets)


def _pilot(
    problem, rng, factors, epochs, inner, alpha, w0, offsets, estimator: str = "group"
) -> tuple[float, dict[float, float], int]:
    state = rng.bit_generator.state  # every pilot draws the same samples
    scores, ifo = {}, 0
    for g in factors:
        rng.bit_generator.state = state
        res = _aleg(
            problem,
            rng,
            epochs=epochs,
            max_ifo=None,
            inner=inner,
            alpha=alpha,
            gamma=g,
            steps=None,
            w0=w0,
            risk_offsets=offsets,
            callback=None,
            estimator=estimator,
        )
        gap = duality_gap(problem, res.w, res.q, offsets=offsets)
        scores[g] = gap if math.isfinite(gap) else math.inf
        ifo += res.ifo
    low = min(scores.values())
    best = max(g for g in factors if scores[g] <= AUTO_TOLERANCE * low) if math.isfinite(low) else min(factors)
    return best, scores, ifo


# ------------------------------------------------------------------------------------------------ ALEG
def aleg(
    problem: GroupProblem,
    *,
    epochs: int | None = None,
    max_ifo: int | None = None,
    inner: int | None = None,
    alpha: float | None = None,
    gamma: float | str = "auto",
    steps: Sequence[float] | None = None,
    w0: np.ndarray | None = None,
    risk_offsets=None,
    seed: int = 0,
    callback: Callback | None = None,
    estimator: str = "group",
) -> Result:
    """ALEG (Algorithm 1): variance-reduced mirror prox with group sampling for empirical GDRO.

    Parameters
    ----------
    problem : GroupProblem
    epochs : int, optional
        Number of outer iterations ``S`` (default 100 when ``max_ifo`` is not given either).
    max_ifo : int, optional
        Stop at the first epoch boundary where this many per-sample gradients have been used (the pilots of
        ``gamma="auto"`` included: each takes about a tenth of it, at least one epoch, and the run itself
        makes at least one epoch).
    inner : int, optional
        Inner-loop length ``K`` (default ``ceil(n_bar)``, [inferred]).
    alpha : float, optional
        Anchor weight in ``[0, 1)`` (default ``1 - 1/K``, [inferred]).
    gamma : float or {"auto", "theory"}, default "auto"
        Step factor: ``eta = gamma * sqrt(1 - alpha) / L_F``. ``"theory"`` is :data:`THEORY_GAMMA` (0.99: the
        convergence analysis needs ``gamma < 1``; far too small in practice, see the module docstring); ``"auto"``
        picks a factor of :data:`AUTO_GRID` by :func:`pilot_gamma` (its IFO are counted in the result and the chosen
        factor is ``info["gamma"]``); a number is used as given.
    steps : sequence of float, optional
        Non-constant steps ``eta_0 .. eta_{K-1}`` used in every epoch (overrides ``gamma``).
    w0 : numpy.ndarray, optional
        Starting point (default the centre of W); q starts uniform.
    risk_offsets : array-like of shape (m,), optional
        Constants ``c_i`` subtracted from the group risks (ALEM's second stage), default 0.
    seed : int or numpy.random.Generator, default 0
        Seed of the group sampling (the pilots of ``gamma="auto"`` draw from a copy of the same stream: with
        an int seed the run equals ``aleg(..., gamma=info["gamma"])`` apart from the IFO count).
    callback : callable, optional
        ``callback(ifo, w_out, q_out) -> bool`` at the end of every epoch; True stops the run.
    estimator : {"group", "one_level", "full"}, default "group"
        The estimator of the update step. ``"group"`` is ALEG's (:func:`vr_operator`, ``m`` IFO a step); the
        others are ablations with everything else unchanged: ``"one_level"`` is the one-level estimator
        (:func:`one_level_vr_operator`, 1 IFO), ``"full"`` the exact operator ``F(z_{k+1/2})`` (``N`` IFO, zero
        variance). The step's ``L_F`` is the group-sampled one for all three.

    Returns
    -------
    Result
        The step-weighted ergodic average of the ``z_{k+1/2}``, the IFO count, the trace of epoch ends, and in
        ``info`` the epochs run, ``K``, ``alpha``, ``eta``, ``L_F``, ``gamma`` (nan with ``steps``),
        ``pilot_ifo`` and ``pilot_scores`` (``gamma="auto"``) and ``estimator``.

    Raises
    ------
    InputError
        On bad arguments, or when the problem's Lipschitz constant ``L_F`` is 0 or not finite and no ``steps``
        are given.

    References
    ----------
    Yu, Cai, Jiang, Zhang, "Efficient algorithms for empirical group distributionally robust optimization and
    beyond", ICML 2024, Algorithm 1; Alacaoglu, Malitsky, COLT 2022 (the variance-reduced mirror prox).
    """
    problem = check_problem(problem)
    rng = check_rng(seed)
    return _aleg(
        problem,
        rng,
        epochs=epochs,
        max_ifo=max_ifo,
        inner=inner,
        alpha=alpha,
        gamma=gamma,
        steps=steps,
        w0=w0,
        risk_offsets=risk_offsets,
        callback=callback,
        estimator=estimator,
    )


def _check_gamma(gamma, name: str = "gamma") -> float | str:
    if isinstance(gamma, str):
        if gamma not in ("auto", "theory"):
            raise InputError(f"{name} must be a positive number, 'auto' or 'theory', got {gamma!r}")
        return THEORY_GAMMA if gamma == "theory" else gamma
    return check_float(gamma, name, min_val=0.0, include_boundaries="right")


def _aleg(
    problem: GroupProblem,
    rng: np.random.Generator,
    *,
    epochs,
    max_ifo,
    inner,
    alpha,
    gamma,
    steps,
    w0,
    risk_offsets,
    callback,
    ifo0: int = 0,
    estimator: str = "group",
) -> Result:
    epochs, max_ifo = check_stop(epochs, max_ifo, 100)
    if estimator not in ESTIMATORS:
        raise InputError(f"estimator must be one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    geo = Geometry(problem)
    m, N = problem.m, problem.n_total
    K = check_int(inner, "inner", min_val=1, max_val=COUNT_MAX, allow_none=True) or int(math.ceil(N / m))
    if alpha is None:
        alpha = 1.0 - 1.0 / K
    alpha = check_float(alpha, "alpha", min_val=0.0, max_val=1.0, include_boundaries="left")
    offsets = check_offsets(risk_offsets, m)
    budget = Budget(max_ifo, callback)  # validates both before any pilot runs
    pilot_ifo, pilot_scores = 0, {}
    if steps is None:
        gamma = _check_gamma(gamma)
        L_F = geo.lipschitz_group_sampled()  # raises InputError when 0 or not finite
        if gamma == "auto":
            start = w0 if w0 is None else geo.start(w0)[0]
            epoch_cost = N + {"group": m, "one_level": 1, "full": N}[estimator] * K
            # a tenth of the run's epochs for every pilot (at most AUTO_PILOT_EPOCHS, at least 1)
            length = epochs if epochs is not None else max((max_ifo - ifo0) // epoch_cost, 1)
            if max_ifo is not None and epochs is not None:
                length = min(length, max((max_ifo - ifo0) // epoch_cost, 1))
            pilot_epochs = int(min(AUTO_PILOT_EPOCHS, max(length // 10, 1)))
            gamma, pilot_scores, pilot_ifo = _pilot(
                problem, _copy_rng(rng), AUTO_GRID, pilot_epochs, inner, alpha, start, offsets, estimator
            )
            ifo0 += pilot_ifo
            if max_ifo is not None:  # at least one epoch after the pilots
                budget.max_ifo = max(max_ifo, ifo0 + 1)
        eta = gamma * math.sqrt(1.0 - alpha) / L_F
        etas = np.full(K, eta)
    else:
        L_F, gamma = math.nan, math.nan
        etas = check_array(steps, "steps", ndim=1, shape=(K,))
        if not np.all(etas > 0):
            raise InputError(f"steps must be {K} positive finite numbers (one per inner iteration)")

    w, lq = geo.start(w0)
    snap_w, snap_q, hat_lq = w.copy(), np.exp(lq), lq.copy()  # z_bar_0 = z_hat_0 = z_0 [inferred]
    out_w, out_q, out_eta = np.zeros_like(w), np.zeros(m), 0.0
    ifo, s = ifo0, 0
    step_cost = {"group": m, "one_level": 1, "full": N}[estimator]
    while (epochs is None or s < epochs) and not budget.exhausted(ifo):
        snap = Snapshot(problem, snap_w, snap_q, offsets)  # the snapshot's full operator F(z_bar)
        ifo += N
        if estimator == "group":
            draws = draw_group_samples(problem, rng, K)
        elif estimator == "one_level":
            groups = rng.integers(0, m, size=K)
            draws = problem.offsets[groups] + (rng.random(K) * problem.sizes[groups]).astype(np.int64)
        ws, lqs = np.empty((K, problem.dim)), np.empty((K, m))
        hat_w = snap_w  # the w-block's mirror snapshot equals its snapshot
        for k in range(K):
            eta = etas[k]
            base_w = alpha * w + (1.0 - alpha) * hat_w
            base_lq = alpha * lq + (1.0 - alpha) * hat_lq
            w_half, lq_half = geo.step(base_w, base_lq, snap.F_w, snap.F_q, eta)  # extrapolation with F(z_bar)
            q_half = np.exp(lq_half)
            if estimator == "group":
                g_w, g_q = vr_operator(problem, snap, w_half, q_half, draws[k])  # variance-reduced estimate
            elif estimator == "one_level":
                g_w, g_q = one_level_vr_operator(problem, snap, w_half, q_half, int(groups[k]), int(draws[k]))
            else:
                g_w, g_q = full_operator(problem, w_half, q_half, offsets)
            w, lq = geo.step(base_w, base_lq, g_w, g_q, eta)  # update
            ws[k], lqs[k] = w, lq
            out_w += eta * w_half
            out_q += eta * q_half
            out_eta += eta
        ifo += step_cost * K
        snap_w, snap_q, hat_lq = snapshots(etas, ws, lqs)  # one-index-shifted weighted averages
        s += 1
        budget.checkpoint(ifo, out_w / out_eta, out_q / out_eta)
    info = {"epochs": s, "inner": K, "alpha": alpha, "eta": float(etas[0]), "L_F": L_F, "gamma": gamma}
    info.update({"estimator": estimator, "pilot_ifo": pilot_ifo, "pilot_scores": pilot_scores})
    return Result(out_w / out_eta, out_q / out_q.sum(), ifo, budget.trace, info)


def _copy_rng(rng: np.random.Generator) -> np.random.Generator:
    """A generator that continues ``rng``'s stream without advancing ``rng`` itself."""
    bg = type(rng.bit_generator)()
    bg.state = rng.bit_generator.state
    return np.random.Generator(bg)


# ------------------------------------------------------------------------------------------------ ALEM
def alem(
    problem: GroupProblem,
    *,
    epochs: int | None = None,
    max_ifo: int | None = None,
    stage1_epochs: int | None = None,
    inner: int | None = None,
    gamma: float | str = "auto",
    stage1_gamma: float | str | None = None,
    w0: np.ndarray | None = None,
    seed: int = 0,
    callback: Callback | None = None,
) -> Result:
    """ALEM (Algorithm 2): two-stage ALEG for empirical minimax excess risk optimisation (MERO).

    Stage 1 estimates every ``R_i^* = min_W R_i`` by ALEG with ``m = 1`` on group ``i`` alone; stage 2 runs
    ALEG on ``max_q sum_i q_i (R_i(w) - R~_i)``.

    Parameters
    ----------
    problem : GroupProblem
    epochs : int, optional
        Stage-2 epochs (default 100 unless ``max_ifo`` is given).
    max_ifo : int, optional
        Total budget; half of it goes to stage 1, split over groups in proportion to ``n_i`` ([inferred]
        split), the rest to stage 2.
    stage1_epochs : int, optional
        Epochs of every stage-1 run (default ``epochs``).
    inner : int, optional
        As in :func:`aleg`, for stage 2 (``inner`` of stage 1 is ``n_i``).
    gamma : float or {"auto", "theory"}, default "auto"
        Step factor of stage 2, as in :func:`aleg` (``"auto"``: a pilot on the shifted problem, counted).
    stage1_gamma : float or {"auto", "theory"}, optional
        Step factor of every stage-1 run (default ``gamma``; ``"auto"`` pilots every group's run).
    w0 : numpy.ndarray, optional
        Starting point of every run (default the centre of W).
    seed : int or numpy.random.Generator, default 0
        Seed of the group sampling (split over the runs).
    callback : callable, optional
        Called at the end of every stage-2 epoch with the total IFO so far.

    Returns
    -------
    Result
        As :func:`aleg`, with ``info["risk_estimates"]`` (the ``R~_i``) and ``info["stage1_ifo"]``.

    References
    ----------
    Yu, Cai, Jiang, Zhang, ICML 2024, Algorithm 2.
    """
    problem = check_problem(problem)
    rng = check_rng(seed)
    epochs, max_ifo = check_stop(epochs, max_ifo, 100)
    stage1_epochs = check_int(stage1_epochs, "stage1_epochs", min_val=1, allow_none=True)
    gamma = _check_gamma(gamma)
    g1 = gamma if stage1_gamma is None else _check_gamma(stage1_gamma, "stage1_gamma")
    m = problem.m
    seeds = rng.spawn(m + 1)
    estimates = np.empty(m)
    ifo = 0
    for i in range(m):
        sub = problem.subproblem(i)
        if max_ifo is not None:
            share = max(int(max_ifo // 2 * problem.sizes[i] / problem.n_total), 1)
            res = _aleg(
                sub,
                seeds[i],
                epochs=stage1_epochs,
                max_ifo=share,
                inner=None,
                alpha=None,
                gamma=g1,
                steps=None,
                w0=w0,
                risk_offsets=None,
                callback=None,
            )
        else:
            res = _aleg(
                sub,
                seeds[i],
                epochs=stage1_epochs or epochs,
                max_ifo=None,
                inner=None,
                alpha=None,
                gamma=g1,
                steps=None,
                w0=w0,
                risk_offsets=None,
                callback=None,
            )
        estimates[i] = float(sub.risks(res.w)[0])  # one more pass over the group (counted below)
        ifo += res.ifo + int(problem.sizes[i])
    stage1 = ifo
    rest = None if max_ifo is None else max(max_ifo - ifo, 1)
    res = _aleg(
        problem,
        seeds[m],
        epochs=epochs,
        max_ifo=None if rest is None else rest + ifo,
        inner=inner,
        alpha=None,
        gamma=gamma,
        steps=None,
        w0=w0,
        risk_offsets=estimates,
        callback=callback,
        ifo0=ifo,
    )
    res.info.update({"risk_estimates": estimates, "stage1_ifo": stage1})
    return res


__all__ = [
    "aleg",
    "alem",
    "full_operator",
    "group_sampled_operator",
    "vr_operator",
    "one_level_vr_operator",
    "pilot_gamma",
    "THEORY_GAMMA",
    "AUTO_GRID",
    "AUTO_PILOT_EPOCHS",
    "AUTO_TOLERANCE",
    "ESTIMATORS",
    "draw_group_samples",
    "Snapshot",
    "snapshots",
]
