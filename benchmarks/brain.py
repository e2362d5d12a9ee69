"""Time per BRAIn training step at n = 4, 8, 16 against a DPO step on the same responses, where the time goes
(sampling, prior scoring, loss forward/backward), and the ratio to the limit: one forward/backward over the
n responses.

Run: ``python benchmarks/brain.py [--threads 1] [--repeats 5]``.
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
    from icml24.brain import brain_dpo_loss, brain_loss, sample_responses
    from icml24.brain.world import lang_prompts
    from icml24.data.text import EnumerableLanguage
    from icml24.nn.lm import sequence_logprobs, tiny_gpt2

    lang = EnumerableLanguage(symbols="abcd", prompt_len=2, response_len=4, seed=0)
    model = tiny_gpt2(lang.vocab_size, n_positions=16, n_embd=64, n_layer=2, n_head=4, tokenizer=lang.tokenizer)
    prompts = lang_prompts(lang)[:8]
    Tp = prompts.size(1)
    gen = torch.Generator().manual_seed(0)
    rows = []
    print(f"threads {torch.get_num_threads()}, 8 prompts per step, responses of 4 tokens, tiny GPT-2 (d=64, 2 layers)")
    print(f"{'n':>3} {'sample ms':>10} {'score ms':>9} {'brain f/b ms':>13} {'dpo f/b ms':>11} {'brain/limit':>12}")
    for n in (4, 8, 16):
        t = {"sample": [], "score": [], "brain": [], "dpo": [], "limit": []}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            s = sample_responses(model, prompts, n, 4, generator=gen, allowed_ids=lang.symbol_ids)
            t1 = time.perf_counter()
            with torch.no_grad():
                prior = sequence_logprobs(model, s["input_ids"], start=Tp, allowed_ids=lang.symbol_ids).view(8, n)
            t2 = time.perf_counter()
            r = torch.randn(8, n)
            pol = sequence_logprobs(model, s["input_ids"], start=Tp, allowed_ids=lang.symbol_ids).view(8, n)
            brain_loss(pol, s["logprob"].view(8, n), prior, r).backward()
            t3 = time.perf_counter()
            pol = sequence_logprobs(model, s["input_ids"], start=Tp, allowed_ids=lang.symbol_ids).view(8, n)
            pol.sum().backward()  # the limit: one forward/backward over the n responses
            t4 = time.perf_counter()
            pol = sequence_logprobs(model, s["input_ids"][: 8 * 2], start=Tp, allowed_ids=lang.symbol_ids).view(8, 2)
            brain_dpo_loss(pol, prior[:, :2], r[:, :2]).backward()
            t5 = time.perf_counter()
            for k, v in zip(t, (t1 - t0, t2 - t1, t3 - t2, t5 - t4, t4 - t3)):
                t[k].append(v * 1e3)
            model.zero_grad(set_to_none=True)
        med = {k: statistics.median(v) for k, v in t.items()}
        rows.append({"n": n, **med})
        print(
            f"{n:>3} {med['sample']:>10.2f} {med['score']:>9.2f} {med['brain']:>13.2f} {med['dpo']:>11.2f} "
            f"{med['brain'] / med['limit']:>12.2f}"
        )
    from pathlib import Path

    out = Path("runs") / "bench-brain.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"threads": args.threads, "rows": rows}, indent=1))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
