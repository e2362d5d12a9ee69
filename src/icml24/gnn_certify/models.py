"""The official architectures as PyG modules, and a PyG module for any :class:`~icml24.gnn_certify.network.SageNetwork`.

Mirrors the models of the official experiments (github.com/christopherhojny/SCIP-MPNN at 0b8d73c,
``scripts_experiments/generate_basic_instance_files_{graph,node}classification.py``):

- graph classification: ``SAGEConv(F, 16, aggr="sum")`` -> ReLU -> ``SAGEConv(16, 16)`` -> ReLU ->
  ``SAGEConv(16, 16)`` -> ``global_add_pool`` -> dropout(0.5) -> ``Linear(16, C)``;
- node classification: ``SAGEConv(F, 32, aggr="sum")`` -> ReLU -> dropout(0.5) -> ``SAGEConv(32, C)``.

:func:`module_from_network` goes the other way: a network (e.g. an official JSON model) as a PyG module.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError
from ..validation import check_bool, check_int, check_probability, check_tensor
from .network import GRAPH, SageNetwork, check_network


def _sum_sage_stack(
    who: str,
    in_channels: int,
    num_classes: int,
    hidden_channels: int,
    num_layers: int,
    relu: Sequence[bool] | None,
    node_outputs: bool,
) -> tuple[tuple[bool, ...], nn.ModuleList]:
    """Validated ReLU flags (default: after all but the last layer) and ``SAGEConv(aggr="sum")`` layers (the last
    one outputs ``num_classes`` when ``node_outputs``)."""
    from torch_geometric.nn import SAGEConv

    for value, name, low in (
        (in_channels, "in_channels", 1),
        (num_classes, "num_classes", 2),
        (hidden_channels, "hidden_channels", 1),
        (num_layers, "num_layers", 1),
    ):
        check_int(value, f"{who}: {name}", min_val=low)
    flags = relu_flags(relu, num_layers) if relu is not None else (True,) * (num_layers - 1) + (False,)
    dims = [in_channels] + [hidden_channels] * num_layers
    if node_outputs:
        dims[-1] = num_classes
    return flags, nn.ModuleList(SAGEConv(a, b, aggr="sum") for a, b in zip(dims[:-1], dims[1:]))


def relu_flags(relu, count: int) -> tuple[bool, ...]:
    """``relu`` as a tuple of ``count`` booleans."""
    if isinstance(relu, (str, bytes)) or not hasattr(relu, "__len__"):
        raise InputError(f"relu must be a sequence of {count} booleans, got {type(relu).__name__}")
    flags = tuple(check_bool(bool(r) if isinstance(r, np.bool_) else r, "relu entries") for r in relu)
    if len(flags) != count:
        raise InputError(f"relu must have {count} entries (one per layer), got {len(flags)}")
    return flags


def _graph_inputs(module: nn.Module, x, edge_index, batch=None) -> Tensor:
    """Check a forward's graph (x [n, in_channels], edge_index [2, E] into [0, n), batch [n]); ``x`` in the
    weights' dtype (a float64 ``x`` for a float32 model is cast, not refused)."""
    w = module.convs[0].lin_l.weight
    check_tensor(x, "x", ndim=2, shape=(None, w.shape[1]), finite=False)
    check_tensor(edge_index, "edge_index", shape=(2, None), dtype="integer", allow_empty=True)
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= x.shape[0]):
        raise InputError(f"edge_index holds node indices outside [0, {x.shape[0]})")
    if batch is not None:
        check_tensor(batch, "batch", shape=(x.shape[0],), dtype="integer", allow_empty=True)
    return x.to(w.dtype)


class SAGEGraphClassifier(nn.Module):
    """The official graph-classification MPNN: sum-SAGE layers, ReLU after all but the last, global
    add-pool, dropout, one dense layer (``generate_basic_instance_files_graphclassification.py``).

    Parameters
    ----------
    in_channels, num_classes : int
        Input features (MUTAG 7, ENZYMES 3) and classes.
    hidden_channels : int
        Width of every SAGE layer (official 16).
    num_layers : int
        SAGE layers (official 3).
    relu : sequence of bool, optional
        ReLU after each SAGE layer; default: all but the last (official).
    dropout : float
        Dropout before the dense layer at training time (official 0.5).
    """

    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        hidden_channels: int = 16,
        num_layers: int = 3,
        relu: Sequence[bool] | None = None,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.relu, self.convs = _sum_sage_stack(
            "SAGEGraphClassifier",
            in_channels,
            num_classes,
            hidden_channels,
            num_layers,
            relu,
            False,
        )
        self.dropout = check_probability(dropout, "dropout")
        self.lin = nn.Linear(hidden_channels, num_classes)

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None) -> Tensor:
        from torch_geometric.nn import global_add_pool

        x = _graph_inputs(self, x, edge_index, batch)
        for conv, r in zip(self.convs, self.relu):
            x = conv(x, edge_index)
            if r:
                x = x.relu()
        x = global_add_pool(x, batch)
        x = nn.functional.dropout(x, p=self.dropout, training=self.training)
        return self.lin(x)


class SAGENodeClassifier(nn.Module):
    """The official node-classification MPNN: sum-SAGE layers with ReLU (and dropout) between them
    (``generate_basic_instance_files_nodeclassification.py``).

    Parameters
    ----------
    in_channels, num_classes : int
        Input features (Cora 1433) and classes; the last SAGE layer outputs the logits.
    hidden_channels : int
        Width of the hidden SAGE layers (official 32).
    num_layers : int
        SAGE layers (official 2).
    relu : sequence of bool, optional
        ReLU after each SAGE layer; default: all but the last (official).
    dropout : float
        Dropout between layers at training time (official 0.5).
    """

    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        hidden_channels: int = 32,
        num_layers: int = 2,
        relu: Sequence[bool] | None = None,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.relu, self.convs = _sum_sage_stack(
            "SAGENodeClassifier", in_channels, num_classes, hidden_channels, num_layers, relu, True
        )
        self.dropout = check_probability(dropout, "dropout")

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        x = _graph_inputs(self, x, edge_index)
        for i, (conv, r) in enumerate(zip(self.convs, self.relu)):
            x = conv(x, edge_index)
            if r:
                x = x.relu()
            if i < len(self.convs) - 1:
                x = nn.functional.dropout(x, p=self.dropout, training=self.training)
        return x


def module_from_network(net: SageNetwork) -> nn.Module:
    """A PyG module computing ``net`` (float32, eval mode), e.g. for the official JSON models.

    Parameters
    ----------
    net : SageNetwork

    Returns
    -------
    torch.nn.Module
        A :class:`SAGEGraphClassifier` when the network has its shape, else a generic sum-SAGE module.
    """
    net = check_network(net)
    hidden = net.sage[0].out_features
    classifier = (
        net.task == GRAPH
        and len(net.dense) == 1
        and not net.dense[0].relu
        and all(s.out_features == hidden for s in net.sage)
    )
    if classifier:  # the shape SAGEGraphClassifier builds: equal widths, one linear read-out
        model = SAGEGraphClassifier(
            net.in_features, net.num_classes, hidden, len(net.sage), relu=[s.relu for s in net.sage]
        )
        model.lin.weight.data = torch.tensor(net.dense[0].weight, dtype=torch.float32)
        model.lin.bias.data = torch.tensor(net.dense[0].bias, dtype=torch.float32)
    else:
        model = _GenericGraphModel(net) if net.task == GRAPH else _GenericNodeModel(net)
    for conv, s in zip(model.convs, net.sage):
        conv.lin_l.weight.data = torch.tensor(s.w_nbr, dtype=torch.float32)
        conv.lin_l.bias.data = torch.tensor(s.bias, dtype=torch.float32)
        conv.lin_r.weight.data = torch.tensor(s.w_root, dtype=torch.float32)
    model.eval()
    return model


class _GenericNodeModel(nn.Module):
    """Any stack of sum-SAGE layers (per-layer widths and ReLUs), node outputs."""

    def __init__(self, net: SageNetwork) -> None:
        super().__init__()
        from torch_geometric.nn import SAGEConv

        self.convs = nn.ModuleList(SAGEConv(s.in_features, s.out_features, aggr="sum") for s in net.sage)
        self.relu = tuple(s.relu for s in net.sage)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        for conv, r in zip(self.convs, self.relu):
            x = conv(x, edge_index)
            x = x.relu() if r else x
        return x


class _GenericGraphModel(_GenericNodeModel):
    """The node stack, sum pooling, then any dense layers."""

    def __init__(self, net: SageNetwork) -> None:
        super().__init__(net)
        self.lins = nn.ModuleList()
        for d in net.dense:
            lin = nn.Linear(d.weight.shape[1], d.weight.shape[0])
            lin.weight.data = torch.tensor(d.weight, dtype=torch.float32)
            lin.bias.data = torch.tensor(d.bias, dtype=torch.float32)
            self.lins.append(lin)
        self.dense_relu = tuple(d.relu for d in net.dense)

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None) -> Tensor:
        from torch_geometric.nn import global_add_pool

        x = global_add_pool(super().forward(x, edge_index), batch)
        for lin, r in zip(self.lins, self.dense_relu):
            x = lin(x)
            x = x.relu() if r else x
        return x


__all__ = [
    "SAGEGraphClassifier",
    "SAGENodeClassifier",
    "module_from_network",
]
