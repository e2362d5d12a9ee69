"""What every particle method of the package shares: the model, its checks, the fit and its trace.

The model is an ``nn.Module`` whose parameters are ``theta`` and whose ``forward(x, y)`` returns the log joint
density ``log p_theta(x_i^p, y_i)`` of every particle ``p`` and datum ``i``:

* ``x``: particles of shape ``(n_particles, n_data, latent_dim)``;
* ``y``: the observed data, a tensor whose first dimension is ``n_data``;
* returns a tensor of shape ``(n_particles, n_data)``.

:class:`ParticleFit` holds a run's result and its trace; :class:`MPD <icml24.momentum_particles.mpd.MPD>` and
the peers of :mod:`icml24.momentum_particles.baselines` validate their arguments, copy the model, evaluate the
log density and its gradients, and record the trace with the helpers here.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_int, check_seed, check_tensor


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
        # a log density that does not depend on what is differentiated has zero gradients
        grads = torch.autograd.grad(total, inputs, allow_unused=True) if total.requires_grad else [None] * len(inputs)
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
            try:
                with torch.no_grad():
                    out = self.callback(f.model, f.particles)
                out = {k: float(v) for k, v in (out or {}).items()}
            except InputError:
                raise
            except Exception as exc:  # noqa: BLE001 - the user's callback failed or returned something else
                first = (str(exc).strip().splitlines() or [""])[0][:160]
                raise InputError(
                    f"callback(model, particles) must return a dict of numbers, failed with {type(exc).__name__}: "
                    f"{first}"
                ) from None
            for k, v in out.items():
                f.extra.setdefault(k, []).append(v)


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
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's model failed on these particles and data
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        raise InputError(
            f"model(x, y) failed on particles of shape {tuple(x.shape)} and y of shape {tuple(y.shape)}: {first}",
            "x is (n_particles, n_data, latent_dim), y is (n_data, ...); check latent_dim and the data",
        ) from None
    return work, y, x


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


__all__ = ["FunctionModel", "ParticleFit"]
