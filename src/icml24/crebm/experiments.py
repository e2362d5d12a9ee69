"""The claim experiments of CREBM, on the retrosynthesis world of :mod:`icml24.crebm.world`.

One pipeline per (scale, seed), the experiment ``crebm/pipeline`` (:func:`run_pipeline`) that every claim judges:
make the world; train Neuralsym on the training
targets' single reactions (every alternative tree's steps: a reaction database without route-level
preferences); plan every target with Retro*-0 (beam 5 on test targets, a wider beam for preference data);
pre-train the energy by MLE on the ground-truth routes; fine-tune it with Bradley-Terry pairs ranked by the
feasibility criterion (and, for the criteria claim, by price and by step count); rerank each test target's
base top 5 and score top-k exact starting-set accuracy against the ground truth, by depth.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..claims import Scale
from ..errors import DataUnavailable
from ..threads import single_thread
from ..validation import check_seed
from .baselines import base_ranking, heuristic_ranking
from .crebm import cost_criterion, feasibility_criterion, preference_pairs, steps_criterion
from .energy import EnergyConfig, EnergyTransformer, TrainConfig, energies, finetune_energy, pretrain_energy
from .onestep import Neuralsym, NeuralsymConfig, train_neuralsym
from .search import PlannedRoute, ValueMLP, retro_star_0, train_value_mlp
from .world import RetroWorld, make_retro_world

ALPHAS = (0.5, 1.0, 2.0)
POOL = 5  # the base beam: reranking permutes these routes


@dataclass(frozen=True)
class Setup:
    """Sizes of one scale.

    Parameters
    ----------
    n_train, n_test : int
        Targets of the world.
    neuralsym : NeuralsymConfig
    energy : EnergyConfig
    pretrain, finetune, criteria_finetune : TrainConfig
        Stage A, stage C (feasibility), and stage C for the price and step criteria.
    train_beam : int
        Beam of the planner when collecting preference candidates (official 50).
    max_candidates : int
        Candidates per training target (official 10).
    """

    n_train: int
    n_test: int
    neuralsym: NeuralsymConfig
    energy: EnergyConfig
    pretrain: TrainConfig
    finetune: TrainConfig
    criteria_finetune: TrainConfig
    train_beam: int = 10
    max_candidates: int = 10


def setup(scale: Scale, seed: int) -> Setup:
    """The sizes of a scale (PAPER raises: it needs the USPTO route benchmark and the official templates).

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    Setup
    """
    scale = Scale.parse(scale)
    seed = check_seed(seed)
    if scale is Scale.PAPER:
        root = os.environ.get("ICML24_DATA", os.path.expanduser("~/.cache/icml24"))
        raise DataUnavailable(
            "paper scale needs the USPTO-derived route benchmark (train/valid/test_dataset.json), the ZINC stock "
            f"zinc_stock_17_04_20.hdf5 and the official template set under {root}/crebm/, and a GPU",
            "read the files with icml24.crebm.load_route_benchmark and run the planner and reranker on them",
        )
    ns = NeuralsymConfig(orig_fp_size=2048, final_fp_size=2048, hidden_size=128, epochs=30, seed=seed)
    if scale is Scale.SMOKE:
        return Setup(
            n_train=150,
            n_test=120,
            neuralsym=ns,
            energy=EnergyConfig(64, 64, 1, 4, 128, 0.1),
            pretrain=TrainConfig(epochs=6, batch_size=16, warmup=100, lr_scale=5.0, seed=seed),
            finetune=TrainConfig(epochs=3, batch_size=16, lr=1e-3, warmup=50, seed=seed, max_pairs=600),
            criteria_finetune=TrainConfig(epochs=2, batch_size=16, lr=1e-3, warmup=20, seed=seed, max_pairs=200),
            train_beam=10,
        )
    return Setup(
        n_train=200,
        n_test=100,
        neuralsym=ns,
        energy=EnergyConfig(64, 64, 2, 4, 128, 0.1),
        pretrain=TrainConfig(epochs=10, batch_size=32, warmup=200, lr_scale=5.0, seed=seed),
        finetune=TrainConfig(epochs=2, batch_size=32, lr=1e-3, warmup=100, seed=seed, max_pairs=2000),
        criteria_finetune=TrainConfig(epochs=1, batch_size=32, lr=1e-3, warmup=50, seed=seed, max_pairs=1000),
        train_beam=10,
    )


def train_onestep(world: RetroWorld, config: NeuralsymConfig, routes: str = "all") -> Neuralsym:
    """Neuralsym trained on the world's training reactions.

    Parameters
    ----------
    world : RetroWorld
    config : NeuralsymConfig
    routes : {"all", "gt"}, default "all"
        See :meth:`RetroWorld.reactions`.

    Returns
    -------
    Neuralsym
    """
    steps = world.reactions("train", routes)
    return train_neuralsym([s.product for s in steps], [s.template for s in steps], world.templates, config)


def plan_all(world: RetroWorld, model: Neuralsym, split: str, beam: int) -> list[list[PlannedRoute]]:
    """Retro*-0 on every target of a split, each with its ground-truth depth as the depth limit.

    Parameters
    ----------
    world : RetroWorld
    model : Neuralsym
    split : {"train", "test"}
    beam : int

    Returns
    -------
    list of list of PlannedRoute
    """
    return [retro_star_0(t.smiles, model, world.stock, t.depth, beam_size=beam) for t in getattr(world, split)]


def _hits(world: RetroWorld, ranked: list[list]) -> np.ndarray:
    """``(targets, POOL)`` hit matrix: whether the rank-k route is the ground truth."""
    out = np.zeros((len(world.test), POOL), dtype=bool)
    for i, (t, rs) in enumerate(zip(world.test, ranked)):
        gt = t.gt.key()
        for k, r in enumerate(rs[:POOL]):
            if r.key() == gt:
                out[i, k:] = True
                break
    return out


def _ranked(pools, es, alpha):
    return [
        [p.route for _, p in sorted(enumerate(pool), key=lambda ip: ip[1].cost + alpha * e[ip[0]])]
        for pool, e in zip(pools, es)
    ]


def _pool_energies(model: EnergyTransformer, world: RetroWorld, pools) -> list[list[float]]:
    flat_t = [t.smiles for t, pool in zip(world.test, pools) for _ in pool]
    flat_m = [p.route.materials_string() for pool in pools for p in pool]
    e = energies(model, flat_t, flat_m).tolist() if flat_t else []
    out, i = [], 0
    for pool in pools:
        out.append(e[i : i + len(pool)])
        i += len(pool)
    return out


@dataclass
class Trained:
    """Everything one run trains: the world, the one-step model, the beams and the four energies.

    Parameters
    ----------
    world : RetroWorld
    onestep : Neuralsym
    test_pools : list of list of PlannedRoute
        The base top 5 of every test target.
    mle, crebm, cost_model, steps_model : EnergyTransformer
        MLE only; fine-tuned on feasibility, price and step-count preferences.
    n_pairs : int
        Feasibility preference pairs.
    seconds : dict of str to float
        Time per stage.
    value : ValueMLP
        Retro*'s value network, fit to the cost of every molecule of the training routes.
    retro_star_pools : list of list of PlannedRoute
        The top 5 of Retro* (the same one-step model, guided by ``value``) for every test target.
    """

    world: RetroWorld
    onestep: Neuralsym
    test_pools: list
    mle: EnergyTransformer
    crebm: EnergyTransformer
    cost_model: EnergyTransformer
    steps_model: EnergyTransformer
    n_pairs: int
    seconds: dict
    value: ValueMLP
    retro_star_pools: list


def molecule_costs(world: RetroWorld, model: Neuralsym) -> dict[str, float]:
    """Retro*'s value targets: each molecule made in a training route costs the summed ``-log10 p`` of the
    one-step model over its sub-route (bought molecules cost 0), as the official ``get_molecule_cost.py``.

    Parameters
    ----------
    world : RetroWorld
    model : Neuralsym

    Returns
    -------
    dict of str to float
        Molecule SMILES to cost (the lowest over the routes it appears in).
    """
    index = {t.name: i for i, t in enumerate(model.templates)}
    probs: dict[str, np.ndarray] = {}
    costs: dict[str, float] = {}
    for t in world.train:
        made = {st.product: st for st in t.gt.steps}
        for mol in made:
            c = _sub_route_cost(mol, made, model, index, probs)
            costs[mol] = min(c, costs.get(mol, c))
    return costs


def _sub_route_cost(mol: str, made: dict, model: Neuralsym, index: dict, probs: dict) -> float:
    st = made.get(mol)
    if st is None:
        return 0.0
    if mol not in probs:
        probs[mol] = model.template_probs(mol).numpy()
    p = float(probs[mol][index[st.template]]) if st.template in index else 0.0
    return -float(np.log10(max(p, 1e-10))) + sum(_sub_route_cost(r, made, model, index, probs) for r in st.reactants)


def train_all(scale_value: str, seed: int) -> Trained:
    """Make the world and train everything for a scale and seed (the claims' experiment, the CLI, the benchmark).

    Parameters
    ----------
    scale_value : str
        ``"smoke"`` or ``"quick"``.
    seed : int

    Returns
    -------
    Trained
    """
    import time

    import torch

    scale, seed = Scale.parse(scale_value), check_seed(seed)
    cfg = setup(scale, seed)
    t0 = time.perf_counter()
    sec: dict[str, float] = {}
    with single_thread():
        world = make_retro_world(cfg.n_train, cfg.n_test, seed)
        sec["world"] = time.perf_counter() - t0
        onestep = train_onestep(world, cfg.neuralsym)
        sec["onestep"] = time.perf_counter() - t0 - sec["world"]
        t1 = time.perf_counter()
        test_pools = [p[:POOL] for p in plan_all(world, onestep, "test", POOL)]
        train_cands = plan_all(world, onestep, "train", cfg.train_beam)
        sec["plan"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        gt_pairs = [(t.smiles, t.gt.materials_string()) for t in world.train]
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            base_model = EnergyTransformer(cfg.energy, seed=seed)
        mle = pretrain_energy(base_model, gt_pairs, cfg.pretrain)

        def pairs_for(make_phi):
            out = []
            for t, cands in zip(world.train, train_cands):
                out += preference_pairs(
                    t.smiles, [p.route for p in cands], make_phi(t), gt=t.gt, max_candidates=cfg.max_candidates
                )
            return out

        feas_pairs = pairs_for(lambda t: feasibility_criterion(t.gt, world.templates))
        crebm = finetune_energy(mle, feas_pairs, cfg.finetune)
        price_phi, steps_phi = cost_criterion(world.stock), steps_criterion()
        cost_model = finetune_energy(mle, pairs_for(lambda t: price_phi), cfg.criteria_finetune)
        steps_model = finetune_energy(mle, pairs_for(lambda t: steps_phi), cfg.criteria_finetune)
        sec["energy"] = time.perf_counter() - t1
        t1 = time.perf_counter()
        mol_costs = molecule_costs(world, onestep)
        value = train_value_mlp(list(mol_costs), list(mol_costs.values()), seed=seed)
        cache: dict[str, float] = {}

        def value_fn(smiles: str) -> float:
            if smiles not in cache:
                cache[smiles] = value.value(smiles)
            return cache[smiles]

        rs_pools = [
            retro_star_0(t.smiles, onestep, world.stock, t.depth, beam_size=POOL, value_fn=value_fn)[:POOL]
            for t in world.test
        ]
        sec["retro_star"] = time.perf_counter() - t1
    return Trained(
        world, onestep, test_pools, mle, crebm, cost_model, steps_model, len(feas_pairs), sec, value, rs_pools
    )


def pipeline_metrics(tr: Trained) -> dict[str, float]:
    """Rerank the test beams with every trained energy and return every metric the claims read.

    Parameters
    ----------
    tr : Trained
        What :func:`train_all` trained.

    Returns
    -------
    dict of str to float
    """
    import time

    t0 = time.perf_counter()
    world, test_pools = tr.world, tr.test_pools
    mle, crebm, cost_model, steps_model = tr.mle, tr.crebm, tr.cost_model, tr.steps_model
    m: dict[str, float] = {f"seconds_{k}": v for k, v in tr.seconds.items()}
    with single_thread():
        zeros = [[0.0] * len(p) for p in test_pools]
        e_mle, e_crebm = _pool_energies(mle, world, test_pools), _pool_energies(crebm, world, test_pools)
        e_cost, e_steps = _pool_energies(cost_model, world, test_pools), _pool_energies(steps_model, world, test_pools)
        rankings = {
            "base": [base_ranking(p) for p in test_pools],
            "price_heuristic": [heuristic_ranking(p, "price", world.stock) for p in test_pools],
            "steps_heuristic": [heuristic_ranking(p, "steps") for p in test_pools],
            "mle": _ranked(test_pools, e_mle, 1.0),
            "crebm": _ranked(test_pools, e_crebm, 1.0),
            "cost": _ranked(test_pools, e_cost, 1.0),
            "steps": _ranked(test_pools, e_steps, 1.0),
        }
        for a in ALPHAS:
            rankings[f"crebm_a{a:g}"] = _ranked(test_pools, e_crebm, a)
            rankings[f"mle_a{a:g}"] = _ranked(test_pools, e_mle, a)
        alpha0 = _ranked(test_pools, e_crebm, 0.0)
        # Retro* (value MLP) as the base planner, and CREBM reranking its beam
        rs_pools = tr.retro_star_pools
        rs_rankings = {
            "retro_star": [base_ranking(p) for p in rs_pools],
            "retro_star_crebm": _ranked(rs_pools, _pool_energies(crebm, world, rs_pools), 1.0),
        }
        for name, ranked in rs_rankings.items():
            h = _hits(world, ranked)
            for k in (1, 5):
                m[f"{name}_top{k}"] = float(h[:, k - 1].mean())
        m["alpha0_identical"] = float(all(a == b for a, b in zip(alpha0, _ranked(test_pools, zeros, 0.0))))
        m["alpha0_identical"] *= float(all(a == b for a, b in zip(alpha0, rankings["base"])))
        depth = np.array([t.depth for t in world.test])
        for name, ranked in rankings.items():
            h = _hits(world, ranked)
            for k in (1, 3, 5):
                m[f"{name}_top{k}"] = float(h[:, k - 1].mean())
            m[f"{name}_top1_d1"] = float(h[depth == 1, 0].mean()) if (depth == 1).any() else float("nan")
            m[f"{name}_top1_d2p"] = float(h[depth >= 2, 0].mean()) if (depth >= 2).any() else float("nan")
            m[f"{name}_top5_d2p"] = float(h[depth >= 2, 4].mean()) if (depth >= 2).any() else float("nan")
            tops = [rs[0] for rs in ranked if rs]
            m[f"{name}_top1_price"] = float(np.mean([r.price(world.stock) for r in tops])) if tops else float("nan")
            m[f"{name}_top1_depth"] = float(np.mean([r.depth for r in tops])) if tops else float("nan")
            m[f"{name}_top1_steps"] = float(np.mean([r.n_steps for r in tops])) if tops else float("nan")
        m["n_test"] = float(len(world.test))
        m["n_test_d2p"] = float((depth >= 2).sum())
        m["n_pref_pairs"] = float(tr.n_pairs)
        m["planned_fraction"] = float(np.mean([bool(p) for p in test_pools]))
        m["seconds"] = time.perf_counter() - t0 + sum(tr.seconds.values())
    return m


def run_pipeline(scale: Scale, seed: int) -> dict[str, float]:
    """The experiment ``crebm/pipeline``: train everything once and measure every claim's metrics.

    Top-1/3/5 of the base planner, the heuristics, the MLE-only energy, CREBM and the price and step-count
    energies (overall and by depth, with the top-1 route's price, depth and steps), Retro* and CREBM on its beam,
    the alpha = 0 check; judged by every claim of :mod:`icml24.crebm.paper`.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float

    Raises
    ------
    DataUnavailable
        At PAPER scale (the route benchmark, stock and templates are not available offline).
    """
    scale = Scale.parse(scale)
    setup(scale, seed)  # PAPER raises here
    return pipeline_metrics(train_all(scale.value, check_seed(seed)))
