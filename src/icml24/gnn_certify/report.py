"""What :func:`~icml24.gnn_certify.certify` returns: a :class:`Certificate` per target class, gathered in a
:class:`Report`, with the three verdicts (``robust``, ``not_robust``, ``unknown``) and their JSON form."""

from __future__ import annotations

import contextlib
from dataclasses import asdict, dataclass, field
from typing import Iterator

import numpy as np

from ..errors import InputError

ROBUST, NOT_ROBUST, UNKNOWN = "robust", "not_robust", "unknown"


@dataclass
class Certificate:
    """The verdict against one target class.

    ``margin_lower`` is SCIP's dual bound on ``min logit[predicted] - logit[target]`` over the allowed
    attacks, ``margin_upper`` the best attack found (``inf`` when none). ``robust`` means
    ``margin_lower > 0``; ``not_robust`` means the flips below make the model's own ``logit[target]`` exceed
    ``logit[predicted]`` (``checked_margin < 0``); ``unknown`` means neither was proven within the time limit.

    Parameters
    ----------
    verdict : {"robust", "not_robust", "unknown"}
    predicted, target : int
        The clean prediction and the target class.
    bounds : str
        The bound mode used.
    margin_lower, margin_upper : float
        Dual bound and best attack's margin.
    seconds, build_seconds : float
        Solve time (the chosen clock) and time to build the MIP.
    nodes, lp_iterations : int
        SCIP's branch-and-bound nodes and LP iterations.
    status : str
        SCIP's status (or "greedy attack").
    global_budget : int
        Delta.
    flips, added, removed : list of (int, int)
        The attack's flipped node pairs (in ``data``'s numbering), split into added and removed edges.
    checked_margin : float, optional
        ``logit[predicted] - logit[target]`` of the user's model on the attacked graph.
    perturbed_edge_index : int array [2, E'], optional
        The attacked graph.
    perturbed_x : float array [n, F], optional
        The attack's features (feature boxes only).
    local_cuts, global_cuts : int
        Cuts added by the abt separator.
    """

    verdict: str
    predicted: int
    target: int
    bounds: str
    margin_lower: float
    margin_upper: float
    seconds: float
    build_seconds: float
    nodes: int
    lp_iterations: int
    status: str
    global_budget: int
    flips: list[tuple[int, int]] = field(default_factory=list)
    added: list[tuple[int, int]] = field(default_factory=list)
    removed: list[tuple[int, int]] = field(default_factory=list)
    checked_margin: float | None = None
    perturbed_edge_index: np.ndarray | None = None
    perturbed_x: np.ndarray | None = None
    local_cuts: int = 0
    global_cuts: int = 0

    def as_dict(self) -> dict:
        """The certificate as JSON-ready values (arrays as lists).

        Returns
        -------
        dict
        """
        d = asdict(self)
        d["perturbed_edge_index"] = None if self.perturbed_edge_index is None else self.perturbed_edge_index.tolist()
        d["perturbed_x"] = None if self.perturbed_x is None else self.perturbed_x.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Certificate":
        """The inverse of :meth:`as_dict`.

        Parameters
        ----------
        d : dict

        Returns
        -------
        Certificate
        """
        with _parsing("d", "a Certificate"):
            d = dict(d)
            for key in ("flips", "added", "removed"):
                d[key] = [tuple(int(v) for v in p) for p in d.get(key) or []]
            if d.get("perturbed_edge_index") is not None:
                d["perturbed_edge_index"] = np.asarray(d["perturbed_edge_index"], dtype=np.int64).reshape(2, -1)
            if d.get("perturbed_x") is not None:
                d["perturbed_x"] = np.asarray(d["perturbed_x"], dtype=np.float64)
            return cls(**d)


@contextlib.contextmanager
def _parsing(name: str, what: str) -> Iterator[None]:
    """Turn the errors of reading a malformed record into one InputError naming ``name``."""
    try:
        yield
    except InputError:
        raise
    except (TypeError, KeyError, ValueError, OverflowError) as exc:
        raise InputError(
            f"{name} is not {what} as written by as_dict: {type(exc).__name__}: {' '.join(str(exc).split())}"[:200]
        ) from None


@dataclass
class Report:
    """Certificates against every requested target class; ``verdict`` is ``robust`` when all are.

    Parameters
    ----------
    certificates : list of Certificate
        One per target class.
    predicted : int
        The model's clean prediction.
    task : {"graph", "node"}
    global_budget : int, optional
        Delta, the most flips in total.
    budget_of : str
        How Delta was obtained (for a fraction: of which edges or arcs).
    """

    certificates: list[Certificate]
    predicted: int
    task: str
    global_budget: int | None = None
    budget_of: str = ""

    @property
    def verdict(self) -> str:
        vs = {c.verdict for c in self.certificates}
        if NOT_ROBUST in vs:
            return NOT_ROBUST
        return ROBUST if vs == {ROBUST} else UNKNOWN

    def as_dict(self) -> dict:
        """The report as JSON-ready values.

        Returns
        -------
        dict
        """
        return {
            "verdict": self.verdict,
            "predicted": self.predicted,
            "task": self.task,
            "global_budget": self.global_budget,
            "budget_of": self.budget_of,
            "certificates": [c.as_dict() for c in self.certificates],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Report":
        """The inverse of :meth:`as_dict`.

        Parameters
        ----------
        d : dict

        Returns
        -------
        Report
        """
        with _parsing("d", "a Report"):
            if not isinstance(d, dict) or not isinstance(d["certificates"], list):
                raise TypeError("not a dict with a list of certificates")
            return cls(
                certificates=[Certificate.from_dict(c) for c in d["certificates"]],
                predicted=int(d["predicted"]),
                task=str(d["task"]),
                global_budget=d.get("global_budget"),
                budget_of=str(d.get("budget_of", "")),
            )

    @property
    def seconds(self) -> float:
        """Solve time over every target (build time included)."""
        return float(sum(c.seconds + c.build_seconds for c in self.certificates))

    @property
    def nodes(self) -> int:
        """Branch-and-bound nodes over every target."""
        return int(sum(c.nodes for c in self.certificates))

    def __getitem__(self, target: int) -> Certificate:
        for c in self.certificates:
            if c.target == target:
                return c
        raise KeyError(target)


__all__ = [
    "Certificate",
    "Report",
    "ROBUST",
    "NOT_ROBUST",
    "UNKNOWN",
]
