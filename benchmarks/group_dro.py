"""Benchmark: IFO (per-sample gradient evaluations) to reach duality gaps 1e-2 and 1e-3, for ALEG and every
baseline, on the synthetic multi-group problem of the claims for several numbers of groups m.

Every method runs on the same problems in this one process, with its step factor tuned by the same
procedure on the same grid (icml24.group_dro.experiments.tune), or all at one fixed factor (--gamma). Prints,
per m and method, the IFO to each target (in passes over the data, N = m n), the ratio to ALEG's IFO (> 1:
ALEG needs fewer), the step factor and wall time; then the one-level / ALEG ratio against sqrt(m) and
against what the problem's own theory constants predict. Saves results.json and a PNG under
runs/<UTC time>-bench-group_dro/.

    python benchmarks/group_dro.py                       # m in 4, 8, 16, 32; one seed; ~5-8 minutes
    python benchmarks/group_dro.py --ms 4,16 --seeds 0,1 --targets 1e-2
    python benchmarks/group_dro.py --ms 16 --n 20-200                  # imbalanced groups
    python benchmarks/group_dro.py --radius 1 --methods aleg,one_level_vr   # where theory predicts sqrt(m)
    python benchmarks/group_dro.py --radius 1 --methods aleg,one_level_vr --gamma 0.99 --targets 1e-2
                                                     # the analysis' own steps, untuned

Beside the measured ratios it prints what the two estimators' measured second moments (near ALEG's solution)
predict for the one-level / ALEG ratio, in the paper's l_inf norm on q and in the entropy's local norm.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="BLAS/torch threads (default 1)")
    ap.add_argument("--ms", default="4,8,16,32", help="numbers of groups")
    ap.add_argument(
        "--n",
        default="100",
        help="samples per group, or LOW-HIGH for group sizes drawn uniformly in that range (an "
        "imbalanced arm, e.g. 20-200)",
    )
    ap.add_argument("--d", type=int, default=20, help="dimension")
    ap.add_argument(
        "--radius",
        type=float,
        default=5.0,
        help="radius of the ball W (default 5, as in the claims; a small radius makes the q-block, where "
        "group sampling gains sqrt(m), dominate the theory constants)",
    )
    ap.add_argument("--seeds", default="0", help="data seeds (sampling seed = data seed + 1); medians are reported")
    ap.add_argument("--targets", default="1e-2,1e-3", help="duality-gap targets")
    ap.add_argument("--cap", type=int, default=1000, help="IFO budget per run, in passes over the data")
    ap.add_argument("--pilot", type=int, default=25, help="pilot budget of the step tuning, in passes")
    ap.add_argument(
        "--gamma",
        type=float,
        default=None,
        help="run every method at this fixed step factor instead of tuning it (0.99: the analysis' own steps)",
    )
    ap.add_argument("--methods", default="aleg,one_level_vr,smd,mirror_prox,online_group_dro")
    ap.add_argument("--out", default="runs", help="folder for the run directory")
    args = ap.parse_args(argv)
    from icml24.errors import InputError

    try:
        return _run(args)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _run(args) -> int:
    from icml24.group_dro import synthetic_problem
    from icml24.group_dro.mirror import Geometry
    from icml24.group_dro.moments import moments_near_aleg
    from icml24.group_dro.tuning import GDRO_METHODS, measure, tune
    from icml24.runs import atomic_write_bytes, atomic_write_json, environment
    from icml24.threads import limit_threads

    ms = [int(v) for v in args.ms.split(",")]
    try:
        n = tuple(int(v) for v in args.n.split("-")) if "-" in args.n else int(args.n)
    except ValueError:
        print(f"error: --n must be a number of samples per group or LOW-HIGH, got {args.n!r}", file=sys.stderr)
        return 2
    seeds = [int(v) for v in args.seeds.split(",")]
    targets = tuple(sorted((float(v) for v in args.targets.split(",")), reverse=True))
    methods = [v for v in args.methods.split(",") if v]
    unknown = [v for v in methods if v not in GDRO_METHODS]
    if unknown or "aleg" not in methods:
        print(f"error: methods must include aleg and be among {', '.join(GDRO_METHODS)}", file=sys.stderr)
        return 2
    print(
        f"group_dro benchmark: threads={args.threads}, m={ms}, n={args.n}, d={args.d}, seeds={seeds}, "
        f"targets={list(targets)}, cap={args.cap} passes, pilot={args.pilot} passes",
        flush=True,
    )

    results: dict = {"config": vars(args), "rows": [], "curves": {}}
    with limit_threads(args.threads):
        for m in ms:
            for seed in seeds:
                p = synthetic_problem(m, n, args.d, radius=args.radius, seed=seed)
                N = p.n_total
                theory = Geometry(p).one_level_ratio()
                for meth in methods:
                    t0 = time.perf_counter()
                    if args.gamma is None:
                        best = tune(
                            p, meth, targets=targets, max_ifo=args.cap * N, pilot=args.pilot * N, seed=seed + 1
                        ).best
                    else:
                        best = measure(p, meth, args.gamma, targets=targets, max_ifo=args.cap * N, seed=seed + 1)
                    row = {
                        "m": m,
                        "seed": seed,
                        "method": meth,
                        "N": N,
                        "gamma": best.gamma,
                        "seconds": round(time.perf_counter() - t0, 2),
                        "theory_ratio_one_level": theory,
                        "final_gap": best.final_gap,
                    }
                    for t in targets:
                        row[f"ifo@{t:g}"] = best.hits[t]
                    if meth == "aleg":  # the estimators' second moments near ALEG's solution
                        row.update(moments_near_aleg(p, best.gamma, seed=seed))
                    results["rows"].append(row)
                    results["curves"][f"{m}/{seed}/{meth}"] = best.curve
                    print(
                        f"  m={m:<3d} seed={seed} {meth:17s} gamma={best.gamma:<8.3g} "
                        + " ".join(f"IFO@{t:g}={_passes(row[f'ifo@{t:g}'], N)}" for t in targets)
                        + f"  ({row['seconds']:.1f} s)",
                        flush=True,
                    )

    # medians over seeds and ratios to ALEG
    summary = []
    for m in ms:
        for meth in methods:
            rows = [r for r in results["rows"] if r["m"] == m and r["method"] == meth]
            aleg = [r for r in results["rows"] if r["m"] == m and r["method"] == "aleg"]
            entry = {
                "m": m,
                "method": meth,
                "gamma": float(np.median([r["gamma"] for r in rows])),
                "N": float(np.median([r["N"] for r in rows])),
            }
            for t in targets:
                key = f"ifo@{t:g}"
                ifo = float(np.median([r[key] for r in rows]))
                ref = float(np.median([r[key] for r in aleg]))
                entry[key] = ifo
                entry[f"ratio@{t:g}"] = ifo / ref if math.isfinite(ref) and ref > 0 else math.nan
            summary.append(entry)
    results["summary"] = summary

    print("\nIFO to reach the target gap (passes over the data; ratio = method / ALEG, > 1 means ALEG is faster)")
    head = f"{'m':>3} {'method':17s} {'gamma':>8}" + "".join(
        f" {'IFO@' + format(t, 'g'):>11} {'ratio':>7}" for t in targets
    )
    print(head)
    print("-" * len(head))
    for e in summary:
        print(
            f"{e['m']:>3} {e['method']:17s} {e['gamma']:>8.3g}"
            + "".join(f" {_passes(e[f'ifo@{t:g}'], e['N']):>11} {_ratio(e[f'ratio@{t:g}']):>7}" for t in targets)
        )
    if "one_level_vr" in methods and len(ms) >= 2:
        print("\none-level VR / ALEG vs m (paper: grows like sqrt(m))")
        for t in targets:
            r = [next(e[f"ratio@{t:g}"] for e in summary if e["m"] == m and e["method"] == "one_level_vr") for m in ms]
            ok = np.all(np.isfinite(r)) and np.all(np.array(r) > 0)
            slope = float(np.polyfit(np.log(ms), np.log(r), 1)[0]) if ok else math.nan
            theory = [next(x["theory_ratio_one_level"] for x in results["rows"] if x["m"] == m) for m in ms]
            tslope = float(np.polyfit(np.log(ms), np.log(theory), 1)[0])
            print(
                f"  target {t:g}: ratios {', '.join(_ratio(v) for v in r)}; fitted slope {slope:.2f} "
                f"(sqrt(m): 0.50; this problem's theory constants: {tslope:.2f})"
            )
            results[f"slope@{t:g}"] = slope
            results["theory_slope"] = tslope
        for norm, what in (("inf", "the paper's l_inf norm on q"), ("local", "the entropy's local norm on q")):
            pred = [
                float(
                    np.median(
                        [x[f"pred_ratio_{norm}"] for x in results["rows"] if x["m"] == m and x["method"] == "aleg"]
                    )
                )
                for m in ms
            ]
            slope = float(np.polyfit(np.log(ms), np.log(pred), 1)[0])
            results[f"moments_slope_{norm}"] = slope
            print(
                f"  predicted by the estimators' measured second moments in {what}: "
                f"{', '.join(_ratio(v) for v in pred)}; slope {slope:.2f}"
            )

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) / f"{stamp}-bench-group_dro"
    results["env"] = environment()
    atomic_write_json(out / "results.json", _jsonable(results))
    png = _plot(results, ms, methods, targets)
    if png is not None:
        atomic_write_bytes(out / "group_dro-bench.png", png)
    print(f"\nwrote {out / 'results.json'}" + (f" and {out / 'group_dro-bench.png'}" if png else ""))
    return 0


def _passes(ifo: float, N: int) -> str:
    return "not reached" if not math.isfinite(ifo) else f"{ifo / N:.0f}N"


def _ratio(r: float) -> str:
    return "-" if not math.isfinite(r) else f"{r:.2f}"


def _jsonable(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    return obj


def _plot(results, ms, methods, targets) -> bytes | None:
    import io

    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.2 * (len(ms) + 1), 3.8))
    axes = fig.subplots(1, len(ms) + 1)
    seed0 = results["rows"][0]["seed"]
    for ax, m in zip(axes, ms):
        for meth in methods:
            curve = results["curves"].get(f"{m}/{seed0}/{meth}", [])
            N = next(r["N"] for r in results["rows"] if r["m"] == m and r["seed"] == seed0)
            if curve:
                ax.loglog([i / N for i, _ in curve], [g for _, g in curve], label=meth, lw=2 if meth == "aleg" else 1.1)
        for t in targets:
            ax.axhline(t, color="k", ls=":", lw=0.7)
        ax.set_title(f"m={m}", fontsize=9)
        ax.set_xlabel("IFO / N")
    axes[0].set_ylabel("duality gap")
    axes[0].legend(fontsize=6)
    ax = axes[-1]
    t = min(targets)
    for meth in methods:
        ys = [next(e[f"ifo@{t:g}"] for e in results["summary"] if e["m"] == m and e["method"] == meth) for m in ms]
        if any(math.isfinite(y) for y in ys):
            ax.loglog(ms, ys, "o-", label=meth)
    ax.set_xlabel("m")
    ax.set_ylabel(f"IFO to gap {t:g}")
    ax.legend(fontsize=6)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


if __name__ == "__main__":
    sys.exit(main())
