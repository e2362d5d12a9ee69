"""What a run shows: verdicts over seeds, the text and Markdown tables, report.md, and `icml24 list`'s rows."""

from __future__ import annotations

import logging
import math
import os
import statistics
from pathlib import Path
from typing import Any, Sequence

from .. import registry
from ..claims import Method, Scale, matches_declaration
from ..errors import RunDirError
from ..runs import (
    REPORT,
    RESULTS,
    RunDir,
    atomic_write_text,
    encode_nonfinite,
)

log = logging.getLogger(__name__)
from .select import preflight


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
    "verdict_text",
    "aggregate",
    "text_table",
    "markdown_table",
    "summary_line",
    "jsonable",
    "write_report",
    "latest_results",
    "method_rows",
]
