"""The bounds: exhaustive containment on small spaces, nesting (abt inside sbt inside basic), helpers."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml24.gnn_certify import AttackSpace, SAGEGraphClassifier, SAGENodeClassifier, basic_bounds, topology_bounds
from icml24.gnn_certify.bound_checks import random_fixings
from icml24.gnn_certify.bounds import k_most
from icml24.gnn_certify.reading import network_from_module


def _net(seed: int, task: str, f: int = 3):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if task == "graph":
            model = SAGEGraphClassifier(f, 2, hidden_channels=4, num_layers=3)
        else:
            model = SAGENodeClassifier(f, 3, hidden_channels=4, num_layers=2)
    return network_from_module(model, check=False)


def _space(seed: int, directed: bool, n: int, f: int = 3, box: bool = False) -> AttackSpace:
    rng = np.random.default_rng(seed)
    if directed:
        adj = rng.random((n, n)) < 0.35
    else:
        adj = np.triu(rng.random((n, n)) < 0.45, 1)
        adj = adj | adj.T
    x = rng.integers(0, 2, (n, f)).astype(np.float64)
    lo, hi = (x - rng.random(x.shape) * 0.5, x + rng.random(x.shape) * 0.5) if box else (x, x)
    return AttackSpace(
        adj=adj,
        directed=directed,
        global_budget=int(rng.integers(0, 4)),
        local_budget=rng.integers(0, 3, n),
        x_lb=lo,
        x_ub=hi,
        target_node=0 if directed else None,
    )


def _all_attacks(space: AttackSpace, on=None, off=None):
    flips = []
    present = space.slot_present
    for combo in space.flip_sets():
        f = np.zeros(space.num_slots, dtype=bool)
        f[list(combo)] = True
        after = present ^ f
        if on is not None and not after[on].all():
            continue
        if off is not None and after[off].any():
            continue
        flips.append(f)
    return np.array(flips)


def _contained(net, space, b, flips, rng) -> bool:
    xs = [space.x_lb, space.x_ub] + [space.sample_features(rng) for _ in range(3)]
    adj = space.flipped_adj(flips).astype(np.float64)
    for x in xs:
        trace = net.trace(x, adj)
        for l, pre in enumerate(trace[: len(net.sage)]):
            tol = 1e-9 * (1 + np.abs(b.pre_lo[l]) + np.abs(b.pre_hi[l]))
            if (pre < b.pre_lo[l] - tol).any() or (pre > b.pre_hi[l] + tol).any():
                return False
        logits = trace[-1] if net.task == "graph" else trace[-1][:, space.target_node]
        if (logits < b.logit_lo - 1e-7).any() or (logits > b.logit_hi + 1e-7).any():
            return False
    return True


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10**6), directed=st.booleans(), box=st.booleans())
def test_every_attack_stays_inside_sbt_and_basic(seed, directed, box):
    net = _net(seed, "node" if directed else "graph")
    space = _space(seed, directed, n=5, box=box)
    flips = _all_attacks(space)
    rng = np.random.default_rng(seed)
    assert _contained(net, space, topology_bounds(net, space), flips, rng)
    assert _contained(net, space, basic_bounds(net, space), flips, rng)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10**6), directed=st.booleans(), k=st.integers(1, 6))
def test_abt_bounds_hold_for_attacks_respecting_the_fixings(seed, directed, k):
    net = _net(seed, "node" if directed else "graph")
    space = _space(seed, directed, n=5)
    rng = np.random.default_rng(seed)
    on, off = random_fixings(space, rng, k)
    b = topology_bounds(net, space, on.astype(float), 1.0 - off.astype(float))
    flips = _all_attacks(space, on, off)
    assert not b.infeasible and len(flips) >= 1  # the fixings above are feasible by construction
    assert _contained(net, space, b, flips, rng)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10**6), directed=st.booleans(), k=st.integers(0, 6))
def test_nesting_abt_sbt_basic(seed, directed, k):
    net = _net(seed, "node" if directed else "graph")
    space = _space(seed, directed, n=6)
    rng = np.random.default_rng(seed)
    sbt, basic = topology_bounds(net, space), basic_bounds(net, space)
    on, off = random_fixings(space, rng, k)
    abt = topology_bounds(net, space, on.astype(float), 1.0 - off.astype(float))
    for l in range(len(net.sage)):
        tol = 1e-9 * (1 + np.abs(basic.pre_lo[l]) + np.abs(basic.pre_hi[l]))
        assert (sbt.pre_lo[l] >= basic.pre_lo[l] - tol).all() and (sbt.pre_hi[l] <= basic.pre_hi[l] + tol).all()
        assert (abt.pre_lo[l] >= sbt.pre_lo[l] - tol).all() and (abt.pre_hi[l] <= sbt.pre_hi[l] + tol).all()


def test_infeasible_fixings_are_flagged():
    space = _space(3, False, n=5)
    space = AttackSpace(
        adj=space.adj, directed=False, global_budget=1, local_budget=np.full(5, 1), x_lb=space.x_lb, x_ub=space.x_ub
    )
    flip = ~space.slot_present  # fix two additions: over the global budget of 1
    idx = np.flatnonzero(flip)[:2]
    on = np.zeros(space.num_slots, dtype=bool)
    on[idx] = True
    b = topology_bounds(_net(0, "graph"), space, on.astype(float), np.ones(space.num_slots))
    assert b.infeasible


@settings(max_examples=50, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10**6), lower=st.booleans())
def test_k_most_matches_naive(seed, lower):
    rng = np.random.default_rng(seed)
    n, m, f = 4, int(rng.integers(0, 12)), 3
    vals = rng.normal(size=(m, f))
    groups = rng.integers(0, n, m)
    k = rng.integers(0, 5, n)
    got = k_most(vals, groups, k, n, lower)
    want = np.zeros((n, f))
    for v in range(n):
        for j in range(f):
            xs = vals[groups == v, j]
            xs = np.sort(np.minimum(xs, 0.0)) if lower else -np.sort(-np.maximum(xs, 0.0))
            want[v, j] = xs[: k[v]].sum()
    np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("directed", [False, True])
def test_sbt_is_strictly_tighter_on_average(directed):
    net = _net(1, "node" if directed else "graph")
    space = _space(2, directed, n=7)
    assert topology_bounds(net, space).widths().mean() < basic_bounds(net, space).widths().mean()
