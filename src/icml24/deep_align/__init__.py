"""Deep-Align: equivariant deep weight-space alignment (Navon, Shamsian, Fetaya, Chechik, Dym, Maron; ICML 2024,
arXiv 2310.13397; official code github.com/AvivNavon/deep-align).

Two networks of one architecture compute the same function under any permutation of their hidden neurons; to
merge or interpolate them, their neurons must first be matched. Deep-Align learns this matching: a Siamese
encoder equivariant to hidden-neuron permutations embeds every neuron, the score matrices of the two networks'
embeddings are projected onto permutations (Sinkhorn while training, Hungarian at inference), and the encoder
is trained without labels on a zoo of networks.

Public API
----------
``DeepAlign``            the aligner: ``fit`` on a zoo, ``align(a, b)`` / ``align_batch``, ``scores``, ``save``/``load``
``permute(net, perms)``  a network with its hidden neurons permuted (same function)
``merge(a, b, alpha, perms)``  ``alpha * a + (1 - alpha) * permute(b, perms)``
``interpolation(a, b, x, y)``  the loss along the linear path, its barrier and AUC
``train_zoo`` / ``Zoo``  the model-zoo recipe (small MLPs on digits from different seeds)
``weight_matching``, ``activation_matching``, ``sinkhorn_rebasin``  the baselines (``baselines.py``)
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import nn

from ..errors import InputError
from .align import DeepAlign, as_batch, merge, permute
from .baselines import MatchResult, activation_matching, sinkhorn_rebasin, weight_matching, wm_objective
from .encoder import DeepAlignNet, EncoderConfig
from .training import History, TrainConfig
from .weights import WeightBatch, barrier_and_auc, from_sequential, interpolation_losses, to_sequential
from .zoo import Zoo, train_zoo


def interpolation(a: nn.Sequential, b: nn.Sequential, x: torch.Tensor, y: torch.Tensor, *,
                  perms: Sequence[torch.Tensor] | None = None, n_alphas: int = 16) -> dict:
    """Cross-entropy on ``(x, y)`` along ``alpha * a + (1 - alpha) * permute(b, perms)`` at ``n_alphas`` points
    (official 16), with the barrier (max excess over the linear interpolation of the end points) and the area
    under the excess curve. Returns ``{"alphas", "losses", "barrier", "auc"}``."""
    from .weights import check_perms, permute_hard

    if isinstance(n_alphas, bool) or not isinstance(n_alphas, int) or n_alphas < 2:
        raise InputError(f"n_alphas must be an integer >= 2, got {n_alphas!r}")
    wa, wb = as_batch(a, "a"), as_batch(b, "b", None)
    if wa.widths != wb.widths:
        raise InputError(f"a has widths {wa.widths} but b has {wb.widths}", "interpolate networks of one architecture")
    if wa.size != 1 or wb.size != 1:
        raise InputError("a and b must be one network each")
    if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != wa.widths[0]:
        raise InputError(f"x must be a (N, {wa.widths[0]}) tensor")
    if not isinstance(y, torch.Tensor) or y.shape != (len(x),):
        raise InputError(f"y must be a ({len(x)},) tensor of class indices")
    if perms is not None:
        wb = permute_hard(wb, check_perms(perms, wb.hidden, 1))
    alphas, losses = interpolation_losses(wa, wb, x.float(), y.long(), n_alphas)
    bar, auc = barrier_and_auc(alphas, losses)
    return {"alphas": alphas, "losses": losses[0], "barrier": float(bar[0]), "auc": float(auc[0])}


__all__ = ["DeepAlign", "permute", "merge", "interpolation", "train_zoo", "Zoo", "weight_matching",
           "activation_matching", "sinkhorn_rebasin", "wm_objective", "MatchResult", "EncoderConfig", "TrainConfig",
           "History", "DeepAlignNet", "WeightBatch", "from_sequential", "to_sequential", "as_batch"]
