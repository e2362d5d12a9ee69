"""Networks as users write them: Flatten first, any elementwise activation, bias-free layers, modules of their
own; the baselines take the same modules as the aligner; non-finite weights and mixed dtypes are refused."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from icml24.deep_align import DeepAlign, interpolation, merge, permute, weight_matching, wm_objective
from icml24.deep_align.conversion import from_sequential, from_state_dict
from icml24.deep_align.permutations import random_perms
from icml24.errors import InputError


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.out = nn.Linear(16, 7), nn.Linear(7, 6), nn.Linear(6, 3)

    def forward(self, x):
        return self.out(F.silu(self.fc2(F.silu(self.fc1(x.flatten(1))))))


def gelu_flatten():
    return nn.Sequential(
        nn.Flatten(), nn.Linear(16, 7), nn.GELU(), nn.Dropout(0.1), nn.Linear(7, 6), nn.Tanh(), nn.Linear(6, 3)
    )


def bias_free():
    return nn.Sequential(
        nn.Linear(16, 7, bias=False), nn.LeakyReLU(0.1), nn.Linear(7, 6, bias=False), nn.SiLU(), nn.Linear(6, 3)
    )


@pytest.mark.parametrize("make", [gelu_flatten, bias_free, TwoLayer], ids=["flatten-gelu", "bias-free", "module"])
def test_exact_alignment_of_a_permuted_copy(make):
    torch.manual_seed(0)
    net = make().eval()
    pi = [p[0] for p in random_perms((7, 6), 1, torch.Generator().manual_seed(1))]
    copy = permute(net, pi)
    assert type(copy) is type(net) and copy is not net
    x = torch.randn(5, 1, 4, 4) if make is not bias_free else torch.randn(5, 16)
    assert torch.allclose(copy(x), net(x), atol=1e-5)  # the same function, whatever the activation
    if make is bias_free:
        assert all(m.bias is None for m in list(copy)[:3:2])
    truth = [torch.argsort(p) for p in pi]  # permute(copy, truth) == net
    aligner = DeepAlign(net, hidden=8, output_features=8, input_dim_downsample=4)
    got = aligner.align(net, copy)
    assert all(torch.equal(g, t) for g, t in zip(got, truth))
    wm = weight_matching(net, copy)  # the baselines take the same modules
    assert all(torch.equal(g, t) for g, t in zip(wm.perms, truth))
    assert wm_objective(net, copy, wm.perms) == pytest.approx(wm_objective(net, net))
    back = permute(copy, truth)
    assert all(torch.equal(p, q) for p, q in zip(back.parameters(), net.parameters()))


def test_merge_and_interpolation_use_the_users_module():
    torch.manual_seed(0)
    a, b = gelu_flatten().eval(), gelu_flatten().eval()
    m = merge(a, b, 0.5)
    assert isinstance(m[2], nn.GELU) and isinstance(m[0], nn.Flatten)
    x, y = torch.randn(12, 1, 4, 4), torch.randint(3, (12,))
    out = interpolation(a, b, x, y, n_alphas=3)
    mid = F.cross_entropy(m(x), y).detach()
    assert float(out["losses"][1]) == pytest.approx(float(mid), rel=1e-5)
    with torch.no_grad():
        end = float(F.cross_entropy(a(x), y))
    assert float(out["losses"][2]) == pytest.approx(end, rel=1e-5)


def test_non_finite_weights_and_mixed_dtypes_are_refused():
    torch.manual_seed(0)
    a, b = gelu_flatten(), gelu_flatten()
    with torch.no_grad():
        b[1].weight[0, 0] = float("nan")
    with pytest.raises(InputError, match="^b has non-finite"):
        weight_matching(a, b)
    with pytest.raises(InputError, match="^b has non-finite"):
        merge(a, b)
    c = gelu_flatten().double()
    with pytest.raises(InputError, match="^b has dtype torch.float64 but a has torch.float32"):
        weight_matching(a, c)
    with pytest.raises(InputError, match="^b has dtype torch.float64"):
        merge(a, c)
    with pytest.raises(InputError, match="^b has dtype torch.float64"):
        DeepAlign(a, hidden=4, output_features=4).align(a, c)
    assert from_sequential(c).weights[0].dtype == torch.float32


def test_a_state_dict_is_a_network():
    torch.manual_seed(0)
    net = bias_free()
    copy = permute(net, [torch.arange(7).flip(0), torch.arange(6)])
    aligner = DeepAlign(net, hidden=8, output_features=8, input_dim_downsample=4)
    got = aligner.align(net.state_dict(), copy.state_dict())
    assert torch.equal(got[0], torch.arange(7).flip(0)) and torch.equal(got[1], torch.arange(6))
    wb = from_state_dict(net.state_dict())
    assert torch.equal(wb.weights[0][0], net[0].weight.T) and not wb.biases[0].any()
