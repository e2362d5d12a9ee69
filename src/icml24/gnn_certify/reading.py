"""Reading a user's PyG model into a :class:`~icml24.gnn_certify.network.SageNetwork`, checked by running it.

:func:`network_from_module` accepts ``SAGEConv`` (sum / add aggregation, root weight, no normalisation or
projection), ``GINConv`` (sum aggregation; its ``nn`` a PyG ``MLP`` without normalisation, an ``nn.Sequential``
of Linear / ReLU, or a Linear), PyG's model classes ``GraphSAGE(aggr="sum")`` and ``GIN`` (``norm=None``,
``jk=None``, ReLU), ``torch.nn.ReLU`` / ``Dropout`` / ``Identity`` modules (in registration order) and ``Linear``
layers, and then *checks* its reading by running the model (:func:`run_model`) on random graphs: a model whose
forward does something else raises :class:`~icml24.errors.InputError` instead of being verified wrongly.

A GIN layer ``MLP((1 + eps) h_v + sum_u h_u)`` is the natural next architecture of the paper's MIP: its first
linear map ``W`` is a SAGE layer with root weights ``(1 + eps) W`` and neighbour weights ``W``, and its later
linear maps are SAGE layers with zero neighbour weights (each acts on one node). Mean or max aggregation,
attention and degree-normalised convolutions are refused, naming the layer and why their MIP is not linear
under edge flips.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from torch import Tensor, nn

from ..errors import InputError
from ..validation import check_bool, check_choice, check_seed
from ._checks import as_array, kept_modes
from .models import SAGEGraphClassifier, SAGENodeClassifier, relu_flags
from .network import GRAPH, NODE, DenseLayer, SageLayer, SageNetwork, check_shapes


def _np(t: Tensor | None, shape: tuple[int, ...]) -> np.ndarray:
    if t is None:
        return np.zeros(shape)
    return t.detach().cpu().to(torch.float64).numpy().copy()


def _sage_from_conv(conv, name: str, relu: bool) -> SageLayer:
    if isinstance(conv, tuple):  # weights already read (a GIN layer's linear maps)
        w_root, w_nbr, bias = conv
        return SageLayer(w_root=w_root, w_nbr=w_nbr, bias=bias, relu=relu)
    aggr = getattr(conv, "aggr", None)
    if not (isinstance(aggr, str) and aggr in ("sum", "add")):
        raise InputError(
            f"model: layer {name} is SAGEConv with aggr={aggr!r}: {_why_not(aggr)}",
            "gnn_certify verifies sum aggregation only: SAGEConv(..., aggr='sum'), GraphSAGE(..., aggr='sum')",
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


def _why_not(aggr) -> str:
    """Why an aggregation's MIP is not linear under edge flips."""
    if aggr == "mean":
        return "mean divides by the degree, which edge flips change, so the MIP is not linear in the adjacency"
    if aggr == "max" or aggr == "min":
        return f"{aggr} over a changing neighbour set needs a disjunction per neighbour, not the paper's linear MIP"
    return "only a sum of neighbour messages stays linear in the adjacency variables"


def _refuse(child: nn.Module, full: str, why: str = ""):
    kind = type(child).__name__
    if not why:
        if "att" in kind.lower() or kind.startswith(("GAT", "Transformer")):
            why = "its attention weights are a softmax over the neighbours, not linear in the adjacency"
        elif kind in ("GCNConv", "ChebConv", "SGConv", "TAGConv", "ARMAConv", "APPNP"):
            why = "its degree normalisation changes with every edge flip, so the MIP is not linear in the adjacency"
        else:
            why = "not among the layers whose MIP the paper gives"
    raise InputError(
        f"model: unsupported layer {kind} ({full}): {why}",
        "gnn_certify verifies SAGEConv/GINConv with sum aggregation, ReLU, global add-pool and Linear layers",
    )


def _mlp_items(mlp: nn.Module, full: str) -> list:
    """The (linear | relu) items of a PyG ``MLP`` or an ``nn.Sequential`` of Linear / ReLU / Dropout."""
    from torch_geometric.nn import MLP

    items: list = []
    if isinstance(mlp, MLP):
        if any(not isinstance(n, nn.Identity) for n in mlp.norms):
            _refuse(mlp, full, "its MLP has normalisation layers (build it with norm=None)")
        if mlp.act is not None and not isinstance(mlp.act, nn.ReLU):
            _refuse(mlp, full, f"its MLP uses {type(mlp.act).__name__}; only ReLU has the paper's MIP")
        last = len(mlp.lins) - 1
        for i, lin in enumerate(mlp.lins):
            items.append(("linear", f"{full}.lins.{i}", lin))
            if mlp.act is not None and (i < last or not mlp.plain_last):
                items.append(("relu", f"{full}.act", mlp.act))
        return items
    if isinstance(mlp, nn.Sequential):
        for name, child in mlp.named_children():
            if isinstance(child, nn.Linear) or type(child).__name__ == "Linear":
                items.append(("linear", f"{full}.{name}", child))
            elif isinstance(child, nn.ReLU):
                items.append(("relu", f"{full}.{name}", child))
            elif not isinstance(child, (nn.Dropout, nn.Identity)):
                _refuse(child, f"{full}.{name}")
        return items
    if isinstance(mlp, nn.Linear) or type(mlp).__name__ == "Linear":
        return [("linear", full, mlp)]
    _refuse(mlp, full, "a GIN layer's nn must be a PyG MLP, an nn.Sequential of Linear/ReLU, or a Linear")


def _gin_items(conv, full: str) -> list:
    """A GINConv ``nn((1 + eps) h_v + sum_u h_u)`` as SAGE layers: the first linear map ``W`` gives root weights
    ``(1 + eps) W`` and neighbour weights ``W``; the later ones act on each node alone (neighbour weights 0)."""
    aggr = getattr(conv, "aggr", None)
    if not (isinstance(aggr, str) and aggr in ("sum", "add")):
        _refuse(conv, full, _why_not(aggr))
    eps = float(conv.eps.detach().reshape(-1)[0]) if isinstance(conv.eps, Tensor) else float(conv.eps)
    inner = _mlp_items(conv.nn, f"{full}.nn")
    out, first = [], True
    for kind, name, m in inner:
        if kind == "relu":
            out.append((kind, name, m))
            continue
        w = _np(m.weight, ())
        b = _np(m.bias, (w.shape[0],))
        weights = ((1.0 + eps) * w, w, b) if first else (w, np.zeros_like(w), b)
        out.append(("sage", name, weights))
        first = False
    if first:
        _refuse(conv, full, "its nn has no Linear layer")
    return out


def _basic_gnn_items(model: nn.Module, full: str) -> list:
    """PyG's ``GraphSAGE`` / ``GIN`` model classes: each conv, then (all but the last) norm and activation."""
    if getattr(model, "jk_mode", None) is not None or hasattr(model, "lin"):
        _refuse(model, full, "jumping knowledge (jk=...) combines every layer; build it with jk=None")
    if any(not isinstance(n, nn.Identity) for n in model.norms):
        _refuse(model, full, "it has normalisation layers; build it with norm=None")
    act = model.act
    if act is not None and not isinstance(act, nn.ReLU):
        _refuse(model, full, f"it uses {type(act).__name__}; only ReLU has the paper's MIP")
    items: list = []
    last = len(model.convs) - 1
    for i, conv in enumerate(model.convs):
        _walk_one(conv, f"{full}.convs.{i}" if full else f"convs.{i}", items)
        if i < last and act is not None:
            items.append(("relu", f"{full}.act" if full else "act", act))
    return items


def _walk_one(child: nn.Module, full: str, out: list) -> None:
    from torch_geometric.nn import MLP, GINConv, MessagePassing, SAGEConv
    from torch_geometric.nn.models.basic_gnn import BasicGNN

    kind = type(child).__name__
    if isinstance(child, SAGEConv):
        out.append(("sage", full, child))
    elif isinstance(child, GINConv):
        out.extend(_gin_items(child, full))
    elif isinstance(child, BasicGNN):
        out.extend(_basic_gnn_items(child, full))
    elif isinstance(child, MessagePassing):
        _refuse(child, full)
    elif isinstance(child, MLP):
        out.extend(_mlp_items(child, full))
    elif isinstance(child, nn.Linear) or kind == "Linear":
        out.append(("linear", full, child))
    elif isinstance(child, nn.ReLU):
        out.append(("relu", full, child))
    elif isinstance(child, (nn.Dropout, nn.Identity)) or kind == "SumAggregation":
        return
    elif isinstance(child, (nn.ModuleList, nn.Sequential, nn.ModuleDict)):
        _walk(child, full, out)
    elif any(True for _ in child.parameters(recurse=False)) or not any(True for _ in child.children()):
        _refuse(child, full)
    else:
        _walk(child, full, out)


def _walk(module: nn.Module, prefix: str, out: list) -> None:
    """Leaves in registration order; SAGEConv, GINConv, MLP and PyG's model classes are read whole; unknown layers
    are refused by name."""
    from torch_geometric.nn.models.basic_gnn import BasicGNN

    if isinstance(module, BasicGNN) and not prefix:
        out.extend(_basic_gnn_items(module, ""))
        return
    for name, child in module.named_children():
        _walk_one(child, f"{prefix}.{name}" if prefix else name, out)


def _run_module(model: nn.Module, x: Tensor, edge_index: Tensor, task: str) -> Tensor:
    with kept_modes(model), torch.no_grad():
        model.eval()
        if task == GRAPH:
            batch = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
            try:
                out = model(x, edge_index, batch)
            except TypeError:
                out = model(x, edge_index)
            if out.dim() > 1 and out.shape[0] != 1:
                raise InputError(f"task is 'graph', but the model gives {out.shape[0]} rows of logits for one graph")
            return out.reshape(-1)
        out = model(x, edge_index)
        if out.dim() != 2 or out.shape[0] != x.shape[0]:
            raise InputError(
                f"task is 'node', but the model gives logits of shape {tuple(out.shape)} for {x.shape[0]} nodes"
            )
        return out


def run_model(model: nn.Module, x: np.ndarray | Tensor, edge_index: np.ndarray | Tensor, task: str) -> np.ndarray:
    """The user's PyG model itself on one graph (in eval mode, no gradients; the model's own mode is restored).

    Parameters
    ----------
    model : torch.nn.Module
    x : array or torch.Tensor [n, F]
        Finite node features (converted to the model's dtype and device).
    edge_index : array or torch.Tensor [2, E]
        Integer node indices in ``[0, n)``.
    task : {"graph", "node"}

    Returns
    -------
    float64 array
        Logits [C] (graph task) or [n, C] (node task).
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    task = check_choice(task, "task", (GRAPH, NODE))
    xa = as_array(x, "x", ndim=2)
    ea = as_array(edge_index, "edge_index", shape=(2, None), dtype="integer", allow_empty=True)
    if ea.size and (ea.min() < 0 or ea.max() >= xa.shape[0]):
        raise InputError(f"edge_index refers to nodes outside [0, {xa.shape[0]})")
    param = next(model.parameters(), None)
    dtype = param.dtype if param is not None and param.is_floating_point() else torch.float32
    device = param.device if param is not None else torch.device("cpu")
    xt = torch.as_tensor(xa, dtype=dtype, device=device)
    ei = torch.as_tensor(ea, dtype=torch.long, device=device)
    try:
        out = _run_module(model, xt, ei, task)
    except InputError:
        raise
    except Exception as exc:  # the model's own forward failed on these inputs: one line naming them
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise InputError(
            f"model failed on x {tuple(xa.shape)} and edge_index ({type(exc).__name__}: {first})",
            "x must have the model's input width; the model must take (x, edge_index[, batch])",
        ) from None
    return out.detach().cpu().to(torch.float64).numpy()


def network_from_module(
    model: nn.Module, task: str | None = None, relu: Sequence[bool] | None = None, check: bool = True, seed: int = 0
) -> SageNetwork:
    """Read a PyG model into a :class:`SageNetwork` and check the reading against the model's forward.

    Parameters
    ----------
    model : torch.nn.Module
        ``SAGEConv(aggr="sum")`` / ``GINConv`` layers (or PyG's ``GraphSAGE(aggr="sum")`` / ``GIN`` model
        classes), then (graph classification) ``Linear`` layers applied after a global add-pool.
        :class:`SAGEGraphClassifier` / :class:`SAGENodeClassifier` are read directly.
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
    check = check_bool(check, "check")
    if task is not None:
        task = check_choice(task, "task", (GRAPH, NODE))
    if relu is not None:
        relu = list(relu_flags(relu, len(relu) if hasattr(relu, "__len__") else -1))
    if isinstance(model, (SAGEGraphClassifier, SAGENodeClassifier)):
        t = GRAPH if isinstance(model, SAGEGraphClassifier) else NODE
        if task is not None and task != t:
            raise InputError(f"task={task!r} does not match {type(model).__name__}")
        flags = list(relu) if relu is not None else list(model.relu) + ([False] if t == GRAPH else [])
        if len(flags) != len(model.convs) + (t == GRAPH):
            raise InputError(
                f"relu must have {len(model.convs) + (t == GRAPH)} entries (one per layer), got {len(flags)}"
            )
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
        raise InputError(
            "model has no SAGEConv or GINConv layer", "gnn_certify verifies sum-aggregation SAGE and GIN networks"
        )
    last_sage = max(i for i, k in enumerate(kinds) if k == "sage")
    if any(k == "linear" for k in kinds[:last_sage]):
        raise InputError(
            "model: a Linear layer before the last SAGEConv is not supported",
            "gnn_certify verifies SAGE layers, then add-pool and dense layers",
        )
    linears = [m for k, _, m in items if k == "linear"]
    t = task or (GRAPH if linears else NODE)
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


__all__ = [
    "network_from_module",
    "run_model",
]
