"""Benchmark: feature alignment F of all N training samples by the kernel formula (one N x N factorisation)
vs N separate leave-one-out solves (the obvious way), same kernel, same inputs, one process.

    python benchmarks/spurious_memorization.py [--ns 200 1000] [--d 400] [--repeats 3] [--threads 1] [--out runs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from pathlib import Path

import numpy as np

from icml24.data.spurious import spurious_gaussian
from icml24.runs import atomic_write_json, environment
from icml24.spurious_memorization import NTKFeatures, feature_alignment, feature_alignment_refits


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[200, 1000])
    ap.add_argument("--d", type=int, default=400)
    ap.add_argument("--width", type=int, default=50, help="NTK width k (kernel cost is not what is timed)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--refit-repeats", type=int, default=1, help="repeats of the N-refit peer (slow)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs")
    args = ap.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
    except ImportError:
        pass
    print(f"threads: {args.threads}  repeats: {args.repeats} (refits: {args.refit_repeats})  d: {args.d}")
    rows = []
    print(f"{'N':>6} {'kernel formula s':>17} {'N refits s':>11} {'ratio':>8} {'max |diff|':>11}")
    for n in args.ns:
        data = spurious_gaussian(n, args.d, n_test=1, seed=args.seed)
        fm = NTKFeatures(args.d, args.width, "phi2", seed=args.seed)
        fast, slow = [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            f_fast = feature_alignment(fm, data.z_train, data.z_spurious)
            fast.append(time.perf_counter() - t)
        for _ in range(args.refit_repeats):
            t = time.perf_counter()
            f_slow = feature_alignment_refits(fm, data.z_train, data.z_spurious)
            slow.append(time.perf_counter() - t)
        row = {
            "n": n,
            "kernel_formula_s": float(np.median(fast)),
            "refits_s": float(np.median(slow)),
            "max_abs_diff": float(np.max(np.abs(f_fast - f_slow))),
        }
        row["ratio"] = row["refits_s"] / row["kernel_formula_s"]
        rows.append(row)
        print(
            f"{n:>6} {row['kernel_formula_s']:>17.4f} {row['refits_s']:>11.3f} {row['ratio']:>8.1f} "
            f"{row['max_abs_diff']:>11.2e}"
        )
    out = Path(args.out) / f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}-bench-spurious_memorization"
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "results.json", {"args": vars(args), "env": environment(), "rows": rows})
    print(f"saved: {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
