"""Classification data as tensors: scikit-learn's digits, Fashion-MNIST from the data root, Gaussian mixtures."""

from __future__ import annotations

import gzip
import os
import struct
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from ..errors import DataError, InputError
from ..validation import check_probability, check_seed
from ._root import data_root, require_files


@dataclass
class Split:
    """A train/test split of a classification data set, as tensors (``x`` float32, ``y`` int64).

    Parameters
    ----------
    x_train, y_train : torch.Tensor
        Training inputs ``(N, ...)`` (float32) and labels ``(N,)`` (int64).
    x_test, y_test : torch.Tensor
        Test inputs ``(M, ...)`` (float32) and labels ``(M,)`` (int64).
    classes : tuple of str, default ()
        Class names, indexed by label; empty when unnamed.
    info : dict, optional
        Anything else the loader reports (its source, ground truth such as class means).
    """

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    classes: tuple[str, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def num_classes(self) -> int:
        """Number of classes: ``len(classes)`` when named, else one more than the largest label.

        Returns
        -------
        int
        """
        return len(self.classes) if self.classes else int(max(self.y_train.max(), self.y_test.max())) + 1

    @property
    def num_features(self) -> int:
        """Number of input features per example: the product of ``x_train``'s non-batch dimensions.

        Returns
        -------
        int
        """
        return int(np.prod(self.x_train.shape[1:]))

    def __repr__(self) -> str:
        return f"Split(train={tuple(self.x_train.shape)}, test={tuple(self.x_test.shape)}, classes={self.num_classes})"


def _stratified_indices(y: np.ndarray, n: int | None, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices drawn without replacement, class proportions kept (all indices, shuffled, if n is None)."""
    if n is None or n >= len(y):
        return rng.permutation(len(y))
    classes, counts = np.unique(y, return_counts=True)
    quota = np.floor(counts / counts.sum() * n).astype(int)
    quota[np.argsort(-(counts / counts.sum() * n - quota))[: n - quota.sum()]] += 1
    out = [rng.choice(np.flatnonzero(y == c), size=q, replace=False) for c, q in zip(classes, quota)]
    return rng.permutation(np.concatenate(out))


def _check_fraction(value: float, name: str) -> float:
    return check_probability(value, name, open_left=True, open_right=True)


def _check_classes(classes: Sequence[int] | None, available: int) -> list[int] | None:
    if classes is None:
        return None
    classes = list(classes)
    if (
        len(classes) < 2
        or len(set(classes)) != len(classes)
        or any(not isinstance(c, (int, np.integer)) or not 0 <= c < available for c in classes)
    ):
        raise InputError(f"classes must be at least two distinct labels in 0..{available - 1}, got {classes}")
    return [int(c) for c in classes]


def digits(
    *, classes: Sequence[int] | None = None, test_size: float = 0.25, seed: int = 0, flatten: bool = True
) -> Split:
    """Load scikit-learn's bundled 8x8 handwritten digits (1797 images), scaled to [0, 1], stratified split.

    Parameters
    ----------
    classes : sequence of int, optional
        Keep only those digits and relabel them 0..k-1 in the given order (e.g. ``[0, 1]`` for a binary
        task); at least two distinct digits. All ten by default.
    test_size : float, default 0.25
        Fraction of the examples in the test set, in (0, 1).
    seed : int, default 0
        Seed of the stratified split.
    flatten : bool, default True
        Return inputs of shape ``(N, 64)``; ``flatten=False`` returns images of shape ``(N, 1, 8, 8)``.

    Returns
    -------
    Split
        With class names ``"0"``..``"9"`` (or the kept digits) and ``info["source"]``.

    Raises
    ------
    InputError
        If ``classes``, ``test_size`` or ``seed`` is invalid.
    """
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    check_seed(seed)
    test_size = _check_fraction(test_size, "test_size")
    keep = _check_classes(classes, 10)
    bunch = load_digits()
    x = bunch.data.astype(np.float32) / 16.0
    y = bunch.target.astype(np.int64)
    names = tuple(str(c) for c in range(10))
    if keep is not None:
        mask = np.isin(y, keep)
        x, y = x[mask], np.array([keep.index(v) for v in y[mask]], dtype=np.int64)
        names = tuple(str(c) for c in keep)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=test_size, random_state=seed, stratify=y)
    shape = (-1, 64) if flatten else (-1, 1, 8, 8)
    return Split(
        torch.from_numpy(xtr).reshape(shape),
        torch.from_numpy(ytr),
        torch.from_numpy(xte).reshape(shape),
        torch.from_numpy(yte),
        names,
        {"source": "sklearn.datasets.load_digits"},
    )


FASHION_CLASSES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
_FASHION_FILES = (
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
)


def _read_idx(path: os.PathLike, expected_dims: int) -> np.ndarray:
    """Read an idx file (gzip-compressed), the format of MNIST and Fashion-MNIST."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
        zero, dtype, dims = struct.unpack(">HBB", raw[:4])
        if zero != 0 or dtype != 0x08 or dims != expected_dims:
            raise ValueError("bad magic number")
        shape = struct.unpack(">" + "I" * dims, raw[4 : 4 + 4 * dims])
        arr = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims)
        if arr.size != int(np.prod(shape)):
            raise ValueError(f"{arr.size} bytes of data for shape {shape}")
        return arr.reshape(shape)
    except (OSError, EOFError, ValueError, struct.error) as exc:
        raise DataError(f"{path} is not a readable idx file: {exc}", "replace it with the original file") from None


def fashion_mnist(
    *,
    root: str | os.PathLike | None = None,
    n_train: int | None = None,
    n_test: int | None = None,
    seed: int = 0,
    flatten: bool = False,
    classes: Sequence[int] | None = None,
) -> Split:
    """Load Fashion-MNIST (60,000 train / 10,000 test 28x28 images, 10 classes) from the data root.

    Reads the original idx ``.gz`` files from ``<root>/fashion-mnist/FashionMNIST/raw/`` (torchvision's
    layout). Pixels are scaled to [0, 1].

    Parameters
    ----------
    root : str or os.PathLike, optional
        The data root (default ``$ICML24_DATA`` or ``~/.cache/icml24``); it may be read-only.
    n_train, n_test : int, optional
        Sizes of class-stratified subsets of the training and test sets, drawn with ``seed``; the full sets
        when None.
    seed : int, default 0
        Seed of the subsets.
    flatten : bool, default False
        Return inputs of shape ``(N, 784)`` instead of images ``(N, 1, 28, 28)``.
    classes : sequence of int, optional
        Keep only those labels, relabelled 0..k-1 in the given order; at least two distinct labels.

    Returns
    -------
    Split
        With the class names of :data:`FASHION_CLASSES` (or of the kept classes) and ``info["source"]``,
        the folder read.

    Raises
    ------
    InputError
        If ``n_train``, ``n_test``, ``classes`` or ``seed`` is invalid.
    DataUnavailable
        If any of the four idx files is missing under the data root.
    DataError
        If a file is not a readable idx file, or images and labels differ in length.
    """
    check_seed(seed)
    keep = _check_classes(classes, 10)
    for name, v in (("n_train", n_train), ("n_test", n_test)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise InputError(f"{name} must be a positive integer or None, got {v!r}")
    folder = data_root(root) / "fashion-mnist" / "FashionMNIST" / "raw"
    ftr_x, ftr_y, fte_x, fte_y = require_files(
        folder,
        _FASHION_FILES,
        "Fashion-MNIST",
        "github.com/zalandoresearch/fashion-mnist, folder data/fashion",
        fetch_name="fashion-mnist",
    )
    xtr, ytr = _read_idx(ftr_x, 3), _read_idx(ftr_y, 1)
    xte, yte = _read_idx(fte_x, 3), _read_idx(fte_y, 1)
    if len(xtr) != len(ytr) or len(xte) != len(yte):
        raise DataError(f"Fashion-MNIST images and labels in {folder} have different lengths")
    names = FASHION_CLASSES
    if keep is not None:
        mtr, mte = np.isin(ytr, keep), np.isin(yte, keep)
        remap = np.full(10, -1)
        remap[keep] = np.arange(len(keep))
        xtr, ytr, xte, yte = xtr[mtr], remap[ytr[mtr]], xte[mte], remap[yte[mte]]
        names = tuple(FASHION_CLASSES[c] for c in keep)
    rng = np.random.default_rng(seed)
    itr = _stratified_indices(ytr, n_train, rng) if n_train is not None else np.arange(len(ytr))
    ite = _stratified_indices(yte, n_test, rng) if n_test is not None else np.arange(len(yte))

    def to_x(a: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(a.astype(np.float32) / 255.0)
        return t.reshape(len(a), -1) if flatten else t.unsqueeze(1)

    return Split(
        to_x(xtr[itr]),
        torch.from_numpy(ytr[itr].astype(np.int64)),
        to_x(xte[ite]),
        torch.from_numpy(yte[ite].astype(np.int64)),
        names,
        {"source": str(folder)},
    )


def gaussian_mixture(
    n_samples: int = 1000,
    *,
    n_classes: int = 2,
    n_features: int = 2,
    separation: float = 3.0,
    noise: float = 1.0,
    weights: Sequence[float] | None = None,
    test_size: float = 0.25,
    seed: int = 0,
) -> Split:
    """Generate a Gaussian mixture classification problem with known ground truth.

    Class means are ``separation / sqrt(2)`` times orthonormal directions (so any two means are
    ``separation`` apart; with more classes than features the directions are random unit vectors instead);
    each sample is its class mean plus isotropic Gaussian noise of standard deviation ``noise``.

    Parameters
    ----------
    n_samples : int, default 1000
        Number of samples, train and test together (>= 4).
    n_classes : int, default 2
        Number of classes (>= 2).
    n_features : int, default 2
        Input dimension (>= 1).
    separation : float, default 3.0
        Distance between any two class means (finite, >= 0).
    noise : float, default 1.0
        Standard deviation of the isotropic Gaussian noise (finite, > 0).
    weights : sequence of float, optional
        Class proportions, ``n_classes`` non-negative numbers (normalised to sum to one); uniform by default.
    test_size : float, default 0.25
        Fraction of the samples in the test set, in (0, 1) (at least one sample).
    seed : int, default 0
        Seed of the means, the samples and the split.

    Returns
    -------
    Split
        Float32 inputs ``(N, n_features)``, class names ``"0"``, ``"1"``, ...; ``info`` holds the ``means``,
        the normalised ``weights`` and the Bayes-optimal ``bayes_accuracy`` estimated on 20,000 fresh samples.

    Raises
    ------
    InputError
        If an argument is out of range.
    """
    check_seed(seed)
    for name, v, lo in (("n_samples", n_samples, 4), ("n_classes", n_classes, 2), ("n_features", n_features, 1)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise InputError(f"{name} must be an integer >= {lo}, got {v!r}")
    if not np.isfinite(separation) or separation < 0:
        raise InputError(f"separation must be finite and >= 0, got {separation!r}")
    if not np.isfinite(noise) or noise <= 0:
        raise InputError(f"noise must be finite and > 0, got {noise!r}")
    test_size = _check_fraction(test_size, "test_size")
    if weights is None:
        w = np.full(n_classes, 1.0 / n_classes)
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (n_classes,) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise InputError(f"weights must be {n_classes} non-negative numbers, got {list(weights)}")
        w = w / w.sum()
    rng = np.random.default_rng(seed)
    g = rng.standard_normal((n_features, n_classes))
    if n_classes <= n_features:
        dirs = np.linalg.qr(g)[0].T[:n_classes]
    else:
        dirs = (g / np.linalg.norm(g, axis=0, keepdims=True)).T
    means = dirs * separation / np.sqrt(2.0)

    def sample(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = rng.choice(n_classes, size=n, p=w)
        return means[y] + noise * rng.standard_normal((n, n_features)), y

    x, y = sample(n_samples)
    n_test = max(1, int(round(test_size * n_samples)))
    perm = rng.permutation(n_samples)
    te, tr = perm[:n_test], perm[n_test:]
    xb, yb = sample(20000)
    d2 = ((xb[:, None, :] - means[None]) ** 2).sum(-1) / (2 * noise**2) - np.log(w)[None]
    bayes = float((d2.argmin(1) == yb).mean())
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32))  # noqa: E731
    li = lambda a: torch.from_numpy(a.astype(np.int64))  # noqa: E731
    return Split(
        t(x[tr]),
        li(y[tr]),
        t(x[te]),
        li(y[te]),
        tuple(str(c) for c in range(n_classes)),
        {"means": torch.from_numpy(means), "weights": torch.from_numpy(w), "bayes_accuracy": bayes},
    )
