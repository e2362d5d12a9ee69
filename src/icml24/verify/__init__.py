"""Running claims: selection, execution into a run directory, resume, tables and reports.

The command line (``icml24 verify`` / ``icml24 report``) is a thin layer over :func:`verify` and
:func:`write_report`, which can also be called from Python. The package's modules, one job each:

- :mod:`.select`: which claims and seeds a run covers, and what paper scale lacks here;
- :mod:`.judge`: one experiment on one seed, and the records of the claims judged on it;
- :mod:`.engines`: the local and the Ray engine that run experiments x seeds into a run directory;
- :mod:`.report`: verdicts over seeds, tables, ``report.md`` and ``icml24 list``'s rows;
- this module: :func:`verify`, which ties them together, and its :class:`Outcome`.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..claims import Scale
from ..errors import InputError, PrerequisiteMissing, RunDirError
from ..extras import require
from ..runs import RunDir
from ..validation import check_choice

log = logging.getLogger(__name__)
from .engines import ENGINES, artifact_subdir, connect_ray, plan_units, run_local, run_ray, shutdown_ray
from .judge import judge_claim, run_claim, run_experiment
from .report import (
    aggregate,
    jsonable,
    latest_results,
    markdown_table,
    method_rows,
    summary_line,
    text_table,
    verdict_text,
    write_report,
)
from .select import claims_by_key, parse_seeds, preflight, preflight_lines, select_claims


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
        started = connect_ray(address) if engine == "ray" else False
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
        started = connect_ray(address) if engine == "ray" else False
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
                shutdown_ray()
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
            units = plan_units(claims, seeds, done)
            if done:
                log.info("resuming %s: %d runs done, %d experiments to run", run.path, len(done), len(units))
            runner = run_ray if engine == "ray" else run_local
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
            shutdown_ray()
    return Outcome(run, records, skipped=len(done))


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
    "claims_by_key",
    "artifact_subdir",
    "ENGINES",
]
