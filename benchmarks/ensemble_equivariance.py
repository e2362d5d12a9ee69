"""Benchmark: training M ensemble members together with torch.func (vmap over stacked parameters) vs a
Python loop of M trainings (same initialisations, loss and steps), at M = 16 and 64; and the inference cost of
the ensemble mean vs test-time orbit averaging of one member (|G| forward passes), one process.

    python benchmarks/ensemble_equivariance.py [--members 16 64] [--width 64] [--steps 20] [--repeats 3]
        [--threads 1] [--out runs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from pathlib import Path

import numpy as np
import torch

from icml24.ensemble_equivariance import NTKMLP, OrbitAveraged, augment, train_ensemble, train_members_loop
from icml24.runs import atomic_write_json, environment


def _median_time(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--n", type=int, default=100, help="digits before C4 augmentation")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    from icml24.data.tabular import digits

    sp = digits(flatten=False, seed=args.seed)
    x, y = augment(sp.x_train[: args.n], sp.y_train[: args.n], "c4")
    q = sp.x_test[:200]

    def factory():
        return NTKMLP(64, args.width, 10, 2)

    print(f"threads: {args.threads}  repeats: {args.repeats}  width: {args.width}  steps: {args.steps}  N: {len(x)}")
    print(
        f"{'M':>4} {'vmap s':>8} {'loop s':>8} {'ratio':>7} {'max |diff|':>11} {'mean s':>8} {'TTA s':>8} {'ratio':>7}"
    )
    rows = []
    for m in args.members:
        kw = dict(members=m, steps=args.steps, lr=1.0, seed=args.seed)
        t_vmap, ens = _median_time(lambda kw=kw: train_ensemble(factory, x, y, **kw), args.repeats)
        t_loop, loop = _median_time(lambda kw=kw: train_members_loop(factory, x, y, **kw), max(1, args.repeats // 2))
        with torch.no_grad():
            ref = torch.stack([net(q) for net in loop])
        diff = float((ens.member_outputs(q) - ref).abs().max())
        tta = OrbitAveraged(ens.subset([0]), "c4")
        t_mean, _ = _median_time(lambda ens=ens: ens(q), args.repeats)
        t_tta, _ = _median_time(lambda tta=tta: tta(q), args.repeats)
        row = {
            "members": m,
            "vmap_s": t_vmap,
            "loop_s": t_loop,
            "train_ratio": t_loop / t_vmap,
            "members_per_s_vmap": m / t_vmap,
            "members_per_s_loop": m / t_loop,
            "max_abs_diff": diff,
            "ensemble_infer_s": t_mean,
            "tta_infer_s": t_tta,
            "infer_ratio": t_mean / t_tta,
        }
        rows.append(row)
        print(
            f"{m:>4} {t_vmap:>8.3f} {t_loop:>8.3f} {row['train_ratio']:>7.2f} {diff:>11.2e} "
            f"{t_mean:>8.4f} {t_tta:>8.4f} {row['infer_ratio']:>7.2f}"
        )
    out = Path(args.out) / (
        dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-bench-ensemble_equivariance"
    )
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "results.json", {"config": vars(args), "env": environment(), "rows": rows})
    print(f"results: {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
