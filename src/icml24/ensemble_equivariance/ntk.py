"""The analytic NTK of fully connected ReLU networks and the closed-form mean of an infinite deep ensemble.

Gerken & Kessel (ICML 2024), Sec. 3: in the NTK limit with MSE loss and gradient flow, the ensemble mean is

    f_t(x) = Theta(x, X) Theta(X, X)^{-1} (I - exp(-eta Theta(X, X) t)) Y,

and it is exactly equivariant for every x and t when the training set is orbit-closed and Theta is invariant
(Theta(g x, g x') = Theta(x, x'), true for an MLP whose first layer sees x only through inner products). The
kernel is the arc-cosine recursion of Jacot et al. (2018) / Arora et al. (2019) for the NTK parametrisation of
:class:`NTKMLP`; everything is float64.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import InputError
from ..validation import check_array, check_float, check_int, check_seed, check_tensor
from .groups import as_group, is_orbit_closed

__all__ = ["relu_ntk", "NTKEnsembleMean", "NTKMLP"]


def _check_points(x: Any, name: str, d: int | None = None) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    a = check_array(x, name, dtype="float")
    if a.ndim < 2:
        raise InputError(f"{name} must have shape (N, d) or (N, ..., H, W), got shape {a.shape}")
    a = a.reshape(len(a), -1).astype(np.float64)
    if d is not None and a.shape[1] != d:
        raise InputError(f"{name} must have {d} features per row like the training inputs, got {a.shape[1]}")
    if not np.isfinite(np.einsum("ij,ij->i", a, a)).all():  # bounds every inner product of the kernel too
        raise InputError(f"{name} has entries too large: their squared norms overflow float64")
    return a


def relu_ntk(x1: Any, x2: Any | None = None, *, depth: int = 2) -> np.ndarray:
    """The NTK of a ReLU MLP with ``depth`` hidden layers in the NTK parametrisation, in float64.

    Recursion (Arora et al. 2019, Eq. 6-7; arc-cosine kernels of Cho & Saul 2009), with c_sigma = 2:
    ``Sigma_1 = x.x'/d``, ``Theta_1 = Sigma_1``; for each hidden layer
    ``Sigma_{l+1} = 2 E[relu(u) relu(v)]``, ``dSigma = 2 E[relu'(u) relu'(v)]`` with ``(u, v)`` Gaussian of
    covariance ``Sigma_l``, and ``Theta_{l+1} = Theta_l dSigma + Sigma_{l+1}``. The kernel is that of one output
    of :class:`NTKMLP`; outputs are independent (Theta times the identity).

    Parameters
    ----------
    x1 : array-like or torch.Tensor
        ``(N1, d)`` inputs (images are flattened).
    x2 : array-like or torch.Tensor, optional
        ``(N2, d)``; ``x1`` when omitted.
    depth : int, default 2
        Hidden layers (a 64-512-512-10 MLP has 2).

    Returns
    -------
    numpy.ndarray
        ``(N1, N2)`` float64.
    """
    depth = check_int(depth, "depth", min_val=1)
    a = _check_points(x1, "x1")
    b = a if x2 is None else _check_points(x2, "x2", a.shape[1])
    return _recursion(a, b, depth)


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angles between rows, as 2 asin(|u - v| / 2) of the unit vectors: accurate near 0, where arccos is not
    (arccos turns a round-off of 1e-16 in a cosine into 1e-8 in the angle, and would break the symmetry)."""
    na = np.linalg.norm(a, axis=1, keepdims=True)
    nb = np.linalg.norm(b, axis=1, keepdims=True)
    ua = np.divide(a, na, out=np.zeros_like(a), where=na > 0)
    ub = np.divide(b, nb, out=np.zeros_like(b), where=nb > 0)
    cos = np.clip(ua @ ub.T, -1.0, 1.0)
    out = np.arccos(cos)
    # near-parallel pairs: arccos is ill-conditioned there, so recompute from the difference vectors
    i, j = np.nonzero(cos > 0.99)
    for start in range(0, len(i), 200_000):
        ii, jj = i[start : start + 200_000], j[start : start + 200_000]
        diff = ua[ii] - ub[jj]
        out[ii, jj] = 2.0 * np.arcsin(np.clip(np.sqrt(np.einsum("ij,ij->i", diff, diff)) / 2.0, 0.0, 1.0))
    return out


def _one_minus_k1(ang: np.ndarray) -> np.ndarray:
    """1 - (sin t + (pi - t) cos t) / pi, the next layer's 1 - cos, without cancellation at small t."""
    one_minus_cos = 2.0 * np.sin(ang / 2.0) ** 2
    small = ang < 1e-2
    t = np.where(small, ang, 0.0)
    series = t**3 / 3.0 - t**5 / 30.0 + t**7 / 840.0  # sin t - t cos t
    direct = np.sin(ang) - ang * np.cos(ang)
    return (np.pi * one_minus_cos - np.where(small, series, direct)) / np.pi


def _recursion(a: np.ndarray, b: np.ndarray, depth: int) -> np.ndarray:
    d = a.shape[1]
    scale = np.outer(np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)) / d  # sqrt(q q'), kept by He scaling
    ang = _angles(a, b)
    theta = scale * np.cos(ang)
    for _ in range(depth):
        s = _one_minus_k1(ang)  # 1 - cos of the next layer
        new = 2.0 * np.arcsin(np.clip(np.sqrt(s / 2.0), 0.0, 1.0))
        theta = theta * (np.pi - ang) / np.pi + scale * (1.0 - s)
        ang = new
    return theta


class NTKEnsembleMean:
    """The mean of an infinitely wide, infinitely large deep ensemble, in closed form (float64).

    ``f_t(x) = Theta(x, X) Theta(X, X)^{-1} (I - exp(-eta Theta(X, X) t)) Y`` (Gerken & Kessel, Sec. 3; MSE loss,
    gradient flow, zero-mean outputs at initialisation), computed through the eigendecomposition of
    ``Theta(X, X) + ridge I``; ``t = 0`` gives 0 and ``t = inf`` the kernel regression interpolant. The ridge
    keeps the permutation symmetry of an orbit-closed set, so it does not break invariance.

    Parameters
    ----------
    depth : int, default 2
        Hidden layers of the ReLU MLP whose NTK is used.
    lr : float, default 1.0
        The learning rate eta of gradient flow (time is measured in units of 1/eta).
    ridge : float, default 1e-8
        Added to the diagonal of Theta(X, X); rows of duplicates (symmetric images) make it singular.
    """

    def __init__(self, depth: int = 2, *, lr: float = 1.0, ridge: float = 1e-8) -> None:
        self.depth = check_int(depth, "depth", min_val=1)
        self.lr = check_float(lr, "lr", min_val=0.0, include_boundaries="neither")
        self.ridge = check_float(ridge, "ridge", min_val=0.0)
        self._x: np.ndarray | None = None

    def fit(self, x: Any, y: Any, *, grp: Any = None) -> "NTKEnsembleMean":
        """Store the training set and diagonalise its kernel.

        Parameters
        ----------
        x : array-like or torch.Tensor
            ``(N, d)`` or images ``(N, ..., H, H)``.
        y : array-like or torch.Tensor
            Targets ``(N, C)`` (e.g. one-hot) or ``(N,)``.
        grp : Group or str, optional
            When given, ``x`` must be orbit-closed under it (images required), else :class:`InputError`.

        Returns
        -------
        NTKEnsembleMean
            ``self``.
        """
        if isinstance(y, torch.Tensor):
            y = y.detach().cpu().numpy()
        yy = check_array(y, "y", dtype=None, ndim=(1, 2))
        if yy.dtype.kind != "f":
            raise InputError(
                f"y must hold float targets, got dtype {yy.dtype}", "one-hot integer labels with targets(y)"
            )
        xx = _check_points(x, "x")
        if len(yy) != len(xx):
            raise InputError(f"y must have {len(xx)} rows like x, got {len(yy)}")
        if grp is not None:
            grp = as_group(grp, "grp")
            if not is_orbit_closed(x if isinstance(x, torch.Tensor) else check_array(x, "x"), grp):
                raise InputError(
                    f"x is not orbit-closed under {grp.name}: some g x_i is missing",
                    "augment it with augment(x, y, grp, mode='orbit') or pass grp=None",
                )
        self._squeeze = yy.ndim == 1
        self._x = xx
        self._y = yy.reshape(len(yy), -1)
        k = _recursion(xx, xx, self.depth)
        k = 0.5 * (k + k.T)
        self._evals, self._evecs = np.linalg.eigh(k + self.ridge * np.eye(len(k)))
        self._proj = self._evecs.T @ self._y
        return self

    def predict(self, x: Any, t: float = math.inf) -> np.ndarray:
        """The ensemble mean at training time ``t``.

        Parameters
        ----------
        x : array-like or torch.Tensor
            Query points, shaped like the training inputs.
        t : float, default inf
            Training time (>= 0); ``math.inf`` for the converged mean.

        Returns
        -------
        numpy.ndarray
            ``(N, C)`` float64 (``(N,)`` when ``y`` was one-dimensional).
        """
        if self._x is None:
            raise InputError("NTKEnsembleMean is not fitted", "call fit(x, y) first")
        t = check_float(t, "t", min_val=0.0) if not (isinstance(t, float) and t == math.inf) else t
        q = _check_points(x, "x", self._x.shape[1])
        lam = self._evals
        if t == math.inf:
            filt = np.divide(1.0, lam, out=np.zeros_like(lam), where=lam > 1e-14 * lam.max())
        else:
            z = self.lr * t * lam
            filt = np.where(np.abs(z) > 1e-12, -np.expm1(-z) / np.where(lam != 0, lam, 1.0), self.lr * t)
        out = _recursion(q, self._x, self.depth) @ (self._evecs @ (filt[:, None] * self._proj))
        return out[:, 0] if self._squeeze else out


class NTKMLP(nn.Module):
    """A ReLU MLP in the NTK parametrisation whose infinite-width NTK is :func:`relu_ntk`.

    ``h_1 = W_1 x / sqrt(d)``, ``h_{l+1} = sqrt(2 / n) W_{l+1} relu(h_l)``, all weights N(0, 1), no biases (so the
    kernel sees inputs only through inner products and norms); the last layer is linear with ``out_features``
    outputs. The angles are tracked directly (``2 asin(|u - v| / 2)``) so that round-off does not break the
    permutation symmetry.

    Parameters
    ----------
    in_features : int
    width : int
        Hidden units per layer.
    out_features : int
    depth : int, default 2
        Hidden layers.
    seed : int, optional
        Seed of the initialisation (a private generator; the global RNG is untouched). None draws from the
        global RNG, as ``nn.Linear`` does (used by the ensemble trainer, which seeds each member).
    """

    def __init__(
        self, in_features: int, width: int, out_features: int, depth: int = 2, *, seed: int | None = None
    ) -> None:
        super().__init__()
        self.in_features = check_int(in_features, "in_features", min_val=1)
        width = check_int(width, "width", min_val=1)
        out_features = check_int(out_features, "out_features", min_val=1)
        depth = check_int(depth, "depth", min_val=1)
        gen = None if seed is None else torch.Generator().manual_seed(check_seed(seed))
        sizes = [self.in_features] + [width] * depth + [out_features]
        self.weights = nn.ParameterList(
            [nn.Parameter(torch.randn(o, i, generator=gen)) for i, o in zip(sizes[:-1], sizes[1:])]
        )
        self.scales = [1.0 / math.sqrt(sizes[0])] + [math.sqrt(2.0 / n) for n in sizes[1:-1]]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs ``(N, out_features)``; images are flattened.

        Parameters
        ----------
        x : torch.Tensor
            ``(N, in_features)`` or ``(N, ..., H, W)`` with ``in_features`` entries per row.

        Returns
        -------
        torch.Tensor
        """
        x = check_tensor(x, "x", dtype="float")
        if x.ndim < 2 or x[0].numel() != self.in_features:
            raise InputError(
                f"x must be (N, {self.in_features}) or images of {self.in_features} entries per row, "
                f"got shape {tuple(x.shape)}"
            )
        if x.dtype != self.weights[0].dtype:
            raise InputError(f"x must have the weights' dtype {self.weights[0].dtype}, got {x.dtype}")
        h = x.reshape(x.shape[0], -1)
        for i, (w, s) in enumerate(zip(self.weights, self.scales)):
            if i:
                h = torch.relu(h)
            h = s * (h @ w.T)
        return h
