"""The images of the ensemble experiments: digits or Fashion-MNIST, standardised, with Gaussian-noise queries, and
an equivariant plane-vector target on them.

Fashion-MNIST (the paper's data set) is read from the data root and 2x2 average-pooled to 14x14: block pooling
commutes with quarter turns and flips, so the group still acts exactly.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_choice, check_int, check_seed
from .groups import check_images

__all__ = ["DATASETS", "FASHION_STAND_IN", "load_images", "moment_target"]

DATASETS = ("digits", "fashion-mnist")
FASHION_STAND_IN = "Fashion-MNIST is not under the data root: scikit-learn's 8x8 digits stand in"


def load_images(name: str, n_train: int, n_test: int, seed: int = 0) -> dict:
    """Square images standardised by one scalar mean and standard deviation (a rotation-invariant map).

    Parameters
    ----------
    name : {"digits", "fashion-mnist"}
        Digits: scikit-learn's 8x8 digits. Fashion-MNIST: read from the data root, 2x2-pooled to 14x14.
    n_train, n_test : int
        Subset sizes, drawn uniformly at random (not class-stratified) (digits: at most 1347 and 450).
    seed : int, default 0

    Returns
    -------
    dict
        ``x_train, y_train, x_test, y_test`` (float32 images ``(N, 1, H, H)`` and int64 labels),
        ``classes`` (int) and ``noise`` (Gaussian images of the test set's size, the off-manifold inputs).
    """
    name = check_choice(name, "data", DATASETS)
    n_train = check_int(n_train, "n_train", min_val=1)
    n_test = check_int(n_test, "n_test", min_val=1)
    seed = check_seed(seed)
    if name == "digits":
        from ..data.tabular import digits

        sp = digits(flatten=False, seed=seed)
        rng = np.random.default_rng(seed)
        itr = rng.permutation(len(sp.y_train))[:n_train]
        ite = rng.permutation(len(sp.y_test))[:n_test]
        xtr, ytr, xte, yte = sp.x_train[itr], sp.y_train[itr], sp.x_test[ite], sp.y_test[ite]
    else:
        from ..data.tabular import fashion_mnist

        sp = fashion_mnist(n_train=n_train, n_test=n_test, seed=seed)
        pool = torch.nn.functional.avg_pool2d
        xtr, ytr, xte, yte = pool(sp.x_train, 2), sp.y_train, pool(sp.x_test, 2), sp.y_test
    mu, sd = xtr.mean(), xtr.std()
    gen = torch.Generator().manual_seed(seed + 7)
    return {
        "x_train": (xtr - mu) / sd,
        "y_train": ytr,
        "x_test": (xte - mu) / sd,
        "y_test": yte,
        "classes": 10,
        "noise": torch.randn(xte.shape, generator=gen),
    }


def moment_target(x: torch.Tensor) -> torch.Tensor:
    """An equivariant plane-vector target: the first moment of the squared intensities about the centre,
    ``sum_p x_p^2 v_p`` (``v_p`` the pixel's (row, column) offset), divided by the number of pixels.

    Squaring keeps it equivariant (a pointwise map commutes with pixel permutations) and makes it nonlinear
    in ``x``: ``moment_target(g x) = Group.vector_rep(g) @ moment_target(x)`` for every element of D4.

    Parameters
    ----------
    x : torch.Tensor
        Square images ``(N, ..., H, H)``.

    Returns
    -------
    torch.Tensor
        ``(N, 2)``.
    """
    x = check_images(x)
    if not isinstance(x, torch.Tensor) or x.ndim < 3:
        raise InputError("x must be a torch.Tensor of images (N, ..., H, H)")
    h = x.shape[-1]
    off = torch.arange(h, dtype=x.dtype) - (h - 1) / 2.0
    w = (x**2).reshape(len(x), -1, h, h).sum(1)
    return torch.stack([(w * off[:, None]).sum((1, 2)), (w * off[None, :]).sum((1, 2))], 1) / (h * h)
