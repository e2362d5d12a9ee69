"""The convex compact set ``W`` of a group DRO problem.

:class:`Ball` and :class:`Box` are what a user passes (``GroupProblem.from_data(..., domain=Ball(5.0))``);
``bind(dim)`` turns them into a :class:`ConvexSet` of that dimension (:class:`BallSet`, :class:`BoxSet`), which
the algorithms use: the Euclidean projection ``Pi_W``, linear minimisation over ``W``, and the centre and radius
``D`` of the distance-generating function (:mod:`~icml24.group_dro.mirror`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..validation import check_array, check_float, check_int

COUNT_MAX = 2**31 - 1  # the largest group count, dimension or inner-loop length numpy and torch can allocate for


@dataclass(frozen=True)
class Ball:
    """The Euclidean ball ``{w : ||w - center|| <= radius}`` as the set ``W``.

    Parameters
    ----------
    radius : float
        Positive.
    center : sequence of float, optional
        Default the origin.
    """

    radius: float
    center: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        r = check_float(self.radius, "radius", min_val=0.0, include_boundaries="right")
        object.__setattr__(self, "radius", r)
        if self.center is not None:
            c = check_array(self.center, "center", ndim=1)
            object.__setattr__(self, "center", tuple(float(v) for v in c))

    def bind(self, dim: int) -> "ConvexSet":
        """The ball in dimension ``dim`` as a :class:`BallSet`."""
        c = np.zeros(dim) if self.center is None else np.asarray(self.center, dtype=float)
        if c.shape != (dim,):
            raise InputError(f"domain center has {c.size} entries, the problem has dimension {dim}")
        return BallSet(c, self.radius)


@dataclass(frozen=True)
class Box:
    """The box ``{w : lower <= w <= upper}`` as the set ``W``.

    Parameters
    ----------
    lower, upper : float or sequence of float
        Finite bounds, ``upper > lower`` in every coordinate; scalars broadcast to every coordinate.
    """

    lower: float | tuple[float, ...]
    upper: float | tuple[float, ...]

    def __post_init__(self) -> None:
        bounds = {}
        for name in ("lower", "upper"):
            a = check_array(getattr(self, name), name, ndim=(0, 1))
            bounds[name] = a
            object.__setattr__(self, name, float(a) if a.ndim == 0 else tuple(float(v) for v in a))
        lo, hi = bounds["lower"], bounds["upper"]
        if lo.ndim and hi.ndim and lo.shape != hi.shape:
            raise InputError(f"lower has {lo.size} entries but upper has {hi.size}", "give bounds of one length")
        if not np.all(hi > lo):
            raise InputError("upper must exceed lower in every coordinate", "W must have a non-empty interior")

    def bind(self, dim: int) -> "ConvexSet":
        """The box in dimension ``dim`` as a :class:`BoxSet`."""
        dim = check_int(dim, "dim", min_val=1, max_val=COUNT_MAX)
        lo = (
            np.broadcast_to(np.asarray(self.lower, dtype=float), (dim,)).copy()
            if np.ndim(self.lower) == 0
            else np.asarray(self.lower, dtype=float)
        )
        hi = (
            np.broadcast_to(np.asarray(self.upper, dtype=float), (dim,)).copy()
            if np.ndim(self.upper) == 0
            else np.asarray(self.upper, dtype=float)
        )
        if lo.shape != (dim,) or hi.shape != (dim,):
            raise InputError(f"box bounds must be scalars or have {dim} entries")
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise InputError("box bounds must be finite (W must be compact)")
        if not np.all(hi > lo):
            raise InputError("box upper bound must exceed lower bound in every coordinate")
        return BoxSet(lo, hi)


class ConvexSet:
    """A bound convex compact set: projection, linear minimisation, centre and radius ``D``."""

    center: np.ndarray
    radius: float  # max distance from the centre: the D of the distance-generating function ||w-c||^2/(2D^2)

    def project(self, w: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """The Euclidean projection ``Pi_W(w)``, the point of ``W`` nearest to ``w``.

        Parameters
        ----------
        w : numpy.ndarray
            ``(d,)`` point.

        Returns
        -------
        numpy.ndarray
            ``(d,)`` point of ``W``.
        """
        raise NotImplementedError

    def linear_min(self, g: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """``argmin_{u in W} <g, u>``."""
        raise NotImplementedError

    def contains(self, w: np.ndarray, tol: float = 1e-9) -> bool:
        """Whether ``w`` lies in ``W``: its distance to its projection is at most ``tol * max(1, D)``.

        Parameters
        ----------
        w : numpy.ndarray
            ``(d,)`` point.
        tol : float, default 1e-9
            Relative tolerance.

        Returns
        -------
        bool
        """
        return bool(np.linalg.norm(self.project(w) - w) <= tol * max(1.0, self.radius))


class BallSet(ConvexSet):
    """A :class:`Ball` bound to a dimension."""

    def __init__(self, center: np.ndarray, radius: float) -> None:
        self.center, self.radius = center, float(radius)

    def project(self, w: np.ndarray) -> np.ndarray:
        """The Euclidean projection onto the ball: ``w`` radially pulled back to the sphere when outside.

        Parameters
        ----------
        w : numpy.ndarray
            ``(d,)`` point.

        Returns
        -------
        numpy.ndarray
            ``(d,)``: ``w`` itself (not a copy) when it lies in the ball, else a new array.
        """
        d = w - self.center
        nrm = math.sqrt(float(d @ d))
        if nrm <= self.radius:
            return w
        return self.center + d * (self.radius / nrm)

    def linear_min(self, g: np.ndarray) -> np.ndarray:
        nrm = float(np.linalg.norm(g))
        return self.center.copy() if nrm == 0.0 else self.center - self.radius * g / nrm

    def __repr__(self) -> str:
        return f"Ball(radius={self.radius:g})"


class BoxSet(ConvexSet):
    """A :class:`Box` bound to a dimension."""

    def __init__(self, lower: np.ndarray, upper: np.ndarray) -> None:
        self.lower, self.upper = lower, upper
        self.center = (lower + upper) / 2
        self.radius = float(np.linalg.norm(upper - lower) / 2)

    def project(self, w: np.ndarray) -> np.ndarray:
        """The Euclidean projection onto the box: ``w`` clipped coordinatewise to ``[lower, upper]``.

        Parameters
        ----------
        w : numpy.ndarray
            ``(d,)`` point.

        Returns
        -------
        numpy.ndarray
            ``(d,)`` new array.
        """
        return np.clip(w, self.lower, self.upper)

    def linear_min(self, g: np.ndarray) -> np.ndarray:
        return np.where(g > 0, self.lower, self.upper)

    def __repr__(self) -> str:
        return f"Box(dim={self.lower.size})"


__all__ = ["Ball", "Box", "ConvexSet", "BallSet", "BoxSet"]
