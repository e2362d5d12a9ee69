"""The peers of MPD on the same API: particle gradient descent (PGD, Kuntz, Lim & Johansen, AISTATS 2023),
alternating back-propagation (ABP, Han et al. 2017, persistent as the official code's ``ABP``) and EM where its
E-step is closed form (the toy hierarchical model and probabilistic PCA).
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from ..validation import check_float, check_int, check_tensor
from .models import check_toy_data
from .particles import ParticleFit, Recorder, RMSProp, check_common, check_preconditioner, evaluate, working_copy

__all__ = ["PGD", "ABP", "toy_em", "ppca_em"]

_POS = {"min_val": 0.0, "include_boundaries": "neither"}


class PGD:
    """Particle gradient descent: the Euclidean-Wasserstein gradient flow of the free energy, discretised::

        theta <- theta + h_theta (1/N) sum_i grad_theta log p_theta(X^i, y)
        X^i   <- X^i + h_x grad_x log p_theta(X^i, y) + sqrt(2 h_x) xi^i

    both at the current ``(theta, X)``, so that one gradient evaluation serves both updates.

    Parameters
    ----------
    h_theta : float
        Step of the parameters (official ``theta_step_size``).
    h_x : float
        Step of the particles (official ``q_step_size``).
    n_particles : int, default 10
    preconditioner : {None, "rmsprop"}, default None
        RMSProp on the parameter gradient, as the image configs.
    """

    name = "pgd"

    def __init__(self, h_theta: float, h_x: float, *, n_particles: int = 10, preconditioner: str | None = None):
        self.h_theta = check_float(h_theta, "h_theta", **_POS)
        self.h_x = check_float(h_x, "h_x", **_POS)
        self.n_particles = check_int(n_particles, "n_particles", min_val=1)
        self.preconditioner = check_preconditioner(preconditioner)

    def fit(
        self,
        model: nn.Module,
        y,
        steps: int,
        *,
        x0=None,
        seed: int = 0,
        every: int = 1,
        callback: Callable | None = None,
    ) -> ParticleFit:
        """Run ``steps`` PGD steps from ``model``'s parameters and ``x0`` (default ``N(0, I)``).

        Parameters
        ----------
        model : torch.nn.Module
            ``forward(x, y) -> (n_particles, n_data)`` log joint densities; it is copied, not changed.
        y : torch.Tensor
        steps : int
        x0 : torch.Tensor, optional
            ``(n_particles, n_data, latent_dim)``.
        seed : int, default 0
        every : int, default 1
        callback : callable, optional
            ``callback(model, particles) -> dict`` of floats.

        Returns
        -------
        ParticleFit
            One gradient evaluation per step.
        """
        model, y, steps, d, x0, every, gen = check_common(model, y, steps, self.n_particles, x0, every, callback, seed)
        work, y, x = working_copy(model, y, x0, self.n_particles, d, gen)
        params = [p for p in work.parameters() if p.requires_grad]
        pre = RMSProp(params) if self.preconditioner == "rmsprop" else None
        fit = ParticleFit(work, x, None, method=self.name)
        rec = Recorder(fit, every, callback)
        rec(0, 0, float("nan"))
        for k in range(1, steps + 1):
            lp, g, s = evaluate(work, x, y, theta=True, score=True)
            if pre is not None:
                g = pre(g)
            with torch.no_grad():
                for p, gi in zip(params, g):
                    p.add_(self.h_theta * gi)
            z = torch.randn(x.shape, generator=gen, dtype=torch.float64).to(x.dtype)
            x = x + self.h_x * s + math.sqrt(2 * self.h_x) * z
            fit.particles = x
            rec(k, k, lp, force=k == steps)
        return fit


class ABP:
    """Alternating back-propagation, persistent (the official ``ABP``): each step runs ``chain_length`` Langevin
    steps on the particles with the parameters frozen, then one gradient step on the parameters.

    Parameters
    ----------
    h_theta : float
        Step of the parameters.
    h_x : float
        Langevin step of the particles (official default 0.1).
    chain_length : int, default 25
        Langevin steps per parameter step (official default).
    n_particles : int, default 1
        The official code uses one particle per datum.
    preconditioner : {None, "rmsprop"}, default None
    """

    name = "abp"

    def __init__(
        self,
        h_theta: float,
        h_x: float,
        *,
        chain_length: int = 25,
        n_particles: int = 1,
        preconditioner: str | None = None,
    ):
        self.h_theta = check_float(h_theta, "h_theta", **_POS)
        self.h_x = check_float(h_x, "h_x", **_POS)
        self.chain_length = check_int(chain_length, "chain_length", min_val=1)
        self.n_particles = check_int(n_particles, "n_particles", min_val=1)
        self.preconditioner = check_preconditioner(preconditioner)

    def fit(
        self,
        model: nn.Module,
        y,
        steps: int,
        *,
        x0=None,
        seed: int = 0,
        every: int = 1,
        callback: Callable | None = None,
    ) -> ParticleFit:
        """Run ``steps`` ABP steps (each ``chain_length + 1`` gradient evaluations).

        Parameters
        ----------
        model : torch.nn.Module
            Copied, not changed.
        y : torch.Tensor
        steps : int
        x0 : torch.Tensor, optional
            ``(n_particles, n_data, latent_dim)``.
        seed : int, default 0
        every : int, default 1
        callback : callable, optional

        Returns
        -------
        ParticleFit
        """
        model, y, steps, d, x0, every, gen = check_common(model, y, steps, self.n_particles, x0, every, callback, seed)
        work, y, x = working_copy(model, y, x0, self.n_particles, d, gen)
        params = [p for p in work.parameters() if p.requires_grad]
        pre = RMSProp(params) if self.preconditioner == "rmsprop" else None
        fit = ParticleFit(work, x, None, method=self.name)
        rec = Recorder(fit, every, callback)
        rec(0, 0, float("nan"))
        evals = 0
        for k in range(1, steps + 1):
            for _ in range(self.chain_length):
                _, _, s = evaluate(work, x, y, theta=False, score=True)
                z = torch.randn(x.shape, generator=gen, dtype=torch.float64).to(x.dtype)
                x = x + self.h_x * s + math.sqrt(2 * self.h_x) * z
            lp, g, _ = evaluate(work, x, y, theta=True, score=False)
            evals += self.chain_length + 1
            if pre is not None:
                g = pre(g)
            with torch.no_grad():
                for p, gi in zip(params, g):
                    p.add_(self.h_theta * gi)
            fit.particles = x
            rec(k, evals, lp, force=k == steps)
        return fit


def toy_em(y, theta0: float, steps: int) -> list[float]:
    """EM on the toy hierarchical model ``x_j ~ N(theta, 1)``, ``y_j | x_j ~ N(x_j, 1)``: the E-step's posterior
    mean is ``(theta + y_j)/2``, so ``theta <- (theta + mean(y))/2``; the MLE is ``mean(y)``.

    Parameters
    ----------
    y : torch.Tensor
        ``(n_data,)`` or ``(n_data, 1)``.
    theta0 : float
    steps : int

    Returns
    -------
    list of float
        ``theta`` at steps ``0..steps``.
    """
    y = check_toy_data(y)
    theta = check_float(theta0, "theta0")
    steps = check_int(steps, "steps", min_val=0)
    ybar = float(y.mean())
    out = [theta]
    for _ in range(steps):
        theta = 0.5 * (theta + ybar)
        out.append(theta)
    return out


def ppca_em(y, latent_dim: int, steps: int, *, seed: int = 0):
    """EM for probabilistic PCA (Tipping & Bishop 1999, closed-form E and M steps).

    Parameters
    ----------
    y : torch.Tensor
        ``(n_data, data_dim)``.
    latent_dim : int
        ``1 <= latent_dim < data_dim``.
    steps : int
    seed : int, default 0
        Seeds the initial ``W ~ N(0, 1)``; ``mu`` is the sample mean, ``sigma^2 = 1``.

    Returns
    -------
    tuple
        ``(W, mu, sigma2, log_liks)``: the final estimates (float64) and the exact log-likelihood after each
        step (index 0 is the start).
    """
    from .models import ppca_log_likelihood

    y = check_tensor(y, "y", ndim=2, allow_empty=False).double()
    n, dim = y.shape
    q = check_int(latent_dim, "latent_dim", min_val=1, max_val=dim - 1)
    steps = check_int(steps, "steps", min_val=0)
    from ..validation import check_seed

    gen = torch.Generator().manual_seed(check_seed(seed))
    w = torch.randn(dim, q, generator=gen, dtype=torch.float64)
    mu = y.mean(0)
    s2 = 1.0
    yc = y - mu
    s_cov = yc.T @ yc / n
    lls = [ppca_log_likelihood(y, w, mu, s2)]
    for _ in range(steps):
        m_inv = torch.linalg.inv(w.T @ w + s2 * torch.eye(q, dtype=torch.float64))
        sw = s_cov @ w
        w_new = sw @ torch.linalg.inv(s2 * torch.eye(q, dtype=torch.float64) + m_inv @ w.T @ sw)
        s2 = float(torch.trace(s_cov - sw @ m_inv @ w_new.T)) / dim
        w = w_new
        lls.append(ppca_log_likelihood(y, w, mu, s2))
    return w, mu, s2, lls
