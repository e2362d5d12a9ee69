"""The claims of "Algorithm and Hardness for Dynamic Attention Maintenance in Large Language Models".

The paper is theory only (no code, no experiments). We check what its analysis predicts for our exact
implementation: exact answers, the cost exponents (with classical matrix multiplication, which is what BLAS
does), and where the lazy structure pays off against the peers a user would pick instead. The experiments are
in ``experiments.py``.
"""

from __future__ import annotations

from typing import Mapping

from ..claims import Claim
from ..registry import method

SLUG = "dynamic_attention"
TAUS = (0.25, 0.5, 0.75)
EXACT_TOL = 1e-9
WORK_TOL = 0.15  # counters follow k = ceil(n^tau) exactly; rounding of the ceiling moves a slope by < 0.1
TIME_TOL = 0.4  # timers: cache effects and shared machines
TIME_MIN_N = 512  # below this, Python's per-call cost (~10 us) hides the O(n d) work: times are not judged
# Times follow the work only where the work dominates, so time exponents are judged only there:
MIN_K_TIME = 16  # update: a rebuild multiplies by k columns; with k < 16 it is memory-bound (k / 4 flops per
# byte) and its time jumps where Q leaves the cache (seen: slope 1.9 to 2.5 across seeds at tau 0.25)
MIN_QUERY_WORK_TIME = 5e4  # query: below ~5e4 multiply-adds the ~10 us per-call cost dominates


# ------------------------------------------------------------------------------------------------- exact
def _holds_exact(m: Mapping[str, float]) -> bool:
    return (
        m["lazy_max_abs_err"] <= EXACT_TOL
        and m["queries"] >= 100
        and m["rebuilds"] >= 10
        and m["queries_after_rebuild"] >= 10
        and m["max_pending_over_k"] <= 1.0
    )


EXACT = Claim(
    key=f"{SLUG}/exact",
    statement=(
        "After random mixed sequences of UpdateK, UpdateV and Query (repeated entries, queries right "
        f"after rebuilds, tau in {{0.25, 0.5, 1}} and k = 1), every answer of the lazy structure equals "
        f"softmax attention recomputed from scratch to {EXACT_TOL:g} in float64, as eager maintenance does."
    ),
    run="experiments:run_exact",
    holds=_holds_exact,
    headline="lazy_max_abs_err",
    baseline="eager_max_abs_err",
    paper="theory only: Definition 1.2, the structure answers Query(i, j) exactly; no experiments",
)


# -------------------------------------------------------------------------------------------------- cost
def _holds_cost(m: Mapping[str, float]) -> bool:
    ok = True
    for tau in TAUS:
        key = f"tau{tau:g}"
        ok &= abs(m[f"{key}_update_work_slope"] - m[f"{key}_predicted_update"]) <= WORK_TOL
        ok &= abs(m[f"{key}_query_work_slope"] - m[f"{key}_predicted_query"]) <= WORK_TOL
        # Times: the bounds are O(.) upper bounds, so a time exponent must not exceed the prediction by more than
        # TIME_TOL; slower growth is expected at these sizes, where BLAS throughput still rises with the matrix
        # size (measured 4.5 -> 14 GMAC/s from n = 512 to 2048), so lower slopes are reported, not judged.
        if m["n_min"] >= TIME_MIN_N:
            if m[f"{key}_k_at_nmin"] >= MIN_K_TIME:
                ok &= m[f"{key}_update_time_slope"] <= m[f"{key}_predicted_update"] + TIME_TOL
                ok &= m[f"{key}_update_time_slope"] > 1.0  # and it does grow superlinearly, as n d work does
            if m[f"{key}_query_work_at_nmin"] >= MIN_QUERY_WORK_TIME:
                ok &= m[f"{key}_query_time_slope"] <= m[f"{key}_predicted_query"] + TIME_TOL
                ok &= m[f"{key}_query_time_slope"] > 1.0
    return bool(ok)


COST = Claim(
    key=f"{SLUG}/cost",
    statement=(
        "With d = n and classical matrix multiplication (omega(1,1,tau) = 2 + tau), the amortised update "
        "cost grows as n^2 and the worst-case query cost as n^(1+tau) (the paper's n^(omega(1,1,tau)-tau) "
        "and n^(1+tau) with that omega): log-log slopes of the work counters within "
        f"{WORK_TOL} of those exponents for tau in {{0.25, 0.5, 0.75}}; time slopes above 1 and at most "
        f"{TIME_TOL} above them (O() bounds) when n >= {TIME_MIN_N} and the work dominates (updates: "
        f"rebuilds of k >= {MIN_K_TIME} columns; queries: >= {MIN_QUERY_WORK_TIME:.0e} multiply-adds)."
    ),
    run="experiments:run_cost",
    holds=_holds_cost,
    headline="tau0.5_update_time_slope",
    baseline="tau0.5_predicted_update",
    paper="Thm 1.3: update n^(omega(1,1,tau)-tau) amortised, query n^(1+tau) worst case (d = n)",
)


# ---------------------------------------------------------------------------------------------- trade-off
LARGE_FACTOR = 10.0


def _holds_tradeoff(m: Mapping[str, float]) -> bool:
    return (
        m["full_over_lazy"] >= LARGE_FACTOR
        and m["q99_naive_over_lazy"] > 1.0
        and m["q10_naive_over_lazy"] < 1.0
        and m["max_answer_diff"] <= 1e-9
    )


TRADEOFF = Claim(
    key=f"{SLUG}/tradeoff",
    statement=(
        "At n = 4096, d = 64, tau = 0.5, on a mixed workload (half updates, half queries) the lazy "
        f"structure is at least {LARGE_FACTOR:g}x faster than full recomputation after each update; as its "
        "cost model predicts, it beats naive per-query recomputation when queries dominate (99%) and loses "
        "to it when updates dominate (10% queries), with identical answers."
    ),
    run="experiments:run_tradeoff",
    holds=_holds_tradeoff,
    headline="full_over_lazy",
    baseline="q50_naive_over_lazy",
    paper="no experiments; the trade-off follows from the bounds (tau trades update against query)",
)

METHOD = method(SLUG, (EXACT, COST, TRADEOFF))
