"""``icml24 deep-align cnn``: Deep-Align on a zoo of small CNNs (the paper's CNN setting, on Fashion-MNIST from
the data root: CIFAR-10 is not available offline). Trains the zoo and the aligner, aligns every pair of held-out
CNNs with Deep-Align (trained and untrained), Weight Matching and Deep-Align + WM, and prints the barriers and the
permutation recovery on permuted copies; the metrics (``results.json``), the table (``report.md``) and a plot of
the barriers and recoveries (``barriers.png``) go into a fresh run directory ``<out>/<UTC time>-deep-align-cnn/``.
"""

from __future__ import annotations

import argparse

from ..validation import check_choice, check_int, check_seed
from ..verbs import add_out_argument

SCALES = ("smoke", "quick", "paper")
METHODS = (
    ("none", "no alignment"),
    ("untrained", "Deep-Align untrained"),
    ("da", "Deep-Align"),
    ("wm", "Weight Matching"),
    ("dawm", "Deep-Align + WM"),
)


def register(subparsers, parents) -> None:
    """Add ``icml24 deep-align`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The core parser's subcommands.
    parents : list of argparse.ArgumentParser
        Shared options.
    """
    p = subparsers.add_parser("deep-align", parents=parents, help="Deep-Align weight-space alignment")
    sub = p.add_subparsers(dest="deep_align_command", required=True)
    c = sub.add_parser("cnn", parents=parents, help="align held-out pairs of a CNN zoo trained on Fashion-MNIST")
    add_arguments(c)
    c.set_defaults(func=cnn_command)


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the verb's arguments.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The verb's parser.

    Returns
    -------
    argparse.ArgumentParser
        ``p`` itself.
    """
    p.add_argument(
        "--scale",
        default="quick",
        help=f"sizes of the zoo and the aligner: {', '.join(SCALES)} (smoke only shows the verb runs)",
    )
    p.add_argument("--nets", type=int, default=None, help="networks in the zoo (default: the scale's)")
    p.add_argument("--test", type=int, default=None, help="held-out networks, all pairs aligned (default: the scale's)")
    p.add_argument("--zoo-steps", type=int, default=None, help="Adam steps of each CNN (default: the scale's)")
    p.add_argument("--train-steps", type=int, default=None, help="Deep-Align training steps (default: the scale's)")
    p.add_argument("--seed", type=int, default=0, help="seed of the zoo, the aligner and the pairs")
    add_out_argument(p)
    return p


def _step_bar(zoo_steps: int, train_steps: int, n_nets: int):
    """A tqdm bar on stderr over the zoo's and the aligner's optimizer steps (silent off a terminal), and its close.

    Every ``torch.optim`` step in the block advances it (the zoo's Adam steps train all CNNs at once, then the
    aligner's); when both are done it says that the held-out pairs are being aligned.
    """
    import sys

    from torch.optim.optimizer import register_optimizer_step_post_hook
    from tqdm.auto import tqdm

    total = zoo_steps + train_steps
    bar = tqdm(total=total, desc=f"training {n_nets} CNNs", unit="step", file=sys.stderr, disable=None, leave=False)

    def step(*_) -> None:
        bar.update()
        if bar.n == zoo_steps:
            bar.set_description("training the aligner")
        if bar.n == total:
            bar.set_description("aligning and interpolating the held-out pairs")

    handle = register_optimizer_step_post_hook(step)

    def close() -> None:
        handle.remove()
        bar.close()

    return close


def _figure(m: dict):
    """Barriers (mean +- s.e. over held-out pairs) and permutation recovery of each method, on a Figure."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.8))
    ax = fig.subplots(1, 2)
    names = [name for _, name in METHODS]
    ax[0].bar(names, [m[f"{k}_barrier"] for k, _ in METHODS], yerr=[m[f"{k}_barrier_se"] for k, _ in METHODS])
    ax[0].set(ylabel="test-loss barrier", title=f"barrier of {m['pairs']:.0f} held-out pairs (mean +- s.e.)")
    ax[0].tick_params(axis="x", labelrotation=30, labelsize=7)
    kinds = (("exact copies", ""), (f"noisy copies ({m['noise_level']:g} x std)", "noisy_"))
    rec = (("da", "Deep-Align"), ("untrained", "Deep-Align untrained"), ("wm", "Weight Matching"))
    width = 0.8 / len(rec)
    for j, (k, name) in enumerate(rec):
        xs = [i + (j - 1) * width for i in range(len(kinds))]
        ax[1].bar(xs, [m[f"{pre}{k}_perm_acc"] for _, pre in kinds], width, label=name)
    ax[1].set_xticks(range(len(kinds)), [label for label, _ in kinds])
    ax[1].set(ylabel="permutation accuracy", ylim=(0, 1.25), title="recovering a known permutation")
    ax[1].legend(fontsize=7, loc="upper center", ncol=3)
    fig.tight_layout()
    return fig


def cnn_command(args: argparse.Namespace) -> int:
    """Run the verb.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Returns
    -------
    int
        0.
    """
    scale = check_choice(args.scale, "--scale", SCALES)
    seed = check_seed(args.seed, "--seed")
    over: dict = {}
    if args.nets is not None:
        over["n_nets"] = check_int(args.nets, "--nets", min_val=4)
    if args.test is not None:
        over["n_test"] = check_int(args.test, "--test", min_val=2)
    if args.zoo_steps is not None:
        over["zoo_steps"] = check_int(args.zoo_steps, "--zoo-steps", min_val=1)
    import dataclasses
    import time

    from ..claims import Scale
    from ..verbs import finish_run, scale_note, start_run
    from .experiments import CNN_SETTINGS, run_cnn

    sc = Scale[scale.upper()]
    if args.train_steps is not None:
        steps = check_int(args.train_steps, "--train-steps", min_val=1)
        train = CNN_SETTINGS[sc].train
        over["train"] = {**train, "steps": steps, "eval_every": min(train["eval_every"], steps)}
    st = dataclasses.replace(CNN_SETTINGS[sc], **over)
    pairs = st.n_test * (st.n_test - 1) // 2
    run = start_run(
        args,
        "deep-align-cnn",
        f"deep-align cnn (scale {scale}): train {st.n_nets} CNNs on Fashion-MNIST ({st.zoo_steps} steps) and "
        f"Deep-Align ({st.train['steps']} steps), then align {pairs} held-out pairs",
    )
    close = _step_bar(st.zoo_steps, st.train["steps"], st.n_nets)
    t = time.perf_counter()
    try:
        m = run_cnn(sc, seed, **over)
    finally:
        close()
    wall = time.perf_counter() - t
    lines = [
        f"CNN zoo: {m['n_nets']:.0f} CNNs on Fashion-MNIST (test accuracy {m['zoo_test_acc']:.3f}), "
        f"{m['pairs']:.0f} held-out pairs, {m['eval_images']:.0f} test images; {wall:.0f} s",
        f"{'method':<22}{'barrier':>10}{'+- s.e.':>10}",
        *(f"{name:<22}{m[k + '_barrier']:>10.4f}{m[k + '_barrier_se']:>10.4f}" for k, name in METHODS),
        f"untrained - DA {m['untrained_minus_da']:+.4f} +- {m['untrained_minus_da_se']:.4f}; "
        f"DA - WM {m['da_minus_wm']:+.4f} +- {m['da_minus_wm_se']:.4f}",
        f"permutation recovery, exact copies: DA {m['da_perm_acc']:.3f}, untrained {m['untrained_perm_acc']:.3f}, "
        f"WM {m['wm_perm_acc']:.3f}; noisy copies ({m['noise_level']:g} x std): DA {m['noisy_da_perm_acc']:.3f}, "
        f"untrained {m['noisy_untrained_perm_acc']:.3f}, WM {m['noisy_wm_perm_acc']:.3f}",
    ]
    note = scale_note(scale)
    if note:
        lines.append(note)
    print("\n".join(lines))
    results = {"scale": scale, "seed": seed, "overrides": over, "metrics": m}
    finish_run(run, results, lines, figures={"barriers": _figure(m)})
    return 0


__all__ = ["register", "add_arguments", "cnn_command"]
