"""Weight spaces of MLPs and CNNs: conversion from ``torch.nn`` modules, permutations, merging, interpolation.

A batch of ``B`` MLPs with widths ``(d_0, d_1, ..., d_M)`` is held as :class:`WeightBatch`: ``weights[k]`` has
shape ``(B, d_k, d_{k+1})`` (fan-in first, the layout of the official Deep-Align code, i.e. the transpose of
``nn.Linear.weight``) and ``biases[k]`` has shape ``(B, d_{k+1})``. The hidden neurons ``d_1 .. d_{M-1}`` may
be permuted without changing the function; input and output neurons may not (the paper's "hnp" setting).

A *hard* permutation of hidden layer ``l`` (``l = 1 .. M-1``) is an index tensor ``p`` of shape ``(B, d_l)``:
neuron ``i`` of the permuted network is neuron ``p[i]`` of the original. Aligning ``b`` to ``a`` returns such
indices: ``permute(b, p)`` has its neuron ``i`` matched to neuron ``i`` of ``a``. A *soft* permutation is a
``(B, d_l, d_l)`` matrix ``P`` with ``new_i = sum_j P[i, j] old_j``; the hard ``p`` corresponds to
``P[i, p[i]] = 1`` (``deepalign.utils.permute_weights`` in the official code uses the same convention).

Convolutional networks (a stack of Conv2d layers, then Linear layers; the paper's CNN experiments) have the same
symmetry over their channels: permuting the output channels of a Conv2d and the input channels of the next layer
keeps the function. Their weights are held as ``(B, d_k, d_{k+1}, F_k)``: one entry per pair of channels (or of
neurons) with ``F_k`` features, the ``kh * kw`` kernel entries of a Conv2d (as DWSNets and Deep-Align treat
them), the ``s`` spatial positions per channel read by the first Linear layer after the convolutions
(``in_features = channels * s``; ``s = 1`` after global pooling), and ``F = 1`` for later Linear layers. The
hidden "neurons" are then the output channels of every Conv2d and the hidden neurons of the Linear layers.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..data import Split
from ..data.zoo import mlp_zoo, split_networks
from ..errors import InputError
from ..validation import check_float, check_int


@dataclass(frozen=True)
class WeightBatch:
    """``B`` MLPs of one architecture as tensors, fan-in first (the official code's layout).

    Parameters
    ----------
    weights : tuple of torch.Tensor
        ``weights[k]`` of shape ``(B, d_k, d_{k+1})``: the transpose of layer ``k``'s ``nn.Linear.weight``; for a
        convolutional network every ``weights[k]`` is ``(B, d_k, d_{k+1}, F_k)`` (see the module docstring).
    biases : tuple of torch.Tensor
        ``biases[k]`` of shape ``(B, d_{k+1})``.
    """

    weights: tuple[torch.Tensor, ...]
    biases: tuple[torch.Tensor, ...]

    @property
    def widths(self) -> tuple[int, ...]:
        """The architecture ``(d_0, ..., d_M)``."""
        return (int(self.weights[0].shape[1]),) + tuple(int(w.shape[2]) for w in self.weights)

    @property
    def features(self) -> tuple[int, ...]:
        """Features per weight entry of each layer: ``kh * kw`` for a Conv2d, the spatial positions per channel
        for the first Linear layer after convolutions, 1 for the Linear layers of an MLP."""
        return tuple(int(w.shape[3]) if w.dim() == 4 else 1 for w in self.weights)

    @property
    def convolutional(self) -> bool:
        """Whether these are convolutional networks (weights with a feature axis)."""
        return self.weights[0].dim() == 4

    @property
    def hidden(self) -> tuple[int, ...]:
        """The widths of the permutable (hidden) layers ``d_1 .. d_{M-1}``."""
        return self.widths[1:-1]

    @property
    def size(self) -> int:
        """The number of networks ``B``."""
        return int(self.weights[0].shape[0])

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, idx) -> "WeightBatch":
        if isinstance(idx, int):
            idx = slice(idx, idx + 1)
        return WeightBatch(tuple(w[idx] for w in self.weights), tuple(b[idx] for b in self.biases))

    def detach(self) -> "WeightBatch":
        """The same networks, detached from autograd."""
        return WeightBatch(tuple(w.detach() for w in self.weights), tuple(b.detach() for b in self.biases))

    def to(self, dtype: torch.dtype) -> "WeightBatch":
        """The same networks in ``dtype``."""
        return WeightBatch(tuple(w.to(dtype) for w in self.weights), tuple(b.to(dtype) for b in self.biases))

    def flat(self) -> torch.Tensor:
        """All parameters of each network as one vector, ``(B, n_params)``."""
        return torch.cat([t.flatten(1) for pair in zip(self.weights, self.biases) for t in pair], dim=1)

    @classmethod
    def from_linear(cls, weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor]) -> "WeightBatch":
        """A batch from stacked layers in ``nn.Linear``'s orientation, as :mod:`icml24.data.zoo` returns them.

        Parameters
        ----------
        weights : sequence of torch.Tensor
            ``weights[k]`` of shape ``(B, d_{k+1}, d_k)``.
        biases : sequence of torch.Tensor
            ``biases[k]`` of shape ``(B, d_{k+1})``.

        Returns
        -------
        WeightBatch

        Raises
        ------
        InputError
            When the layers do not chain, the counts differ or the values are not finite floats.
        """
        if not isinstance(weights, (list, tuple)) or not isinstance(biases, (list, tuple)):
            raise InputError("weights and biases must be lists of tensors, one per layer")
        if len(weights) != len(biases):
            raise InputError(f"weights has {len(weights)} layers but biases has {len(biases)}")
        for k, w in enumerate(weights):
            if not isinstance(w, torch.Tensor) or w.dim() != 3:
                raise InputError(f"weights[{k}] must be a (B, d_out, d_in) tensor")
        wb = cls(tuple(w.transpose(1, 2).contiguous() for w in weights), tuple(biases))
        check_weight_batch(wb, "weights")
        return wb

    @staticmethod
    def cat(batches: Sequence["WeightBatch"]) -> "WeightBatch":
        """Concatenate batches of one architecture along the network axis.

        Parameters
        ----------
        batches : sequence of WeightBatch
            At least one, all of one architecture.

        Returns
        -------
        WeightBatch
        """
        if not isinstance(batches, (list, tuple)):
            raise InputError(f"batches must be a list of WeightBatch, got {type(batches).__name__}")
        if not batches:
            raise InputError("batches is empty: cannot concatenate an empty list of weight batches")
        for i, b in enumerate(batches):
            if not isinstance(b, WeightBatch):
                raise InputError(f"batches[{i}] must be a WeightBatch, got {type(b).__name__}")
            if (b.widths, b.features, b.convolutional) != (
                batches[0].widths,
                batches[0].features,
                batches[0].convolutional,
            ):
                raise InputError(
                    f"batches[{i}] has widths {b.widths} (features {b.features}), but batches[0] has "
                    f"{batches[0].widths} (features {batches[0].features})"
                )
        n = len(batches[0].weights)
        return WeightBatch(
            tuple(torch.cat([b.weights[k] for b in batches]) for k in range(n)),
            tuple(torch.cat([b.biases[k] for b in batches]) for k in range(n)),
        )


# ------------------------------------------------------------------------------------------ conversion
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
    leaves = [(n, m) for n, m in net.named_modules() if not any(True for _ in m.children())]
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
    leaves = [(n, m) for n, m in net.named_modules() if not any(True for _ in m.children())]
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


def check_weight_batch(wb: object, name: str = "nets") -> WeightBatch:
    """Validate a :class:`WeightBatch`: layer shapes that chain, at least one hidden layer, finite floats.

    Parameters
    ----------
    wb : object
    name : str, default "nets"
        The argument's name in messages.

    Returns
    -------
    WeightBatch
        ``wb`` itself.

    Raises
    ------
    InputError
        Naming ``name`` and the offending layer.
    """
    if not isinstance(wb, WeightBatch):
        raise InputError(f"{name} must be a WeightBatch, got {type(wb).__name__}")
    if not isinstance(wb.weights, (tuple, list)) or not isinstance(wb.biases, (tuple, list)):
        raise InputError(f"{name}: weights and biases must be tuples of tensors")
    if len(wb.weights) != len(wb.biases) or len(wb.weights) < 2:
        raise InputError(
            f"{name} must have as many bias as weight tensors and at least two layers (one hidden layer), got "
            f"{len(wb.weights)} and {len(wb.biases)}"
        )
    for k, (w, b) in enumerate(zip(wb.weights, wb.biases)):
        if not isinstance(w, torch.Tensor) or not isinstance(b, torch.Tensor):
            raise InputError(f"{name}: layer {k} is not made of tensors")
        if (
            w.dim() != wb.weights[0].dim()
            or w.dim() not in (3, 4)
            or b.dim() != 2
            or w.shape[0] != b.shape[0]
            or w.shape[2] != b.shape[1]
        ):
            raise InputError(
                f"{name}: layer {k} has weight {tuple(w.shape)} and bias {tuple(b.shape)}",
                "expected (B, d_in, d_out) and (B, d_out), or (B, d_in, d_out, F) in every layer of a CNN",
            )
        if k and (w.shape[1] != wb.weights[k - 1].shape[2] or w.shape[0] != wb.weights[0].shape[0]):
            raise InputError(
                f"{name}: layer {k} has weight {tuple(w.shape)}, layer {k - 1} gives {tuple(wb.weights[k - 1].shape)}"
            )
        if w.numel() == 0:
            raise InputError(f"{name}: layer {k} is empty", "give at least one network of non-zero widths")
        for t in (w, b):
            if not torch.is_floating_point(t):
                raise InputError(f"{name}: layer {k} has dtype {t.dtype}, expected floating point")
            if not bool(torch.isfinite(t).all()):
                raise InputError(f"{name}: layer {k} has non-finite (NaN or inf) values")
    return wb


def check_same_architecture(a: WeightBatch, b: WeightBatch, names: tuple[str, str] = ("a", "b")) -> None:
    """Check that two weight batches share one architecture.

    Parameters
    ----------
    a, b : WeightBatch
        The two batches.
    names : tuple of str, default ("a", "b")
        Their names in messages.

    Raises
    ------
    InputError
        Naming ``names``, when ``a`` and ``b`` have different widths.
    """
    if a.widths != b.widths:
        raise InputError(
            f"{names[0]} has widths {a.widths} but {names[1]} has {b.widths}",
            "alignment needs two networks of the same architecture",
        )
    if (a.convolutional, a.features) != (b.convolutional, b.features):
        raise InputError(
            f"{names[0]} has kernel features {a.features} but {names[1]} has {b.features}"
            + ("" if a.convolutional == b.convolutional else " (one is a CNN, the other an MLP)"),
            "alignment needs two networks of the same architecture",
        )


# -------------------------------------------------------------------------------------------- permutations
def check_perms(
    perms: Sequence[torch.Tensor], hidden: Sequence[int], batch: int, name: str = "perms"
) -> list[torch.Tensor]:
    """Validate hard permutations for hidden widths ``hidden``.

    Parameters
    ----------
    perms : sequence of torch.Tensor
        One integer index tensor per hidden layer, ``(d,)`` (broadcast over the batch) or ``(B, d)``.
    hidden : sequence of int
        The hidden widths ``d_1 .. d_{M-1}``.
    batch : int
        The number of networks ``B``.
    name : str, default "perms"
        The argument's name in messages.

    Returns
    -------
    list of torch.Tensor
        ``(B, d)`` int64 index tensors, one per hidden layer.

    Raises
    ------
    InputError
        When ``perms`` is not a list of one tensor per hidden layer, or a tensor is not integer, has the wrong
        shape or is not a permutation of ``0 .. d - 1``.
    """
    if not isinstance(perms, (list, tuple)) or len(perms) != len(hidden):
        raise InputError(f"{name} must be a list of {len(hidden)} index tensors, one per hidden layer")
    out = []
    for l, (p, d) in enumerate(zip(perms, hidden)):
        p = torch.as_tensor(p)
        if p.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
            raise InputError(f"{name}[{l}] must hold integer indices, got {p.dtype}")
        p = p.long()
        if p.dim() == 1:
            p = p.unsqueeze(0).expand(batch, -1)
        if p.shape != (batch, d):
            raise InputError(f"{name}[{l}] has shape {tuple(p.shape)}, expected ({batch}, {d}) or ({d},)")
        if not torch.equal(p.sort(dim=1).values, torch.arange(d).expand(batch, d)):
            raise InputError(f"{name}[{l}] is not a permutation of 0..{d - 1}")
        out.append(p)
    return out


def permute_hard(wb: WeightBatch, perms: Sequence[torch.Tensor]) -> WeightBatch:
    """Apply index permutations to the hidden layers (no validation).

    Parameters
    ----------
    wb : WeightBatch
        ``B`` networks.
    perms : sequence of torch.Tensor
        ``perms[l]`` of shape ``(B, d_{l+1})``: neuron ``i`` of hidden layer ``l + 1`` of the result is neuron
        ``perms[l][i]`` of ``wb`` (see :func:`check_perms` to validate them).

    Returns
    -------
    WeightBatch
        The permuted networks, computing the same functions.
    """
    M = len(wb.weights)
    weights, biases = list(wb.weights), list(wb.biases)
    for l, p in enumerate(perms):  # p permutes the outputs of layer l and the inputs of layer l + 1
        w = weights[l]
        extra = (1,) * (w.dim() - 3)  # the feature axis of a CNN's weights
        weights[l] = torch.gather(w, 2, p.reshape(p.shape[0], 1, -1, *extra).expand(-1, w.shape[1], -1, *w.shape[3:]))
        biases[l] = torch.gather(biases[l], 1, p)
        if l + 1 < M:
            w = weights[l + 1]
            idx = p.reshape(p.shape[0], -1, 1, *extra).expand(-1, -1, w.shape[2], *w.shape[3:])
            weights[l + 1] = torch.gather(w, 1, idx)
    return WeightBatch(tuple(weights), tuple(biases))


def permute_soft(wb: WeightBatch, mats: Sequence[torch.Tensor]) -> WeightBatch:
    """Apply (doubly stochastic) matrices to the hidden layers.

    ``W_k <- P_k W_k P_{k+1}^T`` and ``b_k <- P_{k+1} b_k`` (in the fan-in-first layout, as the official code).

    Parameters
    ----------
    wb : WeightBatch
        ``B`` networks.
    mats : sequence of torch.Tensor
        ``mats[l]`` of shape ``(B, d, d)`` for each hidden layer of width ``d``, with ``new_i = sum_j P[i, j]
        old_j``.

    Returns
    -------
    WeightBatch
        The transformed networks (differentiable in ``mats``).
    """
    M = len(wb.weights)
    weights, biases = list(wb.weights), list(wb.biases)
    for l, P in enumerate(mats):
        if weights[l].dim() == 3:
            weights[l] = weights[l] @ P.transpose(1, 2)
        else:  # a CNN: (B, d_in, d_out, F)
            weights[l] = torch.einsum("biof,bpo->bipf", weights[l], P)
        biases[l] = (P @ biases[l].unsqueeze(-1)).squeeze(-1)
        if l + 1 < M:
            w = weights[l + 1]
            weights[l + 1] = P @ w if w.dim() == 3 else torch.einsum("bpi,biof->bpof", P, w)
    return WeightBatch(tuple(weights), tuple(biases))


def perm_matrices(perms: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Hard index permutations as 0/1 matrices with ``P[i, p[i]] = 1``.

    Parameters
    ----------
    perms : sequence of torch.Tensor
        Index permutations ``(B, d)``.

    Returns
    -------
    list of torch.Tensor
        float32 matrices ``(B, d, d)``, one per permutation.
    """
    return [F.one_hot(p, p.shape[-1]).float() for p in perms]


def random_perms(hidden: Sequence[int], batch: int, generator: torch.Generator) -> list[torch.Tensor]:
    """Uniform random permutations for each hidden width.

    Parameters
    ----------
    hidden : sequence of int
        The hidden widths.
    batch : int
        Permutations per width.
    generator : torch.Generator
        Source of randomness.

    Returns
    -------
    list of torch.Tensor
        int64 index tensors ``(batch, d)``, one per width.
    """
    return [torch.argsort(torch.rand(batch, d, generator=generator), dim=1) for d in hidden]


def invert(perms: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The inverse index permutations: ``permute_hard(permute_hard(x, p), invert(p)) == x``.

    Parameters
    ----------
    perms : sequence of torch.Tensor
        Index permutations ``(..., d)``.

    Returns
    -------
    list of torch.Tensor
        The inverses, same shapes.
    """
    return [torch.argsort(p, dim=-1) for p in perms]


def compose(outer: Sequence[torch.Tensor], inner: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Compose index permutations: ``permute(permute(x, inner), outer) == permute(x, compose(outer, inner))``.

    Parameters
    ----------
    outer : sequence of torch.Tensor
        Index permutations ``(..., d)`` applied second.
    inner : sequence of torch.Tensor
        Index permutations of the same shapes, applied first.

    Returns
    -------
    list of torch.Tensor
        Index ``inner[outer[i]]`` at position ``i``, per layer.
    """
    return [torch.gather(q, -1, p) for p, q in zip(outer, inner)]


# ----------------------------------------------------------------------------------------- merging, forward
def lerp(a: WeightBatch, b: WeightBatch, alpha: torch.Tensor | float) -> WeightBatch:
    """Linear interpolation ``alpha * a + (1 - alpha) * b`` per network, the official convention.

    Parameters
    ----------
    a, b : WeightBatch
        Networks of one architecture and batch size ``B``.
    alpha : torch.Tensor or float
        A float (or 0-d tensor) for all networks, or ``(B,)``, one per network.

    Returns
    -------
    WeightBatch
        The interpolated networks.
    """
    if not isinstance(alpha, torch.Tensor):
        alpha = torch.tensor(float(alpha))
    ab = alpha.reshape(-1, 1) if alpha.dim() else alpha

    def aw(x: torch.Tensor) -> torch.Tensor:
        return alpha.reshape(-1, *(1,) * (x.dim() - 1)) if alpha.dim() else alpha

    return WeightBatch(
        tuple(aw(x) * x + (1 - aw(x)) * y for x, y in zip(a.weights, b.weights)),
        tuple(ab * x + (1 - ab) * y for x, y in zip(a.biases, b.biases)),
    )


def forward(wb: WeightBatch, x: torch.Tensor) -> torch.Tensor:
    """Logits of every network on its inputs.

    Parameters
    ----------
    wb : WeightBatch
        ``B`` networks.
    x : torch.Tensor
        Shared inputs ``(N, d_0)``, or per-network inputs ``(B, N, d_0)``.

    Returns
    -------
    torch.Tensor
        ``(B, N, d_M)`` logits.
    """
    h = x if x.dim() == 3 else x.unsqueeze(0).expand(wb.size, -1, -1)
    M = len(wb.weights)
    for k in range(M):
        h = torch.baddbmm(wb.biases[k].unsqueeze(1), h, wb.weights[k])
        if k < M - 1:
            h = torch.relu(h)
    return h


def loss_and_accuracy(wb: WeightBatch, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-network mean cross-entropy and accuracy on ``(x, y)``.

    Parameters
    ----------
    wb : WeightBatch
        ``B`` networks.
    x : torch.Tensor
        Inputs ``(N, d_0)`` (or ``(B, N, d_0)``, see :func:`forward`).
    y : torch.Tensor
        Labels ``(N,)`` shared by all networks, or ``(B, N)``.

    Returns
    -------
    tuple of torch.Tensor
        ``(loss, accuracy)``, two ``(B,)`` tensors.
    """
    logits = forward(wb, x)
    yy = y.unsqueeze(0).expand(wb.size, -1) if y.dim() == 1 else y
    ce = F.cross_entropy(logits.transpose(1, 2), yy, reduction="none").mean(1)
    acc = (logits.argmax(-1) == yy).float().mean(1)
    return ce, acc


def interpolation_losses(
    a: WeightBatch, b: WeightBatch, x: torch.Tensor, y: torch.Tensor, n_alphas: int = 16
) -> tuple[torch.Tensor, torch.Tensor]:
    """Test loss along the linear path ``alpha * a + (1 - alpha) * b`` at ``n_alphas`` points of ``[0, 1]``.

    Parameters
    ----------
    a, b : WeightBatch
        ``B`` pairs of networks of one architecture.
    x : torch.Tensor
        Inputs ``(N, d_0)``.
    y : torch.Tensor
        Labels ``(N,)``.
    n_alphas : int, default 16
        Evenly spaced points of ``[0, 1]``, both ends included (16 in the official evaluation,
        ``calc_lmc_loss``).

    Returns
    -------
    alphas : torch.Tensor
        ``(n_alphas,)``.
    losses : torch.Tensor
        ``(B, n_alphas)`` mean cross-entropies (computed without gradients).
    """
    alphas = torch.linspace(0.0, 1.0, n_alphas)
    with torch.no_grad():
        losses = torch.stack([loss_and_accuracy(lerp(a, b, float(t)), x, y)[0] for t in alphas], dim=1)
    return alphas, losses


def barrier_and_auc(alphas: torch.Tensor, losses: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Loss barrier and area under the excess-loss curve, per pair.

    The barrier is ``max_alpha L(merge) - [alpha L(a) + (1 - alpha) L(b)]`` (Frankle et al.; the paper's
    "barrier"); the area is that of the excess-loss curve (trapezoid rule over ``alpha in [0, 1]``).

    Parameters
    ----------
    alphas : torch.Tensor
        ``(n_alphas,)`` increasing from 0 (network ``b``) to 1 (network ``a``), as
        :func:`interpolation_losses` returns them.
    losses : torch.Tensor
        ``(B, n_alphas)`` losses along the path.

    Returns
    -------
    barrier : torch.Tensor
        ``(B,)``.
    auc : torch.Tensor
        ``(B,)``.
    """
    la, lb = losses[:, -1:], losses[:, :1]  # alpha = 1 is network a, alpha = 0 is network b
    excess = losses - (alphas * la + (1 - alphas) * lb)
    auc = torch.trapezoid(excess, alphas, dim=1)
    return excess.max(dim=1).values, auc


def mlp_permute(net: nn.Module, perms: Sequence[torch.Tensor]) -> nn.Module:
    """``net`` with its hidden neurons permuted; the function computed is unchanged.

    Parameters
    ----------
    net : nn.Module
        An MLP (see :func:`mlp_linears`: any elementwise activation, a leading Flatten, bias-free layers) or a
        CNN (see :func:`network_layers`: its channels are permuted).
    perms : sequence of torch.Tensor
        One index permutation ``(d,)`` or ``(1, d)`` per hidden layer: neuron ``i`` of hidden layer ``l``
        becomes old neuron ``perms[l][i]``.

    Returns
    -------
    nn.Module
        A new network.

    Raises
    ------
    InputError
        When ``net`` is not such a network or ``perms`` are not permutations of its hidden widths.
    """
    wb = from_sequential(net, "net")
    ps = check_perms(perms, wb.hidden, 1)
    return write_into(net, permute_hard(wb, ps))


def mlp_merge(a: nn.Module, b: nn.Module, alpha: float = 0.5, perms: Sequence[torch.Tensor] | None = None) -> nn.Module:
    """``alpha * a + (1 - alpha) * permute(b, perms)`` as a new network.

    Parameters
    ----------
    a, b : nn.Module
        MLPs (see :func:`mlp_linears`) or CNNs (see :func:`network_layers`) of one architecture and dtype.
    alpha : float, default 0.5
        Weight of ``a``.
    perms : sequence of torch.Tensor, optional
        One index permutation per hidden layer applied to ``b`` (see :func:`mlp_permute`); ``None``: no
        alignment.

    Returns
    -------
    nn.Module
        The merged network.

    Raises
    ------
    InputError
        When ``alpha`` is not a finite real number, ``a`` or ``b`` is not such an MLP, their architectures differ, or
        ``perms`` are not permutations of the hidden widths.
    """
    wa, wb = from_sequential(a, "a"), from_sequential(b, "b")
    check_same_architecture(wa, wb)
    check_same_dtype(a, b)
    alpha = check_float(alpha, "alpha")
    if perms is not None:
        wb = permute_hard(wb, check_perms(perms, wb.hidden, 1))
    return write_into(a, lerp(wa, wb, float(alpha)))


# ------------------------------------------------------------------------------------------------ model zoos
@dataclass
class Zoo:
    """A zoo of trained MLPs of one architecture as a :class:`WeightBatch`, with their data and a split of the
    networks (the training data of Deep-Align).

    Parameters
    ----------
    nets : WeightBatch
        Every network of the zoo.
    data : icml24.data.Split
        The data set the networks were trained on; its training part feeds Deep-Align's interpolation loss.
    splits : dict of str to torch.Tensor
        ``"train"``, ``"val"``, ``"test"``: network indices.
    seeds : tuple of int, default ()
        The initialisation seed of each network.
    test_loss, test_acc : torch.Tensor, optional
        Each network's test cross-entropy and accuracy.
    template : nn.Module, optional
        A network of the zoo's architecture that :meth:`network` fills with a zoo network's weights (a CNN
        zoo's modules); None: the networks are ReLU MLPs rebuilt by :func:`to_sequential`.
    """

    nets: WeightBatch
    data: Split
    splits: dict[str, torch.Tensor]
    seeds: tuple[int, ...] = ()
    test_loss: torch.Tensor = field(default_factory=lambda: torch.empty(0))
    test_acc: torch.Tensor = field(default_factory=lambda: torch.empty(0))
    template: nn.Module | None = None

    @property
    def widths(self) -> tuple[int, ...]:
        """The architecture ``(d_0, ..., d_M)``."""
        return self.nets.widths

    def __len__(self) -> int:
        return self.nets.size

    def split(self, name: str) -> WeightBatch:
        """The networks of split ``name`` (``"train"``, ``"val"`` or ``"test"``).

        Parameters
        ----------
        name : str

        Returns
        -------
        WeightBatch
        """
        if name not in self.splits:
            raise InputError(f"split must be one of {sorted(self.splits)}, got {name!r}")
        return self.nets[self.splits[name]]

    def network(self, index: int) -> nn.Module:
        """Network ``index`` as an ``nn.Sequential`` of Linear and ReLU layers (a copy of ``template`` when the
        zoo has one, e.g. a CNN zoo).

        Parameters
        ----------
        index : int
            In ``0 .. len(zoo) - 1``.

        Returns
        -------
        torch.nn.Module
        """
        index = check_int(index, "index", min_val=0, max_val=len(self) - 1)
        if self.template is not None:
            return write_into(self.template, self.nets, index)
        return to_sequential(self.nets, index)

    @classmethod
    def from_networks(
        cls, nets: Iterable[nn.Sequential], data: Split, *, val: int = 0, test: int = 0, seed: int = 0
    ) -> "Zoo":
        """A zoo of your own networks, split at random into ``val`` and ``test`` networks and the rest for training.

        Parameters
        ----------
        nets : iterable of torch.nn.Module
            MLPs or CNNs of one architecture (a mismatch raises :class:`InputError` naming the network).
        data : icml24.data.Split
            Their training data.
        val, test : int, default 0
        seed : int, default 0
            Seed of the split.

        Returns
        -------
        Zoo
        """
        if not isinstance(data, Split):
            raise InputError(f"data must be an icml24.data.Split, got {type(data).__name__}")
        if isinstance(nets, nn.Module):
            nets = [nets]
        elif isinstance(nets, Iterable) and not isinstance(nets, (str, bytes, dict)):
            nets = list(nets)
        wb = from_sequential(nets, "nets")
        template = copy.deepcopy(nets[0]) if wb.convolutional else None
        return cls(wb, data, split_networks(wb.size, val, test, seed), template=template)


def train_zoo(
    n: int = 80,
    *,
    widths: Sequence[int] = (64, 32, 32, 10),
    val: int = 10,
    test: int = 10,
    steps: int = 150,
    lr: float = 1e-2,
    batch_size: int | None = None,
    seed: int = 0,
    data: Split | None = None,
) -> Zoo:
    """Train a zoo of ``n`` MLPs on digits (``icml24.data.zoo.mlp_zoo``), as a :class:`Zoo`.

    Parameters
    ----------
    n : int, default 80
        Number of networks; network ``i`` is initialised from seed ``1000 * seed + i``.
    widths : sequence of int, default (64, 32, 32, 10)
    val, test : int, default 10
        Validation and held-out networks; the rest train Deep-Align.
    steps : int, default 150
        Full-batch Adam steps (mini-batches when ``batch_size`` is given).
    lr : float, default 1e-2
    batch_size : int or None, default None
    seed : int, default 0
    data : icml24.data.Split, optional
        Replaces digits (e.g. ``icml24.data.fashion_mnist(flatten=True)``).

    Returns
    -------
    Zoo
    """
    z = mlp_zoo(n, widths=widths, val=val, test=test, steps=steps, lr=lr, batch_size=batch_size, seed=seed, data=data)
    return Zoo(WeightBatch.from_linear(z.weights, z.biases), z.data, z.splits, z.seeds, z.test_loss, z.test_acc)


__all__ = [
    "WeightBatch",
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
    "check_weight_batch",
    "check_same_architecture",
    "check_perms",
    "permute_hard",
    "permute_soft",
    "perm_matrices",
    "random_perms",
    "invert",
    "compose",
    "lerp",
    "forward",
    "loss_and_accuracy",
    "interpolation_losses",
    "barrier_and_auc",
    "mlp_permute",
    "mlp_merge",
    "Zoo",
    "train_zoo",
]
