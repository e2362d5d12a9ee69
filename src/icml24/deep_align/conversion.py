"""MLPs and CNNs written as ``torch.nn`` modules, to and from :class:`~icml24.deep_align.weights.WeightBatch`.

The accepted networks (:func:`mlp_linears`, :func:`network_layers`) are checked here with messages that name the
offending module; :func:`from_sequential` and :func:`from_state_dict` read their weights fan-in first (the layout
of :mod:`icml24.deep_align.weights`), :func:`write_into` and :func:`to_sequential` write a batch's network back.
"""

from __future__ import annotations

import copy
from typing import Iterable, Mapping

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_int
from .weights import WeightBatch, check_weight_batch

__all__ = [
    "ELEMENTWISE",
    "mlp_linears",
    "network_layers",
    "architecture",
    "CHANNELWISE",
    "check_mlp",
    "module_dtype",
    "check_same_dtype",
    "from_sequential",
    "from_state_dict",
    "write_into",
    "to_sequential",
]


# Elementwise modules: they commute with any permutation of the neurons they act on, so an MLP built with them
# has the hidden-neuron permutation symmetry whatever the activation (Dropout is elementwise as well).
ELEMENTWISE = (
    nn.ReLU,
    nn.GELU,
    nn.Tanh,
    nn.SiLU,
    nn.LeakyReLU,
    nn.ELU,
    nn.SELU,
    nn.CELU,
    nn.Sigmoid,
    nn.Softplus,
    nn.Mish,
    nn.Hardtanh,
    nn.Hardswish,
    nn.Hardsigmoid,
    nn.ReLU6,
    nn.Identity,
    nn.Dropout,
)


def mlp_linears(net: object, name: str = "net") -> list[nn.Linear]:
    """The Linear layers of an MLP as users write it, in order, after checking that it is one.

    Accepted: any ``nn.Module`` (an ``nn.Sequential`` or a class of your own) whose leaf modules, in
    registration order, are an optional leading ``nn.Flatten``, then Linear layers chained by width, with only
    elementwise modules (:data:`ELEMENTWISE`: ReLU, GELU, Tanh, SiLU, LeakyReLU, ..., Dropout) between them;
    ``bias=False`` layers are allowed. A module of your own must apply its Linear layers in the order it
    registers them (activations given as functions in ``forward`` are fine); the permutation symmetry does not
    depend on the activation.

    Parameters
    ----------
    net : object
    name : str, default "net"
        The argument's name in messages.

    Returns
    -------
    list of nn.Linear
        At least two: the network has at least one hidden layer.

    Raises
    ------
    InputError
        Naming ``name`` (and the offending module), when ``net`` is not such an MLP, its parameters are not
        finite floats of one dtype.
    """
    if not isinstance(net, nn.Module):
        raise InputError(
            f"{name} must be a torch.nn.Module MLP (Linear layers and elementwise activations), got "
            f"{type(net).__name__}"
        )
    leaves = _leaf_modules(net)
    linears: list[nn.Linear] = []
    for n, m in leaves:
        where = f"{name}.{n}" if n else name
        if type(m) is nn.Linear:
            if linears and m.in_features != linears[-1].out_features:
                raise InputError(
                    f"{where} takes {m.in_features} inputs but the previous layer gives {linears[-1].out_features}"
                )
            linears.append(m)
        elif isinstance(m, nn.Flatten):
            if linears:
                raise InputError(f"{where} is a Flatten after a Linear layer", "Flatten may only come first")
        elif not isinstance(m, ELEMENTWISE):
            raise InputError(
                f"{where} is {type(m).__name__}, expected Linear, Flatten or an elementwise activation",
                "Deep-Align here aligns MLPs of Linear layers and elementwise activations",
            )
    if len(linears) < 2:
        raise InputError(
            f"{name} must have at least two Linear layers (one hidden layer), got {len(linears)}",
            "give an MLP such as nn.Sequential(Linear, ReLU, Linear)",
        )
    _check_parameters(net, name)
    return linears


def _check_parameters(net: nn.Module, name: str) -> None:
    dtypes = set()
    for p in net.parameters():
        if not torch.is_floating_point(p):
            raise InputError(f"{name} has parameters of dtype {p.dtype}, expected floating point")
        if not bool(torch.isfinite(p.detach()).all()):
            raise InputError(f"{name} has non-finite (NaN or inf) parameters", "align trained, finite networks")
        dtypes.add(p.dtype)
    if len(dtypes) > 1:
        raise InputError(f"{name} mixes parameter dtypes {sorted(map(str, dtypes))}", "convert it with .to(dtype)")


def _leaf_modules(net: nn.Module) -> list[tuple[str, nn.Module]]:
    """The modules of ``net`` without children, with their names, in registration order."""
    return [(n, m) for n, m in net.named_modules() if not any(True for _ in m.children())]


# Channel-wise modules of a CNN: they act on every channel alike, so they commute with channel permutations.
CHANNELWISE = (
    nn.MaxPool2d,
    nn.AvgPool2d,
    nn.AdaptiveAvgPool2d,
    nn.AdaptiveMaxPool2d,
    nn.Dropout2d,
)


def network_layers(net: object, name: str = "net") -> list[nn.Module]:
    """The weight layers of an MLP or a CNN as users write them, in order, after checking the network.

    A module without Conv2d layers must be an MLP (:func:`mlp_linears`). A convolutional network (the paper's
    CNN setting) is accepted when its leaf modules, in registration order, are Conv2d layers (``groups=1``, any
    kernel, stride, padding or dilation; ``bias=False`` allowed) chained by channels, then at least one Linear
    layer, with only elementwise modules (:data:`ELEMENTWISE`), channel-wise pooling or dropout
    (:data:`CHANNELWISE`) and a Flatten in between. The first Linear layer reads ``s`` values per channel of the
    last Conv2d (``in_features = channels * s``: ``s = 1`` after global pooling, ``H * W`` when the feature map
    is flattened as it is, channel-major as ``nn.Flatten`` does); later Linear layers chain by width. Any other
    module (BatchNorm, LayerNorm, attention, ...) is refused.

    Parameters
    ----------
    net : object
    name : str, default "net"
        The argument's name in messages.

    Returns
    -------
    list of nn.Module
        The Linear layers of an MLP, or the Conv2d then Linear layers of a CNN.

    Raises
    ------
    InputError
        Naming ``name`` and the offending module, when ``net`` is neither such an MLP nor such a CNN, or its
        parameters are not finite floats of one dtype.
    """
    if not isinstance(net, nn.Module):
        raise InputError(
            f"{name} must be a torch.nn.Module (an MLP or a CNN of Conv2d and Linear layers), got {type(net).__name__}"
        )
    leaves = _leaf_modules(net)
    if not any(type(m) is nn.Conv2d for _, m in leaves):
        return mlp_linears(net, name)
    layers: list[nn.Module] = []
    for n, m in leaves:
        where = f"{name}.{n}" if n else name
        last = layers[-1] if layers else None
        if type(m) is nn.Conv2d:
            if isinstance(last, nn.Linear):
                raise InputError(
                    f"{where} is a Conv2d after a Linear layer", "register the layers in the order they are applied"
                )
            if m.groups != 1:
                raise InputError(f"{where} has groups={m.groups}", "only Conv2d layers with groups=1 are supported")
            if last is not None and m.in_channels != last.out_channels:
                raise InputError(
                    f"{where} takes {m.in_channels} channels but the previous layer gives {last.out_channels}"
                )
            layers.append(m)
        elif type(m) is nn.Linear:
            if last is None:
                raise InputError(
                    f"{where} is a Linear layer before the first Conv2d", "a CNN starts with Conv2d layers"
                )
            if isinstance(last, nn.Conv2d) and m.in_features % last.out_channels:
                raise InputError(
                    f"{where} takes {m.in_features} inputs, not a multiple of the {last.out_channels} channels of the "
                    "last Conv2d"
                )
            if isinstance(last, nn.Linear) and m.in_features != last.out_features:
                raise InputError(
                    f"{where} takes {m.in_features} inputs but the previous layer gives {last.out_features}"
                )
            layers.append(m)
        elif isinstance(m, (nn.Flatten,) + CHANNELWISE):
            if isinstance(last, nn.Linear):
                raise InputError(f"{where} is a {type(m).__name__} after a Linear layer", "it may only come before")
        elif not isinstance(m, ELEMENTWISE):
            raise InputError(
                f"{where} is {type(m).__name__}, an unsupported layer",
                "a CNN here is Conv2d layers, elementwise activations, pooling, Flatten and Linear layers",
            )
    if not isinstance(layers[-1], nn.Linear):
        raise InputError(f"{name} must end with a Linear layer after its Conv2d layers", "e.g. pool, Flatten, Linear")
    _check_parameters(net, name)
    return layers


def architecture(net: object, name: str = "net") -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """Validate ``net`` (see :func:`network_layers`) and return its widths and, for a CNN, its features.

    Parameters
    ----------
    net : object
    name : str, default "net"
        The argument's name in messages.

    Returns
    -------
    widths : tuple of int
        ``(d_0, ..., d_M)``: input channels (or inputs), the channels or widths of every layer.
    features : tuple of int or None
        Per layer the features of each weight entry (:attr:`WeightBatch.features`) for a CNN, None for an MLP.
    """
    ls = network_layers(net, name)
    if isinstance(ls[0], nn.Linear):
        return (ls[0].in_features,) + tuple(m.out_features for m in ls), None
    return (ls[0].in_channels,) + tuple(_out_width(m) for m in ls), tuple(
        _features(m, p) for m, p in zip(ls, [None] + ls)
    )


def _out_width(m: nn.Module) -> int:
    return m.out_channels if isinstance(m, nn.Conv2d) else m.out_features


def _features(m: nn.Module, prev: nn.Module | None) -> int:
    if isinstance(m, nn.Conv2d):
        return int(m.weight.shape[2] * m.weight.shape[3])
    return m.in_features // prev.out_channels if isinstance(prev, nn.Conv2d) else 1


def _layer_weight(m: nn.Module, prev: nn.Module | None, convolutional: bool) -> torch.Tensor:
    """A layer's weight fan-in first, float32: ``(d_in, d_out)``, or ``(d_in, d_out, F)`` in a CNN."""
    w = m.weight.detach().float()
    if not convolutional:
        return w.T
    if isinstance(m, nn.Conv2d):  # (out, in, kh, kw) -> (in, out, kh * kw)
        return w.flatten(2).permute(1, 0, 2)
    if isinstance(prev, nn.Conv2d):  # (out, c * s) -> (c, out, s), channel-major as nn.Flatten
        return w.reshape(w.shape[0], prev.out_channels, -1).permute(1, 0, 2)
    return w.T.unsqueeze(-1)


def check_mlp(net: object, name: str = "net") -> tuple[int, ...]:
    """Validate ``net`` as an MLP (see :func:`mlp_linears`) and return its widths.

    Parameters
    ----------
    net : object
    name : str, default "net"
        The argument's name in messages.

    Returns
    -------
    tuple of int
        The widths ``(d_0, ..., d_M)``.

    Raises
    ------
    InputError
        Naming ``name`` (and the offending layer), when ``net`` is not such an MLP.
    """
    ls = mlp_linears(net, name)
    return (ls[0].in_features,) + tuple(m.out_features for m in ls)


def module_dtype(net: nn.Module) -> torch.dtype:
    """The dtype of a network's parameters (validated by :func:`mlp_linears`).

    Parameters
    ----------
    net : nn.Module

    Returns
    -------
    torch.dtype
    """
    return next(net.parameters()).dtype


def check_same_dtype(a: nn.Module, b: nn.Module, names: tuple[str, str] = ("a", "b")) -> None:
    """Refuse two networks whose parameter dtypes differ.

    Parameters
    ----------
    a, b : nn.Module
        Two networks accepted by :func:`mlp_linears`.
    names : tuple of str, default ("a", "b")
        Their names in messages.

    Raises
    ------
    InputError
        Naming ``names[1]``, when the dtypes differ.
    """
    da, db = module_dtype(a), module_dtype(b)
    if da != db:
        raise InputError(
            f"{names[1]} has dtype {db} but {names[0]} has {da}", f"convert both to one dtype, e.g. {names[1]}.to({da})"
        )


def from_sequential(nets: nn.Module | Iterable[nn.Module], name: str = "nets") -> WeightBatch:
    """Stack one or several MLPs (or CNNs) of the same architecture into a :class:`WeightBatch`.

    Parameters
    ----------
    nets : nn.Module or iterable of nn.Module
        MLPs of Linear layers and elementwise activations (see :func:`mlp_linears`), or CNNs of Conv2d and Linear
        layers (see :func:`network_layers`), of one architecture; ``bias=False`` layers give zero biases.
    name : str, default "nets"
        The argument's name in messages.

    Returns
    -------
    WeightBatch
        float32 copies, detached, fan-in first (with a feature axis for CNNs).
    """
    if isinstance(nets, nn.Module):
        nets = [nets]
    elif isinstance(nets, (str, bytes, dict)) or not isinstance(nets, Iterable):
        raise InputError(f"{name} must be an nn.Module MLP or CNN, or a list of them, got {type(nets).__name__}")
    nets = list(nets)
    if not nets:
        raise InputError(f"{name} is empty", "give at least one network")
    names = [f"{name}[{i}]" if len(nets) > 1 else name for i in range(len(nets))]
    layers = [network_layers(n, nm) for n, nm in zip(nets, names)]
    archs = [architecture(n, nm) for n, nm in zip(nets, names)]
    for i, arch in enumerate(archs):
        if arch != archs[0]:
            what = lambda a: f"widths {a[0]}" + (f" and kernel features {a[1]}" if a[1] else "")  # noqa: E731
            raise InputError(
                f"{name}[{i}] has {what(arch)}, but {name}[0] has {what(archs[0])}",
                "all networks must share one architecture",
            )
    M, conv = len(layers[0]), archs[0][1] is not None

    def bias(m: nn.Module) -> torch.Tensor:
        return m.bias.detach().float() if m.bias is not None else torch.zeros(_out_width(m))

    weights = tuple(
        torch.stack([_layer_weight(ls[k], ls[k - 1] if k else None, conv) for ls in layers]) for k in range(M)
    )
    biases = tuple(torch.stack([bias(ls[k]) for ls in layers]) for k in range(M))
    return WeightBatch(weights, biases)


def from_state_dict(state: Mapping[str, torch.Tensor], name: str = "state") -> WeightBatch:
    """One MLP given as a state dict (``net.state_dict()``, or a checkpoint read with ``torch.load``) as a
    :class:`WeightBatch`.

    The entries, in order, must be the 2-D ``*.weight`` of Linear layers (``nn.Linear``'s ``(out, in)``
    orientation), each optionally followed by its ``*.bias``; the layers must chain by width.

    Parameters
    ----------
    state : mapping of str to torch.Tensor
    name : str, default "state"
        The argument's name in messages.

    Returns
    -------
    WeightBatch
        One network, float32 (missing biases are zero).

    Raises
    ------
    InputError
        Naming ``name`` and the offending key.
    """
    if not isinstance(state, Mapping):
        raise InputError(f"{name} must be a state dict (a mapping of names to tensors), got {type(state).__name__}")
    weights: list[torch.Tensor] = []
    biases: list[torch.Tensor | None] = []
    last = None
    for key, t in state.items():
        if not isinstance(t, torch.Tensor):
            raise InputError(f"{name}[{key!r}] is {type(t).__name__}, expected a tensor")
        if str(key).endswith("weight"):
            if t.dim() != 2:
                raise InputError(
                    f"{name}[{key!r}] has shape {tuple(t.shape)}, expected a 2-D Linear weight",
                    "only MLPs of Linear layers are supported",
                )
            if weights and t.shape[1] != weights[-1].shape[0]:
                raise InputError(
                    f"{name}[{key!r}] takes {t.shape[1]} inputs, the previous layer gives {weights[-1].shape[0]}"
                )
            weights.append(t)
            biases.append(None)
            last = str(key)[: -len("weight")]
        elif str(key).endswith("bias") and last is not None and str(key)[: -len("bias")] == last and biases[-1] is None:
            if t.shape != (weights[-1].shape[0],):
                raise InputError(f"{name}[{key!r}] has shape {tuple(t.shape)}, expected ({weights[-1].shape[0]},)")
            biases[-1] = t
        else:
            raise InputError(
                f"{name}[{key!r}] is not the weight or bias of a Linear layer", "give the state dict of an MLP"
            )
    if len(weights) < 2:
        raise InputError(f"{name} must hold at least two Linear layers (one hidden layer), got {len(weights)}")
    for t in weights + [b for b in biases if b is not None]:
        if not torch.is_floating_point(t) or not bool(torch.isfinite(t).all()):
            raise InputError(f"{name} must hold finite floating-point tensors")
    bs = [b if b is not None else torch.zeros(w.shape[0]) for w, b in zip(weights, biases)]
    return WeightBatch(
        tuple(w.detach().T.float().unsqueeze(0).contiguous() for w in weights),
        tuple(b.detach().float().unsqueeze(0) for b in bs),
    )


def write_into(net: nn.Module, wb: WeightBatch, index: int = 0) -> nn.Module:
    """A deep copy of ``net`` (same class, activations, Flatten, dtype) holding network ``index`` of ``wb``.

    Parameters
    ----------
    net : nn.Module
        An MLP or a CNN accepted by :func:`network_layers`, of ``wb``'s architecture.
    wb : WeightBatch
    index : int, default 0

    Returns
    -------
    nn.Module
        The copy; ``bias=False`` layers stay without bias (their biases in ``wb`` are zero).
    """
    out = copy.deepcopy(net)
    with torch.no_grad():
        for k, m in enumerate(network_layers(out, "net")):
            t = wb.weights[k][index]
            t = t.T if t.dim() == 2 else t.permute(1, 0, 2).reshape(m.weight.shape)
            m.weight.copy_(t.to(m.weight.dtype))
            if m.bias is not None:
                m.bias.copy_(wb.biases[k][index].to(m.bias.dtype))
    return out


def to_sequential(wb: WeightBatch, index: int = 0) -> nn.Sequential:
    """Network ``index`` of a batch as a fresh ``nn.Sequential`` of Linear and ReLU layers.

    Parameters
    ----------
    wb : WeightBatch
    index : int, default 0

    Returns
    -------
    nn.Sequential
    """
    check_weight_batch(wb, "wb")
    if wb.convolutional:
        raise InputError("wb holds convolutional networks", "use write_into(template_cnn, wb, index)")
    index = check_int(index, "index", min_val=0, max_val=wb.size - 1)
    layers: list[nn.Module] = []
    widths = wb.widths
    for k in range(len(wb.weights)):
        lin = nn.Linear(widths[k], widths[k + 1])
        with torch.no_grad():
            lin.weight.copy_(wb.weights[k][index].T)
            lin.bias.copy_(wb.biases[k][index])
        layers.append(lin)
        if k < len(wb.weights) - 1:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)
