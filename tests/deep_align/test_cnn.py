"""Convolutional networks (the paper's CNN setting): channel permutations keep the function, a permuted copy is
aligned exactly by Weight Matching and by the aligner (untrained and trained), the batched CNN forward pass
equals the modules', and a CNN zoo trains; the CNN experiment runs end to end on a tiny zoo."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from icml24.data import Split
from icml24.deep_align import (
    CNNSpec,
    DeepAlign,
    Zoo,
    interpolation,
    merge,
    permute,
    train_cnn_zoo,
    weight_matching,
    wm_objective,
)
from icml24.deep_align.cnn import cnn_forward, cnn_interpolation_losses, init_cnns
from icml24.deep_align.conversion import architecture, from_sequential, write_into
from icml24.deep_align.permutations import permute_hard, random_perms
from tests.conftest import needs_fashion


def user_cnn(seed=0):
    """A CNN as users write it: bias-free conv, GELU, max pooling, a flattened 4x4 map, a hidden Linear layer."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 6, 3, padding=1, bias=False),
        nn.GELU(),
        nn.MaxPool2d(2),
        nn.Conv2d(6, 5, 3),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(5 * 4 * 4, 7),
        nn.Tanh(),
        nn.Linear(7, 3),
    ).eval()


def _perm(hidden, seed):
    return [p[0] for p in random_perms(hidden, 1, torch.Generator().manual_seed(seed))]


def test_layout_and_channel_permutation_keeps_the_function():
    net = user_cnn()
    assert architecture(net) == ((1, 6, 5, 7, 3), (9, 9, 16, 1))
    wb = from_sequential(net)
    assert wb.convolutional and wb.hidden == (6, 5, 7)
    # the first conv's entry (input channel 0, output channel j) holds that kernel's 9 values
    assert torch.equal(wb.weights[0][0, 0, 2], net[0].weight[2, 0].flatten())
    # the first Linear reads 16 positions per channel, channel-major as nn.Flatten
    assert torch.equal(wb.weights[2][0, 3, 1], net[6].weight[1, 48:64])
    pi = _perm(wb.hidden, 1)
    copy = permute(net, pi)
    assert type(copy) is type(net) and copy[0].bias is None
    x = torch.randn(6, 1, 12, 12)
    assert torch.allclose(copy(x), net(x), atol=1e-5)
    assert torch.equal(copy[0].weight, net[0].weight[pi[0]])  # output channel i is old channel pi[i]
    assert not torch.allclose(copy[0].weight, net[0].weight)


def test_a_permuted_cnn_is_aligned_exactly():
    net = user_cnn()
    pi = _perm((6, 5, 7), 2)
    copy = permute(net, pi)
    truth = [torch.argsort(p) for p in pi]
    wm = weight_matching(net, copy)
    assert all(torch.equal(g, t) for g, t in zip(wm.perms, truth))
    assert wm_objective(net, copy, wm.perms) == pytest.approx(wm_objective(net, net))
    aligner = DeepAlign(net, hidden=8, output_features=8)  # untrained: exact by equivariance
    assert aligner.features == (9, 9, 16, 1)
    got = aligner.align(net, copy)
    assert all(torch.equal(g, t) for g, t in zip(got, truth))
    back = permute(copy, truth)
    assert all(torch.equal(p, q) for p, q in zip(back.parameters(), net.parameters()))
    x, y = torch.randn(10, 1, 12, 12), torch.randint(3, (10,))
    out = interpolation(net, copy, x, y, perms=got, n_alphas=3)
    assert abs(out["barrier"]) < 1e-4  # the aligned copy is the same network: a flat path
    m = merge(net, copy, 0.5, got)
    assert torch.allclose(m(x), net(x), atol=1e-5)


def test_the_trained_aligner_is_exact_and_equivariant():
    spec = CNNSpec(channels=(1, 4, 6))
    nets = init_cnns(spec, range(8))
    aligner = DeepAlign(spec.widths, features=spec.features, hidden=8, n_hidden=1, output_features=8)
    imgs, labels = torch.rand(16, 1, 8, 8), torch.randint(10, (16,))
    hist = aligner.fit(nets[:6], imgs, labels, val=nets[6:], steps=6, batch_size=4, lr=1e-2, eval_every=3, recon="l2")
    assert hist.best_step in (3, 6) and all(torch.isfinite(torch.tensor(s["loss"])) for s in hist.steps)
    pi = random_perms(nets.hidden, nets.size, torch.Generator().manual_seed(3))
    got = aligner.align_batch(nets, permute_hard(nets, pi))
    assert all(torch.equal(g, torch.argsort(p, dim=1)) for g, p in zip(got, pi))


def test_batched_forward_equals_the_modules():
    spec = CNNSpec(channels=(1, 3, 4, 5))
    nets = init_cnns(spec, [0, 1, 2])
    x = torch.rand(7, 1, 16, 16)
    logits = cnn_forward(nets, x, spec)
    for i in range(3):
        m = write_into(spec.module(), nets, i)
        assert torch.allclose(logits[i], m(x), atol=1e-5)
    per_net = torch.rand(3, 7, 1, 16, 16)  # every network its own images
    assert torch.allclose(
        cnn_forward(nets, per_net, spec)[1], write_into(spec.module(), nets, 1)(per_net[1]), atol=1e-5
    )
    alphas, losses = cnn_interpolation_losses(nets, nets, x, torch.randint(10, (7,)), spec, n_alphas=4)
    assert losses.shape == (3, 4) and torch.allclose(losses, losses[:, :1].expand(-1, 4), atol=1e-5)


def test_a_cnn_zoo_trains():
    g = torch.Generator().manual_seed(0)
    y = torch.randint(3, (120,), generator=g)
    x = torch.rand(120, 1, 8, 8, generator=g) * 0.2
    x[:, 0, :, :4] += (y == 1).float()[:, None, None]  # a learnable pattern per class
    x[:, 0, :4, :] += (y == 2).float()[:, None, None]
    data = Split(x[:80], y[:80], x[80:], y[80:])
    spec = CNNSpec(channels=(1, 4, 4), classes=3)
    zoo = train_cnn_zoo(6, spec=spec, val=1, test=2, steps=60, lr=3e-2, batch_size=16, data=data)
    assert isinstance(zoo, Zoo) and zoo.nets.convolutional and len(zoo) == 6
    assert float(zoo.test_acc.mean()) > 0.6  # chance is 1/3
    net = zoo.network(4)
    assert isinstance(net[0], nn.Conv2d)
    with torch.no_grad():
        ce = F.cross_entropy(net(data.x_test), data.y_test)
    assert float(ce) == pytest.approx(float(zoo.test_loss[4]), rel=1e-4)
    same = Zoo.from_networks([zoo.network(i) for i in range(6)], data, val=1, test=1)
    assert torch.allclose(same.nets.weights[0], zoo.nets.weights[0]) and same.template is not None


@needs_fashion
@pytest.mark.slow  # reads Fashion-MNIST from the data root
def test_run_cnn_end_to_end():
    from icml24.claims import Scale
    from icml24.deep_align.experiments import run_cnn

    m = run_cnn(
        Scale.SMOKE,
        0,
        n_nets=6,
        n_val=2,
        n_test=2,
        zoo_steps=3,
        eval_images=40,
        train=dict(steps=2, batch_size=2, eval_every=2),
    )
    assert m["pairs"] == 1 and m["da_perm_acc"] == 1.0 and m["untrained_perm_acc"] == 1.0
    for k in ("none", "untrained", "da", "wm", "dawm"):
        assert torch.isfinite(torch.tensor(m[f"{k}_barrier"]))
