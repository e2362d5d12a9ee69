import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from icml24.deep_align import activation_matching, sinkhorn_rebasin, train_zoo, weight_matching, wm_objective
from icml24.deep_align.evaluation import barrier_and_auc, interpolation_losses
from icml24.deep_align.permutations import invert, permute_hard, random_perms
from icml24.deep_align.training import permutation_accuracy
from icml24.deep_align.weights import WeightBatch
from icml24.threads import single_thread


def random_net(widths, seed):
    g = torch.Generator().manual_seed(seed)
    return WeightBatch(
        tuple(torch.randn(1, widths[k], widths[k + 1], generator=g) for k in range(len(widths) - 1)),
        tuple(torch.randn(1, widths[k + 1], generator=g) for k in range(len(widths) - 1)),
    )


@settings(max_examples=20, deadline=None)
@given(widths=st.lists(st.integers(2, 8), min_size=3, max_size=5).map(tuple), seed=st.integers(0, 10_000))
def test_weight_matching_ascends_its_objective_to_a_fixed_point(widths, seed):
    """Coordinate ascent: never below the start, and restarting from its answer stops after one sweep. (With
    two or more hidden layers it can stop in a local optimum, even on an exact copy of tiny random nets.)"""
    a, b = random_net(widths, seed), random_net(widths, seed + 1)
    r2 = weight_matching(a, b, seed=seed)
    assert r2.objective >= wm_objective(a, b) - 1e-9  # coordinate ascent never ends below its start
    assert abs(r2.objective - wm_objective(a, b, r2.perms)) < 1e-8
    again = weight_matching(a, b, init=r2.perms, seed=seed + 1)  # a fixed point: one sweep without progress
    assert again.sweeps == 1 and all(torch.equal(x, y) for x, y in zip(again.perms, r2.perms))


@settings(max_examples=20, deadline=None)
@given(widths=st.lists(st.integers(2, 8), min_size=3, max_size=3).map(tuple), seed=st.integers(0, 10_000))
def test_weight_matching_recovers_exact_copies_with_one_hidden_layer(widths, seed):
    a = random_net(widths, seed)
    pi = random_perms(a.hidden, 1, torch.Generator().manual_seed(seed))
    r = weight_matching(a, permute_hard(a, pi), seed=seed)
    assert permutation_accuracy([p[None] for p in r.perms], invert(pi)) == 1.0
    assert abs(r.objective - wm_objective(a, a)) < 1e-8


def test_one_hidden_layer_is_a_single_assignment():
    """With one hidden layer WM is one LAP (git-re-basin's own test): it matches the brute-force optimum."""
    a, b = random_net((5, 6, 3), 0), random_net((5, 6, 3), 1)
    r = weight_matching(a, b)
    cost = (
        (
            a.weights[0][0].T @ b.weights[0][0]
            + torch.outer(a.biases[0][0], b.biases[0][0])
            + a.weights[1][0] @ b.weights[1][0].T
        )
        .double()
        .numpy()
    )
    _, cols = linear_sum_assignment(cost, maximize=True)
    assert np.array_equal(r.perms[0].numpy(), cols) and r.sweeps <= 2


def test_activation_matching_recovers_exact_copies():
    a = random_net((6, 5, 4, 3), 3)
    pi = random_perms(a.hidden, 1, torch.Generator().manual_seed(0))
    x = torch.randn(64, 6, generator=torch.Generator().manual_seed(1))
    r = activation_matching(a, permute_hard(a, pi), x)
    assert permutation_accuracy([p[None] for p in r.perms], invert(pi)) == 1.0


def test_sinkhorn_rebasin_lowers_the_midpoint_loss_on_trained_nets():
    with single_thread():
        zoo = train_zoo(2, widths=(64, 12, 12, 10), val=0, test=0, steps=60, seed=0)
        a, b = zoo.nets[0], zoo.nets[1]
        x, y = zoo.data.x_train, zoo.data.y_train
        r = sinkhorn_rebasin(a, b, x, y, steps=40, seed=0)
        before = barrier_and_auc(*interpolation_losses(a, b, x, y, 5))[0]
        after = barrier_and_auc(*interpolation_losses(a, permute_hard(b, [p[None] for p in r.perms]), x, y, 5))[0]
    assert float(after) < float(before)
    assert all(sorted(p.tolist()) == list(range(12)) for p in r.perms)
