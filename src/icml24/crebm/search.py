"""The base planner: Retro*-0 beam search over a one-step model, as ``get_route_result`` of the official code.

A partial route keeps a stack of open molecules (each with its depth); the first one is expanded with the
one-step model's top templates (tried in probability order until ``expansion_topk`` valid outcomes), each
outcome costing ``-log10 p(template)``; reactants in stock become starting materials, the others are pushed on
the stack one level deeper; an open molecule deeper than ``max_depth`` drops its partial route; after every
wave the queue is sorted by cost and truncated to ``beam_size``. A route is complete when an expansion leaves
no open molecule. Complete routes are sorted by cost and deduplicated by their InChIKey[:14] sets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..errors import InputError
from ..validation import check_bool, check_float, check_int, check_seed, check_tensor
from ._checks import check_returned, check_sequence
from .onestep import Neuralsym
from .world_routes import Route, Step, Stock, check_smiles


@dataclass(frozen=True)
class PlannedRoute:
    """A route found by the planner with its base cost.

    Parameters
    ----------
    route : Route
    cost : float
        Finite. Sum over expansions of ``-log10 p(template)`` (Retro*-0), plus the value terms with a value function.
    """

    route: Route
    cost: float

    def __post_init__(self) -> None:
        if not isinstance(self.route, Route):
            raise InputError(f"route must be a Route, got {type(self.route).__name__}")
        check_float(self.cost, "cost")


def propose(
    model: Neuralsym, smiles: str, topk: int = 5, *, first_outcome_only: bool = False, max_templates: int = 100
) -> list[tuple[tuple[str, ...], str, float]]:
    """One-step proposals: top templates by probability applied until ``topk`` valid outcomes (``Proposer.propose``).

    Parameters
    ----------
    model : Neuralsym
    smiles : str
        The molecule to disconnect.
    topk : int, default 5
    first_outcome_only : bool, default False
        Keep only a template's first outcome, as the official code (``precs[0]``); by default every distinct
        outcome of a template is a proposal, in RDKit's order.
    max_templates : int, default 100
        Templates tried at most (official 100).

    Returns
    -------
    list of (reactants, template name, cost)
        ``cost = -log10(p + 1e-10)``.
    """
    if not isinstance(model, Neuralsym):
        raise InputError(f"model must be a Neuralsym, got {type(model).__name__}")
    smiles = check_smiles(smiles, "smiles")
    topk = check_int(topk, "topk", min_val=1)
    max_templates = check_int(max_templates, "max_templates", min_val=1)
    first_outcome_only = check_bool(first_outcome_only, "first_outcome_only")
    probs = model.template_probs(smiles)
    order = probs.argsort(descending=True).tolist()[:max_templates]
    out: list[tuple[tuple[str, ...], str, float]] = []
    for i in order:
        tpl = model.templates[i]
        outcomes = tpl.retro(smiles)
        for r in outcomes[:1] if first_outcome_only else outcomes:
            out.append((r, tpl.name, -math.log10(float(probs[i]) + 1e-10)))
            if len(out) == topk:
                return out
    return out


def retro_star_0(
    target: str,
    model: Neuralsym,
    stock: Stock,
    max_depth: int,
    *,
    beam_size: int = 5,
    expansion_topk: int | None = None,
    first_outcome_only: bool = False,
    value_fn: Callable[[str], float] | None = None,
    max_waves: int = 50,
) -> list[PlannedRoute]:
    """Plan routes to ``target`` with the Retro*-0 beam search of the official code.

    Parameters
    ----------
    target : str
        Target SMILES.
    model : Neuralsym
        The one-step model.
    stock : Stock
        Starting materials are the molecules in it (by InChIKey[:14]).
    max_depth : int
        Depth limit (the benchmark protocol gives the ground-truth route's depth). As in the official loop, an
        open molecule at depth ``d`` is still expanded when ``d <= max_depth``.
    beam_size : int, default 5
        Queue width and proposals per expansion (official 5 at inference, 50 for preference data).
    expansion_topk : int, optional
        Proposals per expansion; ``beam_size`` when None (the official code uses the same number).
    first_outcome_only : bool, default False
        See :func:`propose`.
    value_fn : callable ``str -> float``, optional
        Retro*: the cost of a partial route adds ``value_fn`` of each new open molecule and subtracts that of
        the expanded one (a learned cost-to-go; finite numbers only); Retro*-0 when None.
    max_waves : int, default 50
        Safety bound on expansion waves.

    Returns
    -------
    list of PlannedRoute
        Complete routes, sorted by cost, one per starting-material set (the cheapest).
    """
    if not isinstance(model, Neuralsym):
        raise InputError(f"model must be a Neuralsym, got {type(model).__name__}")
    if not isinstance(stock, Stock):
        raise InputError(f"stock must be a Stock, got {type(stock).__name__}")
    if len(stock) == 0:
        raise InputError("stock is empty", "give at least one purchasable molecule")
    target = check_smiles(target, "target")
    max_depth = check_int(max_depth, "max_depth", min_val=0)
    beam_size = check_int(beam_size, "beam_size", min_val=1)
    k = beam_size if expansion_topk is None else check_int(expansion_topk, "expansion_topk", min_val=1)
    max_waves = check_int(max_waves, "max_waves", min_val=1)
    if value_fn is not None and not callable(value_fn):
        raise InputError("value_fn must be a callable SMILES -> float, or None")
    first_outcome_only = check_bool(first_outcome_only, "first_outcome_only")

    def value(m: str) -> float:
        return check_returned(value_fn(m), "value_fn", m)

    cache: dict[str, list] = {}
    # item: (cost, open stack [(mol, depth)], starting materials, steps)
    queue: list[tuple[float, list[tuple[str, int]], list[str], list[Step]]] = [(0.0, [(target, 0)], [], [])]
    answers: list[tuple[float, Route]] = []
    for _ in range(max_waves):
        if not queue:
            break
        nxt = []
        for cost, stack, materials, steps in queue:
            mol, depth = stack[0]
            if depth > max_depth:
                continue
            if mol not in cache:
                cache[mol] = propose(model, mol, k, first_outcome_only=first_outcome_only)
            for reactants, name, c in cache[mol]:
                rest = list(stack[1:])
                mats = list(materials)
                new_steps = steps + [Step(mol, reactants, name)]
                in_stock = [r in stock for r in reactants]
                new_cost = cost + c
                if all(in_stock) and not rest:
                    answers.append((new_cost, Route(target, tuple(new_steps))))
                    continue
                for r, ok in zip(reactants, in_stock):
                    if ok:
                        mats.append(r)
                    else:
                        rest = [(r, depth + 1)] + rest
                        if value_fn is not None:
                            new_cost += value(r)
                if value_fn is not None and depth > 0:
                    new_cost -= value(mol)
                nxt.append((new_cost, rest, mats, new_steps))
        queue = sorted(nxt, key=lambda x: x[0])[:beam_size]
    answers.sort(key=lambda x: x[0])
    seen: set[tuple[str, ...]] = set()
    out = []
    for c, r in answers:
        key = r.key()
        if key not in seen:
            seen.add(key)
            out.append(PlannedRoute(r, float(c)))
    return out


class ValueMLP(nn.Module):
    """Retro*'s learned cost-to-go of a molecule (official ``value_mlp.py``): 2048-bit Morgan (radius 2) ->
    128 ReLU -> 1, softplus output (a non-negative cost).

    Parameters
    ----------
    fp_size : int, default 2048
    hidden_size : int, default 128
    seed : int, default 0
    """

    def __init__(self, fp_size: int = 2048, hidden_size: int = 128, seed: int = 0) -> None:
        super().__init__()
        self.fp_size = check_int(fp_size, "fp_size", min_val=1)
        hidden_size = check_int(hidden_size, "hidden_size", min_val=1)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(check_seed(seed))
            self.net = nn.Sequential(nn.Linear(self.fp_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, 1))

    def featurize(self, smiles: Sequence[str]) -> torch.Tensor:
        """Bit fingerprints ``(N, fp_size)``.

        Parameters
        ----------
        smiles : sequence of str

        Returns
        -------
        torch.Tensor
        """
        from rdkit import Chem
        from rdkit.Chem.rdFingerprintGenerator import GetMorganGenerator

        smiles = check_sequence(smiles, "smiles", allow_empty=True)
        mols = [Chem.MolFromSmiles(check_smiles(s, "smiles")) for s in smiles]
        gen = GetMorganGenerator(radius=2, fpSize=self.fp_size)
        rows = [gen.GetFingerprintAsNumPy(m) for m in mols]
        return torch.as_tensor(np.stack(rows), dtype=torch.float32) if rows else torch.zeros(0, self.fp_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Costs ``softplus(net(x))``.

        Parameters
        ----------
        x : torch.Tensor
            ``(N, fp_size)``.

        Returns
        -------
        torch.Tensor
            ``(N,)``.
        """
        return F.softplus(self.net(check_tensor(x, "x", shape=(None, self.fp_size)))).squeeze(-1)

    @torch.no_grad()
    def value(self, smiles: str) -> float:
        """The estimated cost of making one molecule (use as ``value_fn`` of :func:`retro_star_0`).

        Parameters
        ----------
        smiles : str

        Returns
        -------
        float
        """
        was = self.training
        self.eval()
        try:
            return float(self(self.featurize([smiles]))[0])
        finally:
            self.train(was)


def train_value_mlp(
    smiles: Sequence[str], costs: Sequence[float], *, epochs: int = 100, lr: float = 1e-3, seed: int = 0
) -> ValueMLP:
    """Fit a :class:`ValueMLP` to molecule costs (e.g. the summed ``-log10 p`` of a molecule's ground-truth
    sub-route, as the official ``get_molecule_cost.py``) by mean squared error with Adam.

    Parameters
    ----------
    smiles : sequence of str
    costs : sequence of float
        Non-negative, one per molecule.
    epochs : int, default 100
        Full-batch steps.
    lr : float, default 1e-3
    seed : int, default 0

    Returns
    -------
    ValueMLP
        Trained, in evaluation mode.
    """
    smiles, costs = check_sequence(smiles, "smiles"), check_sequence(costs, "costs")
    if len(smiles) != len(costs):
        raise InputError(f"costs must hold one number per molecule ({len(smiles)}), got {len(costs)}")
    y = torch.tensor([check_float(c, "costs", min_val=0.0) for c in costs], dtype=torch.float32)
    epochs = check_int(epochs, "epochs", min_val=1)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="neither")
    for s in smiles:
        check_smiles(s, "smiles")
    model = ValueMLP(seed=seed)
    x = model.featurize(smiles)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        loss = F.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()
