"""Bad input raises InputError naming what is wrong."""

import json

import numpy as np
import pytest
import torch
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv, SAGEConv, global_add_pool

from icml24.errors import InputError
from icml24.gnn_certify import SAGEGraphClassifier, certify, load_model_json, network_from_module, read_instance


def _data(n=5, f=3, seed=0):
    rng = np.random.default_rng(seed)
    adj = np.triu(rng.random((n, n)) < 0.5, 1)
    adj = adj | adj.T
    return Data(
        x=torch.tensor(rng.integers(0, 2, (n, f)).astype(np.float32)),
        edge_index=torch.tensor(np.stack(np.nonzero(adj)), dtype=torch.long),
    )


def _model(f=3):
    torch.manual_seed(0)
    return SAGEGraphClassifier(f, 2, hidden_channels=4, num_layers=2).eval()


class GCNModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = GCNConv(3, 4)
        self.lin = nn.Linear(4, 2)

    def forward(self, x, edge_index, batch=None):
        return self.lin(global_add_pool(self.conv(x, edge_index).relu(), batch))


class MeanSage(nn.Module):
    def __init__(self, aggr="mean"):
        super().__init__()
        self.conv = SAGEConv(3, 4, aggr=aggr)
        self.lin = nn.Linear(4, 2)

    def forward(self, x, edge_index, batch=None):
        return self.lin(global_add_pool(self.conv(x, edge_index), batch))


class WithNorm(MeanSage):
    def __init__(self):
        super().__init__("sum")
        self.norm = nn.BatchNorm1d(4)


class TanhSage(MeanSage):
    def __init__(self):
        super().__init__("sum")

    def forward(self, x, edge_index, batch=None):  # an activation the reading cannot see
        return self.lin(global_add_pool(torch.tanh(self.conv(x, edge_index)), batch))


@pytest.mark.parametrize(
    "model, what",
    [(GCNModel(), "GCNConv"), (MeanSage(), "aggr='mean'"), (WithNorm(), "BatchNorm1d"), (TanhSage(), "does not match")],
)
def test_unsupported_models(model, what):
    with pytest.raises(InputError, match=what.replace("(", r"\(").replace("'", "'")):
        certify(model, _data(), budget=0.1)


def test_custom_module_with_sum_sage_is_accepted():
    torch.manual_seed(1)
    model = MeanSage("sum").eval()
    net = network_from_module(model)
    assert net.task == "graph" and [s.relu for s in net.sage] == [False]


@pytest.mark.parametrize(
    "kwargs, what",
    [
        ({"budget": -0.1}, "budget"),
        ({"global_budget": -1}, "global_budget"),
        ({"strength": -1}, "strength"),
        ({"bounds": "tight"}, "bounds"),
        ({"time_limit": 0}, "time_limit"),
        ({"threads": 0}, "threads"),
        ({"target": 7}, "target"),
        ({"local_budget": [1, 2]}, None),
        ({"settings": "turbo"}, "settings"),
        ({"node": 1}, "node classification"),
    ],
)
def test_bad_arguments(kwargs, what):
    args = {"budget": 0.1, **kwargs}
    with pytest.raises((InputError, ValueError)) as err:
        certify(_model(), _data(), **args)
    if what:
        assert what in str(err.value)


def test_graph_larger_than_the_model_allows():
    with pytest.raises(InputError, match="input size is 3"):
        certify(_model(3), _data(f=4), budget=0.1)
    with pytest.raises(InputError, match="max_nodes"):
        certify(_model(), _data(n=9), budget=0.1, max_nodes=8)


def test_bad_graphs():
    d = _data()
    directed = Data(x=d.x, edge_index=d.edge_index[:, ::2])
    with pytest.raises(InputError, match="undirected"):
        certify(_model(), directed, budget=0.1)
    loops = Data(x=d.x, edge_index=torch.cat([d.edge_index, torch.tensor([[0], [0]])], dim=1))
    with pytest.raises(InputError, match="self-loops"):
        certify(_model(), loops, budget=0.1)
    with pytest.raises(InputError, match="edge_index"):
        certify(_model(), Data(x=d.x, edge_index=torch.tensor([[0, 9], [9, 0]])), budget=0.1)
    with pytest.raises(InputError, match="finite"):
        certify(_model(), Data(x=d.x * float("nan"), edge_index=d.edge_index), budget=0.1)


@pytest.mark.parametrize(
    "text, what",
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"L": 1}), "expected a list"),
        (json.dumps([{"L": 2}, {"layer": "sage"}]), "does not match"),
        (json.dumps([{"L": 1}, {"layer": "gcn"}]), "unsupported layer type 'gcn'"),
        (
            json.dumps(
                [
                    {"L": 1},
                    {
                        "layer": "sage",
                        "in_channels": 2,
                        "out_channels": 2,
                        "w1": [[1, 2]],
                        "w2": [[1, 2]],
                        "b": [0, 0],
                        "activation": True,
                    },
                ]
            ),
            "w1 must be",
        ),
        (
            json.dumps(
                [
                    {"L": 2},
                    {
                        "layer": "sage",
                        "in_channels": 1,
                        "out_channels": 1,
                        "w1": [[1]],
                        "w2": [[1]],
                        "b": [0],
                        "activation": True,
                    },
                    {
                        "layer": "dense",
                        "in_channels": 1,
                        "out_channels": 2,
                        "w": [[1], [2]],
                        "b": [0, 0],
                        "activation": False,
                    },
                ]
            ),
            "add_pool before",
        ),
    ],
)
def test_malformed_model_json(tmp_path, text, what):
    p = tmp_path / "m.json"
    p.write_text(text)
    with pytest.raises(InputError, match=what):
        load_model_json(p)


@pytest.mark.parametrize(
    "text, what",
    [
        ("", "first line"),
        ("3 2 7 2\n", "first line"),
        ("3 2 7 2 5\n0 1\n1 0\n\n\n\n", "inconsistent header"),
        ("3 2 7 2 0\n0 1\n1\n\n\n\n", "edge sources and targets"),
        ("3 2 7 2 0\n0 5\n5 0\n\n\n\n", "endpoints"),
        ("3 2 7 2 0\n0 1\n1 0\n0\n9\n1\n", "feature index"),
        ("3 2 7 2 0\n0 x\n1 0\n\n\n\n", "integers"),
        ("3 2 7 2 0\n0 1\n1 0\n0\n", "feature lines"),
    ],
)
def test_malformed_instance(tmp_path, text, what):
    p = tmp_path / "g.gcinfo"
    p.write_text(text)
    with pytest.raises(InputError, match=what):
        read_instance(p)


def test_missing_files(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_model_json(tmp_path / "nope.json")
    with pytest.raises(InputError, match="does not exist"):
        read_instance(tmp_path / "nope.gcinfo")
