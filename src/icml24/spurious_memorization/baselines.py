"""The peers of the min-norm interpolator's memorization measurements.

* :func:`control_accuracy`: the same regression queried with the spurious part re-sampled too (the control:
  no model can recover ``g_i`` from a query that shares nothing with sample ``i``, so it sits at chance).
* :class:`KernelRidge`: ridge regression on the same features, the ridge as the knob a user would turn to
  memorize less (``ridge = 0`` is the min-norm interpolator).
* :func:`feature_alignment_refits`: the feature alignment by ``N`` separate leave-one-out solves (the obvious
  way, ``O(N^4)``), the peer of the one-factorisation kernel formula in the benchmark and the tests.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

from ..errors import InputError
from ..validation import check_float
from .features import FeatureMap, as_array
from .memorization import MinNormInterpolator, accuracy, check_feature_map, check_mask, predictions

__all__ = ["control_accuracy", "resample_spurious", "KernelRidge", "feature_alignment_refits", "loo_refits"]


def resample_spurious(z_spurious: Any, mask: Any, seed: Any = 0) -> np.ndarray:
    """Queries with the spurious coordinates re-drawn from a standard Gaussian (the control of the synthetic data;
    the image loaders give their own control with fresh border noise).

    Parameters
    ----------
    z_spurious : numpy.ndarray or torch.Tensor
        ``(N, d)`` spurious queries.
    mask : array-like of bool
        ``(d,)``, True on spurious coordinates.
    seed : int or numpy.random.Generator, default 0

    Returns
    -------
    numpy.ndarray
        ``(N, d)``.
    """
    from ..validation import check_rng

    zs = as_array(z_spurious, "z_spurious")
    mask = check_mask(mask, zs.shape[1])
    rng = check_rng(seed)
    out = zs.copy()
    out[:, mask] = rng.standard_normal((zs.shape[0], int(mask.sum())))
    return out


def control_accuracy(model: Any, z_control: Any, g: Any) -> float:
    """Spurious accuracy on control queries (spurious part re-sampled): expected 0.5 at every ``N``.

    Parameters
    ----------
    model : object with ``predict``
        Fitted on the training samples.
    z_control : numpy.ndarray or torch.Tensor
        ``(N, d)`` control queries, in the order of the training samples.
    g : array-like
        ``(N,)`` training labels.

    Returns
    -------
    float
    """
    return accuracy(predictions(model, z_control, "z_control"), g)


class KernelRidge:
    """Ridge regression on a feature map, ``theta = Phi^T (K + ridge I)^{-1} G``.

    Parameters
    ----------
    feature_map : FeatureMap
    ridge : float, default 1e-3
        Non-negative; relative to the mean diagonal of ``K`` (so it means the same across widths). 0 gives the
        min-norm interpolator.
    """

    def __init__(self, feature_map: FeatureMap, ridge: float = 1e-3) -> None:
        self.feature_map = check_feature_map(feature_map)
        self.ridge = check_float(ridge, "ridge", min_val=0.0)
        self._z = None

    def fit(self, z: Any, g: Any) -> "KernelRidge":
        """Fit on ``(z, g)``.

        Parameters
        ----------
        z : numpy.ndarray or torch.Tensor
            ``(N, d)``.
        g : array-like
            ``(N,)``.

        Returns
        -------
        KernelRidge
            ``self``.
        """
        z = self.feature_map.check_inputs(z, "z")
        g = as_array(g, "g", ndim=1)
        if g.shape != (z.shape[0],):
            raise InputError(f"g must have shape ({z.shape[0]},), got {g.shape}")
        k = self.feature_map._kernel(z, z, "z")
        lam = self.ridge * float(np.mean(np.diag(k)))
        try:
            self._coef = scipy.linalg.solve(k + lam * np.eye(len(k)), g, assume_a="pos")
        except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
            raise InputError("the regularised kernel matrix is singular", "raise ridge") from None
        self._z = z
        return self

    def predict(self, z: Any) -> np.ndarray:
        """Predictions ``kappa(z, Z) (K + ridge I)^{-1} G``.

        Parameters
        ----------
        z : numpy.ndarray or torch.Tensor
            ``(n, d)``.

        Returns
        -------
        numpy.ndarray
        """
        if self._z is None:
            raise InputError("the model is not fitted", "call fit(z, g) first")
        z = self.feature_map.check_inputs(z, "z")
        return self.feature_map._kernel(z, self._z, "z") @ self._coef


def feature_alignment_refits(feature_map: FeatureMap, z: Any, z_spurious: Any) -> np.ndarray:
    """``F(z_i^s, z_i)`` by its definition, one leave-one-out solve per sample:
    ``(kappa(s, z_i) - kappa(s, Z_-i) K_-i^{-1} kappa(Z_-i, z_i))`` over
    ``(kappa(z_i, z_i) - kappa(z_i, Z_-i) K_-i^{-1} kappa(Z_-i, z_i))``.

    Parameters
    ----------
    feature_map : FeatureMap
    z : numpy.ndarray or torch.Tensor
        ``(N, d)``.
    z_spurious : numpy.ndarray or torch.Tensor
        ``(N, d)``.

    Returns
    -------
    numpy.ndarray
        ``(N,)``.
    """
    feature_map = check_feature_map(feature_map)
    z = feature_map.check_inputs(z, "z")
    zs = feature_map.check_inputs(z_spurious, "z_spurious")
    if zs.shape != z.shape:
        raise InputError(f"z_spurious must have the shape of z {z.shape}, got {zs.shape}")
    n = len(z)
    if n < 2:
        raise InputError(f"z must hold at least 2 samples (one is left out at a time), got {n}")
    k = feature_map._kernel(z, z, "z")
    c = feature_map._kernel(zs, z, "z_spurious")
    try:  # a positive definite K has positive definite principal submatrices: check once
        scipy.linalg.cho_factor(k, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        raise InputError(
            "the kernel matrix of z is singular (repeated samples)", "remove duplicates or raise the width"
        ) from None
    out = np.empty(n)
    for i in range(n):
        rest = np.r_[0:i, i + 1 : n]
        chol = scipy.linalg.cho_factor(k[np.ix_(rest, rest)], lower=True, check_finite=False)
        w = scipy.linalg.cho_solve(chol, k[rest, i], check_finite=False)
        out[i] = (c[i, i] - c[i, rest] @ w) / (k[i, i] - k[i, rest] @ w)
    return out


def loo_refits(feature_map: FeatureMap, z: Any, g: Any, queries: Any) -> tuple[np.ndarray, np.ndarray]:
    """Leave-one-out predictions by refitting without each sample: ``f_{-i}(z_i)`` and ``f_{-i}(queries_i)``.

    Parameters
    ----------
    feature_map : FeatureMap
    z : numpy.ndarray or torch.Tensor
        ``(N, d)``.
    g : array-like
        ``(N,)``.
    queries : numpy.ndarray or torch.Tensor
        ``(N, d)``: one query per sample.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``f_{-i}(z_i)`` and ``f_{-i}(queries_i)``, each ``(N,)``.
    """
    feature_map = check_feature_map(feature_map)
    z = feature_map.check_inputs(z, "z")
    q = feature_map.check_inputs(queries, "queries")
    g = as_array(g, "g", ndim=1)
    n = len(z)
    if g.shape != (n,):
        raise InputError(f"g must have shape ({n},), one target per sample, got {g.shape}")
    if q.shape[0] != n:
        raise InputError(f"queries must have one row per sample ({n}), got {q.shape[0]}")
    if n < 2:
        raise InputError(f"z must hold at least 2 samples (one is left out at a time), got {n}")
    at_z, at_q = np.empty(n), np.empty(n)
    for i in range(n):
        rest = np.r_[0:i, i + 1 : n]
        m = MinNormInterpolator(feature_map).fit(z[rest], g[rest])
        at_z[i], at_q[i] = m.predict(np.stack([z[i], q[i]]))
    return at_z, at_q
