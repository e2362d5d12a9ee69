"""Demonstrations in the official KISA HDF5 layout, read and written with h5py.

One file holds N demonstrations in five groups, each with datasets ``array_0`` ... ``array_{N-1}``:
``video_frame`` (T x H x W x 3 uint8), ``key_frame`` (keyframe indices), ``label`` (per-frame skill id),
``caption`` (per-frame skill text, bytes) and ``gtscore`` (T x 1 monotonic target), as the official
``Dataset/`` preprocessing and ``gtscore_calvin.py`` write them. ``gtscore`` is optional on reading.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import DataError, InputError
from ..extras import require
from .encoders import check_texts

GROUPS = ("video_frame", "key_frame", "label", "caption", "gtscore")


def _path(path) -> Path:
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise InputError(f"path must be a file name (str or os.PathLike), got {path!r:.60}")
    return Path(path)


def write_demos_hdf5(
    path: str | os.PathLike,
    frames: Sequence[np.ndarray],
    labels: Sequence,
    keyframes: Sequence,
    captions: Sequence[Sequence[str]] | None = None,
    gtscores: Sequence | None = None,
) -> Path:
    """Write demonstrations in the official HDF5 layout (atomically: a temporary file renamed).

    Parameters
    ----------
    path : str or os.PathLike
        The ``.h5`` file to write (replaced if it exists); its folder must exist.
    frames : sequence of numpy.ndarray
        Per demonstration ``(T, H, W, 3)`` uint8 frames.
    labels : sequence of array-like
        Per demonstration ``(T,)`` non-negative integer skill ids.
    keyframes : sequence of array-like
        Per demonstration strictly increasing keyframe indices.
    captions : sequence of lists of str, optional
        Per demonstration the skill text of every frame (a list of str, not one string).
    gtscores : sequence of array-like, optional
        Per demonstration ``(T,)`` monotonic targets.

    Returns
    -------
    pathlib.Path
        The file written.
    """
    require("h5py", extra="video", what="the KISA HDF5 reader")
    import h5py

    path = _path(path)
    if path.is_dir() or not path.parent.is_dir():
        raise InputError(f"path {str(path)!r} must name a file in an existing folder")
    if isinstance(frames, (str, bytes, np.ndarray)) or not isinstance(frames, Sequence) or not len(frames):
        raise InputError("frames must be a non-empty list of (T, H, W, 3) uint8 arrays, one per demonstration")
    n = len(frames)
    for name, value in (("labels", labels), ("keyframes", keyframes), ("captions", captions), ("gtscores", gtscores)):
        optional = name in ("captions", "gtscores")
        if (value is not None or not optional) and (
            isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != n
        ):
            raise InputError(f"{name} must be a list with one entry per demonstration ({n})")
    rows = []
    for i in range(n):
        f = _array(frames[i])
        if f.ndim != 4 or f.shape[-1] != 3 or f.dtype != np.uint8 or f.shape[0] == 0:
            raise InputError(f"frames[{i}] must be a (T, H, W, 3) uint8 array, got {f.dtype} {f.shape}")
        y = _array(labels[i])
        if y.shape != (f.shape[0],) or y.dtype.kind not in "iu" or (y < 0).any():
            raise InputError(f"labels[{i}] must hold one skill id (an integer >= 0) per frame ({f.shape[0]})")
        k = _array(keyframes[i])
        bad_k = k.ndim != 1 or k.dtype.kind not in "iu" or k.size == 0
        if bad_k or k.min() < 0 or k.max() >= f.shape[0] or (np.diff(k) <= 0).any():
            raise InputError(f"keyframes[{i}] must be strictly increasing frame indices in [0, {f.shape[0] - 1}]")
        c = None if captions is None else check_texts(captions[i], f"captions[{i}]")
        if c is not None and len(c) != f.shape[0]:
            raise InputError(f"captions[{i}] must hold one text per frame ({f.shape[0]}), got {len(c)}")
        g = None if gtscores is None else _array(gtscores[i]).reshape(-1)
        if g is not None and (g.shape != (f.shape[0],) or g.dtype.kind not in "fiu" or not np.isfinite(g).all()):
            raise InputError(f"gtscores[{i}] must hold one finite number per frame ({f.shape[0]})")
        rows.append((f, y.astype(np.int64), k.astype(np.int64), c, None if g is None else g.astype(np.float64)))
    tmp = path.with_name(path.name + ".tmp")
    with h5py.File(tmp, "w") as hf:
        groups = {name: hf.create_group(name) for name in GROUPS}
        for i, (f, y, k, c, g) in enumerate(rows):
            groups["video_frame"].create_dataset(f"array_{i}", data=f)
            groups["key_frame"].create_dataset(f"array_{i}", data=k)
            groups["label"].create_dataset(f"array_{i}", data=y)
            if c is not None:
                groups["caption"].create_dataset(f"array_{i}", data=np.array([s.encode() for s in c], dtype="S"))
            if g is not None:
                groups["gtscore"].create_dataset(f"array_{i}", data=g.reshape(-1, 1))
    os.replace(tmp, path)
    return path


def _array(value) -> np.ndarray:
    """``np.asarray(value)``; a ragged or odd value becomes an object array, refused by the caller's checks."""
    try:
        return np.asarray(value)
    except (TypeError, ValueError):
        return np.asarray(None)


def read_demos_hdf5(path: str | os.PathLike) -> dict[str, list]:
    """Read demonstrations in the official HDF5 layout.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.h5`` file.

    Returns
    -------
    dict of str to list
        ``video_frame``, ``key_frame``, ``label`` (lists of arrays, one per demonstration), ``caption``
        (lists of str, empty lists where absent) and ``gtscore`` (``(T,)`` arrays, None where absent).
    """
    require("h5py", extra="video", what="the KISA HDF5 reader")
    import h5py

    path = _path(path)
    if not path.is_file():
        raise InputError(f"path {str(path)!r} is not a file", "give the .h5 file of the demonstrations")
    try:
        with h5py.File(path, "r") as hf:
            missing = [g for g in GROUPS[:3] if g not in hf]
            if missing:
                raise DataError(f"{path} lacks the groups {missing} of the KISA layout")
            n = len(hf["video_frame"])
            out: dict[str, list] = {g: [] for g in GROUPS}
            for i in range(n):
                key = f"array_{i}"
                out["video_frame"].append(hf["video_frame"][key][:])
                out["key_frame"].append(hf["key_frame"][key][:].astype(np.int64).reshape(-1))
                out["label"].append(hf["label"][key][:].astype(np.int64).reshape(-1))
                cap = hf["caption"][key][:] if "caption" in hf and key in hf["caption"] else []
                out["caption"].append([c.decode() if isinstance(c, bytes) else str(c) for c in cap])
                gt = hf["gtscore"][key][:].reshape(-1) if "gtscore" in hf and key in hf["gtscore"] else None
                out["gtscore"].append(gt)
    except OSError as exc:
        raise DataError(f"{path} is not a readable HDF5 file: {exc}") from None
    except KeyError as exc:
        raise DataError(f"{path} misses a demonstration of the KISA layout: {exc}") from None
    return out


__all__ = ["GROUPS", "write_demos_hdf5", "read_demos_hdf5"]
