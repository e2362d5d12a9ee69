"""``icml24 c3po learn``: learn one sentence of feedback on the assistant world with C3PO and its peers
(in-context, SCD, SCD + negatives, DPO), print adherence and overgeneralization, and write the Pareto plot.
"""

from __future__ import annotations

import argparse

from ..errors import InputError
from ..validation import check_seed

WORLDS = ("assistant",)


def register(subparsers, parents) -> None:
    """Add ``icml24 c3po`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    p = subparsers.add_parser("c3po", parents=parents, help="learn verbal feedback without overgeneralizing (C3PO)")
    sub = p.add_subparsers(dest="c3po_command", required=True)
    t = sub.add_parser("learn", parents=parents, help="learn one feedback, compare with the peers, plot")
    add_arguments(t)
    t.set_defaults(func=learn_command)


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
    p.add_argument(
        "--feedback",
        default="use & instead of and in dms to my colleagues",
        help="one sentence 'use X instead of Y in <domain>' (X/Y: &/and or u/you; domain e.g. 'recipes')",
    )
    p.add_argument("--world", default="assistant", choices=WORLDS, help="the templated assistant world")
    p.add_argument("--scale", default="quick", choices=("smoke", "quick"), help="data and step sizes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs", help="folder for the Pareto plot (default runs/)")
    p.add_argument(
        "--model",
        default="tiny",
        choices=("tiny", "smollm2"),
        help="tiny: the world's pretrained tiny LM and every baseline; smollm2: C3PO with LoRA on the real "
        "SmolLM2-135M-Instruct (offline), against the base model and in-context, reported",
    )
    p.add_argument("--steps", type=int, default=30, help="C3PO steps of the smollm2 arm (default 30)")
    p.add_argument(
        "--device", default="cpu", help="smollm2 arm: cpu, cuda, cuda:N or auto (CUDA when present); default cpu"
    )
    return p


def learn_command(args: argparse.Namespace) -> int:
    """Run the verb.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    seed = check_seed(args.seed, "--seed")
    if args.world not in WORLDS:
        raise InputError(f"unknown --world {args.world!r}", "use --world assistant")
    from pathlib import Path

    from ..claims import Scale
    from ..runs import artifacts_to
    from .experiments import PARETO_METHODS, compare
    from .scopes import parse_feedback

    key = parse_feedback(args.feedback)
    if args.model == "smollm2":
        from ..validation import check_device, check_int
        from .smollm2 import smollm2_arm

        steps = check_int(args.steps, "--steps", min_val=1)
        device = check_device(args.device, "--device")
        print(f"SmolLM2-135M-Instruct + LoRA: C3PO for {steps} steps on '{args.feedback}' on {device}")
        m = smollm2_arm(steps, key=key, seed=seed, device=device)
        print(
            f"loaded in {m['load_seconds']:.0f} s; data {m['data_seconds']:.0f} s ({m['rows']:.0f} rows); "
            f"{m['seconds_per_step']:.1f} s a step"
        )
        print(f"{'method':>14} {'adherence':>10} {'near':>6} {'out':>6} {'overgen':>8} {'new-word share':>15}")
        for method in ("base", "in_context", "c3po"):
            print(
                f"{method:>14} {m[f'{method}_adherence']:>10.3f} {m[f'{method}_near']:>6.3f} "
                f"{m[f'{method}_out']:>6.3f} {m[f'{method}_overgen']:>8.3f} {m[f'{method}_new_share']:>15.3f}"
            )
        print(f"C3PO's out-of-scope KL to the base: {m['c3po_kl_out']:.4f} nats")
        return 0
    out = Path(args.out) / f"c3po-{key.replace(':', '-')}-seed{seed}"
    out.mkdir(parents=True, exist_ok=True)
    with artifacts_to(out):
        m = compare(key, Scale.parse(args.scale), seed)
    print(f"feedback: {args.feedback}")
    print(f"{'method':>14} {'adherence':>10} {'near':>6} {'out':>6} {'overgen':>8} {'KL out':>7}")
    for method in ("base",) + PARETO_METHODS:
        kl = m.get(f"{method}_kl_out")
        print(
            f"{method:>14} {m[f'{method}_adherence']:>10.3f} {m[f'{method}_near']:>6.3f} "
            f"{m[f'{method}_out']:>6.3f} {m[f'{method}_overgen']:>8.3f} {'' if kl is None else f'{kl:7.3f}'}"
        )
    print(f"Pareto plot: {out / f'c3po-pareto-seed{seed}.png'}")
    return 0


__all__ = ["register", "add_arguments", "learn_command"]
