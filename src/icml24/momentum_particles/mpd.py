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
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_bool, check_float, check_int, check_seed, check_tensor

__all__ = [
    "MPD",
    "ParticleFit",
    "FunctionModel",
    "noise_covariance",
    "momentum_from_target",
    "flow_step",
    "sample_posterior",
]


# ------------------------------------------------------------------------------------------------ the maths
def _f_var(u: float) -> float:
    """``2u - 3 + 4 e^{-u} - e^{-2u}`` without cancellation (a series below u = 1)."""
    if u >= 1.0:
        return 2.0 * u - 3.0 + 4.0 * math.exp(-u) - math.exp(-2.0 * u)
    total, fact, k = 0.0, 6.0, 3
    while k < 40:
        total += (-1.0) ** k * (4.0 - 2.0**k) * u**k / fact
        k += 1
        fact *= k
    return total


def noise_covariance(gamma: float, eta: float, h: float) -> tuple[float, float, float]:
    """Covariance of the particles' noise over one step: ``(Var zeta_X, Cov, Var zeta_M)`` per coordinate.

    The exact Ornstein-Uhlenbeck integral of the official ``transition`` kernel, with ``c = gamma eta`` and
    ``omega = exp(-c h)``: ``Var X = (2h - omega^2/c + 4 omega/c - 3/c)/gamma``, ``Cov = (1 - omega)^2/c``,
    ``Var M = (1 - omega^2)/eta``; computed without cancellation for small ``c h`` (where
    ``Var X -> (2/3) gamma eta^2 h^3``).

    Parameters
    ----------
    gamma : float
        Friction, > 0.
    eta : float
        Inverse mass, > 0.
    h : float
        Step size, > 0.

    Returns
    -------
    tuple of float
        ``(var_x, cov_xm, var_m)``.
    """
    gamma = check_float(gamma, "gamma", min_val=0.0, include_boundaries="neither")
    eta = check_float(eta, "eta", min_val=0.0, include_boundaries="neither")
    h = check_float(h, "h", min_val=0.0, include_boundaries="neither")
    c = gamma * eta
    u = c * h
    var_x = _f_var(u) / (gamma * c)
    cov = math.expm1(-u) ** 2 / c
    var_m = -math.expm1(-2.0 * u) / eta
    return var_x, cov, var_m


def momentum_from_target(momentum: float, gamma: float, h: float) -> float:
    """The official configs' heuristic: the inverse mass ``eta = (1 - momentum)/(gamma h)``, so that
    ``c h = 1 - momentum`` and the per-step momentum decay is ``exp(-(1 - momentum))``.

    Parameters
    ----------
    momentum : float
        Target momentum in [0, 1).
    gamma : float
        Friction, > 0.
    h : float
        Step size, > 0.

    Returns
    -------
    float
        ``eta``.
    """
    momentum = check_float(momentum, "momentum", min_val=0.0, max_val=1.0, include_boundaries="left")
    gamma = check_float(gamma, "gamma", min_val=0.0, include_boundaries="neither")
    h = check_float(h, "h", min_val=0.0, include_boundaries="neither")
    return (1.0 - momentum) / (gamma * h)


def _coefs(gamma: float, eta: float, h: float) -> tuple[float, float, float, float]:
    """``omega``, the momentum's weight in the position step, the force's weight in it, in the momentum step."""
    c = gamma * eta
    one_m_omega = -math.expm1(-c * h)
    return 1.0 - one_m_omega, one_m_omega / gamma, (h - one_m_omega / c) / gamma, one_m_omega / c


def flow_step(z, m, force, *, gamma: float, eta: float, h: float):
    """Exact solution over ``[0, h]`` of ``dz = eta m dt, dm = (-gamma eta m + force) dt`` with the force frozen.

    ``z + ((1 - omega) m + (h - (1 - omega)/c) force)/gamma`` and ``omega m + (1 - omega)/c force``, with
    ``c = gamma eta``, ``omega = exp(-c h)``: the deterministic part of both of MPD's updates.

    Parameters
    ----------
    z, m, force : torch.Tensor
        Position, momentum and force, one shape, finite.
    gamma, eta, h : float
        Friction, inverse mass, step; all > 0.

    Returns
    -------
    tuple of torch.Tensor
        ``(z_next, m_next)``, new tensors.
    """
    z = check_tensor(z, "z", allow_empty=True)
    m = check_tensor(m, "m", shape=tuple(z.shape), allow_empty=True)
    force = check_tensor(force, "force", shape=tuple(z.shape), allow_empty=True)
    gamma = check_float(gamma, "gamma", min_val=0.0, include_boundaries="neither")
    eta = check_float(eta, "eta", min_val=0.0, include_boundaries="neither")
    h = check_float(h, "h", min_val=0.0, include_boundaries="neither")
    omega, a, b, k = _coefs(gamma, eta, h)
    return z + a * m + b * force, omega * m + k * force


# --------------------------------------------------------------------------------------------- the model
class FunctionModel(nn.Module):
    """A log joint density given as a function ``fn(theta, x, y)`` with its parameters ``theta``.

    Parameters
    ----------
    fn : callable
        ``fn(theta, x, y) -> (n_particles, n_data)`` log densities, differentiable in ``theta`` and ``x``.
    theta : torch.Tensor
        Initial parameters (copied into an ``nn.Parameter``), floating point, finite.
    latent_dim : int
        Size of each datum's latent vector.
    """

    def __init__(self, fn: Callable, theta, latent_dim: int) -> None:
        if not callable(fn):
            raise InputError(f"fn must be callable, got {type(fn).__name__}", "pass fn(theta, x, y) -> log p")
        theta = check_tensor(theta, "theta", allow_empty=False, copy=True)
        latent_dim = check_int(latent_dim, "latent_dim", min_val=1)
        super().__init__()
        self.fn = fn
        self.theta = nn.Parameter(theta)
        self.latent_dim = latent_dim

    def forward(self, x, y):
        """The log joint density of every particle and datum.

        Parameters
        ----------
        x : torch.Tensor
            ``(n_particles, n_data, latent_dim)``.
        y : torch.Tensor
            ``(n_data, ...)``.

        Returns
        -------
        torch.Tensor
            ``(n_particles, n_data)``.
        """
        return self.fn(self.theta, x, y)


def check_model(model: Any, name: str = "model") -> nn.Module:
    """``model`` as an ``nn.Module`` with at least one trainable floating-point parameter.

    Parameters
    ----------
    model : torch.nn.Module
    name : str, default "model"

    Returns
    -------
    torch.nn.Module
    """
    if not isinstance(model, nn.Module):
        raise InputError(
            f"{name} must be a torch.nn.Module whose forward(x, y) returns log p(x, y), got {type(model).__name__}",
            "wrap a function with FunctionModel(fn, theta, latent_dim)",
        )
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise InputError(f"{name} has no trainable parameters", "give theta as nn.Parameter with requires_grad")
    if any(not p.is_floating_point() for p in params):
        raise InputError(f"{name} has non-floating-point trainable parameters")
    if any(not bool(torch.isfinite(p).all()) for p in params):
        raise InputError(f"{name} has NaN or infinite parameters")
    return model


def check_data(y: Any, name: str = "y"):
    """The observed data: a finite floating-point tensor with at least one datum.

    Parameters
    ----------
    y : torch.Tensor
    name : str, default "y"

    Returns
    -------
    torch.Tensor
    """
    return check_tensor(y, name, ndim=(1, 2, 3, 4), allow_empty=False)


def latent_dim_of(model: nn.Module, x0, name: str = "model") -> int:
    """The latent size: ``model.latent_dim`` when set, else the last dimension of ``x0``.

    Parameters
    ----------
    model : torch.nn.Module
    x0 : torch.Tensor or None
    name : str

    Returns
    -------
    int
    """
    d = getattr(model, "latent_dim", None)
    if d is None and x0 is None:
        raise InputError(f"{name} has no latent_dim attribute and no x0 was given", "give x0 or set latent_dim")
    if d is not None:
        d = check_int(d, f"{name}.latent_dim", min_val=1)
    return d if d is not None else int(x0.shape[-1])


def check_particles(x0: Any, n_particles: int, n_data: int, latent_dim: int, name: str = "x0"):
    """Initial particles of shape ``(n_particles, n_data, latent_dim)``, finite, copied.

    Parameters
    ----------
    x0 : torch.Tensor
    n_particles, n_data, latent_dim : int
    name : str

    Returns
    -------
    torch.Tensor
    """
    return check_tensor(x0, name, shape=(n_particles, n_data, latent_dim), copy=True)


def evaluate(model: nn.Module, x, y, *, theta: bool, score: bool):
    """One gradient evaluation: the log density summed over particles and data, and its gradients.

    Parameters
    ----------
    model : torch.nn.Module
    x : torch.Tensor
        ``(n_particles, n_data, latent_dim)``.
    y : torch.Tensor
    theta : bool
        Return ``grad_theta (1/P) sum log p`` per trainable parameter.
    score : bool
        Return ``grad_x log p(x, y)`` per particle.

    Returns
    -------
    tuple
        ``(mean_log_p, theta_grads or None, score or None)`` where ``mean_log_p`` is ``(1/P) sum log p``.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    n_p, n = x.shape[0], x.shape[1]
    xv = x.detach().requires_grad_(score)
    with torch.enable_grad():
        lp = model(xv, y)
        if not isinstance(lp, torch.Tensor) or tuple(lp.shape) != (n_p, n):
            got = tuple(lp.shape) if isinstance(lp, torch.Tensor) else type(lp).__name__
            raise InputError(
                f"model returned log densities of shape {got}, expected (n_particles, n_data) = {(n_p, n)}",
                "forward(x, y) must return log p(x_i^p, y_i) for every particle p and datum i",
            )
        if not bool(torch.isfinite(lp).all()):
            raise InputError("model returned NaN or infinite log densities", "check the model and the step sizes")
        total = lp.sum()
        inputs = (params if theta else []) + ([xv] if score else [])
        grads = torch.autograd.grad(total, inputs, allow_unused=True) if inputs else ()
    grads = [torch.zeros_like(i) if g is None else g for g, i in zip(grads, inputs)]
    g_theta = [g / n_p for g in grads[: len(params)]] if theta else None
    g_x = grads[-1] if score else None
    if score and not bool(torch.isfinite(g_x).all()):
        raise InputError("model's score grad_x log p is NaN or infinite", "check the model and the step sizes")
    return float(total.detach()) / n_p, g_theta, g_x


class RMSProp:
    """The official code's RMSProp preconditioner on theta: ``v = a v + (1 - a) g^2`` (``v`` starts at 1),
    ``g / sqrt(v + 1e-8)``.

    Parameters
    ----------
    params : list of torch.Tensor
    alpha : float, default 0.99
    """

    def __init__(self, params, alpha: float = 0.99) -> None:
        self.alpha = alpha
        self.v = [torch.ones_like(p) for p in params]

    def __call__(self, grads):
        """Precondition ``grads`` (updating the running average).

        Parameters
        ----------
        grads : list of torch.Tensor

        Returns
        -------
        list of torch.Tensor
        """
        out = []
        for v, g in zip(self.v, grads):
            v.mul_(self.alpha).add_((1 - self.alpha) * g * g)
            out.append(g / (v + 1e-8).sqrt())
        return out


@dataclass
class ParticleFit:
    """What a particle method returns.

    Parameters
    ----------
    model : torch.nn.Module
        The fitted copy of the model (the one passed in is left untouched).
    particles : torch.Tensor
        ``(n_particles, n_data, latent_dim)``: the final particle cloud, an approximation of the posterior.
    momenta : torch.Tensor or None
        The particles' momenta (MPD), else None.
    steps : list of int
        The steps at which the trace was recorded (0 is the start).
    grad_evals : list of int
        Gradient evaluations of ``log p`` over the whole particle cloud used by then.
    theta : list of torch.Tensor
        The parameters, flattened, at each recorded step.
    log_p : list of float
        ``(1/P) sum log p(x, y)`` at each recorded step (NaN at step 0).
    extra : dict
        What the callback returned at each recorded step, by key.
    method : str
        ``"mpd"``, ``"pgd"`` or ``"abp"``.
    """

    model: nn.Module
    particles: torch.Tensor
    momenta: torch.Tensor | None
    steps: list[int] = field(default_factory=list)
    grad_evals: list[int] = field(default_factory=list)
    theta: list[torch.Tensor] = field(default_factory=list)
    log_p: list[float] = field(default_factory=list)
    extra: dict[str, list[float]] = field(default_factory=dict)
    method: str = ""

    def theta_trace(self):
        """The recorded parameters stacked: ``(n_records, n_params)``.

        Returns
        -------
        torch.Tensor
        """
        return torch.stack(self.theta)


def _flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters() if p.requires_grad]).clone()


class Recorder:
    """Appends a :class:`ParticleFit`'s trace every ``every`` steps.

    Parameters
    ----------
    fit : ParticleFit
    every : int
    callback : callable or None
    """

    def __init__(self, fit: ParticleFit, every: int, callback) -> None:
        self.fit, self.every, self.callback = fit, every, callback

    def __call__(self, step: int, evals: int, log_p: float, force: bool = False) -> None:
        if not force and step % self.every:
            return
        f = self.fit
        f.steps.append(step)
        f.grad_evals.append(evals)
        f.theta.append(_flat(f.model))
        f.log_p.append(log_p)
        if self.callback is not None:
            with torch.no_grad():
                out = self.callback(f.model, f.particles)
            for k, v in (out or {}).items():
                f.extra.setdefault(k, []).append(float(v))


def check_common(model, y, steps, n_particles, x0, every, callback, seed):
    """Validate the arguments every ``fit`` shares (nothing is touched before all pass).

    Parameters
    ----------
    model, y, steps, n_particles, x0, every, callback, seed
        As in :meth:`MPD.fit`.

    Returns
    -------
    tuple
        ``(model, y, steps, latent_dim, x0 or None, every, generator)``.
    """
    model = check_model(model)
    y = check_data(y)
    steps = check_int(steps, "steps", min_val=0)
    every = check_int(every, "every", min_val=1)
    if callback is not None and not callable(callback):
        raise InputError(f"callback must be callable or None, got {type(callback).__name__}")
    seed = check_seed(seed)
    d = latent_dim_of(model, x0)
    if x0 is not None:
        x0 = check_particles(x0, n_particles, y.shape[0], d)
    gen = torch.Generator().manual_seed(seed)
    return model, y, steps, d, x0, every, gen


def working_copy(model: nn.Module, y, x0, n_particles: int, d: int, gen: torch.Generator):
    """A deep copy of the model, ``y`` in its dtype, and the particles (``x0`` or ``N(0, I)`` draws).

    Parameters
    ----------
    model : torch.nn.Module
    y : torch.Tensor
    x0 : torch.Tensor or None
    n_particles, d : int
    gen : torch.Generator

    Returns
    -------
    tuple
        ``(model_copy, y, x)``.
    """
    work = copy.deepcopy(model)
    dtype = next(p for p in work.parameters() if p.requires_grad).dtype
    y = y.to(dtype)
    if x0 is None:
        x = torch.randn(n_particles, y.shape[0], d, generator=gen, dtype=torch.float64).to(dtype)
    else:
        x = x0.to(dtype)
    # a probe: the model accepts particles of this shape and returns one finite value per pair
    try:
        evaluate(work, x[:1], y, theta=True, score=True)
    except (RuntimeError, TypeError, IndexError) as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise InputError(
            f"model(x, y) failed on particles of shape {tuple(x.shape)} and y of shape {tuple(y.shape)}: {first}",
            "x is (n_particles, n_data, latent_dim), y is (n_data, ...); check latent_dim and the data",
        ) from None
    return work, y, x


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
        return momentum_from_target(momentum, gamma, h)

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
        om_t, a_t, b_t, k_t = _coefs(self.gamma_theta, self.eta_theta, self.h_theta)
        om_x, a_x, b_x, k_x = _coefs(self.gamma_x, self.eta_x, self.h_x)
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


def check_preconditioner(value) -> str | None:
    """``None`` or ``"rmsprop"``.

    Parameters
    ----------
    value : str or None

    Returns
    -------
    str or None
    """
    if value is None:
        return None
    if not isinstance(value, str) or value.strip().lower() != "rmsprop":
        raise InputError(f"preconditioner must be None or 'rmsprop', got {value!r}")
    return "rmsprop"


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
