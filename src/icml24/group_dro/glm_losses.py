"""The built-in per-sample losses of :meth:`GroupProblem.from_data <icml24.group_dro.problem.GroupProblem.from_data>`.

Each is a generalised linear loss ``l(w; x, y) = f(<x, w>, y)``, given by its value and derivative in the margin
``s = <x, w>``: :data:`LOSSES` on arrays (the problem's oracle), :data:`SCALAR_LOSSES` on Python floats (the
single-sample inner loops of the baselines).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

# A generalised linear loss l(w; x, y) = f(<x, w>, y): value f and derivative f' in the margin s = <x, w>.


def _logistic(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = -y * s
    val = np.logaddexp(0.0, u)
    return val, -y * np.exp(u - val)  # d/ds = -y * sigmoid(u)


def _squared(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = s - y
    return 0.5 * r * r, r


def _smoothed_hinge(s: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    # Quadratically smoothed hinge (smoothing width 1): 1/2 - u for u <= 0, (1-u)^2/2 on (0, 1), 0 for u >= 1.
    u = y * s
    val = np.where(u <= 0, 0.5 - u, np.where(u < 1, 0.5 * (1 - u) ** 2, 0.0))
    du = np.where(u <= 0, -1.0, np.where(u < 1, u - 1.0, 0.0))
    return val, y * du


def _logistic_1(s: float, y: float) -> tuple[float, float]:
    u = -y * s
    val = u + math.log1p(math.exp(-u)) if u > 0 else math.log1p(math.exp(u))
    return val, -y * math.exp(u - val)


def _squared_1(s: float, y: float) -> tuple[float, float]:
    r = s - y
    return 0.5 * r * r, r


def _smoothed_hinge_1(s: float, y: float) -> tuple[float, float]:
    u = y * s
    if u <= 0:
        return 0.5 - u, -y
    if u < 1:
        return 0.5 * (1 - u) ** 2, y * (u - 1)
    return 0.0, 0.0


#: Scalar twins of the losses (same formulas on Python floats), for single-sample inner loops.
SCALAR_LOSSES = {"logistic": _logistic_1, "squared": _squared_1, "smoothed_hinge": _smoothed_hinge_1}

#: The built-in per-sample losses of :meth:`~icml24.group_dro.problem.GroupProblem.from_data`: name ->
#: (function of the margin, labels, curvature bound, derivative bound or None when it grows with the margin).
LOSSES: dict[str, tuple[Callable, str, float, float | None]] = {
    "logistic": (_logistic, "binary", 0.25, 1.0),
    "squared": (_squared, "real", 1.0, None),
    "smoothed_hinge": (_smoothed_hinge, "binary", 1.0, 1.0),
}


__all__ = ["LOSSES", "SCALAR_LOSSES"]
