"""A model zoo recipe: many small MLP classifiers of one architecture, trained on digits from different seeds.

The official repository ships its training sets of networks (MNIST and CIFAR10 MLPs, CIFAR10 CNNs) only as
downloads, without the script that made them (the DWSNets issues ask for exactly that). This module is the
recipe for our offline stand-in: scikit-learn's 8x8 digits (``icml24.data.digits``), MLPs ``64 -> 32 -> 32 ->
10`` by default, each initialised from its own seed with PyTorch's ``nn.Linear`` initialisation and trained with
full-batch Adam. All networks of a zoo are trained together as one batched computation (Adam is element-wise
and the loss is a sum over networks, so this equals training each network alone, up to float rounding).
Networks are split into train / val / test sets of *networks*, as the official ``generate_splits.py`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import torch
from torch import nn

from ..data import Split, digits
from ..errors import InputError
from .weights import WeightBatch, from_sequential, loss_and_accuracy, to_sequential


@dataclass
class Zoo:
    """A set of trained MLPs of one architecture, with the data they were trained on and a split of the
    networks. ``nets`` holds every network; ``splits`` maps ``"train"/"val"/"test"`` to network indices."""

    nets: WeightBatch
    data: Split
    splits: dict[str, torch.Tensor]
    seeds: tuple[int, ...] = ()
    test_loss: torch.Tensor = field(default_factory=lambda: torch.empty(0))
    test_acc: torch.Tensor = field(default_factory=lambda: torch.empty(0))

    @property
    def widths(self) -> tuple[int, ...]:
        return self.nets.widths

    def __len__(self) -> int:
        return self.nets.size

    def split(self, name: str) -> WeightBatch:
        if name not in self.splits:
            raise InputError(f"split must be one of {sorted(self.splits)}, got {name!r}")
        return self.nets[self.splits[name]]

    def network(self, index: int) -> nn.Sequential:
        """Network ``index`` as an ``nn.Sequential`` of Linear and ReLU layers."""
        if not 0 <= int(index) < len(self):
            raise InputError(f"index must be in 0..{len(self) - 1}, got {index}")
        return to_sequential(self.nets, int(index))

    @classmethod
    def from_networks(cls, nets: Iterable[nn.Sequential], data: Split, *, val: int = 0, test: int = 0,
                      seed: int = 0) -> "Zoo":
        """A zoo of your own networks (one architecture; a mismatch raises :class:`InputError` naming it), split
        at random (``seed``) into ``val`` and ``test`` networks and the rest for training."""
        wb = from_sequential(list(nets), "nets")
        return cls(wb, data, _split(wb.size, val, test, seed))


def _split(n: int, val: int, test: int, seed: int) -> dict[str, torch.Tensor]:
    for name, v in (("val", val), ("test", test)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InputError(f"{name} must be a non-negative integer, got {v!r}")
    if n - val - test < 2:
        raise InputError(f"{n} networks leave fewer than 2 for training after {val} val and {test} test")
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    return {"train": order[: n - val - test].sort().values, "val": order[n - val - test: n - test].sort().values,
            "test": order[n - test:].sort().values}


def init_mlps(widths: Sequence[int], seeds: Sequence[int]) -> WeightBatch:
    """PyTorch's ``nn.Linear`` initialisation (uniform in ``+-1/sqrt(fan_in)`` for weights and biases), one
    ``torch.Generator`` per network seed."""
    ws: list[list[torch.Tensor]] = [[] for _ in range(len(widths) - 1)]
    bs: list[list[torch.Tensor]] = [[] for _ in range(len(widths) - 1)]
    for s in seeds:
        g = torch.Generator().manual_seed(int(s))
        for k in range(len(widths) - 1):
            bound = 1.0 / math.sqrt(widths[k])
            ws[k].append((torch.rand(widths[k], widths[k + 1], generator=g) * 2 - 1) * bound)
            bs[k].append((torch.rand(widths[k + 1], generator=g) * 2 - 1) * bound)
    return WeightBatch(tuple(torch.stack(w) for w in ws), tuple(torch.stack(b) for b in bs))


def train_mlps(init: WeightBatch, x: torch.Tensor, y: torch.Tensor, *, steps: int = 150, lr: float = 1e-2,
               weight_decay: float = 0.0, batch_size: int | None = None, seed: int = 0) -> WeightBatch:
    """Adam on the mean cross-entropy of every network (summed over networks): full batch, or mini-batches of
    ``batch_size`` drawn in one shuffled order (``seed``) shared by all networks."""
    params = [t.clone().requires_grad_(True) for t in init.weights + init.biases]
    M = len(init.weights)
    opt = torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    g = torch.Generator().manual_seed(seed)
    order, cursor = torch.randperm(len(x), generator=g), 0
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        wb = WeightBatch(tuple(params[:M]), tuple(params[M:]))
        if batch_size is None or batch_size >= len(x):
            xb, yb = x, y
        else:
            if cursor + batch_size > len(x):
                order, cursor = torch.randperm(len(x), generator=g), 0
            idx = order[cursor: cursor + batch_size]
            cursor += batch_size
            xb, yb = x[idx], y[idx]
        ce, _ = loss_and_accuracy(wb, xb, yb)
        ce.sum().backward()
        opt.step()
    return WeightBatch(tuple(p.detach() for p in params[:M]), tuple(p.detach() for p in params[M:]))


def train_zoo(n: int = 80, *, widths: Sequence[int] = (64, 32, 32, 10), val: int = 10, test: int = 10,
              steps: int = 150, lr: float = 1e-2, batch_size: int | None = None, seed: int = 0,
              data: Split | None = None) -> Zoo:
    """Train ``n`` MLPs on digits, network ``i`` from seed ``1000 * seed + i``; split them into train / val /
    test networks at random.

    Defaults follow the reproduction plan of ``shared/specs/deep_align.md`` (80 MLPs ``64 -> 32 -> 32 -> 10``,
    full-batch Adam, lr 1e-2, 150 steps, 60 / 10 / 10 networks). The official zoo (MNIST MLPs
    ``784 -> 128 -> 128 -> 128 -> 10``, thousands of networks) cannot be downloaded offline. ``data`` replaces
    digits (e.g. ``icml24.data.fashion_mnist(flatten=True)``); ``batch_size`` switches to mini-batches.
    """
    for name, v in (("n", n), ("steps", steps)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{name} must be a positive integer, got {v!r}")
    widths = tuple(int(w) for w in widths)
    if len(widths) < 3 or any(w < 1 for w in widths):
        raise InputError(f"widths must hold the input, at least one hidden and the output width, got {widths}")
    if not (isinstance(lr, (int, float)) and lr > 0):
        raise InputError(f"lr must be positive, got {lr!r}")
    data = data if data is not None else digits(seed=seed)
    if data.num_features != widths[0] or data.num_classes != widths[-1]:
        raise InputError(f"widths {widths} do not fit the data ({data.num_features} features, "
                         f"{data.num_classes} classes)")
    splits = _split(n, val, test, seed)  # validate the split before training
    seeds = tuple(1000 * seed + i for i in range(n))
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise InputError(f"batch_size must be a positive integer or None, got {batch_size!r}")
    nets = train_mlps(init_mlps(widths, seeds), data.x_train, data.y_train, steps=steps, lr=lr,
                      batch_size=batch_size, seed=seed)
    with torch.no_grad():
        loss, acc = loss_and_accuracy(nets, data.x_test, data.y_test)
    return Zoo(nets, data, splits, seeds, loss, acc)


__all__ = ["Zoo", "train_zoo", "init_mlps", "train_mlps"]
