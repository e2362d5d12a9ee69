"""The engines that run experiments x seeds: in this process, or as Ray tasks (one task per experiment and seed)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..claims import Claim, Experiment, Scale
from ..errors import InputError
from ..extras import require
from ..runs import (
    RunDir,
    artifacts_to,
    atomic_write_bytes,
)

log = logging.getLogger(__name__)
from .judge import judge_claim, result_of, run_experiment
from .report import verdict_text

ENGINES = ("local", "ray")


def connect_ray(address: str | None, timeout: float = 30.0) -> bool:
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


def plan_units(claims: Sequence[Claim], seeds: Sequence[int], done: Sequence[dict[str, Any]]) -> list[_Unit]:
    done_pairs = {(r["key"], int(r.get("seed", 0))) for r in done}
    finished = {}
    for r in done:
        res = result_of(r)
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


def shutdown_ray() -> None:
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


def run_local(units: Sequence[_Unit], scale: Scale, run: RunDir, *, debug: bool, progress: bool | None):
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


def run_ray(units: Sequence[_Unit], scale: Scale, run: RunDir, *, debug: bool, progress: bool | None):
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


__all__ = ["ENGINES", "artifact_subdir"]
