"""Fashion-MNIST clients with per-client domain shifts, 32 x 32 x 3: DeSA's second task, read from the data root.

Each client receives *disjoint* Fashion-MNIST images (class-stratified, drawn once per seed from the 60,000
training and 10,000 test images under ``$ICML24_DATA/fashion-mnist``) and renders them through its own shift,
cycling through :data:`SHIFTS`:

``plain``
    The grey image padded from 28 x 28 to 32 x 32, in three channels.
``inverted``
    White background, dark garment (``1 - x``).
``lowres``
    Averaged down to 8 x 8 and upsampled bilinearly (a low-resolution domain).
``texture``
    MNIST-M style: ``|texture - x|`` per channel over a random smooth colour texture.
``colour``
    A random garment colour on a random background colour, shifted by up to 3 pixels, with Gaussian noise.

Same seed, same arrays.
"""

from __future__ import annotations

import functools
import os

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError
from ..validation import check_int, check_seed
from .world import DigitDomain

__all__ = ["SHIFTS", "fashion_domains"]

SHIFTS = ("plain", "inverted", "lowres", "texture", "colour")


@functools.lru_cache(maxsize=1)
def _fashion(root):
    from ..data.tabular import fashion_mnist

    sp = fashion_mnist(root=root)
    return sp.x_train.numpy(), sp.y_train.numpy(), sp.x_test.numpy(), sp.y_test.numpy()


def _split(y: np.ndarray, n_clients: int, per: int, rng: np.random.Generator, name: str) -> list[np.ndarray]:
    """Disjoint class-stratified index sets of ``per`` images for each client."""
    out = [[] for _ in range(n_clients)]
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(y == c))
        k = per // 10 + (1 if c < per % 10 else 0)
        if k * n_clients > len(idx):
            raise InputError(f"{name} x n_clients asks {k * n_clients} images of class {c}; there are {len(idx)}")
        for i in range(n_clients):
            out[i].append(idx[i * k : (i + 1) * k])
    return [rng.permutation(np.concatenate(o)) for o in out]


def _textures(n: int, rng: np.random.Generator) -> np.ndarray:
    low = torch.from_numpy(rng.random((n, 3, 4, 4), dtype=np.float32))
    return F.interpolate(low, size=(32, 32), mode="bilinear", align_corners=False).numpy()


def _render(x: np.ndarray, shift: str, rng: np.random.Generator) -> np.ndarray:
    """``x``: ``(N, 28, 28)`` in [0, 1] -> ``(N, 3, 32, 32)`` float32 in [0, 1]."""
    g = np.pad(x, ((0, 0), (2, 2), (2, 2)))[:, None]
    if shift == "plain":
        out = np.repeat(g, 3, 1)
    elif shift == "inverted":
        out = np.repeat(1.0 - g, 3, 1)
    elif shift == "lowres":
        t = F.avg_pool2d(torch.from_numpy(g), 4)
        out = np.repeat(F.interpolate(t, size=(32, 32), mode="bilinear", align_corners=False).numpy(), 3, 1)
    elif shift == "texture":
        out = np.abs(_textures(len(g), rng) - g)
    else:  # colour
        fg = rng.random((len(g), 3, 1, 1), dtype=np.float32)
        bg = rng.random((len(g), 3, 1, 1), dtype=np.float32)
        out = g * fg + (1.0 - g) * bg
        for k, (dy, dx) in enumerate(rng.integers(-3, 4, size=(len(g), 2))):
            out[k] = np.roll(out[k], (int(dy), int(dx)), axis=(1, 2))
        out = out + 0.1 * rng.standard_normal(out.shape, dtype=np.float32)
    return np.clip(out, 0.0, 1.0).astype(np.float32)


def fashion_domains(n_clients: int, *, n_train: int = 200, n_test: int = 100, seed: int = 0, root=None) -> list:
    """Fashion-MNIST clients, each with disjoint images and its own shift (cycling through :data:`SHIFTS`).

    Parameters
    ----------
    n_clients : int
        At least 2.
    n_train, n_test : int, default 200, 100
        Images per client (class-stratified; at least 10 each).
    seed : int, default 0
    root : str or os.PathLike, optional
        The data root (default ``$ICML24_DATA``).

    Returns
    -------
    list of icml24.desa.world.DigitDomain
        ``name`` is the shift; images ``(N, 3, 32, 32)`` float32 in [0, 1], labels int64 in 0..9;
        ``info["source_index"]`` holds the Fashion-MNIST training indices used.

    Raises
    ------
    InputError
        Bad sizes or seed.
    DataUnavailable
        Fashion-MNIST is not under the data root.
    """
    n = check_int(n_clients, "n_clients", min_val=2)
    n_train = check_int(n_train, "n_train", min_val=10)
    n_test = check_int(n_test, "n_test", min_val=10)
    seed = check_seed(seed)
    if root is not None and not isinstance(root, (str, os.PathLike)):
        raise InputError(f"root must be a folder path or None, got {type(root).__name__}")
    xtr, ytr, xte, yte = _fashion(None if root is None else os.fspath(root))
    rng = np.random.default_rng([seed, 2405])
    tr, te = _split(ytr, n, n_train, rng, "n_train"), _split(yte, n, n_test, rng, "n_test")
    out = []
    for i in range(n):
        shift = SHIFTS[i % len(SHIFTS)]
        r = np.random.default_rng([seed, 2405, i])
        out.append(
            DigitDomain(
                shift,
                _render(xtr[tr[i]].reshape(-1, 28, 28), shift, r),
                ytr[tr[i]].astype(np.int64),
                _render(xte[te[i]].reshape(-1, 28, 28), shift, r),
                yte[te[i]].astype(np.int64),
                {"source": "fashion-mnist", "source_index": tr[i], "shift": shift},
            )
        )
    return out
