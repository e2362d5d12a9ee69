"""The loss along the linear path between two networks, once one is aligned to the other: its barrier and AUC."""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import InputError
from ..validation import check_int, check_tensor
from .align import as_batch
from .conversion import check_same_dtype, module_dtype, write_into
from .evaluation import barrier_and_auc, interpolation_losses, lerp
from .permutations import check_perms, permute_hard
from .weights import WeightBatch


def interpolation(
    a: nn.Module | WeightBatch,
    b: nn.Module | WeightBatch,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    perms: Sequence[torch.Tensor] | None = None,
    n_alphas: int = 16,
) -> dict:
    """The loss along the linear path between two networks, its barrier and the area under it.

    Parameters
    ----------
    a, b : nn.Module or WeightBatch
        Two MLPs of one architecture and dtype (see :func:`~icml24.deep_align.conversion.mlp_linears`: any
        elementwise activation, a leading Flatten, bias-free layers), or two WeightBatches of one network each
        (evaluated as ReLU MLPs), or two CNNs (``nn.Module``, see
        :func:`~icml24.deep_align.conversion.network_layers`). Modules are evaluated as themselves, in evaluation
        mode, on copies.
    x : torch.Tensor
        Inputs ``(N, ...)`` that the networks take (``(N, d_0)``, or e.g. images for a Flatten-first MLP or
        ``(N, channels, H, W)`` for a CNN).
    y : torch.Tensor
        Class indices ``(N,)``.
    perms : list of torch.Tensor, optional
        Alignment of ``b`` to ``a`` applied first (e.g. :meth:`DeepAlign.align`).
    n_alphas : int, default 16
        Points of ``[0, 1]`` evaluated (official 16, ``calc_lmc_loss``).

    Returns
    -------
    dict
        ``"alphas"`` ``(n_alphas,)``; ``"losses"``: cross-entropy of ``alpha * a + (1 - alpha) * permute(b,
        perms)`` at each alpha; ``"barrier"``: the largest excess of that loss over the linear interpolation of
        the end points' losses (Frankle et al. 2020, the paper's barrier); ``"auc"``: the area under the excess.
    """
    modules = isinstance(a, nn.Module) and isinstance(b, nn.Module)
    wa, wb = as_batch(a, "a"), as_batch(b, "b", None)
    if wa.widths != wb.widths:
        raise InputError(f"b has widths {wb.widths} but a has {wa.widths}", "interpolate networks of one architecture")
    if (wa.convolutional, wa.features) != (wb.convolutional, wb.features):
        raise InputError(
            f"b has kernel features {wb.features} but a has {wa.features}", "interpolate networks of one architecture"
        )
    if wa.size != 1 or wb.size != 1:
        raise InputError("a and b must be one network each")
    if modules:
        check_same_dtype(a, b)
    elif isinstance(a, nn.Module) or isinstance(b, nn.Module):
        raise InputError("a and b must both be nn.Modules or both WeightBatches")
    n_alphas = check_int(n_alphas, "n_alphas", min_val=2, max_val=10_000)
    x = check_tensor(x, "x")
    if wa.convolutional:
        if not modules:
            raise InputError("a and b are WeightBatches of CNNs", "give the CNNs as nn.Modules")
        if x.dim() != 4 or x.shape[1] != wa.widths[0]:
            raise InputError(f"x must be (N, {wa.widths[0]}, H, W) images for these CNNs, got shape {tuple(x.shape)}")
    elif x.dim() < 2 or x[0].numel() != wa.widths[0]:
        raise InputError(f"x must be (N, {wa.widths[0]}) inputs (or (N, ...) of {wa.widths[0]} values each)")
    y = check_tensor(y, "y", shape=(len(x),), dtype="integer")
    if int(y.min()) < 0 or int(y.max()) >= wa.widths[-1]:
        raise InputError(f"y must hold class indices in 0..{wa.widths[-1] - 1}")
    if perms is not None:
        wb = permute_hard(wb, check_perms(perms, wb.hidden, 1))
    if not modules:
        if x.dim() != 2:
            raise InputError(f"x must be (N, {wa.widths[0]}) inputs for WeightBatch networks")
        alphas, losses = interpolation_losses(wa, wb, x.float(), y.long(), n_alphas)
    else:
        alphas = torch.linspace(0.0, 1.0, n_alphas)
        xx = x.to(module_dtype(a))
        rows = []
        with torch.no_grad():
            for t in alphas:
                net = write_into(a, lerp(wa, wb, float(t))).eval()
                try:
                    rows.append(float(F.cross_entropy(net(xx).double(), y.long())))
                except RuntimeError as exc:
                    raise InputError(f"x cannot be fed to the networks: {str(exc).splitlines()[0]}") from None
        losses = torch.tensor([rows], dtype=torch.float32)
    bar, auc = barrier_and_auc(alphas, losses)
    return {"alphas": alphas, "losses": losses[0], "barrier": float(bar[0]), "auc": float(auc[0])}


__all__ = ["interpolation"]
