"""Bad input raises InputError with a one-line message naming the argument."""

import numpy as np
import pytest

from icml24.errors import InputError
from icml24.group_dro import (
    Ball,
    Box,
    GroupProblem,
    aleg,
    alem,
    duality_gap,
    mirror_prox,
    one_level_vr,
    online_group_dro,
    pilot_gamma,
    smd,
    smd_mero,
    synthetic_problem,
)


def data(n=12, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return X, y, np.arange(n) % 3


def test_empty_group_is_refused():
    X, y, _ = data()
    with pytest.raises(InputError, match=r"groups\[1\] is empty"):
        GroupProblem.from_data(X, y, [np.arange(4), np.array([], dtype=int), np.arange(4, 12)])


def test_labels_not_matching_X_are_refused():
    X, y, g = data()
    with pytest.raises(InputError, match="y has 11 labels but X has 12 rows"):
        GroupProblem.from_data(X, y[:-1], g)
    with pytest.raises(InputError, match="groups has 11 labels"):
        GroupProblem.from_data(X, y, g[:-1])


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_data_is_refused(bad):
    X, y, g = data()
    X2 = X.copy()
    X2[3, 1] = bad
    with pytest.raises(InputError, match="X contains NaN or infinite entries"):
        GroupProblem.from_data(X2, y, g)
    y2 = y.copy()
    y2[0] = bad
    with pytest.raises(InputError, match="y contains NaN or infinite entries"):
        GroupProblem.from_data(X, y2, g, loss="squared")


def test_unknown_loss_is_refused():
    X, y, g = data()
    with pytest.raises(InputError, match="loss must be one of logistic, squared, smoothed_hinge"):
        GroupProblem.from_data(X, y, g, loss="hinge")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"X": np.zeros((0, 3))}, r"X is empty \(shape \(0, 3\)\)"),
        ({"X": np.zeros(5)}, "X must have 2 dimensions, got shape"),
        ({"y": np.array([0.0, 2.0] * 6)}, "y must hold labels"),
        ({"y": np.zeros((12, 1))}, "y must have 1 dimensions, got shape"),
        ({"groups": [np.arange(3), np.array([0, 12])]}, r"groups\[1\] has indices outside"),
        ({"groups": [np.arange(3), np.array([0.5, 1.0])]}, r"groups\[1\] must be a 1-D array of integer"),
        ({"groups": []}, "groups must be"),
        ({"groups": None}, "groups is required"),
        ({"domain": lambda: "ball"}, "domain must be a Ball or a Box"),
        ({"domain": lambda: Ball(-1.0)}, "radius must be"),
        ({"domain": lambda: Box(1.0, -1.0)}, "upper must exceed lower"),
        ({"domain": lambda: Box(0.0, np.inf)}, "upper contains NaN or infinite"),
        ({"domain": lambda: Ball(1.0, center=(0.0, 0.0))}, "center has 2 entries"),
    ],
)
def test_other_bad_problem_arguments(kwargs, match):
    X, y, g = data()
    args = {"X": X, "y": y, "groups": g, **kwargs}
    with pytest.raises(InputError, match=match):
        dom = args["domain"]() if "domain" in args else None
        GroupProblem.from_data(args["X"], args["y"], args["groups"], domain=dom)


def test_zero_one_labels_are_accepted_and_mapped():
    X, y, g = data()
    p1 = GroupProblem.from_data(X, (y + 1) / 2, g)
    p2 = GroupProblem.from_data(X, y, g)
    w = np.array([0.3, -0.1, 0.2])
    np.testing.assert_allclose(p1.risks(w), p2.risks(w))


def test_oracle_problem_validation():
    X, y, _ = data()

    def oracle(w, idx):
        return np.zeros(len(idx)), np.zeros((len(idx), 3))

    groups = [np.arange(6), np.arange(6, 12)]
    with pytest.raises(InputError, match="oracle must be callable"):
        GroupProblem.from_oracle(3, groups, dim=3, n_samples=12, domain=Ball(1.0), smoothness=1.0, lipschitz=1.0)
    with pytest.raises(InputError, match="smoothness must be"):
        GroupProblem.from_oracle(oracle, groups, dim=3, n_samples=12, domain=Ball(1.0), smoothness=-1.0, lipschitz=1.0)
    with pytest.raises(InputError, match=r"groups\[0\] is empty"):
        GroupProblem.from_oracle(
            oracle, [[], [1]], dim=3, n_samples=12, domain=Ball(1.0), smoothness=1.0, lipschitz=1.0
        )
    bad = GroupProblem.from_oracle(
        lambda w, idx: (np.zeros(len(idx)), np.zeros((len(idx), 2))),
        groups,
        dim=3,
        n_samples=12,
        domain=Ball(1.0),
        smoothness=1.0,
        lipschitz=1.0,
    )
    with pytest.raises(InputError, match="oracle returned shapes"):
        bad.risks(np.zeros(3))
    nan = GroupProblem.from_oracle(
        lambda w, idx: (np.full(len(idx), np.nan), np.zeros((len(idx), 3))),
        groups,
        dim=3,
        n_samples=12,
        domain=Ball(1.0),
        smoothness=1.0,
        lipschitz=1.0,
    )
    with pytest.raises(InputError, match="non-finite"):
        nan.risks(np.zeros(3))


@pytest.mark.parametrize("bad", [0.0, np.inf, np.nan])
@pytest.mark.parametrize("name", ["smoothness", "lipschitz"])
def test_oracle_lipschitz_constants_must_be_positive_and_finite(name, bad):
    """0 gave theory steps near 1e150 (1 / L_F with L_F clamped at 1e-150); refused up front."""
    kwargs = {"smoothness": 1.0, "lipschitz": 1.0, name: bad}
    with pytest.raises(InputError, match=f"{name} must be"):
        GroupProblem.from_oracle(
            lambda w, idx: (np.zeros(len(idx)), np.zeros((len(idx), 3))),
            [np.arange(6), np.arange(6, 12)],
            dim=3,
            n_samples=12,
            domain=Ball(1.0),
            **kwargs,
        )


def test_zero_lipschitz_constant_from_data_is_refused_unless_steps_are_given():
    X, y, g = data()
    p = GroupProblem.from_data(np.zeros_like(X), y, g)  # every feature 0: G = L = 0
    for call in (lambda: aleg(p, epochs=1), lambda: aleg(p, epochs=1, gamma=1.0), lambda: one_level_vr(p, epochs=1)):
        with pytest.raises(InputError, match="Lipschitz constant is 0"):
            call()
    K = int(np.ceil(p.n_total / p.m))
    res = aleg(p, epochs=1, steps=np.full(K, 0.1))  # explicit steps need no constant
    assert np.all(np.isfinite(res.w)) and np.isnan(res.info["L_F"])


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda p: aleg(p, epochs=0), r"epochs must be in \[1, inf\], got 0"),
        (lambda p: aleg(p, epochs=2, seed=-1), r"seed must be in \[0, inf\], got -1"),
        (lambda p: aleg(p, epochs=2, gamma=0.0), "gamma must be"),
        (lambda p: aleg(p, epochs=2, alpha=1.0), r"alpha must be in \[0, 1\)"),
        (lambda p: aleg(p, epochs=2, steps=[0.1, 0.2]), "steps must have shape"),
        (lambda p: aleg(p, epochs=2, w0=np.zeros(7)), "w0 must have shape"),
        (lambda p: aleg(p, epochs=2, risk_offsets=[0.0]), "risk_offsets must be"),
        (lambda p: aleg(p, max_ifo=-3), r"max_ifo must be in \[1, inf\], got -3"),
        (lambda p: aleg(p, epochs=2, callback=5), "callback must be callable"),
        (lambda p: aleg("problem"), "problem must be a GroupProblem"),
        (lambda p: alem(p, epochs=2, stage1_epochs=0), "stage1_epochs must be"),
        (lambda p: aleg(p, epochs=2, gamma="fast"), "gamma must be a positive number, 'auto' or 'theory'"),
        (lambda p: aleg(p, epochs=2, gamma=np.inf), "gamma must be finite"),
        (lambda p: aleg(p, epochs=2, estimator="two_level"), "estimator must be one of group, one_level, full"),
        (lambda p: alem(p, epochs=2, stage1_gamma="big"), "stage1_gamma must be a positive number"),
        (lambda p: pilot_gamma(p, grid=()), "grid is empty"),
        (lambda p: pilot_gamma(p, grid=(1.0, -4.0)), "grid entries must be"),
        (lambda p: pilot_gamma(p, epochs=0), r"epochs must be in \[1, inf\], got 0"),
        (lambda p: smd(p, iterations=0), "iterations must be"),
        (lambda p: one_level_vr(p, epochs=1, inner=0), "inner must be"),
        (lambda p: mirror_prox(p, iterations=1, gamma=-1), "gamma must be"),
        (lambda p: online_group_dro(p, iterations=1, output="best"), "output must be"),
        (lambda p: smd_mero(p, max_ifo=None), "max_ifo must be an integer, got None"),
        (lambda p: duality_gap(p, np.zeros(3), np.array([0.5, 0.6, 0.1])), "q must be a probability vector"),
    ],
)
def test_algorithm_arguments_are_validated(call, match):
    X, y, g = data()
    p = GroupProblem.from_data(X, y, g)
    with pytest.raises(InputError, match=match):
        call(p)


def test_synthetic_groups_are_plain_arrays_and_build_the_problem():
    from icml24.group_dro.world import synthetic_groups

    X, y, g = synthetic_groups(3, (5, 8), 4, seed=1)
    assert X.shape == (len(y), 4) and g.shape == y.shape and set(np.unique(y)) <= {-1.0, 1.0}
    assert sorted(set(g.tolist())) == [0, 1, 2] and all(5 <= np.sum(g == i) <= 8 for i in range(3))
    X2, y2, g2 = synthetic_groups(3, (5, 8), 4, seed=np.random.default_rng(1))
    np.testing.assert_array_equal(X, X2)
    p = synthetic_problem(3, (5, 8), 4, seed=1)
    assert p.n_total == len(y) and p.m == 3
    with pytest.raises(InputError, match=r"shift must be in \[0, inf\]"):
        synthetic_groups(2, shift=-1.0)


def test_synthetic_problem_validation():
    with pytest.raises(InputError, match=r"m must be in \[1, .*\], got 0"):
        synthetic_problem(0)
    with pytest.raises(InputError, match="flip must be"):
        synthetic_problem(2, flip=0.7)
    with pytest.raises(InputError, match="n range"):
        synthetic_problem(2, n=(5, 1))
