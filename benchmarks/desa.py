"""Round time and bytes per round of DeSA against gossip FedAvg, for 2-8 clients on a ring and a mesh.

Both run over the same engine (one OS process per client through torch.distributed gloo, or in-process with
``--backend inprocess``) on the same random 32 x 32 x 3 clients with the same ConvNet; round time is the median
gap between consecutive rounds' completion (anchor synthesis and process start excluded), bytes are the payload
each client sent per round (DeSA: logits on the C * ipc anchors; FedAvg: full weights).

Run: ``python benchmarks/desa.py [--threads 1] [--backend gloo] [--clients 2,4,8] [--rounds 4]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch


def _round_times(run) -> float:
    stamps: list[float] = []
    run(lambda r: stamps.append(time.perf_counter()))
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    return statistics.median(gaps) if gaps else float("nan")


def main() -> None:
    """Run the benchmark and print the table (results saved under ``runs/``)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--backend", default="gloo")
    ap.add_argument("--clients", default="2,4,8")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--width", type=int, default=16)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from icml24.desa import ConvNet, DesaConfig, gossip_fedavg, run_desa

    g = torch.Generator().manual_seed(0)
    rows = []
    print(
        f"threads {torch.get_num_threads()} (workers: 1 each), backend {args.backend}, ConvNet width {args.width}, "
        f"100 train images per client, ipc 10, {args.rounds} rounds"
    )
    print(
        f"{'n':>3} {'topology':>8} {'desa s/round':>13} {'fedavg s/round':>15} {'desa B/round':>13} "
        f"{'fedavg B/round':>15} {'bytes ratio':>12} {'time ratio':>11}"
    )
    for n in [int(v) for v in args.clients.split(",")]:
        data = [(torch.randn(100, 3, 32, 32, generator=g), torch.arange(100) % 10) for _ in range(n)]
        models = [ConvNet(width=args.width, seed=i) for i in range(n)]
        for topo in ("ring", "mesh"):
            cfg = DesaConfig(rounds=args.rounds, ipc=10, dm_iterations=0, topology=topo, lr=0.02, momentum=0.9)
            out = {}
            td = _round_times(
                lambda p, m=models, d=data, c=cfg, o=out: o.update(
                    desa=run_desa(m, d, c, backend=args.backend, progress=p)
                )
            )
            tf = _round_times(
                lambda p, m=models, d=data, c=cfg, o=out: o.update(
                    fed=gossip_fedavg(m[0], d, c, backend=args.backend, progress=p)
                )
            )
            bd = sum(out["desa"].bytes_logits) / n / args.rounds
            bf = sum(out["fed"].bytes_sent) / n / args.rounds
            rows.append({"n": n, "topology": topo, "desa_s": td, "fedavg_s": tf, "desa_B": bd, "fedavg_B": bf})
            print(
                f"{n:>3} {topo:>8} {td:>13.3f} {tf:>15.3f} {bd:>13,.0f} {bf:>15,.0f} {bf / bd:>12.1f} {td / tf:>11.2f}"
            )
    out_path = Path("runs") / "bench-desa.json"
    out_path.parent.mkdir(exist_ok=True)
    out_path.write_text(json.dumps({"threads": args.threads, "backend": args.backend, "rows": rows}, indent=1))
    print(f"saved {out_path}")


if __name__ == "__main__":
    main()
