"""The momentum-enriched flow of Momentum Particle Descent and its exact one-step solutions (arXiv 2312.07335).

MPD (:mod:`icml24.momentum_particles.mpd`) discretises the momentum-enriched flow of the free energy (the
paper's Sec. 3; continuous time)::

    d theta = eta_theta m dt,   dm = (-gamma_theta eta_theta m + E_q grad_theta log p_theta(x, y)) dt
    dX      = eta_x M dt,       dM = (-gamma_x eta_x M + grad_x log p_theta(X, y)) dt + sqrt(2 gamma_x) dW

exactly as the official class ``MPD_Proposed``: the parameters drift with their momentum first, the gradient is
taken at the drifted point, then both follow the exact solution of the linear ODE with that gradient frozen; the
particles use the new ``theta`` and the exact Ornstein-Uhlenbeck solution with frozen score, with correlated
Gaussian noise (:func:`noise_covariance`).
"""

from __future__ import annotations

import math
from typing import Callable

from ..errors import InputError
from ..validation import check_float, check_tensor

_POS = {"min_val": 0.0, "include_boundaries": "neither"}


def in_float_range(fn: Callable, names: str, *args: float):
    """``fn(*args)`` when every number it gives is finite, else an InputError naming ``names`` (extreme products of
    the frictions, inverse masses and steps underflow to 0 or overflow to infinity)."""
    try:
        out = fn(*args)
    except (ZeroDivisionError, OverflowError):
        out = math.nan
    if not all(math.isfinite(v) for v in (out if isinstance(out, tuple) else (out,))):
        shown = ", ".join(f"{v:g}" for v in args)
        raise InputError(f"{names} = ({shown}) put the flow's coefficients out of float range", "use moderate values")
    return out


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
    gamma = check_float(gamma, "gamma", **_POS)
    eta = check_float(eta, "eta", **_POS)
    h = check_float(h, "h", **_POS)
    return in_float_range(noise_covariance_unchecked, "gamma, eta, h", gamma, eta, h)


def noise_covariance_unchecked(gamma: float, eta: float, h: float) -> tuple[float, float, float]:
    """:func:`noise_covariance` without its checks, for callers that checked the coefficients once."""
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
    gamma = check_float(gamma, "gamma", **_POS)
    h = check_float(h, "h", **_POS)
    return in_float_range(inverse_mass_unchecked, "momentum, gamma, h", momentum, gamma, h)


def inverse_mass_unchecked(momentum: float, gamma: float, h: float) -> float:
    """``(1 - momentum) / (gamma h)`` without checks (:func:`momentum_from_target` checks)."""
    return (1.0 - momentum) / (gamma * h)


def flow_coefficients(gamma: float, eta: float, h: float) -> tuple[float, float, float, float]:
    """The coefficients of :func:`flow_step`: ``omega``, the momentum's weight in the position step, the force's
    weight in it, in the momentum step."""
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
    gamma = check_float(gamma, "gamma", **_POS)
    eta = check_float(eta, "eta", **_POS)
    h = check_float(h, "h", **_POS)
    omega, a, b, k = in_float_range(flow_coefficients, "gamma, eta, h", gamma, eta, h)
    return z + a * m + b * force, omega * m + k * force


__all__ = ["noise_covariance", "momentum_from_target", "flow_step"]
