"""ALEG, ALEM and the baselines on small problems: correctness against scipy references, IFO accounting,
determinism, the simplex, the user oracle path."""

import math

import numpy as np
import pytest
from scipy import optimize

from icml24.group_dro import (
    Ball,
    Box,
    GroupProblem,
    aleg,
    alem,
    duality_gap,
    group_optima,
    minimax_reference,
    mirror_prox,
    one_level_vr,
    online_group_dro,
    smd,
    smd_mero,
    synthetic_problem,
    tune,
)
from icml24.group_dro.aleg import AUTO_GRID, AUTO_TOLERANCE, ESTIMATORS, pilot_gamma
from icml24.group_dro.mirror import Geometry
from icml24.group_dro.reference import min_weighted_risk


@pytest.fixture(scope="module")
def small():
    return synthetic_problem(4, 30, 5, seed=3)


def scipy_erm(X, y, loss, radius):
    """Reference ERM over the ball, by SLSQP (independent of the package's own reference code)."""

    def f(w):
        s = X @ w
        if loss == "logistic":
            return np.mean(np.logaddexp(0, -y * s)), X.T @ (-y / (1 + np.exp(y * s))) / len(y)
        r = s - y
        return 0.5 * np.mean(r * r), X.T @ r / len(y)

    cons = {"type": "ineq", "fun": lambda w: radius**2 - w @ w, "jac": lambda w: -2 * w}
    res = optimize.minimize(
        f, np.zeros(X.shape[1]), jac=True, method="SLSQP", constraints=[cons], options={"ftol": 1e-14, "maxiter": 500}
    )
    return res.fun


@pytest.mark.parametrize("loss, radius", [("logistic", 5.0), ("squared", 0.5), ("logistic", 0.3)])
def test_aleg_with_one_group_solves_erm_to_the_scipy_optimum(loss, radius):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((60, 4))
    y = (
        np.sign(X @ rng.standard_normal(4) + 0.5 * rng.standard_normal(60))
        if loss == "logistic"
        else X @ rng.standard_normal(4) + 0.1 * rng.standard_normal(60)
    )
    p = GroupProblem.from_data(X, y, np.zeros(60, dtype=int), loss=loss, domain=Ball(radius))
    assert p.m == 1
    res = aleg(p, epochs=150, gamma=30.0, seed=0)
    opt = scipy_erm(X, y, loss, radius)
    assert np.linalg.norm(res.w) <= radius + 1e-9
    assert p.risks(res.w)[0] - opt < 2e-3
    assert res.q.tolist() == [1.0]
    assert res.ifo == 150 * (60 + 60)  # a full pass and K = n inner steps of one sample per epoch


def test_aleg_converges_to_the_minimax_reference(small):
    ref = minimax_reference(small)
    res = aleg(small, epochs=200, gamma=64.0, seed=0)
    gap = duality_gap(small, res.w, res.q)
    assert 0 <= small.max_risk(res.w) - ref.value <= gap + 1e-9  # primal suboptimality <= duality gap
    assert gap < 5e-3
    np.testing.assert_allclose(res.q.sum(), 1.0)
    assert np.all(res.q >= 0)


def test_aleg_trace_counts_ifo_and_keeps_q_on_the_simplex(small):
    N, m = small.n_total, small.m
    res = aleg(small, epochs=5, gamma=500.0, seed=1)  # large steps: q is pushed hard
    K = int(np.ceil(N / m))
    assert [ifo for ifo, _, _ in res.trace] == [(s + 1) * (N + m * K) for s in range(5)]
    for _, w, q in res.trace:
        assert np.all(q >= 0) and abs(q.sum() - 1) < 1e-12
        assert np.linalg.norm(w) <= small.domain.radius + 1e-9


def test_aleg_gap_decreases_on_average(small):
    gaps = []
    for seed in range(3):
        res = aleg(small, epochs=60, gamma=32.0, seed=seed)
        gaps.append([duality_gap(small, w, q) for _, w, q in res.trace[::10]])
    mean = np.mean(gaps, axis=0)
    assert mean[-1] < 0.2 * mean[0] and np.all(np.diff(mean) < 1e-3)


def test_same_seed_same_numbers(small):
    a = aleg(small, epochs=3, seed=7)
    b = aleg(small, epochs=3, seed=7)
    c = aleg(small, epochs=3, seed=8)
    np.testing.assert_array_equal(a.w, b.w)
    np.testing.assert_array_equal(a.q, b.q)
    assert not np.array_equal(a.w, c.w)


def test_non_constant_steps_and_max_ifo(small):
    K = int(np.ceil(small.n_total / small.m))
    steps = np.linspace(0.001, 0.02, K)
    res = aleg(small, max_ifo=5 * small.n_total, steps=steps, seed=0)
    assert res.ifo >= 5 * small.n_total and res.ifo < 5 * small.n_total + 2 * small.n_total
    assert res.info["epochs"] == 3


def test_box_domain_and_oracle_problem_match_the_data_problem():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    y = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    g = np.arange(30) % 3
    box = Box(-0.5, 0.5)
    p_data = GroupProblem.from_data(X, y, g, domain=box)

    def oracle(w, idx):
        s = X[idx] @ w
        return np.logaddexp(0, -y[idx] * s), (-y[idx] / (1 + np.exp(y[idx] * s)))[:, None] * X[idx]

    p_orc = GroupProblem.from_oracle(
        oracle,
        [np.flatnonzero(g == i) for i in range(3)],
        dim=3,
        n_samples=30,
        domain=box,
        smoothness=p_data.smoothness,
        lipschitz=p_data.lipschitz,
        loss_bound=p_data.loss_bound,
    )
    a = aleg(p_data, epochs=20, gamma=16.0, seed=2)
    b = aleg(p_orc, epochs=20, gamma=16.0, seed=2)
    np.testing.assert_allclose(a.w, b.w, atol=1e-12)
    np.testing.assert_allclose(a.q, b.q, atol=1e-12)
    assert np.all(np.abs(a.w) <= 0.5 + 1e-12)
    ref = minimax_reference(p_data)
    assert np.all(np.abs(ref.w) <= 0.5 + 1e-9)
    assert duality_gap(p_data, a.w, a.q) >= p_data.max_risk(a.w) - ref.value - 1e-9


def test_certified_lower_bound_is_below_the_true_minimum(small):
    q = np.array([0.1, 0.2, 0.3, 0.4])
    low, u = min_weighted_risk(small, q)
    R = small.risks(u)
    assert low <= q @ R + 1e-12 and q @ R - low < 1e-7
    rng = np.random.default_rng(0)
    for _ in range(50):  # no point of W does better than the bound
        w = small.domain.project(rng.standard_normal(small.dim) * 3)
        assert q @ small.risks(w) >= low - 1e-12


def test_alem_estimates_and_excess_risk(small):
    optima = group_optima(small)
    res = alem(small, epochs=80, gamma=64.0, seed=0)
    est = res.info["risk_estimates"]
    assert np.all(est >= optima - 1e-9)  # R~_i is a risk at a feasible point
    assert np.all(est - optima < 3e-2)  # stage 1 solved each group's ERM (an ergodic average: O(1/T))
    ref = minimax_reference(small, offsets=optima)
    worst = float((small.risks(res.w) - optima).max())
    # stage 2 solves the shifted problem; its MERO value is off by at most the stage-1 errors plus its gap
    gap2 = duality_gap(small, res.w, res.q, offsets=est)
    assert worst - ref.value <= float((est - optima).max()) + gap2 + 1e-9
    assert worst - ref.value < 3e-2
    assert res.info["stage1_ifo"] < res.ifo


def test_alem_budget_split(small):
    B = 40 * small.n_total
    res = alem(small, max_ifo=B, gamma=64.0, seed=0)
    assert res.info["stage1_ifo"] <= B // 2 + 3 * small.n_total
    assert B <= res.ifo <= B + 2 * small.n_total


@pytest.mark.parametrize(
    "run",
    [
        lambda p, cb: smd(p, max_ifo=40 * p.n_total, gamma=4.0, seed=0, callback=cb),
        lambda p, cb: one_level_vr(p, epochs=20, gamma=128.0, seed=0, callback=cb),
        lambda p, cb: mirror_prox(p, iterations=20, gamma=16.0, callback=cb),
        lambda p, cb: online_group_dro(p, max_ifo=40 * p.n_total, gamma=32.0, seed=0, callback=cb, output="average"),
        lambda p, cb: online_group_dro(p, iterations=300, gamma=2.0, seed=0, callback=cb),  # last iterate
    ],
)
def test_baselines_reduce_the_gap_and_count_ifo(small, run):
    seen = []
    res = run(small, lambda ifo, w, q: seen.append(ifo) or False)
    assert seen == sorted(seen) and seen[-1] == res.ifo
    g0 = duality_gap(small, small.domain.center, np.ones(small.m) / small.m)
    g = duality_gap(small, res.w, res.q)
    assert g < 0.6 * g0
    assert abs(res.q.sum() - 1) < 1e-12 and np.linalg.norm(res.w) <= small.domain.radius + 1e-9


def test_callback_stops_a_run(small):
    res = aleg(small, epochs=100, gamma=8.0, seed=0, callback=lambda ifo, w, q: ifo >= 3 * small.n_total)
    assert res.info["epochs"] == 2


def test_smd_mero_runs_within_budget(small):
    B = 30 * small.n_total
    res = smd_mero(small, max_ifo=B, seed=0)
    assert B <= res.ifo <= B + small.n_total
    assert res.info["stage1_ifo"] <= B // 2 + small.n_total


def test_aleg_on_imbalanced_groups_matches_the_reference():
    p = synthetic_problem(4, (10, 60), 5, seed=11)  # an imbalanced arm, n_i drawn in [10, 60]
    assert len(set(p.sizes.tolist())) > 1
    ref = minimax_reference(p)
    res = aleg(p, epochs=200, gamma=64.0, seed=0)
    assert res.info["inner"] == int(np.ceil(p.n_total / p.m))
    gap = duality_gap(p, res.w, res.q)
    assert gap < 1e-2 and p.max_risk(res.w) - ref.value <= gap + 1e-9


# ------------------------------------------------------------------------------------------- default steps
def test_default_steps_converge_where_the_theory_steps_do_not():
    """The theory step (gamma 0.99) is far too small; the default pilot fixes it (m = 1 at the default 100
    epochs, m = 4 at 60 epochs)."""
    for m, n, d, epochs, limit in ((1, 100, 20, None, 1e-3), (4, 60, 10, 60, 2e-2)):
        p = synthetic_problem(m, n, d, seed=0)
        auto = aleg(p, epochs=epochs, seed=0)
        theory = aleg(p, epochs=epochs, gamma="theory", seed=0)
        g_auto, g_theory = duality_gap(p, auto.w, auto.q), duality_gap(p, theory.w, theory.q)
        assert theory.info["gamma"] == 0.99 and auto.info["gamma"] in AUTO_GRID
        assert g_auto < limit and g_auto < g_theory / 5, (m, g_auto, g_theory)


def test_auto_gamma_is_the_explicit_run_with_the_chosen_factor_plus_counted_pilots(small):
    auto = aleg(small, epochs=20, seed=3)
    gamma, scores, pilot_ifo = pilot_gamma(small, epochs=2, seed=3)  # a tenth of the run's epochs
    assert auto.info["gamma"] == gamma and auto.info["pilot_scores"] == scores and set(scores) == set(AUTO_GRID)
    assert auto.info["pilot_ifo"] == pilot_ifo == len(AUTO_GRID) * 2 * (small.n_total + small.m * 30)
    low = min(scores.values())
    assert scores[gamma] <= AUTO_TOLERANCE * low and all(
        s > AUTO_TOLERANCE * low for g, s in scores.items() if g > gamma
    )
    plain = aleg(small, epochs=20, gamma=gamma, seed=3)
    np.testing.assert_array_equal(auto.w, plain.w)  # the pilots do not consume the run's random stream
    np.testing.assert_array_equal(auto.q, plain.q)
    assert auto.ifo == plain.ifo + pilot_ifo
    assert [i for i, _, _ in auto.trace] == [i + pilot_ifo for i, _, _ in plain.trace]


def test_auto_gamma_within_a_budget_and_the_theory_switch(small):
    B = 30 * small.n_total
    res = aleg(small, max_ifo=B, seed=0)
    assert res.info["pilot_ifo"] <= 0.4 * B and B <= res.ifo <= B + 2 * small.n_total
    tiny = aleg(small, max_ifo=1, seed=0)  # the pilots exceed the budget: still one epoch of the run
    assert tiny.info["epochs"] == 1
    a, b = aleg(small, epochs=3, gamma="theory", seed=1), aleg(small, epochs=3, gamma=0.99, seed=1)
    np.testing.assert_array_equal(a.w, b.w)
    assert a.info["pilot_ifo"] == 0 and a.ifo == b.ifo
    res = alem(small, epochs=5, seed=0)  # alem pilots both stages by default
    assert res.info["gamma"] in AUTO_GRID and res.info["pilot_ifo"] > 0


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_estimator_ablation_counts_ifo_and_keeps_the_iterates_feasible(small, estimator):
    N, m = small.n_total, small.m
    K = int(np.ceil(N / m))
    res = aleg(small, epochs=3, gamma=16.0, seed=0, estimator=estimator)
    per_step = {"group": m, "one_level": 1, "full": N}[estimator]
    assert res.ifo == 3 * (N + per_step * K) and res.info["estimator"] == estimator
    assert abs(res.q.sum() - 1) < 1e-12 and np.linalg.norm(res.w) <= small.domain.radius + 1e-9
    if estimator == "full":  # no randomness left
        other = aleg(small, epochs=3, gamma=16.0, seed=5, estimator=estimator)
        np.testing.assert_allclose(res.w, other.w, atol=1e-14)


def test_one_level_ablation_is_the_one_level_baseline_at_the_same_step(small):
    """aleg(estimator="one_level") and one_level_vr with ALEG's K and step are the same algorithm."""
    geo = Geometry(small)
    K = int(np.ceil(small.n_total / small.m))
    a = aleg(small, epochs=4, gamma=16.0, seed=2, estimator="one_level")
    b = one_level_vr(
        small, epochs=4, inner=K, gamma=16.0 * geo.lipschitz_one_level() / geo.lipschitz_group_sampled(), seed=2
    )
    assert a.info["eta"] == pytest.approx(b.info["eta"], rel=1e-12)
    np.testing.assert_allclose(a.w, b.w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.q, b.q, rtol=1e-9, atol=1e-12)
    assert a.ifo == b.ifo


def test_tune_stop_ifo_censors_a_race_without_changing_a_run_that_wins_it():
    p = synthetic_problem(4, 30, 5, seed=0)
    N = p.n_total
    kw = dict(targets=(1e-1, 3e-2), max_ifo=200 * N, pilot=5 * N, seed=1)
    free = tune(p, "smd", **kw)
    assert math.isfinite(free.ifo(3e-2))
    late = tune(p, "smd", stop_ifo=10 * free.ifo(3e-2), **kw)  # the stop lies past the run's own hit: no change
    assert late.ifo(3e-2) == free.ifo(3e-2) and late.best.gamma == free.best.gamma
    early = tune(p, "smd", stop_ifo=free.ifo(3e-2) / 2, **kw)  # stopped before it: recorded as not reached
    assert early.ifo(3e-2) == math.inf
    assert all(r.curve[-1][0] <= free.ifo(3e-2) / 2 + 2 * N for r in early.runs)
