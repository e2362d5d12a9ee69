"""The networks gnn_certify verifies: GraphSAGE with sum aggregation, ReLU, (add-pool + dense head).

Mirrors the models of the official experiments (github.com/christopherhojny/SCIP-MPNN at 0b8d73c,
``scripts_experiments/generate_basic_instance_files_{graph,node}classification.py``):

- graph classification: ``SAGEConv(F, 16, aggr="sum")`` -> ReLU -> ``SAGEConv(16, 16)`` -> ReLU ->
  ``SAGEConv(16, 16)`` -> ``global_add_pool`` -> dropout(0.5) -> ``Linear(16, C)``;
- node classification: ``SAGEConv(F, 32, aggr="sum")`` -> ReLU -> dropout(0.5) -> ``SAGEConv(32, C)``.

A SAGE layer computes ``h_v' = W1 h_v + W2 sum_{u in N(v)} h_u + b`` (paper §2, eq. (1) with sum
aggregation); in PyG ``lin_r`` holds the root weights W1 (the JSON's ``w1``) and ``lin_l`` the neighbour
weights W2 (``w2``) and the bias. :class:`SageNetwork` is the solver-side copy of such a model: float64
numpy weights and a batched forward pass over many adjacency matrices (used by brute force and sampling).

A user's own PyG model is read by :func:`network_from_module`, which accepts ``SAGEConv`` (sum / add
aggregation, root weight, no normalisation or projection), ``torch.nn.ReLU`` / ``Dropout`` / ``Identity``
modules and ``Linear`` layers, and then *checks* its reading by running the model on random graphs: a
model whose forward does something else raises :class:`~icml24.errors.InputError` instead of being
verified wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError
from ..validation import check_int, check_probability, check_seed

GRAPH, NODE = "graph", "node"


# ------------------------------------------------------------------------------------------- PyG modules
def _sum_sage_stack(
    who: str,
    in_channels: int,
    num_classes: int,
    hidden_channels: int,
    num_layers: int,
    relu: Sequence[bool] | None,
    dims: list[int],
) -> tuple[tuple[bool, ...], nn.ModuleList]:
    """Validated ReLU flags (default: after all but the last layer) and ``SAGEConv(aggr="sum")`` layers of widths
    ``dims``."""
    from torch_geometric.nn import SAGEConv

    for value, name in (
        (in_channels, "in_channels"),
        (num_classes, "num_classes"),
        (hidden_channels, "hidden_channels"),
        (num_layers, "num_layers"),
    ):
        check_int(value, f"{who}: {name}", min_val=1)
    flags = tuple(bool(r) for r in (relu if relu is not None else [True] * (num_layers - 1) + [False]))
    if len(flags) != num_layers:
        raise InputError(f"relu must have {num_layers} entries, got {len(flags)}")
    return flags, nn.ModuleList(SAGEConv(a, b, aggr="sum") for a, b in zip(dims[:-1], dims[1:]))


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
            [in_channels] + [hidden_channels] * num_layers,
        )
        self.dropout = check_probability(dropout, "dropout")
        self.lin = nn.Linear(hidden_channels, num_classes)

    def forward(self, x: Tensor, edge_index: Tensor, batch: Tensor | None = None) -> Tensor:
        from torch_geometric.nn import global_add_pool

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
        dims = [in_channels] + [hidden_channels] * (num_layers - 1) + [num_classes]
        self.relu, self.convs = _sum_sage_stack(
            "SAGENodeClassifier", in_channels, num_classes, hidden_channels, num_layers, relu, dims
        )
        self.dropout = check_probability(dropout, "dropout")

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        for i, (conv, r) in enumerate(zip(self.convs, self.relu)):
            x = conv(x, edge_index)
            if r:
                x = x.relu()
            if i < len(self.convs) - 1:
                x = nn.functional.dropout(x, p=self.dropout, training=self.training)
        return x


# ------------------------------------------------------------------------------------------- numpy side
@dataclass(frozen=True)
class SageLayer:
    """One SAGE layer: ``pre_v = w_root @ h_v + w_nbr @ sum_{u -> v} h_u + bias`` (paper eq. (1), sum aggregation).

    Parameters
    ----------
    w_root, w_nbr : float array [out, in]
        Root (the JSON's ``w1``, PyG's ``lin_r``) and neighbour (``w2``, ``lin_l``) weights.
    bias : float array [out]
    relu : bool
        Whether ReLU follows.
    """

    w_root: np.ndarray  # [out, in]
    w_nbr: np.ndarray  # [out, in]
    bias: np.ndarray  # [out]
    relu: bool

    @property
    def in_features(self) -> int:
        return int(self.w_root.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.w_root.shape[0])


@dataclass(frozen=True)
class DenseLayer:
    """A dense layer on the pooled vector: ``pre = weight @ h + bias``.

    Parameters
    ----------
    weight : float array [out, in]
    bias : float array [out]
    relu : bool
        Whether ReLU follows.
    """

    weight: np.ndarray  # [out, in]
    bias: np.ndarray  # [out]
    relu: bool


@dataclass(frozen=True)
class SageNetwork:
    """A sum-SAGE network as the MIP sees it (float64 weights).

    Parameters
    ----------
    sage : tuple of SageLayer
    dense : tuple of DenseLayer
        Empty for node classification.
    task : {"graph", "node"}
        "graph": SAGE layers, global add-pool, dense layers (logits). "node": SAGE layers only; the logits of
        a node are its last-layer outputs.
    """

    sage: tuple[SageLayer, ...]
    dense: tuple[DenseLayer, ...]
    task: str

    @property
    def in_features(self) -> int:
        return self.sage[0].in_features

    @property
    def num_classes(self) -> int:
        return int(self.dense[-1].weight.shape[0]) if self.task == GRAPH else self.sage[-1].out_features

    def forward(self, x: np.ndarray, adj: np.ndarray) -> np.ndarray:
        """Logits for one or many graphs on the same nodes.

        ``x``: [n, F] or [B, n, F]; ``adj``: [n, n] or [B, n, n] with ``adj[u, v] = 1`` for a message
        u -> v (symmetric for undirected graphs). Returns [C] / [B, C] (graph task) or [n, C] / [B, n, C].
        """
        return self.trace(x, adj)[-1]

    def trace(self, x: np.ndarray, adj: np.ndarray) -> list[np.ndarray]:
        """Every intermediate quantity: SAGE pre-activations (one [B, n, F_l] per layer), then (graph task)
        the pooled vector and each dense pre-activation, then the logits (last entry). Single graphs drop
        the batch axis."""
        single = adj.ndim == 2
        a = np.asarray(adj, dtype=np.float64)
        h = np.asarray(x, dtype=np.float64)
        if single:
            a = a[None]
        if h.ndim == 2:
            h = h[None]
        if h.shape[0] != a.shape[0]:
            h = np.broadcast_to(h, (a.shape[0],) + h.shape[1:])
        out: list[np.ndarray] = []
        for layer in self.sage:
            agg = np.einsum("buv,buf->bvf", a, h)
            h = h @ layer.w_root.T + agg @ layer.w_nbr.T + layer.bias
            out.append(h)
            if layer.relu:
                h = np.maximum(h, 0.0)
        if self.task == GRAPH:
            h = h.sum(axis=1)
            out.append(h)
            for layer in self.dense:
                h = h @ layer.weight.T + layer.bias
                out.append(h)
                if layer.relu:
                    h = np.maximum(h, 0.0)
        out.append(h)
        return [o[0] for o in out] if single else out


def _np(t: Tensor | None, shape: tuple[int, ...]) -> np.ndarray:
    if t is None:
        return np.zeros(shape)
    return t.detach().cpu().to(torch.float64).numpy().copy()


def _sage_from_conv(conv, name: str, relu: bool) -> SageLayer:
    aggr = getattr(conv, "aggr", None)
    if not (isinstance(aggr, str) and aggr in ("sum", "add")):
        raise InputError(
            f"model: layer {name} is SAGEConv with aggr={aggr!r}",
            "gnn_certify verifies sum aggregation only: SAGEConv(..., aggr='sum')",
        )
    if getattr(conv, "normalize", False) or getattr(conv, "project", False) or not getattr(conv, "root_weight", True):
        raise InputError(
            f"model: layer {name} uses SAGEConv normalize/project or has no root weight",
            "use SAGEConv(in, out, aggr='sum') with its defaults",
        )
    out = conv.lin_l.weight.shape[0]
    bias = _np(conv.lin_l.bias, (out,))
    if getattr(conv.lin_r, "bias", None) is not None:
        bias = bias + _np(conv.lin_r.bias, (out,))
    return SageLayer(w_root=_np(conv.lin_r.weight, ()), w_nbr=_np(conv.lin_l.weight, ()), bias=bias, relu=relu)


def _walk(module: nn.Module, prefix: str, out: list) -> None:
    """Leaves in registration order; SAGEConv is a leaf; unknown layers are refused by name."""
    from torch_geometric.nn import MessagePassing, SAGEConv

    def refuse(child: nn.Module, full: str):
        raise InputError(
            f"model: unsupported layer {type(child).__name__} ({full})",
            "gnn_certify verifies SAGEConv(aggr='sum') + ReLU + global add-pool + Linear",
        )

    for name, child in module.named_children():
        full = f"{prefix}.{name}" if prefix else name
        kind = type(child).__name__
        if isinstance(child, SAGEConv):
            out.append(("sage", full, child))
        elif isinstance(child, MessagePassing):
            refuse(child, full)
        elif isinstance(child, nn.Linear) or kind == "Linear":
            out.append(("linear", full, child))
        elif isinstance(child, nn.ReLU):
            out.append(("relu", full, child))
        elif isinstance(child, (nn.Dropout, nn.Identity)) or kind == "SumAggregation":
            continue
        elif isinstance(child, (nn.ModuleList, nn.Sequential, nn.ModuleDict)):
            _walk(child, full, out)
        elif any(True for _ in child.parameters(recurse=False)) or not any(True for _ in child.children()):
            refuse(child, full)
        else:
            _walk(child, full, out)


def _run_module(model: nn.Module, x: Tensor, edge_index: Tensor, task: str) -> Tensor:
    model.eval()
    with torch.no_grad():
        if task == GRAPH:
            batch = torch.zeros(x.shape[0], dtype=torch.long)
            try:
                out = model(x, edge_index, batch)
            except TypeError:
                out = model(x, edge_index)
            return out.reshape(-1)
        return model(x, edge_index)


def run_model(model: nn.Module, x: np.ndarray | Tensor, edge_index: np.ndarray | Tensor, task: str) -> np.ndarray:
    """The user's PyG model itself on one graph (eval mode, no gradients).

    Parameters
    ----------
    model : torch.nn.Module
    x : array or torch.Tensor [n, F]
    edge_index : array or torch.Tensor [2, E]
    task : {"graph", "node"}

    Returns
    -------
    float64 array
        Logits [C] (graph task) or [n, C] (node task).
    """
    xt = torch.as_tensor(np.asarray(x, dtype=np.float32) if not isinstance(x, Tensor) else x, dtype=torch.float32)
    ei = torch.as_tensor(
        np.asarray(edge_index) if not isinstance(edge_index, Tensor) else edge_index, dtype=torch.long
    ).reshape(2, -1)
    param = next(model.parameters(), None)
    if param is not None:
        xt = xt.to(param.dtype)
    return _run_module(model, xt, ei, task).detach().cpu().to(torch.float64).numpy()


def network_from_module(
    model: nn.Module, task: str | None = None, relu: Sequence[bool] | None = None, check: bool = True, seed: int = 0
) -> SageNetwork:
    """Read a PyG model into a :class:`SageNetwork` and check the reading against the model's forward.

    Parameters
    ----------
    model : torch.nn.Module
        ``SAGEConv(aggr="sum")`` layers, then (graph classification) ``Linear`` layers applied after a global
        add-pool. :class:`SAGEGraphClassifier` / :class:`SAGENodeClassifier` are read directly.
    task : "graph" | "node", optional
        Default: "graph" when the model has ``Linear`` layers after its SAGE layers, else "node".
    relu : sequence of bool, optional
        ReLU after each SAGE layer then each dense layer. Default: the model's own flags, or ``nn.ReLU``
        modules when it registers them, else the official pattern (ReLU after every layer but the last SAGE
        layer and the last dense layer).
    check : bool
        Compare the model's outputs with the reading on random graphs (default True).
    seed : int
        Seed of those random graphs.

    Returns
    -------
    SageNetwork

    Raises
    ------
    InputError
        Unsupported layer type, mean/max aggregation, or a forward that the reading does not reproduce.
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    seed = check_seed(seed)
    if isinstance(model, (SAGEGraphClassifier, SAGENodeClassifier)):
        t = GRAPH if isinstance(model, SAGEGraphClassifier) else NODE
        if task is not None and task != t:
            raise InputError(f"task={task!r} does not match {type(model).__name__}")
        flags = list(relu) if relu is not None else list(model.relu) + ([False] if t == GRAPH else [])
        sage = tuple(_sage_from_conv(c, f"convs.{i}", flags[i]) for i, c in enumerate(model.convs))
        dense = ()
        if t == GRAPH:
            dense = (
                DenseLayer(
                    _np(model.lin.weight, ()), _np(model.lin.bias, (model.lin.out_features,)), bool(flags[len(sage)])
                ),
            )
        net = SageNetwork(sage=sage, dense=dense, task=t)
        check_shapes(net)
        if check:
            _check_reading(model, net, seed)
        return net

    items: list = []
    _walk(model, "", items)
    kinds = [k for k, _, _ in items]
    n_sage = kinds.count("sage")
    if n_sage == 0:
        raise InputError("model has no SAGEConv layer", "gnn_certify verifies SAGEConv(aggr='sum') networks")
    last_sage = max(i for i, k in enumerate(kinds) if k == "sage")
    if any(k == "linear" for k in kinds[:last_sage]):
        raise InputError(
            "model: a Linear layer before the last SAGEConv is not supported",
            "gnn_certify verifies SAGE layers, then add-pool and dense layers",
        )
    linears = [m for k, _, m in items if k == "linear"]
    t = task or (GRAPH if linears else NODE)
    if t not in (GRAPH, NODE):
        raise InputError(f"task must be 'graph' or 'node', got {task!r}")
    if t == NODE and linears:
        raise InputError(
            "model: node classification with Linear layers is not supported",
            "node classification verifies SAGE layers only, as in the paper",
        )
    if t == GRAPH and not linears:
        raise InputError("model: graph classification needs a Linear head after the pooling")
    n_layers = n_sage + len(linears)
    if relu is not None:
        flags = [bool(r) for r in relu]
    elif "relu" in kinds:
        flags = []
        for i, k in enumerate(kinds):
            if k in ("sage", "linear"):
                flags.append(i + 1 < len(kinds) and kinds[i + 1] == "relu")
    else:
        flags = [True] * (n_sage - 1) + [False] + ([True] * (len(linears) - 1) + [False] if linears else [])
    if len(flags) != n_layers:
        raise InputError(f"relu must have {n_layers} entries (one per SAGE and Linear layer), got {len(flags)}")
    sage_items = [(name, m) for k, name, m in items if k == "sage"]
    sage = tuple(_sage_from_conv(m, name, flags[i]) for i, (name, m) in enumerate(sage_items))
    dense = tuple(
        DenseLayer(_np(m.weight, ()), _np(m.bias, (m.weight.shape[0],)), flags[n_sage + i])
        for i, m in enumerate(linears)
    )
    net = SageNetwork(sage=sage, dense=dense, task=t)
    check_shapes(net)
    if check:
        _check_reading(model, net, seed)
    return net


def check_shapes(net: SageNetwork) -> None:
    """Refuse a network whose layer widths do not chain or whose weights are not finite.

    Parameters
    ----------
    net : SageNetwork

    Raises
    ------
    InputError
        Naming the mismatch.
    """
    for a, b in zip(net.sage[:-1], net.sage[1:]):
        if a.out_features != b.in_features:
            raise InputError(f"model: SAGE widths do not chain ({a.out_features} -> {b.in_features})")
    prev = net.sage[-1].out_features
    for d in net.dense:
        if d.weight.shape[1] != prev:
            raise InputError(f"model: dense layer expects {d.weight.shape[1]} inputs, gets {prev}")
        prev = d.weight.shape[0]
    for layer in net.sage:
        if not (np.isfinite(layer.w_root).all() and np.isfinite(layer.w_nbr).all() and np.isfinite(layer.bias).all()):
            raise InputError("model: weights must be finite")


def _check_reading(model: nn.Module, net: SageNetwork, seed: int) -> None:
    """Run the module and the reading on two random graphs; refuse the model when they disagree."""
    rng = np.random.default_rng(seed)
    for n in (5, 7):
        x = rng.integers(0, 2, size=(n, net.in_features)).astype(np.float64)
        adj = np.triu(rng.random((n, n)) < 0.4, 1)
        adj = adj | adj.T
        ei = np.stack(np.nonzero(adj))
        try:
            got = run_model(model, x, ei, net.task)
        except Exception as exc:  # the model's own forward failed: say so in one line
            raise InputError(
                f"model: running it on a test graph failed ({type(exc).__name__}: {exc})",
                "the model must take (x, edge_index[, batch]) like PyG models",
            ) from None
        want = net.forward(x, adj.astype(np.float64))
        if got.shape != want.shape:
            raise InputError(
                f"model: output shape {tuple(got.shape)} differs from the reading {tuple(want.shape)}",
                "graph models return [1, C] or [C]; node models [n, C]",
            )
        scale = 1.0 + float(np.abs(want).max())
        if not np.allclose(got, want, atol=1e-4 * scale, rtol=1e-4):
            raise InputError(
                "model: its forward does not match SAGE(sum) + ReLU + add-pool + Linear as read",
                "pass relu=[...] with the activation after each layer, or use SAGEGraphClassifier",
            )


def network_to_json(net: SageNetwork) -> list:
    """The official JSON layout of a network (the inverse of :func:`~icml24.gnn_certify.io.network_from_json`).

    Parameters
    ----------
    net : SageNetwork

    Returns
    -------
    list
        ``[{"L": k}, {"layer": "sage", ...}, ..., {"layer": "add_pool"}, {"layer": "dense", ...}]``.
    """
    layers: list = []
    for s in net.sage:
        layers.append(
            {
                "layer": "sage",
                "in_channels": s.in_features,
                "out_channels": s.out_features,
                "w1": s.w_root.tolist(),
                "w2": s.w_nbr.tolist(),
                "b": s.bias.tolist(),
                "activation": s.relu,
            }
        )
    if net.task == GRAPH:
        layers.append({"layer": "add_pool"})
        for d in net.dense:
            layers.append(
                {
                    "layer": "dense",
                    "in_channels": int(d.weight.shape[1]),
                    "out_channels": int(d.weight.shape[0]),
                    "w": d.weight.tolist(),
                    "b": d.bias.tolist(),
                    "activation": d.relu,
                }
            )
    return [{"L": len(layers)}] + layers


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
    "SageLayer",
    "DenseLayer",
    "SageNetwork",
    "network_from_module",
    "module_from_network",
    "network_to_json",
    "run_model",
    "check_shapes",
    "GRAPH",
    "NODE",
]
