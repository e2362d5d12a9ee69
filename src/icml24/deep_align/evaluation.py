"""Networks of a :class:`~icml24.deep_align.weights.WeightBatch` evaluated: the linear path between two batches
(:func:`lerp`), the forward pass, per-network loss and accuracy, and the loss barrier along the path.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .weights import WeightBatch

__all__ = ["lerp", "forward", "loss_and_accuracy", "interpolation_losses", "barrier_and_auc"]


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
