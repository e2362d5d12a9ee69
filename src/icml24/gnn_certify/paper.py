"""The claims of "Verifying message-passing neural networks via topology-based bounds tightening" (ICML 2024).

Every claim runs the paper's own trained MUTAG model and MUTAG graphs (``model_MUTAG.json`` and
``graph_MUTAG_<i>.gcinfo`` from the official repository, read from the data root; missing files raise
:class:`~icml24.errors.DataUnavailable`). Instances are generated as the official script does:
``Delta = ceil(pct * |edge_index|)``, ``Q_v = max(0, deg(v) - maxdeg + s)``, label shift 1.

1. soundness -- sampled feasible attacks (and, for abt, attacks that respect random branching decisions)
   never leave the sbt / abt bounds (paper §3.2-3.3: the bounds are valid);
2. tightness -- sbt intervals are elementwise inside the basic ones and narrower on average (§3.2), abt
   intervals inside sbt's;
3. exactness -- with small budgets, the MIP optimum equals the brute-force minimum over all feasible flip sets
   (the MIP is an exact reformulation, §3.1), for every bound mode;
4. speed -- on the MUTAG instances every mode decides, sbt decides no slower than basic (shifted geometric
   mean of CPU time) with the same verdicts, where sbt does not decide its dual bound is no worse, and abt
   explores no more B&B nodes than sbt (§5: "substantially accelerate").

Scales. Quick runs what fits in about a minute per claim on two busy cores. The speed claim uses the MUTAG
graphs among 0-19 with at most 12 nodes (4, 8, 16), Delta = ceil(2 % |edge_index|) = 1 and strength 2: at the
issue's 10 % budget most graphs stay undecided for a minute here (the benchmark measures that setting, and
``Scale.PAPER`` runs it). Every one of those instances is attackable (the greedy attack finds a flip set on all
20 graphs at 10 %), so the claim adds a robust arm: the subgraphs on the first 8 nodes of MUTAG graphs 0-19
that brute-force enumeration proves robust at Delta = 1 (graphs 7 and 14; the whole graphs at paper scale),
where deciding means proving a positive dual bound. The exactness claim needs optimality proofs, which take
seconds even on 6-node subgraphs with the MUTAG model (width 16, 3 layers), so it adds random models of the
official architecture (width 8) where Delta = 2 stays cheap.
"""

from __future__ import annotations

import logging
import math

import numpy as np

from ..claims import Claim, Scale
from ..registry import method
from ..runs import artifact_dir, atomic_write_text, save_figure
from ..threads import single_thread
from .baselines import basic_bounds
from .bounds import topology_bounds
from .certify import build_space
from .checks import bound_violations, random_fixings
from .experiments import (certify_cases, certify_mutag, exactness_cases, mutag_subgraph, robust_subgraphs,
                          runs_table, sgm, speed_summary, synthetic_case)
from .io import mutag_instance, mutag_model

log = logging.getLogger(__name__)

SLUG = "gnn_certify"
MODES = ("basic", "sbt", "abt")
WIDTH_TOL = 1e-9  # relative: rounding in the interval sums
EXACT_TOL = 1e-5  # relative: SCIP's feasibility tolerance is 1e-6 on rows with coefficients up to ~1e2


# ------------------------------------------------------------------------------------------- soundness
def _cases(scale: Scale) -> tuple[list[int], tuple[float, ...]]:
    graphs = scale.pick([0, 4], list(range(10)), list(range(188)))
    return graphs, (0.05, 0.1, 0.2)


def _run_soundness(scale: Scale, seed: int) -> dict[str, float]:
    _, net = mutag_model()
    rng = np.random.default_rng(seed)
    graphs, budgets = _cases(scale)
    n_samples = scale.pick(300, 500, 1000)
    n_fix, n_fix_samples = scale.pick(3, 5, 10), scale.pick(100, 100, 200)
    tot = {k: 0 for k in ("samples_sbt", "samples_abt", "samples_basic", "violations_sbt", "violations_abt",
                          "violations_basic", "values_checked", "fixings", "infeasible_fixings")}
    excess = {"sbt": 0.0, "abt": 0.0, "basic": 0.0}
    for i in graphs:
        data = mutag_instance(i).data
        for pct in budgets:
            space, _, _, _ = build_space(net, data, budget=pct, strength=2)
            for mode, b in (("sbt", topology_bounds(net, space)), ("basic", basic_bounds(net, space))):
                v = bound_violations(net, space, b, n_samples, rng)
                tot[f"samples_{mode}"] += v.samples
                tot[f"violations_{mode}"] += v.count
                tot["values_checked"] += v.values
                excess[mode] = max(excess[mode], v.max_excess)
            for _ in range(n_fix):
                on, off = random_fixings(space, rng, k=int(rng.integers(1, max(2, space.num_slots // 4))))
                b = topology_bounds(net, space, on.astype(float), 1.0 - off.astype(float))
                tot["fixings"] += 1
                if b.infeasible:
                    tot["infeasible_fixings"] += 1
                    continue
                v = bound_violations(net, space, b, n_fix_samples, rng, on, off)
                tot["samples_abt"] += v.samples
                tot["violations_abt"] += v.count
                tot["values_checked"] += v.values
                excess["abt"] = max(excess["abt"], v.max_excess)
    out = {k: float(v) for k, v in tot.items()}
    out.update({f"max_excess_{k}": v for k, v in excess.items()})
    out["instances"] = float(len(graphs) * len(budgets))
    return out


def _holds_soundness(m: dict[str, float]) -> bool:
    return (m["violations_sbt"] == 0 and m["violations_abt"] == 0 and m["samples_sbt"] >= 1000
            and m["samples_abt"] >= 1000)


SOUNDNESS = Claim(
    key=f"{SLUG}/soundness",
    statement=("The topology-based bounds are valid: thousands of sampled feasible edge-flip attacks on MUTAG "
               "graphs (budgets 5-20 %, strength 2) never leave the sbt bounds, nor the abt bounds computed under "
               "random branching decisions (attacks respecting them); the basic bounds are checked alongside."),
    run=_run_soundness, holds=_holds_soundness, headline="violations_sbt", baseline="violations_basic",
)


# ------------------------------------------------------------------------------------------- tightness
def _run_tightness(scale: Scale, seed: int) -> dict[str, float]:
    _, net = mutag_model()
    rng = np.random.default_rng(seed)
    graphs, budgets = _cases(scale)
    w = {"basic": [], "input": [], "sbt": [], "abt_sbt": [], "abt": []}
    wider = {"basic": 0, "input": 0, "abt": 0}
    per_layer = {m: np.zeros(len(net.sage)) for m in ("basic", "sbt")}
    for i in graphs:
        data = mutag_instance(i).data
        for pct in budgets:
            space, _, _, _ = build_space(net, data, budget=pct, strength=2)
            sbt = topology_bounds(net, space)
            ws = sbt.widths()
            for name, b in (("basic", basic_bounds(net, space)), ("input", basic_bounds(net, space, input_based=True))):
                wb = b.widths()
                wider[name] += int((ws > wb + WIDTH_TOL * (1.0 + np.abs(wb))).sum())
                w[name].append(wb)
            w["sbt"].append(ws)
            b0 = basic_bounds(net, space)
            for l in range(len(net.sage)):
                per_layer["sbt"][l] += float(np.mean(sbt.pre_hi[l] - sbt.pre_lo[l]))
                per_layer["basic"][l] += float(np.mean(b0.pre_hi[l] - b0.pre_lo[l]))
            on, off = random_fixings(space, rng, k=max(1, space.num_slots // 5))
            abt = topology_bounds(net, space, on.astype(float), 1.0 - off.astype(float))
            if not abt.infeasible:
                wa = abt.widths()
                wider["abt"] += int((wa > ws + WIDTH_TOL * (1.0 + np.abs(ws))).sum())
                w["abt"].append(wa)
                w["abt_sbt"].append(ws)
    cat = {k: np.concatenate(v) if v else np.zeros(1) for k, v in w.items()}
    n_el = float(cat["sbt"].size)
    out = {
        "sbt_mean_width": float(cat["sbt"].mean()), "basic_mean_width": float(cat["basic"].mean()),
        "basic_input_mean_width": float(cat["input"].mean()),
        "width_ratio_sbt_basic": float(cat["sbt"].mean() / cat["basic"].mean()),
        "width_ratio_sbt_basic_input": float(cat["sbt"].mean() / cat["input"].mean()),
        "width_ratio_abt_sbt": float(cat["abt"].mean() / cat["abt_sbt"].mean()),
        "frac_wider_than_basic": wider["basic"] / n_el, "frac_wider_than_basic_input": wider["input"] / n_el,
        "frac_abt_wider_than_sbt": wider["abt"] / max(1.0, float(cat["abt"].size)),
        "elements": n_el, "instances": float(len(graphs) * len(budgets)),
    }
    k = len(graphs) * len(budgets)
    for l in range(len(net.sage)):
        out[f"layer{l + 1}_width_sbt"] = per_layer["sbt"][l] / k
        out[f"layer{l + 1}_width_basic"] = per_layer["basic"][l] / k
    _plot_widths(out, len(net.sage))
    return out


def _plot_widths(m: dict[str, float], layers: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    xs = np.arange(1, layers + 1)
    ax.semilogy(xs, [m[f"layer{l}_width_basic"] for l in xs], "o-", label="basic")
    ax.semilogy(xs, [m[f"layer{l}_width_sbt"] for l in xs], "s-", label="sbt")
    ax.set(xlabel="SAGE layer", ylabel="mean pre-activation interval width", title="MUTAG: bound widths")
    ax.set_xticks(xs)
    ax.legend()
    save_figure(fig, "gnn_certify-widths")


def _holds_tightness(m: dict[str, float]) -> bool:
    return (m["frac_wider_than_basic"] == 0 and m["frac_wider_than_basic_input"] == 0
            and m["frac_abt_wider_than_sbt"] == 0 and m["width_ratio_sbt_basic"] < 1
            and m["width_ratio_sbt_basic_input"] < 1)


TIGHTNESS = Claim(
    key=f"{SLUG}/tightness",
    statement=("sbt bounds are elementwise no wider than the basic bounds (with or without the feature box) and "
               "strictly narrower on average on MUTAG graphs; abt bounds under branching decisions are no wider "
               "than sbt's."),
    run=_run_tightness, holds=_holds_tightness, headline="sbt_mean_width", baseline="basic_mean_width",
)


# ------------------------------------------------------------------------------------------- exactness
def _run_exactness(scale: Scale, seed: int) -> dict[str, float]:
    _, net = mutag_model()
    graphs = scale.pick([4], [0, 4], list(range(20)))
    k = scale.pick(6, 6, 8)
    synthetic = scale.pick(1, 6, 50)
    limit = scale.pick(30.0, 30.0, 300.0)
    real = [(f"mutag{i}[:{k}]", net, mutag_subgraph(i, k)) for i in graphs]
    fake = [(f"random{seed}_{j}", *synthetic_case(1000 * seed + j)) for j in range(synthetic)]
    with single_thread():
        cases = exactness_cases(real, (1,) if scale is not Scale.PAPER else (1, 2), MODES, strength=2,
                                time_limit=limit, seed=seed)
        cases += exactness_cases(fake, (1, 2), MODES, strength=2, time_limit=limit, seed=seed)
    out: dict[str, float] = {"cases": float(len(cases) // len(MODES)), "mutag_cases": float(len(real))}
    for m in MODES:
        cs = [c for c in cases if c.mode == m]
        opt = [c for c in cs if c.status == "optimal"]
        rel = lambda c: 1.0 + abs(c.brute)  # noqa: E731
        out[f"optimal_{m}"] = float(len(opt))
        out[f"max_rel_err_{m}"] = max((abs(c.primal - c.brute) / rel(c) for c in opt), default=math.nan)
        out[f"max_dual_excess_{m}"] = max((c.dual - c.brute) / rel(c) for c in cs)
        out[f"max_primal_deficit_{m}"] = max((c.brute - c.primal) / rel(c) for c in cs)
        out[f"sgm_time_{m}"] = sgm(c.seconds for c in cs)
        out[f"nodes_{m}"] = float(sum(c.nodes for c in cs))
    return out


def _holds_exactness(m: dict[str, float]) -> bool:
    ok = m["optimal_sbt"] == m["cases"] and m["optimal_abt"] == m["cases"] and m["cases"] >= 1
    for mode in MODES:
        err = m[f"max_rel_err_{mode}"]
        ok &= (math.isnan(err) and m[f"optimal_{mode}"] == 0) or err <= EXACT_TOL
        ok &= m[f"max_dual_excess_{mode}"] <= EXACT_TOL and m[f"max_primal_deficit_{mode}"] <= EXACT_TOL
    return bool(ok)


EXACTNESS = Claim(
    key=f"{SLUG}/exactness",
    statement=("With small budgets (Delta <= 2) the MIP solved to optimality gives the brute-force minimum of "
               "logit[pred] - logit[target] over all feasible flip sets, for sbt and abt on every case and for "
               "basic wherever it reaches optimality; no dual bound exceeds that minimum (the MUTAG model on "
               "6-node MUTAG subgraphs with Delta = 1, and random models of the official architecture with "
               "Delta in {1, 2})."),
    run=_run_exactness, holds=_holds_exactness, headline="max_rel_err_sbt", baseline="max_rel_err_basic",
)


# ------------------------------------------------------------------------------------------- speed
def _run_speed(scale: Scale, seed: int) -> dict[str, float]:
    # quick: the MUTAG graphs among 0-19 with at most 12 nodes (4, 8, 16); smoke: graph 16 (11 nodes)
    graphs = scale.pick([16], [4, 8, 16], list(range(20)))
    budget = scale.pick(0.02, 0.02, 0.1)
    limit = scale.pick(20.0, 20.0, 60.0)
    strength = 2
    # the robust arm: MUTAG subgraphs (first k nodes of graphs 0-19) that brute force proves robust at Delta = 1,
    # where the dual bound, i.e. the bounds, must do the work (quick: k = 8; paper: the whole graphs)
    k = scale.pick(8, 8, 10 ** 6)  # mutag_subgraph keeps the whole graph when k exceeds its size
    with single_thread():
        runs = certify_mutag(graphs, MODES, budget=budget, strength=strength, time_limit=limit, seed=seed)
        robust = robust_subgraphs(range(20), k, global_budget=1, strength=strength)
        robust = robust[:1] if scale is Scale.SMOKE else robust
        rob_runs = certify_cases(mutag_model()[0], robust, MODES, global_budget=1, strength=strength,
                                 time_limit=limit, seed=seed)
    out = speed_summary(runs, MODES)
    out.update({f"rob_{key}": v for key, v in speed_summary(rob_runs, MODES).items()})
    out.update({"budget_fraction": budget, "strength": float(strength), "time_limit": limit,
                "rob_subgraph_nodes": float(k if k < 10 ** 6 else 0)})  # 0: whole graphs
    table = runs_table(runs, MODES) + "\n\nrobust arm (Delta = 1):\n" + runs_table(rob_runs, MODES)
    log.info("gnn_certify speed runs:\n%s", table)
    where = artifact_dir()
    if where is not None:
        atomic_write_text(where / "gnn_certify-speed.txt", table + "\n")
    _plot_speed(runs)
    return out


def _plot_speed(runs) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    inst = sorted({r.instance for r in runs})
    by = {(r.instance, r.mode): r for r in runs}
    fig, ax = plt.subplots(figsize=(7, 3.5))
    width = 0.27
    for j, m in enumerate(MODES):
        ax.bar(np.arange(len(inst)) + (j - 1) * width, [by[(i, m)].seconds for i in inst], width, label=m)
    ax.set_xticks(np.arange(len(inst)), [str(i) for i in inst])
    ax.set(xlabel="MUTAG graph", ylabel="CPU seconds to decide", title="gnn_certify: time per bound mode")
    ax.legend()
    save_figure(fig, "gnn_certify-speed")


def _holds_speed(m: dict[str, float]) -> bool:
    attackable = (m["all_solved"] >= 1 and m["verdicts_agree"] == 1 and m["sgm_time_sbt"] <= m["sgm_time_basic"]
                  and m["sbt_dual_worse"] == 0 and m["nodes_abt"] <= m["nodes_sbt"])
    rob_time = m["rob_all_solved"] == 0 or m["rob_sgm_time_sbt"] <= m["rob_sgm_time_basic"]
    robust = (m["rob_robust_sbt"] >= 1 and m["rob_verdicts_agree"] == 1 and rob_time
              and m["rob_solved_sbt"] >= m["rob_solved_basic"] and m["rob_sbt_dual_worse"] == 0
              and m["rob_nodes_abt"] <= m["rob_nodes_sbt"])
    return bool(attackable and robust)


SPEED = Claim(
    key=f"{SLUG}/speed",
    statement=("On the MUTAG instances every bound mode decides, sbt decides no slower than basic (shifted "
               "geometric mean of CPU time) with the same verdicts; where sbt does not decide in the time limit "
               "its dual bound is no worse than basic's; abt explores no more branch-and-bound nodes than sbt. "
               "Judged on two arms: the official instance generation (attackable at these budgets) and MUTAG "
               "(sub)graphs that brute force proves robust at Delta = 1, where sbt must also prove robustness "
               "and decide at least as many as basic."),
    run=_run_speed, holds=_holds_speed, headline="sgm_time_sbt", baseline="sgm_time_basic",
)

METHOD = method(SLUG, (SOUNDNESS, TIGHTNESS, EXACTNESS, SPEED))
