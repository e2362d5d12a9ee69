"""One experiment on one seed, and the claims judged on its metrics: the records a run directory holds."""

from __future__ import annotations

import datetime as _dt
import logging
import time
import traceback
from typing import Any

from ..claims import Claim, Experiment, Scale, validate_metrics
from ..errors import ICML24Error, PrerequisiteMissing
from ..prereq import unmet
from ..runs import (
    recording_substitutions,
)

log = logging.getLogger(__name__)


def run_experiment(experiment: Experiment, scale: Scale, seed: int, *, debug: bool = False) -> dict[str, Any]:
    """Run one experiment on one seed (never raises unless ``debug``); its claims are judged on the result.

    Prerequisites declared for ``scale`` are checked first; a missing one, or a
    :class:`~icml24.errors.PrerequisiteMissing` raised by the run, makes the result "not run".

    Parameters
    ----------
    experiment : Experiment
    scale : Scale
    seed : int
    debug : bool, default False
        Let the run's exception propagate instead of recording it.

    Returns
    -------
    dict
        ``experiment, metrics, error, not_run (the reason or None), substitutions, seconds``.
    """
    t0 = time.perf_counter()
    metrics: dict[str, float] = {}
    error = not_run = None
    with recording_substitutions() as notes:
        reasons = unmet(experiment.requirements(scale))
        if reasons:
            not_run = "; ".join(reasons)
        else:
            try:
                metrics = experiment.measure(scale, seed)
            except KeyboardInterrupt:
                raise
            except PrerequisiteMissing as exc:
                not_run = exc.one_line()
            except Exception as exc:  # a failing experiment must not take the others down
                if debug:
                    raise
                error = exc.one_line() if isinstance(exc, ICML24Error) else f"{type(exc).__name__}: {exc}"
                log.debug("experiment %s raised\n%s", experiment.key, traceback.format_exc())
    return {
        "experiment": experiment.key,
        "metrics": metrics,
        "error": error,
        "not_run": not_run,
        "substitutions": list(notes),
        "seconds": round(time.perf_counter() - t0, 3),
    }


def judge_claim(claim: Claim, scale: Scale, seed: int, result: dict[str, Any], *, first: bool = True) -> dict[str, Any]:
    """The record of ``claim`` on one seed, judged on its experiment's ``result`` (see :func:`run_experiment`).

    Parameters
    ----------
    claim : Claim
    scale : Scale
    seed : int
    result : dict
        What :func:`run_experiment` returned for ``claim.experiment`` on this seed.
    first : bool, default True
        Whether this is the first claim judged on the result: it carries the experiment's seconds, the others
        0 (so that a table's seconds add up to the time spent).

    Returns
    -------
    dict
        ``key, slug, claim, statement, scale, seed, experiment, metrics, headline(_value), baseline(_value),
        paper, expected, finding, holds, matches, status ("holds" | "fails" | "error" | "not_run"), error,
        not_run, substitutions, seconds, experiment_seconds, finished``.
    """
    error, not_run = result.get("error"), result.get("not_run")
    metrics: dict[str, float] = {}
    holds = False
    if error is None and not_run is None:
        try:
            metrics = validate_metrics(claim, result.get("metrics", {}))
            holds = bool(claim.holds(metrics))
        except Exception as exc:  # noqa: BLE001 - a broken judge is this claim's error only
            error = exc.one_line() if isinstance(exc, ICML24Error) else f"{type(exc).__name__}: {exc}"
    status = "error" if error else "not_run" if not_run else ("holds" if holds else "fails")
    return {
        "key": claim.key,
        "slug": claim.slug,
        "claim": claim.name,
        "statement": claim.statement,
        "scale": scale.value,
        "seed": seed,
        "experiment": claim.experiment.key,
        "metrics": metrics,
        "headline": claim.headline,
        "headline_value": metrics.get(claim.headline),
        "baseline": claim.baseline,
        "baseline_value": metrics.get(claim.baseline),
        "paper": claim.paper,
        "expected": claim.expected,
        "finding": claim.finding,
        "seed_dependent": claim.seed_dependent,
        "holds": holds,
        "matches": status == "not_run" or (error is None and claim.matches(holds)),
        "status": status,
        "error": error,
        "not_run": not_run,
        "substitutions": list(result.get("substitutions", [])),
        "seconds": float(result.get("seconds", 0.0)) if first else 0.0,
        "experiment_seconds": float(result.get("seconds", 0.0)),
        "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def run_claim(claim: Claim, scale: Scale, seed: int, *, debug: bool = False) -> dict[str, Any]:
    """Run one claim's experiment on one seed and return the claim's record (never raises unless ``debug``).

    Parameters
    ----------
    claim : Claim
    scale : Scale
    seed : int
    debug : bool, default False
        Let the experiment's exception propagate instead of recording it.

    Returns
    -------
    dict
        See :func:`judge_claim`.
    """
    return judge_claim(claim, scale, seed, run_experiment(claim.experiment, scale, seed, debug=debug))


def result_of(rec: dict[str, Any]) -> dict[str, Any] | None:
    """An experiment's result recovered from a finished claim's record (for resume), or None.

    Parameters
    ----------
    rec : dict
        A record of ``results.jsonl``.

    Returns
    -------
    dict or None
        What :func:`run_experiment` returned, when the record holds a judged (not errored, run) experiment.
    """
    if rec.get("status") not in ("holds", "fails") or not rec.get("experiment"):
        return None
    return {
        "experiment": rec["experiment"],
        "metrics": rec.get("metrics", {}),
        "error": None,
        "not_run": None,
        "substitutions": rec.get("substitutions", []),
        "seconds": rec.get("experiment_seconds", rec.get("seconds", 0.0)),
    }


__all__ = ["run_experiment", "judge_claim", "run_claim", "result_of"]
