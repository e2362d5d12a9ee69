"""The saddle operator of empirical GDRO and the stochastic estimators ALEG and its ablations step with.

For ``phi(w, q) = sum_i q_i (R_i(w) - c_i)`` the operator is ``F(w, q) = (grad_w phi, -grad_q phi)``:

* :func:`full_operator`: ``F`` itself (``N`` IFO);
* :func:`group_sampled_operator`: one sample from **every** group (``m`` IFO), drawn by
  :func:`draw_group_samples`, unbiased for ``F``;
* :func:`vr_operator`: ALEG's variance-reduced estimate ``F(z_bar) + F_xi(z) - F_xi(z_bar)`` against a
  :class:`Snapshot` (the snapshot's per-sample values and gradients stored, so ``m`` IFO);
* :func:`one_level_vr_operator`: the one-level variance-reduced estimate of the baseline (one sample
  ``(i, j)`` weighted by ``m``, 1 IFO);
* :func:`snapshots`: an epoch's snapshot and mirror snapshot, the step-weighted averages of its iterates.

The algorithms are in :mod:`~icml24.group_dro.aleg` and :mod:`~icml24.group_dro.baselines`.
"""

from __future__ import annotations

import numpy as np

from .mirror import logsumexp
from .problem import GroupProblem


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
    val, grad = problem._evaluate(w, pos)
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
    val, grad = problem._evaluate(w, pos)
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


def one_level_vr_operator(
    problem: GroupProblem, snap: Snapshot, w: np.ndarray, q: np.ndarray, group: int, pos: int
) -> tuple[np.ndarray, np.ndarray]:
    """The one-level variance-reduced estimator ``F(z_bar) + m (F_ij(z) - F_ij(z_bar))`` (1 IFO).

    One sample ``(i, j)`` (``i ~ Unif[m]``, ``j ~ Unif[n_i]``) weighted by ``m``: ``F_ij(w, q) = (q_i grad
    l(w; xi_ij), -l(w; xi_ij) e_i)``; unbiased for ``F``. The estimator of the one-level baseline
    (:func:`~icml24.group_dro.baselines.one_level_vr`), here for ALEG's ``estimator="one_level"`` ablation.

    Parameters
    ----------
    problem : GroupProblem
        The ``m`` groups and their per-sample oracle.
    snap : Snapshot
        The snapshot ``z_bar``.
    w : numpy.ndarray
        ``(d,)`` model.
    q : numpy.ndarray
        ``(m,)`` group weights on the simplex.
    group : int
        The sampled group ``i``.
    pos : int
        The sample's position in the concatenated samples (inside group ``i``).

    Returns
    -------
    g_w : numpy.ndarray
        ``(d,)``: the w-block of the estimate.
    g_q : numpy.ndarray
        ``(m,)``: the q-block of the estimate.
    """
    m = problem.m
    val, grad = problem._evaluate(w, np.array([pos]))
    g_w = snap.F_w + m * (q[group] * grad[0] - snap.q[group] * snap.grads[pos])
    g_q = snap.F_q.copy()
    g_q[group] -= m * (val[0] - snap.values[pos])
    return g_w, g_q


__all__ = [
    "full_operator",
    "group_sampled_operator",
    "draw_group_samples",
    "Snapshot",
    "vr_operator",
    "snapshots",
    "one_level_vr_operator",
]
