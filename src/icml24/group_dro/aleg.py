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
* the constant default step ``eta = gamma * sqrt(1 - alpha) / L_F`` with ``gamma = 0.99`` and ``L_F`` the
  derived Lipschitz constant of :meth:`Geometry.lipschitz_group_sampled`;
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
from ..validation import check_float, check_int, check_rng
from .mirror import Budget, Callback, Geometry, Result, check_offsets, check_problem, check_stop, logsumexp
from .problem import GroupProblem

# ------------------------------------------------------------------------------------------- operators


def full_operator(
    problem: GroupProblem, w: np.ndarray, q: np.ndarray, offsets: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The saddle operator ``F(w, q) = (sum_i q_i grad R_i(w), -(R_i(w) - c_i)_i)`` (``N`` IFO).

    Parameters
    ----------
    problem : GroupProblem
        The ``m`` groups and their per-sample oracle.
    w : numpy.ndarray
        ``(d,)`` model.
    q : numpy.ndarray
        ``(m,)`` group weights on the simplex.
    offsets : numpy.ndarray, optional
        ``(m,)`` shifts ``c_i`` of the risks (ALEM's ``R~_i``); none when not given.

    Returns
    -------
    g_w : numpy.ndarray
        ``(d,)``: ``sum_i q_i grad R_i(w)``.
    g_q : numpy.ndarray
        ``(m,)``: ``-(R_i(w) - c_i)``.
    """
    R, gR = problem.risks_and_grads(w)
    if offsets is not None:
        R = R - offsets
    return q @ gR, -R


def group_sampled_operator(
    problem: GroupProblem, w: np.ndarray, q: np.ndarray, pos: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The group-sampled estimator ``F_xi`` with one sample per group at positions ``pos`` (``m`` IFO).

    ``F_xi(w, q) = (sum_i q_i grad l(w; xi_{i j_i}), -(l(w; xi_{i j_i}))_i)``. Unbiased for ``F`` when every
    ``j_i`` is uniform in its group.

    Parameters
    ----------
    problem : GroupProblem
        The ``m`` groups and their per-sample oracle.
    w : numpy.ndarray
        ``(d,)`` model.
    q : numpy.ndarray
        ``(m,)`` group weights on the simplex.
    pos : numpy.ndarray
        ``(m,)`` sample positions, the ``i``-th in group ``i`` (a row of :func:`draw_group_samples`).

    Returns
    -------
    g_w : numpy.ndarray
        ``(d,)``: ``sum_i q_i grad l(w; xi_{i j_i})``.
    g_q : numpy.ndarray
        ``(m,)``: ``-l(w; xi_{i j_i})``.
    """
    val, grad = problem.sample_eval(w, pos)
    return q @ grad, -val


def draw_group_samples(problem: GroupProblem, rng: np.random.Generator, k: int) -> np.ndarray:
    """``k`` draws of ``(j_1, ..., j_m)``, one uniform sample per group, as positions.

    Parameters
    ----------
    problem : GroupProblem
        The groups (``offsets`` and ``sizes``).
    rng : numpy.random.Generator
        Source of randomness.
    k : int
        Number of draws.

    Returns
    -------
    numpy.ndarray
        ``(k, m)`` int64 positions into the concatenated samples; column ``i`` lies in group ``i``.
    """
    return problem.offsets + (rng.random((k, problem.m)) * problem.sizes).astype(np.int64)


class Snapshot:
    """A snapshot ``z_bar = (w_bar, q_bar)``: its full operator and the stored per-sample values/gradients."""

    def __init__(
        self, problem: GroupProblem, w_bar: np.ndarray, q_bar: np.ndarray, offsets: np.ndarray | None = None
    ) -> None:
        self.w, self.q = w_bar, q_bar
        self.values, self.grads = problem.full_eval(w_bar)  # N IFO
        R = problem.group_means(self.values)
        if offsets is not None:
            R = R - offsets
        self.F_w = q_bar @ problem.group_means(self.grads)
        self.F_q = -R


def vr_operator(
    problem: GroupProblem, snap: Snapshot, w: np.ndarray, q: np.ndarray, pos: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The variance-reduced estimator ``F(z_bar) + F_xi(z) - F_xi(z_bar)``.

    The same draw ``pos`` is used in both stochastic terms (``m`` IFO: the snapshot's per-sample terms are
    stored). Equals ``F(z_bar)`` at ``z = z_bar`` for every draw.

    Parameters
    ----------
    problem : GroupProblem
        The ``m`` groups and their per-sample oracle.
    snap : Snapshot
        The snapshot ``z_bar``, its full operator and stored per-sample values and gradients.
    w : numpy.ndarray
        ``(d,)`` model.
    q : numpy.ndarray
        ``(m,)`` group weights on the simplex.
    pos : numpy.ndarray
        ``(m,)`` sample positions, one per group (a row of :func:`draw_group_samples`).

    Returns
    -------
    g_w : numpy.ndarray
        ``(d,)``: the w-block of the estimate.
    g_q : numpy.ndarray
        ``(m,)``: the q-block of the estimate.
    """
    val, grad = problem.sample_eval(w, pos)
    g_w = snap.F_w + q @ grad - snap.q @ snap.grads[pos]
    g_q = snap.F_q - (val - snap.values[pos])
    return g_w, g_q


def snapshots(weights: np.ndarray, ws: np.ndarray, log_qs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Snapshot and mirror snapshot of an epoch from its iterates ``z_1..z_K`` and steps ``eta_0..eta_{K-1}``.

    ``w_bar`` and ``q_bar`` are the step-weighted primal averages; ``q_hat`` is the mirror snapshot,
    ``grad h(q_hat) = sum_k eta_k grad h(q_k) / sum eta`` on the simplex, i.e. the normalised weighted
    geometric mean, the minimiser of ``sum_k eta_k KL(q || q_k)``. (The w-block's mirror snapshot equals
    ``w_bar``: its mirror map is affine.)

    Parameters
    ----------
    weights : numpy.ndarray
        ``(K,)`` positive steps ``eta_0 .. eta_{K-1}`` (normalised here).
    ws : numpy.ndarray
        ``(K, d)`` w-iterates ``w_1 .. w_K``.
    log_qs : numpy.ndarray
        ``(K, m)`` logarithms of the q-iterates ``q_1 .. q_K``.

    Returns
    -------
    w_bar : numpy.ndarray
        ``(d,)`` step-weighted average of the w-iterates.
    q_bar : numpy.ndarray
        ``(m,)`` step-weighted average of the q-iterates, renormalised onto the simplex.
    log_q_hat : numpy.ndarray
        ``(m,)`` logarithm of the mirror snapshot ``q_hat``.
    """
    lam = np.asarray(weights, dtype=float) / float(np.sum(weights))
    w_bar = lam @ ws
    q_bar = lam @ np.exp(log_qs)
    lq = lam @ log_qs
    return w_bar, q_bar / q_bar.sum(), lq - logsumexp(lq)


# ------------------------------------------------------------------------------------------------ ALEG
def aleg(
    problem: GroupProblem,
    *,
    epochs: int | None = None,
    max_ifo: int | None = None,
    inner: int | None = None,
    alpha: float | None = None,
    gamma: float = 0.99,
    steps: Sequence[float] | None = None,
    w0: np.ndarray | None = None,
    risk_offsets=None,
    seed: int = 0,
    callback: Callback | None = None,
) -> Result:
    """ALEG (Algorithm 1): variance-reduced mirror prox with group sampling for empirical GDRO.

    Parameters
    ----------
    problem : GroupProblem
    epochs : int, optional
        Number of outer iterations ``S`` (default 100 when ``max_ifo`` is not given either).
    max_ifo : int, optional
        Stop at the first epoch boundary where this many per-sample gradients have been used.
    inner : int, optional
        Inner-loop length ``K`` (default ``ceil(n_bar)``, [inferred]).
    alpha : float, optional
        Anchor weight in ``[0, 1)`` (default ``1 - 1/K``, [inferred]).
    gamma : float, default 0.99
        Step factor: ``eta = gamma * sqrt(1 - alpha) / L_F`` (the convergence analysis needs ``gamma < 1``;
        larger values leave the theory, and the claims tune it on a grid shared by every method).
    steps : sequence of float, optional
        Non-constant steps ``eta_0 .. eta_{K-1}`` used in every epoch (overrides ``gamma``).
    w0 : numpy.ndarray, optional
        Starting point (default the centre of W); q starts uniform.
    risk_offsets : array-like of shape (m,), optional
        Constants ``c_i`` subtracted from the group risks (ALEM's second stage), default 0.
    seed : int or numpy.random.Generator, default 0
        Seed of the group sampling.
    callback : callable, optional
        ``callback(ifo, w_out, q_out) -> bool`` at the end of every epoch; True stops the run.

    Returns
    -------
    Result
        The step-weighted ergodic average of the ``z_{k+1/2}``, the IFO count, the trace of epoch ends, and in
        ``info`` the epochs run, ``K``, ``alpha``, ``eta`` and ``L_F``.

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
    )


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
) -> Result:
    epochs, max_ifo = check_stop(epochs, max_ifo, 100)
    geo = Geometry(problem)
    m, N = problem.m, problem.n_total
    K = check_int(inner, "inner", min_val=1, allow_none=True) or int(math.ceil(N / m))
    if alpha is None:
        alpha = 1.0 - 1.0 / K
    alpha = check_float(alpha, "alpha", min_val=0.0, max_val=1.0, include_boundaries="left")
    L_F = geo.lipschitz_group_sampled()
    if steps is None:
        eta = check_float(gamma, "gamma", min_val=0.0, include_boundaries="right") * math.sqrt(1.0 - alpha) / L_F
        etas = np.full(K, eta)
    else:
        etas = np.asarray(steps, dtype=float).reshape(-1)
        if etas.shape != (K,) or not np.all(np.isfinite(etas)) or not np.all(etas > 0):
            raise InputError(f"steps must be {K} positive finite numbers (one per inner iteration)")
    offsets = check_offsets(risk_offsets, m)
    budget = Budget(max_ifo, callback)

    w, lq = geo.start(w0)
    snap_w, snap_q, hat_lq = w.copy(), np.exp(lq), lq.copy()  # z_bar_0 = z_hat_0 = z_0 [inferred]
    out_w, out_q, out_eta = np.zeros_like(w), np.zeros(m), 0.0
    ifo, s = ifo0, 0
    while (epochs is None or s < epochs) and not budget.exhausted(ifo):
        snap = Snapshot(problem, snap_w, snap_q, offsets)  # the snapshot's full operator F(z_bar)
        ifo += N
        draws = draw_group_samples(problem, rng, K)
        ws, lqs = np.empty((K, problem.dim)), np.empty((K, m))
        hat_w = snap_w  # the w-block's mirror snapshot equals its snapshot
        for k in range(K):
            eta = etas[k]
            base_w = alpha * w + (1.0 - alpha) * hat_w
            base_lq = alpha * lq + (1.0 - alpha) * hat_lq
            w_half, lq_half = geo.step(base_w, base_lq, snap.F_w, snap.F_q, eta)  # extrapolation with F(z_bar)
            q_half = np.exp(lq_half)
            g_w, g_q = vr_operator(problem, snap, w_half, q_half, draws[k])  # variance-reduced estimate
            w, lq = geo.step(base_w, base_lq, g_w, g_q, eta)  # update
            ws[k], lqs[k] = w, lq
            out_w += eta * w_half
            out_q += eta * q_half
            out_eta += eta
        ifo += m * K
        snap_w, snap_q, hat_lq = snapshots(etas, ws, lqs)  # one-index-shifted weighted averages
        s += 1
        budget.checkpoint(ifo, out_w / out_eta, out_q / out_eta)
    return Result(
        out_w / out_eta,
        out_q / out_q.sum(),
        ifo,
        budget.trace,
        {"epochs": s, "inner": K, "alpha": alpha, "eta": float(etas[0]), "L_F": L_F},
    )


# ------------------------------------------------------------------------------------------------ ALEM
def alem(
    problem: GroupProblem,
    *,
    epochs: int | None = None,
    max_ifo: int | None = None,
    stage1_epochs: int | None = None,
    inner: int | None = None,
    gamma: float = 0.99,
    stage1_gamma: float | None = None,
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
    gamma : float, default 0.99
        Step factor of stage 2, as in :func:`aleg`.
    stage1_gamma : float, optional
        Step factor of stage 1 (default ``gamma``).
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
    gamma = check_float(gamma, "gamma", min_val=0.0, include_boundaries="right")
    g1 = (
        gamma
        if stage1_gamma is None
        else check_float(stage1_gamma, "stage1_gamma", min_val=0.0, include_boundaries="right")
    )
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
    "draw_group_samples",
    "Snapshot",
    "snapshots",
]
