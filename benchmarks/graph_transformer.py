"""Benchmark: epoch time vs number of nodes for the shallow graph transformer with full and sampled
Z-hop context, against PyG's GPSConv (GCN local conv plus global attention), same data, one process; ratios
against GPS.

An "epoch" is one pass over all nodes (full-batch forward + backward of the hinge loss for the shallow model,
of cross-entropy for GPS). Memory is reported through its driver, the number of (target, source) attention pairs
of the full and sampled contexts (activations grow linearly in it).

    python benchmarks/graph_transformer.py [--nodes 500,1000,2000] [--repeats 3] [--threads 1] [--out runs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time
from pathlib import Path

import torch

from icml24.graph_transformer import ShallowGT, fit_gnn, hop_context, pattern_graph, sample_context
from icml24.runs import atomic_write_json, environment


def _measure(step, repeats: int) -> float:
    step()  # warm-up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        step()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _row(n: int, args) -> dict:
    data = pattern_graph(n, degree=3.0, seed=args.seed)
    full = hop_context(data.edge_index, n, 3)
    sampled = sample_context(full, args.per_hop, seed=args.seed)
    sign = torch.where(data.y > 0, 1.0, -1.0)
    gt = ShallowGT(32, 3, seed=args.seed)
    gps = fit_gnn(data, torch.arange(n), kind="gps", epochs=1, seed=args.seed).train()

    def gt_step(ctx):
        gt.zero_grad()
        torch.relu(1 - sign * gt(data.x, ctx)).mean().backward()

    def gps_step():
        gps.zero_grad()
        torch.nn.functional.cross_entropy(gps(data.x, data.edge_index), data.y).backward()

    res = {
        "gt_full": _measure(lambda: gt_step(full), args.repeats),
        "gt_sampled": _measure(lambda: gt_step(sampled), args.repeats),
        "gps": _measure(gps_step, args.repeats),
    }
    row = {"nodes": n, "pairs_full": int(full.target.numel()), "pairs_sampled": int(sampled.target.numel())}
    for k, sec in res.items():
        row[f"{k}_s"] = sec
        row[f"{k}_time_ratio_vs_gps"] = sec / res["gps"]
    print(
        f"N={n:5d}  pairs {row['pairs_full']:7d} / {row['pairs_sampled']:6d}  "
        + "  ".join(f"{k} {s * 1e3:7.1f} ms (x{s / res['gps']:.2f})" for k, s in res.items())
    )
    return row


def main(argv=None) -> int:
    """Run the benchmark.

    Parameters
    ----------
    argv : list of str, optional

    Returns
    -------
    int
        The exit status.
    """
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="500,1000,2000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--per-hop", type=int, default=4)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"threads: {args.threads}  repeats: {args.repeats}  sampled context: {args.per_hop} nodes per hop")
    rows = [_row(int(v), args) for v in args.nodes.split(",")]
    out = Path(args.out) / f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}-bench-graph_transformer.json"
    atomic_write_json(out, {"args": vars(args), "env": environment(), "rows": rows})
    print(f"saved {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
