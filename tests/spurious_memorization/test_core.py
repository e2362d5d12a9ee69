"""Properties of the kernel-solved interpolator, the feature maps and the alignment, against float64 oracles
written here (pseudo-inverses, refits, quadrature, Monte Carlo)."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml24.data.spurious import spurious_gaussian
from icml24.errors import InputError
from icml24.spurious_memorization import (
    FullyConnected,
    KernelRidge,
    MinNormInterpolator,
    NetworkInterpolator,
    NTKFeatures,
    RandomFeatures,
    SmallConvNet,
    activation_energy,
    control_accuracy,
    feature_alignment,
    feature_alignment_refits,
    feature_map,
    hermite,
    hermite_coefficients,
    loo_errors,
    predicted_gamma,
    spurious_accuracy,
    spurious_queries,
)
from icml24.spurious_memorization import test_accuracy as test_acc
from tests.conftest import needs_fashion

ARMS = [(f, a) for f in ("rf", "ntk") for a in ("phi2", "phi4", "relu")]


@settings(max_examples=15, deadline=None)
@given(n=st.integers(3, 10), p=st.integers(12, 30), seed=st.integers(0, 10_000))
def test_loo_identity_on_random_features(n, p, seed):
    """For a random Phi (N < p): f(z^s) - f_{-1}(z^s) = F (g_1 - f_{-1}(z_1)) and the rank-one update gives Phi^+ G."""
    rng = np.random.default_rng(seed)
    phi, phis, g = rng.standard_normal((n, p)), rng.standard_normal(p), rng.standard_normal(n)
    theta = np.linalg.pinv(phi) @ g
    theta_1 = np.linalg.pinv(phi[1:]) @ g[1:]
    q, _ = np.linalg.qr(phi[1:].T)
    perp = phi[0] - q @ (q.T @ phi[0])
    f_align = phis @ perp / (perp @ perp)
    stab = g[0] - phi[0] @ theta_1
    assert abs(phis @ theta - phis @ theta_1 - f_align * stab) < 1e-10
    assert np.allclose(theta_1 + perp * stab / (perp @ perp), theta, atol=1e-10)


@pytest.mark.parametrize("kind,act", ARMS)
def test_kernel_trick_equals_explicit_features(kind, act):
    data = spurious_gaussian(12, 10, alpha=0.5, n_test=15, seed=3)
    fm = feature_map(kind, 10, 25, act, seed=4)
    phi = fm.features(data.z_train)
    assert np.allclose(phi @ phi.T, fm.kernel(data.z_train), atol=1e-12)
    theta = np.linalg.pinv(phi) @ data.g_train
    m = MinNormInterpolator(fm).fit(data.z_train, data.g_train)
    assert np.allclose(fm.features(data.z_test) @ theta, m.predict(data.z_test), atol=1e-9)
    # interpolation: train accuracy 1, residual ~ 0
    assert np.allclose(m.predict(data.z_train), data.g_train, atol=1e-9)
    # alignment and leave-one-out by the kernel formulas equal N refits
    assert np.allclose(
        m.feature_alignment(data.z_spurious), feature_alignment_refits(fm, data.z_train, data.z_spurious)
    )
    f_loo = np.array(
        [
            MinNormInterpolator(fm)
            .fit(np.delete(data.z_train, i, 0), np.delete(data.g_train, i))
            .predict(data.z_train[i : i + 1])[0]
            for i in range(12)
        ]
    )
    assert np.allclose(m.loo_errors(), data.g_train - f_loo, atol=1e-9)


def test_ntk_features_follow_the_official_kron_order():
    fm = NTKFeatures(3, 2, "relu", seed=0)
    z = np.array([[1.0, -2.0, 0.5]])
    gate = (z @ fm.weights.T > 0).astype(float)[0]
    want = np.kron(z[0], gate) / math.sqrt(3 * 2)
    assert np.allclose(fm.features(z)[0], want)


def test_hermite_orthonormal_by_quadrature():
    nodes, weights = np.polynomial.hermite_e.hermegauss(30)
    weights = weights / math.sqrt(2 * math.pi)
    gram = np.array([[np.sum(weights * hermite(i, nodes) * hermite(j, nodes)) for j in range(6)] for i in range(6)])
    assert np.allclose(gram, np.eye(6), atol=1e-12)


def test_hermite_coefficients_recover_the_definitions():
    assert np.allclose(hermite_coefficients("rf", "phi2", 5), [0, 1, 1, 0, 0, 0], atol=1e-12)
    assert np.allclose(hermite_coefficients("rf", "phi4", 5), [0, 1, 0, 0, 1, 0], atol=1e-12)
    assert np.allclose(hermite_coefficients("ntk", "phi2", 5), [1, 1, 0, 0, 0, 0], atol=1e-12)
    assert np.allclose(hermite_coefficients("ntk", "phi4", 5), [1, 0, 0, 1, 0, 0], atol=1e-12)
    # ReLU and its derivative: closed form against fine quadrature on the half line
    t = np.linspace(0, 12, 200_001)
    pdf = np.exp(-t * t / 2) / math.sqrt(2 * math.pi)
    for kind, f in (("rf", t), ("ntk", np.ones_like(t))):
        mu = hermite_coefficients(kind, "relu", 6)
        direct = [np.trapezoid(f * hermite(l, t) * pdf, t) for l in range(7)]
        assert np.allclose(mu, direct, atol=1e-6)
    # energy: sum of mu_l^2 = E[f^2] (1/2 for both)
    assert abs(np.sum(hermite_coefficients("rf", "relu", 60) ** 2) - 0.5) < 1e-3


@pytest.mark.parametrize("kind,act", ARMS)
def test_monte_carlo_kernel_matches_closed_form(kind, act):
    """E_v[f(v^T a) f(v^T b)] ~ sum mu_l^2 rho^l for ||a||^2 = ||b||^2 = d, <a, b> = rho d."""
    d, rho = 20, 0.4
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((d, 2)))
    a = q[:, 0] * math.sqrt(d)
    b = (rho * q[:, 0] + math.sqrt(1 - rho**2) * q[:, 1]) * math.sqrt(d)
    z = np.stack([a, b])
    fm = feature_map(kind, d, 400_000, act, seed=1)
    mc = fm.kernel(z)[0, 1]
    mu2 = hermite_coefficients(kind, act, 40) ** 2
    series = float(np.sum(mu2 * rho ** np.arange(41))) * (rho if kind == "ntk" else 1.0)
    assert abs(fm.infinite_kernel(z)[0, 1] - series) < 1e-4
    assert abs(mc - series) < 0.03 * max(1.0, abs(series))


def test_predicted_gamma_worked_values():
    assert predicted_gamma("rf", "phi2", 0.5) == pytest.approx(0.375)
    assert predicted_gamma("ntk", "phi2", 0.5) == pytest.approx(0.375)
    assert predicted_gamma("rf", "phi4", 0.5) == pytest.approx((0.5 + 0.5**4) / 2)
    assert predicted_gamma("rf", "phi2", 0.5, "many") == pytest.approx(0.25)
    assert predicted_gamma("ntk", "phi4", 0.5, "many") == pytest.approx(0.0625)
    assert predicted_gamma("ntk", "relu", 0.5) < predicted_gamma("rf", "relu", 0.5)


def test_alignment_concentrates_at_gamma_with_infinite_width():
    data = spurious_gaussian(40, 1500, alpha=0.5, n_test=1, seed=0)
    f = feature_alignment(RandomFeatures(1500, None, "phi2"), data.z_train, data.z_spurious)
    assert abs(f.mean() - 0.375) < 0.02


def test_control_at_chance_and_memorization_at_small_n():
    spur, ctrl, count = 0.0, 0.0, 0
    for s in range(20):
        data = spurious_gaussian(20, 200, alpha=0.5, n_test=1, seed=s)
        m = MinNormInterpolator(NTKFeatures(200, None, "phi2")).fit(data.z_train, data.g_train)
        spur += spurious_accuracy(m, data.z_spurious, data.g_train) * 20
        ctrl += control_accuracy(m, data.z_control, data.g_train) * 20
        count += 20
    assert spur / count > 0.9
    assert abs(ctrl / count - 0.5) < 3 * 0.5 / math.sqrt(count)


def test_torch_inputs_and_ridge():
    data = spurious_gaussian(15, 30, seed=1)
    fm = RandomFeatures(30, 200, "phi4", seed=2)
    a = MinNormInterpolator(fm).fit(torch.from_numpy(data.z_train), torch.from_numpy(data.g_train))
    b = MinNormInterpolator(fm).fit(data.z_train, data.g_train)
    assert np.allclose(a.predict(torch.from_numpy(data.z_test)), b.predict(data.z_test))
    assert np.allclose(
        KernelRidge(fm, 0.0).fit(data.z_train, data.g_train).predict(data.z_test), b.predict(data.z_test)
    )
    assert np.allclose(loo_errors(fm, data.z_train, data.g_train), b.loo_errors())


def test_spurious_queries_blank_or_replace():
    z = np.arange(12.0).reshape(2, 6)
    mask = np.array([False, False, False, True, True, True])
    assert np.array_equal(spurious_queries(z, mask), [[0, 0, 0, 3, 4, 5], [0, 0, 0, 9, 10, 11]])
    assert np.array_equal(spurious_queries(z, mask, np.ones((2, 3)))[:, :3], np.ones((2, 3)))


# ------------------------------------------------------------------------------------------------ bad input
def test_mask_without_core_or_spurious_coordinates():
    z = np.ones((2, 4))
    with pytest.raises(InputError, match="mask selects no core"):
        spurious_queries(z, np.ones(4, dtype=bool))
    with pytest.raises(InputError, match="mask selects no spurious"):
        spurious_queries(z, np.zeros(4, dtype=bool))
    with pytest.raises(InputError, match="mask must hold booleans"):
        spurious_queries(z, np.ones(4))


def test_more_samples_than_features():
    data = spurious_gaussian(30, 10, seed=0)
    with pytest.raises(InputError, match="N = 30 samples but the map has only 20 features"):
        MinNormInterpolator(RandomFeatures(10, 20, "phi2")).fit(data.z_train, data.g_train)


def test_non_finite_and_unknown_activation():
    z = np.ones((3, 4))
    z[0, 0] = np.nan
    with pytest.raises(InputError, match="z contains NaN"):
        MinNormInterpolator(RandomFeatures(4, 50)).fit(z, np.ones(3))
    with pytest.raises(InputError, match="unknown act 'tanh'"):
        RandomFeatures(4, 50, "tanh")
    with pytest.raises(InputError, match="unknown features"):
        feature_map("cnn", 4, 10)
    with pytest.raises(InputError, match="alpha"):
        predicted_gamma("rf", "phi2", 1.5)
    with pytest.raises(InputError, match="a must have 4 columns"):
        RandomFeatures(4, 10).kernel(np.ones((2, 5)))
    with pytest.raises(InputError, match="singular"):
        MinNormInterpolator(RandomFeatures(4, 50)).fit(np.ones((3, 4)), np.ones(3))


# ------------------------------------------------------------------------------------- gamma against oracles
@pytest.mark.parametrize("alpha", [0.25, 0.5, 0.8])
def test_relu_gamma_equals_arc_cosine_closed_form(alpha):
    """The Hermite series of gamma against the arc-cosine kernels written here (float64, no series)."""
    theta = math.acos(alpha)
    k1 = (math.sin(theta) + (math.pi - theta) * alpha) / (2 * math.pi)  # E[relu(u) relu(w)], corr alpha
    c = 1 / (2 * math.pi)  # mu_0^2 of ReLU, spanned by the other samples
    assert predicted_gamma("rf", "relu", alpha) == pytest.approx((k1 - c) / (0.5 - c), abs=1e-6)
    k0 = (math.pi - theta) / (2 * math.pi)  # E[step(u) step(w)]
    assert predicted_gamma("ntk", "relu", alpha) == pytest.approx(alpha * k0 / 0.5, abs=1e-6)
    # N >> d: the degree-1 (RF) and degree-0 (NTK) components drop out too
    assert predicted_gamma("rf", "relu", alpha, "many") == pytest.approx(
        (k1 - c - 0.25 * alpha) / (0.5 - c - 0.25), abs=1e-6
    )
    assert predicted_gamma("ntk", "relu", alpha, "many") == pytest.approx(alpha * (k0 - 0.25) / (0.5 - 0.25), abs=1e-6)


@pytest.mark.parametrize(
    "kind,act,n", [("rf", "relu", 10), ("rf", "relu", 60), ("ntk", "relu", 30), ("rf", "phi4", 30)]
)
def test_gamma_against_monte_carlo_alignment(kind, act, n):
    """Monte Carlo over data and explicit random features (finite width, no kernel formula) vs the predicted value
    at this N, in the regime N << d."""
    d, alpha = 1500, 0.5
    vals = []
    for s in range(3):
        data = spurious_gaussian(n, d, alpha=alpha, n_test=1, seed=100 + s)
        fm = feature_map(kind, d, 4000 if kind == "rf" else 6, act, seed=200 + s)
        phi, phis = fm.features(data.z_train), fm.features(data.z_spurious)
        for i in range(min(n, 5)):  # F by its definition: explicit projection onto the others' complement
            q, _ = np.linalg.qr(np.delete(phi, i, 0).T)
            perp = phi[i] - q @ (q.T @ phi[i])
            vals.append(phis[i] @ perp / (perp @ perp))
    assert abs(np.mean(vals) - predicted_gamma(kind, act, alpha, n_train=n)) < 0.025


def test_finite_n_correction_only_where_a_constant_component_exists():
    assert predicted_gamma("rf", "relu", 0.5, n_train=10) > predicted_gamma("rf", "relu", 0.5, n_train=1000)
    assert predicted_gamma("rf", "relu", 0.5, n_train=10**7) == pytest.approx(predicted_gamma("rf", "relu", 0.5))
    for kind, act in (("rf", "phi2"), ("ntk", "relu"), ("ntk", "phi4")):
        assert predicted_gamma(kind, act, 0.5, n_train=10) == predicted_gamma(kind, act, 0.5)


def test_activation_energy_is_the_sum_of_squared_coefficients():
    for kind, act in ARMS:
        mu2 = hermite_coefficients(kind, act, 20000) ** 2
        assert abs(activation_energy(kind, act) - mu2.sum()) < (0.01 if (kind, act) == ("ntk", "relu") else 1e-6)


# ------------------------------------------------------------------------------------------- real images
@needs_fashion
def test_fashion_border_from_the_data_root():
    from icml24.data.spurious import fashion_border

    data = fashion_border(40, n_test=60, seed=0)
    assert data.z_train.shape == (40, 48 * 48) and data.shape == (48, 48)
    assert abs(data.alpha - (1 - 784 / 2304)) < 1e-12
    assert set(np.unique(data.g_train)) <= {-1.0, 1.0} and len(np.unique(data.g_test)) == 2
    assert np.all(data.z_spurious[:, ~data.mask] == 0)
    assert np.array_equal(data.z_spurious[:, data.mask], data.z_train[:, data.mask])
    assert not np.allclose(data.z_control[:, data.mask], data.z_train[:, data.mask])
    assert abs(float(np.mean(np.sum(data.z_train**2, 1))) / data.d - 1) < 0.1  # standardised: ||z||^2 ~ d
    m = MinNormInterpolator(NTKFeatures(data.d, None, "phi2")).fit(data.z_train, data.g_train)
    assert spurious_accuracy(m, data.z_spurious, data.g_train) > 0.8  # memorized at small N
    assert abs(control_accuracy(m, data.z_control, data.g_train) - 0.5) < 0.25
    assert test_acc(m, data.z_test, data.g_test) > 0.8  # sneaker vs ankle boot is easy


# ----------------------------------------------------------------------------------------------- networks
def test_network_interpolates_and_leaves_the_user_net_untouched():
    data = spurious_gaussian(20, 30, seed=0)
    net = FullyConnected(30, hidden=(64,), seed=0)
    before = [p.detach().clone() for p in net.parameters()]
    m = NetworkInterpolator(net, epochs=400, seed=0).fit(torch.from_numpy(data.z_train), data.g_train)
    assert m.history["train_acc"] == 1.0 and m.history["train_mse"] < 1e-2
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters())) and net.training
    again = NetworkInterpolator(net, epochs=400, seed=0).fit(data.z_train, data.g_train)
    assert np.array_equal(m.predict(data.z_test), again.predict(data.z_test))  # same seed, same numbers
    assert FullyConnected(30, seed=1)[0].weight.sum() != FullyConnected(30, seed=2)[0].weight.sum()


def test_small_cnn_takes_flattened_images():
    net = SmallConvNet((12, 16), seed=0)
    assert net(torch.zeros(3, 12 * 16)).shape == (3, 1)
