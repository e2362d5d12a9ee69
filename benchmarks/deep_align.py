"""Benchmark: Deep-Align vs Weight Matching, Activation Matching and Sinkhorn re-basin, pairs aligned per second
(single and batched) and the barrier each reaches, including at Deep-Align's time per pair.

Builds the digits model zoo and trains Deep-Align as ``icml24 verify deep_align`` does at quick scale (training
time is reported separately: it is paid once per architecture), then aligns every pair of held-out networks with
every method on the same pairs in one process. Timings are medians over ``--repeats`` on ``--threads`` threads.
Sinkhorn re-basin is an optimisation per pair; it is also run with the number of steps that fits in Deep-Align's
batched time per pair ("equal time").

    python benchmarks/deep_align.py [--nets 80] [--train-steps 400] [--sr-steps 200] [--sr-pairs 8]
                                    [--repeats 3] [--threads 1] [--seed 0] [--out runs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time
from pathlib import Path

import torch

from icml24.claims import Scale
from icml24.deep_align import DeepAlign, activation_matching, sinkhorn_rebasin, train_zoo, weight_matching
from icml24.deep_align.evaluation import barrier_and_auc, interpolation_losses
from icml24.deep_align.experiments import SETTINGS
from icml24.deep_align.measurements import held_out_pairs, stack_perms
from icml24.deep_align.permutations import permute_hard
from icml24.deep_align.weights import WeightBatch
from icml24.runs import artifacts_to, atomic_write_json, environment, save_figure


def _median_time(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return out, statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    quick = SETTINGS[Scale.QUICK]
    ap.add_argument("--nets", type=int, default=quick.n_nets, help="networks in the zoo")
    ap.add_argument("--val", type=int, default=quick.n_val, help="validation networks (model selection)")
    ap.add_argument("--test", type=int, default=quick.n_test, help="held-out networks (all pairs are aligned)")
    ap.add_argument("--zoo-steps", type=int, default=quick.zoo_steps)
    ap.add_argument("--train-steps", type=int, default=quick.train["steps"])
    ap.add_argument("--sr-steps", type=int, default=quick.sr_steps, help="Sinkhorn re-basin steps per pair")
    ap.add_argument("--sr-pairs", type=int, default=quick.sr_pairs, help="pairs given to Sinkhorn re-basin")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--scan-widths",
        type=int,
        nargs="*",
        default=[32, 64, 128],
        help="hidden widths for the time-per-pair scan (untrained encoder, random networks)",
    )
    ap.add_argument("--scan-pairs", type=int, default=8)
    ap.add_argument("--out", default="runs")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"threads: {args.threads} (torch.get_num_threads() = {torch.get_num_threads()})")

    t0 = time.perf_counter()
    zoo = train_zoo(args.nets, widths=quick.widths, val=args.val, test=args.test, steps=args.zoo_steps, seed=args.seed)
    t_zoo = time.perf_counter() - t0
    aligner = DeepAlign(quick.widths, seed=args.seed, **quick.encoder)
    train = {**quick.train, "steps": args.train_steps, "eval_every": min(quick.train["eval_every"], args.train_steps)}
    t0 = time.perf_counter()
    aligner.fit(zoo.split("train"), zoo.data.x_train, zoo.data.y_train, val=zoo.split("val"), seed=args.seed, **train)
    t_train = time.perf_counter() - t0
    print(
        f"zoo: {args.nets} MLPs {quick.widths} in {t_zoo:.1f} s; Deep-Align trained {args.train_steps} steps "
        f"in {t_train:.1f} s (once per architecture)"
    )

    A, B = held_out_pairs(zoo)
    n = A.size
    x, y, xtr, ytr = zoo.data.x_test, zoo.data.y_test, zoo.data.x_train, zoo.data.y_train
    k_sr = min(args.sr_pairs, n)
    R = args.repeats

    da_b, t_da_b = _median_time(lambda: aligner.align_batch(A, B), R)
    _, t_da_s = _median_time(lambda: [aligner.align(A[k], B[k]) for k in range(n)], R)
    _, t_enc = _median_time(lambda: aligner.scores_batch(A, B), R)
    wm, t_wm = _median_time(lambda: [weight_matching(A[k], B[k], seed=args.seed + k) for k in range(n)], R)
    am, t_am = _median_time(lambda: [activation_matching(A[k], B[k], xtr[:256]) for k in range(n)], R)
    dawm, t_dawm = _median_time(
        lambda: [weight_matching(A[k], B[k], init=[p[k] for p in da_b], seed=args.seed + k) for k in range(n)], R
    )
    sr, t_sr = _median_time(
        lambda: [sinkhorn_rebasin(A[k], B[k], xtr, ytr, steps=args.sr_steps, seed=args.seed + k) for k in range(k_sr)],
        1,
    )
    # Deep-Align as the initialisation of Sinkhorn re-basin (paper Sec. 6): the same steps from Deep-Align's
    # alignment instead of the identity; its time includes Deep-Align's batched time per pair
    da_sr, t_da_sr = _median_time(
        lambda: [
            sinkhorn_rebasin(A[k], B[k], xtr, ytr, steps=args.sr_steps, init=[p[k] for p in da_b], seed=args.seed + k)
            for k in range(k_sr)
        ],
        1,
    )
    ms = {
        "da_batched": 1e3 * t_da_b / n,
        "da_single": 1e3 * t_da_s / n,
        "da_encoder_batched": 1e3 * t_enc / n,
        "wm": 1e3 * t_wm / n,
        "am": 1e3 * t_am / n,
        "da+wm": 1e3 * (t_da_b + t_dawm) / n,
        "sr": 1e3 * t_sr / max(k_sr, 1),
        "da+sr": 1e3 * t_da_b / n + 1e3 * t_da_sr / max(k_sr, 1),
    }
    ms_per_sr_step = ms["sr"] / max(args.sr_steps, 1)
    eq_steps = {
        "da_batched": int(ms["da_batched"] // ms_per_sr_step),
        "da_single": int(ms["da_single"] // ms_per_sr_step),
    }
    sr_eq = {
        k: [sinkhorn_rebasin(A[i], B[i], xtr, ytr, steps=s, seed=args.seed + i) for i in range(k_sr)]
        for k, s in eq_steps.items()
    }
    # Sinkhorn from the identity given the time of Deep-Align + Sinkhorn (equal time)
    eq_steps["da+sr"] = int(ms["da+sr"] // ms_per_sr_step)
    sr_eq["da+sr"] = [
        sinkhorn_rebasin(A[i], B[i], xtr, ytr, steps=eq_steps["da+sr"], seed=args.seed + i) for i in range(k_sr)
    ]

    def barrier(perms, idx=None):
        a, b = (A, B) if idx is None else (A[idx], B[idx])
        if perms is not None:
            b = permute_hard(b, perms)
        bar, auc = barrier_and_auc(*interpolation_losses(a, b, x, y))
        return float(bar.mean()), float(auc.mean())

    sub = torch.arange(k_sr)
    bars = {
        "none": barrier(None),
        "da": barrier(da_b),
        "wm": barrier(stack_perms([r.perms for r in wm])),
        "am": barrier(stack_perms([r.perms for r in am])),
        "da+wm": barrier(stack_perms([r.perms for r in dawm])),
        "sr": barrier(stack_perms([r.perms for r in sr]), sub),
        "da+sr": barrier(stack_perms([r.perms for r in da_sr]), sub),
        "da_on_sr_pairs": barrier([p[:k_sr] for p in da_b], sub),
        "none_on_sr_pairs": barrier(None, sub),
    }
    for k, res in sr_eq.items():
        bars[f"sr_at_{k}_time"] = barrier(stack_perms([r.perms for r in res]), sub)

    print(f"\n{n} held-out pairs ({k_sr} for Sinkhorn re-basin, {args.sr_steps} steps); median of {R} repeats")
    print(f"{'method':<28}{'ms/pair':>10}{'pairs/s':>10}{'barrier':>10}{'AUC':>9}")
    rows = [
        ("no alignment", None, "none"),
        ("Deep-Align, batched", "da_batched", "da"),
        ("Deep-Align, one pair/call", "da_single", "da"),
        ("Weight Matching", "wm", "wm"),
        ("Activation Matching", "am", "am"),
        ("Deep-Align + WM", "da+wm", "da+wm"),
        ("Sinkhorn re-basin", "sr", "sr"),
        ("Deep-Align + Sinkhorn", "da+sr", "da+sr"),
    ]
    for label, tk, bk in rows:
        t = ms.get(tk) if tk else None
        print(
            f"{label:<28}{(f'{t:.2f}' if t else '-'):>10}{(f'{1e3 / t:.0f}' if t else '-'):>10}"
            f"{bars[bk][0]:>10.3f}{bars[bk][1]:>9.3f}"
        )
    print(
        f"(on the {k_sr} Sinkhorn pairs: no alignment {bars['none_on_sr_pairs'][0]:.3f}, "
        f"Deep-Align {bars['da_on_sr_pairs'][0]:.3f})"
    )
    print("\nratios (pairs per second):")
    ratios = {
        "da_batched_over_wm": ms["wm"] / ms["da_batched"],
        "da_single_over_wm": ms["wm"] / ms["da_single"],
        "da_batched_over_am": ms["am"] / ms["da_batched"],
        "da_batched_over_sr": ms["sr"] / ms["da_batched"],
        "da_single_over_sr": ms["sr"] / ms["da_single"],
        "da_batched_over_single": ms["da_single"] / ms["da_batched"],
    }
    for k, v in ratios.items():
        print(f"  {k:<26} {v:8.2f}x")
    print("\nbarrier at equal time (Sinkhorn re-basin given Deep-Align's time per pair):")
    for k, s in eq_steps.items():
        print(
            f"  at {k} time ({ms[k]:.2f} ms/pair): Sinkhorn re-basin fits {s} steps -> barrier "
            f"{bars[f'sr_at_{k}_time'][0]:.3f} vs Deep-Align {bars['da_on_sr_pairs'][0]:.3f}"
        )
    print(
        f"  Deep-Align as Sinkhorn's initialisation ({ms['da+sr']:.2f} ms/pair, {args.sr_steps} steps): barrier "
        f"{bars['da+sr'][0]:.3f} vs Sinkhorn from the identity at equal time ({eq_steps['da+sr']} steps) "
        f"{bars['sr_at_da+sr_time'][0]:.3f}"
    )
    wm_fits = ms["wm"] <= ms["da_batched"]
    print(
        f"  Weight Matching needs {ms['wm']:.2f} ms/pair: {'within' if wm_fits else 'over'} Deep-Align's "
        f"batched budget ({ms['da_batched']:.2f} ms/pair); barrier {bars['wm'][0]:.3f} vs {bars['da'][0]:.3f}"
    )
    print(
        f"  training Deep-Align once cost {t_train:.1f} s = the time Weight Matching needs for "
        f"{1e3 * t_train / ms['wm']:.0f} pairs"
    )

    scan = _width_scan(args, quick) if args.scan_widths else []

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run = Path(args.out) / f"{stamp}-bench-deep_align"
    run.mkdir(parents=True, exist_ok=True)
    result = {
        "args": vars(args),
        "env": environment(),
        "pairs": n,
        "sr_pairs": k_sr,
        "ms_per_pair": ms,
        "barrier_auc": bars,
        "ratios": ratios,
        "sr_equal_time_steps": eq_steps,
        "zoo_seconds": t_zoo,
        "train_seconds": t_train,
        "widths": list(quick.widths),
        "encoder": quick.encoder,
        "width_scan": scan,
    }
    atomic_write_json(run / "results.json", result)
    _plot(run, ms, bars)
    print(f"\nwrote {run / 'results.json'}")
    return 0


def _width_scan(args, quick) -> list[dict]:
    """Time per pair against the hidden width ``w`` of MLPs ``64 -> w -> w -> 10``: Deep-Align's encoder (same
    configuration, untrained: the time does not depend on the weights) plus Hungarian, batched, vs Weight
    Matching on freshly initialised networks (its sweeps, hence its time, depend on the weights)."""
    from icml24.deep_align.world import init_mlps

    print(f"\ntime per pair vs hidden width (64 -> w -> w -> 10, {args.scan_pairs} random pairs, untrained encoder):")
    print(f"{'w':>6}{'DA batched ms':>15}{'WM ms':>10}{'WM sweeps':>11}{'WM / DA':>9}")
    rows = []
    for w in args.scan_widths:
        widths = (quick.widths[0], w, w, quick.widths[-1])
        nets = WeightBatch.from_linear(
            *init_mlps(widths, range(args.seed * 1000, args.seed * 1000 + 2 * args.scan_pairs))
        )
        A, B = nets[torch.arange(args.scan_pairs)], nets[torch.arange(args.scan_pairs, 2 * args.scan_pairs)]
        al = DeepAlign(widths, seed=args.seed, **quick.encoder)
        _, t_da = _median_time(lambda al=al, A=A, B=B: al.align_batch(A, B), args.repeats)
        wm, t_wm = _median_time(
            lambda A=A, B=B: [weight_matching(A[k], B[k], seed=k) for k in range(A.size)], args.repeats
        )
        row = {
            "width": w,
            "da_batched_ms": 1e3 * t_da / A.size,
            "wm_ms": 1e3 * t_wm / A.size,
            "wm_sweeps": sum(r.sweeps for r in wm) / len(wm),
        }
        rows.append(row)
        print(
            f"{w:>6}{row['da_batched_ms']:>15.2f}{row['wm_ms']:>10.2f}{row['wm_sweeps']:>11.1f}"
            f"{row['wm_ms'] / row['da_batched_ms']:>8.2f}x"
        )
    return rows


def _plot(run: Path, ms: dict, bars: dict) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    for label, tk, bk in [
        ("Deep-Align (batched)", "da_batched", "da"),
        ("Deep-Align (single)", "da_single", "da"),
        ("WM", "wm", "wm"),
        ("AM", "am", "am"),
        ("DA + WM", "da+wm", "da+wm"),
        ("Sinkhorn re-basin", "sr", "sr"),
        ("Deep-Align + Sinkhorn", "da+sr", "da+sr"),
    ]:
        ax.scatter(ms[tk], bars[bk][0], label=label)
    ax.axhline(bars["none"][0], ls="--", c="gray", label="no alignment")
    ax.set(xscale="log", xlabel="ms per pair (log)", ylabel="test-loss barrier", title="deep_align: time vs barrier")
    ax.legend(fontsize=7)
    with artifacts_to(run):
        save_figure(fig, "deep_align-time-vs-barrier")


if __name__ == "__main__":
    raise SystemExit(main())
