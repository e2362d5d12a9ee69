"""``icml24 crebm plan --smiles TARGET``: plan routes to a target in the retrosynthesis world with Retro*-0 and
print them reranked by base cost + alpha * energy, with their starting materials' prices.

The world is synthetic (its own datamol templates and stock, made from the seed): only targets of its chemistry
have routes, so a real drug such as aspirin finds none; without ``--smiles`` the world's first test target is
planned. The world and the one-step model are made on every call (about 10 s on one CPU core); only the energy
of the chosen ``--criterion`` is trained (about 10 s more), once per configuration: it is cached under the icml24
cache folder (``$ICML24_CACHE``, else ``~/.cache/icml24-cache``) in ``crebm/plan-energy/`` and loaded from there
afterwards.
"""

from __future__ import annotations

import argparse
import time

from ..errors import InputError
from ..validation import check_float, check_int, check_seed
from ..verbs import add_out_argument, finish_run, start_run

CRITERIA = ("feasibility", "cost", "steps", "mle")
#: Bump when the energy training of this verb changes, so that stale cached energies are not loaded.
CACHE_FORMAT = 1
NO_ROUTE = (
    "no route found: the world is synthetic (its own templates and stock), so targets outside its chemistry, "
    "e.g. aspirin, find none; omit --smiles to plan one of its test targets"
)


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
    p.add_argument(
        "--smiles",
        default=None,
        help="target SMILES, of the synthetic world's chemistry (default: the world's first test target)",
    )
    p.add_argument("--max-depth", type=int, default=2, help="depth limit of the search")
    p.add_argument("--beam", type=int, default=5, help="beam size (the official inference uses 5)")
    p.add_argument("--alpha", type=float, default=1.0, help="weight of the energy")
    p.add_argument(
        "--criterion", default="feasibility", choices=CRITERIA, help="which energy to train (or load) and use"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the world and the training")
    add_out_argument(p)
    return p


def _energy_key(criterion: str, seed: int, cfg) -> str:
    import hashlib
    import json
    from dataclasses import asdict

    from .. import __version__

    blob = json.dumps(
        {"format": CACHE_FORMAT, "version": __version__, "criterion": criterion, "seed": seed, "setup": asdict(cfg)},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _stage(t0: float, text: str) -> None:
    print(f"[{time.perf_counter() - t0:5.1f} s] {text}", flush=True)


def trained_energy(criterion: str, seed: int, world, onestep, cfg, t0: float):
    """The energy of one criterion: loaded from the cache folder when there, else trained and cached.

    Parameters
    ----------
    criterion : {"feasibility", "cost", "steps", "mle"}
    seed : int
    world : RetroWorld
    onestep : Neuralsym
    cfg : Setup
        The smoke-scale sizes (the cache key holds all of them).
    t0 : float
        ``time.perf_counter()`` at the start, for the progress lines.

    Returns
    -------
    tuple
        ``(EnergyTransformer, path of the cached weights, loaded from cache?)``.
    """
    import io

    import torch

    from ..data import cache_dir
    from ..files import atomic_write_bytes
    from .crebm import cost_criterion, feasibility_criterion, preference_pairs, steps_criterion
    from .energy import EnergyTransformer, finetune_energy, pretrain_energy
    from .experiments import plan_all

    path = cache_dir("crebm", "plan-energy") / f"{criterion}-seed{seed}-{_energy_key(criterion, seed, cfg)}.pt"
    if path.is_file():
        try:
            model = EnergyTransformer(cfg.energy, seed=seed)
            model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
            _stage(t0, f"loaded the {criterion} energy from the cache: {path}")
            return model.eval(), path, True
        except (OSError, RuntimeError, ValueError) as e:  # a damaged file: train again and overwrite it
            _stage(t0, f"cached energy {path} unreadable ({type(e).__name__}); training it again")
    _stage(t0, f"pre-training the energy by MLE on {len(world.train)} ground-truth routes...")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        base_model = EnergyTransformer(cfg.energy, seed=seed)
    gt_pairs = [(t.smiles, t.gt.materials_string()) for t in world.train]
    model = pretrain_energy(base_model, gt_pairs, cfg.pretrain)
    if criterion != "mle":
        _stage(t0, f"planning the {len(world.train)} training targets (beam {cfg.train_beam}) for preference pairs...")
        cands = plan_all(world, onestep, "train", cfg.train_beam)
        if criterion == "feasibility":
            make_phi, train_cfg = (lambda t: feasibility_criterion(t.gt, world.templates)), cfg.finetune
        else:
            phi = cost_criterion(world.stock) if criterion == "cost" else steps_criterion()
            make_phi, train_cfg = (lambda t: phi), cfg.criteria_finetune
        pairs = []
        for t, cs in zip(world.train, cands):
            pairs += preference_pairs(
                t.smiles, [p.route for p in cs], make_phi(t), gt=t.gt, max_candidates=cfg.max_candidates
            )
        _stage(t0, f"fine-tuning the {criterion} energy on {len(pairs)} preference pairs...")
        model = finetune_energy(model, pairs, train_cfg)
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    atomic_write_bytes(path, buf.getvalue())
    _stage(t0, f"trained the {criterion} energy; cached for later calls: {path}")
    return model, path, False


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
    run = start_run(
        args,
        "crebm-plan",
        f"plan {target or 'the first test target'} in the synthetic retrosynthesis world (seed {seed}; smoke sizes) "
        f"with Retro*-0 (beam {beam}, depth <= {depth}) and rerank by base + {alpha:g} * {args.criterion} energy; "
        "about 10 s, 20 s when the energy is not cached yet",
    )
    from ..threads import single_thread
    from .crebm import rerank
    from .experiments import setup, train_onestep
    from .search import retro_star_0
    from .world import make_retro_world

    t0 = time.perf_counter()
    cfg = setup("smoke", seed)
    results: dict = {"criterion": args.criterion, "alpha": alpha, "beam": beam, "max_depth": depth, "seed": seed}
    with single_thread():
        _stage(t0, f"making the world ({cfg.n_train} training and {cfg.n_test} test targets)...")
        world = make_retro_world(cfg.n_train, cfg.n_test, seed)
        if target is None:
            target = world.test[0].smiles
        results["target"] = target
        if target in world.stock:
            line = f"{target} is in stock (price {world.stock.price(target):.2f}): nothing to plan"
            print(line)
            finish_run(run, {**results, "in_stock": True, "routes": []}, [line])
            return 0
        _stage(t0, f"training the one-step model (Neuralsym, {cfg.neuralsym.epochs} epochs)...")
        onestep = train_onestep(world, cfg.neuralsym)
        energy, path, cached = trained_energy(args.criterion, seed, world, onestep, cfg, t0)
        results.update(energy_cache=str(path), energy_from_cache=cached)
        _stage(t0, f"planning {target}...")
        found = retro_star_0(target, onestep, world.stock, depth, beam_size=beam)
    lines = [f"target {target}: {len(found)} complete routes (Retro*-0, beam {beam}, depth <= {depth})"]
    print(lines[0])
    if not found:
        lines.append(NO_ROUTE)
        print(lines[-1])
        finish_run(run, {**results, "routes": []}, lines)
        return 0
    ranked = rerank(found, target, energy, alpha, top=beam)
    lines.append(f"{'rank':>4} {'total':>7} {'base':>7} {'energy':>7} {'price':>8} {'steps':>5}  starting materials")
    print(lines[-1])
    routes = []
    for i, r in enumerate(ranked, 1):
        price = r.route.price(world.stock)
        lines.append(
            f"{i:>4} {r.total:>7.3f} {r.base_cost:>7.3f} {r.energy:>7.3f} {price:>8.2f} {r.route.n_steps:>5}  "
            f"{r.route.materials_string()}"
        )
        print(lines[-1])
        routes.append(
            {
                "rank": i,
                "total": r.total,
                "base": r.base_cost,
                "energy": r.energy,
                "price": price,
                "steps": r.route.n_steps,
                "materials": r.route.materials_string(),
            }
        )
    finish_run(run, {**results, "routes": routes}, lines)
    return 0


__all__ = ["register", "add_arguments", "plan_command", "trained_energy"]
