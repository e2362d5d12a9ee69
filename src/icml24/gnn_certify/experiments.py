"""Experiment loops shared by the claims (paper.py) and the benchmark: MUTAG instances x bound modes.

Times are SCIP's CPU clock (``timing/clocktype = 1``): on shared machines wall time mostly measures the other
processes. The shifted geometric mean uses a shift of 1 s (our runs take 0.1-60 s).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

import numpy as np
import torch

from .baselines import brute_force_minimum
from .certify import NOT_ROBUST, ROBUST, SETTINGS, UNKNOWN, build_space, certify, compute_bounds
from .io import mutag_instance, mutag_model
from .mip import CertificationMIP

TIME_SHIFT = 1.0


def sgm(values: Iterable[float], shift: float = TIME_SHIFT) -> float:
    """Shifted geometric mean ``exp(mean(log(v + s))) - s`` (nan for no values)."""
    v = np.asarray(list(values), dtype=np.float64)
    if v.size == 0:
        return math.nan
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


@dataclass
class Run:
    """One (instance, mode) certification."""

    instance: int
    nodes_in_graph: int
    mode: str
    verdict: str
    seconds: float
    build_seconds: float
    nodes: int
    dual: float
    primal: float
    budget: int
    flips: int
    local_cuts: int
    global_cuts: int


def certify_mutag(indices: Sequence[int], modes: Sequence[str], *, budget: float, strength: int,
                  time_limit: float, settings: str = "fast", seed: int = 0, label_shift: int = 1,
                  attack_first: bool = False, progress=None) -> list[Run]:
    """Certify the paper's MUTAG model on MUTAG graphs with every mode (official instance generation:
    ``Delta = ceil(budget * |edge_index|)``, ``Q_v = max(0, deg - maxdeg + strength)``, target
    ``(label + label_shift) mod C``)."""
    model, _ = mutag_model()
    cases = []
    for i in indices:
        inst = mutag_instance(i)
        cases.append((i, inst.data, (inst.label + label_shift) % inst.num_classes))
    return certify_cases(model, cases, modes, budget=budget, strength=strength, time_limit=time_limit,
                         settings=settings, seed=seed, attack_first=attack_first, progress=progress)


def certify_cases(model, cases: Sequence[tuple[int, object, int]], modes: Sequence[str], *, strength: int,
                  time_limit: float, budget: float | None = None, global_budget: int | None = None,
                  settings: str = "fast", seed: int = 0, attack_first: bool = False, progress=None) -> list[Run]:
    """Certify ``model`` on each ``(instance id, graph, target class)`` with every mode (SCIP's CPU clock)."""
    runs: list[Run] = []
    for i, data, target in cases:
        for mode in modes:
            rep = certify(model, data, budget=budget, global_budget=global_budget, strength=strength, target=target,
                          bounds=mode, time_limit=time_limit, seed=seed, clock="cpu", settings=settings,
                          attack_first=attack_first)
            c = rep.certificates[0]
            runs.append(Run(instance=i, nodes_in_graph=int(data.num_nodes), mode=mode, verdict=c.verdict,
                            seconds=c.seconds, build_seconds=c.build_seconds, nodes=c.nodes,
                            dual=c.margin_lower, primal=c.margin_upper, budget=c.global_budget, flips=len(c.flips),
                            local_cuts=c.local_cuts, global_cuts=c.global_cuts))
            if progress is not None:
                progress(runs[-1])
    return runs


def robust_subgraphs(indices: Sequence[int], k: int, global_budget: int, strength: int = 2,
                     label_shift: int = 1) -> list[tuple[int, object, int]]:
    """The robust instances among the subgraphs of MUTAG graphs ``indices`` on their first ``k`` nodes: those whose
    brute-force minimum margin over every feasible flip set (``Delta = global_budget``) is positive. Returns
    ``(graph index, subgraph, target)`` cases for :func:`certify_cases`; they are chosen by that exact test
    alone, before any solver runs."""
    _, net = mutag_model()
    out = []
    for i in indices:
        data = mutag_subgraph(i, k)
        if data.edge_index.shape[1] == 0:
            continue
        _, _, _, t, minimum = brute_force_case(net, data, global_budget, strength, label_shift)
        if minimum > 0:
            out.append((i, data, t))
    return out


def brute_force_case(net, data, global_budget: int, strength: int, label_shift: int = 1):
    """``(space, x, prediction, target, minimum)``: the attack space of ``data`` at ``Delta = global_budget``, the
    clean prediction, the target ``(prediction + label_shift) mod C`` and the brute-force minimum margin."""
    space, x, _, _ = build_space(net, data, global_budget=global_budget, strength=strength)
    c = int(np.argmax(net.forward(x, space.adj.astype(np.float64))))
    t = (c + label_shift) % net.num_classes
    return space, x, c, t, brute_force_minimum(net, space, c, t)[0]


def speed_summary(runs: Sequence[Run], modes: Sequence[str] = ("basic", "sbt", "abt")) -> dict[str, float]:
    """The speed claim's metrics: solved counts, verdict agreement, shifted geometric means on the
    instances every mode solved, dual bounds where sbt did not solve, B&B nodes."""
    by = {(r.instance, r.mode): r for r in runs}
    inst = sorted({r.instance for r in runs})
    solved = {m: [i for i in inst if by[(i, m)].verdict != UNKNOWN] for m in modes}
    all_solved = [i for i in inst if all(by[(i, m)].verdict != UNKNOWN for m in modes)]
    out: dict[str, float] = {"instances": float(len(inst)), "all_solved": float(len(all_solved))}
    agree = all(len({by[(i, m)].verdict for m in modes if by[(i, m)].verdict != UNKNOWN}) <= 1 for i in inst)
    out["verdicts_agree"] = float(agree)
    for m in modes:
        out[f"solved_{m}"] = float(len(solved[m]))
        out[f"robust_{m}"] = float(sum(by[(i, m)].verdict == ROBUST for i in inst))
        out[f"not_robust_{m}"] = float(sum(by[(i, m)].verdict == NOT_ROBUST for i in inst))
        out[f"sgm_time_{m}"] = sgm(by[(i, m)].seconds for i in all_solved)
        out[f"sgm_time_all_{m}"] = sgm(by[(i, m)].seconds for i in inst)
        out[f"nodes_{m}"] = float(sum(by[(i, m)].nodes for i in all_solved))
        out[f"build_seconds_{m}"] = float(sum(by[(i, m)].build_seconds for i in inst))
    if "sbt" in modes and "basic" in modes:
        out["time_ratio_sbt_basic"] = out["sgm_time_sbt"] / out["sgm_time_basic"] if all_solved else math.nan
        unsolved = [i for i in inst if by[(i, "sbt")].verdict == UNKNOWN]
        out["sbt_unsolved"] = float(len(unsolved))
        worse = [i for i in unsolved if by[(i, "sbt")].dual < by[(i, "basic")].dual]
        out["sbt_dual_worse"] = float(len(worse))
        if unsolved:
            out["mean_dual_sbt_unsolved"] = float(np.mean([by[(i, "sbt")].dual for i in unsolved]))
            out["mean_dual_basic_unsolved"] = float(np.mean([by[(i, "basic")].dual for i in unsolved]))
    if "abt" in modes and "sbt" in modes:
        out["time_ratio_abt_sbt"] = out["sgm_time_abt"] / out["sgm_time_sbt"] if all_solved else math.nan
        out["abt_local_cuts"] = float(sum(by[(i, "abt")].local_cuts for i in inst))
        out["abt_global_cuts"] = float(sum(by[(i, "abt")].global_cuts for i in inst))
    return out


def runs_table(runs: Sequence[Run], modes: Sequence[str] = ("basic", "sbt", "abt")) -> str:
    """A text table: one line per instance, verdict / CPU seconds / B&B nodes per mode."""
    by = {(r.instance, r.mode): r for r in runs}
    inst = sorted({r.instance for r in runs})
    head = f"{'graph':>5} {'n':>3} {'Delta':>5}  " + "  ".join(f"{m + ' verdict':<16}{'s':>7}{'nodes':>7}" for m in modes)
    lines = [head]
    for i in inst:
        r0 = by[(i, modes[0])]
        cells = "  ".join(f"{by[(i, m)].verdict:<16}{by[(i, m)].seconds:>7.2f}{by[(i, m)].nodes:>7d}" for m in modes)
        lines.append(f"{i:>5} {r0.nodes_in_graph:>3} {r0.budget:>5}  {cells}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ exactness
def mutag_subgraph(index: int, k: int):
    """The subgraph of MUTAG graph ``index`` induced by its first ``k`` nodes (a small real instance)."""
    from torch_geometric.data import Data
    from torch_geometric.utils import subgraph

    inst = mutag_instance(index)
    k = min(k, int(inst.data.num_nodes))
    ei, _ = subgraph(torch.arange(k), inst.data.edge_index, relabel_nodes=True, num_nodes=inst.data.num_nodes)
    return Data(x=inst.data.x[:k].clone(), edge_index=ei)


def synthetic_case(seed: int, n: int = 6, hidden: int = 8):
    """A random instance of the official architecture: ``SAGEGraphClassifier(7, 2, hidden, 3 layers)`` with
    PyTorch's default initialisation and a random graph with one-hot MUTAG-like features."""
    from torch_geometric.data import Data

    from .network import SAGEGraphClassifier, network_from_module

    rng = np.random.default_rng(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = SAGEGraphClassifier(7, 2, hidden_channels=hidden, num_layers=3)
    model.eval()
    adj = np.triu(rng.random((n, n)) < 0.4, 1)
    adj = adj | adj.T
    x = np.zeros((n, 7), dtype=np.float32)
    x[np.arange(n), rng.integers(0, 7, n)] = 1.0
    data = Data(x=torch.tensor(x), edge_index=torch.tensor(np.stack(np.nonzero(adj)), dtype=torch.long))
    return network_from_module(model), data


@dataclass
class ExactCase:
    name: str
    k: int
    budget: int
    mode: str
    brute: float
    primal: float
    dual: float
    status: str
    seconds: float
    nodes: int


def exactness_cases(cases: Sequence[tuple[str, object, object]], budgets: Sequence[int], modes: Sequence[str], *,
                    strength: int = 2, time_limit: float = 60.0, settings: str = "fast",
                    seed: int = 0) -> list[ExactCase]:
    """For each (name, network, graph) and global budget: solve the MIP to optimality (``limits/gap = 0``) with
    every mode and compare with brute-force enumeration of the feasible flip sets."""
    params = {**SETTINGS[settings], "timing/clocktype": 1}
    out: list[ExactCase] = []
    for name, net, data in cases:
        for g in budgets:
            space, x, c, t, bf = brute_force_case(net, data, g, strength)
            for mode in modes:
                mip = CertificationMIP(net, space, compute_bounds(net, space, mode), c, t, separator=(mode == "abt"),
                                       clean_x=x)
                r = mip.solve(time_limit=time_limit, seed=seed, decision=False, params=params)
                out.append(ExactCase(name=name, k=int(space.n), budget=g, mode=mode, brute=bf, primal=r.primal,
                                     dual=r.dual, status=r.status, seconds=r.seconds, nodes=r.nodes))
                mip.free()
    return out


def as_dicts(rows) -> list[dict]:
    return [asdict(r) for r in rows]


__all__ = ["sgm", "Run", "certify_mutag", "certify_cases", "robust_subgraphs", "brute_force_case", "speed_summary",
           "runs_table", "mutag_subgraph", "synthetic_case", "ExactCase", "exactness_cases", "as_dicts", "TIME_SHIFT"]

