"""PyG's own model classes: GraphSAGE(aggr="sum") and GIN (sum aggregation, then an MLP), bare (node
classification) or under global_add_pool and a Linear head (graph classification), and a user's module built from
GINConv: verdicts checked against brute force on small graphs; mean / max / attention / normalised layers refused
with a one-line message naming the layer and why."""

import numpy as np
import pytest
import torch
from torch import nn
from torch_geometric.data import Data
from torch_geometric.nn import GATConv, GINConv, global_add_pool
from torch_geometric.nn.models import GIN, GraphSAGE

from icml24.errors import InputError
from icml24.gnn_certify import build_space, certify, network_from_module, run_model
from tests.gnn_certify.test_soundness import _check_report, _shrink_margin


class Pooled(nn.Module):
    """A PyG model class under global add-pool and a Linear head."""

    def __init__(self, gnn, hidden, classes=2):
        super().__init__()
        self.gnn, self.lin = gnn, nn.Linear(hidden, classes)

    def forward(self, x, edge_index, batch=None):
        return self.lin(global_add_pool(self.gnn(x, edge_index), batch))


class OwnGIN(nn.Module):
    """A user's module: GINConv layers with nn.Sequential MLPs (learnable eps), add-pool, Linear."""

    def __init__(self):
        super().__init__()
        mlp = lambda a, b: nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Linear(b, b))  # noqa: E731
        self.conv1 = GINConv(mlp(3, 4), train_eps=True)
        self.act = nn.ReLU()  # registered where it acts: the reading follows registration order
        self.conv2 = GINConv(mlp(4, 4), train_eps=True)
        self.lin = nn.Linear(4, 3)
        with torch.no_grad():
            self.conv1.eps.fill_(0.3)
            self.conv2.eps.fill_(-0.2)

    def forward(self, x, edge_index, batch=None):
        h = self.conv2(self.act(self.conv1(x, edge_index)), edge_index)
        return self.lin(global_add_pool(h, batch))


def _data(seed, n=6, f=3):
    rng = np.random.default_rng(seed)
    adj = np.triu(rng.random((n, n)) < 0.45, 1)
    adj = adj | adj.T
    x = rng.integers(0, 2, (n, f)).astype(np.float32)
    return Data(x=torch.tensor(x), edge_index=torch.tensor(np.stack(np.nonzero(adj)), dtype=torch.long)), rng


MODELS = {
    "GraphSAGE-graph": lambda: Pooled(GraphSAGE(3, 4, num_layers=2, aggr="sum"), 4),
    "GIN-graph": lambda: Pooled(GIN(3, 4, num_layers=2), 4),
    "own-GIN-graph": OwnGIN,
    "GraphSAGE-node": lambda: GraphSAGE(3, 4, num_layers=2, out_channels=3, aggr="sum"),
    "GIN-node": lambda: GIN(3, 4, num_layers=2, out_channels=3),
}


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("seed", [0, 1])
def test_pyg_model_classes_certify_as_brute_force_says(name, seed):
    torch.manual_seed(seed)
    model = MODELS[name]()
    model.train()  # the user's mode, kept
    data, rng = _data(seed)
    net = network_from_module(model)
    node = None if net.task == "graph" else int(np.argmax(np.bincount(data.edge_index[1].numpy(), minlength=6)))
    head = model.lin.bias if net.task == "graph" else None
    if head is not None:
        _shrink_margin(head, run_model(model, data.x, data.edge_index, "graph"), rng)
        net = network_from_module(model)
    kw = {"global_budget": 2, "strength": 2} if node is None else {"global_budget": 2, "strength": 2, "node": node}
    report = certify(model, data, time_limit=30, **kw)
    assert all(m.training for m in model.modules())
    space, _, _, _ = build_space(net, data, **kw)
    assert _check_report(model.eval(), net, data, report, space, node=node) == len(report.certificates)


@pytest.mark.parametrize(
    "model, layer, why",
    [
        (Pooled(GraphSAGE(3, 4, num_layers=2), 4), "gnn.convs.0", "mean divides by the degree"),
        (Pooled(GraphSAGE(3, 4, num_layers=2, aggr="max"), 4), "gnn.convs.0", "max over a changing"),
        (Pooled(GIN(3, 4, num_layers=2, norm="batch_norm"), 4), "GIN", "normalisation"),
        (Pooled(GraphSAGE(3, 4, num_layers=2, aggr="sum", jk="cat"), 4), "GraphSAGE", "jumping knowledge"),
        (Pooled(GraphSAGE(3, 4, num_layers=2, aggr="sum", act="tanh"), 4), "GraphSAGE", "Tanh"),
        (Pooled(GATConv(3, 4), 4), "GATConv", "softmax over the neighbours"),
    ],
)
def test_other_layers_are_refused_naming_the_layer_and_why(model, layer, why):
    with pytest.raises(InputError, match=why) as err:
        network_from_module(model)
    assert layer in str(err.value) and "\n" not in str(err.value)
