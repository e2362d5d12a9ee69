"""Momentum Particle Descent (MPD): maximum likelihood for latent-variable models with momentum on the parameters
and on the particles (Lim, Kuntz, Power & Johansen, ICML 2024, arXiv 2312.07335).

The model is an ``nn.Module`` whose parameters are ``theta`` and whose ``forward(x, y)`` returns the log joint
density ``log p_theta(x_i^p, y_i)`` of every particle ``p`` and datum ``i``:

* ``x``: particles of shape ``(n_particles, n_data, latent_dim)``;
* ``y``: the observed data, a tensor whose first dimension is ``n_data``;
* returns a tensor of shape ``(n_particles, n_data)``.

MPD discretises the momentum-enriched flow of the free energy (the paper's Sec. 3; continuous time)::

    d theta = eta_theta m dt,   dm = (-gamma_theta eta_theta m + E_q grad_theta log p_theta(x, y)) dt
    dX      = eta_x M dt,       dM = (-gamma_x eta_x M + grad_x log p_theta(X, y)) dt + sqrt(2 gamma_x) dW

exactly as the official class ``MPD_Proposed``: the parameters drift with their momentum first, the gradient is
taken at the drifted point, then both follow the exact solution of the linear ODE with that gradient frozen; the
particles use the new ``theta`` and the exact Ornstein-Uhlenbeck solution with frozen score, with correlated
Gaussian noise (:func:`noise_covariance`).

The flow's exact steps are in :mod:`icml24.momentum_particles.flow`, the model, its checks and the fit's trace
(shared with the baselines) in :mod:`icml24.momentum_particles.particles`.
"""

from __future__ import annotations

import math
from typing import Callable

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_bool, check_float, check_int
from .flow import (  # noqa: F401
    flow_coefficients,
    flow_step,
    in_float_range,
    inverse_mass_unchecked,
    momentum_from_target,
    noise_covariance,
    noise_covariance_unchecked,
)
from .particles import (  # noqa: F401 - importable from here as before
    FunctionModel,
    ParticleFit,
    Recorder,
    RMSProp,
    check_common,
    check_preconditioner,
    evaluate,
    working_copy,
)

__all__ = [
    "MPD",
    "ParticleFit",
    "FunctionModel",
    "noise_covariance",
    "momentum_from_target",
    "flow_step",
    "sample_posterior",
]


# ----------------------------------------------------------------------------------------------- MPD
class MPD:
    """Momentum Particle Descent, the official ``MPD_Proposed`` integrator.

    Parameters
    ----------
    h_theta : float
        Step of the parameters (official ``theta_step_size``; the toy script uses ``1e-2 / n_data`` because the
        parameter gradient sums over the data).
    h_x : float
        Step of the particles (official ``q_step_size``).
    gamma_theta, gamma_x : float, default 0.1
        Frictions (the toy script's "critical" regime is 0.1, underdamped 0.05, overdamped 2).
    eta_theta, eta_x : float, optional
        Inverse masses (the toy script: 2000). Give these or the target momenta.
    momentum_theta, momentum_x : float, optional
        Target momenta; then ``eta = (1 - momentum)/(gamma h)`` (:func:`momentum_from_target`; the MNIST config:
        0.95 for theta, 0 for the particles).
    n_particles : int, default 10
    restart : bool, default False
        Reset the momenta (theta's to zero, the particles' redrawn) when the loss increases.
    preconditioner : {None, "rmsprop"}, default None
        RMSProp on the parameter gradient, as the image configs.
    """

    name = "mpd"

    def __init__(
        self,
        h_theta: float,
        h_x: float,
        *,
        gamma_theta: float = 0.1,
        gamma_x: float = 0.1,
        eta_theta: float | None = None,
        eta_x: float | None = None,
        momentum_theta: float | None = None,
        momentum_x: float | None = None,
        n_particles: int = 10,
        restart: bool = False,
        preconditioner: str | None = None,
    ) -> None:
        pos = {"min_val": 0.0, "include_boundaries": "neither"}
        self.h_theta = check_float(h_theta, "h_theta", **pos)
        self.h_x = check_float(h_x, "h_x", **pos)
        self.gamma_theta = check_float(gamma_theta, "gamma_theta", **pos)
        self.gamma_x = check_float(gamma_x, "gamma_x", **pos)
        self.eta_theta = self._eta(eta_theta, momentum_theta, "theta", self.gamma_theta, self.h_theta)
        self.eta_x = self._eta(eta_x, momentum_x, "x", self.gamma_x, self.h_x)
        for w in ("theta", "x"):  # the steps' coefficients, computed in fit, must exist in floats
            args = [getattr(self, f"{k}_{w}") for k in ("gamma", "eta", "h")]
            in_float_range(flow_coefficients, f"gamma_{w}, eta_{w}, h_{w}", *args)
        in_float_range(noise_covariance_unchecked, "gamma_x, eta_x, h_x", self.gamma_x, self.eta_x, self.h_x)
        self.n_particles = check_int(n_particles, "n_particles", min_val=1)
        self.restart = check_bool(restart, "restart")
        self.preconditioner = check_preconditioner(preconditioner)

    @staticmethod
    def _eta(eta, momentum, which, gamma, h):
        if (eta is None) == (momentum is None):
            raise InputError(f"give exactly one of eta_{which} and momentum_{which}")
        if eta is not None:
            return check_float(eta, f"eta_{which}", min_val=0.0, include_boundaries="neither")
        momentum = check_float(momentum, f"momentum_{which}", min_val=0.0, max_val=1.0, include_boundaries="left")
        return in_float_range(inverse_mass_unchecked, f"momentum_{which}, gamma_{which}, h_{which}", momentum, gamma, h)

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
        """Run ``steps`` MPD steps from ``model``'s parameters (zero momentum) and ``x0`` (default ``N(0, I)``,
        momenta ``N(0, I/eta_x)``, as the official code).

        Parameters
        ----------
        model : torch.nn.Module
            ``forward(x, y) -> (n_particles, n_data)`` log joint densities; it is copied, not changed.
        y : torch.Tensor
            Observed data, ``(n_data, ...)``.
        steps : int
        x0 : torch.Tensor, optional
            ``(n_particles, n_data, latent_dim)``.
        seed : int, default 0
        every : int, default 1
            Record the trace every ``every`` steps (and at the last).
        callback : callable, optional
            ``callback(model, particles) -> dict`` of floats, recorded with the trace.

        Returns
        -------
        ParticleFit
            Two gradient evaluations per step (the parameter gradient at the drifted point, the score at the
            new parameters).
        """
        model, y, steps, d, x0, every, gen = check_common(model, y, steps, self.n_particles, x0, every, callback, seed)
        work, y, x = working_copy(model, y, x0, self.n_particles, d, gen)
        params = [p for p in work.parameters() if p.requires_grad]
        dtype = x.dtype
        mom = (torch.randn(x.shape, generator=gen, dtype=torch.float64) / math.sqrt(self.eta_x)).to(dtype)
        tmo = [torch.zeros_like(p) for p in params]
        pre = RMSProp(params) if self.preconditioner == "rmsprop" else None
        fit = ParticleFit(work, x, mom, method=self.name)
        rec = Recorder(fit, every, callback)
        rec(0, 0, float("nan"))
        om_t, a_t, b_t, k_t = flow_coefficients(self.gamma_theta, self.eta_theta, self.h_theta)
        om_x, a_x, b_x, k_x = flow_coefficients(self.gamma_x, self.eta_x, self.h_x)
        var_x, cov, var_m = noise_covariance(self.gamma_x, self.eta_x, self.h_x)
        l_xx = math.sqrt(var_x)
        l_mx = cov / l_xx
        l_mm = math.sqrt(max(var_m - l_mx * l_mx, 0.0))
        evals, prev = 0, -float("inf")
        for k in range(1, steps + 1):
            with torch.no_grad():  # 1. drift of theta with its momentum
                for p, m in zip(params, tmo):
                    p.add_(a_t * m)
            lp, g, _ = evaluate(work, x, y, theta=True, score=False)  # 2. gradient at the drifted point
            evals += 1
            if self.restart and lp < prev:  # the loss -lp increased
                tmo = [torch.zeros_like(p) for p in params]
                mom = (torch.randn(x.shape, generator=gen, dtype=torch.float64) / math.sqrt(self.eta_x)).to(dtype)
            prev = lp
            if pre is not None:
                g = pre(g)
            with torch.no_grad():  # 3. frozen-gradient exact solution
                for p, m, gi in zip(params, tmo, g):
                    p.add_(b_t * gi)
                    m.mul_(om_t).add_(k_t * gi)
            _, _, s = evaluate(work, x, y, theta=False, score=True)  # 4. particles at the new theta
            evals += 1
            z = torch.randn((2,) + tuple(x.shape), generator=gen, dtype=torch.float64).to(dtype)
            x = x + a_x * mom + b_x * s + l_xx * z[0]
            mom = om_x * mom + k_x * s + l_mx * z[0] + l_mm * z[1]
            fit.particles, fit.momenta = x, mom
            rec(k, evals, lp, force=k == steps)
        return fit


def sample_posterior(model: nn.Module, y, *, steps: int, h: float, n_particles: int = 1, x0=None, seed: int = 0):
    """Unadjusted Langevin on the latents with the parameters frozen (how held-out data are encoded):
    ``X <- X + h grad_x log p_theta(X, y) + sqrt(2h) xi``, from ``N(0, I)`` unless ``x0`` is given.

    Parameters
    ----------
    model : torch.nn.Module
        Not changed.
    y : torch.Tensor
        ``(n_data, ...)``.
    steps : int
    h : float
        Step, > 0.
    n_particles : int, default 1
    x0 : torch.Tensor, optional
        ``(n_particles, n_data, latent_dim)``.
    seed : int, default 0

    Returns
    -------
    torch.Tensor
        ``(n_particles, n_data, latent_dim)``.
    """
    h = check_float(h, "h", min_val=0.0, include_boundaries="neither")
    n_particles = check_int(n_particles, "n_particles", min_val=1)
    model, y, steps, d, x0, _, gen = check_common(model, y, steps, n_particles, x0, 1, None, seed)
    work, y, x = working_copy(model, y, x0, n_particles, d, gen)
    for _ in range(steps):
        _, _, s = evaluate(work, x, y, theta=False, score=True)
        z = torch.randn(x.shape, generator=gen, dtype=torch.float64).to(x.dtype)
        x = x + h * s + math.sqrt(2 * h) * z
    return x.detach()
