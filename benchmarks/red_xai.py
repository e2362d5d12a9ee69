"""Benchmark: heatmaps per second through the batched pipeline (:func:`icml24.red_xai.attribute`, one Captum
call per batch) vs a per-sample loop of Captum calls (gradient x input, Integrated Gradients, LRP epsilon and z+),
same model, same images, one process; and SpRAy time vs the number of heatmaps.

    python benchmarks/red_xai.py [--ns 64 256] [--spray-ns 100 200 400] [--repeats 3] [--threads 1] [--out runs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from pathlib import Path

import numpy as np
import torch

from icml24.red_xai import SmallNet, attribute, spray
from icml24.runs import atomic_write_json, environment


def _median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[64, 256], help="images explained per batch")
    ap.add_argument("--spray-ns", type=int, nargs="+", default=[100, 200, 400], help="heatmaps clustered")
    ap.add_argument(
        "--methods", nargs="+", default=["input_x_gradient", "integrated_gradients", "lrp_epsilon", "lrp_zplus"]
    )
    ap.add_argument("--side", type=int, default=14, help="image side (14: pooled Fashion-MNIST)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
    except ImportError:
        pass
    from captum import attr

    print(f"threads: {args.threads}  repeats: {args.repeats}  image: 1x{args.side}x{args.side}")
    gen = torch.Generator().manual_seed(args.seed)
    net = SmallNet(args.side**2, 10, 64, seed=args.seed).eval()
    rows = []
    # the per-sample peer for LRP: Captum's LRP with the rules attribute() sets, fresh for every call (Captum's rule
    # objects keep state: reused across calls, the z+ maps after the first call are wrong)
    from captum.attr._utils.lrp_rules import Alpha1_Beta0_Rule, EpsilonRule

    def lrp_net(method):
        zplus = ("net.0", "net.2") if method == "lrp_zplus" else ()
        for name, m in net.named_modules():
            if isinstance(m, torch.nn.Linear):
                m.rule = Alpha1_Beta0_Rule(set_bias_to_zero=True) if name in zplus else EpsilonRule(1e-6)
        return net

    print(f"{'method':>22} {'N':>5} {'batched maps/s':>15} {'loop maps/s':>12} {'ratio':>7} {'max |diff|':>11}")
    for method in args.methods:
        for n in args.ns:
            x = torch.rand(n, 1, args.side, args.side, generator=gen)

            def loop(x=x, method=method):
                out = []
                for i in range(len(x)):
                    xi = x[i : i + 1].clone().requires_grad_(True)
                    if method == "input_x_gradient":
                        r = attr.InputXGradient(net).attribute(xi, target=0)
                    elif method == "integrated_gradients":
                        r = attr.IntegratedGradients(net).attribute(xi, baselines=0.0, target=0, n_steps=32)
                    else:
                        r = attr.LRP(lrp_net(method)).attribute(xi, target=0)
                    out.append(r.detach())
                for m in net.modules():
                    m.__dict__.pop("rule", None)
                return torch.cat(out)

            t_batch, h_batch = _median_time(lambda x=x, method=method: attribute(net, x, 0, method), args.repeats)
            t_loop, h_loop = _median_time(loop, args.repeats)
            row = {
                "method": method,
                "n": n,
                "batched_maps_per_s": n / t_batch,
                "loop_maps_per_s": n / t_loop,
                "max_abs_diff": float((h_batch - h_loop).abs().max()),
            }
            row["ratio"] = row["batched_maps_per_s"] / row["loop_maps_per_s"]
            rows.append(row)
            print(
                f"{method:>22} {n:>5} {row['batched_maps_per_s']:>15.0f} {row['loop_maps_per_s']:>12.0f} "
                f"{row['ratio']:>7.1f} {row['max_abs_diff']:>11.2e}"
            )
    spray_rows = []
    print(f"{'heatmaps':>9} {'SpRAy s':>9} {'s per map':>10}")
    spray(torch.rand(8, 1, args.side, args.side, generator=gen), seed=args.seed)  # warm-up: imports, thread pools
    for n in args.spray_ns:
        h = torch.rand(n, 1, args.side, args.side, generator=gen)
        t, _ = _median_time(lambda h=h: spray(h, seed=args.seed), args.repeats)
        spray_rows.append({"n": n, "seconds": t, "seconds_per_map": t / n})
        print(f"{n:>9} {t:>9.3f} {t / n:>10.2e}")
    if len(spray_rows) > 1:
        slope = np.polyfit(np.log([r["n"] for r in spray_rows]), np.log([r["seconds"] for r in spray_rows]), 1)[0]
        print(f"SpRAy time grows as N^{slope:.2f} over this range (dense eigendecomposition: N^3 asymptotically)")
    else:
        slope = float("nan")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = Path(args.out) / f"{stamp}-bench-red_xai" / "results.json"
    atomic_write_json(
        path,
        {
            "args": vars(args),
            "env": environment(),
            "rows": rows,
            "spray": spray_rows,
            "spray_exponent": float(slope),
        },
    )
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
