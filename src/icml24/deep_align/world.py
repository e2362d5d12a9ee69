"""Model zoos: many small MLP classifiers of one architecture, trained on one data set from different seeds.

A model zoo is the data of weight-space methods (Deep-Align, DWSNets, ...): each example is a trained network.
The official Deep-Align repository ships its zoos (MNIST and CIFAR10 MLPs, CIFAR10 CNNs) only as downloads,
without the script that made them. This module is the recipe of our offline stand-in: scikit-learn's 8x8 digits
(:func:`icml24.data.digits`) by default, MLPs ``64 -> 32 -> 32 -> 10``, each initialised from its own seed
with PyTorch's ``nn.Linear`` initialisation and trained with Adam. All networks of a zoo are trained together
as one batched computation (Adam is element-wise and the loss is a sum over networks, so this equals training
each network alone, up to float rounding). Networks are split into train / val / test sets of *networks*, as
the official ``generate_splits.py`` does.

Weights are returned in ``nn.Linear``'s ``(out, in)`` orientation, stacked over networks: ``weights[k]`` has
shape ``(n, d_{k+1}, d_k)`` and ``biases[k]`` ``(n, d_{k+1})``; :meth:`MLPZoo.network` and
:meth:`MLPZoo.state_dict` give one network as a PyTorch module or state dict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..data.tabular import Split, digits
from ..errors import InputError
from ..validation import check_float, check_int, check_seed

LR_MAX = 10.0  # learning rates: larger ones diverge (and beyond float32's range they overflow the optimiser)
TAU_MIN = 1e-6  # Sinkhorn temperatures: smaller ones overflow the scaled scores

__all__ = ["MLPZoo", "mlp_zoo", "init_mlps", "train_mlps", "split_networks", "mlp_widths", "mlp_module"]

Layers = tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]


@dataclass
class MLPZoo:
    """Trained MLPs of one architecture, the data they were trained on, and a split of the networks.

    Parameters
    ----------
    weights : tuple of torch.Tensor
        ``weights[k]`` of shape ``(n, d_{k+1}, d_k)``: layer ``k`` of every network, ``nn.Linear``'s orientation.
    biases : tuple of torch.Tensor
        ``biases[k]`` of shape ``(n, d_{k+1})``.
    data : Split
        The data set the networks were trained (``x_train``) and evaluated (``x_test``) on.
    splits : dict of str to torch.Tensor
        ``"train"``, ``"val"``, ``"test"``: sorted network indices of each split.
    seeds : tuple of int
        The initialisation seed of each network.
    test_loss, test_acc : torch.Tensor
        Each network's mean cross-entropy and accuracy on the test data, ``(n,)``.
    """

    weights: tuple[torch.Tensor, ...]
    biases: tuple[torch.Tensor, ...]
    data: Split
    splits: dict[str, torch.Tensor]
    seeds: tuple[int, ...] = ()
    test_loss: torch.Tensor = field(default_factory=lambda: torch.empty(0))
    test_acc: torch.Tensor = field(default_factory=lambda: torch.empty(0))

    @property
    def widths(self) -> tuple[int, ...]:
        """The architecture ``(d_0, ..., d_M)``.

        Returns
        -------
        tuple of int
        """
        return (int(self.weights[0].shape[2]),) + tuple(int(w.shape[1]) for w in self.weights)

    def __len__(self) -> int:
        return int(self.weights[0].shape[0])

    def _index(self, index: int) -> int:
        return check_int(index, "index", min_val=0, max_val=len(self) - 1)

    def state_dict(self, index: int) -> dict[str, torch.Tensor]:
        """Network ``index`` as the state dict of :meth:`network`'s ``nn.Sequential`` (copies).

        Parameters
        ----------
        index : int
            A network index in ``0 .. len(zoo) - 1``.

        Returns
        -------
        dict of str to torch.Tensor
            ``{"0.weight", "0.bias", "2.weight", ...}`` (Linear layers at even positions).
        """
        i = self._index(index)
        out: dict[str, torch.Tensor] = {}
        for k, (w, b) in enumerate(zip(self.weights, self.biases)):
            out[f"{2 * k}.weight"] = w[i].clone()
            out[f"{2 * k}.bias"] = b[i].clone()
        return out

    def network(self, index: int) -> nn.Sequential:
        """Network ``index`` as a new ``nn.Sequential`` of Linear and ReLU layers.

        Parameters
        ----------
        index : int
            A network index in ``0 .. len(zoo) - 1``.

        Returns
        -------
        torch.nn.Sequential
        """
        net = mlp_module(self.widths)
        net.load_state_dict(self.state_dict(index))
        return net


def mlp_module(widths: Sequence[int]) -> nn.Sequential:
    """An untrained ``nn.Sequential(Linear, ReLU, ..., Linear)`` of the given widths.

    Parameters
    ----------
    widths : sequence of int
        ``(d_0, ..., d_M)``.

    Returns
    -------
    torch.nn.Sequential
    """
    layers: list[nn.Module] = []
    for k in range(len(widths) - 1):
        layers.append(nn.Linear(widths[k], widths[k + 1]))
        if k < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def mlp_widths(widths: Sequence[int], name: str = "widths") -> tuple[int, ...]:
    """Check an MLP architecture: the input, at least one hidden and the output width, all positive.

    Parameters
    ----------
    widths : sequence of int
    name : str, default "widths"
        The argument's name in the message.

    Returns
    -------
    tuple of int

    Raises
    ------
    InputError
        When ``widths`` is not such a sequence.
    """
    try:
        out = tuple(int(w) for w in widths)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a sequence of integers, got {widths!r}") from None
    if len(out) < 3 or any(w < 1 for w in out):
        raise InputError(f"{name} must hold the input, at least one hidden and the output width, got {out}")
    return out


def split_networks(n: int, val: int, test: int, seed: int) -> dict[str, torch.Tensor]:
    """A random split of ``n`` networks into train / val / test sets of networks.

    Parameters
    ----------
    n : int
        Number of networks.
    val, test : int
        Networks in the validation and test sets; at least 2 must remain for training.
    seed : int
        Seed of the split.

    Returns
    -------
    dict of str to torch.Tensor
        ``"train"``, ``"val"``, ``"test"``: sorted indices.
    """
    val = check_int(val, "val", min_val=0)
    test = check_int(test, "test", min_val=0)
    if n - val - test < 2:
        raise InputError(f"{n} networks leave fewer than 2 for training after {val} val and {test} test")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(check_seed(seed)))
    return {
        "train": order[: n - val - test].sort().values,
        "val": order[n - val - test : n - test].sort().values,
        "test": order[n - test :].sort().values,
    }


def init_mlps(widths: Sequence[int], seeds: Sequence[int]) -> Layers:
    """PyTorch's ``nn.Linear`` initialisation (uniform in ``+-1/sqrt(fan_in)`` for weights and biases), one
    ``torch.Generator`` per network seed.

    Parameters
    ----------
    widths : sequence of int
        ``(d_0, ..., d_M)``.
    seeds : sequence of int
        One seed per network.

    Returns
    -------
    (weights, biases) : tuple of tuples of torch.Tensor
        ``weights[k]`` ``(n, d_{k+1}, d_k)`` (``nn.Linear`` orientation), ``biases[k]`` ``(n, d_{k+1})``.
    """
    widths = mlp_widths(widths)
    seeds = [check_seed(s, "seeds") for s in seeds]
    if not seeds:
        raise InputError("seeds is empty", "give one seed per network")
    ws, bs = _init_fan_in(widths, seeds)
    return tuple(w.transpose(1, 2).contiguous() for w in ws), bs


def _init_fan_in(widths: tuple[int, ...], seeds: Sequence[int]) -> Layers:
    ws: list[list[torch.Tensor]] = [[] for _ in range(len(widths) - 1)]
    bs: list[list[torch.Tensor]] = [[] for _ in range(len(widths) - 1)]
    for s in seeds:
        g = torch.Generator().manual_seed(int(s))
        for k in range(len(widths) - 1):
            bound = 1.0 / math.sqrt(widths[k])
            ws[k].append((torch.rand(widths[k], widths[k + 1], generator=g) * 2 - 1) * bound)
            bs[k].append((torch.rand(widths[k + 1], generator=g) * 2 - 1) * bound)
    return tuple(torch.stack(w) for w in ws), tuple(torch.stack(b) for b in bs)


def _loss_and_accuracy(
    weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor], x: torch.Tensor, y: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-network mean cross-entropy and accuracy; ``weights[k]`` fan-in first, ``(n, d_k, d_{k+1})``."""
    h = x.unsqueeze(0).expand(weights[0].shape[0], -1, -1)
    for k in range(len(weights)):
        h = torch.baddbmm(biases[k].unsqueeze(1), h, weights[k])
        if k < len(weights) - 1:
            h = torch.relu(h)
    yy = y.unsqueeze(0).expand(h.shape[0], -1)
    ce = F.cross_entropy(h.transpose(1, 2), yy, reduction="none").mean(1)
    acc = (h.argmax(-1) == yy).float().mean(1)
    return ce, acc


def _check_layers(weights, biases) -> None:
    if (
        not isinstance(weights, (tuple, list))
        or not isinstance(biases, (tuple, list))
        or len(weights) < 2
        or len(weights) != len(biases)
    ):
        raise InputError("weights and biases must be sequences of one tensor per layer (at least two layers)")
    for k, (w, b) in enumerate(zip(weights, biases)):
        if (
            not isinstance(w, torch.Tensor)
            or not isinstance(b, torch.Tensor)
            or w.dim() != 3
            or b.dim() != 2
            or w.shape[0] != b.shape[0]
            or w.shape[1] != b.shape[1]
        ):
            raise InputError(f"layer {k}: weights must be (n, d_out, d_in) and biases (n, d_out) tensors")
        if k and w.shape[2] != weights[k - 1].shape[1]:
            raise InputError(f"layer {k} takes {w.shape[2]} inputs but layer {k - 1} gives {weights[k - 1].shape[1]}")


def _train_fan_in(
    weights: Sequence[torch.Tensor],
    biases: Sequence[torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int,
    lr: float,
    weight_decay: float,
    batch_size: int | None,
    seed: int,
) -> Layers:
    params = [t.clone().requires_grad_(True) for t in tuple(weights) + tuple(biases)]
    M = len(weights)
    opt = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    g = torch.Generator().manual_seed(seed)
    order, cursor = torch.randperm(len(x), generator=g), 0
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        if batch_size is None or batch_size >= len(x):
            xb, yb = x, y
        else:
            if cursor + batch_size > len(x):
                order, cursor = torch.randperm(len(x), generator=g), 0
            idx = order[cursor : cursor + batch_size]
            cursor += batch_size
            xb, yb = x[idx], y[idx]
        ce, _ = _loss_and_accuracy(params[:M], params[M:], xb, yb)
        ce.sum().backward()
        opt.step()
    return tuple(p.detach() for p in params[:M]), tuple(p.detach() for p in params[M:])


def train_mlps(
    weights: Sequence[torch.Tensor],
    biases: Sequence[torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    steps: int = 150,
    lr: float = 1e-2,
    weight_decay: float = 0.0,
    batch_size: int | None = None,
    seed: int = 0,
) -> Layers:
    """Train a batch of MLPs together: Adam on the mean cross-entropy of every network, summed over networks.

    Parameters
    ----------
    weights, biases : sequence of torch.Tensor
        The initial networks, as :func:`init_mlps` returns them (``nn.Linear`` orientation).
    x : torch.Tensor
        Inputs ``(N, d_0)``, shared by all networks.
    y : torch.Tensor
        Class indices ``(N,)``.
    steps : int, default 150
        Optimiser steps.
    lr : float, default 1e-2
        Adam's learning rate.
    weight_decay : float, default 0.0
    batch_size : int or None, default None
        None: full batch. Otherwise mini-batches drawn in one shuffled order (``seed``) shared by all networks.
    seed : int, default 0
        Seed of the mini-batch order.

    Returns
    -------
    (weights, biases) : tuple of tuples of torch.Tensor
        The trained networks, in the layout of the input.
    """
    _check_layers(weights, biases)
    steps = check_int(steps, "steps", min_val=0)
    lr = check_float(lr, "lr", min_val=0.0, max_val=LR_MAX, include_boundaries="right")
    weight_decay = check_float(weight_decay, "weight_decay", min_val=0.0)
    batch_size = check_int(batch_size, "batch_size", min_val=1, allow_none=True)
    seed = check_seed(seed)
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != weights[0].shape[2]:
        raise InputError(f"x must be a (N, {weights[0].shape[2]}) tensor of inputs")
    if not isinstance(y, torch.Tensor) or y.shape != (len(x),):
        raise InputError(f"y must be a ({len(x)},) tensor of class indices")
    ws, bs = _train_fan_in(
        tuple(w.transpose(1, 2).contiguous() for w in weights),
        tuple(biases),
        x,
        y.long(),
        steps,
        lr,
        weight_decay,
        batch_size,
        seed,
    )
    return tuple(w.transpose(1, 2).contiguous() for w in ws), bs


def mlp_zoo(
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
) -> MLPZoo:
    """Train ``n`` MLPs on one data set, network ``i`` initialised from seed ``1000 * seed + i``, and split them
    into train / val / test networks at random.

    Parameters
    ----------
    n : int, default 80
        Number of networks.
    widths : sequence of int, default (64, 32, 32, 10)
        The architecture ``(d_0, ..., d_M)``; ``d_0`` and ``d_M`` must fit the data.
    val, test : int, default 10
        Networks in the validation and test splits (the rest train).
    steps : int, default 150
        Adam steps (full batch unless ``batch_size`` is given).
    lr : float, default 1e-2
    batch_size : int or None, default None
    seed : int, default 0
        Seed of the data split of ``digits``, the network seeds, the batch order and the split of networks.
    data : Split, optional
        The data set; default ``icml24.data.digits(seed=seed)``. E.g. ``fashion_mnist(flatten=True)``.

    Returns
    -------
    MLPZoo

    Notes
    -----
    The defaults are our CPU reproduction plan for Deep-Align (80 MLPs ``64 -> 32 -> 32 -> 10``, full-batch
    Adam, lr 1e-2, 150 steps, 60 / 10 / 10 networks). The official zoo (MNIST MLPs ``784 -> 128 -> 128 -> 128 ->
    10``, thousands of networks) cannot be downloaded offline.
    """
    n = check_int(n, "n", min_val=1)
    steps = check_int(steps, "steps", min_val=1)
    widths = mlp_widths(widths)
    lr = check_float(lr, "lr", min_val=0.0, max_val=LR_MAX, include_boundaries="right")
    seed = check_seed(seed)
    batch_size = check_int(batch_size, "batch_size", min_val=1, allow_none=True)
    data = data if data is not None else digits(seed=seed)
    if not isinstance(data, Split):
        raise InputError(f"data must be an icml24.data.Split, got {type(data).__name__}")
    if data.num_features != widths[0] or data.num_classes != widths[-1]:
        raise InputError(
            f"widths {widths} do not fit the data ({data.num_features} features, {data.num_classes} classes)"
        )
    splits = split_networks(n, val, test, seed)  # validate the split before training
    seeds = tuple(1000 * seed + i for i in range(n))
    ws, bs = _train_fan_in(*_init_fan_in(widths, seeds), data.x_train, data.y_train, steps, lr, 0.0, batch_size, seed)
    with torch.no_grad():
        loss, acc = _loss_and_accuracy(ws, bs, data.x_test, data.y_test)
    return MLPZoo(tuple(w.transpose(1, 2).contiguous() for w in ws), bs, data, splits, seeds, loss, acc)
