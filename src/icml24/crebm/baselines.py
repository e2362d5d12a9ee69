"""The peers of CREBM's reranker: the base planner's own ranking and reranking by a route-level heuristic.

The third baseline of the paper, the energy without preference fine-tuning (MLE only), is the same
:func:`~icml24.crebm.rerank` with the stage-A model (:func:`~icml24.crebm.pretrain_energy`).
"""

from __future__ import annotations

from typing import Sequence

from ..errors import InputError
from ..validation import check_choice
from ._checks import check_instances
from .search import PlannedRoute
from .world_routes import Route, Stock, check_one_target, check_stock

HEURISTICS = ("price", "steps")


def _routes(routes) -> list[PlannedRoute]:
    if isinstance(routes, (Route, PlannedRoute)):
        raise InputError("routes must be a sequence of PlannedRoute, got one route", "wrap it in a list")
    out = check_instances(routes, "routes", PlannedRoute, allow_empty=True)
    check_one_target([p.route for p in out])
    return out


def base_ranking(routes: Sequence[PlannedRoute]) -> list[Route]:
    """The planner's own order: by base cost, stable (the Retro*-0 ranking CREBM is compared with).

    Parameters
    ----------
    routes : sequence of PlannedRoute
        The routes of one target (none is fine).

    Returns
    -------
    list of Route
    """
    return [p.route for p in sorted(_routes(routes), key=lambda p: p.cost)]


def heuristic_ranking(routes: Sequence[PlannedRoute], heuristic: str, stock: Stock | None = None) -> list[Route]:
    """Rerank by a route-level heuristic, ties broken by the base cost.

    Parameters
    ----------
    routes : sequence of PlannedRoute
        The routes of one target (none is fine).
    heuristic : {"price", "steps"}
        ``"price"``: the summed stock price of the starting materials (needs ``stock``); ``"steps"``: the
        number of reactions.
    stock : Stock, optional
        Required for ``"price"``.

    Returns
    -------
    list of Route
    """
    rs = _routes(routes)
    heuristic = check_choice(heuristic, "heuristic", HEURISTICS)
    if stock is not None or heuristic == "price":
        check_stock(stock, "stock")
    if heuristic == "price":
        return [p.route for p in sorted(rs, key=lambda p: (p.route.price(stock), p.cost))]
    return [p.route for p in sorted(rs, key=lambda p: (p.route.n_steps, p.cost))]


__all__ = ["HEURISTICS", "base_ranking", "heuristic_ranking"]
