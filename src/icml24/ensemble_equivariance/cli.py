"""``icml24 ensemble-equivariance``: member and ensemble OSP (orbit same prediction) vs ensemble size on a data
set, and the plot, written to a new run directory.

:func:`register` adds the verb to the core command line; :func:`osp_command` runs it. Bad input raises
:class:`~icml24.errors.InputError` (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse

from ..validation import check_int, check_seed
from ..verbs import add_out_argument, elapsed, finish_run, start_run

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
        help="orbit same prediction (OSP) of members and of the ensemble mean vs ensemble size, trained with full C4 "
        "or D4 augmentation",
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
    p.add_argument("--data", default="fashion-mnist", choices=DATA, help="data set")
    p.add_argument("--group", default="c4", choices=("c4", "d4"), help="c4: rotations; d4: rotations and flips")
    p.add_argument("--members", type=int, default=16, help="ensemble size M")
    p.add_argument("--width", type=int, default=64, help="hidden units of the MLP members")
    p.add_argument("--steps", type=int, default=150, help="full-batch gradient steps")
    p.add_argument("--n-train", type=int, default=300, help="training images before augmentation")
    p.add_argument("--n-test", type=int, default=300, help="test images")
    p.add_argument("--seed", type=int, default=0, help="seeds the data split and the members' initialisation")
    add_out_argument(p)
    return p


def osp_command(args: argparse.Namespace) -> int:
    """Run the verb: print the OSP of members and sub-ensembles on test images and noise; write ``results.json``,
    ``report.md`` and ``osp.png`` to a new run directory under ``--out``.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    from .curves import osp_curve, osp_figure

    check_int(args.members, "--members", min_val=1)
    check_int(args.width, "--width", min_val=1)
    check_int(args.steps, "--steps", min_val=0)
    check_int(args.n_train, "--n-train", min_val=1)
    check_int(args.n_test, "--n-test", min_val=1)
    seed = check_seed(args.seed, "--seed")
    g = args.group.upper()
    run = start_run(
        args,
        "ensemble-equivariance",
        f"train {args.members} MLP members (width {args.width}, {args.steps} steps) on {args.n_train} {args.data} "
        f"images x {g}, then count their OSP on {args.n_test} test images and on noise",
    )
    with elapsed(f"training {args.members} members"):
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
    lines = [
        f"{args.data}: {g}, M={args.members}, width={args.width}, steps={args.steps}, seed={seed}",
        f"accuracy: ensemble {r['acc']:.3f}, mean member {r['member_acc']:.3f}",
        f"OSP = orbit same prediction: of the {r['order']} elements g of {g}, how many give argmax f(g x) = "
        f"argmax f(x) (1..{r['order']}; {r['order']} = invariant)",
        f"{'M':>11} {'OSP test':>9} {'OSP noise':>10}",
    ]
    for s, a, b in zip(r["sizes"], r["test"], r["noise"]):
        label = "1 (members)" if s == 1 else str(s)
        lines.append(f"{label:>11} {a:>9.3f} {b:>10.3f}")
    print("\n".join(lines), flush=True)
    fig = osp_figure(
        {"test": r["test"], "noise": r["noise"]},
        r["sizes"],
        order=r["order"],
        title=f"{args.data}, {g}, seed {seed}",
    )
    results = {
        "data": args.data,
        "group": args.group,
        "order": r["order"],
        "members": args.members,
        "seed": seed,
        "accuracy_ensemble": r["acc"],
        "accuracy_member_mean": r["member_acc"],
        "sizes": r["sizes"],
        "osp_test": r["test"],
        "osp_noise": r["noise"],
    }
    finish_run(run, results, lines, figures={"osp": fig})
    return 0


__all__ = ["register", "add_arguments", "osp_command"]
