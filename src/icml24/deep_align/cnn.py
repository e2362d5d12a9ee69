"""Convolutional networks for Deep-Align (the paper's CNN experiments, Navon et al., ICML 2024, Sec. 6): a
small CNN family, a zoo of them trained from different seeds, and the forward pass of many CNNs at once (one
grouped convolution) that the zoo's training and the interpolation losses use.

The paper's CNN zoos are CIFAR-10 (and STL-10) classifiers. CIFAR-10 is not available offline, so the zoo here
is trained on Fashion-MNIST read from the data root (``$ICML24_DATA``, ``fashion-mnist/FashionMNIST/raw/``).

The family (:class:`CNNSpec`): ``Conv2d(c_0, c_1, k, stride, padding) -> ReLU -> ... -> Conv2d(.., c_L) ->
ReLU -> AdaptiveAvgPool2d(1) -> Flatten -> Linear(c_L, classes)``. Its weights as a
:class:`~icml24.deep_align.weights.WeightBatch` are ``(B, c_{k}, c_{k+1}, k * k)`` per Conv2d and
``(B, c_L, classes, 1)`` for the Linear layer; the hidden channels ``c_1 .. c_L`` are permuted by alignment.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..data import Split
from ..errors import InputError
from ..validation import check_float, check_int, check_seed, check_tensor
from .evaluation import lerp
from .weights import WeightBatch
from .world import LR_MAX, split_networks
from .zoo import Zoo


@dataclass(frozen=True)
class CNNSpec:
    """A family of small CNNs with global average pooling and one Linear classifier.

    Parameters
    ----------
    channels : tuple of int, default (1, 8, 16, 16)
        Input channels, then the output channels of each Conv2d (at least one Conv2d).
    classes : int, default 10
        Outputs of the Linear layer.
    kernel : int, default 3
        Square kernel size of every Conv2d.
    stride : int, default 2
        Stride of every Conv2d.
    padding : int, default 1
        Zero padding of every Conv2d.
    """

    channels: tuple[int, ...] = (1, 8, 16, 16)
    classes: int = 10
    kernel: int = 3
    stride: int = 2
    padding: int = 1

    def __post_init__(self) -> None:
        if isinstance(self.channels, (str, bytes)) or not isinstance(self.channels, Sequence):
            raise InputError(f"channels must be a sequence of positive integers, got {self.channels!r}")
        if len(self.channels) < 2:
            raise InputError(f"channels must give the input channels and at least one Conv2d's, got {self.channels}")
        object.__setattr__(self, "channels", tuple(check_int(c, "channels", min_val=1) for c in self.channels))
        check_int(self.classes, "classes", min_val=2)
        check_int(self.kernel, "kernel", min_val=1)
        check_int(self.stride, "stride", min_val=1)
        check_int(self.padding, "padding", min_val=0)

    @property
    def widths(self) -> tuple[int, ...]:
        """The channels and the classes ``(c_0, ..., c_L, classes)``: the widths of the weight space."""
        return self.channels + (self.classes,)

    @property
    def features(self) -> tuple[int, ...]:
        """Features per weight entry: ``kernel ** 2`` per Conv2d, 1 for the Linear layer (after global pooling)."""
        return (self.kernel**2,) * (len(self.channels) - 1) + (1,)

    def module(self) -> nn.Sequential:
        """A freshly initialised network of this family (PyTorch's default initialisation).

        Returns
        -------
        nn.Sequential
        """
        layers: list[nn.Module] = []
        for cin, cout in zip(self.channels[:-1], self.channels[1:]):
            layers += [nn.Conv2d(cin, cout, self.kernel, self.stride, self.padding), nn.ReLU()]
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(self.channels[-1], self.classes)]
        return nn.Sequential(*layers)


def check_cnn_batch(wb: object, spec: CNNSpec, name: str = "nets") -> WeightBatch:
    """Check that ``wb`` holds CNNs of the family ``spec``.

    Parameters
    ----------
    wb : object
    spec : CNNSpec
    name : str, default "nets"
        The argument's name in messages.

    Returns
    -------
    WeightBatch
        ``wb`` itself.

    Raises
    ------
    InputError
        When ``wb`` is not a WeightBatch of convolutional networks of ``spec``'s widths and kernel features.
    """
    if not isinstance(wb, WeightBatch):
        raise InputError(f"{name} must be a WeightBatch of CNNs, got {type(wb).__name__}")
    if not wb.convolutional or wb.widths != spec.widths or wb.features != spec.features:
        raise InputError(
            f"{name} holds networks of widths {wb.widths} and features {wb.features}, expected CNNs of "
            f"{spec.widths} and {spec.features}"
        )
    return wb


def cnn_forward(wb: WeightBatch, x: torch.Tensor, spec: CNNSpec) -> torch.Tensor:
    """Logits of ``B`` CNNs of the family ``spec`` in one grouped convolution per layer (no validation).

    Parameters
    ----------
    wb : WeightBatch
        ``B`` networks of ``spec`` (see :func:`check_cnn_batch`).
    x : torch.Tensor
        Images ``(N, c_0, H, W)`` shared by all networks, or ``(B, N, c_0, H, W)``, one batch per network.
    spec : CNNSpec

    Returns
    -------
    torch.Tensor
        ``(B, N, classes)``.
    """
    B = wb.size
    if x.dim() == 4:
        N = x.shape[0]
        h = x.repeat(1, B, 1, 1)  # (N, B * c_0, H, W): network b reads channels b * c_0 ...
    else:
        N = x.shape[1]
        h = x.transpose(0, 1).reshape(N, B * x.shape[2], *x.shape[3:])
    k = spec.kernel
    for w, b in zip(wb.weights[:-1], wb.biases[:-1]):  # (B, c_in, c_out, k * k)
        wk = w.permute(0, 2, 1, 3).reshape(B * w.shape[2], w.shape[1], k, k)
        h = F.relu(F.conv2d(h, wk, b.reshape(-1), spec.stride, spec.padding, groups=B))
    h = h.mean(dim=(2, 3)).reshape(N, B, -1)  # global average pooling
    return torch.einsum("nbc,bck->bnk", h, wb.weights[-1][..., 0]) + wb.biases[-1].unsqueeze(1)


@torch.no_grad()
def cnn_loss_and_accuracy(
    wb: WeightBatch, x: torch.Tensor, y: torch.Tensor, spec: CNNSpec, chunk: int = 500, nets_per_pass: int = 8
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-network mean cross-entropy and accuracy on ``(x, y)``, in chunks of images and of networks (no
    gradients; the chunks bound the memory of the feature maps, ``chunk * nets_per_pass`` images at a time).

    Parameters
    ----------
    wb : WeightBatch
        ``B`` networks of ``spec``.
    x : torch.Tensor
        Images ``(N, c_0, H, W)``.
    y : torch.Tensor
        Labels ``(N,)``.
    spec : CNNSpec
    chunk : int, default 500
        Images per forward pass.
    nets_per_pass : int, default 8
        Networks per forward pass.

    Returns
    -------
    tuple of torch.Tensor
        ``(loss, accuracy)``, two ``(B,)`` tensors.
    """
    ce = torch.zeros(wb.size, dtype=torch.float64)
    hits = torch.zeros(wb.size, dtype=torch.float64)
    for j in range(0, wb.size, nets_per_pass):
        part = wb[j : j + nets_per_pass]
        for i in range(0, len(x), chunk):
            logits = cnn_forward(part, x[i : i + chunk], spec)
            yy = y[i : i + chunk].unsqueeze(0).expand(part.size, -1)
            ce[j : j + part.size] += F.cross_entropy(logits.transpose(1, 2), yy, reduction="none").double().sum(1)
            hits[j : j + part.size] += (logits.argmax(-1) == yy).double().sum(1)
    return (ce / len(x)).float(), (hits / len(x)).float()


def cnn_interpolation_losses(
    a: WeightBatch, b: WeightBatch, x: torch.Tensor, y: torch.Tensor, spec: CNNSpec, n_alphas: int = 16
) -> tuple[torch.Tensor, torch.Tensor]:
    """Test loss along the linear path ``alpha * a + (1 - alpha) * b`` of ``B`` pairs of CNNs.

    Parameters
    ----------
    a, b : WeightBatch
        ``B`` pairs of networks of ``spec``.
    x : torch.Tensor
        Images ``(N, c_0, H, W)``.
    y : torch.Tensor
        Labels ``(N,)``.
    spec : CNNSpec
    n_alphas : int, default 16
        Evenly spaced points of ``[0, 1]`` (official 16).

    Returns
    -------
    alphas : torch.Tensor
        ``(n_alphas,)``.
    losses : torch.Tensor
        ``(B, n_alphas)``, as :func:`~icml24.deep_align.evaluation.interpolation_losses` for MLPs.
    """
    alphas = torch.linspace(0.0, 1.0, n_alphas)
    losses = torch.stack([cnn_loss_and_accuracy(lerp(a, b, float(t)), x, y, spec)[0] for t in alphas], dim=1)
    return alphas, losses


def init_cnns(spec: CNNSpec, seeds: Sequence[int]) -> WeightBatch:
    """CNNs of ``spec`` initialised as PyTorch initialises Conv2d and Linear layers (uniform in
    ``+-1 / sqrt(fan_in)`` for weights and biases), network ``i`` from ``seeds[i]``.

    Parameters
    ----------
    spec : CNNSpec
    seeds : sequence of int

    Returns
    -------
    WeightBatch
        float32, ``(B, c_in, c_out, F)`` weights.
    """
    ws: list[list[torch.Tensor]] = [[] for _ in spec.features]
    bs: list[list[torch.Tensor]] = [[] for _ in spec.features]
    for s in seeds:
        g = torch.Generator().manual_seed(int(s))
        for k, (cin, cout, f) in enumerate(zip(spec.widths[:-1], spec.widths[1:], spec.features)):
            bound = 1.0 / math.sqrt(cin * f)
            ws[k].append((torch.rand(cin, cout, f, generator=g) * 2 - 1) * bound)
            bs[k].append((torch.rand(cout, generator=g) * 2 - 1) * bound)
    return WeightBatch(tuple(torch.stack(w) for w in ws), tuple(torch.stack(b) for b in bs))


def train_cnn_zoo(
    n: int = 40,
    *,
    spec: CNNSpec | None = None,
    val: int = 5,
    test: int = 10,
    steps: int = 500,
    lr: float = 3e-3,
    batch_size: int = 64,
    seed: int = 0,
    data: Split | None = None,
    eval_images: int | None = 2000,
) -> Zoo:
    """Train ``n`` CNNs of one architecture from different seeds, all at once (Adam, own mini-batches each).

    The paper trains its CNN zoos on CIFAR-10; CIFAR-10 is not available offline, so by default the networks
    are trained on Fashion-MNIST from the data root (``icml24.data.fashion_mnist``).

    Parameters
    ----------
    n : int, default 40
        Networks; network ``i`` is initialised from seed ``1000 * seed + i`` (:func:`init_cnns`).
    spec : CNNSpec, optional
        The architecture (default ``CNNSpec()``: ``1 -> 8 -> 16 -> 16`` channels, 3x3 kernels, stride 2, 10
        classes).
    val, test : int, default 5, 10
        Validation and held-out networks; the rest train Deep-Align.
    steps : int, default 500
        Adam steps.
    lr : float, default 3e-3
    batch_size : int, default 64
        Images per step and network (each network draws its own).
    seed : int, default 0
        Seed of the initialisations, the mini-batches and the split of the networks.
    data : icml24.data.Split, optional
        Images ``(N, c_0, H, W)`` and labels; default Fashion-MNIST from the data root.
    eval_images : int or None, default 2000
        Test images of each network's reported test loss and accuracy (None: all).

    Returns
    -------
    Zoo
        With ``template = spec.module()``, so that ``zoo.network(i)`` is an ``nn.Sequential``.

    Raises
    ------
    InputError
        On bad arguments, or data whose images do not have ``spec.channels[0]`` channels or whose labels exceed
        ``spec.classes``.
    icml24.errors.DataUnavailable
        When Fashion-MNIST is needed and missing from the data root.
    """
    n = check_int(n, "n", min_val=1)
    spec = CNNSpec() if spec is None else spec
    if not isinstance(spec, CNNSpec):
        raise InputError(f"spec must be a CNNSpec, got {type(spec).__name__}")
    val = check_int(val, "val", min_val=0)
    test = check_int(test, "test", min_val=0)
    steps = check_int(steps, "steps", min_val=0)
    lr = check_float(lr, "lr", min_val=0.0, max_val=LR_MAX, include_boundaries="right")
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    seed = check_seed(seed)
    eval_images = check_int(eval_images, "eval_images", min_val=1, allow_none=True)
    if data is None:
        from ..data import fashion_mnist

        data = fashion_mnist(seed=seed)
    if not isinstance(data, Split):
        raise InputError(f"data must be an icml24.data.Split of images, got {type(data).__name__}")
    x = check_tensor(data.x_train, "data", shape=(None, spec.channels[0], None, None))
    y = data.y_train
    if int(y.max()) >= spec.classes or int(data.y_test.max()) >= spec.classes:
        raise InputError(f"data has labels beyond the {spec.classes} classes of spec")
    splits = split_networks(n, val, test, seed)
    seeds = tuple(1000 * seed + i for i in range(n))
    init = init_cnns(spec, seeds)
    params = [t.clone().requires_grad_(True) for t in init.weights + init.biases]
    M = len(init.weights)
    opt = torch.optim.Adam(params, lr=lr)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        idx = torch.randint(len(x), (n, batch_size), generator=g)
        wb = WeightBatch(tuple(params[:M]), tuple(params[M:]))
        logits = cnn_forward(wb, x[idx], spec)  # (n, batch, classes)
        # the sum over networks: each network's parameters get the gradient of its own mean loss
        loss = F.cross_entropy(logits.reshape(-1, spec.classes), y[idx].reshape(-1), reduction="sum") / batch_size
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    nets = WeightBatch(tuple(p.detach() for p in params[:M]), tuple(p.detach() for p in params[M:]))
    xt, yt = data.x_test[:eval_images], data.y_test[:eval_images]
    test_loss, test_acc = cnn_loss_and_accuracy(nets, xt, yt, spec)
    return Zoo(nets, data, splits, seeds, test_loss, test_acc, template=spec.module())


__all__ = [
    "CNNSpec",
    "check_cnn_batch",
    "cnn_forward",
    "cnn_loss_and_accuracy",
    "cnn_interpolation_losses",
    "init_cnns",
    "train_cnn_zoo",
]
