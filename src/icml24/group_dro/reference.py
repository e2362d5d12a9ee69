"""Reference solutions and accuracy measures: the exact min-max risk and the duality gap.

* :func:`minimax_reference`: ``OPT = min_{w in W} max_i (R_i(w) - c_i)`` by SLSQP on the epigraph form
  ``min t  s.t.  R_i(w) - c_i <= t,  w in W`` (the reference; ``c = 0`` for GDRO, ``c = R^*`` for MERO).
* :func:`duality_gap`: ``max_q phi(w, q) - min_w phi(w, q) = max_i R_i(w) - min_{u in W} sum_i q_i R_i(u)``,
  the accuracy measure of the paper's theorems. The inner minimum is computed by a scipy solver and then
  **certified**: for the convex ``f = sum_i q_i R_i`` and any ``u`` in W, ``min_W f >= f(u) + min_{v in W}
  <grad f(u), v - u>`` (the Frank-Wolfe bound), so the reported gap is never smaller than the true gap.
* :func:`group_optima`: ``R_i^* = min_W R_i`` for every group (MERO's excess risks), certified likewise.

None of these count IFO: they are measurements, not part of any algorithm.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from ..errors import InputError
from ..validation import check_array
from .domain import BallSet, BoxSet
from .mirror import check_problem
from .problem import GroupProblem


@dataclass
class Reference:
    """The result of :func:`minimax_reference`.

    Attributes
    ----------
    w : numpy.ndarray
        The near-minimiser.
    value : float
        ``max_i (R_i(w) - c_i)``: an upper bound on ``min_W max_i (R_i(w) - c_i)``, attained at ``w``.
    risks : numpy.ndarray
        ``R_i(w)``.
    success : bool
        Whether SLSQP reported convergence.
    """

    w: np.ndarray
    value: float
    risks: np.ndarray
    success: bool


def _check_q(q, m: int) -> np.ndarray:
    q = check_array(q, "q", shape=(m,))
    if np.any(q < -1e-12) or abs(q.sum() - 1) > 1e-6:
        raise InputError(f"q must be a probability vector of length {m}")
    return np.clip(q, 0, None) / np.clip(q, 0, None).sum()


def _check_offsets(offsets, m: int) -> np.ndarray | None:
    return None if offsets is None else check_array(offsets, "offsets", shape=(m,))


def _minimize_over_W(problem: GroupProblem, fun_grad, w0: np.ndarray) -> np.ndarray:
    dom = problem.domain
    w0 = dom.project(np.asarray(w0, dtype=float))
    if isinstance(dom, BoxSet):
        res = optimize.minimize(
            fun_grad,
            w0,
            jac=True,
            method="L-BFGS-B",
            bounds=list(zip(dom.lower, dom.upper)),
            options={"maxiter": 2000, "ftol": 1e-15, "gtol": 1e-11},
        )
        return dom.project(res.x)
    # Ball: the unconstrained minimiser first (L-BFGS); SLSQP with the ball constraint when it lies outside.
    res = optimize.minimize(
        fun_grad, w0, jac=True, method="L-BFGS-B", options={"maxiter": 2000, "ftol": 1e-15, "gtol": 1e-11}
    )
    if np.linalg.norm(res.x - dom.center) <= dom.radius:
        return res.x
    c, r2 = dom.center, dom.radius**2
    cons = {"type": "ineq", "fun": lambda w: r2 - (w - c) @ (w - c), "jac": lambda w: -2 * (w - c)}
    res = optimize.minimize(
        fun_grad,
        dom.project(res.x),
        jac=True,
        method="SLSQP",
        constraints=[cons],
        options={"maxiter": 1000, "ftol": 1e-15},
    )
    return dom.project(res.x)


def min_weighted_risk(
    problem: GroupProblem, q, *, w0: np.ndarray | None = None, offsets: np.ndarray | None = None
) -> tuple[float, np.ndarray]:
    """A certified lower bound on ``min_{u in W} sum_i q_i (R_i(u) - c_i)`` and the near-minimiser ``u``.

    Parameters
    ----------
    problem : GroupProblem
    q : array-like of shape (m,)
        A probability vector.
    w0 : numpy.ndarray, optional
        Where the solver starts (default the centre of W).
    offsets : numpy.ndarray of shape (m,), optional
        The constants ``c_i`` (default 0).

    Returns
    -------
    (float, numpy.ndarray)
        The lower bound (solver value plus the Frank-Wolfe certificate) and ``u``.
    """
    problem = check_problem(problem)
    q = _check_q(q, problem.m)
    offsets = _check_offsets(offsets, problem.m)
    w0 = None if w0 is None else problem.check_point(w0, "w0")
    c = 0.0 if offsets is None else float(q @ offsets)
    scale = 1.0

    def fg(u):
        R, gR = problem.risks_and_grads(u)
        return float(q @ R) * scale, (q @ gR) * scale

    u = _minimize_over_W(problem, fg, problem.domain.center if w0 is None else w0)
    f, g = fg(u)
    v = problem.domain.linear_min(g)
    fw = min(0.0, float(g @ (v - u)))  # <= 0: the Frank-Wolfe certificate
    return f + fw - c, u


def duality_gap(
    problem: GroupProblem, w, q, *, offsets: np.ndarray | None = None, w0: np.ndarray | None = None
) -> float:
    """The duality gap ``max_i (R_i(w) - c_i) - min_{u in W} sum_i q_i (R_i(u) - c_i)`` of the pair ``(w, q)``.

    Parameters
    ----------
    problem : GroupProblem
    w : array-like of shape (dim,)
    q : array-like of shape (m,)
        A probability vector.
    offsets : numpy.ndarray of shape (m,), optional
        The constants ``c_i`` (MERO's shift; default 0).
    w0 : numpy.ndarray, optional
        Where the inner solver starts (default ``w``).

    Returns
    -------
    float
        An upper bound on the true gap, tight to the solver's accuracy (~1e-9 here).
    """
    problem = check_problem(problem)
    w = problem.check_point(w, "w")
    q = _check_q(q, problem.m)
    offsets = _check_offsets(offsets, problem.m)
    w0 = None if w0 is None else problem.check_point(w0, "w0")
    R = problem.risks(w) - (0.0 if offsets is None else offsets)
    low, _ = min_weighted_risk(problem, q, w0=w if w0 is None else w0, offsets=offsets)
    return float(R.max() - low)


def minimax_reference(
    problem: GroupProblem, *, offsets: np.ndarray | None = None, w0: np.ndarray | None = None
) -> Reference:
    """``min_W max_i (R_i(w) - c_i)`` by SLSQP on the epigraph form (variables ``(w, t)``).

    Parameters
    ----------
    problem : GroupProblem
    offsets : numpy.ndarray of shape (m,), optional
        The constants ``c_i`` (default 0: GDRO; ``R^*``: MERO).
    w0 : numpy.ndarray, optional
        Where the solver starts (default the centre of W).

    Returns
    -------
    Reference
    """
    problem = check_problem(problem)
    offsets = _check_offsets(offsets, problem.m)
    w0 = None if w0 is None else problem.check_point(w0, "w0")
    dom, d = problem.domain, problem.dim
    c = np.zeros(problem.m) if offsets is None else offsets
    start = dom.center.copy() if w0 is None else dom.project(w0)
    x0 = np.append(start, float((problem.risks(start) - c).max()))
    cache: dict = {}

    def rg(w):
        key = w.tobytes()
        if key not in cache:
            cache.clear()
            cache[key] = problem.risks_and_grads(w)
        return cache[key]

    cons = [
        {
            "type": "ineq",
            "fun": lambda x: x[d] - (rg(x[:d])[0] - c),
            "jac": lambda x: np.hstack([-rg(x[:d])[1], np.ones((problem.m, 1))]),
        }
    ]
    bounds = None
    if isinstance(dom, BallSet):
        cc, r2 = dom.center, dom.radius**2
        cons.append(
            {
                "type": "ineq",
                "fun": lambda x: r2 - (x[:d] - cc) @ (x[:d] - cc),
                "jac": lambda x: np.append(-2 * (x[:d] - cc), 0.0),
            }
        )
    else:
        bounds = list(zip(dom.lower, dom.upper)) + [(None, None)]
    obj_grad = np.zeros(d + 1)
    obj_grad[d] = 1.0
    res = optimize.minimize(
        lambda x: x[d],
        x0,
        jac=lambda x: obj_grad,
        method="SLSQP",
        constraints=cons,
        bounds=bounds,
        options={"maxiter": 2000, "ftol": 1e-14},
    )
    w = dom.project(res.x[:d])
    R = problem.risks(w)
    return Reference(w, float((R - c).max()), R, bool(res.success))


def group_optima(problem: GroupProblem) -> np.ndarray:
    """``R_i^* = min_W R_i`` for every group, each a certified lower bound (tight to ~1e-9).

    Parameters
    ----------
    problem : GroupProblem

    Returns
    -------
    numpy.ndarray of shape (m,)
    """
    problem = check_problem(problem)
    out = np.empty(problem.m)
    for i in range(problem.m):
        out[i], _ = min_weighted_risk(problem.subproblem(i), np.ones(1))
    return out


__all__ = ["Reference", "minimax_reference", "duality_gap", "min_weighted_risk", "group_optima"]
