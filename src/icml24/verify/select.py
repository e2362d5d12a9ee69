"""Which claims a run covers: selection by slug or key, seeds, and what paper scale lacks here (before any work)."""

from __future__ import annotations

import logging
from typing import Iterable, Sequence

from .. import registry
from ..claims import Claim, Scale
from ..errors import InputError, RunDirError
from ..prereq import unmet
from ..validation import check_seed

log = logging.getLogger(__name__)


def select_claims(targets: Sequence[str] | None) -> list[Claim]:
    """Claims named by ``targets`` (slugs or ``slug/claim`` keys); all implemented methods' when empty.

    Parameters
    ----------
    targets : sequence of str or None

    Returns
    -------
    list of Claim

    Raises
    ------
    InputError
        For an unknown or planned method or an unknown claim.
    """
    if not targets:
        out: list[Claim] = []
        for slug in registry.all_slugs():
            m = registry.get(slug)  # light: a missing extra shows when a claim runs, as its one-line error
            if m is not None:
                out.extend(m.claims)
        return out
    out, seen = [], set()
    for t in targets:
        slug, _, name = t.partition("/")
        slug = registry.check_slug(slug)
        m = registry.get(slug)
        if m is None:
            raise InputError(f"method {slug!r} is planned, not implemented yet", "run 'icml24 list' to see which are")
        chosen = [m.claim(name)] if name else list(m.claims)
        for c in chosen:
            if c.key not in seen:
                seen.add(c.key)
                out.append(c)
    return out


def claims_by_key(keys: Iterable[str]) -> list[Claim]:
    """Look claims up by key (for ``--resume``); a key that no longer exists is an error.

    Parameters
    ----------
    keys : iterable of str

    Returns
    -------
    list of Claim
    """
    out = []
    for key in keys:
        slug, _, name = str(key).partition("/")
        m = registry.get(registry.check_slug(slug))
        if m is None:
            raise RunDirError(f"claim {key} belongs to {slug}, which is not implemented in this version")
        out.append(m.claim(name))
    return out


def parse_seeds(value: str | int | Sequence[int]) -> list[int]:
    """``"0,1,2"``, ``3`` or ``[0, 1]`` as a list of distinct non-negative seeds, in the order given.

    Parameters
    ----------
    value : str, int or sequence of int

    Returns
    -------
    list of int
    """
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        try:
            seeds = [int(p) for p in parts]
        except ValueError:
            raise InputError(
                f"--seeds must be comma-separated non-negative integers, got {value!r}", "e.g. --seeds 0,1,2"
            ) from None
    elif isinstance(value, int) and not isinstance(value, bool):
        seeds = [value]
    else:
        seeds = list(value)
    if not seeds:
        raise InputError("seeds is empty", "give at least one seed, e.g. --seeds 0")
    out: list[int] = []
    for s in seeds:
        s = check_seed(s, "seeds")
        if s not in out:
            out.append(s)
    return out


def preflight(claims: Sequence[Claim], scale: Scale | str, *, light: bool = False) -> dict[str, list[str]]:
    """What each experiment of ``claims`` lacks at ``scale``: ``{experiment key: [reason, ...]}``, unmet only.

    Parameters
    ----------
    claims : sequence of Claim
    scale : Scale or str
    light : bool, default False
        Answer without importing torch (``icml24 list``).

    Returns
    -------
    dict of str to list of str
    """
    scale = Scale.parse(scale)
    out: dict[str, list[str]] = {}
    for exp in {c.experiment.key: c.experiment for c in claims}.values():
        reasons = unmet(exp.requirements(scale), light=light)
        if reasons:
            out[exp.key] = reasons
    return out


def preflight_lines(claims: Sequence[Claim], scale: Scale | str) -> list[str]:
    """One line per experiment that cannot run at ``scale`` here, naming its claims and what it lacks.

    Parameters
    ----------
    claims : sequence of Claim
    scale : Scale or str

    Returns
    -------
    list of str
    """
    lacking = preflight(claims, scale)
    lines = []
    for key, reasons in lacking.items():
        names = [c.key for c in claims if c.experiment.key == key]
        lines.append(f"{', '.join(names)}: needs {'; '.join(reasons)}")
    return lines


__all__ = ["select_claims", "claims_by_key", "parse_seeds", "preflight", "preflight_lines"]
