"""Frames annotated per second by KISA (temporal module + decoding) against the frame-wise baseline and ruptures'
kernel change-point detection, on the same frozen frame embeddings, at T = 100 and 1000 frames, as ratios.

Run: ``python benchmarks/kisa.py [--threads 1] [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch


def main() -> None:
    """Run the benchmark and print the table (results saved under ``runs/``)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from icml24.kisa import HashedTextEncoder, TemporalModule, decode_keyframes, encode_skills, score_matrix
    from icml24.kisa.baselines import changepoint_keyframes, fit_framewise, framewise_keyframes

    skills = encode_skills([f"skill {i}" for i in range(8)], HashedTextEncoder(384))
    module = TemporalModule(128, 384, d_model=64, nhead=4, dim_feedforward=128).eval()
    g = torch.Generator().manual_seed(0)
    mapping = fit_framewise([torch.randn(50, 128, generator=g)], [torch.randint(0, 8, (50,), generator=g)], skills)
    print(f"threads {torch.get_num_threads()}, frame embeddings 128-d, 8 skills, d_model 64 (2 + 2 layers)")
    print(
        f"{'T':>6} {'kisa fps':>10} {'framewise fps':>14} {'ruptures fps':>13} "
        f"{'kisa/framewise':>15} {'kisa/ruptures':>14}"
    )
    rows = []
    for t in (100, 1000):
        x = torch.randn(t, 128, generator=g)

        def kisa(x=x):
            with torch.no_grad():
                decode_keyframes(score_matrix(module(x[None])[0], skills).numpy())

        def framewise(x=x):
            framewise_keyframes(x, skills, mapping)

        def ruptures(x=x):
            changepoint_keyframes(x, 5)

        med = {}
        for name, fn in (("kisa", kisa), ("framewise", framewise), ("ruptures", ruptures)):
            fn()
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                fn()
                times.append(time.perf_counter() - t0)
            med[name] = t / statistics.median(times)
        rows.append({"T": t, **med})
        print(
            f"{t:>6} {med['kisa']:>10.0f} {med['framewise']:>14.0f} {med['ruptures']:>13.0f} "
            f"{med['kisa'] / med['framewise']:>15.3f} {med['kisa'] / med['ruptures']:>14.2f}"
        )
    from pathlib import Path

    out = Path("runs") / "bench-kisa.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"threads": args.threads, "rows": rows}, indent=1))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
