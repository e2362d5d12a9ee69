"""Permutation algebra of hidden neurons: checking, applying (hard and soft), drawing, inverting and composing
permutations of :class:`~icml24.deep_align.weights.WeightBatch` networks, and permuting or merging ``torch.nn``
networks.

A hard permutation of hidden layer ``l`` is an index tensor ``p`` of shape ``(B, d_l)``: neuron ``i`` of the permuted
network is neuron ``p[i]`` of the original; a soft one is a ``(B, d_l, d_l)`` matrix ``P`` with ``new_i = sum_j
P[i, j] old_j`` (see :mod:`icml24.deep_align.weights`).
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import InputError
from ..validation import check_float
from .conversion import check_same_dtype, from_sequential, write_into
from .evaluation import lerp
from .weights import WeightBatch, check_same_architecture

__all__ = [
    "check_perms",
    "permute_hard",
    "permute_soft",
    "perm_matrices",
    "random_perms",
    "invert",
    "compose",
    "mlp_permute",
    "mlp_merge",
]


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
        try:
            p = torch.as_tensor(p)
        except (TypeError, ValueError, RuntimeError):
            raise InputError(f"{name}[{l}] must be an index tensor, got {type(p).__name__}") from None
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


def mlp_permute(net: nn.Module, perms: Sequence[torch.Tensor]) -> nn.Module:
    """``net`` with its hidden neurons permuted; the function computed is unchanged.

    Parameters
    ----------
    net : nn.Module
        An MLP (see :func:`~icml24.deep_align.conversion.mlp_linears`: any elementwise activation, a leading
        Flatten, bias-free layers) or a CNN (see :func:`~icml24.deep_align.conversion.network_layers`: its
        channels are permuted).
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
        MLPs (see :func:`~icml24.deep_align.conversion.mlp_linears`) or CNNs (see
        :func:`~icml24.deep_align.conversion.network_layers`) of one architecture and dtype.
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
