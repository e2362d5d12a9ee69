"""Targets planned per second by Retro*-0 with and without CREBM reranking (the reranker's overhead as a ratio),
and the energy's scoring throughput (routes per second), on the smoke-scale world.

Run: ``python benchmarks/crebm.py [--threads 1] [--repeats 3] [--targets 30]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch


def main() -> None:
    """Run the benchmark and print the table (results saved under ``runs/``)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--targets", type=int, default=30)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from icml24.crebm import energies, rerank, retro_star_0
    from icml24.crebm.experiments import train_all

    t0 = time.perf_counter()
    tr = train_all("smoke", 0)
    setup_s = time.perf_counter() - t0
    world = tr.world
    targets = list(world.test[: args.targets])

    def plan(with_rerank: bool) -> float:
        start = time.perf_counter()
        for t in targets:
            found = retro_star_0(t.smiles, tr.onestep, world.stock, t.depth, beam_size=5)
            if with_rerank and found:
                rerank(found, t.smiles, tr.crebm, 1.0, top=5)
        return time.perf_counter() - start

    plan(False)  # warm the template caches so both arms see the same cached chemistry
    base = [plan(False) for _ in range(args.repeats)]
    full = [plan(True) for _ in range(args.repeats)]
    mats = [p.route.materials_string() for pool in tr.test_pools for p in pool]
    tgts = [t.smiles for t, pool in zip(world.test, tr.test_pools) for _ in pool]
    score = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        energies(tr.crebm, tgts, mats)
        score.append(time.perf_counter() - start)
    b, f, s = statistics.median(base), statistics.median(full), statistics.median(score)
    res = {
        "threads": args.threads,
        "targets": len(targets),
        "setup_seconds": setup_s,
        "retro_star_0_targets_per_s": len(targets) / b,
        "with_rerank_targets_per_s": len(targets) / f,
        "rerank_overhead_ratio": f / b,
        "energy_routes_per_s": len(mats) / s,
        "energy_params": sum(p.numel() for p in tr.crebm.parameters()),
    }
    print(f"threads {args.threads}, {len(targets)} targets, repeats {args.repeats} (median)")
    print(f"{'Retro*-0 alone':<28} {res['retro_star_0_targets_per_s']:>9.2f} targets/s")
    print(f"{'Retro*-0 + CREBM rerank':<28} {res['with_rerank_targets_per_s']:>9.2f} targets/s")
    print(f"{'rerank overhead (ratio)':<28} {res['rerank_overhead_ratio']:>9.2f} x")
    print(f"{'energy scoring':<28} {res['energy_routes_per_s']:>9.1f} routes/s ({res['energy_params']} parameters)")
    out = Path("runs") / "bench-crebm.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
