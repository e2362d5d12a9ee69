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

from ..extras import require

require("torch_geometric", extra="graphs", what="icml24.nn.gnn")

from torch_geometric.data import Data
from torch_geometric.nn import GCNConv, GINConv, SAGEConv
from torch_geometric.utils import subgraph

from ..errors import InputError


class _Stack(nn.Module):
    """Layers with ReLU and dropout between them (the official ``BaseGNNModel.forward``)."""

    def __init__(
        self, in_channels: int, hidden_channels: int, out_channels: int, num_layers: int, dropout: float
    ) -> None:
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
    """``Linear`` layers, ReLU and dropout between them (official ``models/mlp.py``).

    The editable part of GNN + MLP.

    Parameters
    ----------
    in_channels : int
        Input feature dimension.
    hidden_channels : int
        Width of the hidden layers.
    out_channels : int
        Output dimension (number of classes).
    num_layers : int
        Number of layers (>= 1); one layer maps ``in_channels`` straight to ``out_channels``.
    dropout : float
        Dropout probability between layers, in [0, 1).

    Raises
    ------
    InputError
        If ``num_layers < 1`` or ``dropout`` is not in [0, 1).
    """

    def _layer(self, a, b):
        return nn.Linear(a, b)

    def forward(self, x: Tensor) -> Tensor:
        """Apply the layers.

        Parameters
        ----------
        x : torch.Tensor
            Inputs ``(N, in_channels)``.

        Returns
        -------
        torch.Tensor
            Logits ``(N, out_channels)``.
        """
        for lin in self.layers[:-1]:
            x = F.dropout(F.relu(lin(x)), self.dropout, self.training)
        return self.layers[-1](x)


class _ConvStack(_Stack):
    """Message-passing layers with ReLU and dropout between them."""

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """Apply the message-passing layers.

        Parameters
        ----------
        x : torch.Tensor
            Node features ``(N, in_channels)``.
        edge_index : torch.Tensor
            Edges ``(2, E)``, as in PyG.

        Returns
        -------
        torch.Tensor
            Logits ``(N, out_channels)``.
        """
        for conv in self.layers[:-1]:
            x = F.dropout(F.relu(conv(x, edge_index)), self.dropout, self.training)
        return self.layers[-1](x, edge_index)


class GCN(_ConvStack):
    """Kipf & Welling GCN as in the official config (``GCNConv``, symmetric normalisation with self-loops).

    ``GCNConv``'s own normalisation computes the same ``D^-1/2 (A + I) D^-1/2`` as the official code's
    pre-normalised adjacency, so the model takes ``(x, edge_index)`` like any PyG model.

    Parameters
    ----------
    in_channels : int
        Input feature dimension.
    hidden_channels : int
        Width of the hidden layers.
    out_channels : int
        Output dimension (number of classes).
    num_layers : int
        Number of layers (>= 1); one layer maps ``in_channels`` straight to ``out_channels``.
    dropout : float
        Dropout probability between layers, in [0, 1).

    Raises
    ------
    InputError
        If ``num_layers < 1`` or ``dropout`` is not in [0, 1).

    References
    ----------
    .. [1] T. N. Kipf and M. Welling, "Semi-supervised classification with graph convolutional networks",
       ICLR 2017.
    """

    def _layer(self, a, b):
        return GCNConv(a, b)


class SAGE(_ConvStack):
    """GraphSAGE with mean aggregation as in the official config (``SAGEConv``), on the raw adjacency.

    Parameters
    ----------
    in_channels : int
        Input feature dimension.
    hidden_channels : int
        Width of the hidden layers.
    out_channels : int
        Output dimension (number of classes).
    num_layers : int
        Number of layers (>= 1); one layer maps ``in_channels`` straight to ``out_channels``.
    dropout : float
        Dropout probability between layers, in [0, 1).

    Raises
    ------
    InputError
        If ``num_layers < 1`` or ``dropout`` is not in [0, 1).

    References
    ----------
    .. [1] W. L. Hamilton, R. Ying and J. Leskovec, "Inductive representation learning on large graphs",
       NeurIPS 2017.
    """

    def _layer(self, a, b):
        return SAGEConv(a, b)


class GIN(nn.Module):
    """GIN as in the official ``models/gin.py``: returns ``log_softmax`` outputs (see the module docstring).

    Per layer ``GINConv(Linear(in, 2h) - BN - ReLU - Linear(2h, h), train_eps=True)`` then BN and ReLU; a
    head ``Linear(h, h) - BN - ReLU - Dropout(0.5) - Linear(h, C)``.

    Parameters
    ----------
    in_channels : int
        Input feature dimension.
    hidden_channels : int
        Width ``h`` of the GIN layers and the head.
    out_channels : int
        Number of classes ``C``.
    num_layers : int
        Number of ``GINConv`` layers (>= 1).
    dropout : float, default 0.0
        Stored for the editors (the MLP of GNN + MLP copies it); the official GIN itself only uses the
        hard-coded dropout 0.5 of its head.

    Raises
    ------
    InputError
        If ``num_layers < 1``.

    References
    ----------
    .. [1] K. Xu, W. Hu, J. Leskovec and S. Jegelka, "How powerful are graph neural networks?", ICLR 2019.
    """

    def __init__(
        self, in_channels: int, hidden_channels: int, out_channels: int, num_layers: int, dropout: float = 0.0
    ) -> None:
        super().__init__()
        if num_layers < 1:
            raise InputError(f"num_layers must be >= 1, got {num_layers}")
        self.in_channels, self.hidden_channels, self.out_channels = in_channels, hidden_channels, out_channels
        self.num_layers, self.dropout = num_layers, dropout
        self.convs = nn.ModuleList()
        self.batch_norms = nn.ModuleList()
        for i in range(num_layers):
            a = in_channels if i == 0 else hidden_channels
            mlp = nn.Sequential(
                nn.Linear(a, 2 * hidden_channels),
                nn.BatchNorm1d(2 * hidden_channels),
                nn.ReLU(),
                nn.Linear(2 * hidden_channels, hidden_channels),
            )
            self.convs.append(GINConv(mlp, train_eps=True))
            self.batch_norms.append(nn.BatchNorm1d(hidden_channels))
        self.lin1 = nn.Linear(hidden_channels, hidden_channels)
        self.batch_norm1 = nn.BatchNorm1d(hidden_channels)
        self.lin2 = nn.Linear(hidden_channels, out_channels)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """Apply the GIN layers and the head.

        Parameters
        ----------
        x : torch.Tensor
            Node features ``(N, in_channels)``.
        edge_index : torch.Tensor
            Edges ``(2, E)``, as in PyG.

        Returns
        -------
        torch.Tensor
            Log-probabilities ``(N, out_channels)`` (``log_softmax`` of the head, as the official model).
        """
        for conv, bn in zip(self.convs, self.batch_norms):
            x = F.relu(bn(conv(x, edge_index)))
        x = F.relu(self.batch_norm1(self.lin1(x)))
        x = F.dropout(x, p=0.5, training=self.training)
        return F.log_softmax(self.lin2(x), dim=-1)


BACKBONES = {"gcn": GCN, "sage": SAGE, "gin": GIN}


def build_backbone(
    name: str,
    in_channels: int,
    out_channels: int,
    *,
    hidden_channels: int = 32,
    num_layers: int = 2,
    dropout: float = 0.1,
    seed: int = 0,
) -> nn.Module:
    """Build a freshly initialised backbone (``"gcn"``, ``"sage"`` or ``"gin"``) with the official Cora defaults.

    Initialisation uses a private generator seeded with ``seed`` (the global RNG is restored afterwards).

    Parameters
    ----------
    name : {"gcn", "sage", "gin"}
        The architecture (case-insensitive).
    in_channels : int
        Input feature dimension.
    out_channels : int
        Number of classes.
    hidden_channels : int, default 32
        Hidden width; 32 is the official Cora default.
    num_layers : int, default 2
        Number of layers; 2 is the official Cora default.
    dropout : float, default 0.1
        Dropout between layers; 0.1 is the official Cora default (GIN only stores it, see :class:`GIN`).
    seed : int, default 0
        Seed of the initialisation.

    Returns
    -------
    torch.nn.Module
        A :class:`GCN`, :class:`SAGE` or :class:`GIN`, in training mode.

    Raises
    ------
    InputError
        If ``name`` is unknown or the sizes or dropout are out of range.
    """
    key = str(name).lower()
    if key not in BACKBONES:
        raise InputError(f"unknown model {name!r}", f"choose one of: {', '.join(BACKBONES)}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return BACKBONES[key](in_channels, hidden_channels, out_channels, num_layers, dropout)


def to_inductive(data: Data) -> Data:
    """Return the subgraph induced by the training nodes, relabelled (the official ``to_inductive``).

    Parameters
    ----------
    data : torch_geometric.data.Data
        A graph with ``x``, ``y``, ``edge_index`` and ``train_mask``.

    Returns
    -------
    torch_geometric.data.Data
        The training nodes' ``x`` and ``y``, the edges between them (renumbered ``0..n_train-1``), and an
        all-True ``train_mask``.
    """
    mask = data.train_mask
    edge_index, _ = subgraph(mask, data.edge_index, None, relabel_nodes=True, num_nodes=data.num_nodes)
    out = Data(x=data.x[mask], y=data.y[mask], edge_index=edge_index)
    out.train_mask = torch.ones(int(mask.sum()), dtype=torch.bool)
    return out


@dataclass
class PretrainResult:
    """Outcome of :func:`pretrain_inductive`.

    Parameters
    ----------
    best_epoch : int
        Epoch (1-based) of the restored best-validation checkpoint.
    best_val : float
        Its validation accuracy.
    train_acc, val_acc, test_acc : float
        Accuracies of the restored model on the whole graph.
    history : list of (float, float, float)
        (train, val, test) accuracy after each epoch.
    """

    best_epoch: int
    best_val: float
    train_acc: float
    val_acc: float
    test_acc: float
    history: list[tuple[float, float, float]] = field(default_factory=list)


@torch.no_grad()
def accuracies(model: nn.Module, data: Data) -> tuple[float, float, float]:
    """Return the (train, val, test) accuracy of a full-graph forward in eval mode.

    The model's training/eval mode is restored afterwards; no gradients are recorded.

    Parameters
    ----------
    model : torch.nn.Module
        Called as ``model(x, edge_index)``; the prediction is the argmax of its output.
    data : torch_geometric.data.Data
        A graph with ``x``, ``edge_index``, ``y`` and the three masks.

    Returns
    -------
    tuple of float
        Accuracy on ``train_mask``, ``val_mask`` and ``test_mask``; NaN for an empty mask.
    """
    was = model.training
    model.eval()
    pred = model(data.x, data.edge_index).argmax(-1)
    model.train(was)
    return tuple(
        float((pred[m] == data.y[m]).float().mean()) if int(m.sum()) else float("nan")
        for m in (data.train_mask, data.val_mask, data.test_mask)
    )


def pretrain_inductive(
    model: nn.Module, data: Data, *, epochs: int = 200, lr: float = 0.01, seed: int = 0, weight_decay: float = 0.0
) -> PretrainResult:
    """Train full-batch on the train-node subgraph and keep the best-validation checkpoint (in place).

    As the official ``pretrain_gnn.py``: Adam (lr 0.01, no weight decay), cross-entropy on the inductive
    train graph (:func:`to_inductive`) each epoch, evaluation on the whole graph, the state with the highest
    validation accuracy (first reached) restored at the end. Dropout uses a private generator seeded with
    ``seed``. The model is left in eval mode.

    Parameters
    ----------
    model : torch.nn.Module
        A backbone called as ``model(x, edge_index)``, e.g. from :func:`build_backbone`; trained in place.
    data : torch_geometric.data.Data
        The whole graph with ``x``, ``edge_index``, ``y``, ``train_mask``, ``val_mask`` and ``test_mask``.
    epochs : int, default 200
        Number of full-batch epochs.
    lr : float, default 0.01
        Adam learning rate (the official value).
    seed : int, default 0
        Seed of the dropout masks.
    weight_decay : float, default 0.0
        Adam weight decay (the official value: none).

    Returns
    -------
    PretrainResult
        The best epoch, its validation accuracy, the restored model's accuracies and the per-epoch history.

    Raises
    ------
    InputError
        If ``data`` lacks one of the attributes above.
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
