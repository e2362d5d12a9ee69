"""The synthetic multi-group classification problem of the spec's CPU reproduction plan.

Group ``i`` has its own ground-truth direction ``w_i^* = u + delta_i`` (a shared component ``u`` with
``||u|| = 2`` plus a group-specific shift ``delta_i ~ N(0, s^2 I / d)``), features ``x ~ N(0, I_d)`` and labels
``y = sign(<x, w_i^*>)`` flipped with probability ``flip``. Groups differ in their decision boundaries, so
no single ``w`` is best for all of them and the worst-group risk differs from the average risk.
(The spec marks the paper's own experimental setting as [inferred]; this follows its plan, with
``Zhang et al. 2023``-style per-group linear models and label noise.)
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .mirror import check_seed
from .problem import Ball, Box, GroupProblem


def synthetic_groups(m: int = 16, n: int | tuple[int, int] = 100, d: int = 20, *, shift: float = 1.5,
                     flip: float = 0.1, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, y, groups)`` with ``m`` groups; ``n`` samples per group, or ``(low, high)`` for group sizes drawn
    uniformly in that range (the spec's imbalanced arm). Labels are in ``{-1, +1}``."""
    for name, v in (("m", m), ("d", d)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise InputError(f"{name} must be a positive integer, got {v!r}")
    if not 0.0 <= float(flip) < 0.5:
        raise InputError(f"flip must be in [0, 0.5), got {flip!r}")
    rng = check_seed(seed)
    if isinstance(n, tuple):
        lo, hi = n
        if not (1 <= lo <= hi):
            raise InputError(f"n range must satisfy 1 <= low <= high, got {n!r}")
        sizes = rng.integers(lo, hi + 1, size=m)
    else:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise InputError(f"n must be a positive integer or a (low, high) range, got {n!r}")
        sizes = np.full(m, int(n))
    u = rng.standard_normal(d)
    u *= 2.0 / np.linalg.norm(u)
    X, y, g = [], [], []
    for i in range(m):
        w_star = u + shift * rng.standard_normal(d) / np.sqrt(d)
        Xi = rng.standard_normal((sizes[i], d))
        yi = np.sign(Xi @ w_star)
        yi[yi == 0] = 1.0
        yi[rng.random(sizes[i]) < flip] *= -1.0
        X.append(Xi)
        y.append(yi)
        g.append(np.full(sizes[i], i))
    return np.vstack(X), np.concatenate(y), np.concatenate(g)


def synthetic_problem(m: int = 16, n: int | tuple[int, int] = 100, d: int = 20, *, radius: float = 5.0,
                      loss: str = "logistic", box: bool = False, seed: int = 0, **kwargs) -> GroupProblem:
    """The spec's problem: :func:`synthetic_groups` with a loss over ``W = {||w|| <= radius}`` (or the box
    ``[-radius/sqrt(d), radius/sqrt(d)]^d`` when ``box``)."""
    X, y, g = synthetic_groups(m, n, d, seed=seed, **kwargs)
    if loss == "squared":
        y = y.astype(float)
    dom = Box(-radius / np.sqrt(d), radius / np.sqrt(d)) if box else Ball(radius)
    return GroupProblem.from_data(X, y, g, loss=loss, domain=dom)


__all__ = ["synthetic_groups", "synthetic_problem"]
