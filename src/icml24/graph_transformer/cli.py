"""``icml24 graph-transformer``: test accuracy vs labelled nodes for GT+PE, GT without PE and PyG's GCN.

:func:`register` adds the verb to the core command line; :func:`sweep_command` runs it. Bad input raises
:class:`~icml24.errors.InputError` (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

DATA = ("cora", "pattern")


def register(subparsers, parents) -> None:
    """Add ``icml24 graph-transformer`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    p = subparsers.add_parser(
        "graph-transformer",
        parents=parents,
        help="shallow graph transformer: accuracy vs labelled nodes with/without PE vs GCN (table and plot)",
    )
    add_arguments(p)
    p.set_defaults(func=sweep_command)


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
    p.add_argument("--data", default="cora", choices=DATA, help="cora (Planetoid) or pattern (the paper's model)")
    p.add_argument(
        "--labels", default="20,40,80", help="comma-separated label counts (per class on cora; default 20,40,80)"
    )
    p.add_argument("--steps", type=int, default=200, help="SGD steps of each shallow model (default 200)")
    p.add_argument(
        "--peers", default="gcn,gps", help="PyG peers beside the shallow GT: gcn, sage, gps (default gcn,gps)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default="graph_transformer.png", metavar="FILE.png", help="where to save the plot")
    return p


def sweep_command(args: argparse.Namespace) -> int:
    """Run the verb: print one line per label count, the paper's trend beside it, and save the plot.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    import io

    from ..errors import InputError
    from ..runs import atomic_write_bytes
    from .experiments import (
        LABELS,
        PAPER_CORA_FRACTIONS,
        PAPER_TREND,
        discriminative_fractions,
        label_sweep,
        sweep_figure,
    )

    try:
        labels = [int(v) for v in str(args.labels).split(",") if v.strip()]
    except ValueError:
        raise InputError(
            f"--labels {args.labels!r} is not a comma-separated list of integers", "e.g. 20,40,80"
        ) from None
    peers = [v.strip() for v in str(args.peers).split(",") if v.strip()]
    res = label_sweep(args.data, labels, seed=args.seed, steps=args.steps, peers=peers)
    unit = "labels/class" if args.data == "cora" else "labels"
    print(f"{args.data}: test accuracy, seed {args.seed}")
    print(f"{unit:>13} " + " ".join(f"{LABELS[k]:>14}" for k in res))
    for n in sorted(res["pe"]):
        print(f"{n:>13} " + " ".join(f"{res[k][n]:>14.3f}" for k in res))
    mean = {k: sum(v.values()) / len(v) for k, v in res.items()}
    order = " >= ".join(LABELS[k] for k in sorted(mean, key=mean.get, reverse=True))
    print(f"ours (mean over label counts): {order}")
    print(PAPER_TREND)
    if args.data == "cora":
        from ..data import planetoid

        raw = planetoid("cora")
        for rule in ("centroid", "pattern"):
            d = discriminative_fractions(raw.x, raw.y, rule=rule)
            print(f"discriminative fraction per class ({rule} rule): " + " ".join(f"{f:.3f}" for f in d["fractions"]))
        print("paper appendix, Table R1 (rule not stated):      " + " ".join(f"{f:.3f}" for f in PAPER_CORA_FRACTIONS))
        print("class-0 covariance, top eigenvalue shares: " + " ".join(f"{e:.3f}" for e in d["spectrum"][:5]))
    fig = sweep_figure(res, title=f"{args.data}, seed {args.seed}")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    path = atomic_write_bytes(Path(args.plot), buf.getvalue())
    print(f"plot: {path}")
    return 0


__all__ = ["register", "add_arguments", "sweep_command"]
