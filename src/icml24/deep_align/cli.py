"""``icml24 deep-align cnn``: Deep-Align on a zoo of small CNNs (the paper's CNN setting, on Fashion-MNIST from
the data root: CIFAR-10 is not available offline). Trains the zoo and the aligner, aligns every pair of held-out
CNNs with Deep-Align (trained and untrained), Weight Matching and Deep-Align + WM, and prints the barriers and the
permutation recovery on permuted copies; the metrics are written as JSON.
"""

from __future__ import annotations

import argparse

from ..validation import check_choice, check_int, check_seed

SCALES = ("smoke", "quick", "paper")


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
    p.add_argument("--scale", default="quick", help=f"sizes of the zoo and the aligner: {', '.join(SCALES)}")
    p.add_argument("--nets", type=int, default=None, help="networks in the zoo (default: the scale's)")
    p.add_argument("--test", type=int, default=None, help="held-out networks, all pairs aligned (default: the scale's)")
    p.add_argument("--zoo-steps", type=int, default=None, help="Adam steps of each CNN (default: the scale's)")
    p.add_argument("--train-steps", type=int, default=None, help="Deep-Align training steps (default: the scale's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="runs", help="folder of the JSON metrics (default runs/)")
    return p


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
    import time
    from pathlib import Path

    from ..claims import Scale
    from ..runs import atomic_write_json
    from .experiments import CNN_SETTINGS, run_cnn

    sc = Scale[scale.upper()]
    if args.train_steps is not None:
        steps = check_int(args.train_steps, "--train-steps", min_val=1)
        train = CNN_SETTINGS[sc].train
        over["train"] = {**train, "steps": steps, "eval_every": min(train["eval_every"], steps)}
    t = time.perf_counter()
    m = run_cnn(sc, seed, **over)
    wall = time.perf_counter() - t
    print(
        f"CNN zoo: {m['n_nets']:.0f} CNNs on Fashion-MNIST (test accuracy {m['zoo_test_acc']:.3f}), "
        f"{m['pairs']:.0f} held-out pairs, {m['eval_images']:.0f} test images; {wall:.0f} s"
    )
    print(f"{'method':<22}{'barrier':>10}{'+- s.e.':>10}")
    for k, name in (
        ("none", "no alignment"),
        ("untrained", "Deep-Align untrained"),
        ("da", "Deep-Align"),
        ("wm", "Weight Matching"),
        ("dawm", "Deep-Align + WM"),
    ):
        print(f"{name:<22}{m[k + '_barrier']:>10.4f}{m[k + '_barrier_se']:>10.4f}")
    print(
        f"untrained - DA {m['untrained_minus_da']:+.4f} +- {m['untrained_minus_da_se']:.4f}; "
        f"DA - WM {m['da_minus_wm']:+.4f} +- {m['da_minus_wm_se']:.4f}"
    )
    print(
        f"permutation recovery, exact copies: DA {m['da_perm_acc']:.3f}, untrained {m['untrained_perm_acc']:.3f}, "
        f"WM {m['wm_perm_acc']:.3f}; noisy copies ({m['noise_level']:g} x std): DA {m['noisy_da_perm_acc']:.3f}, "
        f"untrained {m['noisy_untrained_perm_acc']:.3f}, WM {m['noisy_wm_perm_acc']:.3f}"
    )
    out = Path(args.out) / time.strftime("deep_align-cnn-%Y%m%dT%H%M%S", time.gmtime())
    out.mkdir(parents=True, exist_ok=True)
    path = atomic_write_json(out / "metrics.json", {"scale": scale, "seed": seed, "overrides": over, "metrics": m})
    print(f"metrics written to {path}")
    return 0


__all__ = ["register", "add_arguments", "cnn_command"]
