"""Running claims: selection, execution into a run directory, resume, tables and reports.

The command line (``icml24 verify`` / ``icml24 report``) is a thin layer over :func:`verify` and
:func:`write_report`, which can also be called from Python.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from . import registry
from .claims import Claim, Method, Scale, validate_metrics
from .errors import ICML24Error, InputError, RunDirError
from .runs import REPORT, RESULTS, RunDir, artifacts_to, atomic_write_text

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------ select
def select_claims(targets: Sequence[str] | None) -> list[Claim]:
    """Claims named by ``targets`` (slugs or ``slug/claim`` keys); all implemented methods' when empty."""
    if not targets:
        out: list[Claim] = []
        for slug in registry.all_slugs():
            m = registry.get(slug)
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
    """Look claims up by key (for ``--resume``); a key that no longer exists is an error."""
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
    run_dir: RunDir | None
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0

    @property
    def all_hold(self) -> bool:
        return all(r.get("holds") is True for r in self.records)

    @property
    def exit_code(self) -> int:
        return 0 if self.all_hold else 1


def run_claim(claim: Claim, scale: Scale, seed: int, *, debug: bool = False) -> dict[str, Any]:
    """Run one claim and return its result record (never raises unless ``debug``)."""
    t0 = time.perf_counter()
    metrics: dict[str, float] = {}
    error = None
    holds = False
    try:
        metrics = validate_metrics(claim, claim.run(scale, seed))
        holds = bool(claim.holds(metrics))
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # a failing claim must not take the others down
        if debug:
            raise
        error = exc.one_line() if isinstance(exc, ICML24Error) else f"{type(exc).__name__}: {exc}"
        log.debug("claim %s raised\n%s", claim.key, traceback.format_exc())
    seconds = time.perf_counter() - t0
    return {
        "key": claim.key,
        "slug": claim.slug,
        "claim": claim.name,
        "statement": claim.statement,
        "scale": scale.value,
        "seed": seed,
        "metrics": metrics,
        "headline": claim.headline,
        "headline_value": metrics.get(claim.headline),
        "baseline": claim.baseline,
        "baseline_value": metrics.get(claim.baseline),
        "holds": holds,
        "status": "error" if error else ("holds" if holds else "fails"),
        "error": error,
        "seconds": round(seconds, 3),
        "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def verify(targets: Sequence[str] | None = None, *, scale: Scale | str = Scale.QUICK, seed: int = 0,
           out: str | os.PathLike = "runs", resume: str | os.PathLike | None = None, progress: bool | None = None,
           debug: bool = False) -> Outcome:
    """Run claims into a run directory and return their records (earlier ones included on resume).

    With ``resume``, the run directory's own configuration is used and the claims already in its
    ``results.jsonl`` are skipped. Returns an :class:`Outcome` with ``run_dir=None`` when there is nothing
    to run because no method has claims yet.
    """
    from tqdm.auto import tqdm

    if resume is not None:
        run = RunDir.open(resume)
        cfg = run.config
        try:
            scale, seed, keys = Scale.parse(cfg["scale"]), int(cfg["seed"]), list(cfg["claims"])
        except (KeyError, TypeError, ValueError):
            raise RunDirError(f"{run.path / 'config.json'} lacks scale, seed or claims",
                              "it was not written by 'icml24 verify'") from None
        claims = claims_by_key(keys)
        done = run.results(repair=True)
    else:
        scale = Scale.parse(scale)
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InputError(f"--seed must be a non-negative integer, got {seed!r}")
        claims = select_claims(targets)
        if not claims:
            return Outcome(None)
        what = "verify-" + ("-".join(sorted({c.slug for c in claims})) if targets else "all")
        config = {
            "command": "verify",
            "targets": list(targets or []),
            "claims": [c.key for c in claims],
            "scale": scale.value,
            "seed": seed,
            "argv": sys.argv,
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        }
        run = RunDir.create(out, what, config)
        done = []

    done_keys = {r["key"] for r in done}
    records = [r for r in done if r["key"] in {c.key for c in claims}]
    todo = [c for c in claims if c.key not in done_keys]
    if done_keys:
        log.info("resuming %s: %d claims done, %d to run", run.path, len(done_keys), len(todo))
    bar = tqdm(todo, disable=None if progress is None else not progress, file=sys.stderr, unit="claim",
               dynamic_ncols=True)
    for claim in bar:
        bar.set_description(claim.key)
        with artifacts_to(run.path):
            rec = run_claim(claim, scale, seed, debug=debug)
        run.append(rec)
        records.append(rec)
        tqdm.write(f"  {claim.key}: {rec['status']} ({rec['seconds']:.1f} s)"
                   + (f" - {rec['error']}" if rec["error"] else ""), file=sys.stderr)
    bar.close()
    # keep the config's order, earlier results first where they came from
    order = {c.key: i for i, c in enumerate(claims)}
    records.sort(key=lambda r: order.get(r["key"], len(order)))
    write_report(run.path, quiet=True)
    return Outcome(run, records, skipped=len(done_keys))


# ------------------------------------------------------------------------------------------------ tables
def fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.4g}"
    return str(value)


def table_rows(records: Sequence[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for r in records:
        rows.append([
            r["slug"], r["claim"],
            f"{r['headline']}={fmt(r.get('headline_value'))}",
            f"{r['baseline']}={fmt(r.get('baseline_value'))}",
            {"holds": "yes", "fails": "NO", "error": "ERROR"}.get(r.get("status"), "?"),
            f"{r.get('seconds', 0):.1f}",
        ])
    return rows


HEADER = ["method", "claim", "headline", "baseline", "holds", "seconds"]


def text_table(records: Sequence[dict[str, Any]]) -> str:
    rows = [HEADER] + table_rows(records)
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_table(records: Sequence[dict[str, Any]]) -> str:
    rows = table_rows(records)
    out = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(out)


def jsonable(obj: Any) -> Any:
    """Replace non-finite floats by None, for strict JSON consumers."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


# ------------------------------------------------------------------------------------------------ report
def write_report(path: str | os.PathLike, *, quiet: bool = False) -> Path:
    """Write ``report.md`` of a run directory: configuration, environment, the table, statements, every PNG."""
    run = RunDir.open(path)
    cfg, env = run.config, run.env()
    records = run.results()
    lines = [f"# icml24 run `{run.path.name}`", ""]
    lines.append(f"- command: `{' '.join(['icml24', cfg.get('command', '?')] + list(cfg.get('targets', [])))}`"
                 f", scale `{cfg.get('scale')}`, seed `{cfg.get('seed')}`, started {cfg.get('started', '?')}")
    pk = env.get("packages", {})
    lines.append(f"- icml24 {pk.get('icml24', '?')}, torch {pk.get('torch', '?')}, Python {env.get('python', '?')}"
                 f", git {env.get('git_commit') or 'unknown'}")
    lines.append(f"- machine: {env.get('cpu', '?')}, {env.get('cpu_count', '?')} CPUs")
    planned = cfg.get("claims", [])
    n_hold = sum(1 for r in records if r.get("holds") is True)
    lines.append(f"- {len(records)} of {len(planned)} claims finished, {n_hold} hold")
    lines += ["", "## Results", ""]
    lines.append(markdown_table(records) if records else "_No claim has finished yet._")
    if records:
        lines += ["", "## Claims", ""]
        for r in records:
            lines.append(f"- **{r['key']}**: {r.get('statement', '')}")
            metrics = ", ".join(f"{k}={fmt(v)}" for k, v in sorted(r.get("metrics", {}).items()))
            lines.append(f"  - measured: {metrics or 'nothing'}")
            if r.get("error"):
                lines.append(f"  - error: {r['error']}")
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
    """The most recent record of each claim key over all run directories under ``runs_root``."""
    latest: dict[str, dict[str, Any]] = {}
    root = Path(runs_root)
    if not root.is_dir():
        return latest
    for d in sorted(p for p in root.iterdir() if (p / RESULTS).is_file()):
        try:
            for rec in RunDir(d).results():
                latest[rec["key"]] = rec
        except RunDirError as exc:
            log.warning("skipping %s: %s", d, exc.one_line())
    return latest


def method_rows(runs_root: str | os.PathLike = "runs") -> list[dict[str, Any]]:
    latest = latest_results(runs_root)
    rows = []
    for slug in registry.all_slugs():
        m: Method | None = registry.get(slug)
        p = registry.PAPERS.get(slug)
        title = m.title if m else p.title if p else slug
        arxiv = m.arxiv if m else p.arxiv if p else None
        code = m.code if m else p.code if p else None
        n = len(m.claims) if m else 0
        ran = [latest[c.key] for c in (m.claims if m else ()) if c.key in latest]
        rows.append({
            "slug": slug, "status": "implemented" if m else "planned", "claims": n,
            "held": (sum(1 for r in ran if r.get("holds") is True) if ran else None), "ran": len(ran),
            "arxiv": arxiv, "code": code, "title": title,
            "authors": list(m.authors if m and m.authors else (p.authors if p else ())),
        })
    return rows


__all__ = ["select_claims", "verify", "run_claim", "Outcome", "text_table", "markdown_table", "write_report",
           "method_rows", "latest_results", "jsonable"]
