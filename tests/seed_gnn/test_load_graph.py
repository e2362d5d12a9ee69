import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.datasets import FakeDataset

from icml24.errors import DataUnavailable, InputError
from icml24.seed_gnn import load_graph, per_class_split


def test_per_class_split_is_the_official_rule():
    y = torch.arange(7).repeat_interleave(60)
    data = per_class_split(Data(y=y, num_nodes=y.numel()))
    for c in range(7):
        assert int(data.train_mask[y == c].sum()) == 20 and int(data.val_mask[y == c].sum()) == 30
    assert not bool((data.train_mask & data.val_mask).any())
    assert torch.equal(data.test_mask, ~(data.train_mask | data.val_mask))
    again = per_class_split(Data(y=y, num_nodes=y.numel()))
    assert torch.equal(again.train_mask, data.train_mask)  # seeded (12345 by default)


def test_user_data_and_dataset():
    dataset = FakeDataset(num_graphs=1, avg_num_nodes=200, num_channels=8, num_classes=3, task="node")
    data = dataset[0]
    data.y = data.y.long()
    keys = set(data.keys())
    out = load_graph(data, num_val=40, num_test=50)
    assert out.name == "user" and int(out.val_mask.sum()) == 40 and int(out.test_mask.sum()) == 50
    assert set(data.keys()) == keys  # the user's Data got no masks
    per = load_graph(data, split="per_class")
    assert int(per.train_mask.sum()) == 20 * len(torch.unique(data.y))
    out.note = 1
    kept = load_graph(out)  # a graph with its three masks keeps them
    assert torch.equal(kept.train_mask, out.train_mask)
    assert load_graph(dataset, num_val=10, num_test=10).num_nodes == data.num_nodes
    with pytest.raises(InputError, match="split"):
        load_graph(data, split="nope")


@pytest.mark.parametrize(
    "name, named",
    [("citeseer", "ind.citeseer.x"), ("amazonphoto", "amazon_electronics_photo.npz"), ("ogbn-arxiv", "ogbn-arxiv")],
)
def test_unavailable_graphs_are_named(name, named, monkeypatch, tmp_path):
    monkeypatch.setenv("ICML24_DATA", str(tmp_path))
    with pytest.raises(DataUnavailable, match=named):
        load_graph(name)


def test_unknown_name():
    with pytest.raises(InputError, match="coauthorcs"):
        load_graph("nope")
