"""``icml24 c3po learn``: learn one sentence of feedback on the assistant world with C3PO and its peers
(in-context, SCD, SCD + negatives, DPO), print adherence and overgeneralization, and write the Pareto plot into a
fresh run directory.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import InputError
from ..validation import check_seed

WORLDS = ("assistant",)
#: The smollm2 arm's sizes at each --scale (keywords of :func:`icml24.c3po.smollm2.smollm2_arm`; quick: its defaults).
SMOLLM2_SIZES = {
    "smoke": {"per_category": 1, "n_eval": 4, "max_new_tokens": 24},
    "quick": {"per_category": 3, "n_eval": 16, "max_new_tokens": 40},
}


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
    from ..verbs import add_out_argument

    p.add_argument(
        "--feedback",
        default="use & instead of and in dms to my colleagues",
        help="one sentence 'use X instead of Y in <domain>' (X/Y: &/and or u/you; domain e.g. 'recipes')",
    )
    p.add_argument("--world", default="assistant", choices=WORLDS, help="the templated assistant world")
    p.add_argument(
        "--scale",
        default="quick",
        choices=("smoke", "quick"),
        help="data and step sizes (smollm2: training prompts per category, held-out prompts, answer length)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the base model, the data, samplers and adapters")
    add_out_argument(p)
    p.add_argument(
        "--model",
        default="tiny",
        choices=("tiny", "smollm2"),
        help="tiny: the world's pretrained tiny LM and every baseline; smollm2: C3PO with LoRA on the real "
        "SmolLM2-135M-Instruct (offline), against the base model and in-context, reported",
    )
    p.add_argument("--steps", type=int, default=30, help="C3PO steps of the smollm2 arm")
    p.add_argument("--device", default="cpu", help="smollm2 arm: cpu, cuda, cuda:N or auto (CUDA when present)")
    return p


def _table(m: dict, methods, last: str, fmt) -> list[str]:
    lines = [f"{'method':>14} {'adherence':>10} {'near':>6} {'out':>6} {'overgen':>8} {last}"]
    for method in methods:
        lines.append(
            f"{method:>14} {m[f'{method}_adherence']:>10.3f} {m[f'{method}_near']:>6.3f} "
            f"{m[f'{method}_out']:>6.3f} {m[f'{method}_overgen']:>8.3f} {fmt(method)}"
        )
    return lines


def learn_command(args: argparse.Namespace) -> int:
    """Run the verb: the tiny world's comparison (default) or the smollm2 arm, into a new run directory.

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
    from .scopes import parse_feedback

    key = parse_feedback(args.feedback)
    if args.model == "smollm2":
        return _smollm2(args, key, seed)
    import time

    from tqdm.auto import tqdm

    from ..claims import Scale
    from ..runs import artifacts_to
    from ..threads import single_thread
    from ..verbs import finish_run, scale_note, start_run
    from .experiments import PARETO_METHODS, compare
    from .world_run import WorldRun, setting

    scale = Scale.parse(args.scale)
    s = setting(scale)
    run = start_run(
        args,
        "c3po-learn",
        f"c3po learn '{args.feedback}' on the assistant world (scale {scale.value}): pretrain a tiny Llama "
        f"({s.pretrain_steps} steps), then C3PO, SCD, SCD + negatives and DPO ({s.steps} LoRA steps each), "
        f"scored on {s.n_eval} held-out prompts of each kind",
    )
    t0 = time.perf_counter()
    world_run = WorldRun(scale, seed)
    methods = ("base",) + PARETO_METHODS
    with single_thread():  # as compare() runs them, in its order: the same numbers
        bar = tqdm(methods, desc="c3po learn", unit="method", file=sys.stderr, disable=None)
        for method in bar:
            bar.set_postfix_str("pretraining the base" if method == "base" else method)
            world_run.scores(method, key)
        bar.close()
    with artifacts_to(run.path):
        m = compare(key, scale, seed, run=world_run)
    m["seconds"] = time.perf_counter() - t0
    lines = [f"feedback: {args.feedback}"]
    lines += _table(
        m, methods, f"{'KL out':>7}", lambda k: "" if m.get(f"{k}_kl_out") is None else f"{m[f'{k}_kl_out']:7.3f}"
    )
    note = scale_note(scale.value)
    if note:
        lines.append(note)
    print("\n".join(lines))
    print(f"Pareto plot: {run.path / f'c3po-pareto-seed{seed}.png'}")
    finish_run(run, {"feedback": args.feedback, "key": key, "scale": scale.value, **m}, lines)
    return 0


def _smollm2(args: argparse.Namespace, key: str, seed: int) -> int:
    """The smollm2 arm of the verb (C3PO with LoRA on SmolLM2-135M-Instruct, against the base and in-context)."""
    from ..validation import check_device, check_int
    from ..verbs import elapsed, finish_run, scale_note, start_run
    from .smollm2 import smollm2_arm

    steps = check_int(args.steps, "--steps", min_val=1)
    device = check_device(args.device, "--device")
    sizes = SMOLLM2_SIZES[args.scale]
    run = start_run(
        args,
        "c3po-learn-smollm2",
        f"SmolLM2-135M-Instruct + LoRA: C3PO for {steps} steps on '{args.feedback}' on {device} "
        f"(scale {args.scale}: training prompts per category {sizes['per_category']}, held-out prompts of each kind "
        f"{sizes['n_eval']}, answers up to {sizes['max_new_tokens']} tokens); load, sample the data, train, "
        "then evaluate three models",
    )
    with elapsed("c3po learn --model smollm2"):  # smollm2_arm has no per-step hook: elapsed time only
        m = smollm2_arm(steps, key=key, seed=seed, device=device, **sizes)
    lines = [
        f"loaded in {m['load_seconds']:.0f} s; data {m['data_seconds']:.0f} s ({m['rows']:.0f} rows); "
        f"{m['seconds_per_step']:.1f} s a step"
    ]
    lines += _table(
        m, ("base", "in_context", "c3po"), f"{'new-word share':>15}", lambda k: f"{m[f'{k}_new_share']:>15.3f}"
    )
    lines.append(f"C3PO's out-of-scope KL to the base: {m['c3po_kl_out']:.4f} nats")
    note = scale_note(args.scale)
    if note:
        lines.append(note)
    print("\n".join(lines))
    results = {"feedback": args.feedback, "key": key, "scale": args.scale, "steps": steps, **sizes, **m}
    finish_run(run, results, lines)
    return 0


__all__ = ["register", "add_arguments", "learn_command", "SMOLLM2_SIZES"]
