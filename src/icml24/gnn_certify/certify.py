"""The public API: certify a PyG model's prediction on a graph against every allowed edge change.

``certify(model, data, budget=0.1, bounds="sbt")`` builds the MIP of the paper (§3) for each target class,
solves it with SCIP (handing it the greedy attack as a starting solution unless ``greedy_start=False``), and
returns a :class:`Report` of :class:`Certificate` objects. A ``not_robust``
certificate carries the edge flips, re-checked by running the user's PyG model on the perturbed graph;
flips the model does not confirm are never reported (the verdict is then ``unknown``).

What it builds on: :mod:`~icml24.gnn_certify.problem` (the attack space and root bounds from the arguments),
:mod:`~icml24.gnn_certify.mip` (the MIP and its solve), :mod:`~icml24.gnn_certify.report` (certificates and
verdicts) and :mod:`~icml24.gnn_certify.scip_settings`; ``build_space``, ``compute_bounds``, ``Certificate``,
``Report``, the verdicts and ``SETTINGS`` stay importable from here.
"""

from __future__ import annotations

import math
import time
from typing import Sequence

import numpy as np

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed
from ._checks import THREADS_MAX, TIME_MAX, kept_modes
from .attacks import greedy_attack
from .bounds import MODES
from .mip import CertificationMIP, SolveResult
from .network import GRAPH, NODE, SageNetwork
from .problem import as_network, build_space, check_budget_args, compute_bounds, graph_arrays
from .reading import run_model
from .report import NOT_ROBUST, ROBUST, UNKNOWN, Certificate, Report
from .scip_settings import SETTINGS, check_scip_params
from .space import AttackSpace

MARGIN_TOL = 1e-6


def _perturbed(space: AttackSpace, flips: np.ndarray, subset: np.ndarray, ei: np.ndarray, n_full: int):
    """Edge lists of the attacked graph in the user's node numbering, and the flip lists."""
    sl = space.slots[flips]
    pairs = [(int(subset[u]), int(subset[v])) for u, v in sl]
    present = space.slot_present[flips]
    added = [p for p, pr in zip(pairs, present) if not pr]
    removed = [p for p, pr in zip(pairs, present) if pr]
    adj = np.zeros((n_full, n_full), dtype=bool)
    adj[ei[0], ei[1]] = True
    for u, v in added:
        adj[u, v] = True
        if not space.directed:
            adj[v, u] = True
    for u, v in removed:
        adj[u, v] = False
        if not space.directed:
            adj[v, u] = False
    src, dst = np.nonzero(adj)
    return pairs, added, removed, np.stack([src, dst]).astype(np.int64)


def _model_margin(
    model, net: SageNetwork, x: np.ndarray, ei: np.ndarray, orig: int, target: int, node: int | None
) -> float:
    out = run_model(model, x, ei, net.task)
    if net.task == NODE:
        out = out[node]
    return float(out[orig] - out[target])


# ----------------------------------------------------------------------------------------------- API
def certify(
    model,
    data,
    *,
    budget: float | None = 0.1,
    global_budget: int | None = None,
    strength: int = 2,
    local_budget: int | Sequence[int] | None = None,
    target: int | Sequence[int] | None = None,
    node: int | None = None,
    bounds: str = "sbt",
    feature_lb=None,
    feature_ub=None,
    time_limit: float = 60.0,
    seed: int = 0,
    threads: int = 1,
    task: str | None = None,
    relu: Sequence[bool] | None = None,
    max_nodes: int = 64,
    decision: bool = True,
    clock: str = "wall",
    settings: str = "fast",
    scip_params: dict | None = None,
    attack_first: bool = False,
    margin_tol: float = MARGIN_TOL,
    graph_time_limit: float | None = None,
    greedy_start: bool = True,
) -> Report:
    """Prove that no allowed attack changes the model's prediction, or find one that does (paper §3).

    Parameters
    ----------
    model : torch.nn.Module or SageNetwork
        ``SAGEConv(aggr="sum")`` layers with ReLU, then (graph classification) global add-pool and ``Linear``
        layers; e.g. :class:`SAGEGraphClassifier` or a model read by :func:`load_model_json`.
    data : torch_geometric.data.Data
        One graph: ``x`` [n, F] and ``edge_index`` (undirected, without self-loops, for graph classification).
        A ``Batch`` of several graphs is refused: :func:`~icml24.gnn_certify.certify_dataset` certifies each.
    budget : float
        Global budget as a fraction in [0, 1]: ``Delta = ceil(budget * E)`` with ``E`` the ``edge_index``
        entries (graph classification, official ``create_temporary_data_graphclassification.py``; default 0.1)
        or the arcs of the node's k-hop subgraph (node classification). ``report.budget_of`` says which.
    global_budget : int, optional
        Delta as a number of flips (overrides ``budget``; node classification's official convention).
    local_budget : int or sequence of int, optional
        Q_v given directly (overrides ``strength``): one integer, or one per node of ``data``.
    strength : int
        Local attack strength ``s``: ``Q_v = max(0, deg(v) - maxdeg + s)`` (graph) or ``Q_v = s`` (node);
        official experiments: 2.
    target : int or sequence of int, optional
        Target classes; default every class other than the prediction (official label shift ``k``:
        ``target = (prediction + k) % C``).
    node : int
        Node classification: the node to certify (its ``len(model.convs)``-hop subgraph is modelled).
    bounds : "basic" | "sbt" | "abt"
        Official ``settings/*_{basic,sbt,abt}.set``.
    feature_lb, feature_ub : array-like, optional
        A box for the features (default: fixed features, as in the paper's experiments).
    time_limit : float
        Seconds per target class (> 0; official runs: 60 s).
    seed : int
        SCIP's random seed shift (>= 0).
    threads : int
        SCIP/LP threads (>= 1).
    task : {"graph", "node"}, optional
        Checked against the model's reading (default: read from the model).
    relu : sequence of bool, optional
        ReLU after each layer, as in :func:`~icml24.gnn_certify.network.network_from_module`.
    max_nodes : int
        Refuse larger graphs (node classification: larger k-hop subgraphs); the MIP grows as n^2.
    decision : bool
        Stop once the sign is proven (official ``limits/gap = inf``; also at an attack with a negative margin);
        False solves to optimality.
    clock : "wall" | "cpu"
        SCIP's clock for the time limit and reported times.
    settings : "fast" | "official"
        SCIP parameter preset (:data:`SETTINGS`).
    scip_params : dict, optional
        SCIP parameters that add to or override the preset.
    attack_first : bool
        Try the greedy attack of :mod:`~icml24.gnn_certify.attacks` before the MIP (not in the paper; fixed
        features only). A re-checked attack ends that target with ``not_robust`` (status "greedy attack").
    margin_tol : float
        A ``robust`` verdict needs a dual bound above this (at least SCIP's feasibility tolerance 1e-6, the
        default; a larger value can only turn verdicts into ``unknown``).
    graph_time_limit : float, optional
        Seconds (on ``clock``) for all targets together: each target gets ``min(time_limit, what is left)``,
        and targets reached after it ran out are ``unknown`` (status "graph time limit").
    greedy_start : bool
        The primal heuristic (not in the paper; fixed features only): hand SCIP the greedy attack of
        :mod:`~icml24.gnn_certify.attacks` as a starting solution. In decision mode an attack with a negative
        margin ends the run before presolving; its flips are re-checked on ``model`` like any SCIP solution.
        It cannot make a run ``robust`` (that needs the dual bound). False: the paper's setting.

    Returns
    -------
    Report
        One :class:`Certificate` per target; ``report.verdict`` is robust / not_robust / unknown.
    """
    bounds = check_choice(bounds, "bounds", MODES)
    time_limit = check_float(time_limit, "time_limit", min_val=0.0, max_val=TIME_MAX, include_boundaries="right")
    threads = check_int(threads, "threads", min_val=1, max_val=THREADS_MAX)
    seed = check_seed(seed)
    clock = check_choice(clock, "clock", ("wall", "cpu"))
    settings = check_choice(settings, "settings", SETTINGS)
    decision = check_bool(decision, "decision")
    attack_first = check_bool(attack_first, "attack_first")
    greedy_start = check_bool(greedy_start, "greedy_start")
    # a tolerance below SCIP's own (1e-6) could let a numerically wrong dual bound through as a certificate
    margin_tol = check_float(margin_tol, "margin_tol", min_val=MARGIN_TOL)
    graph_time_limit = check_float(
        graph_time_limit, "graph_time_limit", min_val=0.0, include_boundaries="right", allow_none=True
    )
    if task is not None:
        task = check_choice(task, "task", (GRAPH, NODE))
    check_budget_args(budget, global_budget)
    params = {**SETTINGS[settings], **check_scip_params(scip_params)}
    if target is not None:
        raw = [target] if isinstance(target, (int, np.integer, bool)) or not hasattr(target, "__iter__") else target
        if isinstance(raw, (str, bytes)):
            raise InputError(f"target must be a class index or a list of them, got {target!r}")
        raw = list(raw)
        if not raw:
            raise InputError("target is empty", "give a class index, a list of them, or None for every other class")
    module, net = as_network(model, task, relu)
    if task is not None and task != net.task:
        raise InputError(f"task={task!r} does not match the model ({net.task} classification)")
    C = net.num_classes
    if target is not None:
        targets = sorted({check_int(t, "target", min_val=0, max_val=C - 1) for t in raw})
    space, x_sub, subset, ei = build_space(
        net,
        data,
        budget=budget,
        global_budget=global_budget,
        strength=strength,
        local_budget=local_budget,
        node=node,
        feature_lb=feature_lb,
        feature_ub=feature_ub,
        max_nodes=max_nodes,
    )
    x_full, _ = graph_arrays(data)
    n_full = x_full.shape[0]
    with kept_modes(module):
        clean = run_model(module, x_full, ei, net.task)
        if net.task == NODE:
            clean = clean[node]
        orig = int(np.argmax(clean))
        if target is None:
            targets = [t for t in range(C) if t != orig]
        elif orig in targets:
            raise InputError(f"target must be a class other than the prediction {orig}, got {orig}")
        clk = time.process_time if clock == "cpu" else time.perf_counter
        start = clk()
        b = compute_bounds(net, space, bounds)
        certs = []
        for t in targets:
            left = math.inf if graph_time_limit is None else graph_time_limit - (clk() - start)
            if left <= 0.01:
                certs.append(_out_of_time(orig, int(t), bounds, space.global_budget))
                continue
            if attack_first and space.fixed_features:
                cert = _greedy_certificate(
                    module, net, space, x_full, subset, ei, n_full, orig, int(t), bounds, node, clock, seed
                )
                if cert is not None:
                    certs.append(cert)
                    continue
            mip = CertificationMIP(
                net, space, b, orig, int(t), separator=(bounds == "abt"), clean_x=x_sub, greedy_start=greedy_start
            )
            try:
                res = mip.solve(
                    time_limit=min(time_limit, left),
                    seed=seed,
                    threads=threads,
                    decision=decision,
                    clock=clock,
                    params=params,
                )
            finally:
                mip.free()
            certs.append(
                _interpret(res, module, net, space, x_full, subset, ei, n_full, orig, int(t), bounds, node, margin_tol)
            )
    if net.task == GRAPH:
        of = f"the {ei.shape[1]} edge_index entries of the graph (both directions of each edge)"
    else:
        of = f"the {int(space.adj.sum())} arcs of node {node}'s {len(net.sage)}-hop subgraph (deletions only)"
    how = (
        f"global_budget={space.global_budget} flips"
        if global_budget is not None
        else f"budget={budget:g} of {of}: Delta = {space.global_budget}"
    )
    return Report(certificates=certs, predicted=orig, task=net.task, global_budget=space.global_budget, budget_of=how)


def _out_of_time(orig: int, target: int, mode: str, global_budget: int) -> Certificate:
    return Certificate(
        verdict=UNKNOWN,
        predicted=orig,
        target=target,
        bounds=mode,
        margin_lower=-math.inf,
        margin_upper=math.inf,
        seconds=0.0,
        build_seconds=0.0,
        nodes=0,
        lp_iterations=0,
        status="graph time limit",
        global_budget=global_budget,
    )


def _greedy_certificate(
    module, net, space, x_full, subset, ei, n_full, orig, target, mode, node, clock, seed
) -> Certificate | None:
    clk = time.process_time if clock == "cpu" else time.perf_counter
    t0 = clk()
    margin, flips = greedy_attack(net, space, orig, target, restarts=3, seed=seed)
    if not margin < 0 or not space.is_feasible(flips):
        return None
    pairs, added, removed, pei = _perturbed(space, flips, subset, ei, n_full)
    checked = _model_margin(module, net, x_full, pei, orig, target, node)
    if not checked < 0:
        return None
    return Certificate(
        verdict=NOT_ROBUST,
        predicted=orig,
        target=target,
        bounds=mode,
        margin_lower=-math.inf,
        margin_upper=float(margin),
        seconds=clk() - t0,
        build_seconds=0.0,
        nodes=0,
        lp_iterations=0,
        status="greedy attack",
        global_budget=space.global_budget,
        flips=pairs,
        added=added,
        removed=removed,
        checked_margin=checked,
        perturbed_edge_index=pei,
    )


def _interpret(
    res: SolveResult, module, net, space, x_full, subset, ei, n_full, orig, target, mode, node, tol
) -> Certificate:
    cert = Certificate(
        verdict=UNKNOWN,
        predicted=orig,
        target=target,
        bounds=mode,
        margin_lower=res.dual,
        margin_upper=res.primal,
        seconds=res.seconds,
        build_seconds=res.build_seconds,
        nodes=res.nodes,
        lp_iterations=res.lp_iterations,
        status=res.status,
        global_budget=space.global_budget,
        local_cuts=res.local_cuts,
        global_cuts=res.global_cuts,
    )
    if res.flips is not None and res.primal < 0 and space.is_feasible(res.flips):
        pairs, added, removed, pei = _perturbed(space, res.flips, subset, ei, n_full)
        x = x_full.copy()
        if res.x is not None:
            x[subset] = res.x
        margin = _model_margin(module, net, x, pei, orig, target, node)
        cert.checked_margin = margin
        if margin < 0:
            cert.verdict = NOT_ROBUST
            cert.flips, cert.added, cert.removed = pairs, added, removed
            cert.perturbed_edge_index = pei
            cert.perturbed_x = None if res.x is None else x
            return cert
    # robust only from the certified (dual) bound, and never beside an attack SCIP itself found
    if res.dual > tol and res.primal > tol and res.status != "infeasible":
        cert.verdict = ROBUST
    return cert


__all__ = [
    "certify",
    "Certificate",
    "Report",
    "SETTINGS",
    "build_space",
    "compute_bounds",
    "ROBUST",
    "NOT_ROBUST",
    "UNKNOWN",
]
