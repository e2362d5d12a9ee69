"""Latent-variable models of the experiments, each an ``nn.Module`` with ``forward(x, y) -> (n_particles, n_data)``
log joint densities: the official code's toy hierarchical model, probabilistic PCA and a generator network; with
the exact log-likelihoods and maximum-likelihood estimates where they are closed form.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_float, check_int, check_tensor

__all__ = [
    "ToyHierarchical",
    "PPCA",
    "GeneratorNet",
    "toy_log_likelihood",
    "ppca_log_likelihood",
    "ppca_mle",
]

_LOG2PI = math.log(2 * math.pi)


def _check_xy(x, y, d: int, y_tail: tuple[int, ...], dtype: torch.dtype):
    """Finite tensors of the model's dtype: particles ``(n_particles, n_data, d)`` and data ``(n_data, *y_tail)``."""
    x = check_tensor(x, "x", shape=(None, None, d))
    y = check_tensor(y, "y", shape=(x.shape[1], *y_tail))
    if x.dtype != dtype or y.dtype != dtype:
        raise InputError(f"x and y must have the model's dtype {dtype}, got {x.dtype} and {y.dtype}")
    return x, y


class ToyHierarchical(nn.Module):
    """The official ``ToyHMM``: ``x_j ~ N(theta, 1)``, ``y_j | x_j ~ N(x_j, 1)``, one scalar latent per datum.

    The marginal is ``y_j ~ N(theta, 2)``, the MLE ``mean(y)``, the posterior ``x_j | y_j ~ N((theta + y_j)/2, 1/2)``.
    ``replicates = R > 1`` holds R independent copies of the problem side by side (``theta`` of shape ``(R,)``,
    latents and data with R columns): the log density is their sum, so every particle method's update (without a
    preconditioner) is exactly R independent runs.

    Parameters
    ----------
    theta : float, default 0.0
        Initial parameter (the official script starts at 0; the data's truth is 100).
    replicates : int, default 1
    dtype : torch.dtype, default torch.float64
    """

    def __init__(self, theta: float = 0.0, replicates: int = 1, dtype: torch.dtype = torch.float64) -> None:
        theta = check_float(theta, "theta")
        replicates = check_int(replicates, "replicates", min_val=1)
        if dtype not in (torch.float32, torch.float64):
            raise InputError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
        super().__init__()
        self.latent_dim = replicates
        self.theta = nn.Parameter(torch.full((replicates,), theta, dtype=dtype))

    def forward(self, x, y):
        """Log joint density per particle and datum (summed over replicates).

        Parameters
        ----------
        x : torch.Tensor
            ``(n_particles, n_data, replicates)``.
        y : torch.Tensor
            ``(n_data, replicates)``.

        Returns
        -------
        torch.Tensor
            ``(n_particles, n_data)``.
        """
        x, y = _check_xy(x, y, self.latent_dim, (self.latent_dim,), self.theta.dtype)
        return (-0.5 * (x - self.theta) ** 2 - 0.5 * (y - x) ** 2 - _LOG2PI).sum(-1)


def check_toy_data(y) -> torch.Tensor:
    """The toy model's data for EM and the likelihood: ``(n_data,)`` or ``(n_data, 1)``, as float64 ``(n_data,)``."""
    y = check_tensor(y, "y", ndim=(1, 2))
    if y.ndim == 2 and y.shape[1] != 1:
        raise InputError(f"y must be (n_data,) or (n_data, 1), got shape {tuple(y.shape)}", "one replicate at a time")
    return y.double().reshape(-1)


def toy_log_likelihood(y, theta: float) -> float:
    """Exact marginal log-likelihood of the toy model: ``sum_j log N(y_j; theta, 2)``.

    Parameters
    ----------
    y : torch.Tensor
        ``(n_data,)`` or ``(n_data, 1)``.
    theta : float

    Returns
    -------
    float
    """
    y = check_toy_data(y)
    theta = check_float(theta, "theta")
    return float((-0.5 * (y - theta) ** 2 / 2.0 - 0.5 * math.log(2 * math.pi * 2.0)).sum())


class PPCA(nn.Module):
    """Probabilistic PCA: ``x ~ N(0, I_q)``, ``y | x ~ N(W x + mu, sigma^2 I_D)``; ``theta = (W, mu, log sigma)``.

    Parameters
    ----------
    data_dim : int
        ``D``.
    latent_dim : int
        ``q < D``.
    seed : int, default 0
        Initial ``W ~ N(0, 1/q)``, ``mu = 0``, ``log sigma = 0``.
    dtype : torch.dtype, default torch.float64
    """

    def __init__(self, data_dim: int, latent_dim: int, *, seed: int = 0, dtype: torch.dtype = torch.float64):
        from ..validation import check_seed

        data_dim = check_int(data_dim, "data_dim", min_val=2)
        latent_dim = check_int(latent_dim, "latent_dim", min_val=1, max_val=data_dim - 1)
        seed = check_seed(seed)
        if dtype not in (torch.float32, torch.float64):
            raise InputError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.latent_dim = latent_dim
        self.data_dim = data_dim
        self.W = nn.Parameter(torch.randn(data_dim, latent_dim, generator=gen, dtype=dtype) / math.sqrt(latent_dim))
        self.mu = nn.Parameter(torch.zeros(data_dim, dtype=dtype))
        self.log_sigma = nn.Parameter(torch.zeros((), dtype=dtype))

    def forward(self, x, y):
        """Log joint density per particle and datum.

        Parameters
        ----------
        x : torch.Tensor
            ``(n_particles, n_data, latent_dim)``.
        y : torch.Tensor
            ``(n_data, data_dim)``.

        Returns
        -------
        torch.Tensor
            ``(n_particles, n_data)``.
        """
        x, y = _check_xy(x, y, self.latent_dim, (self.data_dim,), self.W.dtype)
        resid = y - x @ self.W.T - self.mu
        s2 = torch.exp(2 * self.log_sigma)
        prior = -0.5 * (x**2).sum(-1) - 0.5 * self.latent_dim * _LOG2PI
        lik = -0.5 * (resid**2).sum(-1) / s2 - self.data_dim * (self.log_sigma + 0.5 * _LOG2PI)
        return prior + lik

    def log_likelihood(self, y) -> float:
        """Exact marginal log-likelihood ``sum_i log N(y_i; mu, W W^T + sigma^2 I)`` at the current parameters.

        Parameters
        ----------
        y : torch.Tensor
            ``(n_data, data_dim)``.

        Returns
        -------
        float
        """
        y = check_tensor(y, "y", shape=(None, self.data_dim), allow_empty=False)
        with torch.no_grad():
            return ppca_log_likelihood(y, self.W.double(), self.mu.double(), float(torch.exp(2 * self.log_sigma)))


def ppca_log_likelihood(y, W, mu, sigma2: float) -> float:
    """Exact PPCA log-likelihood ``sum_i log N(y_i; mu, W W^T + sigma2 I)`` (float64).

    Parameters
    ----------
    y : torch.Tensor
        ``(n_data, D)``.
    W : torch.Tensor
        ``(D, q)``.
    mu : torch.Tensor
        ``(D,)``.
    sigma2 : float
        > 0.

    Returns
    -------
    float
    """
    y = check_tensor(y, "y", ndim=2, allow_empty=False).double()
    dim = y.shape[1]
    W = check_tensor(W, "W", ndim=2).double()
    if W.shape[0] != dim:
        raise InputError(f"W must have {dim} rows (the data dimension), got shape {tuple(W.shape)}")
    mu = check_tensor(mu, "mu", shape=(dim,)).double()
    sigma2 = check_float(sigma2, "sigma2", min_val=0.0, include_boundaries="neither")
    cov = W @ W.T + sigma2 * torch.eye(dim, dtype=torch.float64)
    chol, info = torch.linalg.cholesky_ex(cov)
    if info or not bool(torch.isfinite(chol).all()):
        raise InputError("W W^T + sigma2 I is not numerically positive definite", "W is too large for sigma2")
    z = torch.linalg.solve_triangular(chol, (y - mu).T, upper=False)
    logdet = 2 * torch.log(torch.diagonal(chol)).sum()
    n = y.shape[0]
    return float(-0.5 * (z**2).sum() - 0.5 * n * (logdet + dim * _LOG2PI))


def ppca_mle(y, latent_dim: int):
    """Closed-form PPCA maximum likelihood (Tipping & Bishop 1999): ``mu = mean(y)``, ``sigma2`` the mean of the
    discarded eigenvalues of the sample covariance, ``W = U_q (Lambda_q - sigma2 I)^{1/2}``.

    Parameters
    ----------
    y : torch.Tensor
        ``(n_data, D)``.
    latent_dim : int
        ``1 <= q < D``.

    Returns
    -------
    tuple
        ``(W, mu, sigma2, log_likelihood)`` in float64.
    """
    y = check_tensor(y, "y", ndim=2, allow_empty=False).double()
    n, dim = y.shape
    q = check_int(latent_dim, "latent_dim", min_val=1, max_val=dim - 1)
    mu = y.mean(0)
    yc = y - mu
    cov = yc.T @ yc / n
    if not bool(torch.isfinite(cov).all()):
        raise InputError("y is too large: its sample covariance overflows float64")
    evals, evecs = torch.linalg.eigh(cov)
    evals, evecs = evals.flip(0), evecs.flip(1)
    sigma2 = float(evals[q:].mean())
    W = evecs[:, :q] * torch.sqrt(torch.clamp(evals[:q] - sigma2, min=0.0))
    return W, mu, sigma2, ppca_log_likelihood(y, W, mu, sigma2)


class GeneratorNet(nn.Module):
    """A generator network: ``x ~ N(0, I)``, ``y | x ~ N(g_theta(x), sigma^2 I)`` with ``g`` an MLP (the image
    setting of the paper, whose MNIST config uses an MLP decoder).

    Parameters
    ----------
    data_dim : int
        Pixels per image.
    latent_dim : int, default 8
    hidden : int, default 64
    sigma : float, default 0.3
        Observation noise (fixed).
    seed : int, default 0
        Initial weights.
    """

    def __init__(self, data_dim: int, latent_dim: int = 8, hidden: int = 64, sigma: float = 0.3, *, seed: int = 0):
        from ..validation import check_seed

        data_dim = check_int(data_dim, "data_dim", min_val=1)
        latent_dim = check_int(latent_dim, "latent_dim", min_val=1)
        hidden = check_int(hidden, "hidden", min_val=1)
        sigma = check_float(sigma, "sigma", min_val=0.0, include_boundaries="neither")
        seed = check_seed(seed)
        super().__init__()
        self.latent_dim, self.data_dim, self.sigma = latent_dim, data_dim, sigma
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = nn.Sequential(
                nn.Linear(latent_dim, hidden),
                nn.GELU(),
                nn.Linear(hidden, hidden),
                nn.GELU(),
                nn.Linear(hidden, data_dim),
            )

    def decode(self, x):
        """Mean image ``g_theta(x)``.

        Parameters
        ----------
        x : torch.Tensor
            ``(..., latent_dim)``.

        Returns
        -------
        torch.Tensor
            ``(..., data_dim)``.
        """
        x = check_tensor(x, "x")
        dtype = self.net[0].weight.dtype
        if x.ndim == 0 or x.shape[-1] != self.latent_dim or x.dtype != dtype:
            raise InputError(
                f"x must be (..., {self.latent_dim}) of dtype {dtype}, got shape {tuple(x.shape)} and dtype {x.dtype}"
            )
        return self.net(x)

    def forward(self, x, y):
        """Log joint density per particle and datum.

        Parameters
        ----------
        x : torch.Tensor
            ``(n_particles, n_data, latent_dim)``.
        y : torch.Tensor
            ``(n_data, data_dim)``.

        Returns
        -------
        torch.Tensor
            ``(n_particles, n_data)``.
        """
        x, y = _check_xy(x, y, self.latent_dim, (self.data_dim,), self.net[0].weight.dtype)
        resid = y - self.net(x)
        prior = -0.5 * (x**2).sum(-1) - 0.5 * self.latent_dim * _LOG2PI
        lik = -0.5 * (resid**2).sum(-1) / self.sigma**2 - self.data_dim * (math.log(self.sigma) + 0.5 * _LOG2PI)
        return prior + lik
