"""Empirical group DRO problems: data split into groups, a convex per-sample loss, a convex compact set.

The problem of Yu, Cai, Jiang and Zhang (ICML 2024, arXiv 2403.03562):

    min_{w in W} max_{q in Delta_m}  phi(w, q) = sum_i q_i R_i(w),     R_i(w) = (1/n_i) sum_j l(w; xi_ij),

a two-level finite sum (over groups, then over the samples of a group). A :class:`GroupProblem` holds the
groups, a per-sample loss-and-gradient oracle and the set ``W`` (:class:`Ball` or :class:`Box`, in
:mod:`~icml24.group_dro.domain`). It is built either from data (``X, y, groups`` and a loss of :data:`LOSSES`,
in :mod:`~icml24.group_dro.glm_losses`) or from a user's own per-sample oracle; the synthetic problem of the
claims is :func:`~icml24.group_dro.world.synthetic_problem`. Algorithms call :meth:`GroupProblem.sample_eval`
and count every per-sample gradient evaluation (IFO, the paper's currency); the exact risks
:meth:`GroupProblem.risks` are for evaluation only.

Assumptions of the paper's analysis (checked where checkable): ``W`` convex and compact,
``l(.; xi)`` convex, ``G``-Lipschitz and ``L``-smooth on ``W``. For the built-in losses ``G`` and ``L``
are computed from the data (:attr:`GroupProblem.lipschitz`, :attr:`GroupProblem.smoothness`); an oracle
problem must state them.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..errors import InputError
from ..validation import check_array, check_float, check_int
from .domain import Ball, BallSet, Box, BoxSet, ConvexSet  # noqa: F401 - importable from here as before
from .glm_losses import LOSSES, SCALAR_LOSSES  # noqa: F401 - importable from here as before

Oracle = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


# --------------------------------------------------------------------------------------------- problem
class GroupProblem:
    """An empirical GDRO problem: ``m`` groups of samples, a convex per-sample loss, a set ``W``.

    Build it with :meth:`from_data` or :meth:`from_oracle`. Samples are addressed by *positions*
    ``0..N-1`` with group ``i`` occupying ``offsets[i] : offsets[i] + sizes[i]``.

    Parameters
    ----------
    sizes : numpy.ndarray of int
        ``n_i`` for every group.
    domain : ConvexSet
        The bound set ``W``.
    dim : int
        Dimension of ``w``.
    evaluate : callable
        ``evaluate(w, positions) -> (values, grads)``, per sample.
    smoothness, lipschitz, loss_bound : float
        ``L``, ``G`` and ``B`` (see Attributes).
    name : str
        Shown in ``repr``.
    positions_to_user : numpy.ndarray, optional
        The user's sample index of every position.
    X, y, loss : optional
        The data and loss name of a :meth:`from_data` problem (fast paths of the baselines use them).

    Attributes
    ----------
    m, sizes, offsets, n_total, dim : int or numpy.ndarray
        The group structure (``n_total = sum_i n_i``).
    domain : ConvexSet
        The bound set ``W`` (``project``, ``linear_min``, ``center``, ``radius``).
    smoothness, lipschitz : float
        ``L`` and ``G`` of the per-sample losses on ``W`` (bounds).
    loss_bound : float
        A bound ``B`` on ``|l(w; xi)|`` over ``W`` (used by SMD's step size).
    """

    def __init__(
        self,
        *,
        sizes: np.ndarray,
        domain: ConvexSet,
        dim: int,
        evaluate: Callable,
        smoothness: float,
        lipschitz: float,
        loss_bound: float,
        name: str,
        positions_to_user: np.ndarray | None = None,
        X: np.ndarray | None = None,
        y: np.ndarray | None = None,
        loss: str | None = None,
    ) -> None:
        self.sizes = np.asarray(sizes, dtype=np.int64)
        self.m = int(self.sizes.size)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        self.n_total = int(self.sizes.sum())
        self.group_of = np.repeat(np.arange(self.m), self.sizes)
        self.domain = domain
        self.dim = int(dim)
        self._evaluate = evaluate
        self.smoothness = float(smoothness)
        self.lipschitz = float(lipschitz)
        self.loss_bound = float(loss_bound)
        self.name = name
        self.positions_to_user = positions_to_user
        self.X, self.y, self.loss = X, y, loss

    # ---------------------------------------------------------------------------------------- builders
    @classmethod
    def from_data(cls, X, y, groups, *, loss: str = "logistic", domain: Ball | Box | None = None) -> "GroupProblem":
        """A problem from a design matrix, labels and group memberships.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Finite features.
        y : array-like of shape (n,)
            Finite labels; ``{-1, +1}`` or ``{0, 1}`` for ``logistic`` and ``smoothed_hinge``.
        groups : array-like of shape (n,) or sequence of index arrays
            Either a label per sample (each distinct label is a group, in sorted order), or a sequence of
            ``m`` index arrays into ``0..n-1`` (a sample may be in several groups).
        loss : str, default "logistic"
            One of :data:`LOSSES`: ``"logistic"``, ``"squared"``, ``"smoothed_hinge"``.
        domain : Ball or Box, optional
            Default ``Ball(5.0)`` (``W = {||w|| <= 5}``, as in the claims).

        Returns
        -------
        GroupProblem
        """
        if not isinstance(loss, str) or loss not in LOSSES:
            raise InputError(f"loss must be one of {', '.join(LOSSES)}, got {loss!r}")
        X = _as_matrix(X, "X")
        n, d = X.shape
        y = _as_vector(y, "y")
        if y.shape[0] != n:
            raise InputError(f"y has {y.shape[0]} labels but X has {n} rows")
        fn, kind, curv, dbound = LOSSES[loss]
        if kind == "binary":
            vals = set(np.unique(y).tolist())
            if vals <= {0.0, 1.0} and 0.0 in vals:
                y = 2.0 * y - 1.0
            elif not vals <= {-1.0, 1.0}:
                raise InputError(f"y must hold labels in {{-1, +1}} or {{0, 1}} for the {loss} loss")
        members = _members(groups, n)
        order = np.concatenate(members)
        sizes = np.array([len(g) for g in members])
        dom = _bind_domain(domain, d)
        Xs, ys = np.ascontiguousarray(X[order]), np.ascontiguousarray(y[order])

        def evaluate(w: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            Xp = Xs[pos]
            val, dv = fn(Xp @ w, ys[pos])
            return val, dv[:, None] * Xp

        xmax = float(np.sqrt((Xs * Xs).sum(1)).max()) if n else 0.0
        smax = xmax * (float(np.linalg.norm(dom.center)) + dom.radius)  # max |<x, w>| over W
        ymax = float(np.abs(ys).max()) if n else 0.0
        deriv = dbound if dbound is not None else smax + ymax
        bound = (
            float(fn(np.array([-smax, smax]), np.array([1.0, 1.0]))[0].max())
            if kind == "binary"
            else 0.5 * (smax + ymax) ** 2
        )
        return cls(
            sizes=sizes,
            domain=dom,
            dim=d,
            evaluate=evaluate,
            smoothness=curv * xmax**2,
            lipschitz=deriv * xmax,
            loss_bound=bound,
            name=f"{loss} loss, {dom!r}",
            positions_to_user=order,
            X=Xs,
            y=ys,
            loss=loss,
        )

    @classmethod
    def from_oracle(
        cls,
        oracle: Oracle,
        groups: Sequence,
        *,
        dim: int,
        n_samples: int,
        domain: Ball | Box,
        smoothness: float,
        lipschitz: float,
        loss_bound: float | None = None,
    ) -> "GroupProblem":
        """A problem from a per-sample loss-and-gradient oracle.

        Parameters
        ----------
        oracle : callable
            ``oracle(w, idx)`` takes ``w`` (shape ``(dim,)``) and an integer array of sample indices and returns
            ``(values, grads)`` of shapes ``(len(idx),)`` and ``(len(idx), dim)``.
        groups : sequence of index arrays
            ``m`` index arrays into ``0..n_samples-1``.
        dim : int
            Dimension of ``w``.
        n_samples : int
            Number of samples the oracle knows.
        domain : Ball or Box
            The set ``W``.
        smoothness, lipschitz : float
            ``L`` and ``G``, bounds on the per-sample losses' smoothness and Lipschitz constants on ``W``; they
            set the theory step sizes (the convergence analysis' conditions). Positive and finite (0 would make
            the theory steps infinite; for a linear loss any positive ``smoothness`` is a valid bound).
        loss_bound : float, optional
            ``B``, a bound on the loss values (default ``G`` times the diameter of ``W``); only SMD's step uses it.

        Returns
        -------
        GroupProblem
        """
        if not callable(oracle):
            raise InputError("oracle must be callable as oracle(w, idx) -> (values, grads)")
        d = check_int(dim, "dim", min_val=1)
        n_samples = check_int(n_samples, "n_samples", min_val=1)
        members = _members(groups, n_samples, labels_allowed=False)
        order = np.concatenate(members)
        if domain is None:
            raise InputError("domain is required for an oracle problem", "give a Ball or a Box")
        dom = _bind_domain(domain, d)
        # 0 would make the theory steps infinite (1 / L_F); non-finite ones are refused by check_float
        L = check_float(smoothness, "smoothness", min_val=0.0, include_boundaries="right")
        G = check_float(lipschitz, "lipschitz", min_val=0.0, include_boundaries="right")
        B = G * 2 * dom.radius if loss_bound is None else check_float(loss_bound, "loss_bound", min_val=0.0)

        def evaluate(w: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            idx = order[pos]
            out = oracle(w.copy(), idx)
            if not isinstance(out, tuple) or len(out) != 2:
                raise InputError("oracle must return a tuple (values, grads)")
            val = np.asarray(out[0], dtype=float).reshape(-1)
            grad = np.asarray(out[1], dtype=float)
            if val.shape != (len(idx),) or grad.shape != (len(idx), d):
                raise InputError(
                    f"oracle returned shapes {val.shape} and {grad.shape}, expected ({len(idx)},) and ({len(idx)}, {d})"
                )
            if not (np.all(np.isfinite(val)) and np.all(np.isfinite(grad))):
                raise InputError("oracle returned non-finite values or gradients")
            return val, grad

        return cls(
            sizes=np.array([len(g) for g in members]),
            domain=dom,
            dim=d,
            evaluate=evaluate,
            smoothness=L,
            lipschitz=G,
            loss_bound=B,
            name=f"oracle, {dom!r}",
            positions_to_user=order,
        )

    # ------------------------------------------------------------------------------------------ oracles
    def sample_eval(self, w: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per-sample values and gradients at ``w`` for sample positions ``pos``: ``len(pos)`` IFO.

        Parameters
        ----------
        w : array-like of shape (dim,)
            A finite point.
        pos : array-like of int
            Sample positions in ``0..n_total-1``.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            Values ``(len(pos),)`` and gradients ``(len(pos), dim)``.
        """
        w = self.check_point(w)
        pos = check_array(pos, "pos", ndim=1, dtype="integer", allow_empty=True)
        if pos.size and (pos.min() < 0 or pos.max() >= self.n_total):
            raise InputError(f"pos holds positions outside 0..{self.n_total - 1}")
        return self._evaluate(w, pos)

    def full_eval(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Values and gradients of every sample at ``w`` (``n_total`` IFO).

        Parameters
        ----------
        w : array-like of shape (dim,)

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
        """
        return self._evaluate(self.check_point(w), np.arange(self.n_total))

    def group_means(self, per_sample: np.ndarray) -> np.ndarray:
        """Average a per-sample array (``(N,)`` or ``(N, d)``) within each group: ``R_i`` or ``grad R_i``.

        Parameters
        ----------
        per_sample : array-like of shape (n_total,) or (n_total, d)

        Returns
        -------
        numpy.ndarray
            ``(m,)`` or ``(m, d)``.
        """
        if not isinstance(per_sample, np.ndarray) or per_sample.ndim not in (1, 2) or len(per_sample) != self.n_total:
            per_sample = check_array(per_sample, "per_sample", ndim=(1, 2), finite=False)
            if per_sample.shape[0] != self.n_total:
                raise InputError(f"per_sample must have {self.n_total} rows (one per sample), got {per_sample.shape}")
        sums = np.add.reduceat(per_sample, self.offsets, axis=0)
        return sums / (self.sizes if per_sample.ndim == 1 else self.sizes[:, None])

    def check_point(self, w, name: str = "w") -> np.ndarray:
        """``w`` as a finite float vector of length :attr:`dim`, or :class:`InputError` naming ``name``.

        Parameters
        ----------
        w : array-like of shape (dim,)
        name : str, default "w"

        Returns
        -------
        numpy.ndarray
            A new float64 array.
        """
        if isinstance(w, np.ndarray) and w.shape == (self.dim,) and w.dtype == np.float64:
            if not np.all(np.isfinite(w)):
                raise InputError(f"{name} contains NaN or infinite entries")
            return w.copy()
        return check_array(w, name, shape=(self.dim,))

    def risks(self, w: np.ndarray) -> np.ndarray:
        """The empirical group risks ``(R_1(w), ..., R_m(w))`` (exact; for evaluation, not counted).

        Parameters
        ----------
        w : array-like of shape (dim,)

        Returns
        -------
        numpy.ndarray of shape (m,)
        """
        return self.group_means(self.full_eval(w)[0])

    def risks_and_grads(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``R_i(w)`` and ``grad R_i(w)`` for every group (exact; for evaluation, not counted).

        Parameters
        ----------
        w : array-like of shape (dim,)

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            ``(m,)`` and ``(m, dim)``.
        """
        val, grad = self.full_eval(w)
        return self.group_means(val), self.group_means(grad)

    def max_risk(self, w: np.ndarray) -> float:
        """``max_i R_i(w) = max_q phi(w, q)``."""
        return float(self.risks(w).max())

    def subproblem(self, i: int) -> "GroupProblem":
        """Group ``i`` alone as a one-group problem (plain ERM over its samples), sharing the oracle."""
        i = check_int(i, "i (group index)", min_val=0, max_val=self.m - 1)
        start = int(self.offsets[i])
        base = self._evaluate

        def evaluate(w: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return base(w, np.asarray(pos) + start)

        return GroupProblem(
            sizes=self.sizes[i : i + 1],
            domain=self.domain,
            dim=self.dim,
            evaluate=evaluate,
            smoothness=self.smoothness,
            lipschitz=self.lipschitz,
            loss_bound=self.loss_bound,
            name=f"group {i} of {self.name}",
        )

    def __repr__(self) -> str:
        return f"GroupProblem(m={self.m}, n_total={self.n_total}, dim={self.dim}, {self.name})"


# ------------------------------------------------------------------------------------------ validation
def _as_matrix(X, name: str) -> np.ndarray:
    """A non-empty, finite 2-D float64 array (samples x features)."""
    return check_array(X, name, ndim=2).astype(np.float64, copy=False)


def _as_vector(y, name: str) -> np.ndarray:
    """A non-empty, finite 1-D float64 array; boolean labels read as 0 and 1."""
    if isinstance(y, np.ndarray) and y.dtype == bool:
        y = y.astype(np.float64)
    return check_array(y, name, ndim=1).astype(np.float64, copy=False)


def _members(groups, n: int, labels_allowed: bool = True) -> list[np.ndarray]:
    """Group memberships as a list of non-empty integer index arrays into ``0..n-1``."""
    if groups is None:
        raise InputError("groups is required: a label per sample or a list of index arrays")
    if isinstance(groups, np.ndarray) and groups.ndim == 1 and groups.dtype != object:
        if not labels_allowed:
            raise InputError("groups must be a sequence of index arrays, one per group")
        if groups.shape[0] != n:
            raise InputError(f"groups has {groups.shape[0]} labels but there are {n} samples")
        if groups.dtype.kind == "f" and not np.all(np.isfinite(groups)):
            raise InputError("groups contains NaN or infinite labels")
        _, inv = np.unique(groups, return_inverse=True)
        return [np.flatnonzero(inv == g) for g in range(int(inv.max()) + 1)]
    if not isinstance(groups, (list, tuple, np.ndarray)) or len(groups) == 0:
        raise InputError("groups must be a label array of length n or a non-empty sequence of index arrays")
    first = groups[0]
    if labels_allowed and np.ndim(first) == 0:  # a plain list of labels
        return _members(np.asarray(groups), n)
    out = []
    for i, g in enumerate(groups):
        try:
            a = np.asarray(g)
        except (TypeError, ValueError):
            raise InputError(f"groups[{i}] must be an array of sample indices") from None
        if a.size == 0:
            raise InputError(f"groups[{i}] is empty", "every group needs at least one sample")
        if a.ndim != 1 or not (np.issubdtype(a.dtype, np.integer)):
            raise InputError(f"groups[{i}] must be a 1-D array of integer sample indices")
        if a.min() < 0 or a.max() >= n:
            raise InputError(f"groups[{i}] has indices outside 0..{n - 1}")
        out.append(a.astype(np.int64))
    return out


def _bind_domain(domain, dim: int) -> ConvexSet:
    if domain is None:
        domain = Ball(5.0)
    if not isinstance(domain, (Ball, Box)):
        raise InputError(f"domain must be a Ball or a Box, got {type(domain).__name__}")
    return domain.bind(dim)


__all__ = [
    "Ball",
    "Box",
    "ConvexSet",
    "BallSet",
    "BoxSet",
    "GroupProblem",
    "LOSSES",
    "SCALAR_LOSSES",
    "Oracle",
]
