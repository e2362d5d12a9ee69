"""The claims of "Verifying message-passing neural networks via topology-based bounds tightening" (ICML 2024).

Every claim runs the paper's own trained MUTAG model and MUTAG graphs (``model_MUTAG.json`` and
``graph_MUTAG_<i>.gcinfo`` from the official repository, read from the data root). Each claim declares
``needs=("data:mutag",)``: without those files its claims are not run (no stand-in: the claims are about that
model on those graphs). Each claim has an experiment of its own; none shares a run with another. Instances are
generated as the official script does: ``Delta = ceil(pct * |edge_index|)``, ``Q_v = max(0, deg(v) - maxdeg +
s)``, label shift 1.

1. soundness -- sampled feasible attacks (and, for abt, attacks that respect random branching decisions)
   never leave the sbt / abt bounds (paper §3.2-3.3: the bounds are valid);
2. tightness -- sbt intervals are elementwise inside the basic ones and narrower on average (§3.2), abt
   intervals inside sbt's;
3. exactness -- with small budgets, the MIP optimum equals the brute-force minimum over all feasible flip sets
   (the MIP is an exact reformulation, §3.1), for every bound mode;
4. speed -- on MUTAG (sub)graphs that brute force proves robust, sbt proves robustness on each, decides at least
   as many as basic and is faster by a stated margin (shifted geometric mean of CPU time at most 0.8x basic's,
   unsolved instances at the limit); on attackable instances it finds the same attacks within 1.5x of basic's
   time (§5: "substantially accelerate"). Each instance is certified with every mode in turn, twice (basic,
   sbt, abt, basic, sbt, abt), and each mode's faster run is kept, which a loaded machine cannot flip.

Scales. Quick runs what fits in about a minute per claim on two busy cores. The speed claim uses the MUTAG
graphs among 0-19 with at most 12 nodes (4, 8, 16), Delta = ceil(2 % |edge_index|) = 1 and strength 2: at a
10 % budget most graphs stay undecided for a minute here (the benchmark measures that setting, and
``Scale.PAPER`` runs it). Every one of those instances is attackable (the greedy attack finds a flip set), so
the claim adds a robust arm: the subgraphs on the first 8 nodes of MUTAG graphs 0-19 that brute-force
enumeration proves robust at Delta = 1 (graphs 7 and 14; the whole graphs at paper scale), where deciding means
proving a positive dual bound. The exactness claim needs optimality proofs, which take
seconds even on 6-node subgraphs with the MUTAG model (width 16, 3 layers), so it adds random models of the
official architecture (width 8) where Delta = 2 stays cheap. The experiments live in
:mod:`icml24.gnn_certify.experiments`; this module holds the claims and their verdicts only, and imports neither
torch nor the solver.
"""

from __future__ import annotations

import math
from typing import Mapping

from ..claims import Claim
from ..registry import method

SLUG = "gnn_certify"
MUTAG = ("data:mutag",)  # every claim runs the official MUTAG model and graphs; there is no stand-in
MODES = ("basic", "sbt", "abt")
EXACT_TOL = 1e-5  # relative: SCIP's feasibility tolerance is 1e-6 on rows with coefficients up to ~1e2


def holds_soundness(m: Mapping[str, float]) -> bool:
    """No sampled attack leaves the sbt or abt bounds, with at least 1000 attacks checked against each.

    Parameters
    ----------
    m : mapping of str to float
        The metrics of :func:`~icml24.gnn_certify.experiments.run_soundness`.

    Returns
    -------
    bool
    """
    return (
        m["violations_sbt"] == 0 and m["violations_abt"] == 0 and m["samples_sbt"] >= 1000 and m["samples_abt"] >= 1000
    )


def holds_tightness(m: Mapping[str, float]) -> bool:
    """sbt is elementwise inside both basic variants and narrower on average; abt is inside sbt.

    Parameters
    ----------
    m : mapping of str to float
        The metrics of :func:`~icml24.gnn_certify.experiments.run_tightness`.

    Returns
    -------
    bool
    """
    return (
        m["frac_wider_than_basic"] == 0
        and m["frac_wider_than_basic_input"] == 0
        and m["frac_abt_wider_than_sbt"] == 0
        and m["width_ratio_sbt_basic"] < 1
        and m["width_ratio_sbt_basic_input"] < 1
    )


def holds_exactness(m: Mapping[str, float]) -> bool:
    """sbt and abt reach optimality on every case and every optimum equals the brute-force minimum.

    Parameters
    ----------
    m : mapping of str to float
        The metrics of :func:`~icml24.gnn_certify.experiments.run_exactness`; compared with relative tolerance
        :data:`EXACT_TOL`.

    Returns
    -------
    bool
    """
    ok = m["optimal_sbt"] == m["cases"] and m["optimal_abt"] == m["cases"] and m["cases"] >= 1
    for mode in MODES:
        err = m[f"max_rel_err_{mode}"]
        ok &= (math.isnan(err) and m[f"optimal_{mode}"] == 0) or err <= EXACT_TOL
        ok &= m[f"max_dual_excess_{mode}"] <= EXACT_TOL and m[f"max_primal_deficit_{mode}"] <= EXACT_TOL
    return bool(ok)


SPEEDUP = 0.75  # robust arm: sbt at most 0.75x basic's time (set before measuring)
SLOWDOWN_TOL = 1.5  # attackable arm: both find the attack at the root; sbt within 1.5x of basic's time


def holds_speed(m: Mapping[str, float]) -> bool:
    """Robust arm: sbt proves every instance, decides at least as many as basic, and is faster by a stated margin.

    Judged as the paper's tables judge (instances decided within the time limit, shifted geometric mean of
    CPU time, unsolved instances counted at the limit): on the robust arm sbt must prove robustness on every
    instance, decide at least as many as basic, agree with its verdicts, never have a worse dual bound, and take
    at most :data:`SPEEDUP` times basic's time, a margin that machine noise does not cross and a copy of the
    baseline (ratio 1) fails. On the attackable arm (every mode finds the attack at the root) sbt must decide as
    many with the same verdicts, no worse dual bounds, and stay within :data:`SLOWDOWN_TOL` of basic's time.
    Branch-and-bound nodes are reported, not judged: at these sizes every run ends at the root, so a node
    comparison would be vacuous.

    Parameters
    ----------
    m : mapping of str to float
        The metrics of :func:`~icml24.gnn_certify.experiments.run_speed` (``rob_*``: the robust arm).

    Returns
    -------
    bool
    """
    attackable = (
        m["all_solved"] >= 1
        and m["verdicts_agree"] == 1
        and m["solved_sbt"] >= m["solved_basic"]
        and m["sbt_dual_worse"] == 0
        and m["sgm_time_sbt"] <= SLOWDOWN_TOL * m["sgm_time_basic"]
    )
    robust = (
        m["rob_instances"] >= 1
        and m["rob_robust_sbt"] == m["rob_instances"]
        and m["rob_verdicts_agree"] == 1
        and m["rob_solved_sbt"] >= m["rob_solved_basic"]
        and m["rob_sbt_dual_worse"] == 0
        and m["rob_sgm_time_all_sbt"] <= SPEEDUP * m["rob_sgm_time_all_basic"]
    )
    return bool(attackable and robust)


SOUNDNESS = Claim(
    key=f"{SLUG}/soundness",
    statement=(
        "The topology-based bounds are valid: thousands of sampled feasible edge-flip attacks on MUTAG "
        "graphs (budgets 5-20 %, strength 2) never leave the sbt bounds, nor the abt bounds computed under "
        "random branching decisions (attacks respecting them); the basic bounds are checked alongside."
    ),
    run="experiments:run_soundness",
    needs=MUTAG,
    holds=holds_soundness,
    headline="violations_sbt",
    baseline="violations_basic",
    paper="§3.2-3.3: sbt and abt bounds are valid by construction (proved, not sampled)",
)

TIGHTNESS = Claim(
    key=f"{SLUG}/tightness",
    statement=(
        "sbt bounds are elementwise no wider than the basic bounds (with or without the feature box) and "
        "strictly narrower on average on MUTAG graphs; abt bounds under branching decisions are no wider "
        "than sbt's."
    ),
    run="experiments:run_tightness",
    needs=MUTAG,
    holds=holds_tightness,
    headline="sbt_mean_width",
    baseline="basic_mean_width",
    paper="Fig. 1 (worked example): sbt tighter than basic, abt tighter still under branching",
)

EXACTNESS = Claim(
    key=f"{SLUG}/exactness",
    statement=(
        "With small budgets (Delta <= 2) the MIP solved to optimality gives the brute-force minimum of "
        "logit[pred] - logit[target] over all feasible flip sets, for sbt and abt on every case and for "
        "basic wherever it reaches optimality; no dual bound exceeds that minimum (the MUTAG model on "
        "6-node MUTAG subgraphs with Delta = 1, and random models of the official architecture with "
        "Delta in {1, 2})."
    ),
    run="experiments:run_exactness",
    needs=MUTAG,
    holds=holds_exactness,
    headline="max_rel_err_sbt",
    baseline="max_rel_err_basic",
    paper="§3.1: the MIP is an exact reformulation of the attack problem (proved, no numbers)",
)

SPEED = Claim(
    key=f"{SLUG}/speed",
    statement=(
        "On MUTAG (sub)graphs that brute force proves robust at Delta = 1, sbt proves every one robust, decides "
        "at least as many as basic within the time limit and takes at most 0.8x basic's shifted geometric "
        "mean CPU time; on attackable MUTAG instances (Delta = ceil(2 % |edge_index|)) every mode finds the "
        "attack with the same verdicts and sbt stays within 1.5x of basic's time. A smaller setting than the "
        "paper's 10 %, where every MUTAG instance is attackable: decided by finding an attack (at the root) or "
        "not within a minute, which says little about the bounds (the benchmark runs that setting)."
    ),
    run="experiments:run_speed",
    needs=MUTAG,
    holds=holds_speed,
    headline="rob_sgm_time_all_sbt",
    baseline="rob_sgm_time_all_basic",
    paper="§5: sbt and abt 'substantially accelerate' SCIP on MUTAG, ENZYMES, Cora, CiteSeer",
)

METHOD = method(SLUG, (SOUNDNESS, TIGHTNESS, EXACTNESS, SPEED))
