"""Benchmark: decoding throughput of DeRa vs the aligned model alone (the limit is two forward passes per token)
and vs TRL's ``GeometricMixtureWrapper`` (the same per-token mixture) where TRL <= 1.13 is importable.

All decode the same prompts greedily, in one process; the models are tiny GPT-2s of the chosen size with
random weights (throughput does not depend on what the weights learned). Prints tokens per second and the
ratios, the same with the reference's KV cache switched off, and, with TRL, whether the tokens are equal
(TRL's ``mixture_coef`` weighs the reference, so it is ``1 - lambda``; it runs with ``use_cache=False``, since
with transformers 5 it hands one cache to both models). Saves JSON under runs/.

    python benchmarks/dera.py [--layers 4] [--width 256] [--batch 1 4] [--new-tokens 128] [--repeats 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
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
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--lam", type=float, default=0.5)
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
    wrapper_cls = trl_wrapper()
    print(f"TRL GeometricMixtureWrapper: {'found' if wrapper_cls else 'not importable (TRL <= 1.13 needed), skipped'}")
    rows = []
    for bs in args.batch:
        g = torch.Generator().manual_seed(bs)
        ids = torch.randint(3, args.vocab, (bs, args.prompt_len), generator=g)
        mask = torch.ones_like(ids)
        if bs > 1:  # a left-padded batch: the first rows have shorter prompts
            mask[: bs // 2, : args.prompt_len // 4] = 0
            ids = ids.masked_fill(mask == 0, 0)
        runners = {
            "aligned": lambda ids=ids, mask=mask: plain_generate(aligned, ids, mask, args.new_tokens),
            "dera": lambda ids=ids, mask=mask: dera_generate(
                aligned,
                ref,
                ids,
                attention_mask=mask,
                lam=args.lam,
                max_new_tokens=args.new_tokens,
                pad_token_id=0,
                eos_token_id=None,
            ),
            "dera_nocache": lambda ids=ids, mask=mask: dera_generate(
                aligned,
                ref,
                ids,
                attention_mask=mask,
                lam=args.lam,
                max_new_tokens=args.new_tokens,
                pad_token_id=0,
                eos_token_id=None,
                use_cache=False,
            ),
        }
        if wrapper_cls is not None:
            runners["trl"] = lambda ids=ids, mask=mask: trl_generate(
                wrapper_cls, aligned, ref, ids, mask, args.lam, args.new_tokens
            )
        times = {k: [] for k in runners}
        outs = {}
        for _ in range(args.repeats):
            for name, run in runners.items():
                t0 = time.perf_counter()
                outs[name] = run()
                times[name].append(time.perf_counter() - t0)
        tps = {k: bs * args.new_tokens / float(np.median(v)) for k, v in times.items()}
        row = {"batch": bs, **{f"{k}_tokens_per_s": v for k, v in tps.items()}}
        row["dera_over_aligned"] = tps["dera"] / tps["aligned"]
        row["dera_nocache_over_aligned"] = tps["dera_nocache"] / tps["aligned"]
        line = (
            f"batch {bs}: aligned {tps['aligned']:.0f} tok/s, DeRa {tps['dera']:.0f} tok/s "
            f"({row['dera_over_aligned']:.2f}x the aligned model; limit 0.5x), DeRa without the reference cache "
            f"{tps['dera_nocache']:.0f} tok/s"
        )
        if "trl" in tps:
            row["dera_over_trl"] = tps["dera"] / tps["trl"]
            row["tokens_equal_trl"] = bool(torch.equal(outs["dera"], outs["trl"]))
            line += f", TRL {tps['trl']:.0f} tok/s (DeRa {row['dera_over_trl']:.2f}x TRL"
            line += f", tokens equal: {row['tokens_equal_trl']})"
        print(line)
        rows.append(row)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out) / f"{stamp}-bench-dera"
    atomic_write_json(out / "results.json", {"args": vars(args), "env": environment(), "rows": rows})
    print(f"saved {out / 'results.json'}")
    return 0


def plain_generate(model, ids, mask, new_tokens):
    """The aligned model alone, greedy, exactly ``new_tokens`` tokens.

    Parameters
    ----------
    model : transformers.PreTrainedModel
    ids, mask : torch.Tensor
    new_tokens : int

    Returns
    -------
    torch.Tensor
    """
    from transformers import GenerationConfig

    cfg = GenerationConfig(max_new_tokens=new_tokens, do_sample=False, pad_token_id=0, eos_token_id=None)
    saved, model.generation_config = model.generation_config, cfg
    try:
        with torch.no_grad():
            return model.generate(input_ids=ids, attention_mask=mask, generation_config=cfg)
    finally:
        model.generation_config = saved


def trl_wrapper():
    """TRL's ``GeometricMixtureWrapper`` class, or None when TRL (<= 1.13) is not importable.

    Returns
    -------
    type or None
    """
    for where in ("trl.experimental.nash_md.nash_md_trainer", "trl.models.modeling_base", "trl.models"):
        try:
            module = importlib.import_module(where)
        except Exception:  # noqa: BLE001 - absent, or a TRL that does not import beside our pins
            continue
        if hasattr(module, "GeometricMixtureWrapper"):
            return module.GeometricMixtureWrapper
    return None


def trl_generate(wrapper_cls, aligned, ref, ids, mask, lam, new_tokens):
    """Greedy decoding through TRL's wrapper (``mixture_coef = 1 - lam``, no cache).

    Parameters
    ----------
    wrapper_cls : type
    aligned, ref : transformers.PreTrainedModel
    ids, mask : torch.Tensor
    lam : float
    new_tokens : int

    Returns
    -------
    torch.Tensor
    """
    from transformers import GenerationConfig

    cfg = GenerationConfig(
        max_new_tokens=new_tokens, do_sample=False, use_cache=False, pad_token_id=0, eos_token_id=None
    )
    wrapper = wrapper_cls(aligned, ref, cfg, mixture_coef=1.0 - lam, device=ids.device)
    with torch.no_grad():
        return wrapper.generate(input_ids=ids, attention_mask=mask, generation_config=cfg)


if __name__ == "__main__":
    raise SystemExit(main())
