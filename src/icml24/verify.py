"""Running claims: selection, execution into a run directory, resume, tables and reports.

The command line (``icml24 verify`` / ``icml24 report``) is a thin layer over :func:`verify` and
:func:`write_report`, which can also be called from Python.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import math
import os
import statistics
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from . import registry
from .claims import Claim, Experiment, Method, Scale, matches_declaration, validate_metrics
from .errors import ICML24Error, InputError, PrerequisiteMissing, RunDirError
from .extras import MissingExtra, require
from .prereq import unmet
from .runs import (
    REPORT,
    RESULTS,
    RunDir,
    artifacts_to,
    atomic_write_bytes,
    atomic_write_text,
    encode_nonfinite,
    recording_substitutions,
)
from .validation import check_choice, check_seed

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------ select
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
            try:
                m = registry.get(slug)
            except MissingExtra as exc:
                # its claims are still listed (read light); each records this one-line error when it runs
                log.warning("%s", exc.one_line())
                m = registry.describe(slug)
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


# -------------------------------------------------------------------------------------------------- run
@dataclass
class Outcome:
    """What :func:`verify` returns: the run directory, one record per (claim, seed), and aggregates."""

    run_dir: RunDir | None
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0

    @property
    def aggregates(self) -> list[dict[str, Any]]:
        """One row per claim over its seeds (see :func:`aggregate`)."""
        return aggregate(self.records)

    @property
    def all_hold(self) -> bool:
        """True when every claim holds on every seed (findings included)."""
        return all(a["holds"] is True for a in self.aggregates)

    @property
    def all_match(self) -> bool:
        """True when every verdict is the declared one: claims hold, findings do not, nothing raised."""
        return all(a["matches"] for a in self.aggregates)

    @property
    def exit_code(self) -> int:
        """0 when every verdict matches its declaration, 1 otherwise (as pytest's strict xfail)."""
        return 0 if self.all_match else 1


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


def _result_of(rec: dict[str, Any]) -> dict[str, Any] | None:
    """An experiment's result recovered from a finished claim's record (for resume), or None."""
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


ENGINES = ("local", "ray")


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


def _connect_ray(address: str | None, timeout: float = 30.0) -> bool:
    """Join (or start) a Ray cluster; True when this call started it. Refuses an unreachable address."""
    require("ray", extra="ray", what="--engine ray")
    import socket

    import ray

    if ray.is_initialized():
        return False
    host, sep, port = (address or "").rpartition(":")
    if address and address != "auto" and "://" not in address:
        if not sep or not port.isdigit():
            raise InputError(f"--address {address!r} is not HOST:PORT", "e.g. --address 10.0.0.5:6379")
        try:  # ray.init itself waits on an unreachable address without a limit
            socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout).close()
        except OSError as exc:
            raise InputError(
                f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}",
                "check --address HOST:PORT, or leave it out to start a local cluster",
            ) from None
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise InputError(
            f"cannot reach the Ray cluster {address or '(local)'}: {str(exc).splitlines()[0] if str(exc) else exc}",
            "check --address HOST:PORT, or leave it out to start a local cluster",
        ) from None
    return True


@dataclass
class _Unit:
    """One experiment on one seed and the claims to judge on it (``result`` known when resumed)."""

    experiment: Experiment
    seed: int
    claims: list[Claim]
    result: dict[str, Any] | None = None


def _units(claims: Sequence[Claim], seeds: Sequence[int], done: Sequence[dict[str, Any]]) -> list[_Unit]:
    done_pairs = {(r["key"], int(r.get("seed", 0))) for r in done}
    finished = {}
    for r in done:
        res = _result_of(r)
        if res is not None:
            finished[(res["experiment"], int(r.get("seed", 0)))] = res
    units: dict[tuple[str, int], _Unit] = {}
    for s in seeds:  # seed-major: every method's first seed finishes before any second seed starts
        for c in claims:
            if (c.key, s) in done_pairs:
                continue
            k = (c.experiment.key, s)
            if k not in units:
                units[k] = _Unit(c.experiment, s, [], finished.get(k))
            units[k].claims.append(c)
    return list(units.values())


def verify(
    targets: Sequence[str] | None = None,
    *,
    scale: Scale | str = Scale.QUICK,
    seeds: str | int | Sequence[int] = (0,),
    seed: int | None = None,
    out: str | os.PathLike = "runs",
    resume: str | os.PathLike | None = None,
    progress: bool | None = None,
    debug: bool = False,
    engine: str = "local",
    address: str | None = None,
    on_start: Callable[[Path], None] | None = None,
) -> Outcome:
    """Run claims x seeds into a run directory and return their records (earlier ones included on resume).

    Each experiment runs once per seed, and every selected claim that judges it is judged on its metrics.

    Parameters
    ----------
    targets : sequence of str, optional
        Slugs or ``slug/claim`` keys; every implemented method's claims when empty.
    scale : Scale or str, default QUICK
    seeds : str, int or sequence of int, default (0,)
        Each claim runs once per seed; it holds when every seed holds.
    seed : int, optional
        One seed; the same as ``seeds=[seed]``.
    out : path, default "runs"
        Folder of run directories.
    resume : path, optional
        A run directory to finish: its own configuration is used, the (claim, seed) pairs already in its
        ``results.jsonl`` are skipped, and their experiments' metrics judge the claims still to do. The resume is
        recorded in its ``env.json``.
    progress : bool, optional
        Show a progress bar (default: when stderr is a terminal).
    debug : bool, default False
        Let a claim's exception propagate.
    engine : {"local", "ray"}, default "local"
        ``ray`` runs experiments x seeds as Ray tasks (one CPU each unless the experiment declares ``cpus``).
    address : str, optional
        The Ray cluster to join (refused within 30 s when unreachable); a local one is started when None.
    on_start : callable, optional
        Called with the run directory's path once it exists, before any claim runs.

    Returns
    -------
    Outcome
        ``run_dir=None`` when no method has claims yet.

    Raises
    ------
    InputError
        Bad arguments or an unreachable Ray cluster (before any run directory is created); PrerequisiteMissing:
        at PAPER scale, when no selected claim can run here (see :func:`preflight_lines`); RunDirError: an
        unusable run directory or one in use by another process. A KeyboardInterrupt carries ``run_dir``.
    """
    engine = check_choice(engine, "engine", ENGINES)
    if address is not None and engine != "ray":
        raise InputError("--address needs --engine ray")
    if engine == "ray":
        require("ray", extra="ray", what="--engine ray")
    if resume is not None:
        run = RunDir.open(resume)
        cfg = run.config
        if cfg.get("command", "verify") != "verify":
            raise RunDirError(f"{run.path} is not a verify run", "resume a directory that 'icml24 verify' wrote")
        try:
            scale = Scale.parse(cfg["scale"])
            seeds = parse_seeds(cfg["seeds"] if "seeds" in cfg else [int(cfg["seed"])])
            keys = list(cfg["claims"])
        except (KeyError, TypeError, ValueError, InputError):
            raise RunDirError(
                f"{run.path / 'config.json'} lacks scale, seeds or claims", "it was not written by 'icml24 verify'"
            ) from None
        claims = claims_by_key(keys)
        started = _connect_ray(address) if engine == "ray" else False
    else:
        scale = Scale.parse(scale)
        seeds = parse_seeds(seeds if seed is None else seed)
        claims = select_claims(targets)
        if not claims:
            return Outcome(None)
        if scale is Scale.PAPER:
            lacking = preflight(claims, scale)
            if len(lacking) == len({c.experiment.key for c in claims}):
                raise PrerequisiteMissing(
                    f"no selected claim can run at paper scale here ({len(claims)} claims lack a prerequisite)",
                    "see the lines above; 'icml24 list' shows where paper scale can run",
                )
        started = _connect_ray(address) if engine == "ray" else False
        what = "verify-" + ("-".join(sorted({c.slug for c in claims})) if targets else "all")
        config = {
            "command": "verify",
            "targets": list(targets or []),
            "claims": [c.key for c in claims],
            "scale": scale.value,
            "seeds": seeds,
            "seed": seeds[0],
            "engine": engine,
            "argv": sys.argv,
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }
        try:
            run = RunDir.create(out, what, config)
        except BaseException:
            if started:
                _shutdown_ray()
            raise

    try:
        with run.lock():
            if on_start is not None:
                on_start(run.path)
            done = run.results(repair=True) if resume is not None else []
            if resume is not None:
                run.record_resume(engine=engine)
            wanted = {c.key for c in claims}
            records = [r for r in done if r["key"] in wanted]
            units = _units(claims, seeds, done)
            if done:
                log.info("resuming %s: %d runs done, %d experiments to run", run.path, len(done), len(units))
            runner = _run_ray if engine == "ray" else _run_local
            try:
                for rec in runner(units, scale, run, debug=debug, progress=progress):
                    records.append(rec)
            except KeyboardInterrupt as exc:
                exc.run_dir = run.path  # type: ignore[attr-defined]  # the CLI names it in its hint
                raise
            finally:  # what finished is reported even when the run stops early
                write_report(run.path, quiet=True)
            order = {(c.key, s): i for i, (c, s) in enumerate((c, s) for c in claims for s in seeds)}
            records.sort(key=lambda r: order.get((r["key"], int(r.get("seed", 0))), len(order)))
    finally:
        if started:
            _shutdown_ray()
    return Outcome(run, records, skipped=len(done))


def _shutdown_ray() -> None:
    import ray

    ray.shutdown()


def _announce(rec: dict[str, Any]) -> None:
    from tqdm.auto import tqdm

    detail = rec["error"] or rec.get("not_run")
    tqdm.write(
        f"  {rec['key']} seed {rec['seed']}: {verdict_text(rec)} ({rec['seconds']:.1f} s)"
        + (f" - {detail}" if detail else ""),
        file=sys.stderr,
    )


def _judge_unit(unit: _Unit, scale: Scale, run: RunDir, result: dict[str, Any], fresh: bool):
    for i, claim in enumerate(unit.claims):
        rec = judge_claim(claim, scale, unit.seed, result, first=fresh and i == 0)
        run.append(rec)
        _announce(rec)
        yield rec


def _run_local(units: Sequence[_Unit], scale: Scale, run: RunDir, *, debug: bool, progress: bool | None):
    """The in-process engine: one experiment after another, its claims' records appended as it finishes."""
    from tqdm.auto import tqdm

    bar = tqdm(
        total=sum(len(u.claims) for u in units),
        disable=None if progress is None else not progress,
        file=sys.stderr,
        unit="claim",
        dynamic_ncols=True,
    )
    try:
        for unit in units:
            bar.set_description(f"{unit.experiment.key} seed {unit.seed}")
            fresh = unit.result is None
            if fresh:
                with artifacts_to(run.path / artifact_subdir(run, unit.seed)), _ticking(bar):
                    unit.result = run_experiment(unit.experiment, scale, unit.seed, debug=debug)
            for rec in _judge_unit(unit, scale, run, unit.result, fresh):
                bar.update(1)
                yield rec
    finally:
        bar.close()


@contextlib.contextmanager
def _ticking(bar, every: float = 1.0):
    """While a claim runs, show its elapsed seconds on the progress bar (when the bar is shown at all)."""
    if getattr(bar, "disable", True):
        yield
        return
    stop = threading.Event()
    t0 = time.perf_counter()

    def tick() -> None:
        while not stop.wait(every):
            bar.set_postfix_str(f"{time.perf_counter() - t0:.0f} s", refresh=True)

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.set_postfix_str("")


def artifact_subdir(run: RunDir, seed: int) -> str:
    """Where a claim's plots go within the run directory: the run itself for one seed, ``seed<N>/`` for several
    (so that seeds never overwrite each other's files).

    Parameters
    ----------
    run : RunDir
    seed : int

    Returns
    -------
    str
        A path relative to the run directory ("" for the run directory itself).
    """
    seeds = run.config.get("seeds", [seed])
    return "" if len(seeds) <= 1 else f"seed{seed}"


def _ray_task(experiment: Experiment, scale_value: str, seed: int, debug: bool, env: dict[str, str]):
    """One experiment on one seed on a Ray worker: its result and the files it saved (name -> bytes)."""
    import tempfile

    os.environ.update(env)
    with tempfile.TemporaryDirectory(prefix="icml24-ray-") as tmp:
        with artifacts_to(tmp):
            result = run_experiment(experiment, Scale(scale_value), seed, debug=debug)
        files = {p.relative_to(tmp).as_posix(): p.read_bytes() for p in Path(tmp).rglob("*") if p.is_file()}
    return result, files


def _run_ray(units: Sequence[_Unit], scale: Scale, run: RunDir, *, debug: bool, progress: bool | None):
    """The Ray engine: every experiment x seed a task; its claims judged in the order the tasks finish."""
    import ray
    from tqdm.auto import tqdm

    env = {k: v for k, v in os.environ.items() if k.startswith("ICML24_")}
    task = ray.remote(_ray_task)
    cpus = ray.cluster_resources().get("CPU", 0)
    todo = [u for u in units if u.result is None]
    too_big = sorted({u.experiment.key for u in todo if u.experiment.cpus > cpus})
    if too_big:
        raise InputError(
            f"experiments {', '.join(too_big)} need more CPUs than the Ray cluster has ({cpus:g})",
            "join a larger cluster with --address, or use --engine local",
        )
    bar = tqdm(
        total=sum(len(u.claims) for u in units),
        disable=None if progress is None else not progress,
        file=sys.stderr,
        unit="claim",
        dynamic_ncols=True,
    )
    pending: dict[Any, _Unit] = {}
    try:
        for unit in units:  # resumed experiments: judged at once
            if unit.result is not None:
                for rec in _judge_unit(unit, scale, run, unit.result, False):
                    bar.update(1)
                    yield rec
        pending = {
            task.options(num_cpus=u.experiment.cpus, max_retries=0).remote(
                u.experiment, scale.value, u.seed, debug, env
            ): u
            for u in todo
        }
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            unit = pending.pop(ready[0])
            try:
                result, files = ray.get(ready[0])
            except ray.exceptions.RayError as exc:  # a crashed worker or a lost node: this experiment only
                if debug:
                    raise
                first = str(exc).splitlines()[0] if str(exc) else ""
                result = {"experiment": unit.experiment.key, "error": f"{type(exc).__name__}: {first}", "seconds": 0}
                files = {}
            sub = artifact_subdir(run, unit.seed)
            for name, data in files.items():
                atomic_write_bytes(run.path / sub / name, data)
            for rec in _judge_unit(unit, scale, run, result, True):
                bar.update(1)
                yield rec
    finally:
        bar.close()
        for ref in pending:
            ray.cancel(ref, force=True)


# ------------------------------------------------------------------------------------------------ tables
def verdict_text(rec: dict[str, Any]) -> str:
    """How a verdict reads in tables: yes, NO, ERROR, "not run", "does not reproduce (known)", "HOLDS (a
    finding)", or "holds on this seed (known)" for a seed-dependent finding.

    Parameters
    ----------
    rec : dict
        A record of :func:`run_claim`.

    Returns
    -------
    str
    """
    if rec.get("status") == "error":
        return "ERROR"
    if rec.get("status") == "not_run":
        return "not run"
    expected = rec.get("expected", True)
    if rec.get("holds"):
        if expected:
            return "yes"
        return "holds on this seed (known)" if rec.get("seed_dependent") else "HOLDS (declared a finding)"
    return "NO" if expected else "does not reproduce (known)"


def aggregate(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per claim over its seeds, in the order the claims first appear.

    A claim holds when every seed holds; it matches its declaration when no seed raised and the aggregate
    verdict is the declared one (a seed-dependent finding on one seed matches either way). Headline and baseline
    are summarised by their median, min and max.

    Parameters
    ----------
    records : sequence of dict
        Records of :func:`run_claim`.

    Returns
    -------
    list of dict
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(r["key"], []).append(r)
    rows = []
    for key, recs in groups.items():
        recs = sorted(recs, key=lambda r: int(r.get("seed", 0)))
        first = recs[0]
        error = any(r.get("status") == "error" for r in recs)
        not_run = not error and any(r.get("status") == "not_run" for r in recs)
        holds = not error and not not_run and all(r.get("holds") is True for r in recs)
        expected = first.get("expected", True)
        seed_dependent = bool(first.get("seed_dependent", False))
        matches = not_run or ((not error) and matches_declaration(holds, expected, seed_dependent, len(recs)))
        row = {
            "key": key,
            "slug": first["slug"],
            "claim": first["claim"],
            "statement": first.get("statement", ""),
            "seeds": [int(r.get("seed", 0)) for r in recs],
            "verdicts": [verdict_text(r) for r in recs],
            "holds": holds,
            "expected": expected,
            "seed_dependent": seed_dependent,
            "status": "error" if error else "not_run" if not_run else ("holds" if holds else "fails"),
            "not_run": sorted({r["not_run"] for r in recs if r.get("not_run")}),
            "matches": matches,
            "headline": first["headline"],
            "baseline": first["baseline"],
            "paper": first.get("paper", ""),
            "finding": first.get("finding", ""),
            "substitutions": sorted({s for r in recs for s in r.get("substitutions", [])}),
            "seconds": sum(float(r.get("seconds", 0.0)) for r in recs),
        }
        for role in ("headline", "baseline"):
            vals = [r.get(f"{role}_value") for r in recs]
            vals = [float(v) for v in vals if v is not None]
            known = [v for v in vals if not math.isnan(v)]  # NaN is shown as missing, never ordered
            row[f"{role}_values"] = vals
            row[f"{role}_median"] = statistics.median(known) if known else (math.nan if vals else None)
            row[f"{role}_min"] = min(known) if known else None
            row[f"{role}_max"] = max(known) if known else None
            row[f"{role}_n"] = len(known)
        rows.append(row)
    return rows


def fmt(value: Any) -> str:
    """A number as tables show it (4 significant digits), ``-`` for None."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.4g}"
    return str(value)


def _figure(row: dict[str, Any], role: str) -> str:
    name, vals = row[role], row[f"{role}_values"]
    if len(row["seeds"]) <= 1:
        return f"{name}={fmt(vals[0] if vals else None)}"
    text = f"{name}={fmt(row[f'{role}_median'])} [{fmt(row[f'{role}_min'])}, {fmt(row[f'{role}_max'])}]"
    if row[f"{role}_n"] < len(row["seeds"]):
        text += f" (n={row[f'{role}_n']}/{len(row['seeds'])})"
    return text


def _verdict_cell(row: dict[str, Any]) -> str:
    # over several seeds a seed-dependent finding that holds everywhere reads as any finding that holds
    one_seed = row.get("seed_dependent") and len(row["seeds"]) == 1
    agg = verdict_text({**row, "seed_dependent": one_seed})
    if row["substitutions"]:
        agg += " *"
    if len(row["seeds"]) > 1:
        short = {
            "yes": "yes",
            "NO": "NO",
            "ERROR": "ERR",
            "not run": "-",
            "does not reproduce (known)": "no",
            "HOLDS (declared a finding)": "YES",
            "holds on this seed (known)": "yes",
        }
        agg += " (" + " ".join(f"{s}:{short.get(v, v)}" for s, v in zip(row["seeds"], row["verdicts"])) + ")"
    return agg


HEADER = ["method", "claim", "headline", "baseline", "paper", "verdict", "seconds"]


def table_rows(records: Sequence[dict[str, Any]]) -> list[list[str]]:
    """The cells of the results table, one row per claim (seeds aggregated)."""
    return [
        [
            row["slug"],
            row["claim"],
            _figure(row, "headline"),
            _figure(row, "baseline"),
            row["paper"] or "-",
            _verdict_cell(row),
            f"{row['seconds']:.1f}",
        ]
        for row in aggregate(records)
    ]


def _footnotes(records: Sequence[dict[str, Any]]) -> list[str]:
    rows = aggregate(records)
    notes = [f"* {row['key']}: ran on a stand-in: {note}" for row in rows for note in row["substitutions"]]
    notes += [f"- {row['key']}: not run, needs {reason}" for row in rows for reason in row.get("not_run", [])]
    return notes


def text_table(records: Sequence[dict[str, Any]]) -> str:
    """The results as an aligned plain-text table, one row per claim, with substitutions as footnotes.

    Parameters
    ----------
    records : sequence of dict
        Records of :func:`run_claim` (several seeds of a claim are aggregated).

    Returns
    -------
    str
    """
    rows = [HEADER] + table_rows(records)
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines + _footnotes(records))


def markdown_table(records: Sequence[dict[str, Any]]) -> str:
    """The results as a Markdown table, one row per claim, with substitutions as footnotes.

    Parameters
    ----------
    records : sequence of dict

    Returns
    -------
    str
    """
    rows = table_rows(records)
    out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    notes = _footnotes(records)
    return "\n".join(out + ([""] + notes if notes else []))


def summary_line(records: Sequence[dict[str, Any]]) -> str:
    """One line: ``"21/21 claims hold, 2 findings do not reproduce (known); every verdict as declared"``.

    Parameters
    ----------
    records : sequence of dict

    Returns
    -------
    str
    """
    rows = aggregate(records)
    ran = [r for r in rows if r["status"] != "not_run"]
    n_hold = sum(1 for r in ran if r["holds"] and r["expected"])
    n_claims = sum(1 for r in ran if r["expected"])
    n_known = sum(1 for r in ran if not r["expected"] and r["matches"] and not r["holds"])
    n_seed = sum(1 for r in ran if not r["expected"] and r["matches"] and r["holds"])
    n_not_run = len(rows) - len(ran)
    n_stand_in = sum(1 for r in ran if r["substitutions"])
    text = f"{n_hold}/{n_claims} claims hold"
    if any(not r["expected"] for r in ran):
        text += (
            f", {n_known} finding{'s' if n_known != 1 else ''} do{'es' if n_known == 1 else ''} not reproduce (known)"
        )
    if n_seed:
        plural = n_seed != 1
        text += f", {n_seed} seed-dependent finding{'s' if plural else ''} hold{'' if plural else 's'} on this seed"
    if n_stand_in:
        text += f", {n_stand_in} on a declared stand-in (*)"
    if n_not_run:
        text += f", {n_not_run} not run (a prerequisite is missing)"
    diff = [r["key"] for r in rows if not r["matches"]]
    text += "; every verdict as declared" if not diff else f"; differs from its declaration: {', '.join(diff)}"
    return text


def jsonable(obj: Any) -> Any:
    """Strict JSON: non-finite floats as the strings ``"Infinity"``, ``"-Infinity"`` and ``"NaN"``.

    The same encoding as ``results.jsonl`` (:func:`icml24.runs.encode_nonfinite`); read back with
    :func:`icml24.runs.decode_nonfinite`.

    Parameters
    ----------
    obj : object
        Nested dicts, lists and tuples are walked.

    Returns
    -------
    object
    """
    return encode_nonfinite(obj)


# ------------------------------------------------------------------------------------------------ report
def write_report(path: str | os.PathLike, *, quiet: bool = False) -> Path:
    """Write ``report.md`` of a run directory: configuration, environment, the table, statements, every PNG.

    Parameters
    ----------
    path : path
        A run directory written by :func:`verify`.
    quiet : bool, default False
        Do not log the path written.

    Returns
    -------
    pathlib.Path
        The report's path.
    """
    run = RunDir.open(path)
    cfg, env = run.config, run.env()
    if cfg.get("command") != "verify" or not isinstance(cfg.get("claims"), list):
        raise RunDirError(
            f"{run.path} is not a verify run (its config.json was not written by 'icml24 verify')",
            "give a directory that 'icml24 verify' wrote",
        )
    seeds = cfg.get("seeds", [cfg.get("seed")])
    order = {(k, s): i for i, (k, s) in enumerate((k, s) for k in cfg.get("claims", []) for s in seeds)}
    records = sorted(run.results(), key=lambda r: order.get((r["key"], r.get("seed", seeds[0])), len(order)))
    lines = [f"# icml24 run `{run.path.name}`", ""]
    lines.append(
        f"- command: `{' '.join(['icml24', cfg.get('command', '?')] + list(cfg.get('targets', [])))}`"
        f", scale `{cfg.get('scale')}`, seeds `{','.join(str(s) for s in seeds)}`"
        f", engine `{cfg.get('engine', 'local')}`, started {cfg.get('started', '?')}"
    )
    pk = env.get("packages", {})
    lines.append(
        f"- icml24 {pk.get('icml24', '?')}, torch {pk.get('torch', '?')}, Python {env.get('python', '?')}"
        f", git {env.get('git_commit') or 'unknown'}"
    )
    lines.append(f"- machine: {env.get('cpu', '?')}, {env.get('cpu_count', '?')} CPUs")
    if env.get("resumes"):
        lines.append(f"- resumed {len(env['resumes'])} time(s), last at {env['resumes'][-1].get('time', '?')}")
    planned = cfg.get("claims", [])
    lines.append(f"- {len(aggregate(records))} of {len(planned)} claims finished: {summary_line(records)}")
    lines += ["", "## Results", ""]
    lines.append(markdown_table(records) if records else "_No claim has finished yet._")
    if records:
        lines += ["", "## Claims", ""]
        for row in aggregate(records):
            lines.append(f"- **{row['key']}**: {row['statement']}")
            if row["paper"]:
                lines.append(f"  - the paper: {row['paper']}")
            if not row["expected"]:
                lines.append(f"  - declared a finding: {row['finding']}")
            for r in (r for r in records if r["key"] == row["key"]):
                metrics = ", ".join(f"{k}={fmt(v)}" for k, v in sorted(r.get("metrics", {}).items()))
                lines.append(f"  - seed {r.get('seed', 0)}, measured: {metrics or 'nothing'}")
                if r.get("error"):
                    lines.append(f"  - seed {r.get('seed', 0)}, error: {r['error']}")
    pngs = run.pngs()
    if pngs:
        lines += ["", "## Plots", ""]
        for p in pngs:
            rel = p.relative_to(run.path).as_posix()
            lines += [f"### {rel}", "", f"![{p.stem}]({rel})", ""]
    target = run.path / REPORT
    atomic_write_text(target, "\n".join(lines).rstrip() + "\n")
    if not quiet:
        log.info("wrote %s", target)
    return target


# --------------------------------------------------------------------------------------------------- list
def latest_results(runs_root: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The most recent verdict of each claim over all run directories under ``runs_root``.

    A run's seeds of a claim are aggregated (:func:`aggregate`); the last run directory (by name, a UTC time)
    that ran the claim wins.

    Parameters
    ----------
    runs_root : path

    Returns
    -------
    dict of str to dict
    """
    latest: dict[str, dict[str, Any]] = {}
    root = Path(runs_root)
    if not root.is_dir():
        return latest
    for d in sorted(p for p in root.iterdir() if (p / RESULTS).is_file()):
        try:
            for row in aggregate(RunDir(d).results()):  # a claim's seeds of one run, judged together
                latest[row["key"]] = row
        except RunDirError as exc:
            log.warning("skipping %s: %s", d, exc.one_line())
    return latest


def method_rows(runs_root: str | os.PathLike = "runs") -> list[dict[str, Any]]:
    """One row per method for ``icml24 list``, read without importing any method (so without torch).

    Parameters
    ----------
    runs_root : path, default "runs"
        Where earlier run directories are, for the last verdicts.

    Returns
    -------
    list of dict
        ``slug, status, claims, findings, as_declared, held, findings_as_declared, ran, not_run, paper_scale,
        paper_scale_lacks, arxiv, code, title, authors`` (the counts of the last verdicts over the claims that
        ran; ``paper_scale``: whether every claim's paper-scale prerequisites are met here).
    """
    latest = latest_results(runs_root)
    rows = []
    for slug in registry.all_slugs():
        m: Method | None = registry.describe(slug)
        p = registry.PAPERS.get(slug)
        title = m.title if m else p.title if p else slug
        arxiv = m.arxiv if m else p.arxiv if p else None
        code = m.code if m else p.code if p else None
        claims = m.claims if m else ()
        ran = [latest[c.key] for c in claims if c.key in latest and latest[c.key].get("status") != "not_run"]
        lacking = preflight(claims, Scale.PAPER, light=True) if claims else {}
        rows.append(
            {
                "slug": slug,
                "status": "implemented" if m else "planned",
                "claims": len(claims),
                "findings": sum(1 for c in claims if not c.expected),
                # of the claims that ran last: verdicts as declared, then holds and findings apart
                "as_declared": (sum(1 for r in ran if r.get("matches")) if ran else None),
                "held": sum(1 for r in ran if r.get("expected", True) and r.get("holds")),
                "findings_as_declared": sum(1 for r in ran if not r.get("expected", True) and r.get("matches")),
                "ran": len(ran),
                "not_run": sum(1 for c in claims if c.key in latest and latest[c.key].get("status") == "not_run"),
                "paper_scale": not lacking,
                "paper_scale_lacks": sorted({r for reasons in lacking.values() for r in reasons}),
                "arxiv": arxiv,
                "code": code,
                "title": title,
                "authors": list(m.authors if m and m.authors else (p.authors if p else ())),
            }
        )
    return rows


__all__ = [
    "select_claims",
    "verify",
    "run_claim",
    "run_experiment",
    "judge_claim",
    "preflight",
    "preflight_lines",
    "Outcome",
    "aggregate",
    "parse_seeds",
    "verdict_text",
    "text_table",
    "markdown_table",
    "summary_line",
    "write_report",
    "method_rows",
    "latest_results",
    "jsonable",
]
