"""Benchmark: dynamic attention maintenance, lazy structure vs its peers, update and query time vs n, and
update/query mixes against vectorised eager maintenance and naive recomputation (ratios per mix).

For each tau and n (d = n by default, the paper's regime), measures the lazy structure's amortised update
time and worst-case query time (k - 1 pending updates), next to eager maintenance (exact AV after every
update), naive per-query recomputation and the O(n^2)-memory lazy variant, all on the same inputs in one
process; prints ratios and fitted log-log slopes beside the predicted exponents, saves JSON and a PNG.

    python benchmarks/dynamic_attention.py [--ns 256 512 1024 2048] [--taus 0.25 0.5 0.75] [--d n]
                                            [--repeats 3] [--threads 1] [--out runs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from pathlib import Path

import numpy as np
import torch

from icml24.dynamic_attention import DenseLazyAttention, DynamicAttention, EagerAttention, NaiveAttention
from icml24.dynamic_attention.exponents import classical_exponents, loglog_slope, paper_exponents
from icml24.dynamic_attention.timing import measure_lazy, measure_peer
from icml24.dynamic_attention.tradeoff import TRADEOFF_FRACTIONS, tradeoff_mixes
from icml24.dynamic_attention.workloads import random_qkv, revised_memory
from icml24.runs import artifacts_to, atomic_write_json, environment, save_figure


def measure_dense_lazy(n: int, d: int, tau: float, seed: int, queries: int = 15) -> tuple[float, float]:
    Q, K, V = random_qkv(n, d, seed)
    m = DenseLazyAttention(Q, K, V, tau)
    rng = np.random.default_rng(seed)
    t_up, qt = 0.0, []
    for _ in range(2):
        for u in range(m.k):
            i, j = int(rng.integers(n)), int(rng.integers(d))
            t = time.perf_counter()
            (m.update_k if u % 2 else m.update_v)(i, j, 0.01)
            t_up += time.perf_counter() - t
            if u == m.k - 2:
                for _ in range(queries):
                    a, b = int(rng.integers(n)), int(rng.integers(d))
                    t = time.perf_counter()
                    m.query(a, b)
                    qt.append(time.perf_counter() - t)
    return t_up / (2 * m.k), float(np.median(qt)) if qt else float("nan")


def measure_resize(cls, n: int, d: int, tau: float, seed: int, ops: int = 400) -> float:
    """Seconds per operation of alternating appends and deletes (a sliding memory of n rows), rebuilds
    included."""
    Q, K, V = random_qkv(n, d, seed)
    m = cls(Q, K, V, tau) if cls is DynamicAttention else cls(Q, K, V)
    rng = np.random.default_rng(seed)
    rows = rng.normal(0, 0.3, size=(ops, d))
    t = time.perf_counter()
    for r in range(ops // 2):
        m.append_row(rows[r], rows[-1 - r])
        m.delete_row(int(rng.integers(m.n)))
    return (time.perf_counter() - t) / (2 * (ops // 2))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns", type=int, nargs="+", default=[256, 512, 1024, 2048])
    ap.add_argument("--taus", type=float, nargs="+", default=[0.25, 0.5, 0.75])
    ap.add_argument("--d", default="n", help="head dimension: an integer, or 'n' for d = n (default)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs")
    ap.add_argument("--mix-n", type=int, default=4096, help="n (= m) of the update/query mixes; 0 skips them")
    ap.add_argument("--mix-d", type=int, default=64)
    ap.add_argument("--mix-tau", type=float, default=0.5)
    ap.add_argument("--memory-docs", type=int, default=4096, help="documents of the revised-memory example; 0 skips")
    ap.add_argument("--resize-ns", type=int, nargs="*", default=[1024, 4096], help="n of the append/delete mix")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(args.threads)
    except ImportError:
        pass
    print(f"threads: {torch.get_num_threads()}  repeats: {args.repeats}  d: {args.d}")
    dsize = (lambda n: n) if args.d == "n" else (lambda n, v=int(args.d): v)

    results = {"args": vars(args), "env": environment(), "rows": [], "slopes": {}}
    peers = {}
    for n in args.ns:
        eu = [measure_peer("eager", n, dsize(n), args.seed + r, updates=64)[0] for r in range(args.repeats)]
        nq = [measure_peer("naive", n, dsize(n), args.seed + r, updates=2)[1] for r in range(args.repeats)]
        peers[n] = (float(np.median(eu)), float(np.median(nq)))
    header = (
        f"{'tau':>5} {'n':>6} {'k':>5} | {'lazy upd ms':>11} {'eager upd ms':>12} {'eager/lazy':>10} "
        f"{'dense upd ms':>12} | {'lazy q us':>10} {'naive q us':>10} {'naive/lazy':>10} {'dense q us':>10}"
    )
    print(header)
    print("-" * len(header))
    series = {}
    for tau in args.taus:
        pts, dense = [], []
        for n in args.ns:
            p = measure_lazy(n, dsize(n), tau, args.seed, rounds=2, queries=15, repeats=args.repeats)
            dl = [measure_dense_lazy(n, dsize(n), tau, args.seed + r) for r in range(args.repeats)]
            du, dq = float(np.median([x[0] for x in dl])), float(np.median([x[1] for x in dl]))
            e_up, n_q = peers[n]
            pts.append(p)
            dense.append((du, dq))
            row = {
                "tau": tau,
                "n": n,
                "d": dsize(n),
                "k": p.k,
                "lazy_update_s": p.update_time,
                "lazy_query_s": p.query_time,
                "lazy_update_work": p.update_work,
                "lazy_query_work": p.query_work,
                "eager_update_s": e_up,
                "naive_query_s": n_q,
                "dense_lazy_update_s": du,
                "dense_lazy_query_s": dq,
                "init_s": p.init_time,
            }
            results["rows"].append(row)
            print(
                f"{tau:>5g} {n:>6} {p.k:>5} | {1e3 * p.update_time:>11.3f} {1e3 * e_up:>12.3f} "
                f"{e_up / p.update_time:>10.1f} {1e3 * du:>12.3f} | {1e6 * p.query_time:>10.1f} "
                f"{1e6 * n_q:>10.1f} {n_q / p.query_time:>10.1f} {1e6 * dq:>10.1f}"
            )
        series[tau] = (pts, dense)
        ns = args.ns
        results["slopes"][str(tau)] = {
            "lazy_update_time": loglog_slope(ns, [p.update_time for p in pts]),
            "lazy_query_time": loglog_slope(ns, [p.query_time for p in pts]),
            "lazy_update_work": loglog_slope(ns, [p.update_work for p in pts]),
            "lazy_query_work": loglog_slope(ns, [p.query_work for p in pts]),
            "dense_lazy_update_time": loglog_slope(ns, [x[0] for x in dense]),
            "dense_lazy_query_time": loglog_slope(ns, [x[1] for x in dense]),
            "classical_prediction": classical_exponents(tau) if args.d == "n" else None,
            "paper_bound": paper_exponents(tau) if args.d == "n" else None,
        }
    ns = args.ns
    results["slopes"]["eager_update_time"] = loglog_slope(ns, [peers[n][0] for n in ns])
    results["slopes"]["naive_query_time"] = loglog_slope(ns, [peers[n][1] for n in ns])

    print(
        "\nfitted log-log slopes vs n"
        + (" (predicted: classical MM, d = n; paper bound: fast MM)" if args.d == "n" else "")
    )
    print(
        f"{'tau':>5} | {'upd time':>8} {'upd work':>8} {'pred':>5} {'paper':>6} | {'q time':>7} {'q work':>7} "
        f"{'pred':>5} | {'dense upd':>9} {'dense q':>8}"
    )
    for tau in args.taus:
        s = results["slopes"][str(tau)]
        pu = f"{s['classical_prediction']['update']:.2f}" if s["classical_prediction"] else "-"
        pq = f"{s['classical_prediction']['query']:.2f}" if s["classical_prediction"] else "-"
        pp = f"{s['paper_bound']['update']:.2f}" if s["paper_bound"] else "-"
        print(
            f"{tau:>5g} | {s['lazy_update_time']:>8.2f} {s['lazy_update_work']:>8.2f} {pu:>5} {pp:>6} | "
            f"{s['lazy_query_time']:>7.2f} {s['lazy_query_work']:>7.2f} {pq:>5} | "
            f"{s['dense_lazy_update_time']:>9.2f} {s['dense_lazy_query_time']:>8.2f}"
        )
    print(
        f"eager update time slope {results['slopes']['eager_update_time']:.2f}, "
        f"naive query time slope {results['slopes']['naive_query_time']:.2f}"
    )

    if args.mix_n:
        mix = tradeoff_mixes(args.mix_n, args.mix_d, args.mix_tau, args.seed, reps=args.repeats, plot=False)
        results["mixes"] = mix
        print(
            f"\nupdate/query mixes: n = m = {args.mix_n}, d = {args.mix_d}, tau = {args.mix_tau:g} (k = "
            f"{int(mix['k'])}); microseconds per operation and ratios (> 1: the lazy structure is faster)"
        )
        print(f"{'queries':>8} | {'lazy':>9} {'eager':>9} {'naive':>9} | {'eager/lazy':>10} {'naive/lazy':>10}")
        for f in TRADEOFF_FRACTIONS:
            key = f"q{int(round(f * 100))}"
            us = " ".join(f"{mix[f'{key}_{name}_us']:>9.1f}" for name in ("lazy", "eager", "naive"))
            print(f"{f:>8.0%} | {us} | {mix[key + '_eager_over_lazy']:>10.2f} {mix[key + '_naive_over_lazy']:>10.2f}")
        for peer in ("eager", "naive"):
            print(
                f"crossover against {peer}: measured {mix[peer + '_crossover_measured']:.2f}, per-operation model "
                f"{mix[peer + '_crossover_predicted']:.2f} (-1: the lazy structure never wins)"
            )

    if args.memory_docs:
        mem = revised_memory(docs=args.memory_docs, users=max(args.memory_docs // 4, 1), seed=args.seed)
        results["revised_memory"] = mem
        print(
            f"\nretrieval memory, {args.memory_docs} documents revised one by one (key and value rows replaced), "
            f"4 users read after each: ms per revision lazy {mem['lazy_ms']:.2f}, eager {mem['eager_ms']:.2f} "
            f"(eager/lazy {mem['eager_ms'] / mem['lazy_ms']:.2f}), naive {mem['naive_ms']:.2f} (naive/lazy "
            f"{mem['naive_ms'] / mem['lazy_ms']:.2f}); answers equal to {mem['max_answer_diff']:.1e}"
        )

    if args.resize_ns:
        print(
            f"\nappend/delete (a sliding memory: one row appended, one deleted), d = {args.mix_d}, tau = "
            f"{args.mix_tau:g}: microseconds per operation, rebuilds included, and ratios (> 1: lazy faster)"
        )
        print(f"{'n':>6} | {'lazy':>8} {'eager':>8} {'naive':>8} | {'eager/lazy':>10} {'naive/lazy':>10}")
        results["resize"] = []
        for n in args.resize_ns:
            t = {
                name: float(
                    np.median(
                        [measure_resize(cls, n, args.mix_d, args.mix_tau, args.seed + r) for r in range(args.repeats)]
                    )
                )
                for name, cls in (("lazy", DynamicAttention), ("eager", EagerAttention), ("naive", NaiveAttention))
            }
            results["resize"].append({"n": n, **{f"{k}_s": v for k, v in t.items()}})
            print(
                f"{n:>6} | {1e6 * t['lazy']:>8.1f} {1e6 * t['eager']:>8.1f} {1e6 * t['naive']:>8.1f} | "
                f"{t['eager'] / t['lazy']:>10.2f} {t['naive'] / t['lazy']:>10.2f}"
            )

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) / f"{stamp}-bench-dynamic_attention"
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / "results.json", results)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4.2))
    ax = fig.subplots(1, 2)
    for tau, (pts, dense) in series.items():
        l0 = ax[0].loglog(ns, [p.update_time for p in pts], "o-", label=f"lazy tau={tau:g}")[0]
        ax[0].loglog(ns, [x[0] for x in dense], "x:", color=l0.get_color(), label=f"dense lazy tau={tau:g}")
        l1 = ax[1].loglog(ns, [p.query_time for p in pts], "o-", label=f"lazy tau={tau:g}")[0]
        ax[1].loglog(ns, [x[1] for x in dense], "x:", color=l1.get_color(), label=f"dense lazy tau={tau:g}")
    ax[0].loglog(ns, [peers[n][0] for n in ns], "k--", label="eager")
    ax[1].loglog(ns, [peers[n][1] for n in ns], "k--", label="naive")
    ax[0].set(title="amortised update time", xlabel="n", ylabel="seconds")
    ax[1].set(title="worst-case query time", xlabel="n", ylabel="seconds")
    for a in ax:
        a.legend(fontsize=7)
    with artifacts_to(out):
        png = save_figure(fig, "dynamic_attention-times")
    print(f"\nsaved {out / 'results.json'} and {png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
