"""The public API: certify a PyG model's prediction on a graph against every allowed edge change.

``certify(model, data, budget=0.1, bounds="sbt")`` builds the MIP of the paper (§3) for each target class,
solves it with SCIP (handing it the greedy attack as a starting solution unless ``greedy_start=False``), and
returns a :class:`Report` of :class:`Certificate` objects. A ``not_robust``
certificate carries the edge flips, re-checked by running the user's PyG model on the perturbed graph;
flips the model does not confirm are never reported (the verdict is then ``unknown``).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed
from ._checks import as_array, kept_modes
from .baselines import basic_bounds
from .bounds import MODES, Bounds, topology_bounds
from .mip import CertificationMIP, SolveResult
from .network import GRAPH, NODE, SageNetwork, check_network, module_from_network, network_from_module, run_model
from .space import AttackSpace, check_space, official_graph_budgets

ROBUST, NOT_ROBUST, UNKNOWN = "robust", "not_robust", "unknown"
MARGIN_TOL = 1e-6

#: SCIP parameter presets. "official": SCIP's defaults plus the official ``settings/*.set`` (which only switch
#: bounds and the separator, applied by ``bounds``). "fast": also ``separating/aggregation/freq = -1``: SCIP's
#: aggregation (c-MIR) separator spends most of the root time on these big-M models without closing the gap
#: (measured with the official plugin on MUTAG; on SCIP 10 it stalls even 300-variable models for seconds).
SETTINGS: dict[str, dict] = {"official": {}, "fast": {"separating/aggregation/freq": -1}}


@dataclass
class Certificate:
    """The verdict against one target class.

    ``margin_lower`` is SCIP's dual bound on ``min logit[predicted] - logit[target]`` over the allowed
    attacks, ``margin_upper`` the best attack found (``inf`` when none). ``robust`` means
    ``margin_lower > 0``; ``not_robust`` means the flips below make the model's own ``logit[target]`` exceed
    ``logit[predicted]`` (``checked_margin < 0``); ``unknown`` means neither was proven within the time limit.

    Parameters
    ----------
    verdict : {"robust", "not_robust", "unknown"}
    predicted, target : int
        The clean prediction and the target class.
    bounds : str
        The bound mode used.
    margin_lower, margin_upper : float
        Dual bound and best attack's margin.
    seconds, build_seconds : float
        Solve time (the chosen clock) and time to build the MIP.
    nodes, lp_iterations : int
        SCIP's branch-and-bound nodes and LP iterations.
    status : str
        SCIP's status (or "greedy attack").
    global_budget : int
        Delta.
    flips, added, removed : list of (int, int)
        The attack's flipped node pairs (in ``data``'s numbering), split into added and removed edges.
    checked_margin : float, optional
        ``logit[predicted] - logit[target]`` of the user's model on the attacked graph.
    perturbed_edge_index : int array [2, E'], optional
        The attacked graph.
    perturbed_x : float array [n, F], optional
        The attack's features (feature boxes only).
    local_cuts, global_cuts : int
        Cuts added by the abt separator.
    """

    verdict: str
    predicted: int
    target: int
    bounds: str
    margin_lower: float
    margin_upper: float
    seconds: float
    build_seconds: float
    nodes: int
    lp_iterations: int
    status: str
    global_budget: int
    flips: list[tuple[int, int]] = field(default_factory=list)
    added: list[tuple[int, int]] = field(default_factory=list)
    removed: list[tuple[int, int]] = field(default_factory=list)
    checked_margin: float | None = None
    perturbed_edge_index: np.ndarray | None = None
    perturbed_x: np.ndarray | None = None
    local_cuts: int = 0
    global_cuts: int = 0

    def as_dict(self) -> dict:
        """The certificate as JSON-ready values (arrays as lists).

        Returns
        -------
        dict
        """
        d = asdict(self)
        d["perturbed_edge_index"] = None if self.perturbed_edge_index is None else self.perturbed_edge_index.tolist()
        d["perturbed_x"] = None if self.perturbed_x is None else self.perturbed_x.tolist()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Certificate":
        """The inverse of :meth:`as_dict`.

        Parameters
        ----------
        d : dict

        Returns
        -------
        Certificate
        """
        d = dict(d)
        for key in ("flips", "added", "removed"):
            d[key] = [tuple(int(v) for v in p) for p in d.get(key) or []]
        if d.get("perturbed_edge_index") is not None:
            d["perturbed_edge_index"] = np.asarray(d["perturbed_edge_index"], dtype=np.int64).reshape(2, -1)
        if d.get("perturbed_x") is not None:
            d["perturbed_x"] = np.asarray(d["perturbed_x"], dtype=np.float64)
        return cls(**d)


@dataclass
class Report:
    """Certificates against every requested target class; ``verdict`` is ``robust`` when all are.

    Parameters
    ----------
    certificates : list of Certificate
        One per target class.
    predicted : int
        The model's clean prediction.
    task : {"graph", "node"}
    global_budget : int, optional
        Delta, the most flips in total.
    budget_of : str
        How Delta was obtained (for a fraction: of which edges or arcs).
    """

    certificates: list[Certificate]
    predicted: int
    task: str
    global_budget: int | None = None
    budget_of: str = ""

    @property
    def verdict(self) -> str:
        vs = {c.verdict for c in self.certificates}
        if NOT_ROBUST in vs:
            return NOT_ROBUST
        return ROBUST if vs == {ROBUST} else UNKNOWN

    def as_dict(self) -> dict:
        """The report as JSON-ready values.

        Returns
        -------
        dict
        """
        return {
            "verdict": self.verdict,
            "predicted": self.predicted,
            "task": self.task,
            "global_budget": self.global_budget,
            "budget_of": self.budget_of,
            "certificates": [c.as_dict() for c in self.certificates],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Report":
        """The inverse of :meth:`as_dict`.

        Parameters
        ----------
        d : dict

        Returns
        -------
        Report
        """
        return cls(
            certificates=[Certificate.from_dict(c) for c in d["certificates"]],
            predicted=int(d["predicted"]),
            task=str(d["task"]),
            global_budget=d.get("global_budget"),
            budget_of=str(d.get("budget_of", "")),
        )

    @property
    def seconds(self) -> float:
        """Solve time over every target (build time included)."""
        return float(sum(c.seconds + c.build_seconds for c in self.certificates))

    @property
    def nodes(self) -> int:
        """Branch-and-bound nodes over every target."""
        return int(sum(c.nodes for c in self.certificates))

    def __getitem__(self, target: int) -> Certificate:
        for c in self.certificates:
            if c.target == target:
                return c
        raise KeyError(target)


# ----------------------------------------------------------------------------------------------- inputs
def _as_network(model, task: str | None, relu) -> tuple[torch.nn.Module, SageNetwork]:
    if isinstance(model, SageNetwork):
        return module_from_network(model), model
    if not isinstance(model, torch.nn.Module):
        raise InputError(f"model must be a PyG torch.nn.Module or a SageNetwork, got {type(model).__name__}")
    return model, network_from_module(model, task=task, relu=relu)


def _graph_arrays(data) -> tuple[np.ndarray, np.ndarray]:
    if data is None or isinstance(data, (str, bytes, np.ndarray, torch.Tensor, list, tuple, dict)):
        raise InputError(f"data must be a torch_geometric Data with x and edge_index, got {type(data).__name__}")
    x = getattr(data, "x", None)
    ei = getattr(data, "edge_index", None)
    if x is None or ei is None:
        raise InputError("data must have x [n, F] and edge_index [2, E] (a torch_geometric Data)")
    num_graphs = getattr(data, "num_graphs", 1) if getattr(data, "batch", None) is not None else 1
    if isinstance(num_graphs, int) and num_graphs > 1:
        raise InputError(
            f"data is a batch of {num_graphs} graphs; certify takes one graph",
            "certify each graph of a Batch, Dataset or DataLoader with certify_dataset",
        )
    x = as_array(x, "data.x", ndim=2).astype(np.float64)
    ei = as_array(ei, "data.edge_index", shape=(2, None), dtype="integer", allow_empty=True)
    if ei.size and (ei.min() < 0 or ei.max() >= x.shape[0]):
        raise InputError(f"data.edge_index refers to nodes outside [0, {x.shape[0]})")
    return x, ei.astype(np.int64)


def _feature_box(x: np.ndarray, lb, ub) -> tuple[np.ndarray, np.ndarray]:
    def box(value, name):
        if value is None:
            return x.copy()
        arr = as_array(value, name, ndim=(0, 1, 2))
        try:
            return np.broadcast_to(arr, x.shape).astype(np.float64).copy()
        except ValueError:
            raise InputError(f"{name} must broadcast to data.x's shape {x.shape}, got {arr.shape}") from None

    lo, hi = box(lb, "feature_lb"), box(ub, "feature_ub")
    if not (lo <= x).all():
        raise InputError("feature_lb <= data.x must hold")
    if not (x <= hi).all():
        raise InputError("data.x <= feature_ub must hold")
    return lo, hi


def _local(local_budget, n: int, default: np.ndarray, subset: np.ndarray | None = None) -> np.ndarray:
    """Q_v: one integer or one per node of ``data`` (``n`` nodes); node task: restricted to ``subset``."""
    if local_budget is None:
        return default
    q = as_array(local_budget, "local_budget", ndim=(0, 1), dtype="integer")
    if q.ndim == 1 and q.shape[0] != n:
        raise InputError(f"local_budget must be one integer or one per node of data ({n}), got {q.shape[0]} entries")
    if (q < 0).any():
        raise InputError("local_budget must be integers >= 0 (one, or one per node)")
    q = np.broadcast_to(q, (n,)).astype(np.int64)
    return q if subset is None else q[subset]


def _check_budget_args(budget, global_budget) -> tuple[float | None, int | None]:
    budget = check_float(budget, "budget", min_val=0.0, max_val=1.0, allow_none=True)
    global_budget = check_int(global_budget, "global_budget", min_val=0, allow_none=True)
    return budget, global_budget


def _global(budget, global_budget, entries: int) -> int | None:
    budget, global_budget = _check_budget_args(budget, global_budget)
    if global_budget is not None:
        return global_budget
    if budget is None:
        return None
    return math.ceil(entries * budget)


#: SCIP parameters that other arguments of :func:`certify` set, and the argument to use instead.
_MANAGED = {
    "limits/time": "time_limit",
    "limits/gap": "decision",
    "limits/absgap": "decision",
    "limits/primal": "decision",
    "randomization/randomseedshift": "seed",
    "lp/threads": "threads",
    "parallel/maxnthreads": "threads",
    "timing/clocktype": "clock",
}
_SCIP_DEFAULTS: dict | None = None


def check_scip_params(scip_params) -> dict:
    """Refuse unknown SCIP parameter names, values of the wrong type or range, and tolerances.

    ``numerics/*`` (tolerances that could turn a wrong bound into a certificate) and the parameters other
    arguments of :func:`certify` set are refused; every other value is tried on a scratch SCIP model.

    Parameters
    ----------
    scip_params : dict of str to bool, int, float or str, or None

    Returns
    -------
    dict
        A copy of the parameters.
    """
    global _SCIP_DEFAULTS
    if scip_params is None:
        return {}
    if not isinstance(scip_params, dict):
        raise InputError(
            f"scip_params must be a dict of SCIP parameter names to values, got {type(scip_params).__name__}"
        )
    from pyscipopt import Model

    scratch = Model()
    scratch.hideOutput()
    if _SCIP_DEFAULTS is None:
        _SCIP_DEFAULTS = scratch.getParams()
    out = {}
    for name, value in scip_params.items():
        if not isinstance(name, str) or name not in _SCIP_DEFAULTS:
            close = [k for k in _SCIP_DEFAULTS if isinstance(name, str) and name.split("/")[-1] in k][:3]
            raise InputError(
                f"scip_params: unknown SCIP parameter {name!r}",
                f"similar names: {', '.join(close)}" if close else "see SCIP's parameter list (model.getParams())",
            )
        if name in _MANAGED:
            raise InputError(f"scip_params: {name!r} is set by the argument {_MANAGED[name]!r}; use that instead")
        if name.startswith("numerics/"):
            raise InputError(
                f"scip_params: {name!r} is a numerical tolerance, which could turn a wrong bound into a certificate",
                "numerics/* parameters are refused",
            )
        default = _SCIP_DEFAULTS[name]
        kind = type(default)
        value = value.item() if isinstance(value, np.generic) else value
        ok = (
            isinstance(value, bool)
            if kind is bool
            else (isinstance(value, int) and not isinstance(value, bool))
            if kind is int
            else (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))
            if kind is float
            else isinstance(value, str)
        )
        if not ok:
            raise InputError(f"scip_params: {name!r} takes a {kind.__name__} (like {default!r}), got {value!r}")
        try:
            scratch.setParam(name, value)
        except Exception as exc:  # SCIP's range check
            raise InputError(f"scip_params: {name!r} = {value!r} is refused by SCIP ({exc})") from None
        out[name] = value
    scratch.freeProb()
    return out


def build_space(
    net: SageNetwork,
    data,
    *,
    budget: float | None = 0.1,
    global_budget: int | None = None,
    strength: int = 2,
    local_budget=None,
    node: int | None = None,
    feature_lb=None,
    feature_ub=None,
    max_nodes: int = 64,
) -> tuple[AttackSpace, np.ndarray, np.ndarray, np.ndarray]:
    """The attack space of ``data`` and, for node classification, the k-hop subgraph it lives on.

    Parameters
    ----------
    net : SageNetwork
    data : torch_geometric.data.Data
    budget, global_budget, strength, local_budget, node, feature_lb, feature_ub, max_nodes
        As in :func:`certify`.

    Returns
    -------
    space : AttackSpace
    x : float array
        The features of the modelled nodes.
    subset : int array
        Their indices in ``data``.
    edge_index : int array [2, E]
        The edges of ``data``.
    """
    net = check_network(net)
    _check_budget_args(budget, global_budget)
    strength = check_int(strength, "strength", min_val=0)
    max_nodes = check_int(max_nodes, "max_nodes", min_val=1)
    x, ei = _graph_arrays(data)
    n, F = x.shape
    if F != net.in_features:
        raise InputError(f"data.x has {F} features but the model's input size is {net.in_features}")
    if net.task == GRAPH:
        if node is not None:
            raise InputError("node is for node classification; this model classifies graphs")
        if n > max_nodes:
            raise InputError(
                f"the graph has {n} nodes, more than max_nodes={max_nodes}",
                "the MIP grows as n^2 x hidden width per layer; raise max_nodes to try anyway",
            )
        adj = np.zeros((n, n), dtype=bool)
        if (ei[0] == ei[1]).any():
            raise InputError(
                "data.edge_index has self-loops, which graph classification does not model",
                "remove them (the official MIP ignores self-loops)",
            )
        adj[ei[0], ei[1]] = True
        if (adj != adj.T).any():
            raise InputError("data.edge_index must be undirected (both directions of every edge)")
        if adj.sum() != ei.shape[1]:
            raise InputError("data.edge_index has duplicate edges")
        strength = check_int(strength, "strength", min_val=0)
        g = _global(budget, global_budget, ei.shape[1])
        if g is None:
            raise InputError("give budget (a fraction of the edges) or global_budget (a number of flips)")
        _, q_default = official_graph_budgets(ei.shape[1], adj.sum(axis=1), 0.0, int(strength))
        q = _local(local_budget, n, q_default)
        lo, hi = _feature_box(x, feature_lb, feature_ub)
        return (
            AttackSpace(adj=adj, directed=False, global_budget=g, local_budget=q, x_lb=lo, x_ub=hi),
            x,
            np.arange(n),
            ei,
        )
    # node classification: the k-hop subgraph around the node (official k_hop_subgraph(index, 2, ...))
    if node is None:
        raise InputError("node must be given for node classification", f"a node index in [0, {n})")
    node = check_int(node, "node", min_val=0, max_val=n - 1)
    from torch_geometric.utils import k_hop_subgraph

    subset, sub_ei, mapping, _ = k_hop_subgraph(
        int(node), len(net.sage), torch.as_tensor(ei), relabel_nodes=True, num_nodes=n
    )
    subset = subset.numpy()
    sub_ei = sub_ei.numpy()
    k = len(subset)
    if k > max_nodes:
        raise InputError(
            f"the {len(net.sage)}-hop subgraph of node {node} has {k} nodes, more than max_nodes={max_nodes}",
            "raise max_nodes to try anyway",
        )
    adj = np.zeros((k, k), dtype=bool)
    adj[sub_ei[0], sub_ei[1]] = True
    if adj.sum() != sub_ei.shape[1]:
        raise InputError("data.edge_index has duplicate arcs")
    g = _global(budget, global_budget, sub_ei.shape[1])
    if g is None:
        raise InputError("give global_budget (a number of arc deletions) for node classification")
    strength = check_int(strength, "strength", min_val=0)
    q = _local(local_budget, n, np.full(k, int(strength), dtype=np.int64), subset)
    lo, hi = _feature_box(x, feature_lb, feature_ub)
    space = AttackSpace(
        adj=adj,
        directed=True,
        global_budget=g,
        local_budget=q,
        x_lb=lo[subset],
        x_ub=hi[subset],
        target_node=int(mapping[0]),
    )
    return space, x[subset], subset, ei


def compute_bounds(net: SageNetwork, space: AttackSpace, mode: str) -> Bounds:
    """The root bounds of a bound mode.

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace
    mode : {"basic", "sbt", "abt"}
        ``basic`` (official basic settings), ``sbt`` or ``abt`` (the root bounds of abt are the sbt bounds;
        the abt separator tightens them below the root).

    Returns
    -------
    Bounds
    """
    net = check_network(net)
    space = check_space(space, net)
    mode = check_choice(mode, "mode", MODES)
    if mode == "basic":
        return basic_bounds(net, space)
    return topology_bounds(net, space)


# ----------------------------------------------------------------------------------------------- checks
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
    time_limit = check_float(time_limit, "time_limit", min_val=0.0, include_boundaries="right")
    threads = check_int(threads, "threads", min_val=1)
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
    _check_budget_args(budget, global_budget)
    params = {**SETTINGS[settings], **check_scip_params(scip_params)}
    if target is not None:
        raw = [target] if isinstance(target, (int, np.integer, bool)) or not hasattr(target, "__iter__") else target
        if isinstance(raw, (str, bytes)):
            raise InputError(f"target must be a class index or a list of them, got {target!r}")
        raw = list(raw)
        if not raw:
            raise InputError("target is empty", "give a class index, a list of them, or None for every other class")
    module, net = _as_network(model, task, relu)
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
    x_full, _ = _graph_arrays(data)
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
    from .attacks import greedy_attack

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
