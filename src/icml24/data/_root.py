"""Where data lives: the data root (read-only is fine) and a writable cache for processed files."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Iterable

from ..errors import DataUnavailable


def data_root(root: str | os.PathLike | None = None) -> Path:
    """Return the data root: ``root`` if given, else ``$ICML24_DATA``, else ``~/.cache/icml24``.

    The data root may be read-only; nothing is ever written into it (processed files go to :func:`cache_dir`).

    Parameters
    ----------
    root : str or os.PathLike, optional
        An explicit data root; ``~`` is expanded. When None, ``$ICML24_DATA`` is used if set and non-empty,
        and ``~/.cache/icml24`` otherwise.

    Returns
    -------
    pathlib.Path
        The data root. It is not created and need not exist.
    """
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get("ICML24_DATA", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".cache" / "icml24"


def cache_dir(*parts: str) -> Path:
    """Return a writable cache folder: ``$ICML24_CACHE``, else ``~/.cache/icml24-cache``, else the temp folder.

    The first candidate base folder in which ``<base>/<parts...>`` can be created and written wins; the
    temp-folder candidate is ``<tempdir>/icml24-cache-<uid>``.

    Parameters
    ----------
    *parts : str
        Sub-folder names joined below the cache base (e.g. ``cache_dir("planetoid", key)``).

    Returns
    -------
    pathlib.Path
        The folder, created if needed and writable.

    Raises
    ------
    DataUnavailable
        If no candidate folder is writable (set ``ICML24_CACHE`` to a writable folder).
    """
    env = os.environ.get("ICML24_CACHE", "").strip()
    candidates = [Path(env).expanduser()] if env else []
    candidates += [
        Path.home() / ".cache" / "icml24-cache",
        Path(tempfile.gettempdir()) / f"icml24-cache-{os.getuid() if hasattr(os, 'getuid') else 0}",
    ]
    for base in candidates:
        path = base.joinpath(*parts)
        try:
            path.mkdir(parents=True, exist_ok=True)
            if os.access(path, os.W_OK):
                return path
        except OSError:
            continue
    raise DataUnavailable("no writable cache folder", "set ICML24_CACHE to a writable folder")


def require_files(
    folder: Path, names: Iterable[str], dataset: str, source: str, fetch_name: str | None = None
) -> list[Path]:
    """Return the paths of ``names`` in ``folder``; raise :class:`DataUnavailable` naming the missing ones.

    Parameters
    ----------
    folder : pathlib.Path
        The folder that should hold the files.
    names : iterable of str
        File names expected in ``folder``.
    dataset : str
        Human-readable name of the data set, used in the error message.
    source : str
        Where the files can be obtained, used in the error's hint.
    fetch_name : str, optional
        The data set's name in :data:`icml24.data.fetch.DATASETS`: the hint then says to run
        ``icml24 data fetch <fetch_name>`` first.

    Returns
    -------
    list of pathlib.Path
        ``folder / name`` for each name, in the given order.

    Raises
    ------
    DataUnavailable
        If any of the files is missing (or is not a regular file); the message lists every missing one.
    """
    paths = [folder / n for n in names]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        where = f"put the files there ({source}) or point ICML24_DATA at a data root that has them"
        raise DataUnavailable(
            f"{dataset} is not in the data root: missing {', '.join(missing)} in {folder}",
            f"run 'icml24 data fetch {fetch_name}', or {where}" if fetch_name else where,
        )
    return paths


def fingerprint(paths: Iterable[Path]) -> str:
    """Return a short hash of the files' absolute paths, sizes and modification times (cache keys).

    Parameters
    ----------
    paths : iterable of pathlib.Path
        Existing files; the order matters.

    Returns
    -------
    str
        The first 12 hexadecimal digits of a SHA-1 over each file's resolved path, size and ``st_mtime_ns``.

    Raises
    ------
    OSError
        If a file cannot be ``stat``-ed (e.g. it does not exist).
    """
    h = hashlib.sha1()
    for p in paths:
        st = p.stat()
        h.update(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:12]
