"""Property tests: exact group actions, the analytic NTK against a from-scratch oracle and a wide network,
the closed-form mean (0 at t = 0, interpolation at infinity, exact invariance, the broken-orbit control),
the vmap trainer against the member loop, and OSP on constructed cases."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import icml24.ensemble_equivariance as ee
from icml24.errors import InputError

GROUPS = [ee.Group("c4"), ee.Group("d4")]


@pytest.mark.parametrize("grp", GROUPS, ids=lambda g: g.name)
@given(size=st.integers(1, 7), seed=st.integers(0, 2**16))
@settings(max_examples=15, deadline=None)
def test_actions_are_permutations_of_group_order(grp, size, seed):
    x = np.random.default_rng(seed).standard_normal((2, size, size))
    y = np.random.default_rng(seed + 1).standard_normal((2, size, size))
    for g in range(grp.order):
        gx = grp.act(x, g)
        p = grp.permutation(g, size)
        assert sorted(p.tolist()) == list(range(size * size))
        assert np.array_equal(gx.reshape(2, -1), x.reshape(2, -1)[:, p])
        assert np.isclose(np.sum(gx * grp.act(y, g)), np.sum(x * y))  # orthogonal
        # the table is the composition, inverses invert, and g^|G| = e
        h = (g + 1) % grp.order
        assert np.array_equal(grp.act(grp.act(x, h), g), grp.act(x, int(grp.table[g, h])))
        assert np.array_equal(grp.act(gx, int(grp.inverses[g])), x)
        z = x
        for _ in range(grp.order):
            z = grp.act(z, g)
        assert np.array_equal(z, x)
    assert len({grp.act(np.arange(9.0).reshape(3, 3), g).tobytes() for g in range(grp.order)}) == grp.order


def test_torch_and_numpy_actions_agree_and_rot90_is_numpy():
    grp = ee.Group("d4")
    x = np.random.default_rng(0).standard_normal((3, 1, 5, 5))
    for g in range(8):
        assert np.array_equal(grp.act(torch.from_numpy(x), g).numpy(), grp.act(x, g))
    assert np.array_equal(ee.Group("c4").act(x, 1), np.rot90(x, 1, axes=(-2, -1)))


def test_orbit_augmentation_and_closure():
    grp = ee.Group("c4")
    x = torch.randn(5, 1, 4, 4)
    y = torch.arange(5)
    xa, ya = ee.augment(x, y, grp)
    assert xa.shape == (20, 1, 4, 4) and torch.equal(ya, y.repeat(4))
    for g in range(4):
        assert torch.equal(xa[g * 5 : (g + 1) * 5], grp.act(x, g))
    assert ee.is_orbit_closed(xa, grp) and not ee.is_orbit_closed(x, grp)
    assert not ee.is_orbit_closed(xa[1:], grp)
    xs, ys = ee.augment(x, y, grp, mode="sampled", seed=0)
    assert xs.shape == x.shape and torch.equal(ys, y)
    # equivariant image targets move with the inputs
    xi, yi = ee.augment(x, x * 2, grp, output="image")
    assert torch.equal(yi, 2 * xi)
    assert ee.augment(x, y, "d4")[0].shape[0] == 40


def _ntk_oracle(a, b, depth):
    """From scratch: arccos recursion in the textbook form (Arora et al. 2019), float64."""
    d = a.shape[1]
    sig = a @ b.T / d
    qa, qb = (a * a).sum(1) / d, (b * b).sum(1) / d
    theta = sig.copy()
    for _ in range(depth):
        nrm = np.sqrt(np.outer(qa, qb))
        c = np.clip(sig / nrm, -1, 1)
        t = np.arccos(c)
        sig = nrm * (np.sin(t) + (np.pi - t) * c) / np.pi
        theta = theta * (np.pi - t) / np.pi + sig
    return theta


def test_analytic_ntk_matches_oracle_and_is_invariant():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 1, 5, 5))
    z = rng.standard_normal((4, 1, 5, 5))
    k = ee.relu_ntk(x, z, depth=3)
    np.testing.assert_allclose(k, _ntk_oracle(x.reshape(6, -1), z.reshape(4, -1), 3), rtol=1e-7, atol=1e-9)
    grp = ee.Group("d4")
    for g in range(8):
        np.testing.assert_allclose(ee.relu_ntk(grp.act(x, g), grp.act(z, g), depth=3), k, rtol=0, atol=1e-12)
    kk = ee.relu_ntk(x)
    np.testing.assert_allclose(kk, kk.T, atol=1e-13)
    assert np.linalg.eigvalsh(kk).min() > -1e-10


def test_empirical_ntk_of_wide_mlp_approaches_analytic():
    from torch.func import functional_call, jacrev

    x = torch.randn(3, 12, generator=torch.Generator().manual_seed(0)).double()
    a = ee.relu_ntk(x.numpy())
    errs = {}
    for width in (64, 2048):
        e = []
        for s in range(2):
            m = ee.NTKMLP(12, width, 1, 2, seed=s).double()
            p = {k: v.detach() for k, v in m.named_parameters()}
            jac = jacrev(lambda q, m=m: functional_call(m, q, (x,))[:, 0])(p)
            j = torch.cat([v.reshape(3, -1) for v in jac.values()], 1).numpy()
            e.append(np.abs(j @ j.T - a).max() / np.abs(a).max())
        errs[width] = float(np.mean(e))
    assert errs[2048] < 0.12 and errs[2048] < errs[64] / 2


@pytest.fixture(scope="module")
def orbit_problem():
    rng = np.random.default_rng(1)
    grp = ee.Group("c4")
    x = rng.standard_normal((12, 1, 5, 5))
    y = np.eye(3)[rng.integers(0, 3, 12)]
    xa, ya = ee.augment(x, y, grp)
    return grp, xa, ya, rng.standard_normal((7, 1, 5, 5))


def test_closed_form_mean_limits_and_exact_invariance(orbit_problem):
    grp, xa, ya, q = orbit_problem
    mean = ee.NTKEnsembleMean(2).fit(xa, ya, grp=grp)
    assert np.all(mean.predict(q, 0.0) == 0.0)
    np.testing.assert_allclose(mean.predict(xa, math.inf), ya, atol=1e-6)
    # gradient flow: the residual on the training set decays as t grows
    res = [np.abs(mean.predict(xa, t) - ya).max() for t in (0.5, 5.0, 50.0)]
    assert res[0] > res[1] > res[2]
    for t in (0.0, 1.0, 10.0, math.inf):
        outs = [mean.predict(grp.act(q, g), t) for g in range(4)]
        assert max(np.abs(o - outs[0]).max() for o in outs) <= 1e-10
    # small t: f_t ~ eta t Theta(x, X) Y
    k = ee.relu_ntk(q, xa)
    np.testing.assert_allclose(mean.predict(q, 1e-7), 1e-7 * k @ ya, rtol=1e-5, atol=1e-15)


def test_broken_orbit_control_fails(orbit_problem):
    grp, xa, ya, q = orbit_problem
    keep = np.ones(len(xa), bool)
    keep[12 + 3] = False
    with pytest.raises(InputError):
        ee.NTKEnsembleMean(2).fit(xa[keep], ya[keep], grp=grp)
    broken = ee.NTKEnsembleMean(2).fit(xa[keep], ya[keep])
    outs = [broken.predict(grp.act(q, g), 10.0) for g in range(4)]
    assert max(np.abs(o - outs[0]).max() for o in outs) > 1e-4


def test_osp_constructed_cases_and_orbit_average():
    grp = ee.Group("c4")
    x = torch.randn(10, 1, 6, 6)

    def rotation_detector(z):
        # predicts a different class for each rotation of an asymmetric image: argmax over g of <g^-1 z, x0>
        return torch.stack([(grp.act(z, int(grp.inverses[g])) * x[:1]).flatten(1).sum(1) for g in range(4)], 1)

    worst = ee.orbit_outputs(rotation_detector, x[:1], grp)
    assert ee.orbit_same_prediction(worst) == 1.0
    model = ee.NTKMLP(36, 16, 5, seed=0)
    avg = ee.OrbitAveraged(model, grp)
    assert ee.orbit_same_prediction(ee.orbit_outputs(avg, x, grp)) == 4.0
    assert ee.equivariance_error(ee.orbit_outputs(avg, x, grp), grp) < 1e-5
    assert ee.equivariance_error(ee.orbit_outputs(model, x, grp), grp) > 1e-2
    per = ee.orbit_same_prediction(ee.orbit_outputs(model, x, grp), per_sample=True)
    assert per.shape == (10,) and per.min() >= 1 and per.max() <= 4


@pytest.mark.parametrize("name", ["c4", "d4"])
def test_group_cnn_is_exactly_invariant(name):
    grp = ee.Group(name)
    m = ee.GroupCNN(1, (3, 5), 4, grp, seed=0)
    x = torch.randn(4, 1, 8, 8)
    out = ee.orbit_outputs(m, x, grp)
    assert ee.equivariance_error(out, grp) < 1e-5
    assert m.training  # mode restored


def test_vmap_trainer_equals_member_loop_and_is_seeded():
    gen = torch.Generator().manual_seed(123)
    x = torch.randn(24, 1, 4, 4, generator=gen)
    y = torch.randint(0, 3, (24,), generator=gen)
    state = torch.get_rng_state()

    def factory():
        return ee.NTKMLP(16, 8, 3, 2)

    ens = ee.train_ensemble(factory, x, y, members=3, steps=5, lr=0.5, seed=4, checkpoints=(0, 5))
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is untouched
    loop = ee.train_members_loop(factory, x, y, members=3, steps=5, lr=0.5, seed=4)
    ref = torch.stack([m(x) for m in loop]).detach()
    torch.testing.assert_close(ens.member_outputs(x), ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(ens(x), ref.mean(0), rtol=1e-5, atol=1e-5)
    init = torch.stack([m(x) for m in ee.make_members(factory, 3, 4)]).detach()
    torch.testing.assert_close(ens.snapshots[0].member_outputs(x), init)
    again = ee.train_ensemble(factory, x, y, members=3, steps=5, lr=0.5, seed=4)
    assert torch.equal(again.member_outputs(x), ens.member_outputs(x))
    sub = ens.subset([2])
    torch.testing.assert_close(sub(x), ref[2], rtol=1e-5, atol=1e-5)
    met = ee.ensemble_metrics(ens, x, "c4", sizes=[1, 3])
    assert met["osp_m1"] == pytest.approx(met["member_osp"]) and met["osp_m3"] == met["ensemble_osp"]


@pytest.mark.parametrize("name", ["c4", "d4"])
def test_vector_action_is_a_representation_matching_the_pixel_action(name):
    from icml24.ensemble_equivariance.images import moment_target

    grp = ee.Group(name)
    x = torch.randn(5, 1, 7, 7, generator=torch.Generator().manual_seed(0)).double()
    v = moment_target(x)
    for g in range(grp.order):
        r = grp.vector_rep(g)
        np.testing.assert_allclose(r @ r.T, np.eye(2), atol=0)  # a signed permutation: orthogonal
        # the moment of the moved image is the rotated/reflected moment; rho_Y is a homomorphism
        torch.testing.assert_close(moment_target(grp.act(x, g)), grp.act_output(v, g, "vector"))
        h = (g + 3) % grp.order
        np.testing.assert_array_equal(grp.vector_rep(int(grp.table[g, h])), r @ grp.vector_rep(h))
    assert {tuple(grp.vector_rep(g).ravel()) for g in range(grp.order)}.__len__() == grp.order
    np.testing.assert_array_equal(ee.Group("c4").vector_rep(1), [[0.0, -1.0], [1.0, 0.0]])
    xa, ya = ee.augment(x, v, grp, output="vector")
    torch.testing.assert_close(moment_target(xa), ya)
    assert np.allclose(grp.act_output(v.numpy(), 1, "vector"), grp.act_output(v, 1, "vector").numpy())


def test_vector_equivariance_error_and_exact_ntk_mean():
    from icml24.ensemble_equivariance.images import moment_target

    grp = ee.Group("d4")
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.standard_normal((6, 1, 5, 5)))
    q = torch.from_numpy(rng.standard_normal((4, 1, 5, 5)))
    assert ee.equivariance_error(ee.orbit_outputs(moment_target, q, grp), grp, output="vector") < 1e-12
    # an invariant function of the image is not vector-equivariant
    inv = ee.OrbitAveraged(lambda z: moment_target(z) ** 2, grp)
    assert ee.equivariance_error(ee.orbit_outputs(inv, q, grp), grp, output="vector") > 1e-3
    xa, ya = ee.augment(x, moment_target(x), grp, output="vector")
    mean = ee.NTKEnsembleMean(2).fit(xa, ya, grp=grp)
    wrong = ee.NTKEnsembleMean(2).fit(*ee.augment(x, moment_target(x), grp, output="invariant"))
    for t in (1.0, math.inf):
        out = torch.from_numpy(np.stack([mean.predict(grp.act(q, g), t) for g in range(8)]))
        assert ee.equivariance_error(out, grp, output="vector") < 1e-10
        out = torch.from_numpy(np.stack([wrong.predict(grp.act(q, g), t) for g in range(8)]))
        assert ee.equivariance_error(out, grp, output="vector") > 1e-4


def test_ensemble_metrics_vector_outputs_have_no_osp():
    grp = ee.Group("c4")
    x = torch.randn(12, 1, 4, 4, generator=torch.Generator().manual_seed(1))
    y = torch.randn(12, 2, generator=torch.Generator().manual_seed(2))
    ens = ee.train_ensemble(lambda: ee.NTKMLP(16, 8, 2, 2), *ee.augment(x, y, grp, output="vector"), members=4, steps=3)
    r = ee.ensemble_metrics(ens, x, grp, sizes=[1, 4], output="vector")
    assert "member_osp" not in r and "osp_m4" not in r
    assert r["err_m4"] == pytest.approx(r["ensemble_err"]) and r["err_m1"] == pytest.approx(r["member_err"])
