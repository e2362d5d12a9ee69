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
    from .experiments import PARETO_METHODS, compare, parse_feedback

    key = parse_feedback(args.feedback)
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
