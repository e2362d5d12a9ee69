"""Benchmark: decoding throughput of DeRa vs the aligned model alone (the limit is two forward passes per token).

Both decode the same prompts greedily with KV caches, in one process; the models are tiny GPT-2s of the
chosen size with random weights (throughput does not depend on what the weights learned). Prints tokens per
second, the ratio, and the same with the reference's KV cache switched off; saves JSON under runs/.

    python benchmarks/dera.py [--layers 4] [--width 256] [--batch 1 8] [--new-tokens 128] [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from pathlib import Path

import numpy as np
import torch

from icml24.dera import dera_generate
from icml24.nn.lm import tiny_gpt2
from icml24.runs import atomic_write_json, environment


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--vocab", type=int, default=512)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default="runs")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(
        f"threads: {torch.get_num_threads()}  repeats: {args.repeats}  GPT-2 {args.layers}x{args.width}, "
        f"vocab {args.vocab}, {args.new_tokens} new tokens"
    )
    kw = dict(
        n_positions=args.prompt_len + args.new_tokens + 8,
        n_embd=args.width,
        n_layer=args.layers,
        n_head=max(1, args.width // 64),
    )
    aligned, ref = tiny_gpt2(args.vocab, seed=1, **kw), tiny_gpt2(args.vocab, seed=2, **kw)
    for m in (aligned, ref):
        m.config.eos_token_id = None  # never stop early: every run decodes exactly new_tokens
        m.generation_config.eos_token_id = None
    rows = []
    print(
        f"\n{'batch':>5} {'aligned tok/s':>14} {'DeRa tok/s':>11} {'slowdown':>9} {'DeRa no ref cache':>18} "
        f"{'slowdown':>9}"
    )
    for bs in args.batch:
        ids = torch.randint(3, args.vocab, (bs, args.prompt_len), generator=torch.Generator().manual_seed(bs))
        times = {"aligned": [], "dera": [], "dera_nocache": []}
        for _ in range(args.repeats):
            for name in times:
                t0 = time.perf_counter()
                if name == "aligned":
                    with torch.no_grad():
                        aligned.generate(
                            input_ids=ids,
                            attention_mask=torch.ones_like(ids),
                            do_sample=False,
                            max_new_tokens=args.new_tokens,
                            min_new_tokens=args.new_tokens,
                            pad_token_id=0,
                        )
                else:
                    dera_generate(
                        aligned,
                        ref,
                        ids,
                        lam=0.5,
                        max_new_tokens=args.new_tokens,
                        pad_token_id=0,
                        use_cache=(name == "dera"),
                        min_new_tokens=args.new_tokens,
                    )
                times[name].append(time.perf_counter() - t0)
        tps = {k: bs * args.new_tokens / float(np.median(v)) for k, v in times.items()}
        row = {
            "batch": bs,
            **{f"{k}_tokens_per_s": v for k, v in tps.items()},
            "slowdown": tps["aligned"] / tps["dera"],
            "slowdown_nocache": tps["aligned"] / tps["dera_nocache"],
        }
        rows.append(row)
        print(
            f"{bs:>5} {tps['aligned']:>14.0f} {tps['dera']:>11.0f} {row['slowdown']:>9.2f} "
            f"{tps['dera_nocache']:>18.0f} {row['slowdown_nocache']:>9.2f}"
        )
    print("\nexpected slowdown with both KV caches: about 2 (two forward passes per token)")
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) / f"{stamp}-bench-dera"
    atomic_write_json(out / "results.json", {"args": vars(args), "env": environment(), "rows": rows})
    print(f"saved {out / 'results.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
