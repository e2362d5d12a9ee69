"""Bad input is refused at the public boundary with a one-line InputError naming the argument."""

import pytest
import torch
from torch import nn

from icml24.data import digits
from icml24.deep_align import (
    DeepAlign,
    Zoo,
    activation_matching,
    interpolation,
    merge,
    permute,
    train_zoo,
    weight_matching,
)
from icml24.deep_align.conversion import from_sequential
from icml24.deep_align.training import TrainConfig
from icml24.errors import InputError


def mlp(*widths):
    layers = []
    for k in range(len(widths) - 1):
        layers.append(nn.Linear(widths[k], widths[k + 1]))
        if k < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


@pytest.fixture
def aligner():
    return DeepAlign((6, 5, 4, 3), hidden=8, output_features=8, input_dim_downsample=4)


def test_architectures_that_differ(aligner):
    torch.manual_seed(0)
    with pytest.raises(InputError, match=r"^b has widths \(6, 5, 5, 3\)"):
        aligner.align(mlp(6, 5, 4, 3), mlp(6, 5, 5, 3))
    with pytest.raises(InputError, match="a has widths"):
        merge(mlp(6, 5, 3), mlp(6, 4, 3))
    with pytest.raises(InputError, match="a has widths"):
        weight_matching(from_sequential(mlp(6, 5, 3)), from_sequential(mlp(6, 4, 3)))


@pytest.mark.parametrize(
    "net, match",
    [
        (nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Linear(5, 3)), r"net.1 is BatchNorm1d, expected Linear"),
        (nn.Sequential(nn.Conv1d(6, 5, 1), nn.ReLU(), nn.Linear(5, 3)), r"net.0 is Conv1d, expected Linear"),
        (nn.Sequential(nn.Linear(6, 3)), "at least two Linear layers"),
        (nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(4, 3)), "takes 4 inputs"),
        (nn.Sequential(nn.Linear(6, 5), nn.Flatten(), nn.Linear(5, 3)), "Flatten after a Linear"),
        (nn.Linear(6, 3), "at least two Linear layers"),
        ("mlp", "nn.Module MLP"),
    ],
)
def test_non_mlp_modules(net, match):
    with pytest.raises(InputError, match=match):
        permute(net, [torch.arange(5)])


def test_a_zoo_with_mismatched_shapes():
    split = digits(seed=0)
    nets = [mlp(64, 8, 8, 10), mlp(64, 8, 8, 10), mlp(64, 8, 9, 10)]
    with pytest.raises(InputError, match=r"nets\[2\] has widths \(64, 8, 9, 10\), but nets\[0\] has"):
        Zoo.from_networks(nets, split)
    al = DeepAlign((64, 8, 8, 10), hidden=8, output_features=8)
    with pytest.raises(InputError, match="nets has widths"):
        al.fit([mlp(64, 8, 7, 10), mlp(64, 8, 7, 10)], split.x_train, split.y_train, steps=1)
    with pytest.raises(InputError, match="do not fit the data"):
        train_zoo(3, widths=(10, 4, 4, 10), val=0, test=0)


def test_bad_permutations_alpha_and_options(aligner):
    net = mlp(6, 5, 4, 3)
    with pytest.raises(InputError, match=r"perms\[0\] is not a permutation"):
        permute(net, [torch.tensor([0, 0, 1, 2, 3]), torch.arange(4)])
    with pytest.raises(InputError, match="list of 2 index tensors"):
        permute(net, [torch.arange(5)])
    with pytest.raises(InputError, match=r"perms\[1\] has shape"):
        permute(net, [torch.arange(5), torch.arange(5)])
    with pytest.raises(InputError, match="alpha"):
        merge(net, net, float("nan"))
    with pytest.raises(InputError, match="unknown encoder options"):
        DeepAlign((6, 5, 3), hiden=3)
    with pytest.raises(InputError, match="set_layer"):
        DeepAlign((6, 5, 3), set_layer="transformer")
    with pytest.raises(InputError, match="widths"):
        DeepAlign((6, 3))
    with pytest.raises(InputError, match="one network"):
        aligner.align([net, net], net)
    with pytest.raises(InputError, match="unknown training options"):
        aligner.fit([net, net], torch.rand(4, 6), torch.zeros(4, dtype=torch.long), stepz=3)
    with pytest.raises(InputError, match=r"y must have shape \(4\)"):
        aligner.fit([net, net], torch.rand(4, 6), torch.zeros(3, dtype=torch.long))
    with pytest.raises(InputError, match="steps"):
        TrainConfig(steps=0)
    with pytest.raises(InputError, match="x must be"):
        activation_matching(from_sequential(net), from_sequential(net), torch.rand(4, 5))
    with pytest.raises(InputError, match="init must be a list of 2"):
        weight_matching(from_sequential(net), from_sequential(net), init=[torch.arange(5)])
    with pytest.raises(InputError, match="n_alphas"):
        interpolation(net, net, torch.rand(4, 6), torch.zeros(4, dtype=torch.long), n_alphas=1)


def test_save_and_load_round_trip(tmp_path, aligner):
    torch.manual_seed(0)
    a, b = mlp(6, 5, 4, 3), mlp(6, 5, 4, 3)
    aligner.save(tmp_path / "da.pt")
    back = DeepAlign.load(tmp_path / "da.pt")
    assert back.widths == aligner.widths and back.config == aligner.config
    assert all(torch.equal(x, y) for x, y in zip(aligner.scores(a, b), back.scores(a, b)))
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match="cannot load"):
        DeepAlign.load(tmp_path / "junk.pt")
