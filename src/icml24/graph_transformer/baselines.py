"""The peers a user would pick instead of the shallow graph transformer: PyG's GCN and GraphSAGE (the message
passing baselines of the paper's appendix) and a GPS layer (``GPSConv``: local GCN plus global multi-head
attention, the engineering peer), all trained the usual way (Adam, cross-entropy, full batch) on the same
``Data`` and labelled nodes.
"""

from __future__ import annotations

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_choice, check_float, check_int, check_seed
from .shallow import check_data, check_nodes

__all__ = ["fit_gnn"]
_GPS_HEADS = 4


class _GPS(nn.Module):
    def __init__(self, d: int, hidden: int, classes: int, layers: int) -> None:
        from torch_geometric.nn import GCNConv, GPSConv

        super().__init__()
        self.inp = nn.Linear(d, hidden)
        self.convs = nn.ModuleList(GPSConv(hidden, GCNConv(hidden, hidden), heads=_GPS_HEADS) for _ in range(layers))
        self.out = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        h = self.inp(x)
        for conv in self.convs:
            h = conv(h, edge_index)
        return self.out(h)


def fit_gnn(
    data,
    train_idx: torch.Tensor,
    *,
    kind: str = "gcn",
    hidden: int = 32,
    layers: int = 2,
    epochs: int = 200,
    lr: float = 0.01,
    weight_decay: float = 5e-4,
    seed: int = 0,
) -> nn.Module:
    """Train a PyG node classifier on the labelled nodes (Adam, cross-entropy, full batch) and return it in eval mode.

    Parameters
    ----------
    data : torch_geometric.data.Data
        ``x``, ``edge_index``, integer ``y`` (class ids).
    train_idx : torch.Tensor
        ``(L,)`` labelled nodes, at least two classes among them.
    kind : {"gcn", "sage", "gps"}, default "gcn"
        PyG's ``GCN``, ``GraphSAGE``, or ``GPSConv`` layers (GCN local conv, 4 heads of global attention).
    hidden, layers : int, default 32, 2
        For "gps" ``hidden`` must be a multiple of 4 (its attention heads).
    epochs : int, default 200
    lr : float, default 0.01
    weight_decay : float, default 5e-4
        Kipf & Welling's defaults.
    seed : int, default 0
        At most 2**64 - 1.

    Returns
    -------
    torch.nn.Module
        ``model(data.x, data.edge_index)`` gives ``(N, classes)`` logits.
    """
    from torch_geometric.nn import GCN, GraphSAGE

    x, y = check_data(data)
    kind = check_choice(kind, "kind", ("gcn", "sage", "gps"))
    hidden = check_int(hidden, "hidden", min_val=1)
    if kind == "gps" and hidden % _GPS_HEADS:
        raise InputError(f"hidden must be a multiple of {_GPS_HEADS} for kind='gps' (its heads), got {hidden}")
    layers = check_int(layers, "layers", min_val=1)
    epochs = check_int(epochs, "epochs", min_val=1)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="neither")
    weight_decay = check_float(weight_decay, "weight_decay", min_val=0.0)
    seed = check_seed(seed)
    train_idx = check_nodes(train_idx, "train_idx", x.shape[0])
    if torch.unique(y[train_idx]).numel() < 2:
        raise InputError("train_idx holds labelled nodes of one class only", "label nodes of both classes")
    if int(y.min()) < 0:
        raise InputError("data.y holds negative class ids", "use class ids 0..C-1")
    edge_index = data.edge_index.long()
    classes = int(y.max()) + 1
    with torch.random.fork_rng(devices=[]):  # PyG's layers draw from the global generator; leave it as it was
        torch.manual_seed(seed)
        if kind == "gcn":
            model: nn.Module = GCN(x.shape[1], hidden, layers, out_channels=classes)
        elif kind == "sage":
            model = GraphSAGE(x.shape[1], hidden, layers, out_channels=classes)
        else:
            model = _GPS(x.shape[1], hidden, classes, layers)
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    for _ in range(epochs):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x, edge_index)[train_idx], y[train_idx])
        loss.backward()
        opt.step()
    return model.eval()
