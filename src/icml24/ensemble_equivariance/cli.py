"""``icml24 ensemble-equivariance``: member and ensemble OSP vs ensemble size on a data set, and the plot.

:func:`register` adds the verb to the core command line; :func:`osp_command` runs it. Bad input raises
:class:`~icml24.errors.InputError` (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..validation import check_int, check_seed

DATA = ("fashion-mnist", "digits")


def register(subparsers, parents) -> None:
    """Add ``icml24 ensemble-equivariance`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    p = subparsers.add_parser(
        "ensemble-equivariance",
        parents=parents,
        help="OSP of members and of the ensemble mean vs ensemble size, trained with full C4 or D4 augmentation",
    )
    add_arguments(p)
    p.set_defaults(func=osp_command)


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the verb's arguments (defaults sized for a CPU: 300 images, width 64, 150 full-batch steps).

    Parameters
    ----------
    p : argparse.ArgumentParser

    Returns
    -------
    argparse.ArgumentParser
        ``p`` itself.
    """
    p.add_argument("--data", default="fashion-mnist", choices=DATA, help="data set (default fashion-mnist)")
    p.add_argument("--group", default="c4", choices=("c4", "d4"), help="rotations, or rotations and flips (c4)")
    p.add_argument("--members", type=int, default=16, help="ensemble size M (default 16)")
    p.add_argument("--width", type=int, default=64, help="hidden units of the MLP members (default 64)")
    p.add_argument("--steps", type=int, default=150, help="full-batch gradient steps (default 150)")
    p.add_argument("--n-train", type=int, default=300, help="training images before augmentation (default 300)")
    p.add_argument("--n-test", type=int, default=300, help="test images (default 300)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default="ensemble_equivariance.png", metavar="FILE.png", help="where to save the plot")
    return p


def osp_command(args: argparse.Namespace) -> int:
    """Run the verb: print the OSP of members and sub-ensembles on test images and noise, save the plot.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    import io

    from ..runs import atomic_write_bytes
    from .curves import osp_curve, osp_figure

    check_int(args.members, "--members", min_val=1)
    check_int(args.width, "--width", min_val=1)
    check_int(args.steps, "--steps", min_val=0)
    check_int(args.n_train, "--n-train", min_val=1)
    check_int(args.n_test, "--n-test", min_val=1)
    seed = check_seed(args.seed, "--seed")
    r = osp_curve(
        args.data,
        members=args.members,
        width=args.width,
        steps=args.steps,
        n_train=args.n_train,
        n_test=args.n_test,
        seed=seed,
        group=args.group,
    )
    print(f"{args.data}: {args.group.upper()}, M={args.members}, width={args.width}, steps={args.steps}, seed={seed}")
    print(f"accuracy: ensemble {r['acc']:.3f}, mean member {r['member_acc']:.3f}")
    print(f"{'M':>11} {'OSP test':>9} {'OSP noise':>10}")
    for s, a, b in zip(r["sizes"], r["test"], r["noise"]):
        label = "1 (members)" if s == 1 else str(s)
        print(f"{label:>11} {a:>9.3f} {b:>10.3f}")
    fig = osp_figure(
        {"test": r["test"], "noise": r["noise"]},
        r["sizes"],
        order=r["order"],
        title=f"{args.data}, {args.group.upper()}, seed {seed}",
    )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    path = atomic_write_bytes(Path(args.plot), buf.getvalue())
    print(f"plot: {path}")
    return 0


__all__ = ["register", "add_arguments", "osp_command"]
