"""The peers ALEG and ALEM are compared with, on the same problems, setup and IFO accounting.

* :func:`smd`: stochastic mirror descent for GDRO (Nemirovski et al. 2009; Zhang et al. NeurIPS 2023): one
  sample per group per step (``m`` IFO), steps ``eta_t = gamma sqrt(2 Omega) /
  (M sqrt(t + 1))`` (the anytime form of the robust SA step; ``Omega = 3/2`` is the range of the
  distance-generating function, ``M^2 = D^2 G^2 + ln m B^2`` bounds the estimator's dual norm), output the
  step-weighted average. ``O(m ln m / eps^2)`` samples; no use of the finite sum.
* :func:`one_level_vr`: the variance-reduced mirror prox of Alacaoglu and Malitsky (COLT 2022, the Bregman
  double-loop variant) applied to the *one-level* finite sum: each inner step draws a single ``(i, j)``
  (``i ~ Unif[m]``, ``j ~ Unif[n_i]``) and weights it by ``m``; inner length ``K = N``, ``alpha = 1 - 1/K``,
  ``tau = gamma sqrt(1 - alpha) / L_one``. Its estimator's q-block is ``m``-fold larger, the reason ALEG wins
  by ``sqrt(m)`` in the paper's analysis. Snapshot: the average of ``z_1..z_K``; mirror snapshot: its dual average.
* :func:`mirror_prox`: deterministic mirror prox (Nemirovski 2004), two full passes per step (``2N`` IFO),
  ``eta = gamma / L_F``, output the average of the extrapolated points.
* :func:`online_group_dro`: the online GroupDRO of Sagawa et al. (ICLR 2020, Algorithm 1) with one sample of
  every group per step (their minibatch form): exponentiated-gradient ascent on ``q`` with the new losses,
  then a projected SGD step on ``w`` weighted by the *updated* ``q``; constant steps; output the last
  iterate (``output="average"`` gives the running average instead).
* :func:`smd_mero`: the two-stage SMD approach to MERO (Agarwal and Zhang 2022's reduction, with SMD as in
  Zhang et al. 2023): projected SGD on every group to estimate ``R_i^*``, then :func:`smd` on the shifted
  risks. ``O(m ln m / eps^2)``.

Every function counts per-sample gradient evaluations exactly as ALEG does, validates its arguments like
:func:`~icml24.group_dro.aleg.aleg`, and returns a :class:`~icml24.group_dro.mirror.Result`. Their default
``gamma`` is the theory's (``1``, or ``0.99`` where a strict inequality is required); the claims tune
``gamma`` for every method on the same grid.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..validation import check_float, check_int, check_rng
from .domain import COUNT_MAX
from .glm_losses import SCALAR_LOSSES
from .mirror import Budget, Callback, Geometry, Result, check_offsets, check_problem, check_stop
from .operators import Snapshot, draw_group_samples, snapshots
from .problem import GroupProblem

_OMEGA = 1.5  # range of ||w - c||^2 / (2 D^2) + (entropy + ln m) / ln m over W x Delta_m


def _every(problem: GroupProblem, record_every: int | None) -> int:
    """Iterations between checkpoints of the single-loop methods: about one pass (``N`` IFO)."""
    if record_every is not None:
        return check_int(record_every, "record_every", min_val=1, allow_none=True)
    return max(1, int(math.ceil(problem.n_total / problem.m)))


# ------------------------------------------------------------------------------------------------- SMD
def smd(
    problem: GroupProblem,
    *,
    iterations: int | None = None,
    max_ifo: int | None = None,
    gamma: float = 1.0,
    w0: np.ndarray | None = None,
    risk_offsets=None,
    seed: int = 0,
    record_every: int | None = None,
    callback: Callback | None = None,
) -> Result:
    """Stochastic mirror descent for (empirical) GDRO with one sample per group per iteration.

    Parameters
    ----------
    problem : GroupProblem
    iterations : int, optional
        Number of iterations (``m`` IFO each); default ``100 N / m`` when ``max_ifo`` is not given either.
    max_ifo : int, optional
        Stop once this many per-sample gradients have been used.
    gamma : float, default 1.0
        Step factor: ``eta_t = gamma sqrt(2 Omega) / (M sqrt(t + 1))`` (the robust SA step for ``gamma = 1``).
    w0 : numpy.ndarray, optional
        Starting point (default the centre of W); q starts uniform.
    risk_offsets : array-like of shape (m,), optional
        Constants ``c_i`` subtracted from the group risks (the second stage of :func:`smd_mero`).
    seed : int or numpy.random.Generator, default 0
        Seed of the sampling.
    record_every : int, optional
        Iterations between checkpoints (default ``ceil(N / m)``, one pass).
    callback : callable, optional
        ``callback(ifo, w_out, q_out) -> bool`` at every checkpoint; True stops the run.

    Returns
    -------
    Result
        The output point, the IFO used and the trace of checkpoints.

    References
    ----------
    Nemirovski, Juditsky, Lan, Shapiro, "Robust stochastic approximation approach to stochastic programming",
    SIAM J. Optim. 2009; Zhang et al., "Stochastic approximation approaches to group distributionally robust
    optimization", NeurIPS 2023.
    """
    problem = check_problem(problem)
    rng = check_rng(seed)
    return _smd(
        problem,
        rng,
        iterations=iterations,
        max_ifo=max_ifo,
        gamma=gamma,
        w0=w0,
        risk_offsets=risk_offsets,
        record_every=record_every,
        callback=callback,
    )


def _smd(problem, rng, *, iterations, max_ifo, gamma, w0, risk_offsets, record_every, callback, ifo0=0):
    iterations, max_ifo = check_stop(iterations, max_ifo, 100 * _every(problem, None), "iterations")
    gamma = check_float(gamma, "gamma", min_val=0.0, include_boundaries="right")
    every = _every(problem, record_every)
    offsets = check_offsets(risk_offsets, problem.m)
    geo = Geometry(problem)
    M = geo.gradient_bound()
    budget = Budget(max_ifo, callback)
    m = problem.m
    w, lq = geo.start(w0)
    out_w, out_q, out_eta = np.zeros_like(w), np.zeros(m), 0.0
    ifo, t = ifo0, 0
    while (iterations is None or t < iterations) and not budget.exhausted(ifo):
        chunk = every if iterations is None else min(every, iterations - t)
        draws = draw_group_samples(problem, rng, chunk)
        for k in range(chunk):
            eta = gamma * math.sqrt(2 * _OMEGA) / (M * math.sqrt(t + 1))
            q = np.exp(lq)
            val, grad = problem._evaluate(w, draws[k])
            g_q = -(val if offsets is None else val - offsets)
            out_w += eta * w
            out_q += eta * q
            out_eta += eta
            w, lq = geo.step(w, lq, q @ grad, g_q, eta)
            t += 1
        ifo += m * chunk
        budget.checkpoint(ifo, out_w / out_eta, out_q / out_eta)
    return Result(out_w / out_eta, out_q / out_q.sum(), ifo, budget.trace, {"iterations": t, "M": M})


# ---------------------------------------------------------------------------------------- one-level VR
def one_level_operator(
    problem: GroupProblem, w: np.ndarray, q: np.ndarray, i: int, pos: int
) -> tuple[np.ndarray, np.ndarray]:
    """The one-level estimator at sample position ``pos`` of group ``i`` (1 IFO).

    ``(m q_i grad l(w; xi_ij), -m l(w; xi_ij) e_i)``; unbiased for ``F`` when ``i ~ Unif[m]``, ``j ~ Unif[n_i]``.
    :func:`one_level_vr` inlines this formula in its inner loop.

    Parameters
    ----------
    problem : GroupProblem
        The ``m`` groups and their per-sample oracle.
    w : numpy.ndarray
        ``(d,)`` model.
    q : numpy.ndarray
        ``(m,)`` group weights on the simplex.
    i : int
        The sampled group.
    pos : int
        The sample's position in the concatenated samples (inside group ``i``).

    Returns
    -------
    g_w : numpy.ndarray
        ``(d,)``: ``m q_i grad l(w; xi_ij)``.
    g_q : numpy.ndarray
        ``(m,)``: ``-m l(w; xi_ij)`` at index ``i``, zero elsewhere.
    """
    val, grad = problem._evaluate(w, np.array([pos]))
    g_q = np.zeros(problem.m)
    g_q[i] = -problem.m * val[0]
    return problem.m * q[i] * grad[0], g_q


def one_level_vr(
    problem: GroupProblem,
    *,
    epochs: int | None = None,
    max_ifo: int | None = None,
    inner: int | None = None,
    alpha: float | None = None,
    gamma: float = 0.99,
    w0: np.ndarray | None = None,
    seed: int = 0,
    callback: Callback | None = None,
) -> Result:
    """Alacaoglu-Malitsky variance-reduced mirror prox on the one-level finite sum (one sample per step).

    Same anchored prox steps, snapshots and output as :func:`~icml24.group_dro.aleg.aleg`; the estimator is
    ``F_(ij)(z) = (m q_i grad l_ij(w), -m l_ij(w) e_i)``, unbiased for ``F``. Each epoch costs ``N + K``
    IFO (default ``K = N``).

    Parameters
    ----------
    problem : GroupProblem
    epochs : int, optional
        Number of outer iterations (default 100 when ``max_ifo`` is not given either).
    max_ifo : int, optional
        Stop at the first epoch boundary where this many per-sample gradients have been used.
    inner : int, optional
        Inner-loop length ``K`` (default ``N``).
    alpha : float, optional
        Anchor weight in ``[0, 1)`` (default ``1 - 1/K``).
    gamma : float, default 0.99
        Step factor: ``tau = gamma sqrt(1 - alpha) / L_one``.
    w0 : numpy.ndarray, optional
        Starting point (default the centre of W); q starts uniform.
    seed : int or numpy.random.Generator, default 0
        Seed of the sampling.
    callback : callable, optional
        ``callback(ifo, w_out, q_out) -> bool`` at the end of every epoch; True stops the run.

    Returns
    -------
    Result
        The output point, the IFO used and the trace of checkpoints.

    References
    ----------
    Alacaoglu, Malitsky, "Stochastic variance reduction for variational inequality methods", COLT 2022.
    """
    problem = check_problem(problem)
    rng = check_rng(seed)
    epochs, max_ifo = check_stop(epochs, max_ifo, 100)
    geo = Geometry(problem)
    m, N = problem.m, problem.n_total
    K = check_int(inner, "inner", min_val=1, max_val=COUNT_MAX, allow_none=True) or N
    if alpha is None:
        alpha = 1.0 - 1.0 / K
    alpha = check_float(alpha, "alpha", min_val=0.0, max_val=1.0, include_boundaries="left")
    L = geo.lipschitz_one_level()
    eta = check_float(gamma, "gamma", min_val=0.0, include_boundaries="right") * math.sqrt(1.0 - alpha) / L
    budget = Budget(max_ifo, callback)
    D2eta, lneta, project = geo.D2 * eta, geo.lnm * eta, geo.project
    sizes, offs = problem.sizes, problem.offsets
    fast = SCALAR_LOSSES.get(problem.loss) if problem.X is not None else None
    X, Y = problem.X, (problem.y.tolist() if problem.y is not None else None)

    w, lq = geo.start(w0)
    snap_w, snap_q, hat_lq = w.copy(), np.exp(lq), lq.copy()
    out_w, out_q, n_out = np.zeros_like(w), np.zeros(m), 0
    ifo, s = 0, 0
    while (epochs is None or s < epochs) and not budget.exhausted(ifo):
        snap = Snapshot(problem, snap_w, snap_q)
        ifo += N
        groups = rng.integers(0, m, size=K)
        pos = offs[groups] + (rng.random(K) * sizes[groups]).astype(np.int64)
        ws, lqs = np.empty((K, problem.dim)), np.empty((K, m))
        # Everything that is fixed within the epoch is folded into two affine offsets per block: the
        # extrapolation is z_half = prox(alpha z_k + (1 - alpha) z_hat - eta F(z_bar)); the update adds the
        # one-sample correction m (F_ij(z_half) - F_ij(z_bar)) to F(z_bar).
        a_w = (1.0 - alpha) * snap_w - D2eta * snap.F_w
        a_q = (1.0 - alpha) * hat_lq - lneta * snap.F_q
        cw, cq = D2eta * m, lneta * m
        for k in range(K):
            i, j = groups[k], pos[k]
            base_w = alpha * w + a_w
            w_half = project(base_w)
            u = alpha * lq + a_q
            lse_u = _lse(u)
            lq_half = u - lse_u
            q_half = np.exp(lq_half)
            if fast is not None:  # the same per-sample oracle on Python floats (generalised linear losses)
                x = X[j]
                val, dv = fast(float(x @ w_half), Y[j])
                grad = dv * x
            else:
                v, g = problem._evaluate(w_half, pos[k : k + 1])
                val, grad = float(v[0]), g[0]
            # w-block: prox of g_w = F_w(z_bar) + m (q_half_i grad l_ij(w_half) - q_bar_i grad l_ij(w_bar))
            w = project(base_w - (cw * q_half[i]) * grad + (cw * snap.q[i]) * snap.grads[j])
            if m > 1:  # q-block: g_q = F_q(z_bar) - m (l_ij(w_half) - l_ij(w_bar)) e_i, normalised in O(1)
                delta = cq * (val - snap.values[j])
                lq = u.copy()
                lq[i] += delta
                t = q_half[i] * math.expm1(delta) if delta < 700 else math.inf
                lq -= lse_u + math.log1p(t) if -0.5 < t < 1e300 else _lse(lq)
            ws[k], lqs[k] = w, lq
            out_w += w_half
            out_q += q_half
        n_out += K
        ifo += K
        snap_w, snap_q, hat_lq = snapshots(np.ones(K), ws, lqs)
        s += 1
        budget.checkpoint(ifo, out_w / n_out, out_q / n_out)
    return Result(
        out_w / n_out,
        out_q / out_q.sum(),
        ifo,
        budget.trace,
        {"epochs": s, "inner": K, "alpha": alpha, "eta": eta, "L_F": L},
    )


def _lse(a: np.ndarray) -> float:
    mx = a.max()
    return mx + math.log(np.exp(a - mx).sum())


# --------------------------------------------------------------------------------------- mirror prox
def mirror_prox(
    problem: GroupProblem,
    *,
    iterations: int | None = None,
    max_ifo: int | None = None,
    gamma: float = 1.0,
    w0: np.ndarray | None = None,
    callback: Callback | None = None,
) -> Result:
    """Deterministic mirror prox with ``eta = gamma / L_F``; ``2N`` IFO per iteration.

    Parameters
    ----------
    problem : GroupProblem
    iterations : int, optional
        Number of iterations (default 100 when ``max_ifo`` is not given either).
    max_ifo : int, optional
        Stop once this many per-sample gradients have been used.
    gamma : float, default 1.0
        Step factor relative to the theory step ``1 / L_F``.
    w0 : numpy.ndarray, optional
        Starting point (default the centre of W); q starts uniform.
    callback : callable, optional
        ``callback(ifo, w_out, q_out) -> bool`` after every iteration; True stops the run.

    Returns
    -------
    Result
        The output point, the IFO used and the trace of checkpoints.

    References
    ----------
    Nemirovski, "Prox-method with rate of convergence O(1/t)", SIAM J. Optim. 2004.
    """
    problem = check_problem(problem)
    iterations, max_ifo = check_stop(iterations, max_ifo, 100, "iterations")
    geo = Geometry(problem)
    eta = check_float(gamma, "gamma", min_val=0.0, include_boundaries="right") / geo.lipschitz_group_sampled()
    budget = Budget(max_ifo, callback)
    N = problem.n_total
    w, lq = geo.start(w0)
    out_w, out_q = np.zeros_like(w), np.zeros(problem.m)
    ifo, t = 0, 0

    def F(w, q):
        R, gR = problem.risks_and_grads(w)
        return q @ gR, -R

    while (iterations is None or t < iterations) and not budget.exhausted(ifo):
        g_w, g_q = F(w, np.exp(lq))
        w_h, lq_h = geo.step(w, lq, g_w, g_q, eta)
        q_h = np.exp(lq_h)
        g_w, g_q = F(w_h, q_h)
        w, lq = geo.step(w, lq, g_w, g_q, eta)
        out_w += w_h
        out_q += q_h
        t += 1
        ifo += 2 * N
        budget.checkpoint(ifo, out_w / t, out_q / t)
    return Result(out_w / t, out_q / out_q.sum(), ifo, budget.trace, {"iterations": t, "eta": eta})


# ------------------------------------------------------------------------------------ online GroupDRO
def online_group_dro(
    problem: GroupProblem,
    *,
    iterations: int | None = None,
    max_ifo: int | None = None,
    horizon: int | None = None,
    gamma: float = 1.0,
    step_w: float | None = None,
    step_q: float | None = None,
    output: str = "last",
    w0: np.ndarray | None = None,
    seed: int = 0,
    record_every: int | None = None,
    callback: Callback | None = None,
) -> Result:
    """Online GroupDRO (Sagawa et al. 2020, Algorithm 1), one sample of every group per step (``m`` IFO).

    ``q <- q * exp(step_q * l)`` (normalised), then ``w <- Pi_W(w - step_w * sum_i q_i grad l_i)``. Default
    steps: the constant robust-SA step for the horizon ``T`` in this module's geometry,
    ``eta = gamma sqrt(2 Omega) / (M sqrt(T))`` with ``T = horizon`` (default: the iterations the budget
    allows), ``step_w = eta D^2``, ``step_q = eta ln m`` (Sagawa et al.
    tune ``step_w`` and fix ``step_q``; here one ``gamma`` sets both, so that every method is tuned on one
    grid).

    Parameters
    ----------
    problem : GroupProblem
    iterations : int, optional
        Number of iterations (``m`` IFO each); default ``100 N / m`` when ``max_ifo`` is not given either.
    max_ifo : int, optional
        Stop once this many per-sample gradients have been used.
    horizon : int, optional
        The ``T`` the constant steps are set for (default: the iterations the budget allows).
    gamma : float, default 1.0
        Step factor of both steps.
    step_w, step_q : float, optional
        Explicit steps, overriding ``gamma``'s.
    output : {"last", "average"}, default "last"
        The last iterate (Sagawa et al.) or the running average.
    w0 : numpy.ndarray, optional
        Starting point (default the centre of W); q starts uniform.
    seed : int or numpy.random.Generator, default 0
        Seed of the sampling.
    record_every : int, optional
        Iterations between checkpoints (default ``ceil(N / m)``, one pass).
    callback : callable, optional
        ``callback(ifo, w_out, q_out) -> bool`` at every checkpoint; True stops the run.

    Returns
    -------
    Result
        The output point, the IFO used and the trace of checkpoints.

    References
    ----------
    Sagawa, Koh, Hashimoto, Liang, "Distributionally robust neural networks for group shifts", ICLR 2020.
    """
    problem = check_problem(problem)
    rng = check_rng(seed)
    if output not in ("last", "average"):
        raise InputError(f"output must be 'last' or 'average', got {output!r}")
    every = _every(problem, record_every)
    iterations, max_ifo = check_stop(iterations, max_ifo, 100 * every, "iterations")
    geo = Geometry(problem)
    m = problem.m
    T = check_int(horizon, "horizon", min_val=1, allow_none=True) or (
        iterations if iterations is not None else max(1, max_ifo // m)
    )
    eta = (
        check_float(gamma, "gamma", min_val=0.0, include_boundaries="right")
        * math.sqrt(2 * _OMEGA)
        / (geo.gradient_bound() * math.sqrt(T))
    )
    sw = eta * geo.D2 if step_w is None else check_float(step_w, "step_w", min_val=0.0, include_boundaries="right")
    sq = eta * geo.lnm if step_q is None else check_float(step_q, "step_q", min_val=0.0, include_boundaries="right")
    budget = Budget(max_ifo, callback)
    w, lq = geo.start(w0)
    out_w, out_q = np.zeros_like(w), np.zeros(m)
    ifo, t = 0, 0
    while (iterations is None or t < iterations) and not budget.exhausted(ifo):
        chunk = every if iterations is None else min(every, iterations - t)
        draws = draw_group_samples(problem, rng, chunk)
        for k in range(chunk):
            val, grad = problem._evaluate(w, draws[k])
            if m > 1:
                lq = lq + sq * val
                lq -= _lse(lq)
            q = np.exp(lq)
            w = geo.project(w - sw * (q @ grad))
            out_w += w
            out_q += q
            t += 1
        ifo += m * chunk
        if output == "last":
            budget.checkpoint(ifo, w, np.exp(lq))
        else:
            budget.checkpoint(ifo, out_w / t, out_q / t)
    if output == "last":
        return Result(w, np.exp(lq), ifo, budget.trace, {"iterations": t, "step_w": sw, "step_q": sq})
    return Result(out_w / t, out_q / out_q.sum(), ifo, budget.trace, {"iterations": t, "step_w": sw, "step_q": sq})


# --------------------------------------------------------------------------------------------- SMD MERO
def smd_mero(
    problem: GroupProblem,
    *,
    max_ifo: int,
    gamma: float = 1.0,
    stage1_gamma: float | None = None,
    w0: np.ndarray | None = None,
    seed: int = 0,
    callback: Callback | None = None,
) -> Result:
    """Two-stage SMD for empirical MERO with a total budget ``max_ifo`` (half for each stage).

    Stage 1: projected SGD on each group ``i`` (``max_ifo / 2 * n_i / N`` samples, steps ``gamma_1 D /
    (G sqrt(t + 1))``, averaged iterate), ``R~_i`` = its exact risk (one counted pass). Stage 2: :func:`smd`
    on ``R_i(w) - R~_i``.

    Parameters
    ----------
    problem : GroupProblem
    max_ifo : int
        Total budget of per-sample gradients.
    gamma : float, default 1.0
        Step factor of stage 2 (:func:`smd`).
    stage1_gamma : float, optional
        Step factor of stage 1 (default ``gamma``).
    w0 : numpy.ndarray, optional
        Starting point of every run (default the centre of W).
    seed : int or numpy.random.Generator, default 0
        Seed of the sampling.
    callback : callable, optional
        Called at every stage-2 checkpoint with the total IFO so far.

    Returns
    -------
    Result
        As :func:`smd`; ``result.info["risk_estimates"]`` holds the ``R~_i``.

    References
    ----------
    Agarwal, Zhang, "Minimax regret optimization for robust machine learning under distribution shift", COLT
    2022; Zhang et al., NeurIPS 2023 (as for :func:`smd`).
    """
    problem = check_problem(problem)
    rng = check_rng(seed)
    max_ifo = check_int(max_ifo, "max_ifo", min_val=1, max_val=COUNT_MAX)
    gamma = check_float(gamma, "gamma", min_val=0.0, include_boundaries="right")
    g1 = (
        gamma
        if stage1_gamma is None
        else check_float(stage1_gamma, "stage1_gamma", min_val=0.0, include_boundaries="right")
    )
    D, G = problem.domain.radius, max(problem.lipschitz, 1e-12)
    w_start = Geometry(problem).start(w0)[0]
    estimates = np.empty(problem.m)
    ifo = 0
    for i in range(problem.m):
        n_i, off = int(problem.sizes[i]), int(problem.offsets[i])
        T = max(int(max_ifo // 2 * n_i / problem.n_total) - n_i, 1)
        pos = off + (rng.random(T) * n_i).astype(np.int64)
        w, avg, tot = w_start.copy(), np.zeros_like(w_start), 0.0
        for t in range(T):
            eta = g1 * D / (G * math.sqrt(t + 1))
            avg += eta * w
            tot += eta
            _, grad = problem._evaluate(w, pos[t : t + 1])
            w = problem.domain.project(w - eta * grad[0])
        estimates[i] = float(problem.subproblem(i).risks(avg / tot)[0])
        ifo += T + n_i
    stage1 = ifo
    res = _smd(
        problem,
        rng,
        iterations=None,
        max_ifo=max(max_ifo, ifo + problem.m),
        gamma=gamma,
        w0=w0,
        risk_offsets=estimates,
        record_every=None,
        callback=callback,
        ifo0=ifo,
    )
    res.info.update({"risk_estimates": estimates, "stage1_ifo": stage1})
    return res


__all__ = ["smd", "one_level_vr", "one_level_operator", "mirror_prox", "online_group_dro", "smd_mero"]
