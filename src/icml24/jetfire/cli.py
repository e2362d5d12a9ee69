"""``icml24 jetfire train``: train the char-level GPT on tiny Shakespeare with Jetfire (INT8 data flow, per-block
quantization) and, from the same initialisation on the same batches, in FP32; print both losses and write them,
with a plot of the loss curves, to a new run directory under ``--out``.
"""

from __future__ import annotations

import argparse

from ..validation import check_int, check_seed
from ..verbs import add_out_argument, finish_run, start_run

DATASETS = ("shakespeare",)


def register(subparsers, parents) -> None:
    """Add ``icml24 jetfire`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    p = subparsers.add_parser("jetfire", parents=parents, help="INT8 transformer training with per-block quantization")
    sub = p.add_subparsers(dest="jetfire_command", required=True)
    t = sub.add_parser("train", parents=parents, help="train the tiny char GPT with Jetfire and with FP32")
    add_arguments(t)
    t.set_defaults(func=train_command)


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the verb's arguments.

    Parameters
    ----------
    p : argparse.ArgumentParser

    Returns
    -------
    argparse.ArgumentParser
        ``p`` itself.
    """
    p.add_argument("--data", default="shakespeare", choices=DATASETS, help="tiny Shakespeare from the data root")
    p.add_argument("--steps", type=int, default=500, help="training steps")
    p.add_argument("--batch-size", type=int, default=16, help="sequences of 64 characters per step")
    p.add_argument("--layers", type=int, default=4, help="transformer blocks")
    p.add_argument("--width", type=int, default=128, help="model width d (a multiple of 4: 4 heads)")
    p.add_argument("--block-size", type=int, default=32, help="quantization block side")
    p.add_argument("--no-fp32", action="store_true", help="skip the FP32 reference run")
    p.add_argument("--seed", type=int, default=0, help="seed of the initialisation and the batches")
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N, or auto (CUDA when present)")
    add_out_argument(p)
    return p


def train_command(args: argparse.Namespace) -> int:
    """Run the verb.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    steps = check_int(args.steps, "--steps", min_val=1)
    bs = check_int(args.batch_size, "--batch-size", min_val=1)
    layers = check_int(args.layers, "--layers", min_val=1)
    width = check_int(args.width, "--width", min_val=4)
    seed = check_seed(args.seed, "--seed")
    from ..errors import InputError

    if width % 4:
        raise InputError(f"--width must be a multiple of 4 (4 heads), got {width}")
    import copy
    import sys
    import time

    from tqdm.auto import tqdm

    from ..nn.lm import TrainConfig, corpus_batches, tiny_gpt2, train_lm
    from .experiments import shakespeare_ids, val_loss
    from .layers import convert
    from .quant import check_block_size

    block = check_block_size(args.block_size, "--block-size")
    from ..validation import check_device

    device = check_device(args.device, "--device")
    train_ids, val_ids, alphabet = shakespeare_ids()
    run = start_run(
        args,
        "jetfire-train",
        f"train the char GPT ({layers} x d={width}) on tiny Shakespeare for {steps} steps of {bs} with Jetfire "
        f"(INT8, {block}x{block} blocks){'' if args.no_fp32 else ' and in FP32 from the same start'}, on {device}",
    )
    base = tiny_gpt2(len(alphabet), n_positions=64, n_embd=width, n_layer=layers, n_head=4, seed=seed)
    cfg = TrainConfig(steps=steps, batch_size=bs, lr=2e-3, min_lr=2e-4, warmup=10, log_every=0, seed=seed)
    batches = corpus_batches(train_ids, 64)
    base = base.to(device)
    runs = {"jetfire": convert(base, block_size=block, seed=seed)}
    if not args.no_fp32:
        runs["fp32"] = copy.deepcopy(base)
    print(
        f"tiny Shakespeare: {len(alphabet)} characters; GPT {layers} x d={width}, context 64, {steps} steps of {bs}, "
        f"on {device}"
    )
    results = {}
    for name, model in runs.items():
        bar = tqdm(total=steps, desc=name, unit="step", file=sys.stderr, disable=None)

        def counted(gen, size, bar=bar):
            bar.update(1)
            return batches(gen, size)

        t0 = time.perf_counter()
        try:
            res = train_lm(model, counted, cfg)
        finally:
            bar.close()
        results[name] = (res.losses, val_loss(model, val_ids, 64, 8), time.perf_counter() - t0)
    every = max(1, steps // 10)
    lines = [f"{'step':>6} " + " ".join(f"{n + ' loss':>13}" for n in results)]
    for i in range(every - 1, steps, every):
        lines.append(f"{i + 1:>6} " + " ".join(f"{results[n][0][i]:>13.4f}" for n in results))
    for name, (_, val, sec) in results.items():
        lines.append(f"{name}: validation loss {val:.4f}, {sec:.1f} s")
    numbers = {
        "device": str(device),
        **{f"{n}_val_loss": v for n, (_, v, _) in results.items()},
        **{f"{n}_seconds": t for n, (_, _, t) in results.items()},
        "train_losses": {n: losses for n, (losses, _, _) in results.items()},
    }
    if "fp32" in results:
        gap = (results["jetfire"][1] - results["fp32"][1]) / results["fp32"][1]
        lines.append(f"jetfire vs fp32: validation loss {gap:+.2%}")
        numbers["val_loss_gap"] = gap
    print("\n".join(lines))
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.8))
    ax = fig.subplots()
    for name, (losses, _, _) in results.items():
        ax.plot(range(1, len(losses) + 1), losses, label=name)
    ax.set(title=f"char GPT {layers} x d={width} on tiny Shakespeare", xlabel="step", ylabel="training loss")
    ax.legend()
    finish_run(run, numbers, lines, figures={"loss": fig})
    return 0


__all__ = ["register", "add_arguments", "train_command"]
