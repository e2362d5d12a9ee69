"""The models :class:`~.network.FeedbackNetwork` trains out of the box, and the aligned initialisation.

:func:`make_mlp` and :func:`make_cnn` build ``nn.Sequential`` stacks with the Gaussian init of the claims (from a
private generator); :func:`align_init_` moves a network's weights toward its feedback, the better-aligned arm of
the multi-class claim.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_bool, check_float, check_int, check_seed
from .network import WEIGHTED, FeedbackNetwork

WIDTH_MAX = 2**31 - 1  # a layer width torch can allocate a weight for (larger ones overflow its size type)

_ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU,
    "leaky_relu": lambda: nn.LeakyReLU(0.1),
    "identity": nn.Identity,
    "linear": nn.Identity,
    "tanh": nn.Tanh,
}


def make_mlp(
    sizes: Sequence[int],
    activation: str = "relu",
    *,
    init_scale: float = 1.0,
    bias: bool = True,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> nn.Sequential:
    """An MLP ``sizes[0] -> ... -> sizes[-1]`` with Gaussian init ``W ~ N(0, init_scale^2 / fan_in)``, ``b = 0``.

    Parameters
    ----------
    sizes : sequence of int
        Layer widths, at least two.
    activation : {"relu", "leaky_relu", "identity", "linear", "tanh"}, default "relu"
        Between Linear layers; leaky_relu has slope 0.1; tanh is not homogeneous (wrap the MLP with
        ``FeedbackNetwork(..., homogeneous=False)``).
    init_scale : float, default 1.0
        ``0.1`` is the small-initialisation arm of the claims.
    bias : bool, default True
    seed : int, default 0
        Seeds a private generator.
    dtype : torch.dtype, default torch.float32
        ``torch.float32`` or ``torch.float64``.

    Returns
    -------
    torch.nn.Sequential
    """
    if (
        isinstance(sizes, (str, bytes))
        or not isinstance(sizes, Sequence)
        or len(sizes) < 2
        or any(isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= WIDTH_MAX for s in sizes)
    ):
        raise InputError(f"sizes must be at least two integers in [1, 2**31 - 1], got {sizes!r}")
    if not isinstance(activation, str) or activation not in _ACTIVATIONS:
        raise InputError(f"activation must be one of {', '.join(_ACTIVATIONS)}, got {activation!r}")
    init_scale = check_float(init_scale, "init_scale", min_val=0.0, include_boundaries="right")
    seed = check_seed(seed)
    bias = check_bool(bias, "bias")
    if dtype not in (torch.float32, torch.float64):
        raise InputError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        lin = nn.Linear(a, b, bias=bias, dtype=dtype)
        with torch.no_grad():
            lin.weight.copy_(torch.randn(b, a, generator=gen, dtype=torch.float64) * (init_scale / math.sqrt(a)))
            if bias:
                lin.bias.zero_()
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(_ACTIVATIONS[activation]())
    return nn.Sequential(*layers)


def make_cnn(
    in_channels: int = 1,
    image_size: int = 28,
    channels: Sequence[int] = (8, 16),
    n_classes: int = 10,
    *,
    kernel_size: int = 3,
    pool: str = "avg",
    init_scale: float = 1.0,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
) -> nn.Sequential:
    """A small CNN: ``[Conv2d(k, padding k//2) -> ReLU -> 2x2 pool] x len(channels) -> Flatten -> Linear``.

    Gaussian init ``W ~ N(0, init_scale^2 / fan_in)`` (``fan_in = in_c kh kw``), zero biases, from a private
    generator: the setting of the Fashion-MNIST comparison (:func:`~.experiments.fashion_mnist_cnn`).

    Parameters
    ----------
    in_channels : int, default 1
    image_size : int, default 28
        Height and width of the input; divisible by ``2 ** len(channels)``.
    channels : sequence of int, default (8, 16)
        Output channels of the convolutions.
    n_classes : int, default 10
    kernel_size : int, default 3
        Odd.
    pool : {"avg", "max"}, default "avg"
    init_scale : float, default 1.0
    seed : int, default 0
    dtype : torch.dtype, default torch.float32

    Returns
    -------
    torch.nn.Sequential
    """
    in_channels = check_int(in_channels, "in_channels", min_val=1, max_val=WIDTH_MAX)
    image_size = check_int(image_size, "image_size", min_val=1, max_val=WIDTH_MAX)
    n_classes = check_int(n_classes, "n_classes", min_val=2, max_val=WIDTH_MAX)
    kernel_size = check_int(kernel_size, "kernel_size", min_val=1, max_val=WIDTH_MAX)
    if kernel_size % 2 == 0:
        raise InputError(f"kernel_size must be odd, got {kernel_size}")
    if (
        isinstance(channels, (str, bytes))
        or not isinstance(channels, Sequence)
        or len(channels) < 1
        or any(isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= WIDTH_MAX for c in channels)
    ):
        raise InputError(f"channels must be one or more integers in [1, 2**31 - 1], got {channels!r}")
    if image_size % (2 ** len(channels)):
        raise InputError(f"image_size {image_size} must be divisible by 2**len(channels) = {2 ** len(channels)}")
    if pool not in ("avg", "max"):
        raise InputError(f"pool must be 'avg' or 'max', got {pool!r}")
    init_scale = check_float(init_scale, "init_scale", min_val=0.0, include_boundaries="right")
    seed = check_seed(seed)
    if dtype not in (torch.float32, torch.float64):
        raise InputError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}")
    gen = torch.Generator(device="cpu").manual_seed(seed)
    layers: list[nn.Module] = []
    c_in, side = in_channels, image_size
    for c in channels:
        conv = nn.Conv2d(c_in, c, kernel_size, padding=kernel_size // 2, dtype=dtype)
        layers += [conv, nn.ReLU(), nn.AvgPool2d(2) if pool == "avg" else nn.MaxPool2d(2)]
        c_in, side = c, side // 2
    layers += [nn.Flatten(), nn.Linear(c_in * side * side, n_classes, dtype=dtype)]
    with torch.no_grad():
        for m in layers:
            if isinstance(m, WEIGHTED):
                fan_in = m.weight[0].numel()
                m.weight.copy_(
                    torch.randn(m.weight.shape, generator=gen, dtype=torch.float64) * (init_scale / math.sqrt(fan_in))
                )
                m.bias.zero_()
    return nn.Sequential(*layers)


@torch.no_grad()
def align_init_(net: FeedbackNetwork, strength: float) -> FeedbackNetwork:
    """Start closer to alignment: ``W_j <- (1 - lam) W_j + lam c B_j^T``, rescaled to keep ``||W_j||``.

    Applied to every layer whose feedback reaches a hidden layer (``j >= 2``), with ``c = ||W_j|| / ||B_j||``.
    The "better-aligned initialisation" arm of the multi-class claim ([inferred]: the paper's exact scheme is
    in its PDF). FA only (DFA: its last layer only).

    Why mix ``B^T`` into ``W``: the claim is causal, "better alignment, better multi-class FA", so the arm must
    change the alignment ``cos(B, W^T)`` and nothing else. Alignment is a relation between ``W`` and ``B``: any
    intervention on it moves one toward the other. This one leaves the *distribution* of ``W`` unchanged: with
    :func:`make_mlp`'s init and the default ``feedback_std``, ``W_j`` and ``B_j^T`` are independent Gaussian
    matrices of the same law (``c ~ 1``), their mix rescaled to ``||W_j||`` is again a matrix of that law, only
    correlated with ``B_j`` (cosine about ``lam / sqrt((1 - lam)^2 + lam^2)``, 0.71 at ``lam = 0.5``). Nor does
    it hand the network the task: ``B`` is random, unrelated to the data. The alternative, mixing ``W^T`` into
    ``B`` and keeping ``W``, was measured too: its gain over FA stayed within noise, below this one's.

    Parameters
    ----------
    net : FeedbackNetwork
        Changed in place.
    strength : float
        ``lam`` in ``[0, 1]``.

    Returns
    -------
    FeedbackNetwork
        ``net``.
    """
    if not isinstance(net, FeedbackNetwork):
        raise InputError(f"net must be a FeedbackNetwork, got {type(net).__name__}")
    strength = check_float(strength, "strength", min_val=0.0, max_val=1.0)
    if net.rule.name not in ("fa", "dfa"):
        raise InputError(
            f"net: align_init_ needs fixed feedback of the shape of W^T; rule {net.rule.name!r} has none",
            "use rule='fa'",
        )
    if any(isinstance(l, nn.Conv2d) for l in net.layers):
        raise InputError("net: align_init_ supports MLPs (Linear layers only)")
    layers = range(1, len(net.linears)) if net.rule.name == "fa" else [len(net.linears) - 1]
    for j in layers:
        w = net.linears[j].weight
        b_t = net.feedback_matrix(j).T
        norm = w.norm()
        mixed = (1.0 - strength) * w + strength * (norm / b_t.norm()) * b_t
        w.copy_(mixed * (norm / mixed.norm()))
    return net


__all__ = ["make_mlp", "make_cnn", "align_init_"]
