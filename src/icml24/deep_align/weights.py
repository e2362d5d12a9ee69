"""Weight spaces of MLPs and CNNs: the :class:`WeightBatch` type, its layout and its checks.

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

The operations live beside this module: ``torch.nn`` modules to and from batches in :mod:`.conversion`, the
permutation algebra in :mod:`.permutations`, the linear path and the loss along it in :mod:`.evaluation`, model
zoos in :mod:`.zoo`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from ..errors import InputError

__all__ = ["WeightBatch", "check_weight_batch", "check_same_architecture"]


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

    def __post_init__(self) -> None:
        check_weight_batch(self, "weights", finite=False)  # shapes and dtypes now; values where it is used

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
        """The same networks in ``dtype`` (a floating ``torch.dtype``)."""
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise InputError(f"dtype must be a floating torch.dtype, got {dtype!r}")
        return WeightBatch(tuple(w.to(dtype) for w in self.weights), tuple(b.to(dtype) for b in self.biases))

    def flat(self) -> torch.Tensor:
        """All parameters of each network as one vector, ``(B, n_params)``."""
        return torch.cat([t.flatten(1) for pair in zip(self.weights, self.biases) for t in pair], dim=1)

    @classmethod
    def from_linear(cls, weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor]) -> "WeightBatch":
        """A batch from stacked layers in ``nn.Linear``'s orientation, as :mod:`icml24.deep_align.world` returns them.

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


def check_weight_batch(wb: object, name: str = "nets", *, finite: bool = True) -> WeightBatch:
    """Validate a :class:`WeightBatch`: layer shapes that chain, at least one hidden layer, finite floats.

    Parameters
    ----------
    wb : object
    name : str, default "nets"
        The argument's name in messages.
    finite : bool, default True
        Also refuse NaN and infinite values.

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
            if finite and not bool(torch.isfinite(t).all()):
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
