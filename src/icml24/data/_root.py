"""Where data lives: the data root (read-only is fine) and a writable cache for processed files."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Iterable

from ..errors import DataUnavailable, InputError


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data root: ``root`` if given, else ``$ICML24_DATA``, else ``~/.cache/icml24``.

    The data root may be read-only; nothing is ever written into it (processed files go to :func:`cache_dir`).
    """
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get("ICML24_DATA", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "icml24"


def cache_dir(*parts: str) -> Path:
    """A writable cache folder: ``$ICML24_CACHE``, else ``~/.cache/icml24-cache``, else the temp folder."""
    env = os.environ.get("ICML24_CACHE", "").strip()
    candidates = [Path(env).expanduser()] if env else []
    candidates += [Path.home() / ".cache" / "icml24-cache",
                   Path(tempfile.gettempdir()) / f"icml24-cache-{os.getuid() if hasattr(os, 'getuid') else 0}"]
    for base in candidates:
        path = base.joinpath(*parts)
        try:
            path.mkdir(parents=True, exist_ok=True)
            if os.access(path, os.W_OK):
                return path
        except OSError:
            continue
    raise DataUnavailable("no writable cache folder", "set ICML24_CACHE to a writable folder")


def require_files(folder: Path, names: Iterable[str], dataset: str, source: str) -> list[Path]:
    """Return the paths of ``names`` in ``folder``; raise :class:`DataUnavailable` naming the missing ones."""
    paths = [folder / n for n in names]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise DataUnavailable(
            f"{dataset} is not in the data root: missing {', '.join(missing)} in {folder}",
            f"put the files there ({source}) or point ICML24_DATA at a data root that has them",
        )
    return paths


def fingerprint(paths: Iterable[Path]) -> str:
    """A short hash of the files' absolute paths, sizes and modification times (cache keys)."""
    h = hashlib.sha1()
    for p in paths:
        st = p.stat()
        h.update(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:12]


def check_seed(seed: object, name: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"{name} must be a non-negative integer, got {seed!r}")
    return seed
