"""Benchmark: steps, gradient evaluations and wall time to reach the tolerance, MPD vs PGD vs EM, on the official
toy hierarchical model (|theta - theta_hat| < 1e-2 |theta_hat|) and on probabilistic PCA (0.1 nats per datum from
the closed-form MLE), same data, one process; ratios against PGD, and the heavy-ball reference beside the counts.

    python benchmarks/momentum_particles.py [--replicates 5] [--particles 20] [--steps 2000] [--ppca-evals 1000]
                                            [--threads 1] [--seed 0] [--out runs]
"""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

import numpy as np

from icml24.momentum_particles.experiments import (
    PPCA_TOL,
    heavy_ball_reference,
    ppca_runs,
    steps_to_tolerance,
    toy_runs,
)
from icml24.runs import atomic_write_json, environment


def _toy_rows(args) -> list[dict]:
    runs = toy_runs(replicates=args.replicates, n_particles=args.particles, steps=args.steps, seed=args.seed)
    mle, rows = runs["mle"], []
    for name, tr in runs["traces"].items():
        hit = steps_to_tolerance(tr, mle, 1e-2 * np.abs(mle))
        step = float(np.median(hit))
        evals = float(np.median(runs["evals"][name][np.minimum(hit, tr.shape[0] - 1)]))
        secs = runs["seconds"].get(name, float("nan"))
        rows.append(
            {
                "model": "toy",
                "method": name,
                "steps_to_tol": step,
                "evals_to_tol": evals,
                "censored": bool(np.any(hit >= tr.shape[0])),
                "seconds_to_tol": secs * min(step, args.steps) / args.steps,
            }
        )
    return rows


def _ppca_rows(args) -> list[dict]:
    runs = ppca_runs(
        n_data=500,
        n_particles=args.ppca_particles,
        evals=args.ppca_evals,
        seed=args.seed,
        replicates=args.replicates,
    )
    rows = []
    for name, (ev, gap) in runs["gaps"].items():
        inside = gap < PPCA_TOL  # (records, replicates)
        hit = np.where(inside.any(0), ev[np.argmax(inside, axis=0)], args.ppca_evals + 1)  # censored: a lower bound
        evals = float(np.median(hit))
        steps = evals / 2 if name == "mpd" else evals
        secs = runs["seconds"][name] * min(evals, args.ppca_evals) / args.ppca_evals
        rows.append(
            {
                "model": "ppca",
                "method": name,
                "steps_to_tol": steps,
                "evals_to_tol": evals,
                "censored": bool(np.any(hit > args.ppca_evals)),
                "seconds_to_tol": secs,
            }
        )
    em_gaps = runs["em_gaps"]
    inside = em_gaps < PPCA_TOL
    em_hit = np.where(inside.any(0), np.argmax(inside, axis=0), len(em_gaps))
    em = float(np.median(em_hit))
    rows.append(
        {
            "model": "ppca",
            "method": "em",
            "steps_to_tol": em,
            "evals_to_tol": em,
            "censored": bool(np.any(em_hit >= len(em_gaps))),
            "seconds_to_tol": runs["seconds"]["em"] * em / (len(em_gaps) - 1),
        }
    )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--replicates",
        type=int,
        default=5,
        help="independent toy and PPCA data sets (run side by side; medians reported)",
    )
    ap.add_argument("--particles", type=int, default=20, help="toy particles (the official script: 100)")
    ap.add_argument("--steps", type=int, default=2000, help="toy steps (the official script: 2000)")
    ap.add_argument("--ppca-evals", type=int, default=1000)
    ap.add_argument("--ppca-particles", type=int, default=5)
    ap.add_argument("--models", nargs="+", default=["toy", "ppca"], choices=["toy", "ppca"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    print(
        f"threads: {args.threads}  toy: {args.replicates} data sets x {args.particles} particles x {args.steps} steps"
        f"  ppca: {args.replicates} data sets x {args.ppca_evals} evaluations"
    )
    rows = (_toy_rows(args) if "toy" in args.models else []) + (_ppca_rows(args) if "ppca" in args.models else [])
    for model in ("toy", "ppca"):
        ref = next((r for r in rows if r["model"] == model and r["method"] == "pgd"), None)
        for r in rows:
            if r["model"] == model and ref is not None:
                r["ratio_steps_vs_pgd"] = ref["steps_to_tol"] / max(r["steps_to_tol"], 1.0)
                r["ratio_evals_vs_pgd"] = ref["evals_to_tol"] / max(r["evals_to_tol"], 1.0)
                r["ratio_time_vs_pgd"] = ref["seconds_to_tol"] / max(r["seconds_to_tol"], 1e-9)
    print(
        f"{'model':<6} {'method':<12} {'steps':>8} {'evals':>8} {'s to tol':>9} {'PGD/x steps':>12} "
        f"{'PGD/x evals':>12} {'PGD/x time':>11}"
    )
    for r in rows:
        mark = "+" if r["censored"] else " "
        print(
            f"{r['model']:<6} {r['method']:<12} {r['steps_to_tol']:>7.0f}{mark} {r['evals_to_tol']:>8.0f} "
            f"{r['seconds_to_tol']:>9.3f} {r.get('ratio_steps_vs_pgd', float('nan')):>12.2f} "
            f"{r.get('ratio_evals_vs_pgd', float('nan')):>12.2f} {r.get('ratio_time_vs_pgd', float('nan')):>11.2f}"
        )
    ref = heavy_ball_reference()
    print(
        f"toy reference (mean dynamics, kappa = {ref['kappa']:.2f}): gradient flow at the official step needs "
        f"log(1/eps)/(lambda_min h) = {ref['gd_steps']:.0f} steps; kappa log(1/eps) = {ref['kappa_log']:.1f}, "
        f"sqrt(kappa) log(1/eps) = {ref['sqrt_kappa_log']:.1f} (heavy ball's order, constants omitted)"
    )
    print("+ censored: not reached within the budget")
    out = Path(args.out) / f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}-bench-momentum_particles"
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "results.json", {"args": vars(args), "env": environment(), "rows": rows, "reference": ref})
    print(f"saved: {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
