import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from icml24.deep_align import merge, permute
from icml24.deep_align.conversion import from_sequential, to_sequential
from icml24.deep_align.evaluation import barrier_and_auc, forward, lerp
from icml24.deep_align.permutations import compose, invert, perm_matrices, permute_hard, permute_soft, random_perms
from icml24.deep_align.weights import WeightBatch
from icml24.threads import single_thread


def random_batch(widths, B, seed):
    g = torch.Generator().manual_seed(seed)
    return WeightBatch(
        tuple(torch.randn(B, widths[k], widths[k + 1], generator=g) for k in range(len(widths) - 1)),
        tuple(torch.randn(B, widths[k + 1], generator=g) for k in range(len(widths) - 1)),
    )


widths_st = st.lists(st.integers(1, 6), min_size=3, max_size=5).map(tuple)


@settings(max_examples=25, deadline=None)
@given(widths=widths_st, seed=st.integers(0, 10_000))
def test_permuting_hidden_neurons_keeps_the_function(widths, seed):
    with single_thread():
        wb = random_batch(widths, 2, seed)
        perms = random_perms(wb.hidden, 2, torch.Generator().manual_seed(seed))
        x = torch.randn(5, widths[0], generator=torch.Generator().manual_seed(seed + 1))
        assert torch.allclose(forward(wb, x), forward(permute_hard(wb, perms), x), atol=1e-5)


@settings(max_examples=25, deadline=None)
@given(widths=widths_st, seed=st.integers(0, 10_000))
def test_soft_permutation_of_one_hot_matrices_equals_hard(widths, seed):
    wb = random_batch(widths, 2, seed)
    perms = random_perms(wb.hidden, 2, torch.Generator().manual_seed(seed))
    hard, soft = permute_hard(wb, perms), permute_soft(wb, perm_matrices(perms))
    for x, y in zip(hard.weights + hard.biases, soft.weights + soft.biases):
        assert torch.allclose(x, y, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(widths=widths_st, seed=st.integers(0, 10_000))
def test_compose_and_invert(widths, seed):
    wb = random_batch(widths, 3, seed)
    g = torch.Generator().manual_seed(seed)
    p, q = random_perms(wb.hidden, 3, g), random_perms(wb.hidden, 3, g)
    two = permute_hard(permute_hard(wb, q), p)
    one = permute_hard(wb, compose(p, q))
    back = permute_hard(permute_hard(wb, p), invert(p))
    for x, y in zip(two.weights, one.weights):
        assert torch.equal(x, y)
    assert all(torch.equal(x, y) for x, y in zip(back.weights + back.biases, wb.weights + wb.biases))


def test_sequential_round_trip_and_layout():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    wb = from_sequential(net)
    assert wb.widths == (4, 3, 2) and wb.weights[0].shape == (1, 4, 3)
    x = torch.randn(6, 4)
    assert torch.allclose(forward(wb, x)[0], net(x), atol=1e-6)
    assert torch.allclose(to_sequential(wb)(x), net(x), atol=1e-6)


def test_permute_and_merge_on_sequential():
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    b = nn.Sequential(nn.Linear(5, 4), nn.ReLU(), nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    perms = [torch.tensor([2, 0, 3, 1]), torch.tensor([1, 2, 0])]
    x = torch.randn(7, 5)
    assert torch.allclose(permute(b, perms)(x), b(x), atol=1e-6)
    m = merge(a, b, 0.3, perms)
    pb = permute(b, perms)
    for mm, ma, mb in zip(m, a, pb):
        if isinstance(mm, nn.Linear):
            assert torch.allclose(mm.weight, 0.3 * ma.weight + 0.7 * mb.weight)
    assert torch.allclose(merge(a, b, 1.0)(x), a(x), atol=1e-6)


def test_barrier_is_zero_on_a_linear_path_and_positive_on_a_bump():
    alphas = torch.linspace(0, 1, 5)
    flat = (0.2 + 0.3 * alphas).unsqueeze(0)  # linear between L(b)=0.2 and L(a)=0.5
    bar, auc = barrier_and_auc(alphas, flat)
    assert abs(float(bar)) < 1e-6 and abs(float(auc)) < 1e-6
    bump = flat + torch.tensor([[0.0, 0.5, 1.0, 0.5, 0.0]])
    bar, auc = barrier_and_auc(alphas, bump)
    assert abs(float(bar) - 1.0) < 1e-6 and abs(float(auc) - 0.5) < 1e-6


def test_lerp_end_points():
    a, b = random_batch((3, 2, 2), 2, 0), random_batch((3, 2, 2), 2, 1)
    assert torch.equal(lerp(a, b, 1.0).weights[0], a.weights[0])
    assert torch.equal(lerp(a, b, torch.zeros(2)).weights[1], b.weights[1])


def test_train_zoo_holds_the_world_networks_in_fan_in_layout():
    """``train_zoo`` is ``icml24.deep_align.world.mlp_zoo`` seen as a WeightBatch: the same networks, transposed."""
    from icml24.deep_align import train_zoo
    from icml24.deep_align.world import mlp_zoo

    with single_thread():
        z = mlp_zoo(4, widths=(64, 6, 5, 10), val=1, test=1, steps=3, seed=2)
        zoo = train_zoo(4, widths=(64, 6, 5, 10), val=1, test=1, steps=3, seed=2)
    assert zoo.widths == z.widths == (64, 6, 5, 10) and len(zoo) == len(z) == 4
    assert all(torch.equal(w.transpose(1, 2), v) for w, v in zip(zoo.nets.weights, z.weights))
    assert all(torch.equal(zoo.splits[k], z.splits[k]) for k in ("train", "val", "test"))
    x = z.data.x_test[:7]
    assert torch.allclose(zoo.network(3)(x), z.network(3)(x)) and torch.allclose(
        forward(zoo.nets[3], x)[0], z.network(3)(x), atol=1e-5
    )
