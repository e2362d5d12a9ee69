"""The verification MIP (paper §3, eqs. (2)-(4); ``probdata_robustclassify.c`` / ``probdata_nodeclassify.c``)
on PySCIPOpt; its aggressive-bounds-tightening separator (abt, paper §3.3) is in
:mod:`~icml24.gnn_certify.abt_separator`.

Variables: binary ``a_s`` per slot (an undirected pair or an existing arc); ``h[l][v, f]`` the output of SAGE
layer ``l``; binary ``s[l][v, f]`` per ReLU whose pre-activation bounds straddle 0; ``z[l][m, g] = a * h_u`` per
message ``m = u -> v`` (McCormick for binary x continuous: ``z <= h - L_h(1 - a)``, ``z >= h - U_h(1 - a)``,
``z <= U_z a``, ``z >= L_z a``); pool and dense variables; objective ``min logit[orig] - logit[target]``.
ReLU: ``h >= pre``, ``h >= 0``, ``h <= pre - L(1 - s)``, ``h <= U s``. Budgets: ``sum flips <= Delta`` and, per node,
``sum flips touching v <= Q_v``. ``limits/gap = inf`` stops SCIP once the primal and dual bounds share a sign
(the official "decision" mode).

Faithful to the official model, with these equivalent reformulations (same optimum, same LP relaxation):

- the pre-activation is an explicit free variable ``pre = b + W1 h_v + W2 sum z`` (the official code repeats
  the sum inside two ReLU rows); SCIP's presolve aggregates it away;
- a ReLU whose bounds are already >= 0 (or <= 0) is the identity (or 0) instead of a binary fixed by its bounds;
  products with an output fixed to 0 are omitted; the official code creates and fixes them;
- slots that no feasible attack can flip (an endpoint with ``Q_v = 0``, or ``Delta = 0``) are constants instead
  of binaries that SCIP's presolve would fix (the official code creates them; the sbt bounds, like the
  official ones, still count them as attackable, while abt sees them fixed as the official separator does
  after presolve);
- the layer-1 sum over fixed input features is linear in ``a`` (as in the official code); with feature boxes
  (the paper's encoding, not the official experiments) the input gets variables and products too;
- node classification: only the nodes within reach of the target node are modelled (arcs are only deleted,
  so the others cannot influence its logits); the official code models the whole 2-hop subgraph.

Additions: the unperturbed graph is handed to SCIP as a starting solution (SCIP then stops as soon as the
dual bound turns positive); with ``greedy_start`` (``certify``'s default, not the paper's) so is the greedy
attack of :mod:`~icml24.gnn_certify.attacks`, and decision mode also stops at an attack whose margin is below
``-PRIMAL_STOP`` (``limits/primal``), so a not-robust run found by the greedy start ends before presolving
(the official decision mode waits for a finite dual bound, i.e. presolving and the root LP).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..extras import require

require("torch_geometric", "pyscipopt", extra="graphs", what="gnn_certify")

from pyscipopt import Model, quicksum

from .abt_separator import TopologySepa, has_var
from .attacks import greedy_attack
from .bounds import Bounds
from .network import GRAPH, SageNetwork
from .space import AttackSpace

PRIMAL_STOP = 1e-6  # decision mode stops at an attack of margin <= -PRIMAL_STOP (SCIP's feasibility tolerance)


@dataclass
class SolveResult:
    """What one SCIP run returned.

    Parameters
    ----------
    status : str
        SCIP's status ("optimal", "timelimit", "gaplimit", ...).
    primal, dual : float
        Best attack's margin (``inf`` when none) and the dual bound on the minimum margin.
    seconds, build_seconds : float
        Solve time (the chosen clock; the greedy start's time included) and time to build the model (same clock).
    nodes, lp_iterations : int
    flips : bool array [S] or None
        The best solution's flips.
    x : float array or None
        The best solution's features (feature boxes).
    local_cuts, global_cuts, separator_calls : int
        What the abt separator did.
    stats : dict
        Further counters.
    """

    status: str
    primal: float
    dual: float
    seconds: float
    build_seconds: float
    nodes: int
    lp_iterations: int
    flips: np.ndarray | None  # bool [S] of the best solution
    x: np.ndarray | None  # features of the best solution (feature boxes)
    local_cuts: int = 0
    global_cuts: int = 0
    separator_calls: int = 0
    stats: dict = field(default_factory=dict)


class _Assignment:
    """(variable, value) pairs (PySCIPOpt variables are not hashable)."""

    def __init__(self) -> None:
        self.pairs: list = []

    def __setitem__(self, var, value: float) -> None:
        self.pairs.append((var, value))


def needed_nodes(net: SageNetwork, space: AttackSpace) -> list[np.ndarray]:
    """Whose output each SAGE layer models: all nodes (graph task), or those reaching the target node.

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace

    Returns
    -------
    list of bool arrays [n]
        One per SAGE layer.
    """
    n, L = space.n, len(net.sage)
    if net.task == GRAPH:
        return [np.ones(n, dtype=bool) for _ in range(L)]
    need = [np.zeros(n, dtype=bool) for _ in range(L)]
    need[-1][space.target_node] = True
    for l in range(L - 1, 0, -1):
        cur = need[l].copy()
        m = cur[space.msg_dst]
        cur[space.msg_src[m]] = True
        need[l - 1] = cur
    return need


class CertificationMIP:
    """Build the MIP of one (graph, target class, bound mode) and solve it with SCIP.

    Parameters
    ----------
    net : SageNetwork
    space : AttackSpace
    bounds : Bounds
        Used for big-Ms and variable bounds (basic or sbt).
    orig, target : int
        Classes; the objective is ``logit[orig] - logit[target]``.
    separator : bool, default False
        Add the abt separator (recomputes topology bounds at every node from the local bounds of the adjacency
        variables and separates ReLU and product rows with them; official ``separating/ReLUrc/freq = 1``,
        ``expbackoff = 1``).
    clean_x : float array [n, F], optional
        Features of the unperturbed graph (for the starting solution).
    warm_start : bool, default True
        Hand SCIP the unperturbed graph as a starting solution.
    greedy_start : bool, default False
        Also hand SCIP the greedy attack of :func:`~icml24.gnn_certify.attacks.greedy_attack` (fixed features
        only; not in the paper). In decision mode an attack with a negative margin ends the run before
        presolving (``limits/primal``); it never changes what a robust verdict needs (the dual bound).

    References
    ----------
    Hojny, Zhang, Campos, Misener (ICML 2024), §3, eqs. (2)-(4); official ``probdata_robustclassify.c``.
    """

    def __init__(
        self,
        net: SageNetwork,
        space: AttackSpace,
        bounds: Bounds,
        orig: int,
        target: int,
        separator: bool = False,
        clean_x: np.ndarray | None = None,
        warm_start: bool = True,
        greedy_start: bool = False,
    ) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        self.net, self.space, self.bounds = net, space, bounds
        self.orig, self.target = int(orig), int(target)
        self.model = Model("gnn_certify")
        self.model.hideOutput()
        self.need = needed_nodes(net, space)
        self.clean_x = space.x_lb if clean_x is None else np.asarray(clean_x, dtype=np.float64)
        self._build()
        self.sepa: TopologySepa | None = None
        if separator:
            self.sepa = TopologySepa(self)
            self.model.includeSepa(
                self.sepa,
                "ReLUrc",
                "topology-based bounds tightening (abt)",
                priority=0,
                freq=1,
                maxbounddist=1.0,
                usessubscip=False,
                delay=False,
            )
            self.model.setParam("separating/ReLUrc/expbackoff", 1)
        if warm_start:
            self._add_solution(np.zeros(space.num_slots, dtype=bool), self.clean_x)
        self.greedy_margin = math.inf
        self.greedy_seconds = {"wall": 0.0, "cpu": 0.0}
        if greedy_start and space.fixed_features and space.global_budget > 0:
            self._add_greedy_solution()
        self.build_times = {
            "wall": time.perf_counter() - t0 - self.greedy_seconds["wall"],
            "cpu": time.process_time() - c0 - self.greedy_seconds["cpu"],
        }
        self.build_seconds = self.build_times["wall"]

    # ------------------------------------------------------------------------------------------ build
    def _build(self) -> None:
        m, net, sp, b = self.model, self.net, self.space, self.bounds
        n = sp.n
        present = sp.slot_present
        frozen = sp.frozen  # slots no attack can flip: constants (SCIP's presolve would fix them)
        self.frozen = frozen
        self.a = [None if frozen[s] else m.addVar(f"a_{u}_{v}", vtype="B") for s, (u, v) in enumerate(sp.slots)]
        # budgets (official createGlobalAttackBudgetCons / createLocalAttackBudgetCons)
        flips = [None if frozen[s] else ((1 - self.a[s]) if present[s] else self.a[s]) for s in range(sp.num_slots)]
        free = np.flatnonzero(~frozen)
        if free.size > sp.global_budget:
            m.addCons(quicksum(flips[s] for s in free) <= sp.global_budget, name="globalbudget")
        inc = sp.incidence
        for v in range(n):
            idx = np.flatnonzero(inc[v] & ~frozen)
            if idx.size > sp.local_budget[v]:
                m.addCons(quicksum(flips[s] for s in idx) <= int(sp.local_budget[v]), name=f"localbudget{v}")

        fixed_input = sp.fixed_features
        # the input layer
        in_need = self.need[0].copy()
        in_need[sp.msg_src[in_need[sp.msg_dst]]] = True
        F0 = net.in_features
        self.x = np.empty((n, F0), dtype=object)
        if not fixed_input:
            for v in np.flatnonzero(in_need):
                for g in range(F0):
                    self.x[v, g] = m.addVar(f"x_{v}_{g}", lb=float(sp.x_lb[v, g]), ub=float(sp.x_ub[v, g]))
        self.h: list[np.ndarray] = []
        self.pre: list[np.ndarray] = []
        self.s: list[np.ndarray] = []
        self.z: list[np.ndarray] = []  # z[l]: products with the input of SAGE layer l, [M, F_in]
        self.z_on: list[np.ndarray] = []  # messages modelled for layer l
        prev_h = self.x
        prev_lo, prev_hi = b.inp_lo, b.inp_hi
        for l, layer in enumerate(net.sage):
            need = self.need[l]
            Fi, Fo = layer.in_features, layer.out_features
            msg_on = need[sp.msg_dst]
            z = np.empty((len(sp.msg_src), Fi), dtype=object)
            linear_in_a = l == 0 and fixed_input
            if not linear_in_a:
                zl, zh = b.aux_lo[l], b.aux_hi[l]
                used = np.flatnonzero(layer.w_nbr.any(axis=0))  # a zero column never reads z (GIN's node-wise maps)
                for mi in np.flatnonzero(msg_on & ~frozen[sp.msg_slot]):
                    u, a = sp.msg_src[mi], self.a[sp.msg_slot[mi]]
                    for g in used:
                        hv = prev_h[u, g]
                        lh, uh = float(prev_lo[u, g]), float(prev_hi[u, g])
                        if hv is None or (lh == 0.0 and uh == 0.0):
                            continue
                        lz, uz = float(zl[mi, g]), float(zh[mi, g])
                        zv = m.addVar(f"z{l}_{mi}_{g}", lb=lz, ub=uz)
                        z[mi, g] = zv
                        m.addCons(zv - hv - lh * a <= -lh)
                        m.addCons(zv - hv - uh * a >= -uh)
                        m.addCons(zv - uz * a <= 0)
                        m.addCons(zv - lz * a >= 0)
            self.z.append(z)
            self.z_on.append(msg_on)
            # pre-activations
            pre = np.empty((n, Fo), dtype=object)
            h = np.empty((n, Fo), dtype=object)
            s = np.empty((n, Fo), dtype=object)
            plo, phi = b.pre_lo[l], b.pre_hi[l]
            into = [np.flatnonzero(msg_on & (sp.msg_dst == v) & ~frozen[sp.msg_slot]) for v in range(n)]
            fixed_in = [
                np.flatnonzero(msg_on & (sp.msg_dst == v) & frozen[sp.msg_slot] & present[sp.msg_slot])
                for v in range(n)
            ]
            if linear_in_a:
                xr = sp.x_lb
                root = xr @ layer.w_root.T + layer.bias  # [n, Fo]
                msg_c = xr @ layer.w_nbr.T  # [n, Fo]: W2 x_u
            for v in np.flatnonzero(need):
                for f in range(Fo):
                    if linear_in_a:
                        expr = quicksum(
                            float(msg_c[sp.msg_src[mi], f]) * self.a[sp.msg_slot[mi]]
                            for mi in into[v]
                            if msg_c[sp.msg_src[mi], f] != 0.0
                        )
                        const = float(root[v, f] + sum(msg_c[sp.msg_src[mi], f] for mi in fixed_in[v]))
                    else:
                        terms = [
                            float(layer.w_root[f, g]) * prev_h[v, g]
                            for g in range(Fi)
                            if prev_h[v, g] is not None and layer.w_root[f, g] != 0.0
                        ]
                        terms += [
                            float(layer.w_nbr[f, g]) * z[mi, g]
                            for mi in into[v]
                            for g in range(Fi)
                            if z[mi, g] is not None and layer.w_nbr[f, g] != 0.0
                        ]
                        terms += [
                            float(layer.w_nbr[f, g]) * prev_h[sp.msg_src[mi], g]
                            for mi in fixed_in[v]
                            for g in range(Fi)
                            if prev_h[sp.msg_src[mi], g] is not None and layer.w_nbr[f, g] != 0.0
                        ]
                        expr = quicksum(terms)
                        const = float(layer.bias[f])
                    lo_, hi_ = float(plo[v, f]), float(phi[v, f])
                    if not layer.relu or lo_ >= 0.0:
                        p = m.addVar(f"pre{l}_{v}_{f}", lb=lo_, ub=hi_)
                        m.addCons(p - expr == const)
                        pre[v, f] = h[v, f] = p
                    elif hi_ <= 0.0:
                        pre[v, f] = None
                        h[v, f] = None  # the ReLU is 0 for every feasible attack
                    else:
                        p = m.addVar(f"pre{l}_{v}_{f}", lb=None, ub=None)
                        m.addCons(p - expr == const)
                        hv = m.addVar(f"h{l}_{v}_{f}", lb=0.0, ub=hi_)
                        sv = m.addVar(f"s{l}_{v}_{f}", vtype="B")
                        m.addCons(hv - p >= 0)
                        m.addCons(hv - p - lo_ * sv <= -lo_)
                        m.addCons(hv - hi_ * sv <= 0)
                        pre[v, f], h[v, f], s[v, f] = p, hv, sv
            self.pre.append(pre)
            self.h.append(h)
            self.s.append(s)
            prev_h, prev_lo, prev_hi = h, b.out_lo[l], b.out_hi[l]

        # head
        if net.task == GRAPH:
            Fl = net.sage[-1].out_features
            cur = []
            for f in range(Fl):
                p = m.addVar(f"pool_{f}", lb=float(b.out_lo[-1][:, f].sum()), ub=float(b.out_hi[-1][:, f].sum()))
                m.addCons(p - quicksum(h[v, f] for v in range(n) if h[v, f] is not None) == 0)
                cur.append(p)
            self.pool = cur
            self.dense_h: list[list] = []
            self.dense_pre: list[list] = []
            self.dense_s: list[list] = []
            for d_i, d in enumerate(net.dense):
                nxt, pres, ss = [], [], []
                for f in range(d.weight.shape[0]):
                    expr = quicksum(float(d.weight[f, g]) * cur[g] for g in range(len(cur)) if cur[g] is not None)
                    lo_, hi_ = float(b.dense_pre_lo[d_i][f]), float(b.dense_pre_hi[d_i][f])
                    if not d.relu or lo_ >= 0.0:
                        p = m.addVar(f"dense{d_i}_{f}", lb=lo_, ub=hi_)
                        m.addCons(p - expr == float(d.bias[f]))
                        nxt.append(p), pres.append(p), ss.append(None)
                    elif hi_ <= 0.0:
                        nxt.append(None), pres.append(None), ss.append(None)
                    else:
                        p = m.addVar(f"densepre{d_i}_{f}", lb=None, ub=None)
                        m.addCons(p - expr == float(d.bias[f]))
                        hv = m.addVar(f"dense{d_i}_{f}", lb=0.0, ub=hi_)
                        sv = m.addVar(f"denses{d_i}_{f}", vtype="B")
                        m.addCons(hv - p >= 0)
                        m.addCons(hv - p - lo_ * sv <= -lo_)
                        m.addCons(hv - hi_ * sv <= 0)
                        nxt.append(hv), pres.append(p), ss.append(sv)
                self.dense_h.append(nxt)
                self.dense_pre.append(pres)
                self.dense_s.append(ss)
                cur = nxt
            logits = cur
        else:
            logits = list(h[space_target(self.space)])
        self.logits = logits
        obj = []
        if logits[self.orig] is not None:
            obj.append(logits[self.orig])
        if logits[self.target] is not None:
            obj.append(-1.0 * logits[self.target])
        m.setObjective(quicksum(obj), "minimize")

    # ------------------------------------------------------------------------------------------ start
    def _forward_values(self, flips: np.ndarray, x: np.ndarray) -> "_Assignment":
        """Values of every MIP variable for a given attack (used for the starting solution)."""
        net, sp = self.net, self.space
        adj = sp.flipped_adj(flips).astype(np.float64)
        a_slot = adj[sp.slots[:, 0], sp.slots[:, 1]]
        vals = _Assignment()
        for s_i, var in enumerate(self.a):
            if var is not None:
                vals[var] = float(a_slot[s_i])
        hprev = np.asarray(x, dtype=np.float64)
        for v in range(sp.n):
            for g in range(self.x.shape[1]):
                if self.x[v, g] is not None:
                    vals[self.x[v, g]] = float(hprev[v, g])
        for l, layer in enumerate(net.sage):
            z = self.z[l]
            for mi, g in zip(*np.nonzero(has_var(z))):
                vals[z[mi, g]] = float(a_slot[sp.msg_slot[mi]] * hprev[sp.msg_src[mi], g])
            pre = hprev @ layer.w_root.T + (adj.T @ hprev) @ layer.w_nbr.T + layer.bias
            hcur = np.maximum(pre, 0.0) if layer.relu else pre
            for v, f in zip(*np.nonzero(has_var(self.pre[l]))):
                vals[self.pre[l][v, f]] = float(pre[v, f])
                vals[self.h[l][v, f]] = float(hcur[v, f])
                if self.s[l][v, f] is not None:
                    vals[self.s[l][v, f]] = 1.0 if pre[v, f] > 0 else 0.0
            hprev = hcur
        if net.task == GRAPH:
            cur = hprev.sum(axis=0)
            for f, p in enumerate(self.pool):
                vals[p] = float(cur[f])
            for d_i, d in enumerate(net.dense):
                pre = d.weight @ cur + d.bias
                cur = np.maximum(pre, 0.0) if d.relu else pre
                for f in range(len(pre)):
                    if self.dense_pre[d_i][f] is not None:
                        vals[self.dense_pre[d_i][f]] = float(pre[f])
                        vals[self.dense_h[d_i][f]] = float(cur[f])
                    if self.dense_s[d_i][f] is not None:
                        vals[self.dense_s[d_i][f]] = 1.0 if pre[f] > 0 else 0.0
        return vals

    def _add_solution(self, flips: np.ndarray, x: np.ndarray) -> bool:
        vals = self._forward_values(flips, x)
        sol = self.model.createSol()
        for var, val in vals.pairs:
            self.model.setSolVal(sol, var, val)
        return bool(self.model.addSol(sol, free=True))

    def _add_greedy_solution(self) -> None:
        """The primal heuristic: the greedy attack (one batched forward pass per flip) as a solution."""
        w0, c0 = time.perf_counter(), time.process_time()
        sp = self.space
        margin, flips = greedy_attack(self.net, sp, self.orig, self.target, restarts=3, seed=0)
        if flips.any() and not (flips & self.frozen).any() and sp.is_feasible(flips):
            self._add_solution(flips, sp.x_lb)
            self.greedy_margin = float(margin)
        self.greedy_seconds = {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}

    # ------------------------------------------------------------------------------------------ solve
    def solve(
        self,
        time_limit: float = 60.0,
        seed: int = 0,
        threads: int = 1,
        decision: bool = True,
        clock: str = "wall",
        params: dict | None = None,
    ) -> SolveResult:
        """Solve with SCIP.

        Parameters
        ----------
        time_limit : float, default 60
            Seconds on ``clock``.
        seed : int, default 0
            SCIP's random seed shift.
        threads : int, default 1
        decision : bool, default True
            Stop once the sign of the optimum is proven: a positive dual bound (``limits/gap = inf``, as the
            official code) or an attack with a negative margin (``limits/primal = -1e-6``; the official code
            waits for a finite dual bound); False solves to optimality (``limits/gap = 0``).
        clock : {"wall", "cpu"}, default "wall"
        params : dict, optional
            Further SCIP parameters.

        Returns
        -------
        SolveResult
        """
        m = self.model
        m.setParam("limits/time", float(time_limit))
        m.setParam("limits/gap", 1e20 if decision else 0.0)
        if decision:  # an attack below -PRIMAL_STOP decides too, before the dual bound is finite
            m.setParam("limits/primal", -PRIMAL_STOP)
        else:
            m.setParam("limits/absgap", 0.0)
        m.setParam("randomization/randomseedshift", int(seed))
        m.setParam("lp/threads", int(threads))
        m.setParam("parallel/maxnthreads", int(threads))
        m.setParam("timing/clocktype", 1 if clock == "cpu" else 2)
        for k, v in (params or {}).items():
            m.setParam(k, v)
        m.optimize()
        status = m.getStatus()
        primal = m.getPrimalbound() if m.getNSols() > 0 else math.inf
        dual = m.getDualbound()
        flips = x = None
        if m.getNSols() > 0:
            best = m.getBestSol()
            a = np.array(
                [self.space.slot_present[s] if v is None else m.getSolVal(best, v) > 0.5 for s, v in enumerate(self.a)],
                dtype=bool,
            )
            flips = a != self.space.slot_present
            if not self.space.fixed_features:
                x = self.clean_x.copy()
                for v, g in zip(*np.nonzero(has_var(self.x))):
                    x[v, g] = m.getSolVal(best, self.x[v, g])
                x = np.clip(x, self.space.x_lb, self.space.x_ub)  # SCIP may overshoot by its tolerance
        res = SolveResult(
            status=status,
            primal=float(primal),
            dual=float(dual),
            seconds=float(m.getSolvingTime()) + self.greedy_seconds[clock],
            build_seconds=self.build_times[clock],
            nodes=int(m.getNNodes()),
            lp_iterations=int(m.getNLPIterations()),
            flips=flips,
            x=x,
        )
        if self.sepa is not None:
            res.local_cuts, res.global_cuts = self.sepa.n_local, self.sepa.n_global
            res.separator_calls = self.sepa.calls
        return res

    def free(self) -> None:
        """Release SCIP's memory now (the model is unusable afterwards)."""
        try:
            self.model.freeProb()
        except Exception:  # pragma: no cover - already freed
            pass


def space_target(space: AttackSpace) -> int:
    """The target node of a node-classification space.

    Parameters
    ----------
    space : AttackSpace

    Returns
    -------
    int
    """
    if space.target_node is None:
        raise ValueError("node classification needs a target node")
    return int(space.target_node)


__all__ = ["CertificationMIP", "SolveResult", "needed_nodes", "space_target"]
