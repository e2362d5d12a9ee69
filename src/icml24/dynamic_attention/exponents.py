"""The exponents the paper's analysis predicts, and the log-log slopes that measurements are compared with."""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["OMEGA", "ALPHA", "omega", "paper_exponents", "classical_exponents", "loglog_slope"]


# omega(1,1,tau) is not known in closed form. We report the standard upper bound obtained by interpolating
# between omega(1,1,alpha) = 2 and omega(1,1,1) = omega (Huang & Pan 1998; the bound is convex in tau), with
# omega < 2.371552 and alpha > 0.321334 (Vassilevska Williams, Xu, Xu, Zhou, SODA 2024). Only for reporting.
OMEGA = 2.371552
ALPHA = 0.321334


def omega(tau: float) -> float:
    """An upper bound on omega(1,1,tau), the exponent of multiplying n x n by n x n^tau matrices.

    Parameters
    ----------
    tau : float
        In ``[0, 1]``.

    Returns
    -------
    float
        2 for ``tau <= alpha``, then linear up to omega at ``tau = 1``.

    References
    ----------
    Huang and Pan 1998 (convexity); Vassilevska Williams, Xu, Xu, Zhou, SODA 2024 (omega, alpha).
    """
    if tau <= ALPHA:
        return 2.0
    return 2.0 + (OMEGA - 2.0) * (tau - ALPHA) / (1.0 - ALPHA)


def paper_exponents(tau: float) -> dict[str, float]:
    """The paper's bounds for ``d = n`` (Theorem 1.3): amortised update ``n^{omega(1,1,tau) - tau}``, worst-case
    query ``n^{1+tau}``.

    Parameters
    ----------
    tau : float

    Returns
    -------
    dict
        ``{"update": exponent, "query": exponent}``.
    """
    return {"update": omega(tau) - tau, "query": 1.0 + tau}


def classical_exponents(tau: float) -> dict[str, float]:
    """The paper's bounds with classical (cubic) matrix multiplication, ``omega(1,1,tau) = 2 + tau``, for ``d = n``.

    Parameters
    ----------
    tau : float

    Returns
    -------
    dict
        ``{"update": 2.0, "query": 1 + tau}``: one ``m x k x d`` product per ``k`` updates, ``k d`` work per query.
    """
    return {"update": 2.0, "query": 1.0 + tau}


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ``log(y)`` against ``log(x)``.

    Parameters
    ----------
    xs, ys : sequence of float

    Returns
    -------
    float
    """
    x, y = np.log(np.asarray(xs, dtype=float)), np.log(np.maximum(np.asarray(ys, dtype=float), 1e-300))
    return float(np.polyfit(x, y, 1)[0])
