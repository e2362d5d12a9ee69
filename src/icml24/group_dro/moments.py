"""Why tuning can erase ALEG's sqrt(m) advantage: the exact second moments of the group-sampled and the
one-level estimators.

:func:`estimator_moments` computes, in closed form, the second moments of the difference ``F_xi(z) -
F_xi(z_bar)`` of both estimators (:mod:`~icml24.group_dro.operators`), in the paper's ``l_inf`` norm on q and in
the entropy's local norm; :func:`moments_near` averages them over random points near a given one, and
:func:`moments_near_aleg` near the output of an ALEG run: the moments a tuned run's step sizes must absorb. The
claim ``sqrt-m-advantage`` reports them beside its measured IFO ratios.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..validation import check_float, check_int, check_rng
from .aleg import aleg
from .mirror import Geometry, check_problem
from .problem import GroupProblem


@dataclass
class Moments:
    """Exact second moments of the difference ``F_xi(z) - F_xi(z_bar)`` (the same draw at both points) of the
    group-sampled estimator (one sample from every group) and of the one-level estimator (one sample
    ``(i, j)``, weighted by ``m``): what the variance-reduced methods' step sizes must absorb.

    ``w``: ``E ||dg_w||^2``; ``q_inf``: ``E ||dg_q||_inf^2`` (the norm of the paper's analysis);
    ``q_local``: ``E sum_i q_i dg_{q,i}^2``, the local norm of the entropy at ``q``, which is what an
    exponentiated-gradient step actually feels while ``eta ln(m) |dg_q|`` is small.

    Attributes
    ----------
    group_w, group_q_inf, group_q_local : float
        The group-sampled estimator's moments.
    one_level_w, one_level_q_inf, one_level_q_local : float
        The one-level estimator's moments.
    m : int
        Number of groups.
    D2, lnm : float
        ``D^2`` and ``ln m`` of the distance-generating function.
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
        distance-generating function of :mod:`~icml24.group_dro.mirror`).

        Parameters
        ----------
        estimator : {"group", "one_level"}
        norm : {"inf", "local"}

        Returns
        -------
        float
        """
        w = getattr(self, f"{estimator}_w")
        q = getattr(self, f"{estimator}_q_{norm}")
        return self.D2 * w + self.lnm * q

    def predicted_ifo_ratio(self, norm: str) -> float:
        """IFO(one-level) / IFO(ALEG) predicted by the variance-reduced mirror-prox bound
        ``IFO ~ cost_per_step * sqrt(K) * L / eps`` with ``L^2`` the measured second moment:
        ``sqrt(M_one / M_group) / sqrt(m)`` (one-level: ``K = N``, 1 IFO a step; ALEG: ``K = N / m``, ``m``).

        Parameters
        ----------
        norm : {"inf", "local"}

        Returns
        -------
        float
        """
        return math.sqrt(self.total("one_level", norm) / self.total("group", norm)) / math.sqrt(self.m)


def estimator_moments(problem: GroupProblem, w, q, w_bar, q_bar) -> Moments:
    """Exact :class:`Moments` of both estimators between ``z = (w, q)`` and ``z_bar = (w_bar, q_bar)``.

    Exact expectations over the draws (2 full passes, not counted as IFO): the one-level terms and every
    local-norm term in closed form; the group-sampled ``E max_i b_{i j_i}^2`` from the per-group
    distributions (the ``j_i`` are independent). Note ``one_level_q_local = m * group_q_local`` identically.

    Parameters
    ----------
    problem : GroupProblem
    w, w_bar : array-like of shape (dim,)
    q, q_bar : array-like of shape (m,)

    Returns
    -------
    Moments
    """
    problem = check_problem(problem)
    m, geo = problem.m, Geometry(problem)
    points = {}
    for name, value, size in (("w", w, problem.dim), ("q", q, m), ("w_bar", w_bar, problem.dim), ("q_bar", q_bar, m)):
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
        vals = np.sort(sq[problem.offsets[i] : problem.offsets[i] + problem.sizes[i]])
        cdf *= np.searchsorted(vals, levels, side="right") / len(vals)
    group_inf = float(np.sum(np.diff(levels) * (1.0 - cdf[:-1])))
    return Moments(
        group_w=group_w,
        group_q_inf=group_inf,
        group_q_local=float(q @ b2),
        one_level_w=one_w,
        one_level_q_inf=float(m * b2.sum()),
        one_level_q_local=float(m * (q @ b2)),
        m=m,
        D2=geo.D2,
        lnm=geo.lnm,
    )


def moments_near(
    problem: GroupProblem, w, q, *, directions: int = 5, size: float = 0.01, seed: int = 0
) -> dict[str, float]:
    """:func:`estimator_moments` between ``z_bar = (w, q)`` and ``directions`` points ``(w + delta, q)`` with
    random ``||delta|| = size * D``, averaged: the predicted IFO ratio one-level / ALEG in the paper's norm
    (``pred_ratio_inf``) and in the entropy's local norm (``pred_ratio_local``), and the one-level / group
    ratios of the q-block (``q_inf_ratio``) and w-block (``w_ratio``) second moments.

    Parameters
    ----------
    problem : GroupProblem
    w : array-like of shape (dim,)
    q : array-like of shape (m,)
    directions : int, default 5
        Number of random directions.
    size : float, default 0.01
        Length of ``delta`` relative to the radius ``D`` of W, in ``(0, 1]``.
    seed : int or numpy.random.Generator, default 0
        Seed of the directions.

    Returns
    -------
    dict of str to float
    """
    problem = check_problem(problem)
    size = check_float(size, "size", min_val=0.0, max_val=1.0, include_boundaries="right")
    rng = check_rng(seed)
    w = np.asarray(w, dtype=float)
    rows = []
    for _ in range(check_int(directions, "directions", min_val=1)):
        delta = rng.standard_normal(problem.dim)
        delta *= size * problem.domain.radius / np.linalg.norm(delta)
        mo = estimator_moments(problem, problem.domain.project(w + delta), q, w, q)
        rows.append(
            (
                mo.predicted_ifo_ratio("inf"),
                mo.predicted_ifo_ratio("local"),
                mo.one_level_q_inf / mo.group_q_inf,
                mo.one_level_w / mo.group_w,
            )
        )
    mean = np.mean(rows, axis=0)
    return {
        "pred_ratio_inf": float(mean[0]),
        "pred_ratio_local": float(mean[1]),
        "q_inf_ratio": float(mean[2]),
        "w_ratio": float(mean[3]),
    }


def moments_near_aleg(problem: GroupProblem, gamma: float, *, epochs: int = 20, seed: int = 0) -> dict[str, float]:
    """:func:`moments_near` at the output of ``epochs`` epochs of ALEG with step factor ``gamma`` (sampling seed
    ``seed + 1``, directions seed ``seed``): the estimators' moments near the solution a run approaches.

    Parameters
    ----------
    problem : GroupProblem
    gamma : float
        ALEG's step factor.
    epochs : int, default 20
    seed : int, default 0

    Returns
    -------
    dict of str to float
        As :func:`moments_near`.
    """
    near = aleg(problem, epochs=epochs, gamma=gamma, seed=seed + 1)
    return moments_near(problem, near.w, near.q, seed=seed)


__all__ = ["Moments", "estimator_moments", "moments_near", "moments_near_aleg"]
