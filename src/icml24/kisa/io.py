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

GROUPS = ("video_frame", "key_frame", "label", "caption", "gtscore")


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
        The ``.h5`` file to write (replaced if it exists).
    frames : sequence of numpy.ndarray
        Per demonstration ``(T, H, W, 3)`` uint8 frames.
    labels : sequence of array-like
        Per demonstration ``(T,)`` integer skill ids.
    keyframes : sequence of array-like
        Per demonstration increasing keyframe indices.
    captions : sequence of sequences of str, optional
        Per demonstration the skill text of every frame.
    gtscores : sequence of array-like, optional
        Per demonstration ``(T,)`` monotonic targets.

    Returns
    -------
    pathlib.Path
        The file written.
    """
    require("h5py", extra="video", what="the KISA HDF5 reader")
    import h5py

    if isinstance(frames, np.ndarray) or not isinstance(frames, Sequence) or not len(frames):
        raise InputError("frames must be a non-empty list of (T, H, W, 3) uint8 arrays, one per demonstration")
    n = len(frames)
    for name, value in (("labels", labels), ("keyframes", keyframes), ("captions", captions), ("gtscores", gtscores)):
        if value is not None and (not isinstance(value, Sequence) or len(value) != n):
            raise InputError(f"{name} must be a list with one entry per demonstration ({n})")
    rows = []
    for i in range(n):
        f = np.asarray(frames[i])
        if f.ndim != 4 or f.shape[-1] != 3 or f.dtype != np.uint8 or f.shape[0] == 0:
            raise InputError(f"frames[{i}] must be a (T, H, W, 3) uint8 array, got {f.dtype} {f.shape}")
        y = np.asarray(labels[i])
        if y.shape != (f.shape[0],) or y.dtype.kind not in "iu":
            raise InputError(f"labels[{i}] must hold one integer per frame ({f.shape[0]}), got shape {y.shape}")
        k = np.asarray(keyframes[i])
        if k.ndim != 1 or k.dtype.kind not in "iu" or k.size == 0 or k.min() < 0 or k.max() >= f.shape[0]:
            raise InputError(f"keyframes[{i}] must be frame indices in [0, {f.shape[0] - 1}]")
        c = None if captions is None else [str(s) for s in captions[i]]
        if c is not None and len(c) != f.shape[0]:
            raise InputError(f"captions[{i}] must hold one text per frame ({f.shape[0]}), got {len(c)}")
        g = None if gtscores is None else np.asarray(gtscores[i], np.float64).reshape(-1)
        if g is not None and (g.shape != (f.shape[0],) or not np.isfinite(g).all()):
            raise InputError(f"gtscores[{i}] must hold one finite number per frame ({f.shape[0]})")
        rows.append((f, y.astype(np.int64), k.astype(np.int64), c, g))
    path = Path(path)
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

    path = Path(path)
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
