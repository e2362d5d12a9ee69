"""Properties of ALEG's building blocks: the group-sampled and variance-reduced estimators, the prox steps,
the mirror snapshot (Section 4 of Yu et al. 2024; the paper's properties)."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize

from icml24.group_dro import Ball, Box, GroupProblem
from icml24.group_dro.baselines import one_level_operator
from icml24.group_dro.mirror import Geometry
from icml24.group_dro.operators import (
    Snapshot,
    draw_group_samples,
    full_operator,
    group_sampled_operator,
    one_level_vr_operator,
    snapshots,
    vr_operator,
)


def tiny_problem(seed: int, sizes, d: int = 3, loss: str = "logistic", domain=None) -> GroupProblem:
    rng = np.random.default_rng(seed)
    n = int(sum(sizes))
    X = rng.standard_normal((n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0) if loss != "squared" else rng.standard_normal(n)
    groups = np.repeat(np.arange(len(sizes)), sizes)
    return GroupProblem.from_data(X, y, groups, loss=loss, domain=domain or Ball(2.0))


def random_point(problem: GroupProblem, rng):
    w = problem.domain.project(rng.standard_normal(problem.dim))
    q = rng.dirichlet(np.ones(problem.m))
    return w, q


sizes_st = st.lists(st.integers(1, 3), min_size=1, max_size=3)
loss_st = st.sampled_from(["logistic", "squared", "smoothed_hinge"])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), sizes=sizes_st, loss=loss_st)
def test_group_sampled_estimator_is_unbiased_by_exact_enumeration(seed, sizes, loss):
    p = tiny_problem(seed, sizes, loss=loss)
    w, q = random_point(p, np.random.default_rng(seed + 1))
    Fw, Fq = full_operator(p, w, q)
    acc_w, acc_q, count = np.zeros_like(Fw), np.zeros_like(Fq), 0
    for js in itertools.product(*[range(n) for n in sizes]):  # every (j_1, ..., j_m), equally likely
        gw, gq = group_sampled_operator(p, w, q, p.offsets + np.array(js))
        acc_w += gw
        acc_q += gq
        count += 1
    np.testing.assert_allclose(acc_w / count, Fw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(acc_q / count, Fq, rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), sizes=sizes_st)
def test_one_level_estimator_is_unbiased_by_exact_enumeration(seed, sizes):
    p = tiny_problem(seed, sizes)
    w, q = random_point(p, np.random.default_rng(seed + 1))
    Fw, Fq = full_operator(p, w, q)
    acc_w, acc_q = np.zeros_like(Fw), np.zeros_like(Fq)
    for i, n in enumerate(sizes):  # P(i, j) = 1/(m n_i)
        for j in range(n):
            gw, gq = one_level_operator(p, w, q, i, int(p.offsets[i] + j))
            acc_w += gw / (p.m * n)
            acc_q += gq / (p.m * n)
    np.testing.assert_allclose(acc_w, Fw, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(acc_q, Fq, rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), sizes=sizes_st, loss=loss_st)
def test_vr_estimator_is_unbiased_and_exact_at_the_snapshot(seed, sizes, loss):
    p = tiny_problem(seed, sizes, loss=loss)
    rng = np.random.default_rng(seed + 2)
    w_bar, q_bar = random_point(p, rng)
    snap = Snapshot(p, w_bar, q_bar)
    Fw_bar, Fq_bar = full_operator(p, w_bar, q_bar)
    np.testing.assert_allclose(snap.F_w, Fw_bar, atol=1e-12)
    np.testing.assert_allclose(snap.F_q, Fq_bar, atol=1e-12)
    w, q = random_point(p, rng)
    Fw, Fq = full_operator(p, w, q)
    acc_w, acc_q, count = np.zeros_like(Fw), np.zeros_like(Fq), 0
    for js in itertools.product(*[range(n) for n in sizes]):
        pos = p.offsets + np.array(js)
        gw, gq = vr_operator(p, snap, w_bar, q_bar, pos)  # at the snapshot: exact for every draw
        np.testing.assert_allclose(gw, Fw_bar, atol=1e-12)
        np.testing.assert_allclose(gq, Fq_bar, atol=1e-12)
        gw, gq = vr_operator(p, snap, w, q, pos)  # elsewhere: unbiased
        acc_w += gw
        acc_q += gq
        count += 1
    np.testing.assert_allclose(acc_w / count, Fw, atol=1e-12)
    np.testing.assert_allclose(acc_q / count, Fq, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), sizes=sizes_st, loss=loss_st)
def test_one_level_vr_estimator_is_unbiased_and_exact_at_the_snapshot(seed, sizes, loss):
    """ALEG's estimator="one_level" ablation: F(z_bar) + m (F_ij(z) - F_ij(z_bar)), every (i, j) enumerated."""
    p = tiny_problem(seed, sizes, loss=loss)
    rng = np.random.default_rng(seed + 4)
    w_bar, q_bar = random_point(p, rng)
    snap = Snapshot(p, w_bar, q_bar)
    w, q = random_point(p, rng)
    Fw, Fq = full_operator(p, w, q)
    acc_w, acc_q = np.zeros_like(Fw), np.zeros_like(Fq)
    for i, n in enumerate(sizes):  # P(i, j) = 1/(m n_i)
        for j in range(n):
            pos = int(p.offsets[i] + j)
            gw, gq = one_level_vr_operator(p, snap, w_bar, q_bar, i, pos)
            np.testing.assert_allclose(gw, snap.F_w, atol=1e-12)
            np.testing.assert_allclose(gq, snap.F_q, atol=1e-12)
            gw, gq = one_level_vr_operator(p, snap, w, q, i, pos)
            acc_w += gw / (p.m * n)
            acc_q += gq / (p.m * n)
    np.testing.assert_allclose(acc_w, Fw, atol=1e-12)
    np.testing.assert_allclose(acc_q, Fq, atol=1e-12)


def test_group_draws_are_one_uniform_sample_per_group():
    p = tiny_problem(0, [2, 3, 1])
    draws = draw_group_samples(p, np.random.default_rng(0), 6000)
    assert draws.shape == (6000, 3)
    for i in range(3):
        lo, n = p.offsets[i], p.sizes[i]
        col = draws[:, i] - lo
        assert col.min() >= 0 and col.max() < n
        freq = np.bincount(col, minlength=n) / len(col)
        np.testing.assert_allclose(freq, np.full(n, 1 / n), atol=0.03)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    m=st.integers(1, 6),
    scale=st.floats(1e-3, 1e4),
    alpha=st.floats(0, 0.999),
    box=st.booleans(),
)
def test_prox_step_keeps_q_on_the_simplex_and_w_in_W(seed, m, scale, alpha, box):
    rng = np.random.default_rng(seed)
    p = tiny_problem(seed, [2] * m, domain=Box(-1.0, 1.0) if box else Ball(1.5))
    geo = Geometry(p)
    w, lq = geo.start(None)
    hat_w, hat_lq = geo.start(rng.standard_normal(p.dim))
    hat_lq = np.log(rng.dirichlet(np.ones(m)) + 1e-300)
    hat_lq -= np.log(np.exp(hat_lq).sum())
    for _ in range(5):
        base_w = alpha * w + (1 - alpha) * hat_w
        base_lq = alpha * lq + (1 - alpha) * hat_lq
        w, lq = geo.step(base_w, base_lq, scale * rng.standard_normal(p.dim), scale * rng.standard_normal(m), 1.0)
        q = np.exp(lq)
        assert np.all(np.isfinite(lq)) and np.all(q >= 0) and abs(q.sum() - 1) < 1e-12
        assert p.domain.contains(w)


def test_prox_step_with_alpha_one_is_the_mirror_step_closed_form():
    p = tiny_problem(3, [2, 2, 2])
    geo = Geometry(p)
    rng = np.random.default_rng(0)
    w, lq = np.array([0.1, -0.2, 0.3]), np.log(np.array([0.2, 0.3, 0.5]))
    gw, gq, eta = rng.standard_normal(3), rng.standard_normal(3), 0.01
    w2, lq2 = geo.step(w, lq, gw, gq, eta)
    np.testing.assert_allclose(w2, w - eta * geo.D2 * gw)  # inside the ball: no projection
    expect = np.exp(lq - eta * np.log(3) * gq)
    np.testing.assert_allclose(np.exp(lq2), expect / expect.sum())

    # and it minimises eta <g, z> + Bregman(z, z_k) over the simplex (checked against SLSQP)
    def obj(q):
        return eta * gq @ q + (q @ (np.log(q) - lq)) / np.log(3)

    res = optimize.minimize(
        obj,
        np.ones(3) / 3,
        method="SLSQP",
        bounds=[(1e-9, 1)] * 3,
        constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1}],
        options={"ftol": 1e-14},
    )
    np.testing.assert_allclose(np.exp(lq2), res.x, atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 6), m=st.integers(2, 5))
def test_mirror_snapshot_is_the_weighted_kl_barycentre(seed, k, m):
    rng = np.random.default_rng(seed)
    qs = rng.dirichlet(np.ones(m), size=k)
    eta = rng.uniform(0.1, 2.0, size=k)
    ws = rng.standard_normal((k, 2))
    w_bar, q_bar, lq_hat = snapshots(eta, ws, np.log(qs))
    lam = eta / eta.sum()
    np.testing.assert_allclose(w_bar, lam @ ws)
    np.testing.assert_allclose(q_bar, lam @ qs)
    q_hat = np.exp(lq_hat)
    assert abs(q_hat.sum() - 1) < 1e-12

    def obj(q):
        return sum(l * (q @ (np.log(q) - np.log(qk))) for l, qk in zip(lam, qs))

    best = obj(q_hat)
    for _ in range(20):  # q_hat beats random perturbations on the simplex
        other = np.clip(q_hat + 0.05 * rng.standard_normal(m) * q_hat, 1e-12, None)
        assert obj(other / other.sum()) >= best - 1e-12


def test_geometric_mean_snapshot_matches_a_numerical_argmin():
    rng = np.random.default_rng(1)
    qs, lam = rng.dirichlet(np.ones(4), size=3), np.array([0.5, 1.0, 1.5])
    _, _, lq_hat = snapshots(lam, np.zeros((3, 1)), np.log(qs))

    def obj(q):
        return sum(l * (q @ (np.log(q) - np.log(qk))) for l, qk in zip(lam, qs))

    res = optimize.minimize(
        obj,
        np.ones(4) / 4,
        method="SLSQP",
        bounds=[(1e-9, 1)] * 4,
        constraints=[{"type": "eq", "fun": lambda q: q.sum() - 1}],
        options={"ftol": 1e-14},
    )
    np.testing.assert_allclose(np.exp(lq_hat), res.x, atol=1e-5)


@pytest.mark.parametrize("loss", ["logistic", "squared", "smoothed_hinge"])
def test_per_sample_gradients_match_finite_differences(loss):
    p = tiny_problem(5, [3, 2], loss=loss)
    rng = np.random.default_rng(0)
    w = rng.standard_normal(p.dim) * 0.7
    pos = np.arange(p.n_total)
    val, grad = p.sample_eval(w, pos)
    h = 1e-6
    for k in range(p.dim):
        e = np.zeros(p.dim)
        e[k] = h
        num = (p.sample_eval(w + e, pos)[0] - p.sample_eval(w - e, pos)[0]) / (2 * h)
        np.testing.assert_allclose(grad[:, k], num, atol=1e-6)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), sizes=st.lists(st.integers(1, 3), min_size=2, max_size=3), loss=loss_st)
def test_estimator_moments_match_exact_enumeration(seed, sizes, loss):
    """estimator_moments' closed forms against every draw of both estimators, weighted by its probability."""
    from icml24.group_dro.moments import estimator_moments

    p = tiny_problem(seed, sizes, loss=loss)
    rng = np.random.default_rng(seed + 3)
    w, q = random_point(p, rng)
    w_bar, q_bar = random_point(p, rng)
    mo = estimator_moments(p, w, q, w_bar, q_bar)
    gw = gi = gl = 0.0
    count = 0
    for js in itertools.product(*[range(n) for n in sizes]):
        pos = p.offsets + np.array(js)
        aw, aq = group_sampled_operator(p, w, q, pos)
        bw, bq = group_sampled_operator(p, w_bar, q_bar, pos)
        gw += np.sum((aw - bw) ** 2)
        gi += np.max(np.abs(aq - bq)) ** 2
        gl += q @ (aq - bq) ** 2
        count += 1
    ow = oi = ol = 0.0
    for i, n in enumerate(sizes):
        for j in range(n):
            aw, aq = one_level_operator(p, w, q, i, int(p.offsets[i] + j))
            bw, bq = one_level_operator(p, w_bar, q_bar, i, int(p.offsets[i] + j))
            prob = 1.0 / (p.m * n)
            ow += prob * np.sum((aw - bw) ** 2)
            oi += prob * np.max(np.abs(aq - bq)) ** 2
            ol += prob * q @ (aq - bq) ** 2
    got = (mo.group_w, mo.group_q_inf, mo.group_q_local, mo.one_level_w, mo.one_level_q_inf, mo.one_level_q_local)
    np.testing.assert_allclose(got, (gw / count, gi / count, gl / count, ow, oi, ol), rtol=1e-9, atol=1e-12)
    # in the entropy's local norm the one-level q-block moment is exactly m times the group-sampled one
    assert mo.one_level_q_local == pytest.approx(p.m * mo.group_q_local, rel=1e-12, abs=1e-15)


def test_estimator_moments_predictions_and_input_checks():
    from icml24.errors import InputError
    from icml24.group_dro import synthetic_problem
    from icml24.group_dro.moments import estimator_moments, moments_near

    p = synthetic_problem(8, 30, 5, radius=1.0, seed=0)
    w, q = p.domain.center, np.full(8, 1 / 8)
    near = moments_near(p, w + 0.1, q, directions=3)
    assert set(near) == {"pred_ratio_inf", "pred_ratio_local", "q_inf_ratio", "w_ratio"}
    # the paper's norm sees an up to m^2 larger q-block for the one-level estimator; the local norm exactly m
    assert p.m < near["q_inf_ratio"] <= p.m**2
    assert near["pred_ratio_inf"] > near["pred_ratio_local"] > 0
    with pytest.raises(InputError, match="q must be a finite vector of length 8"):
        estimator_moments(p, w, q[:3], w, q)
    with pytest.raises(InputError, match="w_bar must be a finite vector of length 5"):
        estimator_moments(p, w, q, w * np.nan, q)
    with pytest.raises(InputError, match="problem must be a GroupProblem"):
        estimator_moments("data", w, q, w, q)
    with pytest.raises(InputError, match=r"directions must be in \[1, inf\], got 0"):
        moments_near(p, w, q, directions=0)
    with pytest.raises(InputError, match="size must be in"):
        moments_near(p, w, q, size=0.0)
    with pytest.raises(InputError, match=r"seed must be in \[0, inf\], got -1"):
        moments_near(p, w, q, seed=-1)
