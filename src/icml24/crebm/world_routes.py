"""Molecules, routes and the stock of CREBM's retrosynthesis world (:mod:`icml24.crebm.world`).

Molecules are canonical SMILES (atom maps and explicit hydrogens removed) identified by the first 14 characters
of their InChIKey; a :class:`Route` is a reaction tree as a tuple of :class:`Step`, with its starting-material
set and its identity (the sorted InChIKey[:14] of its starting materials), following the conventions of the
FusionRetro/CREBM route benchmark; a :class:`Stock` prices the purchasable molecules.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from ..errors import InputError
from ..extras import require
from ..validation import check_float, check_probability

MOLBLOOM_CATALOG = "zinc-instock-mini"  # the only catalog bundled with molbloom (the others download)


def rdkit_chem():
    """RDKit's ``Chem`` module, its log silenced (a one-line error naming the ``chem`` extra when it is missing).

    Returns
    -------
    module
    """
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
    if not isinstance(smiles, str) or not smiles.strip():
        return None
    return _canonical(smiles.strip())  # RDKit is required (and its log silenced) on a cache miss


@functools.lru_cache(maxsize=200_000)
def _canonical(smiles: str) -> str | None:
    Chem = rdkit_chem()
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
    Chem = rdkit_chem()
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

    def __post_init__(self) -> None:
        check_smiles(self.product, "product")
        if not isinstance(self.reactants, tuple) or not self.reactants:
            raise InputError(f"reactants must be a non-empty tuple of SMILES, got {type(self.reactants).__name__}")
        for r in self.reactants:
            check_smiles(r, "reactants")
        if not isinstance(self.template, str):
            raise InputError(f"template must be a template name (str), got {type(self.template).__name__}")


@dataclass(frozen=True)
class Route:
    """A reaction tree to ``target``: its steps, each product made once (the target by the first step).

    Parameters
    ----------
    target : str
        Canonical SMILES of the target.
    steps : tuple of Step
        The reactions, in depth-first order from the target. Empty when the target itself is bought.

    Checked when made: valid SMILES everywhere, the first step makes the target, every step makes a distinct
    molecule that the tree uses, and no molecule is among its own precursors.
    """

    target: str
    steps: tuple[Step, ...] = ()

    def __post_init__(self) -> None:
        check_smiles(self.target, "target")
        if not isinstance(self.steps, tuple) or not all(isinstance(s, Step) for s in self.steps):
            raise InputError(f"steps must be a tuple of Step, got {type(self.steps).__name__}")
        made = self._children()
        if len(made) != len(self.steps):
            raise InputError("steps must make each product once")
        if self.steps and self.steps[0].product != self.target:
            raise InputError(f"steps[0] must make the target {self.target}, got {self.steps[0].product}")
        used: set[str] = set()

        def visit(m: str, above: frozenset) -> None:  # every step reached from the target, no cycle
            if m in above:
                raise InputError(f"steps are not a tree: {m[:60]} is among its own reactants")
            if m in made and m not in used:
                used.add(m)
                for r in made[m].reactants:
                    visit(r, above | {m})

        visit(self.target, frozenset())
        if len(used) != len(self.steps):
            raise InputError("steps must all lead to the target: a step makes a molecule no other step uses")

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
        check_stock(stock)
        return float(sum(stock.price(m) for m in self.starting_materials()))

    def route_yield(self, yields: Mapping[str, float]) -> float:
        """Product of the step yields (the overall yield of a linear route; 1 for no steps).

        Parameters
        ----------
        yields : mapping of str to float
            Yield in ``[0, 1]`` per template name.

        Returns
        -------
        float
        """
        yields = check_yields(yields)
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
        check_stock(stock)
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
        hit = self._by_key.get(inchikey14(check_smiles(smiles)))
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


def check_stock(stock, name: str = "stock") -> "Stock":
    """``stock`` when it is a :class:`Stock`, else a one-line InputError naming ``name``.

    Parameters
    ----------
    stock : object
    name : str, default "stock"

    Returns
    -------
    Stock
    """
    if not isinstance(stock, Stock):
        raise InputError(f"{name} must be a Stock, got {type(stock).__name__}")
    return stock


def check_one_target(routes: Sequence[Route], name: str = "routes", target: str | None = None) -> None:
    """Refuse routes that lead to different targets, or to another than ``target`` (a canonical SMILES).

    Parameters
    ----------
    routes : sequence of Route
    name : str, default "routes"
    target : str, optional
    """
    for i, r in enumerate(routes):
        t = canonical(r.target)
        if target is None:
            target = t
        elif t != target:
            where = f"{name}[{i}]" if len(routes) > 1 else name
            raise InputError(f"{where} leads to {t}, not to {target}", "give the routes of one target at a time")


def check_yields(yields, name: str = "yields", *, zero: bool = True) -> dict[str, float]:
    """A non-empty mapping of template name to yield in ``[0, 1]`` (``(0, 1]`` when not ``zero``), as a dict.

    Parameters
    ----------
    yields : object
    name : str, default "yields"
    zero : bool, default True
        Whether a yield of 0 is allowed.

    Returns
    -------
    dict of str to float
    """
    if not isinstance(yields, Mapping) or not yields:
        raise InputError(f"{name} must be a non-empty mapping of template name to yield, got {type(yields).__name__}")
    if not all(isinstance(k, str) for k in yields):
        raise InputError(f"{name} must be keyed by template names (str)")
    return {k: check_probability(v, name, open_left=not zero) for k, v in yields.items()}


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


__all__ = [
    "MOLBLOOM_CATALOG",
    "canonical",
    "check_smiles",
    "inchikey14",
    "Step",
    "Route",
    "route_from_materials",
    "Stock",
    "molbloom_buyable",
]
