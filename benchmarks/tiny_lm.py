"""Training and greedy-decoding tokens per second for each child shape of the claims (randomly initialised:
speed does not depend on the weights), as ratios to the shallow 2-layer model, and the DDP speed-up of the
recipe's trainer with 2 processes (gloo, CPU) against 1 on the same global batches.

Run: ``python benchmarks/tiny_lm.py [--threads 1] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

SHAPES = {  # name: (layers, width, heads, ffn)
    "shallow 2x128": (2, 128, 4, 512),
    "deep 8x76": (8, 76, 2, 304),
    "inherited 4x128": (4, 128, 2, 384),
}
VOCAB = 4096


def _model(layers: int, width: int, heads: int, ffn: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=width,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        intermediate_size=ffn,
        max_position_embeddings=256,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).eval()


def _ddp_worker(out: str, steps: int) -> None:
    import torch.distributed as dist

    from icml24.tiny_lm import recipe, train_on_batches

    if "RANK" in os.environ:
        dist.init_process_group("gloo")
    model = _model(*SHAPES["inherited 4x128"])
    batches = torch.randint(VOCAB, (steps, 16, 64), generator=torch.Generator().manual_seed(0))
    res = train_on_batches(model, batches, recipe(steps, lr=1e-3, batch_size=16))
    if not dist.is_initialized() or dist.get_rank() == 0:
        Path(out).write_text(json.dumps({"tokens_per_second": res.tokens_per_second, "world": res.world_size}))
    if dist.is_initialized():
        dist.destroy_process_group()


def main() -> None:
    """Run the benchmark and print the table (results saved under ``runs/``)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ddp-worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--ddp-steps", type=int, default=8)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.ddp_worker:
        _ddp_worker(args.ddp_worker, args.ddp_steps)
        return
    from icml24.tiny_lm import count_parameters, greedy_decode_speed, recipe, train_on_batches

    print(f"threads {torch.get_num_threads()}, vocabulary {VOCAB}, batches of 8 x 64 tokens, decoding 32 tokens")
    print(
        f"{'shape':>16} {'params':>9} {'train tok/s':>12} {'decode tok/s':>13} {'train ratio':>12} {'decode ratio':>13}"
    )
    rows = []
    for name, shape in SHAPES.items():
        model = _model(*shape)
        batches = torch.randint(VOCAB, (4, 8, 64), generator=torch.Generator().manual_seed(1))
        train = [
            train_on_batches(model, batches, recipe(4, lr=1e-4, batch_size=8)).tokens_per_second
            for _ in range(args.repeats)
        ]
        prompt = batches[0, :1, :8]
        dec = [greedy_decode_speed(model, prompt, new_tokens=32) for _ in range(args.repeats)]
        rows.append(
            {
                "shape": name,
                "params": count_parameters(model),
                "train": statistics.median(train),
                "decode": statistics.median(dec),
            }
        )
    for r in rows:
        print(
            f"{r['shape']:>16} {r['params']:>9,} {r['train']:>12.0f} {r['decode']:>13.1f} "
            f"{r['train'] / rows[0]['train']:>12.2f} {r['decode'] / rows[0]['decode']:>13.2f}"
        )
    speed = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in (1, 2):
            out = str(Path(tmp) / f"ddp{n}.json")
            cmd = [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--standalone",
                "--nproc_per_node",
                str(n),
                __file__,
                "--ddp-worker",
                out,
                "--threads",
                "1",
                "--ddp-steps",
                str(args.ddp_steps),
            ]
            subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            speed[n] = json.loads(Path(out).read_text())["tokens_per_second"]
    print(
        f"DDP (gloo, 1 thread per process), global batch 16 x 64: 1 process {speed[1]:.0f} tok/s, "
        f"2 processes {speed[2]:.0f} tok/s, speed-up {speed[2] / speed[1]:.2f}x"
    )
    out = Path("runs") / "bench-tiny_lm.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"threads": args.threads, "rows": rows, "ddp_tokens_per_second": speed}, indent=1))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
