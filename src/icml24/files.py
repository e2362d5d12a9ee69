"""Files written so that nothing is lost: atomic writes (a temporary name in the same folder, then a rename) and
strict JSON that keeps infinities and NaN as the strings ``"Infinity"``, ``"-Infinity"``, ``"NaN"``."""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any


# ----------------------------------------------------------------------------------------------- writes
def current_umask() -> int:
    """The process's file-mode creation mask (read without changing it for longer than a call).

    Returns
    -------
    int
    """
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and an atomic rename.

    The file gets the mode an ordinary ``open(path, "w")`` would give it (0666 less the user's umask), not
    the 0600 of a temporary file.

    Parameters
    ----------
    path : str or os.PathLike
    data : bytes

    Returns
    -------
    pathlib.Path
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """:func:`atomic_write_bytes` of ``text`` encoded as UTF-8.

    Parameters
    ----------
    path : str or os.PathLike
    text : str

    Returns
    -------
    pathlib.Path
    """
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any) -> Path:
    """:func:`atomic_write_text` of ``obj`` as indented, key-sorted JSON (paths, numpy/torch scalars and
    enums converted).

    Parameters
    ----------
    path : str or os.PathLike
    obj : object

    Returns
    -------
    pathlib.Path
    """
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=json_default) + "\n")


_NONFINITE = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


def encode_nonfinite(obj: Any) -> Any:
    """Strict JSON: non-finite floats become the strings ``"Infinity"``, ``"-Infinity"`` and ``"NaN"``.

    Parameters
    ----------
    obj : object
        Nested dicts, lists and tuples are walked.

    Returns
    -------
    object
    """
    if isinstance(obj, float) and not math.isfinite(obj):
        return "NaN" if math.isnan(obj) else ("Infinity" if obj > 0 else "-Infinity")
    if isinstance(obj, dict):
        return {k: encode_nonfinite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [encode_nonfinite(v) for v in obj]
    return obj


def decode_nonfinite(record: dict[str, Any]) -> dict[str, Any]:
    """A result record as written, with its metrics' ``"Infinity"``/``"-Infinity"``/``"NaN"`` strings as floats.

    Parameters
    ----------
    record : dict

    Returns
    -------
    dict
        The same dict, changed in place.
    """
    metrics = record.get("metrics")
    if isinstance(metrics, dict):
        record["metrics"] = {k: _NONFINITE.get(v, v) if isinstance(v, str) else v for k, v in metrics.items()}
    for name in ("headline_value", "baseline_value"):
        v = record.get(name)
        if isinstance(v, str) and v in _NONFINITE:
            record[name] = _NONFINITE[v]
    return record


def json_default(obj: Any) -> Any:
    """``json.dumps``'s ``default``: paths as strings, numpy/torch scalars as numbers, enums as their values.

    Parameters
    ----------
    obj : object
        What ``json`` cannot encode by itself.

    Returns
    -------
    object
        A JSON-encodable stand-in.

    Raises
    ------
    TypeError
        For anything else.
    """
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item"):  # numpy / torch scalars
        return obj.item()
    if hasattr(obj, "value"):  # enums
        return obj.value
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


# ---------------------------------------------------------------------------------------------- environment


__all__ = [
    "current_umask",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_write_json",
    "encode_nonfinite",
    "decode_nonfinite",
    "json_default",
]
