"""``icml24 graph-transformer``: test accuracy vs labelled nodes for GT+PE, GT without PE and PyG's GCN.

Each run writes a fresh run directory under ``--out`` (default ``runs/``): ``config.json``, ``env.json``,
``results.json`` (the accuracies), ``report.md`` (the printed table) and ``accuracy-vs-labels.png``.

:func:`register` adds the verb to the core command line; :func:`sweep_command` runs it. Bad input raises
:class:`~icml24.errors.InputError` (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse
import sys

from ..verbs import add_out_argument, finish_run, start_run

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
        "--labels",
        default="20,40,80",
        help="comma-separated label counts: labelled nodes per class on cora, labelled nodes on pattern",
    )
    p.add_argument("--steps", type=int, default=200, help="SGD steps of each shallow model")
    p.add_argument("--peers", default="gcn,gps", help="PyG peers beside the shallow GT: gcn, sage, gps")
    p.add_argument("--seed", type=int, default=0, help="seeds the split, the models and their training")
    add_out_argument(p)
    return p


def sweep_command(args: argparse.Namespace) -> int:
    """Run the verb: print one line per label count, the paper's trend beside it, and write the run directory.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    from ..errors import InputError
    from ..threads import single_thread
    from ..validation import check_choice, check_int, check_seed

    try:
        labels = [int(v) for v in str(args.labels).split(",") if v.strip()]
    except ValueError:
        raise InputError(
            f"--labels {args.labels!r} is not a comma-separated list of integers", "e.g. 20,40,80"
        ) from None
    if not labels:
        raise InputError(f"--labels {args.labels!r} names no label count", "e.g. 20,40,80")
    labels = sorted({check_int(n, "--labels", min_val=2 if args.data == "pattern" else 1) for n in labels})
    check_int(args.steps, "--steps", min_val=1)
    check_seed(args.seed, "--seed")
    from .experiments import LABELS, PEERS

    peers = [check_choice(v.strip(), "--peers", PEERS) for v in str(args.peers).split(",") if v.strip()]
    per = "labelled nodes per class" if args.data == "cora" else "labelled nodes"
    models = ", ".join(LABELS[k] for k in ("pe", "nope", *peers))
    run = start_run(
        args,
        "graph-transformer",
        f"graph-transformer: test accuracy of {models} on {args.data} at {', '.join(map(str, labels))} {per} "
        f"({args.steps} SGD steps, seed {args.seed})",
    )
    from tqdm.auto import tqdm

    from .experiments import PAPER_CORA_FRACTIONS, PAPER_TREND, discriminative_fractions, label_sweep, sweep_figure

    res: dict[str, dict[int, float]] = {}
    with single_thread():  # small tensors: torch's thread pool only slows them on a shared machine
        for n in tqdm(labels, desc="label counts", unit="count", file=sys.stderr, disable=None):
            for k, acc in label_sweep(args.data, [n], seed=args.seed, steps=args.steps, peers=peers).items():
                res.setdefault(k, {}).update(acc)
    report = []

    def say(line: str) -> None:
        print(line)
        report.append(line)

    unit = "labels/class" if args.data == "cora" else "labels"
    say(f"{args.data}: test accuracy, seed {args.seed}")
    say(f"{unit:>13} " + " ".join(f"{LABELS[k]:>14}" for k in res))
    for n in sorted(res["pe"]):
        say(f"{n:>13} " + " ".join(f"{res[k][n]:>14.3f}" for k in res))
    mean = {k: sum(v.values()) / len(v) for k, v in res.items()}
    order = " >= ".join(LABELS[k] for k in sorted(mean, key=mean.get, reverse=True))
    say(f"ours (mean over label counts): {order}")
    say(PAPER_TREND)
    results = {
        "data": args.data,
        "label_counts": per,
        "seed": args.seed,
        "steps": args.steps,
        "variants": {k: LABELS[k] for k in res},
        "test_accuracy": {k: {str(n): a for n, a in v.items()} for k, v in res.items()},
        "mean_test_accuracy": mean,
        "order": order,
    }
    if args.data == "cora":
        from ..data import planetoid

        raw = planetoid("cora")
        for rule in ("centroid", "pattern"):
            with single_thread():  # 5x faster on a two-core machine, the same fractions
                d = discriminative_fractions(raw.x, raw.y, rule=rule)
            say(f"discriminative fraction per class ({rule} rule): " + " ".join(f"{f:.3f}" for f in d["fractions"]))
            results[f"discriminative_fractions_{rule}"] = [float(f) for f in d["fractions"]]
        say("paper appendix, Table R1 (rule not stated):      " + " ".join(f"{f:.3f}" for f in PAPER_CORA_FRACTIONS))
        say("class-0 covariance, top eigenvalue shares: " + " ".join(f"{e:.3f}" for e in d["spectrum"][:5]))
        results["class0_top_eigenvalue_shares"] = [float(e) for e in d["spectrum"][:5]]
    fig = sweep_figure(res, title=f"{args.data}, seed {args.seed}")
    fig.axes[0].set_xlabel(per)  # on cora the counts are per class
    finish_run(run, results, report, figures={"accuracy-vs-labels": fig})
    return 0


__all__ = ["register", "add_arguments", "sweep_command"]
