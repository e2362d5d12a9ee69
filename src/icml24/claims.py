"""The claim protocol: every method package states its paper's claims as executable checks.

A :class:`Claim` is a comparison or a theoretical prediction that can fail. Its ``run(scale, seed)``
measures the method *and* its baseline (or the reference the prediction is judged against) in the same
call and returns a flat ``{metric name: float}`` dictionary; ``holds(metrics)`` judges the claim on those
numbers only. ``headline`` names the metric shown for the method, ``baseline`` the metric shown for its
peer: both must be among the returned metrics, so a claim cannot omit the thing it is compared with.

Several claims often judge one run (a trained zoo, a model pair). That run is an :class:`Experiment`:
declared once in the method's ``paper.py`` and given as the ``run`` of each claim that judges it, so that
``icml24 verify`` computes it once per (scale, seed), locally and on Ray, and a resumed run re-uses it. A
claim given a plain function has an experiment of its own.

An experiment that lacks a prerequisite (a data set, a GPU) raises
:class:`~icml24.errors.PrerequisiteMissing` (:class:`~icml24.errors.DataUnavailable` for data); its claims
are then **not run**, a verdict counted apart, never a hold and never a failure. Prerequisites known
beforehand are declared (``needs``, ``paper_needs``) so that ``verify`` checks them before any work.

A :class:`Method` groups the claims of one paper. Package ``icml24.<slug>.paper`` defines ``METHOD``.
"""

from __future__ import annotations

import enum
import importlib
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

from .errors import ClaimError, InputError

_SLUG = re.compile(r"^[a-z][a-z0-9_]*$")
_KEY = re.compile(r"^[a-z][a-z0-9_]*/[a-z0-9][a-z0-9_.-]*$")
_RUN_REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$")


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
        """A scale from its name (``Scale.parse("quick")``) or itself.

        Parameters
        ----------
        value : str or Scale

        Returns
        -------
        Scale

        Raises
        ------
        InputError
            Naming the valid scales.
        """
        if isinstance(value, Scale):
            return value
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            names = ", ".join(s.value for s in cls)
            raise InputError(f"unknown scale {value!r}", f"choose one of: {names}") from None

    def pick(self, smoke, quick, paper):
        """The argument that matches this scale: ``n = scale.pick(64, 512, 4096)``.

        Parameters
        ----------
        smoke, quick, paper : object
            The values for each scale.

        Returns
        -------
        object
        """
        return {Scale.SMOKE: smoke, Scale.QUICK: quick, Scale.PAPER: paper}[self]


Metrics = dict[str, float]


_NEED = re.compile(r"^(data:[a-z0-9][a-z0-9_.-]*|gpu|ram:[0-9]+(\.[0-9]+)?|never:.+)$")


def _check_needs(owner: str, name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (tuple, list)):
        raise InputError(f"{owner}: {name} must be a tuple of requirements, got {value!r}")
    for need in value:
        if not isinstance(need, str) or not _NEED.match(need):
            raise InputError(
                f"{owner}: requirement {need!r} in {name} is malformed",
                "use 'data:<name>', 'gpu', 'ram:<GiB>' or 'never:<what and why>'",
            )
    return tuple(value)


def _resolve(ref: str, slug: str, owner: str) -> Callable:
    module_name, _, func = ref.partition(":")
    if not module_name.startswith("icml24."):
        module_name = f"icml24.{slug}.{module_name}"
    module = importlib.import_module(module_name)
    try:
        return getattr(module, func)
    except AttributeError:
        raise ClaimError(f"{owner}: {module_name} has no function {func!r}") from None


@dataclass(frozen=True)
class Experiment:
    """A run that one or more claims judge, computed once per (scale, seed).

    Parameters
    ----------
    key : str
        ``"<slug>/<name>"``, e.g. ``"group_dro/race"``.
    run : callable ``(Scale, seed) -> dict[str, float]`` or str
        Measures everything its claims judge (the method and its baselines) and returns flat metrics. A
        string ``"module:function"`` is imported on first use (relative to the method's package).
    cpus : int, default 1
        CPUs one run uses (Ray reserves this many per task).
    needs : tuple of str, default ()
        Prerequisites at every scale, checked before it runs; when one is missing its claims are not run.
        ``"data:<name>"`` (a data set of :mod:`icml24.data.fetch`), ``"gpu"``, ``"ram:<GiB>"``, or
        ``"never:<what>"`` (something not to be had here, e.g. a data set that is not public).
    paper_needs : tuple of str, default ()
        Further prerequisites at PAPER scale only, where nothing is substituted (the data a smaller scale
        replaces by a declared stand-in, the GPU).
    """

    key: str
    run: Callable[[Scale, int], Mapping[str, float]] | str
    cpus: int = 1
    needs: tuple[str, ...] = ()
    paper_needs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.match(self.key):
            raise InputError(f"experiment key {self.key!r} is malformed", "use '<slug>/<name>', lower case")
        if isinstance(self.run, str):
            if not _RUN_REF.match(self.run):
                raise InputError(f"experiment {self.key}: run {self.run!r} is malformed", "use 'module:function'")
        elif not callable(self.run):
            raise InputError(f"experiment {self.key}: run is not callable")
        if isinstance(self.cpus, bool) or not isinstance(self.cpus, int) or self.cpus < 1:
            raise InputError(f"experiment {self.key}: cpus must be a positive integer, got {self.cpus!r}")
        object.__setattr__(self, "needs", _check_needs(f"experiment {self.key}", "needs", self.needs))
        object.__setattr__(self, "paper_needs", _check_needs(f"experiment {self.key}", "paper_needs", self.paper_needs))

    @property
    def slug(self) -> str:
        """The method's slug, the part of ``key`` before the slash."""
        return self.key.split("/", 1)[0]

    def requirements(self, scale: Scale | str) -> tuple[str, ...]:
        """What this experiment needs at ``scale`` (``needs``, plus ``paper_needs`` at PAPER scale).

        Parameters
        ----------
        scale : Scale or str

        Returns
        -------
        tuple of str
        """
        extra = self.paper_needs if Scale.parse(scale) is Scale.PAPER else ()
        return tuple(dict.fromkeys(self.needs + extra))

    def runner(self) -> Callable[[Scale, int], Mapping[str, float]]:
        """The ``run`` callable, imported first when ``run`` was given as ``"module:function"``.

        Returns
        -------
        callable ``(Scale, int) -> dict[str, float]``

        Raises
        ------
        ClaimError
            When the module has no such function.
        """
        if callable(self.run):
            return self.run
        return _resolve(self.run, self.slug, f"experiment {self.key}")

    def measure(self, scale: Scale | str, seed: int) -> Metrics:
        """Run the experiment once and return its metrics as floats (NaN and inf allowed).

        Parameters
        ----------
        scale : Scale or str
        seed : int

        Returns
        -------
        dict of str to float

        Raises
        ------
        ClaimError
            When the run returns something other than flat numeric metrics.
        """
        from .validation import check_seed

        scale = Scale.parse(scale)
        return as_metrics(f"experiment {self.key}", self.runner()(scale, check_seed(seed)))


@dataclass(frozen=True)
class Claim:
    """One executable claim of a paper.

    Parameters
    ----------
    key : str
        ``"<slug>/<name>"``, unique across the library, e.g. ``"seed_gnn/sequential-robustness"``.
    statement : str
        The paper's claim in one sentence, in our words, including what it is compared with.
    run : Experiment, callable ``(Scale, seed) -> dict[str, float]`` or str
        The experiment the claim judges (shared with other claims of the method), or a function that measures
        the method and its baseline in the same call (then the claim has an experiment of its own, keyed by the
        claim's key).
    holds : callable ``(metrics) -> bool``
        Judges the claim on the returned metrics only.
    headline : str
        Name of the metric shown for the method in tables.
    baseline : str
        Name of the metric shown for the baseline (or the predicted reference value) in tables.
    paper : str, default ""
        The paper's (or official code's) own figure and setting for this claim, shown beside ours.
    expected : bool, default True
        False declares a *finding*: the claim was measured not to reproduce at our scales. ``verify`` then
        reports "does not reproduce (known)" and counts the claim as matching its declaration when it
        fails, and as a difference when it holds (as pytest's strict xfail does).
    finding : str, default ""
        The evidence for ``expected=False``: the numbers we measured and the reason. Required then.
    seed_dependent : bool, default False
        Only with ``expected=False``: the finding's verdict varies with the seed (it holds on some of seeds
        0-2 and fails on others). One seed's verdict, either way, then matches the declaration; over several
        seeds the claim must fail on at least one (all holding is a difference: it reproduces, promote it).
    cpus : int, default 1
        CPUs one run of the claim uses (Ray reserves this many per task); for an own experiment only.
    needs, paper_needs : tuple of str, default ()
        Prerequisites of the claim's own experiment (see :class:`Experiment`); for an own experiment only.

    Notes
    -----
    ``run`` may be given as a string ``"module:function"``, where ``module`` is relative to the method's
    package (``"experiments:run_gcn"``) or absolute (``"icml24.x.experiments:f"``). It is imported on the
    first call, so that a method's ``paper.py`` can be read (``icml24 list``) without importing torch.
    """

    key: str
    statement: str
    run: "Experiment | Callable[[Scale, int], Mapping[str, float]] | str"
    holds: Callable[[Mapping[str, float]], bool]
    headline: str
    baseline: str
    paper: str = ""
    expected: bool = True
    finding: str = ""
    seed_dependent: bool = False
    cpus: int = 1
    needs: tuple[str, ...] = ()
    paper_needs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not _KEY.match(self.key):
            raise InputError(f"claim key {self.key!r} is malformed", "use '<slug>/<name>', lower case")
        if not isinstance(self.statement, str) or not self.statement.strip():
            raise InputError(f"claim {self.key}: statement is empty", "state the paper's claim in one sentence")
        if not callable(self.holds):
            raise InputError(f"claim {self.key}: holds is not callable")
        if isinstance(self.run, Experiment):
            if self.run.slug != self.slug:
                raise InputError(f"claim {self.key}: its experiment {self.run.key} belongs to another method")
            if self.cpus != 1 or self.needs or self.paper_needs:
                raise InputError(
                    f"claim {self.key}: cpus, needs and paper_needs belong to its experiment {self.run.key}",
                    "declare them on the Experiment",
                )
        elif isinstance(self.run, str):
            if not _RUN_REF.match(self.run):
                raise InputError(f"claim {self.key}: run {self.run!r} is malformed", "use 'module:function'")
        elif not callable(self.run):
            raise InputError(f"claim {self.key}: run is not callable")
        object.__setattr__(self, "needs", _check_needs(f"claim {self.key}", "needs", self.needs))
        object.__setattr__(self, "paper_needs", _check_needs(f"claim {self.key}", "paper_needs", self.paper_needs))
        if not isinstance(self.paper, str) or not isinstance(self.finding, str):
            raise InputError(f"claim {self.key}: paper and finding must be text")
        if not isinstance(self.expected, bool):
            raise InputError(f"claim {self.key}: expected must be True or False")
        if not self.expected and not self.finding.strip():
            raise InputError(
                f"claim {self.key}: a claim expected not to hold needs its finding",
                "state the measured numbers and the reason in finding",
            )
        if self.expected and self.finding.strip():
            raise InputError(
                f"claim {self.key}: finding is given but expected is True",
                "set expected=False for a claim measured not to reproduce",
            )
        if not isinstance(self.seed_dependent, bool):
            raise InputError(f"claim {self.key}: seed_dependent must be True or False")
        if self.seed_dependent and self.expected:
            raise InputError(
                f"claim {self.key}: seed_dependent is given but expected is True",
                "a claim must hold on every seed; declare a seed-dependent result as a finding (expected=False)",
            )
        if isinstance(self.cpus, bool) or not isinstance(self.cpus, int) or self.cpus < 1:
            raise InputError(f"claim {self.key}: cpus must be a positive integer, got {self.cpus!r}")
        for name in ("headline", "baseline"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise InputError(f"claim {self.key}: {name} must name a metric")

    @property
    def slug(self) -> str:
        """The method's slug, the part of ``key`` before the slash."""
        return self.key.split("/", 1)[0]

    @property
    def name(self) -> str:
        """The claim's name within its method, the part of ``key`` after the slash."""
        return self.key.split("/", 1)[1]

    @property
    def experiment(self) -> Experiment:
        """The experiment this claim judges: the shared one given as ``run``, or its own."""
        if isinstance(self.run, Experiment):
            return self.run
        return Experiment(self.key, self.run, cpus=self.cpus, needs=self.needs, paper_needs=self.paper_needs)

    def runner(self) -> Callable[[Scale, int], Mapping[str, float]]:
        """The experiment's ``run`` callable (imported first when given as ``"module:function"``).

        Returns
        -------
        callable ``(Scale, int) -> dict[str, float]``

        Raises
        ------
        ClaimError
            When the module has no such function.
        """
        return self.experiment.runner()

    def measure(self, scale: Scale | str, seed: int) -> Metrics:
        """Run the claim and return its validated metrics (floats; NaN and inf are allowed values).

        Parameters
        ----------
        scale : Scale or str
        seed : int

        Returns
        -------
        dict of str to float
        """
        return validate_metrics(self, self.experiment.measure(scale, seed))

    def matches(self, holds: bool, seeds: int = 1) -> bool:
        """Whether a verdict is the declared one (holds for a claim, fails for a finding).

        Parameters
        ----------
        holds : bool
            The verdict: on one seed, or over ``seeds`` seeds (holds when every seed holds).
        seeds : int, default 1
            How many seeds the verdict covers. A seed-dependent finding matches either verdict on one seed
            and a failing one over several.

        Returns
        -------
        bool
        """
        return matches_declaration(holds, self.expected, self.seed_dependent, seeds)

    def judge(self, metrics: Mapping[str, float]) -> bool:
        """``holds`` applied to validated metrics, coerced to a plain bool.

        NaN anywhere it reads is its own business: ``holds`` should treat a NaN comparison as failure
        (Python's comparisons do).

        Parameters
        ----------
        metrics : mapping of str to float

        Returns
        -------
        bool
        """
        return bool(self.holds(validate_metrics(self, metrics)))


def as_metrics(owner: str, metrics: object) -> Metrics:
    """A run's result as a flat ``{str: float}`` dict, or :class:`ClaimError` naming ``owner``.

    Parameters
    ----------
    owner : str
        ``"claim <key>"`` or ``"experiment <key>"``, for the message.
    metrics : object
        What the run returned.

    Returns
    -------
    dict of str to float
        Booleans and numpy/torch scalars converted to ``float``.
    """
    if not isinstance(metrics, Mapping):
        raise ClaimError(f"{owner}: run returned {type(metrics).__name__}, not a dict of metrics")
    out: Metrics = {}
    for k, v in metrics.items():
        if not isinstance(k, str):
            raise ClaimError(f"{owner}: metric name {k!r} is not a string")
        if isinstance(v, bool):
            v = float(v)
        if isinstance(v, (str, bytes)):
            raise ClaimError(f"{owner}: metric {k!r} is {type(v).__name__}, not a number")
        try:
            out[k] = float(v)  # numpy and 0-d torch scalars convert; lists do not
        except (TypeError, ValueError):
            raise ClaimError(f"{owner}: metric {k!r} is {type(v).__name__}, not a number") from None
    return out


def validate_metrics(claim: Claim, metrics: object) -> Metrics:
    """Check that a run returned a flat ``{str: number}`` dict that contains the declared metrics.

    Parameters
    ----------
    claim : Claim
    metrics : object
        What the claim's run returned.

    Returns
    -------
    dict of str to float
        Booleans and numpy/torch scalars converted to ``float``.

    Raises
    ------
    ClaimError
        Not a mapping, a non-string name, a non-number value, or a declared metric missing.
    """
    out = as_metrics(f"claim {claim.key}", metrics)
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
    """A paper and its claims. ``icml24.<slug>.paper.METHOD`` is one of these.

    Parameters
    ----------
    slug : str
        Lower case letters, digits and ``_``.
    title : str
    arxiv : str or None
        The arXiv identifier.
    code : str or None
        The official code's address.
    claims : tuple of Claim
        Each key starts with ``slug/``; keys are distinct.
    authors : tuple of str, default ()
    """

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
        seen: dict[str, Experiment] = {}
        for c in self.claims:
            e = c.experiment
            if e.key in seen and seen[e.key] != e:
                raise InputError(f"method {self.slug}: two different experiments are keyed {e.key}")
            seen[e.key] = e

    @property
    def experiments(self) -> tuple[Experiment, ...]:
        """The distinct experiments its claims judge, in the order the claims first name them."""
        return tuple({c.experiment.key: c.experiment for c in self.claims}.values())

    def claim(self, name: str) -> Claim:
        """The claim called ``name`` (with or without the ``slug/`` prefix).

        Parameters
        ----------
        name : str

        Returns
        -------
        Claim

        Raises
        ------
        InputError
            Naming the method's claims.
        """
        key = name if "/" in name else f"{self.slug}/{name}"
        for c in self.claims:
            if c.key == key:
                return c
        raise InputError(
            f"method {self.slug} has no claim {name!r}",
            f"its claims: {', '.join(c.name for c in self.claims) or 'none yet'}",
        )


def finite(*values: float) -> bool:
    """True when every value is a finite float; a helper for ``holds`` functions.

    Parameters
    ----------
    *values : float

    Returns
    -------
    bool
    """
    return all(math.isfinite(v) for v in values)


def matches_declaration(holds: bool, expected: bool, seed_dependent: bool = False, seeds: int = 1) -> bool:
    """Whether a verdict is the one a claim declares (the rule of :meth:`Claim.matches`, for stored records).

    Parameters
    ----------
    holds : bool
        The verdict: on one seed, or over ``seeds`` seeds (holds when every seed holds).
    expected : bool
        The claim's ``expected``.
    seed_dependent : bool, default False
        The claim's ``seed_dependent``: either verdict matches on one seed.
    seeds : int, default 1
        How many seeds the verdict covers.

    Returns
    -------
    bool
    """
    if seed_dependent and seeds == 1:
        return True
    return bool(holds) is bool(expected)


__all__ = [
    "Scale",
    "Experiment",
    "Claim",
    "Method",
    "Metrics",
    "as_metrics",
    "validate_metrics",
    "finite",
    "matches_declaration",
]
