"""Synthetic multi-group classification data with known per-group ground truth (numpy arrays).

Group ``i`` has its own ground-truth direction ``w_i^* = u + delta_i`` (a shared component ``u`` with
``||u|| = 2`` plus a group-specific shift ``delta_i ~ N(0, shift^2 I / d)``), features ``x ~ N(0, I_d)`` and
labels ``y = sign(<x, w_i^*>)`` flipped with probability ``flip``. Groups differ in their decision boundaries,
so no single ``w`` is best for all of them and the worst-group risk differs from the average risk: the setting
of the group DRO claims (per-group linear models with label noise, in the style of Zhang et al., NeurIPS 2023;
the experimental data of Yu et al., ICML 2024, were not available to us). :func:`icml24.group_dro.synthetic_problem`
wraps it in a ``GroupProblem``.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..validation import check_float, check_int, check_rng

__all__ = ["synthetic_groups"]


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
    m = check_int(m, "m", min_val=1)
    d = check_int(d, "d", min_val=1)
    shift = check_float(shift, "shift", min_val=0.0)
    flip = check_float(flip, "flip", min_val=0.0, max_val=0.5, include_boundaries="left")
    rng = check_rng(seed)
    if isinstance(n, tuple):
        if len(n) != 2:
            raise InputError(f"n range must be a (low, high) pair, got {n!r}")
        lo, hi = check_int(n[0], "n[0]"), check_int(n[1], "n[1]")
        if not 1 <= lo <= hi:
            raise InputError(f"n range must satisfy 1 <= low <= high, got {n!r}")
        sizes = rng.integers(lo, hi + 1, size=m)
    else:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise InputError(f"n must be a positive integer or a (low, high) range, got {n!r}")
        sizes = np.full(m, check_int(n, "n", min_val=1))
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
