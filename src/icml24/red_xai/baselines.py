"""The peers of the RED loop: accuracy-only validation, RRR under a random or a whole-image mask, and the
clean-retrained oracle."""

from __future__ import annotations

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_seed, check_tensor
from .checks import check_model, n_outputs
from .correct import fit, rrr
from .measure import accuracy


def accuracy_only(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, threshold: float = 0.9) -> dict:
    """Validation by held-out accuracy alone: the verdict a RED audit replaces.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode.
    x, y : torch.Tensor
        The ordinary held-out split (which still carries whatever shortcut the training data had).
    threshold : float, default 0.9
        Accuracy above which the model is passed.

    Returns
    -------
    dict
        ``accuracy`` and ``passed``.
    """
    from ..validation import check_probability

    threshold = check_probability(threshold, "threshold")
    acc = accuracy(model, x, y)
    return {"accuracy": acc, "passed": acc >= threshold}


def random_mask(mask: torch.Tensor, *, seed: int = 0) -> torch.Tensor:
    """A mask of the same pixel count as ``mask``, placed uniformly at random and not overlapping it.

    Parameters
    ----------
    mask : torch.Tensor
        Bool ``(C, H, W)``.
    seed : int, default 0

    Returns
    -------
    torch.Tensor
        Bool, same shape.
    """
    mask = check_tensor(mask, "mask", ndim=3, dtype="bool")
    seed = check_seed(seed)
    free = (~mask).flatten().nonzero().flatten()
    k = int(mask.sum())
    if k == 0 or len(free) < k:
        raise InputError(f"mask marks {k} of {mask.numel()} pixels", "mark some, not all, pixels")
    gen = torch.Generator().manual_seed(seed)
    out = torch.zeros(mask.numel(), dtype=torch.bool)
    out[free[torch.randperm(len(free), generator=gen)[:k]]] = True
    return out.view_as(mask)


def random_mask_rrr(model: nn.Module, x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor, **kw) -> nn.Module:
    """RRR with an annotation that misses the artifact (a random mask of the same size): the control.

    Parameters
    ----------
    model : torch.nn.Module
    x, y : torch.Tensor
    mask : torch.Tensor
        The random mask (see :func:`random_mask`).
    **kw
        Passed to :func:`~icml24.red_xai.correct.rrr`.

    Returns
    -------
    torch.nn.Module
    """
    return rrr(model, x, y, mask, **kw)


def whole_image_rrr(model: nn.Module, x: torch.Tensor, y: torch.Tensor, **kw) -> nn.Module:
    """RRR with the whole image masked: penalises every input gradient (a plain gradient-norm regulariser).

    Parameters
    ----------
    model : torch.nn.Module
    x, y : torch.Tensor
    **kw
        Passed to :func:`~icml24.red_xai.correct.rrr`.

    Returns
    -------
    torch.nn.Module
    """
    x = check_tensor(x, "x", ndim=4)
    return rrr(model, x, y, torch.ones(x.shape[1:], dtype=torch.bool), **kw)


def clean_oracle(model: nn.Module, x_clean: torch.Tensor, y: torch.Tensor, *, epochs: int = 20, seed: int = 0):
    """Retrain from ``model``'s weights on the artifact-free images: the fix a RED loop cannot beat.

    Parameters
    ----------
    model : torch.nn.Module
        The initial weights (left untouched).
    x_clean, y : torch.Tensor
        The training images without the artifact, and their labels.
    epochs : int, default 20
    seed : int, default 0

    Returns
    -------
    torch.nn.Module
    """
    x_clean = check_tensor(x_clean, "x_clean", ndim=4)
    n_outputs(check_model(model), x_clean, "x_clean")
    return fit(model, x_clean, y, epochs=epochs, seed=seed)


__all__ = ["accuracy_only", "random_mask", "random_mask_rrr", "whole_image_rrr", "clean_oracle"]
