"""Reaction templates of CREBM's retrosynthesis world (:mod:`icml24.crebm.world`): datamol's named reactions.

A :class:`Template` holds a reaction's forward (synthesis) and retro SMARTS as datamol ships them
(``datamol/data/reactions.json``); :func:`enumerate_routes` expands a target into every reaction tree whose
leaves are in stock, and :func:`replay_forward` executes a route forward with the synthesis SMARTS.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
from dataclasses import dataclass
from typing import Iterable, Sequence

from ..errors import InputError
from ..extras import require
from ..validation import check_int
from ._checks import check_sequence
from .world_routes import Route, Step, Stock, canonical, check_smiles, rdkit_chem

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
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"name must be a non-empty string, got {self.name!r}"[:100])
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
            One SMILES per reactant template (``n_reactants`` of them).

        Returns
        -------
        list of str
            Sorted canonical products (one molecule each).
        """
        reactants = check_sequence(reactants, "reactants")
        if len(reactants) != self.n_reactants:
            raise InputError(f"reactants must hold {self.n_reactants} SMILES (one per template), got {len(reactants)}")
        for r in reactants:
            check_smiles(r, "reactants")
        return list(forward_products(self.syn_smarts, tuple(reactants)))

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
        check_smiles(product, "product")
        return list(_retro(self.retro_smarts, product))

    def matches(self, smiles: str, role: int) -> bool:
        """Whether a molecule matches the forward reactant template ``role``.

        Parameters
        ----------
        smiles : str
        role : int
            In ``[0, n_reactants)``.

        Returns
        -------
        bool
        """
        check_smiles(smiles, "smiles")
        check_int(role, "role", min_val=0, max_val=self.n_reactants - 1)
        return _matches(self.syn_smarts, smiles, role)


@functools.lru_cache(maxsize=512)
def _reaction(smarts: str, name: str = "template"):
    rdkit_chem()
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
def mol_from_smiles(smiles: str):
    """RDKit's molecule of a SMILES, cached (None when it does not parse)."""
    Chem = rdkit_chem()
    return Chem.MolFromSmiles(smiles)


def _sanitised_smiles(mol) -> str | None:
    Chem = rdkit_chem()
    try:
        Chem.SanitizeMol(mol)
        s = Chem.MolToSmiles(mol)
    except Exception:  # noqa: BLE001 - an unsanitisable outcome is skipped, as the official code does
        return None
    return canonical(s)


@functools.lru_cache(maxsize=100_000)
def forward_products(smarts: str, reactants: tuple[str, ...]) -> tuple[str, ...]:
    """The single-product outcomes of a forward SMARTS on reactants in this order, canonical and sorted (cached)."""
    rxn = _reaction(smarts)
    mols = [mol_from_smiles(r) for r in reactants]
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
    m = mol_from_smiles(product)
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
    m = mol_from_smiles(smiles)
    return m is not None and m.HasSubstructMatch(rxn.GetReactantTemplate(role))


def datamol_reactions() -> dict[str, dict]:
    """datamol's bundled reaction table (``datamol/data/reactions.json``, 127 named reactions), read directly.

    Returns
    -------
    dict of str to dict
        Name to the entry (``syn_smarts``, ``retro_smarts``, ``long_name``, ...), a new copy.
    """
    return json.loads(json.dumps(datamol_table()))


@functools.lru_cache(maxsize=1)
def datamol_table() -> dict:
    """datamol's reaction table as read once per process (shared: do not change it; see datamol_reactions)."""
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
    table = datamol_table()
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


__all__ = [
    "DEFAULT_TEMPLATES",
    "Template",
    "datamol_reactions",
    "load_templates",
    "enumerate_routes",
    "replay_forward",
]
