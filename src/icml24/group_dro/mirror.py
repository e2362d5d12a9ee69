"""The mirror-descent setup shared by ALEG, ALEM and every baseline, and the run bookkeeping.

Setup (Yu et al. 2024; Nemirovski et al. 2009, the standard setup for simplex-constrained saddle points): the
w-block carries the Euclidean distance-generating function ``||w - c||^2 / (2 D^2)`` (``c`` the centre of
``W``, ``D`` its radius), the q-block the negative entropy divided by ``ln m``. Their sum is 1-strongly convex
in the norm ``||z||^2 = ||w||^2 / D^2 + ||q||_1^2 / ln m``, whose dual is
``||g||_*^2 = D^2 ||g_w||^2 + ln m ||g_q||_inf^2``. Both blocks then have unit "diameter", as in the paper's analysis.

The anchored prox step of Algorithm 1 (ALEG; both its extrapolation and its update),

    z' = argmin_z  eta <g, z> + alpha B(z, z_k) + (1 - alpha) B(z, z_hat),

has the closed form ``w' = Pi_W(alpha w_k + (1 - alpha) w_hat - eta D^2 g_w)`` and
``q' ~ q_k^alpha * q_hat^(1 - alpha) * exp(-eta ln m g_q)``; ``alpha = 1`` is the plain mirror(-prox) step.
q is kept as ``log q`` (normalised) so that the geometric means of the mirror snapshot never underflow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import InputError
from ..validation import check_array, check_int
from .problem import GroupProblem

Callback = Callable[[int, np.ndarray, np.ndarray], bool]


def logsumexp(a: np.ndarray) -> float:
    """``log(sum_i exp(a_i))``, computed stably by shifting by the maximum.

    Parameters
    ----------
    a : numpy.ndarray
        Non-empty array of finite values (all entries are summed).

    Returns
    -------
    float
    """
    mx = float(a.max())
    return mx + math.log(float(np.exp(a - mx).sum()))


class Geometry:
    """The distance-generating function of the module docstring, bound to a problem."""

    def __init__(self, problem: GroupProblem) -> None:
        self.problem = problem
        self.m = problem.m
        self.D = problem.domain.radius
        self.D2 = self.D**2
        self.lnm = math.log(problem.m) if problem.m > 1 else 0.0
        self.project = problem.domain.project

    def step(
        self, w_base: np.ndarray, lq_base: np.ndarray, g_w: np.ndarray, g_q: np.ndarray, eta: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """``argmin eta <g, z> + B(z, base)`` where ``base`` already mixes the anchors (see module doc)."""
        w = self.project(w_base - (eta * self.D2) * g_w)
        if self.m == 1:
            return w, lq_base
        lq = lq_base - (eta * self.lnm) * g_q
        return w, lq - logsumexp(lq)

    def start(self, w0: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """The initial point: ``w0`` (default the centre of W) and the uniform q, as ``log q``."""
        p = self.problem
        if w0 is None:
            w = p.domain.center.copy()
        else:
            w = p.domain.project(p.check_point(w0, "w0"))
        return w, np.full(p.m, -self.lnm)

    # Lipschitz constants of the operators in the dual norm above ([derived] from the paper's assumptions):
    # L and G are the per-sample smoothness and Lipschitz constants on W.
    def lipschitz_group_sampled(self) -> float:
        """Mean-square Lipschitz constant of the group-sampled estimator (one sample per group), which is
        also a Lipschitz constant of the full operator F:
        ``||dF||_*^2 <= D^2 [(2 D^2 L^2 + G^2 ln m) ||dw||^2 / D^2 + 2 G^2 ln m ||dq||_1^2 / ln m]``."""
        L, G = self.problem.smoothness, self.problem.lipschitz
        return self._checked(self.D * math.sqrt(max(2 * self.D2 * L * L + G * G * self.lnm, 2 * G * G * self.lnm)))

    def lipschitz_one_level(self) -> float:
        """Mean-square Lipschitz constant of the one-level estimator (one sample (i, j), weighted by m):
        the q-block term grows like m^2 and the w-block like m (the paper's comparison)."""
        L, G, m = self.problem.smoothness, self.problem.lipschitz, self.m
        return self._checked(
            self.D * math.sqrt(max(2 * m * self.D2 * L * L + m * m * G * G * self.lnm, 2 * m * G * G * self.lnm))
        )

    def _checked(self, value: float) -> float:
        """``value`` when it is a usable Lipschitz constant (positive, finite); else an InputError: a step
        ``gamma / value`` would be infinite or meaningless."""
        if not (math.isfinite(value) and value > 0.0):
            p = self.problem
            raise InputError(
                f"the operator's Lipschitz constant is {value:g} (smoothness L={p.smoothness:g}, lipschitz "
                f"G={p.lipschitz:g}, m={p.m}), so the theory step would be infinite",
                "state positive, finite smoothness and lipschitz bounds for the per-sample losses, "
                "or pass explicit steps",
            )
        return value

    def one_level_ratio(self) -> float:
        """IFO(one-level) / IFO(ALEG) that these constants predict at the theory steps: ``(L_one / L_F) /
        sqrt(m)`` (inner lengths ``N`` and ``N / m``, costs 1 and ``m`` IFO a step)."""
        return self.lipschitz_one_level() / self.lipschitz_group_sampled() / math.sqrt(self.m)

    def gradient_bound(self) -> float:
        """``M`` with ``||F_xi(z)||_*^2 <= M^2`` for the group-sampled estimator: ``D^2 G^2 + ln m B^2``."""
        p = self.problem
        return math.sqrt(self.D2 * p.lipschitz**2 + self.lnm * p.loss_bound**2) or 1.0


@dataclass
class Result:
    """What an algorithm returns.

    Attributes
    ----------
    w, q : the output point (for ALEG/ALEM and the VR baselines the step-weighted ergodic average).
    ifo : per-sample gradient evaluations used (the paper's complexity measure).
    trace : ``(ifo, w, q)`` of the output at each checkpoint (end of every epoch / every ``record_every``).
    info : method-specific numbers (step sizes, epochs run, constants).
    """

    w: np.ndarray
    q: np.ndarray
    ifo: int
    trace: list[tuple[int, np.ndarray, np.ndarray]] = field(default_factory=list)
    info: dict = field(default_factory=dict)


class Budget:
    """Stopping rule and checkpoints shared by the algorithms: ``max_ifo``, a callback, a trace."""

    def __init__(self, max_ifo: int | None, callback: Callback | None) -> None:
        max_ifo = check_int(max_ifo, "max_ifo", min_val=1, allow_none=True)
        if callback is not None and not callable(callback):
            raise InputError("callback must be callable as callback(ifo, w, q) -> bool")
        self.max_ifo = None if max_ifo is None else int(max_ifo)
        self.callback = callback
        self.trace: list[tuple[int, np.ndarray, np.ndarray]] = []
        self.stopped = False

    def exhausted(self, ifo: int) -> bool:
        """Whether the run must stop: the callback asked to, or ``ifo`` reached ``max_ifo``.

        Parameters
        ----------
        ifo : int
            Per-sample gradient evaluations spent so far.

        Returns
        -------
        bool
        """
        return self.stopped or (self.max_ifo is not None and ifo >= self.max_ifo)

    def checkpoint(self, ifo: int, w: np.ndarray, q: np.ndarray) -> None:
        """Record copies of ``(ifo, w, q)`` in the trace and call the callback; True from it stops the run.

        Parameters
        ----------
        ifo : int
            Per-sample gradient evaluations spent so far.
        w : numpy.ndarray
            ``(d,)`` current output model.
        q : numpy.ndarray
            ``(m,)`` current output group weights.
        """
        w, q = w.copy(), q.copy()
        self.trace.append((int(ifo), w, q))
        if self.callback is not None and self.callback(int(ifo), w, q):
            self.stopped = True


def check_problem(problem) -> GroupProblem:
    """``problem`` itself when it is a :class:`~icml24.group_dro.problem.GroupProblem`.

    Parameters
    ----------
    problem : object

    Returns
    -------
    GroupProblem

    Raises
    ------
    InputError
        When ``problem`` is anything else.
    """
    if not isinstance(problem, GroupProblem):
        raise InputError(
            f"problem must be a GroupProblem, got {type(problem).__name__}",
            "build one with GroupProblem.from_data or GroupProblem.from_oracle",
        )
    return problem


def check_stop(epochs, max_ifo, default_epochs: int, name: str = "epochs") -> tuple[int | None, int | None]:
    """The stopping rule of a run: ``epochs`` (or iterations) and ``max_ifo``, each a positive integer or None.

    Parameters
    ----------
    epochs : int or None
        Number of epochs (iterations for the single-loop methods).
    max_ifo : int or None
        Budget of per-sample gradient evaluations.
    default_epochs : int
        Used when both are None.
    name : str, default "epochs"
        The name of ``epochs`` in messages.

    Returns
    -------
    (int or None, int or None)
        ``(epochs, max_ifo)``.
    """
    epochs = check_int(epochs, name, min_val=1, allow_none=True)
    max_ifo = check_int(max_ifo, "max_ifo", min_val=1, allow_none=True)
    if epochs is None and max_ifo is None:
        epochs = default_epochs
    return epochs, max_ifo


def check_offsets(risk_offsets, m: int) -> np.ndarray | None:
    """Constants ``c_i`` subtracted from the group risks (MERO's shift), as a float vector, or None.

    Parameters
    ----------
    risk_offsets : array-like of shape (m,) or None
    m : int
        Number of groups.

    Returns
    -------
    numpy.ndarray or None
    """
    if risk_offsets is None:
        return None
    c = check_array(risk_offsets, "risk_offsets", ndim=(0, 1)).reshape(-1)
    if c.shape != (m,):
        raise InputError(f"risk_offsets must be {m} finite numbers (one per group), got {c.size}")
    return c


__all__ = ["Geometry", "Result", "Budget", "Callback", "logsumexp", "check_problem", "check_stop", "check_offsets"]
