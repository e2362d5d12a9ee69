"""The claim protocol: every method package states its paper's claims as executable checks.

A :class:`Claim` is a comparison or a theoretical prediction that can fail. Its ``run(scale, seed)``
measures the method *and* its baseline (or the reference the prediction is judged against) in the same
call and returns a flat ``{metric name: float}`` dictionary; ``holds(metrics)`` judges the claim on those
numbers only. ``headline`` names the metric shown for the method, ``baseline`` the metric shown for its
peer: both must be among the returned metrics, so a claim cannot omit the thing it is compared with.

A :class:`Method` groups the claims of one paper. Package ``icml24.<slug>.paper`` defines ``METHOD``.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

from .errors import ClaimError, InputError

_SLUG = re.compile(r"^[a-z][a-z0-9_]*$")
_KEY = re.compile(r"^[a-z][a-z0-9_]*/[a-z0-9][a-z0-9_.-]*$")


class Scale(enum.Enum):
    """How big a claim's experiment is.

    SMOKE: seconds; runs in the tests. QUICK: at most about two minutes on two CPU cores; the default of
    ``icml24 verify``. PAPER: the paper's own setting where data and hardware allow; a claim that lacks
    something at this scale says so (raises :class:`~icml24.errors.DataUnavailable` or similar) instead of
    silently shrinking.
    """

    SMOKE = "smoke"
    QUICK = "quick"
    PAPER = "paper"

    @classmethod
    def parse(cls, value: "str | Scale") -> "Scale":
        """``Scale.parse("quick")``; raises :class:`InputError` naming the valid scales otherwise."""
        if isinstance(value, Scale):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            names = ", ".join(s.value for s in cls)
            raise InputError(f"unknown scale {value!r}", f"choose one of: {names}") from None

    def pick(self, smoke, quick, paper):
        """Return the argument that matches this scale: ``n = scale.pick(64, 512, 4096)``."""
        return {Scale.SMOKE: smoke, Scale.QUICK: quick, Scale.PAPER: paper}[self]


Metrics = dict[str, float]


@dataclass(frozen=True)
class Claim:
    """One executable claim of a paper.

    Parameters
    ----------
    key : str
        ``"<slug>/<name>"``, unique across the library, e.g. ``"seed_gnn/sequential-robustness"``.
    statement : str
        The paper's claim in one sentence, in our words, including what it is compared with.
    run : callable ``(Scale, seed) -> dict[str, float]``
        Measures the method and its baseline in the same call.
    holds : callable ``(metrics) -> bool``
        Judges the claim on the returned metrics only.
    headline : str
        Name of the metric shown for the method in tables.
    baseline : str
        Name of the metric shown for the baseline (or the predicted reference value) in tables.
    """

    key: str
    statement: str
    run: Callable[[Scale, int], Mapping[str, float]]
    holds: Callable[[Mapping[str, float]], bool]
    headline: str
    baseline: str

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.match(self.key):
            raise InputError(f"claim key {self.key!r} is malformed", "use '<slug>/<name>', lower case")
        if not isinstance(self.statement, str) or not self.statement.strip():
            raise InputError(f"claim {self.key}: statement is empty", "state the paper's claim in one sentence")
        for name in ("run", "holds"):
            if not callable(getattr(self, name)):
                raise InputError(f"claim {self.key}: {name} is not callable")
        for name in ("headline", "baseline"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise InputError(f"claim {self.key}: {name} must name a metric")

    @property
    def slug(self) -> str:
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.key.split("/", 1)[1]

    def measure(self, scale: Scale | str, seed: int) -> Metrics:
        """Run the claim and return its validated metrics (floats; NaN and inf are allowed values)."""
        scale = Scale.parse(scale)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputError(f"seed must be a non-negative integer, got {seed!r}")
        return validate_metrics(self, self.run(scale, seed))

    def judge(self, metrics: Mapping[str, float]) -> bool:
        """``holds`` applied to validated metrics, coerced to a plain bool. NaN anywhere it reads is its
        own business: ``holds`` should treat a NaN comparison as failure (Python's comparisons do)."""
        return bool(self.holds(validate_metrics(self, metrics)))


def validate_metrics(claim: Claim, metrics: object) -> Metrics:
    """Check that a run returned a flat ``{str: number}`` dict that contains the declared metrics."""
    if not isinstance(metrics, Mapping):
        raise ClaimError(f"claim {claim.key}: run returned {type(metrics).__name__}, not a dict of metrics")
    out: Metrics = {}
    for k, v in metrics.items():
        if not isinstance(k, str):
            raise ClaimError(f"claim {claim.key}: metric name {k!r} is not a string")
        if isinstance(v, bool):
            v = float(v)
        try:
            out[k] = float(v)  # numpy and 0-d torch scalars convert; lists do not
        except (TypeError, ValueError):
            raise ClaimError(f"claim {claim.key}: metric {k!r} is {type(v).__name__}, not a number") from None
    for role in ("headline", "baseline"):
        name = getattr(claim, role)
        if name not in out:
            raise ClaimError(
                f"claim {claim.key}: {role} metric {name!r} missing from the results",
                f"returned: {', '.join(sorted(out)) or 'nothing'}",
            )
    return out


@dataclass(frozen=True)
class Method:
    """A paper and its claims. ``icml24.<slug>.paper.METHOD`` is one of these."""

    slug: str
    title: str
    arxiv: str | None
    code: str | None
    claims: tuple[Claim, ...]
    authors: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not isinstance(self.slug, str) or not _SLUG.match(self.slug):
            raise InputError(f"method slug {self.slug!r} is malformed", "use lower case letters, digits and _")
        object.__setattr__(self, "claims", tuple(self.claims))
        object.__setattr__(self, "authors", tuple(self.authors))
        keys = [c.key for c in self.claims]
        for c in self.claims:
            if not isinstance(c, Claim):
                raise InputError(f"method {self.slug}: claims must be Claim objects, got {type(c).__name__}")
            if c.slug != self.slug:
                raise InputError(f"method {self.slug}: claim {c.key} does not start with '{self.slug}/'")
        dupes = sorted({k for k in keys if keys.count(k) > 1})
        if dupes:
            raise InputError(f"method {self.slug}: duplicate claim keys {dupes}")

    def claim(self, name: str) -> Claim:
        """The claim called ``name`` (with or without the ``slug/`` prefix)."""
        key = name if "/" in name else f"{self.slug}/{name}"
        for c in self.claims:
            if c.key == key:
                return c
        raise InputError(f"method {self.slug} has no claim {name!r}",
                         f"its claims: {', '.join(c.name for c in self.claims) or 'none yet'}")


def finite(*values: float) -> bool:
    """True when every value is a finite float; a helper for ``holds`` functions."""
    return all(math.isfinite(v) for v in values)


__all__ = ["Scale", "Claim", "Method", "Metrics", "validate_metrics", "finite"]
