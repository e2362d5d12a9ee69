"""Time per training row of C3PO against DPO on the same rows (tiny Llama of the assistant world, LoRA r = 8):
C3PO runs one forward/backward over four sequences per row (chosen, rejected, near-scope, out-of-scope answers)
where DPO runs two; both read the reference log-probabilities cached once with the adapter disabled. The limit
the method's authors give: about 1.5-2x a DPO step.

Run: ``python benchmarks/c3po.py [--threads 1] [--repeats 3] [--steps 20]``.
"""

from __future__ import annotations

import argparse
import json
import statistics

import torch


def main() -> None:
    """Run the benchmark and print the table (results saved under ``runs/``)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import time

    from icml24.c3po import train_feedback
    from icml24.c3po.c3po import reference_logprobs
    from icml24.c3po.world_run import WorldRun, lora_config
    from icml24.claims import Scale

    run = WorldRun(Scale.SMOKE, 0)
    model, tok, _ = run.base()
    data = run.data("ampersand")
    cfg = lora_config(0)
    rows = len(data.rows())
    print(f"threads {torch.get_num_threads()}, {rows} rows, batches of {cfg.batch_size} rows, {args.steps} steps")
    times: dict[str, list[float]] = {m: [] for m in ("dpo", "c3po", "scd", "scd_negatives")}
    for _ in range(args.repeats):
        for m in times:
            res = train_feedback(model, tok, data, method=m, config=cfg, steps=args.steps)
            times[m].append(res.seconds / (args.steps * cfg.batch_size) * 1e3)
    from icml24.c3po import add_lora
    from icml24.c3po.encoding import encode

    policy = add_lora(model, cfg)
    enc = [(encode(tok, p, y1, cfg), encode(tok, p, y0, cfg)) for (p, y0, y1), _, _ in data.rows()]
    t0 = time.perf_counter()
    reference_logprobs(policy, [e[0] for e in enc], [e[1] for e in enc], tok.pad_token_id)
    ref_ms = (time.perf_counter() - t0) / rows * 1e3
    med = {m: statistics.median(v) for m, v in times.items()}
    print(f"{'method':>14} {'ms per row':>11} {'/ DPO':>7}")
    for m, v in med.items():
        print(f"{m:>14} {v:>11.2f} {v / med['dpo']:>7.2f}")
    print(f"reference log-probs (adapter disabled, once per row, included above): {ref_ms:.2f} ms per row")
    print(f"C3PO / DPO per row: {med['c3po'] / med['dpo']:.2f} (the limit: about 1.5-2)")
    from pathlib import Path

    out = Path("runs") / "bench-c3po.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"threads": args.threads, "ms_per_row": med, "reference_ms_per_row": ref_ms}, indent=1))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
