"""Node-classification GNN backbones as the SEED-GNN / EGNN official configs define them, and their
inductive pretraining.

Mirrors github.com/henryzhongsc/gnn_editing (``models/{gcn,sage,gin,mlp}.py``, ``data.py``,
``pipelines/seed_gnn/pretrain_gnn.py``) at commit 7e0064e:

- ``GCN``: ``GCNConv`` layers, ReLU and dropout between them. The official code runs ``GCNConv(normalize=False)``
  on an adjacency pre-normalised with self-loops and ``gcn_norm``; ``GCNConv``'s own normalisation
  (``normalize=True``, self-loops added) computes the same ``D^-1/2 (A + I) D^-1/2``, so our modules take
  ``(x, edge_index)`` like any PyG model.
- ``SAGE``: ``SAGEConv`` (mean aggregation) on the raw adjacency.
- ``GIN``: per layer ``GINConv(Linear(in, 2h) - BN - ReLU - Linear(2h, h), train_eps=True)`` then BN and ReLU;
  a head ``Linear(h, h) - BN - ReLU - Dropout(0.5) - Linear(h, C)``; it returns **log-probabilities**
  (``log_softmax``), a quirk of the official model that editing inherits (its "logits" are log-probs).
- ``MLP``: ``Linear`` layers with ReLU and dropout between them, the editable part of GNN + MLP.

Cora defaults: 2 layers, hidden 32, dropout 0.1, no batch norm or residual.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv, GINConv, SAGEConv
from torch_geometric.utils import subgraph

from ..errors import InputError


class _Stack(nn.Module):
    """Layers with ReLU and dropout between them (the official ``BaseGNNModel.forward``)."""

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, num_layers: int,
                 dropout: float) -> None:
        super().__init__()
        if num_layers < 1:
            raise InputError(f"num_layers must be >= 1, got {num_layers}")
        if not 0.0 <= dropout < 1.0:
            raise InputError(f"dropout must be in [0, 1), got {dropout}")
        self.in_channels, self.hidden_channels, self.out_channels = in_channels, hidden_channels, out_channels
        self.num_layers, self.dropout = num_layers, dropout
        dims = [in_channels] + [hidden_channels] * (num_layers - 1) + [out_channels]
        self.layers = nn.ModuleList(self._layer(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def _layer(self, a: int, b: int) -> nn.Module:  # pragma: no cover - abstract
        raise NotImplementedError


class MLP(_Stack):
    """``Linear`` layers, ReLU and dropout between them (official ``models/mlp.py``)."""

    def _layer(self, a, b):
        return nn.Linear(a, b)

    def forward(self, x: Tensor) -> Tensor:
        for lin in self.layers[:-1]:
            x = F.dropout(F.relu(lin(x)), self.dropout, self.training)
        return self.layers[-1](x)


class _ConvStack(_Stack):
    """Message-passing layers with ReLU and dropout between them."""

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        for conv in self.layers[:-1]:
            x = F.dropout(F.relu(conv(x, edge_index)), self.dropout, self.training)
        return self.layers[-1](x, edge_index)


class GCN(_ConvStack):
    """Kipf & Welling GCN as in the official config (``GCNConv``, symmetric normalisation with self-loops)."""

    def _layer(self, a, b):
        return GCNConv(a, b)


class SAGE(_ConvStack):
    """GraphSAGE with mean aggregation as in the official config (``SAGEConv``)."""

    def _layer(self, a, b):
        return SAGEConv(a, b)


class GIN(nn.Module):
    """GIN as in the official ``models/gin.py``: returns ``log_softmax`` outputs (see the module docstring).

    ``dropout`` is stored for the editors (the MLP of GNN + MLP copies it); the official GIN itself only uses
    the hard-coded dropout 0.5 of its head.
    """

    def __init__(self, in_channels: int, hidden_channels: int, out_channels: int, num_layers: int,
                 dropout: float = 0.0) -> None:
        super().__init__()
        if num_layers < 1:
            raise InputError(f"num_layers must be >= 1, got {num_layers}")
        self.in_channels, self.hidden_channels, self.out_channels = in_channels, hidden_channels, out_channels
        self.num_layers, self.dropout = num_layers, dropout
        self.convs = nn.ModuleList()
        self.batch_norms = nn.ModuleList()
        for i in range(num_layers):
            a = in_channels if i == 0 else hidden_channels
            mlp = nn.Sequential(nn.Linear(a, 2 * hidden_channels), nn.BatchNorm1d(2 * hidden_channels), nn.ReLU(),
                                nn.Linear(2 * hidden_channels, hidden_channels))
            self.convs.append(GINConv(mlp, train_eps=True))
            self.batch_norms.append(nn.BatchNorm1d(hidden_channels))
        self.lin1 = nn.Linear(hidden_channels, hidden_channels)
        self.batch_norm1 = nn.BatchNorm1d(hidden_channels)
        self.lin2 = nn.Linear(hidden_channels, out_channels)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        for conv, bn in zip(self.convs, self.batch_norms):
            x = F.relu(bn(conv(x, edge_index)))
        x = F.relu(self.batch_norm1(self.lin1(x)))
        x = F.dropout(x, p=0.5, training=self.training)
        return F.log_softmax(self.lin2(x), dim=-1)


BACKBONES = {"gcn": GCN, "sage": SAGE, "gin": GIN}


def build_backbone(name: str, in_channels: int, out_channels: int, *, hidden_channels: int = 32,
                   num_layers: int = 2, dropout: float = 0.1, seed: int = 0) -> nn.Module:
    """A freshly initialised backbone (``"gcn"``, ``"sage"`` or ``"gin"``) with the official Cora defaults.

    Initialisation uses a private generator seeded with ``seed`` (the global RNG is restored afterwards).
    """
    key = str(name).lower()
    if key not in BACKBONES:
        raise InputError(f"unknown model {name!r}", f"choose one of: {', '.join(BACKBONES)}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return BACKBONES[key](in_channels, hidden_channels, out_channels, num_layers, dropout)


def to_inductive(data: Data) -> Data:
    """The subgraph induced by the training nodes, relabelled (the official ``to_inductive``)."""
    mask = data.train_mask
    edge_index, _ = subgraph(mask, data.edge_index, None, relabel_nodes=True, num_nodes=data.num_nodes)
    out = Data(x=data.x[mask], y=data.y[mask], edge_index=edge_index)
    out.train_mask = torch.ones(int(mask.sum()), dtype=torch.bool)
    return out


@dataclass
class PretrainResult:
    best_epoch: int
    best_val: float
    train_acc: float
    val_acc: float
    test_acc: float
    history: list[tuple[float, float, float]] = field(default_factory=list)


@torch.no_grad()
def accuracies(model: nn.Module, data: Data) -> tuple[float, float, float]:
    """(train, val, test) accuracy of a full-graph forward in eval mode."""
    was = model.training
    model.eval()
    pred = model(data.x, data.edge_index).argmax(-1)
    model.train(was)
    return tuple(float((pred[m] == data.y[m]).float().mean()) if int(m.sum()) else float("nan")
                 for m in (data.train_mask, data.val_mask, data.test_mask))


def pretrain_inductive(model: nn.Module, data: Data, *, epochs: int = 200, lr: float = 0.01, seed: int = 0,
                       weight_decay: float = 0.0) -> PretrainResult:
    """Train full-batch on the train-node subgraph and keep the best-validation checkpoint (in place).

    As the official ``pretrain_gnn.py``: Adam (lr 0.01, no weight decay), cross-entropy on the inductive
    train graph each epoch, evaluation on the whole graph, the state with the highest validation accuracy
    (first reached) restored at the end. Dropout uses a private generator seeded with ``seed``.
    """
    for name in ("x", "edge_index", "y", "train_mask", "val_mask", "test_mask"):
        if getattr(data, name, None) is None:
            raise InputError(f"data has no {name}", "pass a torch_geometric Data with the three masks")
    train = to_inductive(data)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best, best_state, best_epoch, history = -1.0, None, 0, []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for epoch in range(1, epochs + 1):
            model.train()
            opt.zero_grad()
            out = model(train.x, train.edge_index)
            F.cross_entropy(out, train.y).backward()
            opt.step()
            acc = accuracies(model, data)
            history.append(acc)
            if acc[1] > best:
                best, best_epoch, best_state = acc[1], epoch, copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)
    model.eval()
    tr, va, te = accuracies(model, data)
    return PretrainResult(best_epoch, best, tr, va, te, history)
