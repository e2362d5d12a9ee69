"""The claims of "Algorithm and Hardness for Dynamic Attention Maintenance in Large Language Models".

The paper is theory only (no code, no experiments). We check what its analysis predicts for our exact
implementation: exact answers, the cost exponents (with classical matrix multiplication, which is what BLAS
does), and where the lazy structure pays off against the peers a user would pick instead. The experiments are
in ``experiments.py``.

Experiments (each computed once per scale and seed by ``icml24 verify``): ``dynamic_attention/mixes`` (the
update/query mixes on the lazy structure, eager maintenance and naive recomputation) is judged by the tradeoff
and beats-eager claims; exact and cost have experiments of their own. The claims judged on time (cost, tradeoff,
beats-eager) time the method and its peers interleaved (A B A B ...), repeatedly, in the thread's CPU time,
and judge minima over the repeats (per size, and per update, where a slope is fitted), which a loaded machine
cannot lower.
"""

from __future__ import annotations

from typing import Mapping

from ..claims import Claim, Experiment
from ..registry import method

SLUG = "dynamic_attention"
TAUS = (0.5, 0.625, 0.75)
EXACT_TOL = 1e-9
TIME_TOL = 0.4  # timers: cache effects and shared machines
# A rebuild multiplies by k columns; with k < 16 it is memory-bound (k / 4 flops per byte) and its time jumps
# where Q leaves the cache (seen: slope 1.9 to 2.5 across seeds at tau 0.25), so every tau has k >= 16.
MIN_K_TIME = 16


# ------------------------------------------------------------------------------------------------- exact
def _holds_exact(m: Mapping[str, float]) -> bool:
    return (
        m["lazy_max_abs_err"] <= EXACT_TOL
        and m["queries"] >= 100
        and m["rebuilds"] >= 10
        and m["queries_after_rebuild"] >= 10
        and m["max_pending_over_k"] <= 1.0
        and m["adversarial_lazy_max_rel_err"] <= EXACT_TOL
        and m["adversarial_dominant_edits"] >= 10
        and m["adversarial_queries"] >= 50
    )


EXACT = Claim(
    key=f"{SLUG}/exact",
    statement=(
        "After random mixed sequences of UpdateK, UpdateV and Query (repeated entries, queries right "
        f"after rebuilds, tau in {{0.25, 0.5, 1}} and k = 1), every answer of the lazy structure equals "
        f"softmax attention recomputed from scratch to {EXACT_TOL:g} in float64, as eager maintenance does; "
        "and under adversarial magnitudes (keys made to dominate a row by logits of 30 to 700 and removed "
        f"again, values edited to 1e-12 of themselves) within {EXACT_TOL:g} relative to softmax(Q_i K^T) |V|, "
        "where unguarded eager maintenance loses all accuracy."
    ),
    run="experiments:run_exact",
    holds=_holds_exact,
    headline="adversarial_lazy_max_rel_err",
    baseline="adversarial_eager_max_rel_err",
    paper="theory only: Definition 1.2, the structure answers Query(i, j) exactly; no experiments",
)


# -------------------------------------------------------------------------------------------------- cost
# The update exponent is judged as the slope of the ratio to eager maintenance's time on the same updates, measured
# interleaved in thread CPU time (per size, one rebuild period run on both in turn, repeatedly; each update timed on
# its own and its minimum over the repeats kept): both are Theta(m d) per update with classical multiplication, so
# the ratio's slope is 0 (the absolute slopes, reported, were 0.5-0.9 at quick scale; the ratio slopes -0.33 to 0.08
# over seeds 0-2 at smoke and quick scale with medians of paired ratios; with these minima, on a 2-vCPU machine whose
# eager update slows past L2 (n^1.2), -0.47 to -0.25 at quick scale over seeds 0-2 with two CPU burners beside, and
# -0.32 to -0.12 at smoke: close to the lower bound there, load or not). A per-update full recomputation gives +1,
# an update whose cost does not grow -1.
RATIO_SLOPE_MAX = 0.5
RATIO_SLOPE_MIN = -0.5


def _holds_cost(m: Mapping[str, float]) -> bool:
    ok = True
    for tau in TAUS:
        key = f"tau{tau:g}"
        ok &= m[f"{key}_k_at_nmin"] >= MIN_K_TIME  # the rebuilds are products of >= 16 columns: work dominates
        # and the same exponent as eager maintenance, whose update is Theta(m d) by construction: the ratio of the
        # two times, measured interleaved on the same updates (same load, same BLAS effects), is flat in n
        ok &= RATIO_SLOPE_MIN <= m[f"{key}_update_over_eager_slope"] <= RATIO_SLOPE_MAX
        # O(k d) is an upper bound; at these sizes per-call cost still flattens the measured slope
        ok &= m[f"{key}_query_time_slope"] <= m[f"{key}_predicted_query"] + TIME_TOL
    lo, hi = f"tau{TAUS[0]:g}", f"tau{TAUS[-1]:g}"
    # the query pays for the pending list: at the largest n, k grows ~ n^(tau_hi - tau_lo) between the extreme taus
    ok &= m[f"{hi}_query_us_at_nmax"] >= 2.0 * m[f"{lo}_query_us_at_nmax"]
    return bool(ok)


COST = Claim(
    key=f"{SLUG}/cost",
    statement=(
        "Measured in CPU time on one thread (minima of interleaved repeats), with d fixed and classical matrix "
        "multiplication, the lazy structure's amortised update time grows as eager maintenance's, as n (m = n "
        "queries: one m x k x d product per k updates): the ratio of the two on the same updates, measured "
        f"interleaved, has log-log slope between {RATIO_SLOPE_MIN} and {RATIO_SLOPE_MAX} for tau in "
        f"{{0.5, 0.625, 0.75}}, k >= {MIN_K_TIME} at the smallest n; its worst-case query time grows no faster "
        f"than n^tau (slope at most {TIME_TOL} above tau, per-call overhead removed) and is at least twice as long "
        "at the largest tau as at the smallest; the absolute time slopes and the work counters are reported beside."
    ),
    run="experiments:run_cost",
    holds=_holds_cost,
    headline="tau0.75_update_over_eager_slope",
    baseline="predicted_update_over_eager_slope",
    paper="Thm 1.3: update n^(omega(1,1,tau)-tau) amortised, query n^(1+tau) worst case (d = n)",
)


# ---------------------------------------------------------------------------------------------- trade-off
CROSSOVER_TOL = 0.2
MIXES = Experiment(f"{SLUG}/mixes", "experiments:run_tradeoff")


def _holds_tradeoff(m: Mapping[str, float]) -> bool:
    return (
        m["q99_naive_over_lazy"] >= 1.25
        and m["q0_naive_over_lazy"] <= 0.2
        and 0.0 <= m["naive_crossover_measured"] <= 1.0
        and abs(m["naive_crossover_measured"] - m["naive_crossover_predicted"]) <= CROSSOVER_TOL
        and m["max_answer_diff"] <= 1e-9
    )


TRADEOFF = Claim(
    key=f"{SLUG}/tradeoff",
    statement=(
        "At n = 4096, d = 64, tau = 0.5, on update/query mixes spanning several rebuild periods, the lazy "
        "structure is at least 1.25x faster than naive per-query recomputation at 99% queries and at least 5x "
        "slower on updates alone; the query share where they cost the same, measured on the mixes, is within "
        f"{CROSSOVER_TOL} of the one the per-operation cost model predicts; the answers are identical."
    ),
    run=MIXES,
    holds=_holds_tradeoff,
    headline="naive_crossover_measured",
    baseline="naive_crossover_predicted",
    paper="no experiments; the trade-off follows from the bounds (tau trades update against query)",
)


def _holds_beats_eager(m: Mapping[str, float]) -> bool:
    return m["update_eager_over_lazy"] >= 2.0 and m["best_eager_over_lazy"] >= 1.5


BEATS_EAGER = Claim(
    key=f"{SLUG}/beats-eager",
    statement=(
        "The lazy structure's amortised update is at least 2x cheaper than eager maintenance's (exact AV and row "
        "sums after every update, vectorised), and on some update/query mix it is at least 1.5x faster overall, "
        "as the paper's bound n^(omega(1,1,tau)-tau) < n^2 for eager (d = n) suggests."
    ),
    run=MIXES,
    holds=_holds_beats_eager,
    headline="update_eager_over_lazy",
    baseline="best_eager_over_lazy",
    paper="Thm 1.3 with fast rectangular multiplication; no experiments",
    expected=False,
    finding=(
        "With classical (BLAS) multiplication omega(1,1,tau) = 2 + tau, so the lazy update costs Theta(m d) "
        "amortised, the same order as eager maintenance's matrix-vector product; only the GEMM-vs-GEMV "
        "constant remains, and the precision guard's extra columns (|V| and the error bounds) spend most of "
        "it. Measured in thread CPU time, seeds 0-2: eager/lazy update time 0.81-0.88 at n = 4096, d = 64, "
        "tau = 0.5 (0.72-0.77 at n = 2048), eager queries ~8x cheaper, so eager is faster on every mix (best "
        "eager/lazy 0.62-0.86, no crossover; lazy/eager per update 1.1-1.9 over n = 1024-4096 and three taus). "
        "The lazy structure's win is over naive recomputation on query-heavy mixes (the tradeoff claim)."
    ),
)

METHOD = method(SLUG, (EXACT, COST, TRADEOFF, BEATS_EAGER))
