"""``icml24 gnn-certify``: certify a model (official JSON) on a graph (``.gcinfo`` / ``.ncinfo``).

:func:`register` adds the verb to the core command line, :func:`add_arguments` lists its arguments and
:func:`certify_command` runs it from the parsed ``argparse.Namespace``. Exit status: 0 robust, 1 not robust,
3 unknown (time limit); bad input raises :class:`~icml24.errors.InputError` (the CLI prints one line, exit 2).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from pathlib import Path

from ..errors import InputError
from ..files import encode_nonfinite, json_default
from ..validation import check_float, check_int, check_seed
from ..verbs import add_out_argument, finish_run, start_run

EXIT_ROBUST, EXIT_NOT_ROBUST, EXIT_UNKNOWN = 0, 1, 3

#: SCIP's infinity: a bound at or beyond it (SCIP's dual bound before any is proven) is reported as +-inf.
SCIP_INFINITY = 1e20


def register(subparsers, parents) -> None:
    """Add ``icml24 gnn-certify`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    gc = subparsers.add_parser(
        "gnn-certify",
        parents=parents,
        help="certify a GNN's robustness to edge flips (MIP)",
        epilog="exit status: 0 robust, 1 not robust (an attack found), 3 unknown (time limit), 2 bad input (one "
        "error line), 130 interrupted.",
    )
    add_arguments(gc)
    gc.set_defaults(func=certify_command)


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the arguments of ``icml24 gnn-certify`` (defaults mirror the official experiments).

    Parameters
    ----------
    p : argparse.ArgumentParser

    Returns
    -------
    argparse.ArgumentParser
        ``p`` itself.
    """
    p.add_argument("--model", required=True, metavar="MODEL.json", help="official model JSON (model_MUTAG.json)")
    p.add_argument("--graph", required=True, metavar="GRAPH", help="instance file (.gcinfo or .ncinfo)")
    p.add_argument(
        "--budget",
        type=float,
        default=0.1,
        help=(
            "global budget as a fraction in [0, 1] of the edge_index entries (graph) or of the arcs of the k-hop "
            "subgraph (node): ceil(pct*E)"
        ),
    )
    p.add_argument("--global-budget", type=int, default=None, help="global budget as a number of flips")
    p.add_argument("--strength", type=int, default=2, help="local attack strength s")
    p.add_argument("--target", type=int, default=None, help="target class (default: every other class)")
    p.add_argument("--label-shift", type=int, default=None, help="official label shift k: target = (label+k) mod C")
    p.add_argument("--bounds", default="sbt", choices=["basic", "sbt", "abt"], help="bound mode")
    p.add_argument(
        "--settings",
        default="fast",
        choices=["fast", "official"],
        help="SCIP settings: official .set files, or fast (also aggregation separator off)",
    )
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per target class")
    p.add_argument("--threads", type=int, default=1, help="SCIP/LP threads")
    p.add_argument("--seed", type=int, default=0, help="SCIP random seed shift")
    p.add_argument("--max-nodes", type=int, default=64, help="refuse larger graphs")
    p.add_argument(
        "--attack-first",
        action="store_true",
        help="try a fast greedy attack before the MIP (not in the paper; it can only find not_robust)",
    )
    p.add_argument(
        "--no-greedy-start",
        action="store_true",
        help="do not hand SCIP the greedy attack as a starting solution (the paper's setting)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the report (results.json) as JSON, alone on stdout; the run-directory lines go to stderr",
    )
    add_out_argument(p)
    return p


def _unbounded(v: float | None) -> float | None:
    """``v`` with SCIP's infinity (1e20) as the float infinity of its sign."""
    if v is None or not math.isfinite(v) or abs(v) < SCIP_INFINITY:
        return v
    return math.copysign(math.inf, v)


def _check(args) -> None:
    check_float(args.budget, "--budget", min_val=0.0, max_val=1.0)
    check_int(args.global_budget, "--global-budget", min_val=0, allow_none=True)
    check_int(args.strength, "--strength", min_val=0)
    check_float(args.time_limit, "--time-limit", min_val=0.0, include_boundaries="right")
    check_int(args.threads, "--threads", min_val=1)
    check_seed(args.seed, "--seed")
    check_int(args.max_nodes, "--max-nodes", min_val=1)
    if args.target is not None and args.label_shift is not None:
        raise InputError("give --target or --label-shift, not both")


def certify_command(args: argparse.Namespace) -> int:
    """Run the verb: certify, print one line per target class (or JSON), write the run directory.

    The run directory (under ``--out``) holds ``results.json`` (the report: verdict, budget and one certificate
    per target class, SCIP's infinite bounds as ``"-Infinity"``/``"Infinity"``) and ``report.md`` (the lines
    printed without ``--json``).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed by a parser built with :func:`add_arguments`.

    Returns
    -------
    int
        :data:`EXIT_ROBUST` (0), :data:`EXIT_NOT_ROBUST` (1) or :data:`EXIT_UNKNOWN` (3).

    Raises
    ------
    InputError
        Bad arguments or files (the CLI prints one line and exits 2).
    """
    from ..threads import single_thread
    from .certify import certify
    from .io import load_model_json, read_instance
    from .report import NOT_ROBUST, ROBUST

    _check(args)
    model, net = load_model_json(args.model)
    inst = read_instance(args.graph)
    if inst.num_classes != net.num_classes:
        raise InputError(f"{args.graph} has {inst.num_classes} classes but the model has {net.num_classes}")
    target = args.target
    if args.label_shift is not None:
        target = (inst.label + args.label_shift) % inst.num_classes
    node = inst.node if net.task == "node" else None
    if net.task == "node" and node is None:
        raise InputError(f"{args.graph} has no target node, but the model classifies nodes", "use a .ncinfo file")
    n_targets = 1 if target is not None else net.num_classes - 1
    what = f"node {node} of " if node is not None else ""
    size = f"{args.global_budget} flips" if args.global_budget is not None else f"budget {args.budget:g}"
    # with --json stdout holds the JSON alone: the start and end lines go to stderr
    quiet = contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext()
    with quiet:
        run = start_run(
            args,
            "gnn-certify",
            f"gnn-certify: {what}{Path(args.graph).name} ({inst.data.num_nodes} nodes), {size}, strength "
            f"{args.strength}, bounds {args.bounds}; SCIP against {n_targets} target class"
            f"{'es' if n_targets != 1 else ''}, at most {args.time_limit:g} s each",
        )
    with single_thread():
        report = certify(
            model,
            inst.data,
            budget=None if args.global_budget is not None else args.budget,
            global_budget=args.global_budget,
            strength=args.strength,
            target=target,
            node=node,
            bounds=args.bounds,
            time_limit=args.time_limit,
            seed=args.seed,
            threads=args.threads,
            max_nodes=args.max_nodes,
            settings=args.settings,
            attack_first=args.attack_first,
            greedy_start=not args.no_greedy_start,
        )
    certificates = []
    for c in report.certificates:
        c.margin_lower, c.margin_upper = _unbounded(c.margin_lower), _unbounded(c.margin_upper)
        certificates.append(c.as_dict())
    payload = {
        "model": str(Path(args.model)),
        "graph": str(Path(args.graph)),
        "bounds": args.bounds,
        "settings": args.settings,
        "predicted": report.predicted,
        "instance_label": inst.label,
        "verdict": report.verdict,
        "budget": report.budget_of,
        "certificates": certificates,
    }
    n = inst.data.num_nodes
    lines = [
        f"{Path(args.graph).name}: {n} nodes, {inst.edge_entries // (1 if net.task == 'node' else 2)} "
        f"{'arcs' if net.task == 'node' else 'edges'}; model predicts {report.predicted} "
        f"(file label {inst.label}); bounds {args.bounds}; {report.budget_of}"
    ]
    for c in report.certificates:
        lines.append(
            f"target {c.target}: {c.verdict:<10} margin in [{c.margin_lower:.4g}, {c.margin_upper:.4g}]  "
            f"{c.seconds:.2f} s  {c.nodes} nodes  budget {c.global_budget}"
        )
        if c.verdict == NOT_ROBUST:
            lines.append(
                f"  added {c.added or '-'}  removed {c.removed or '-'}  "
                f"(checked by the model: logit margin {c.checked_margin:.4g})"
            )
    lines.append(f"verdict: {report.verdict}")
    if args.json:
        print(json.dumps(encode_nonfinite(payload), indent=2, sort_keys=True, default=json_default))
    else:
        print("\n".join(lines))
    with quiet:
        finish_run(run, payload, lines)
    if report.verdict == ROBUST:
        return EXIT_ROBUST
    return EXIT_NOT_ROBUST if report.verdict == NOT_ROBUST else EXIT_UNKNOWN


__all__ = ["register", "add_arguments", "certify_command", "EXIT_ROBUST", "EXIT_NOT_ROBUST", "EXIT_UNKNOWN"]
