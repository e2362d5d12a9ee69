"""CREBM: preference criteria over routes, preference pairs, and reranking with a conditional residual energy.

``P(T | m, c) ~ P_base(T | m) exp(-E(T | m, c))`` (paper Eq. 3): a planner's routes are reranked by
``total = base_cost + alpha * E`` (the official ``rerank.py``, ``alpha = 1``). The energy is trained on pairs of
the planner's own candidates ranked by a criterion ``phi`` (higher is better): the official feasibility
criterion (forward similarity + similarity to the ground-truth materials, the ground truth scored 2), or a
route's price, step count or yield.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ..errors import InputError
from ..validation import check_float, check_int
from ._checks import check_instances, check_returned, check_sequence
from .energy import EnergyTransformer, energies
from .search import PlannedRoute
from .world_routes import Route, Stock, canonical, check_one_target, check_smiles, check_stock, check_yields
from .world_templates import Template, replay_forward

Criterion = Callable[[Route], float]


# --------------------------------------------------------------------------------------------- criteria
@functools.lru_cache(maxsize=50_000)
def _feature_fp(smiles: str):
    from rdkit import Chem

    return _feature_gen().GetSparseCountFingerprint(Chem.MolFromSmiles(smiles))


@functools.lru_cache(maxsize=1)
def _feature_gen():
    from rdkit.Chem import rdFingerprintGenerator as rfg

    return rfg.GetMorganGenerator(radius=2, atomInvariantsGenerator=rfg.GetMorganFeatureAtomInvGen())


def tanimoto(a: str, b: str) -> float:
    """Tanimoto similarity of feature-invariant Morgan (radius 2) count fingerprints (the official ``getfp``).

    Parameters
    ----------
    a, b : str
        SMILES (multi-fragment strings allowed).

    Returns
    -------
    float
        In ``[0, 1]``.
    """
    from rdkit import DataStructs

    a, b = check_smiles(a, "a"), check_smiles(b, "b")
    return float(DataStructs.TanimotoSimilarity(_feature_fp(a), _feature_fp(b)))


def _check_route(route, name: str = "route") -> Route:
    if not isinstance(route, Route):
        raise InputError(f"{name} must be a Route, got {type(route).__name__}")
    return route


def feasibility_criterion(gt: Route, templates: Sequence[Template]) -> Criterion:
    """The official preference score: ``forward_sim + target_sim``; the ground truth gets 2 (the maximum).

    ``forward_sim`` is the similarity of the product obtained by replaying the route forward with its
    templates (the template executor stands in for the official seq2seq forward model) to the target;
    ``target_sim`` the similarity of the route's starting-material string to the ground truth's.

    Parameters
    ----------
    gt : Route
        The ground-truth route of the target.
    templates : sequence of Template
        The templates the routes use (their forward SMARTS replay the route).

    Returns
    -------
    callable ``Route -> float``
    """
    gt = _check_route(gt, "gt")
    if isinstance(templates, Template):
        raise InputError("templates must be a sequence of Template, got one Template", "wrap it in a list")
    tpls = tuple(check_instances(templates, "templates", Template))
    gt_key, gt_mats, gt_target = gt.key(), gt.materials_string(), canonical(gt.target)

    def phi(route: Route) -> float:
        route = _check_route(route)
        check_one_target([route], "route", gt_target)
        if route.key() == gt_key:
            return 2.0
        product = replay_forward(route, tpls)
        forward = tanimoto(product, gt.target) if product else 0.0
        return forward + tanimoto(route.materials_string(), gt_mats)

    return phi


def cost_criterion(stock: Stock) -> Criterion:
    """``phi = -sum(price of starting materials)``: prefer cheaper routes.

    Parameters
    ----------
    stock : Stock

    Returns
    -------
    callable ``Route -> float``
    """
    check_stock(stock)

    def phi(route: Route) -> float:
        return -_check_route(route).price(stock)

    return phi


def steps_criterion() -> Criterion:
    """``phi = -number of reactions``: prefer shorter routes.

    Returns
    -------
    callable ``Route -> float``
    """

    def phi(route: Route) -> float:
        return -float(_check_route(route).n_steps)

    return phi


def yield_criterion(yields: Mapping[str, float]) -> Criterion:
    """``phi = prod(step yields)``: prefer higher overall yield.

    Parameters
    ----------
    yields : mapping of str to float
        Yield in ``(0, 1]`` per template name.

    Returns
    -------
    callable ``Route -> float``
    """
    ys = check_yields(yields, zero=False)

    def phi(route: Route) -> float:
        return _check_route(route).route_yield(ys)

    return phi


# ------------------------------------------------------------------------------------------ preferences
def preference_pairs(
    target: str,
    routes: Sequence[Route],
    criterion: Criterion,
    *,
    gt: Route | None = None,
    max_candidates: int = 10,
) -> list[tuple[str, str, str]]:
    """Ordered pairs ``(target, chosen materials, rejected materials)`` from candidates ranked by ``phi``.

    Candidates are deduplicated by InChIKey sets (the first kept), at most ``max_candidates`` of them (official
    10), the ground truth added when given and missing; sorted by ``phi`` descending, every pair ``i < j`` with
    ``phi_i > phi_j`` is a pair (ties give none; the official code keeps tied pairs in sort order).

    Parameters
    ----------
    target : str
    routes : sequence of Route
        The planner's candidates, all leading to ``target`` (as ``gt`` does).
    criterion : callable ``Route -> float``
        Higher is better.
    gt : Route, optional
        The ground truth, added to the candidates.
    max_candidates : int, default 10

    Returns
    -------
    list of (str, str, str)
    """
    target = check_smiles(target, "target")
    if isinstance(routes, Route):
        raise InputError("routes must be a sequence of Route, got one Route", "wrap it in a list")
    routes = check_instances(routes, "routes", Route, allow_empty=True)
    if not callable(criterion):
        raise InputError("criterion must be a callable Route -> float")
    max_candidates = check_int(max_candidates, "max_candidates", min_val=2)
    check_one_target(routes, "routes", target)
    cands: list[Route] = []
    keys: set = set()
    if gt is not None:
        check_one_target([_check_route(gt, "gt")], "gt", target)
        cands.append(gt)
        keys.add(gt.key())
    for r in routes:
        if r.key() not in keys and len(cands) < max_candidates:
            keys.add(r.key())
            cands.append(r)
    mats = [r.materials_string() for r in cands]
    scored = [(check_returned(criterion(r), "criterion", m), m) for r, m in zip(cands, mats)]
    scored.sort(key=lambda x: -x[0])
    return [
        (target, scored[i][1], scored[j][1])
        for i in range(len(scored))
        for j in range(i + 1, len(scored))
        if scored[i][0] > scored[j][0]
    ]


# ---------------------------------------------------------------------------------------------- rerank
@dataclass(frozen=True)
class RankedRoute:
    """A route after reranking.

    Parameters
    ----------
    route : Route
    base_cost : float
        The planner's cost.
    energy : float
        ``E(T | target)``; 0 when no energy model was given.
    total : float
        ``base_cost + alpha * energy``.
    """

    route: Route
    base_cost: float
    energy: float
    total: float

    def __post_init__(self) -> None:
        _check_route(self.route)
        for name in ("base_cost", "energy", "total"):
            check_float(getattr(self, name), name)


def rerank(
    routes: Sequence[Route | PlannedRoute],
    target: str,
    model: EnergyTransformer | None,
    alpha: float = 1.0,
    *,
    base_costs: Sequence[float] | None = None,
    top: int | None = None,
    stock: Stock | None = None,
) -> list[RankedRoute]:
    """Rerank a planner's routes by ``base_cost + alpha * E(route | target)`` (official ``rerank.py``).

    Works on routes from any planner: ``PlannedRoute`` carries its cost, plain ``Route`` takes ``base_costs``
    (default 0 each). The sort is stable, so ``alpha = 0`` returns the planner's order exactly.

    Parameters
    ----------
    routes : sequence of Route or PlannedRoute
        All leading to ``target``.
    target : str
        The target SMILES (the condition of the energy).
    model : EnergyTransformer or None
        The energy; None gives energy 0 (the base order).
    alpha : float, default 1.0
        Weight of the energy (official ``--alpha 1.0``); must be >= 0.
    base_costs : sequence of float, optional
        Costs for plain routes, in order.
    top : int, optional
        Keep this many (official: the beam size); all when None.
    stock : Stock, optional
        When given, every route must be complete: all its starting materials in ``stock``.

    Returns
    -------
    list of RankedRoute
    """
    alpha = check_float(alpha, "alpha", min_val=0.0)
    target = check_smiles(target, "target")
    if isinstance(routes, (Route, PlannedRoute)):
        raise InputError("routes must be a sequence of Route or PlannedRoute, got one route", "wrap it in a list")
    items = check_instances(routes, "routes", (Route, PlannedRoute), allow_empty=True)
    if model is not None and not isinstance(model, EnergyTransformer):
        raise InputError(f"model must be an EnergyTransformer or None, got {type(model).__name__}")
    rs = [r.route if isinstance(r, PlannedRoute) else r for r in items]
    costs = [r.cost if isinstance(r, PlannedRoute) else 0.0 for r in items]
    if base_costs is not None:
        base_costs = check_sequence(base_costs, "base_costs", allow_empty=True)
        if len(base_costs) != len(rs):
            raise InputError(f"base_costs must hold one number per route ({len(rs)}), got {len(base_costs)}")
        costs = [check_float(c, "base_costs") for c in base_costs]
    check_one_target(rs, "routes", target)
    top = None if top is None else check_int(top, "top", min_val=1)
    if stock is not None:
        check_stock(stock)
        for i, r in enumerate(rs):
            missing = [x for x in r.starting_materials() if x not in stock]
            if missing:
                raise InputError(
                    f"routes[{i}] is not complete: {missing[0]} is not in stock",
                    "pass complete routes, or leave stock=None",
                )
    if not rs:
        return []
    if model is None:
        es = [0.0] * len(rs)
    else:
        es = energies(model, [target] * len(rs), [r.materials_string() for r in rs]).tolist()
    out = [RankedRoute(r, float(c), float(e), float(c) + alpha * float(e)) for r, c, e in zip(rs, costs, es)]
    out = sorted(out, key=lambda x: x.total)
    return out[:top] if top is not None else out
