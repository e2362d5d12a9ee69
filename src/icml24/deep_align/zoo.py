"""Model zoos as weights: the trained MLPs of :mod:`icml24.deep_align.world` (or your own networks) as a
:class:`~icml24.deep_align.weights.WeightBatch`, with their data and a split of the networks: the training data of
Deep-Align.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import torch
from torch import nn

from ..data import Split
from ..errors import InputError
from ..validation import check_int
from .conversion import from_sequential, to_sequential, write_into
from .weights import WeightBatch
from .world import mlp_zoo, split_networks

__all__ = ["Zoo", "train_zoo"]


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

    def __post_init__(self) -> None:
        for name, kind in (("nets", WeightBatch), ("data", Split), ("splits", dict)):
            if not isinstance(getattr(self, name), kind):
                raise InputError(f"{name} must be a {kind.__name__}, got {type(getattr(self, name)).__name__}")

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
        x, top = data.x_train, int(data.y_train.max()) if data.y_train.numel() else 0
        if x.dim() != (4 if wb.convolutional else 2) or x.shape[1] != wb.widths[0] or top >= wb.widths[-1]:
            raise InputError(
                f"data (inputs {tuple(x.shape[1:])}, labels to {top}) does not fit nets of widths {wb.widths}"
            )
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
    """Train a zoo of ``n`` MLPs on digits (``icml24.deep_align.world.mlp_zoo``), as a :class:`Zoo`.

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
