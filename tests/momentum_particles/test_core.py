import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml24.momentum_particles import (
    ABP,
    MPD,
    PGD,
    PPCA,
    FunctionModel,
    ToyHierarchical,
    flow_step,
    momentum_from_target,
    noise_covariance,
    ppca_em,
    ppca_log_likelihood,
    ppca_mle,
    sample_posterior,
    toy_em,
    toy_log_likelihood,
)
from icml24.testing import fingerprint, same

scipy = pytest.importorskip("scipy")
from scipy.integrate import quad, solve_ivp  # noqa: E402

params = st.tuples(
    st.floats(0.05, 5.0),  # gamma
    st.floats(0.1, 50.0),  # eta
    st.floats(1e-3, 0.5),  # h
)


@settings(max_examples=25, deadline=None)
@given(params, st.floats(-3, 3), st.floats(-3, 3), st.floats(-3, 3))
def test_frozen_force_step_is_the_exact_ode_solution(p, z0, m0, f):
    gamma, eta, h = p
    t = {"dtype": torch.float64}
    z1, m1 = flow_step(
        torch.tensor([z0], **t), torch.tensor([m0], **t), torch.tensor([f], **t), gamma=gamma, eta=eta, h=h
    )

    def rhs(_t, s):
        return [eta * s[1], -gamma * eta * s[1] + f]

    sol = solve_ivp(rhs, (0, h), [z0, m0], method="DOP853", rtol=1e-12, atol=1e-14)
    assert float(z1) == pytest.approx(sol.y[0, -1], rel=1e-8, abs=1e-10)
    assert float(m1) == pytest.approx(sol.y[1, -1], rel=1e-8, abs=1e-10)


def test_mpd_theta_update_with_a_constant_gradient_is_the_exact_solution():
    # log p = s . theta (+ a latent term): the gradient is constant, so drift-then-kick is exact
    s = torch.tensor([0.7, -1.3], dtype=torch.float64)

    def fn(theta, x, y):
        return (theta * s).sum() - 0.5 * (x**2).sum(-1) + 0 * y.sum(-1)

    model = FunctionModel(fn, torch.tensor([0.2, 0.5], dtype=torch.float64), latent_dim=1)
    g, eta, h, steps = 0.3, 5.0, 0.05, 4
    fit = MPD(h, 0.1, gamma_theta=g, gamma_x=1.0, eta_theta=eta, eta_x=1.0, n_particles=2).fit(
        model, torch.zeros(1, 1, dtype=torch.float64), steps
    )
    for i in range(2):
        sol = solve_ivp(
            lambda _t, v, f=float(s[i]): [eta * v[1], -g * eta * v[1] + f],
            (0, steps * h),
            [float(model.theta.detach()[i]), 0.0],
            rtol=1e-12,
            atol=1e-14,
            method="DOP853",
        )
        assert float(fit.model.theta.detach()[i]) == pytest.approx(sol.y[0, -1], rel=1e-8)


@settings(max_examples=25, deadline=None)
@given(params)
def test_noise_covariance_is_psd_and_is_the_ito_integral(p):
    gamma, eta, h = p
    vx, c, vm = noise_covariance(gamma, eta, h)
    assert vx > 0 and vm > 0 and vx * vm - c * c >= -1e-12 * vx * vm
    k = gamma * eta

    # X noise = eta int (1 - e^{-k(h-s)})/k sqrt(2 gamma) dW_s, M noise = int e^{-k(h-s)} sqrt(2 gamma) dW_s
    def ax(u):
        return eta * (1 - math.exp(-k * u)) / k

    def am(u):
        return math.exp(-k * u)

    ivx = 2 * gamma * quad(lambda u: ax(u) ** 2, 0, h, epsabs=0, epsrel=1e-12)[0]
    ic = 2 * gamma * quad(lambda u: ax(u) * am(u), 0, h, epsabs=0, epsrel=1e-12)[0]
    ivm = 2 * gamma * quad(lambda u: am(u) ** 2, 0, h, epsabs=0, epsrel=1e-12)[0]
    assert vx == pytest.approx(ivx, rel=1e-7)
    assert c == pytest.approx(ic, rel=1e-7)
    assert vm == pytest.approx(ivm, rel=1e-7)


def test_noise_covariance_small_h_limit_and_official_formula():
    gamma, eta = 0.7, 3.0
    for h in (1e-3, 1e-4, 1e-6):
        vx, _, _ = noise_covariance(gamma, eta, h)
        assert vx == pytest.approx(2 / 3 * gamma * eta**2 * h**3, rel=2 * gamma * eta * h)
    # the official transition's formula, where it has no cancellation
    h = 0.3
    ge = gamma * eta
    sc, sc2 = math.exp(-ge * h), math.exp(-2 * ge * h)
    official = (
        (2 * h - sc2 / ge + 4 * sc / ge - 3 / ge) / gamma,
        (1 - 2 * sc + sc2) / ge,
        (1 - sc2) / eta,
    )
    assert noise_covariance(gamma, eta, h) == pytest.approx(official, rel=1e-12)


def _official_step(theta, tmo, x, qmo, y, gen, *, ht, hx, gt, et, gx, ex):
    """One MPD_Proposed step on the toy model, from the official formulas, in float64 (the test's oracle)."""
    tge = gt * et
    tom = math.exp(-tge * ht)
    theta = theta + (1 - tom) / gt * tmo
    grad = -((x - theta).sum(dim=(1, 2)).mean())  # d/dtheta of -(1/P) sum log p
    tmo_next = tom * tmo - (1 - tom) * grad / tge
    theta = theta - (ht - (1 - tom) / tge) / gt * grad
    score = (theta - x) + (y - x)
    ge = gx * ex
    sc, sc2 = math.exp(-ge * hx), math.exp(-2 * ge * hx)
    s_xx = 1 / gx * (2 * hx - sc2 / ge + 4 * sc / ge - 3 / ge)
    s_mm = (1 - sc2) / ex
    s_mx = 1 / ge * (1 - 2 * sc + sc2)
    l_xx, l_mx = s_xx**0.5, s_mx / s_xx**0.5
    l_mm = (s_mm - s_mx**2 / s_xx) ** 0.5
    z = torch.randn((2,) + tuple(x.shape), generator=gen, dtype=torch.float64)
    x_next = x + 1 / gx * ((1 - sc) * qmo + (hx - (1 - sc) / ge) * score) + l_xx * z[0]
    q_next = sc * qmo + (1 - sc) / ge * score + l_mx * z[0] + l_mm * z[1]
    return theta, tmo_next, x_next, q_next


def test_mpd_matches_the_official_integrator_step_by_step():
    y = 100 + 1.4 * torch.randn(20, 1, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    kw = dict(ht=1e-4, hx=1e-2, gt=0.1, et=2000.0, gx=0.1, ex=2000.0)
    fit = MPD(1e-4, 1e-2, gamma_theta=0.1, gamma_x=0.1, eta_theta=2000, eta_x=2000, n_particles=7).fit(
        ToyHierarchical(), y, 5, seed=11
    )
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(7, 20, 1, generator=gen, dtype=torch.float64)
    qmo = torch.randn(7, 20, 1, generator=gen, dtype=torch.float64) / math.sqrt(2000.0)
    theta, tmo = torch.zeros(1, dtype=torch.float64), torch.zeros(1, dtype=torch.float64)
    for _ in range(5):
        theta, tmo, x, qmo = _official_step(theta, tmo, x, qmo, y, gen, **kw)
    assert float(fit.model.theta.detach()) == pytest.approx(float(theta), rel=1e-10)
    assert torch.allclose(fit.particles, x, rtol=1e-10, atol=1e-10)
    assert torch.allclose(fit.momenta, qmo, rtol=1e-10, atol=1e-12)


def test_zero_gradient_momentum_decays_by_omega_per_step():
    g, eta, h = 0.4, 3.0, 0.2
    omega = math.exp(-g * eta * h)
    m = torch.tensor([1.5, -2.0], dtype=torch.float64)
    z = torch.zeros(2, dtype=torch.float64)
    for _ in range(5):
        z_new, m_new = flow_step(z, m, torch.zeros(2, dtype=torch.float64), gamma=g, eta=eta, h=h)
        assert torch.equal(m_new, omega * m)
        assert torch.allclose(z_new - z, (1 - omega) / g * m, rtol=1e-14)
        z, m = z_new, m_new


def _gaussian_target():
    return FunctionModel(
        lambda th, x, y: -0.5 * (x**2).sum(-1) + 0 * th.sum() + 0 * y.sum(-1), torch.zeros(1).double(), 1
    )


def test_particles_are_stationary_on_a_gaussian_target_with_theta_fixed():
    bias = {}
    for h in (0.2, 0.05):
        eta = 2.0
        fit = MPD(1e-3, h, gamma_theta=1.0, gamma_x=1.0, eta_theta=1.0, eta_x=eta, n_particles=4000).fit(
            _gaussian_target(), torch.zeros(1, 1).double(), int(6 / h) + 100, x0=torch.full((4000, 1, 1), 3.0).double()
        )
        x, mom = fit.particles.reshape(-1), fit.momenta.reshape(-1)
        se = 4 / math.sqrt(4000)
        assert abs(float(x.mean())) < se and abs(float(mom.mean())) < se / math.sqrt(eta)
        bias[h] = (float(x.var()) - 1.0, float(mom.var()) * eta - 1.0)
        assert abs(bias[h][0]) <= 0.6 * h + 0.06 and abs(bias[h][1]) <= 0.6 * h + 0.06  # O(h) bias
        assert float(fit.model.theta.detach()) == 0.0  # no gradient: theta never moves
    assert bias[0.05][0] < bias[0.2][0] - 0.03 and bias[0.05][1] < bias[0.2][1] - 0.03  # shrinking with h


def test_overdamped_limit_is_langevin_with_step_h_over_gamma():
    h, eta = 0.05, 1.0
    for gamma in (200.0, 2000.0):
        vx, _, _ = noise_covariance(gamma, eta, h * gamma)  # eta h fixed in PGD units: step h gamma
        assert vx == pytest.approx(2 * h, rel=3 / (gamma * eta * h * gamma) + 1e-9)
    # and empirically: the stationary variance matches PGD's on the Gaussian target
    gamma = 50.0
    mpd = MPD(1e-3, h * gamma, gamma_theta=1.0, gamma_x=gamma, eta_theta=1.0, eta_x=eta, n_particles=4000)
    pgd = PGD(1e-3, h, n_particles=4000)
    x0 = torch.full((4000, 1, 1), 2.0).double()
    a = mpd.fit(_gaussian_target(), torch.zeros(1, 1).double(), 200, x0=x0).particles
    b = pgd.fit(_gaussian_target(), torch.zeros(1, 1).double(), 200, x0=x0).particles
    assert float(a.var()) == pytest.approx(float(b.var()), rel=0.1)
    assert abs(float(a.mean()) - float(b.mean())) < 0.1


def test_pgd_fixed_point_on_the_toy_model_is_the_mle():
    y = 3 + 1.4 * torch.randn(50, 1, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    fit = PGD(0.05 / 50, 0.05, n_particles=20).fit(ToyHierarchical(), y, 1500)
    theta = fit.theta_trace()[500:, 0]
    assert float(theta.mean()) == pytest.approx(float(y.mean()), abs=0.02)
    assert toy_em(y, 0.0, 60)[-1] == pytest.approx(float(y.mean()), abs=1e-12)
    # the toy's exact log-likelihood peaks at the MLE
    assert toy_log_likelihood(y, float(y.mean())) > toy_log_likelihood(y, float(y.mean()) + 0.1)


def test_replicated_toy_runs_are_independent_copies():
    y = 5 + torch.randn(30, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    mpd = MPD(1e-3, 1e-2, gamma_theta=0.1, gamma_x=0.1, eta_theta=2000, eta_x=2000, n_particles=4)
    both = mpd.fit(ToyHierarchical(0.0, 3), y, 50).theta_trace()
    x0 = torch.randn(4, 30, 3, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    joint = mpd.fit(ToyHierarchical(0.0, 3), y, 50, x0=x0)
    # the theta of one replicate does not depend on the others' data
    y2 = y.clone()
    y2[:, 1:] += 10
    other = mpd.fit(ToyHierarchical(0.0, 3), y2, 50, x0=x0)
    assert torch.equal(joint.model.theta[0], other.model.theta[0]) and both.shape == (51, 3)


def test_fit_leaves_the_model_alone_and_repeats_with_the_seed():
    model = PPCA(6, 2, seed=3)
    before = fingerprint(model)
    y = torch.randn(40, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    algs = (
        MPD(1e-3, 1e-2, momentum_theta=0.9, momentum_x=0.0, restart=True, preconditioner="rmsprop", n_particles=3),
        PGD(1e-3, 1e-2, n_particles=3, preconditioner="rmsprop"),
        ABP(1e-3, 1e-2, chain_length=3),
    )
    for alg in algs:
        a = alg.fit(model, y, 20, seed=5, every=7)
        b = alg.fit(model, y, 20, seed=5, every=7)
        assert same(fingerprint(model), before)
        assert torch.equal(a.particles, b.particles) and a.steps == [0, 7, 14, 20]
        assert not torch.equal(a.model.W, model.W)
    assert [a.grad_evals[-1] for a in (alg.fit(model, y, 4) for alg in algs)] == [8, 4, 16]


def test_momentum_from_target_sets_c_h():
    eta = momentum_from_target(0.95, 0.9, 1e-4)
    assert 0.9 * eta * 1e-4 == pytest.approx(0.05)


def test_ppca_closed_forms_agree():
    y = torch.randn(300, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64) @ torch.randn(
        5, 5, generator=torch.Generator().manual_seed(1), dtype=torch.float64
    )
    W, mu, s2, ll = ppca_mle(y, 2)
    from scipy.stats import multivariate_normal

    ref = multivariate_normal(mu.numpy(), (W @ W.T).numpy() + s2 * np.eye(5)).logpdf(y.numpy()).sum()
    assert ll == pytest.approx(ref, rel=1e-10)
    *_, lls = ppca_em(y, 2, 300)
    assert np.all(np.diff(lls) > -1e-8) and lls[-1] == pytest.approx(ll, abs=1e-3)
    assert ppca_log_likelihood(y, W * 1.1, mu, s2) < ll


def test_sample_posterior_reaches_the_toy_posterior():
    y = torch.tensor([[4.0], [-2.0]], dtype=torch.float64)
    x = sample_posterior(ToyHierarchical(1.0), y, steps=400, h=0.05, n_particles=3000, seed=0)
    assert x.mean(0).reshape(-1).tolist() == pytest.approx([2.5, -0.5], abs=0.06)  # (theta + y)/2
    assert float(x.var(0).mean()) == pytest.approx(0.5 / (1 - 0.05), rel=0.1)  # ULA's O(h) bias
