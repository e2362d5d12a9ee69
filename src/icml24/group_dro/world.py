"""The synthetic world of the claims: multi-group classification data with known per-group ground truth.

Group ``i`` has its own ground-truth direction ``w_i^* = u + delta_i`` (a shared component ``u`` with
``||u|| = 2`` plus a group-specific shift ``delta_i ~ N(0, shift^2 I / d)``), features ``x ~ N(0, I_d)`` and
labels ``y = sign(<x, w_i^*>)`` flipped with probability ``flip``. Groups differ in their decision boundaries,
so no single ``w`` is best for all of them and the worst-group risk differs from the average risk: the setting
of the group DRO claims (per-group linear models with label noise, in the style of Zhang et al., NeurIPS 2023;
the experimental data of Yu et al., ICML 2024, were not available to us). :func:`synthetic_groups` draws the
numpy arrays; :func:`synthetic_problem` wraps them in a :class:`~icml24.group_dro.problem.GroupProblem`.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..validation import check_bool, check_float, check_int, check_rng
from .domain import COUNT_MAX, Ball, Box
from .glm_losses import LOSSES
from .problem import GroupProblem

__all__ = ["synthetic_groups", "synthetic_problem"]


def synthetic_groups(
    m: int = 16,
    n: int | tuple[int, int] = 100,
    d: int = 20,
    *,
    shift: float = 1.5,
    flip: float = 0.1,
    seed: int | np.random.Generator = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw ``m`` groups of binary-labelled samples, each group with its own linear decision boundary.

    Parameters
    ----------
    m : int, default 16
        Number of groups.
    n : int or (int, int), default 100
        Samples per group, or ``(low, high)``: group sizes drawn uniformly in ``low..high`` (an imbalanced
        arm, e.g. ``(20, 200)``).
    d : int, default 20
        Feature dimension.
    shift : float, default 1.5
        Scale of the group-specific part of each ground-truth direction (0: every group the same).
    flip : float, default 0.1
        Probability that a label is flipped, in ``[0, 0.5)``.
    seed : int or numpy.random.Generator, default 0
        Seeds every draw.

    Returns
    -------
    X : numpy.ndarray, shape (N, d)
        Features, ``N = sum_i n_i``, group after group.
    y : numpy.ndarray, shape (N,)
        Labels in ``{-1.0, +1.0}``.
    groups : numpy.ndarray, shape (N,)
        The group (``0..m-1``) of every sample.
    """
    m = check_int(m, "m", min_val=1, max_val=COUNT_MAX)
    d = check_int(d, "d", min_val=1, max_val=COUNT_MAX)
    shift = check_float(shift, "shift", min_val=0.0)
    flip = check_float(flip, "flip", min_val=0.0, max_val=0.5, include_boundaries="left")
    rng = check_rng(seed)
    if isinstance(n, tuple):
        if len(n) != 2:
            raise InputError(f"n range must be a (low, high) pair, got {n!r}")
        lo, hi = check_int(n[0], "n[0]", max_val=COUNT_MAX), check_int(n[1], "n[1]", max_val=COUNT_MAX)
        if not 1 <= lo <= hi:
            raise InputError(f"n range must satisfy 1 <= low <= high, got {n!r}")
        sizes = rng.integers(lo, hi + 1, size=m)
    else:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise InputError(f"n must be a positive integer or a (low, high) range, got {n!r}")
        sizes = np.full(m, check_int(n, "n", min_val=1, max_val=COUNT_MAX))
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


def synthetic_problem(
    m: int = 16,
    n: int | tuple[int, int] = 100,
    d: int = 20,
    *,
    radius: float = 5.0,
    loss: str = "logistic",
    box: bool = False,
    seed: int = 0,
    **kwargs,
) -> GroupProblem:
    """The synthetic multi-group problem of the claims: :func:`synthetic_groups` as a
    :class:`GroupProblem`.

    Parameters
    ----------
    m, n, d : int (``n`` also ``(low, high)``), default 16, 100, 20
        Groups, samples per group and dimension, as in :func:`synthetic_groups`.
    radius : float, default 5.0
        ``W = {||w|| <= radius}``.
    loss : str, default "logistic"
        One of :data:`~icml24.group_dro.glm_losses.LOSSES`.
    box : bool, default False
        Use the box ``[-radius/sqrt(d), radius/sqrt(d)]^d`` as ``W`` instead of the ball.
    seed : int, default 0
        Seed of the data.
    **kwargs
        ``shift`` and ``flip`` of :func:`synthetic_groups`.

    Returns
    -------
    GroupProblem
    """
    unknown = sorted(set(kwargs) - {"shift", "flip"})
    if unknown:
        raise InputError(f"unknown argument {unknown[0]!r} of synthetic_problem", "it passes on only shift and flip")
    box = check_bool(box, "box")
    if not isinstance(loss, str) or loss not in LOSSES:
        raise InputError(f"loss must be one of {', '.join(LOSSES)}, got {loss!r}")
    radius = check_float(radius, "radius", min_val=0.0, include_boundaries="right")
    X, y, g = synthetic_groups(m, n, d, seed=seed, **kwargs)
    if loss == "squared":
        y = y.astype(float)
    dom = Box(-radius / np.sqrt(d), radius / np.sqrt(d)) if box else Ball(radius)
    return GroupProblem.from_data(X, y, g, loss=loss, domain=dom)
