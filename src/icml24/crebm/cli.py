"""``icml24 crebm plan --smiles TARGET``: plan routes to a target in the retrosynthesis world with Retro*-0 and
print them reranked by base cost + alpha * energy, with their starting materials' prices.

The one-step model and the energies are trained first on the world of the given seed (smoke-scale sizes, about
a minute on one CPU core); the target must be reachable with the world's datamol templates from its stock.
"""

from __future__ import annotations

import argparse

from ..errors import InputError
from ..validation import check_float, check_int, check_seed

CRITERIA = ("feasibility", "cost", "steps", "mle")


def register(subparsers, parents) -> None:
    """Add ``icml24 crebm`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    p = subparsers.add_parser("crebm", parents=parents, help="CREBM route planning and reranking")
    sub = p.add_subparsers(dest="crebm_command", required=True)
    t = sub.add_parser("plan", parents=parents, help="plan a target and print the reranked routes with prices")
    add_arguments(t)
    t.set_defaults(func=plan_command)


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
    p.add_argument("--smiles", default=None, help="target SMILES (default: the world's first test target)")
    p.add_argument("--max-depth", type=int, default=2, help="depth limit of the search (default 2)")
    p.add_argument("--beam", type=int, default=5, help="beam size (default 5, as the official inference)")
    p.add_argument("--alpha", type=float, default=1.0, help="weight of the energy (default 1.0)")
    p.add_argument("--criterion", default="feasibility", choices=CRITERIA, help="which trained energy to use")
    p.add_argument("--seed", type=int, default=0, help="seed of the world and the training (default 0)")
    return p


def plan_command(args: argparse.Namespace) -> int:
    """Run the verb.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    depth = check_int(args.max_depth, "--max-depth", min_val=1, max_val=5)
    beam = check_int(args.beam, "--beam", min_val=1)
    alpha = check_float(args.alpha, "--alpha", min_val=0.0)
    seed = check_seed(args.seed, "--seed")
    if args.criterion not in CRITERIA:
        raise InputError(f"unknown --criterion {args.criterion!r}", f"choose one of: {', '.join(CRITERIA)}")
    from .world_routes import check_smiles

    target = None if args.smiles is None else check_smiles(args.smiles, "--smiles")
    from .crebm import rerank
    from .experiments import train_all
    from .search import retro_star_0

    tr = train_all("smoke", seed)
    if target is None:
        target = tr.world.test[0].smiles
    if target in tr.world.stock:
        print(f"{target} is in stock (price {tr.world.stock.price(target):.2f}): nothing to plan")
        return 0
    energy = {"feasibility": tr.crebm, "cost": tr.cost_model, "steps": tr.steps_model, "mle": tr.mle}[args.criterion]
    found = retro_star_0(target, tr.onestep, tr.world.stock, depth, beam_size=beam)
    print(f"target {target}: {len(found)} complete routes (Retro*-0, beam {beam}, depth <= {depth})")
    if not found:
        print("no route found with the world's templates and stock")
        return 0
    ranked = rerank(found, target, energy, alpha, top=beam)
    print(f"{'rank':>4} {'total':>7} {'base':>7} {'energy':>7} {'price':>8} {'steps':>5}  starting materials")
    for i, r in enumerate(ranked, 1):
        price = r.route.price(tr.world.stock)
        print(
            f"{i:>4} {r.total:>7.3f} {r.base_cost:>7.3f} {r.energy:>7.3f} {price:>8.2f} {r.route.n_steps:>5}  "
            f"{r.route.materials_string()}"
        )
    return 0


__all__ = ["register", "add_arguments", "plan_command"]
