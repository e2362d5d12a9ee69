"""Benchmark: gnn_certify on the paper's MUTAG instances, basic vs sbt vs abt bounds (and SCIP settings).

By default: the official MUTAG model, MUTAG graphs 0-19, global budget 10 %
(``Delta = ceil(0.1 |edge_index|)``), local strength 2, label shift 1, 60 s per instance (SCIP's CPU clock),
one thread, each mode run twice: as the paper (no greedy start) and with the greedy attack handed to SCIP as
a starting solution (``certify``'s default). For every graph and mode it prints the verdict, CPU seconds (build
separately) and B&B nodes, then per variant the number decided, the verdict agreement, the shifted geometric
means (shift 1 s) on the graphs every mode decided and on all (unsolved at the limit), and the ratios sbt/basic
and abt/sbt; at the end one table of every variant against the official C plugin's result that we measured on
this kind of machine (7/20 decided with basic bounds, 6/20 with sbt, all at the root), with the load average.
Saves JSON under ``runs/``.

    python benchmarks/gnn_certify.py [--graphs 0-19] [--budget 0.1] [--strength 2] [--time-limit 60]
                                     [--modes basic sbt abt] [--settings fast official]
                                     [--greedy-start both|on|off]
                                     [--attack-first | --attack-only]
                                     [--threads 1] [--out runs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from pathlib import Path

import torch

from icml24.gnn_certify.mode_comparison import as_dicts, certify_mutag, runs_table, speed_summary
from icml24.runs import atomic_write_json, environment

# the official C plugin measured here: MUTAG 0-19, 10 %, strength 2, shift 1, 60 s
OFFICIAL = {"basic": 7, "sbt": 6}


def _graphs(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", default="0-19", help="MUTAG graph indices, e.g. 0-19 or 1,4,8")
    ap.add_argument("--budget", type=float, default=0.1, help="global budget fraction of edge_index entries")
    ap.add_argument("--strength", type=int, default=2)
    ap.add_argument("--label-shift", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=60.0, help="CPU seconds per instance and mode")
    ap.add_argument("--modes", nargs="+", default=["basic", "sbt", "abt"], choices=["basic", "sbt", "abt"])
    ap.add_argument("--settings", nargs="+", default=["fast"], choices=["fast", "official"])
    ap.add_argument(
        "--attack-first",
        action="store_true",
        help="also run each preset with the greedy attack before the MIP (not in the paper)",
    )
    ap.add_argument(
        "--attack-only",
        action="store_true",
        help="run each preset with the greedy attack before the MIP, and not without it",
    )
    ap.add_argument(
        "--greedy-start",
        default="both",
        choices=["both", "on", "off"],
        help="hand SCIP the greedy attack as a starting solution (on), not (off: the paper), or both (default)",
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    graphs = _graphs(args.graphs)
    print(
        f"threads: {torch.get_num_threads()} (SCIP lp/threads {args.threads})  graphs: {graphs}  "
        f"budget {args.budget}  strength {args.strength}  limit {args.time_limit:g} CPU s  "
        f"modes {' '.join(args.modes)}  settings {' '.join(args.settings)}"
    )
    results = {}
    starts = {"both": [False, True], "on": [True], "off": [False]}[args.greedy_start]
    variants = ([] if args.attack_only else [(p, False, g) for p in args.settings for g in starts]) + (
        [(p, True, False) for p in args.settings] if args.attack_first or args.attack_only else []
    )
    load_before = os.getloadavg()
    print(f"load average (1, 5, 15 min) at the start: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}")
    for preset, attack, greedy in variants:
        name = preset + ("+attack" if attack else "") + ("+greedy-start" if greedy else "")
        print(f"\n== settings: {name}")
        t0 = time.perf_counter()

        def show(r):
            print(
                f"  graph {r.instance:>3} (n={r.nodes_in_graph:>2}, Delta={r.budget}) {r.mode:<5} {r.verdict:<10} "
                f"{r.seconds:7.2f} s (build {r.build_seconds:5.2f} s) {r.nodes:>6} nodes  dual {r.dual:10.4g}  "
                f"primal {r.primal:10.4g}",
                flush=True,
            )

        runs = certify_mutag(
            graphs,
            args.modes,
            budget=args.budget,
            strength=args.strength,
            time_limit=args.time_limit,
            settings=preset,
            seed=args.seed,
            label_shift=args.label_shift,
            attack_first=attack,
            greedy_start=greedy,
            progress=show,
        )
        summary = speed_summary(runs, args.modes)
        print()
        print(runs_table(runs, args.modes))
        print(
            f"\n{'mode':<6} {'decided':>8} {'robust':>7} {'not rob.':>8} {'sgm s (all decided)':>20} "
            f"{'sgm s (all)':>12} {'nodes':>7} {'official decided':>17}"
        )
        for m in args.modes:
            print(
                f"{m:<6} {summary[f'solved_{m}']:>5.0f}/{len(graphs):<2} {summary[f'robust_{m}']:>7.0f} "
                f"{summary[f'not_robust_{m}']:>8.0f} {summary[f'sgm_time_{m}']:>20.3f} "
                f"{summary[f'sgm_time_all_{m}']:>12.3f} {summary[f'nodes_{m}']:>7.0f} "
                f"{str(OFFICIAL.get(m, '-')) + '/20' if m in OFFICIAL else '-':>17}"
            )
        ratios = []
        if "time_ratio_sbt_basic" in summary:
            ratios.append(f"sbt/basic {summary['time_ratio_sbt_basic']:.3f}")
        if "time_ratio_abt_sbt" in summary:
            ratios.append(f"abt/sbt {summary['time_ratio_abt_sbt']:.3f}")
        print(
            f"time ratios (sgm on the {summary['all_solved']:.0f} graphs every mode decided): {', '.join(ratios)}; "
            f"verdicts agree: {bool(summary['verdicts_agree'])}; wall {time.perf_counter() - t0:.0f} s"
        )
        results[name] = {"summary": summary, "runs": as_dicts(runs), "load_average": os.getloadavg()}
    load_after = os.getloadavg()
    print(
        f"\n== against the official C plugin ({len(graphs)} graphs; CPU s per instance; unsolved counted at the limit; "
        f"load average {load_before[0]:.1f} at the start, {load_after[0]:.1f} at the end)"
    )
    print(
        f"{'variant':<28} {'mode':<6} {'decided':>8} {'sgm s (all)':>12} {'sgm s + build':>14} {'nodes':>7} "
        f"{'official':>9}"
    )
    for name, res in results.items():
        sm = res["summary"]
        for m in args.modes:
            nodes = sum(r["nodes"] for r in res["runs"] if r["mode"] == m)
            official = f"{OFFICIAL[m]}/{len(graphs)}" if m in OFFICIAL and graphs == list(range(20)) else "-"
            print(
                f"{name:<28} {m:<6} {sm[f'solved_{m}']:>5.0f}/{len(graphs):<2} {sm[f'sgm_time_all_{m}']:>12.3f} "
                f"{sm[f'sgm_total_all_{m}']:>14.3f} {nodes:>7} {official:>9}"
            )
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) / f"{stamp}-bench-gnn_certify"
    atomic_write_json(
        out / "results.json",
        {
            "args": vars(args),
            "env": environment(),
            "official": OFFICIAL,
            "load_average": {"start": load_before, "end": load_after},
            "results": results,
        },
    )
    print(
        f"\nofficial C plugin measured on this kind of machine: decided {OFFICIAL['basic']}/20 with basic, "
        f"{OFFICIAL['sbt']}/20 with sbt bounds (10 %, strength 2, shift 1, 60 s), every run ended at the root"
    )
    print(f"saved {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
