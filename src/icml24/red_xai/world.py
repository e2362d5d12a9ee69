"""The synthetic world of the claims: a planted Clever-Hans shortcut (a bright corner patch) on one class's images.

:func:`shortcut_data` plants it; digits come from scikit-learn (8x8); Fashion-MNIST is read from the data root
(read-only) and 2x2 average-pooled to 14x14 to keep the CPU arm fast. :func:`border_data` turns the noise-border
images of :mod:`icml24.data.spurious` into image tensors (the border is the spurious part). It belongs in
``icml24.data`` once a second package needs it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..validation import check_choice, check_int, check_probability, check_seed

__all__ = [
    "DATASETS",
    "PLANTS",
    "BORDER_DATASETS",
    "ShortcutData",
    "paste",
    "corner_mask",
    "shortcut_data",
    "BorderData",
    "border_data",
]

DATASETS = ("digits", "fashion-mnist")
PLANTS = ("corner",)
BORDER_DATASETS = ("digits-border", "fashion-border")


@dataclass(frozen=True)
class ShortcutData:
    """Images ``(N, 1, H, W)`` in [0, 1] with a planted corner patch, and the ground truth of where it is.

    Parameters
    ----------
    x_train, y_train, flag_train : torch.Tensor
        Training images (``target``-class images patched at rate ``rate``), labels, and the bool patch flag.
    x_test, y_test, flag_test : torch.Tensor
        The ordinary held-out split, patched the same way (so its accuracy still rewards the shortcut).
    x_clean : torch.Tensor
        The held-out images with no patch at all.
    x_swap, flag_swap : torch.Tensor
        The artifact-swapped test set: patch added to every non-target image, removed from target images.
    x_clean_train : torch.Tensor
        The training images with no patch (for the clean-retrained oracle).
    mask : torch.Tensor
        ``(1, H, W)`` bool, True on the patch pixels.
    target : int
        The class that carries the patch.
    name : str
        Data set name.
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    flag_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    flag_test: torch.Tensor
    x_clean: torch.Tensor
    x_swap: torch.Tensor
    flag_swap: torch.Tensor
    x_clean_train: torch.Tensor
    mask: torch.Tensor
    target: int
    name: str


def paste(x: torch.Tensor, mask: torch.Tensor, value: float = 1.0) -> torch.Tensor:
    """Return a copy of images ``x`` with the patch pixels set to ``value``.

    Parameters
    ----------
    x : torch.Tensor
        Images ``(N, C, H, W)``.
    mask : torch.Tensor
        Bool ``(C, H, W)``.
    value : float, default 1.0

    Returns
    -------
    torch.Tensor
    """
    out = x.clone()
    out[:, mask] = value
    return out


def corner_mask(h: int, w: int, size: int) -> torch.Tensor:
    """``(1, h, w)`` bool mask of a ``size x size`` patch in the top-left corner.

    Parameters
    ----------
    h, w : int
        Image height and width.
    size : int
        Side of the patch.

    Returns
    -------
    torch.Tensor
    """
    m = torch.zeros(1, h, w, dtype=torch.bool)
    m[:, :size, :size] = True
    return m


def shortcut_data(
    name: str = "digits",
    *,
    target: int = 0,
    rate: float = 0.9,
    patch: int | None = None,
    n_train: int = 2000,
    n_test: int = 1000,
    seed: int = 0,
) -> ShortcutData:
    """Load a data set and plant a corner-patch shortcut on ``rate`` of class ``target``'s images.

    Parameters
    ----------
    name : {"digits", "fashion-mnist"}, default "digits"
    target : int, default 0
        The class that carries the patch.
    rate : float, default 0.9
        Fraction of the target class's training (and ordinary test) images patched.
    patch : int, optional
        Side of the square patch in pixels (default 2 on 8x8 digits, 3 on 14x14 Fashion-MNIST).
    n_train, n_test : int
        Fashion-MNIST subset sizes (digits uses its whole 75/25 split).
    seed : int, default 0

    Returns
    -------
    ShortcutData
    """
    name = check_choice(name, "data", DATASETS)
    target = check_int(target, "target", min_val=0, max_val=9)
    rate = check_probability(rate, "rate")
    n_train = check_int(n_train, "n_train", min_val=20)
    n_test = check_int(n_test, "n_test", min_val=20)
    seed = check_seed(seed)
    if name == "digits":
        from ..data.tabular import digits

        sp = digits(flatten=False, seed=seed)
        xtr, ytr, xte, yte = sp.x_train, sp.y_train, sp.x_test, sp.y_test
        size = 2 if patch is None else check_int(patch, "patch", min_val=1, max_val=8)
    else:
        from ..data.tabular import fashion_mnist

        sp = fashion_mnist(n_train=n_train, n_test=n_test, seed=seed)
        pool = torch.nn.functional.avg_pool2d
        xtr, ytr, xte, yte = pool(sp.x_train, 2), sp.y_train, pool(sp.x_test, 2), sp.y_test
        size = 3 if patch is None else check_int(patch, "patch", min_val=1, max_val=14)
    h, w = xtr.shape[-2:]
    mask = corner_mask(h, w, size)
    rng = np.random.default_rng(seed + 101)

    def plant(x, y):
        flag = torch.from_numpy((rng.random(len(y)) < rate)) & (y == target)
        out = x.clone()
        out[flag] = paste(x[flag], mask)
        return out, flag

    xtr_p, ftr = plant(xtr, ytr)
    xte_p, fte = plant(xte, yte)
    xclean = xte.clone()
    fswap = yte != target
    xswap = xclean.clone()
    xswap[fswap] = paste(xclean[fswap], mask)
    return ShortcutData(
        x_train=xtr_p.float(),
        y_train=ytr,
        flag_train=ftr,
        x_test=xte_p.float(),
        y_test=yte,
        flag_test=fte,
        x_clean=xclean.float(),
        x_swap=xswap.float(),
        flag_swap=fswap,
        x_clean_train=xtr.clone().float(),
        mask=mask,
        target=target,
        name=name,
    )


@dataclass(frozen=True)
class BorderData:
    """Two-class images ``(N, 1, H, W)`` with a uniform-noise border (:mod:`icml24.data.spurious`), as tensors.

    Parameters
    ----------
    x_train, y_train : torch.Tensor
        Training images (float32, centred and scaled block by block) and labels in {0, 1}.
    x_test, y_test : torch.Tensor
        Held-out images and labels.
    mask : torch.Tensor
        ``(1, H, W)`` bool, True on the border.
    name : str
        Data set name.
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    mask: torch.Tensor
    name: str


def border_data(name: str = "digits-border", *, n_train: int = 2000, seed: int = 0) -> BorderData:
    """Load the noise-border images of :mod:`icml24.data.spurious` as image tensors (label -1 becomes class 0).

    ``digits-border`` is scikit-learn's digits 1 vs 7 with a 4-pixel border (16x16, all 361 images: 261 to train,
    100 held out); ``fashion-border`` is Fashion-MNIST sneaker vs ankle boot with a 10-pixel border (48x48,
    ``n_train`` training and 1000 test images).

    Parameters
    ----------
    name : {"digits-border", "fashion-border"}, default "digits-border"
    n_train : int, default 2000
        Fashion-MNIST training images (digits uses all of its images).
    seed : int, default 0

    Returns
    -------
    BorderData
    """
    from ..data.spurious import digits_border, fashion_border

    name = check_choice(name, "data", BORDER_DATASETS)
    n_train = check_int(n_train, "n_train", min_val=20)
    seed = check_seed(seed)
    sd = digits_border(261, n_test=100, seed=seed) if name == "digits-border" else fashion_border(n_train, seed=seed)
    h, w = sd.shape

    def images(z: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(z.reshape(-1, 1, h, w)).float()

    def labels(g: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(g > 0).long()

    return BorderData(
        x_train=images(sd.z_train),
        y_train=labels(sd.g_train),
        x_test=images(sd.z_test),
        y_test=labels(sd.g_test),
        mask=torch.from_numpy(sd.mask.reshape(1, h, w)),
        name=name,
    )
