"""Fetch the public data sets the project reads from the data root, as torchvision and PyG do.

:data:`DATASETS` records, for every data set a loader reads, where each file lies under the data root, the
upstream URL it comes from, and the sha256 and size it must have. :func:`fetch` downloads what is missing into
``<file>.part`` (resuming a ``.part`` left by an interrupted download with an HTTP ``Range`` request), checks
the sha256, and only then renames it to its final name: nothing half-written ever sits under a final name.
Loaders never call it; ``icml24 data fetch NAME`` does (:mod:`icml24.data.cli`).
The sources and checksums are in :mod:`icml24.data.catalogue`, the downloader in :mod:`icml24.data.download`.

``ICML24_MIRROR`` (or ``mirror=``) replaces every upstream URL by ``<mirror>/<data set name>/<relative path>``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from ..errors import DataUnavailable, InputError
from ._root import data_root
from .catalogue import DATASETS, DataFile, Dataset  # noqa: F401 - importable from here as before
from .download import (  # noqa: F401 - importable from here as before
    MIRROR_ENV,
    check_sha256,
    download,
    file_present,
    mirror_base,
    progress_bar,
    require_writable,
)


# --------------------------------------------------------------------------------------------- look-ups
def get(name: str) -> Dataset:
    """Return the registered data set called ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`DATASETS` (case and ``_`` versus ``-`` do not matter).

    Returns
    -------
    Dataset

    Raises
    ------
    InputError
        If no data set has that name.
    """
    key = str(name).strip().lower().replace("_", "-")
    if key not in DATASETS:
        raise InputError(f"unknown data set {name!r}", f"choose from: {', '.join(DATASETS)}")
    return DATASETS[key]


def status(name: str, root: str | os.PathLike | None = None) -> dict[str, bool]:
    """Say which files of a data set are present under the data root.

    A file is present when it exists with the recorded size (for a ``.gz`` file, also when its gzip trailer
    records the recorded decompressed size). Nothing is hashed: :func:`verify` does that.

    Parameters
    ----------
    name : str
        The data set.
    root : str or os.PathLike, optional
        The data root (default :func:`~icml24.data.data_root`).

    Returns
    -------
    dict of str to bool
        Each file's path relative to the data root, and whether it is present.
    """
    ds, base = get(name), data_root(root)
    return {f.path: file_present(f, base / f.path) for f in ds.files}


def is_present(name: str, root: str | os.PathLike | None = None) -> bool:
    """Whether every file of a data set is present under the data root (see :func:`status`).

    Parameters
    ----------
    name : str
    root : str or os.PathLike, optional

    Returns
    -------
    bool
    """
    return all(status(name, root).values())


def missing(root: str | os.PathLike | None = None) -> list[str]:
    """Names of the registered data sets not (wholly) present under the data root, fetchable or not.

    Parameters
    ----------
    root : str or os.PathLike, optional

    Returns
    -------
    list of str
    """
    return [n for n in DATASETS if not is_present(n, root)]


def can_fetch(name: str, mirror: str | None = None) -> bool:
    """Whether :func:`fetch` can download a data set: from upstream, or from a mirror (``ICML24_MIRROR``).

    Parameters
    ----------
    name : str
    mirror : str, optional
        A mirror's base URL; default ``$ICML24_MIRROR``.

    Returns
    -------
    bool
        True when every file has a sha256 and either a mirror is set or the data set is fetchable upstream.
    """
    ds = get(name)
    if any(f.sha256 is None for f in ds.files):
        return False
    return mirror_base(mirror) is not None or (ds.fetchable and all(f.url for f in ds.files))


def verify(names: str | Iterable[str], root: str | os.PathLike | None = None) -> list[Path]:
    """Hash every present file of the named data sets; raise :class:`DataError` on the first that fails.

    Parameters
    ----------
    names : str or iterable of str
    root : str or os.PathLike, optional

    Returns
    -------
    list of pathlib.Path
        The files checked (absent files are skipped).

    Raises
    ------
    DataError
        If a present file's sha256 differs from the recorded one; nothing is deleted.
    """
    return _verify(_datasets(names), data_root(root))


def _verify(sets: list[Dataset], base: Path) -> list[Path]:
    checked = []
    for ds in sets:
        for f in ds.files:
            path = base / f.path
            if file_present(f, path) and f.sha256 is not None:
                check_sha256(ds, f, path)
                checked.append(path)
    return checked


# ----------------------------------------------------------------------------------------------- fetch
def fetch(
    names: str | Iterable[str],
    root: str | os.PathLike | None = None,
    *,
    progress: bool | None = None,
    mirror: str | None = None,
    timeout: float = 30,
    verify: bool = False,
) -> list[Path]:
    """Download the missing files of the named data sets into the data root, each checked by its sha256.

    Each file goes to ``<file>.part`` (an existing ``.part`` is resumed with an HTTP ``Range`` request; a server
    that answers 200 instead of 206 restarts it), is checked, and is renamed to its final name with
    :func:`os.replace`. Present files are left alone (and hashed when ``verify``).

    Parameters
    ----------
    names : str or iterable of str
        Data set names (keys of :data:`DATASETS`).
    root : str or os.PathLike, optional
        The data root to write into (default :func:`~icml24.data.data_root`).
    progress : bool, optional
        Show a tqdm progress bar on stderr; default: when stderr is a terminal.
    mirror : str, optional
        A base URL replacing every upstream URL by ``<mirror>/<name>/<relative path>``; default
        ``$ICML24_MIRROR``.
    timeout : float, default 30
        Seconds to wait for a connection or for data.
    verify : bool, default False
        Also hash the files already present (:func:`verify`).

    Returns
    -------
    list of pathlib.Path
        The files downloaded (empty when everything was present).

    Raises
    ------
    InputError
        An unknown name.
    DataUnavailable
        The data set cannot be fetched (no upstream, no mirror), the data root is not writable, or a download
        failed: unreachable, an HTTP error, or fewer bytes than announced (the ``.part`` is kept for resuming).
    DataError
        A downloaded file's sha256 differs from the recorded one (its ``.part`` is deleted), or with ``verify``,
        a present file's does.
    """
    sets, base, url_base = _datasets(names), data_root(root), mirror_base(mirror)
    written: list[Path] = []
    for ds in sets:
        if verify:
            _verify([ds], base)
        todo = [f for f in ds.files if not file_present(f, base / f.path)]
        if not todo:
            continue
        if not can_fetch(ds.name, url_base):
            raise DataUnavailable(
                f"{ds.name} cannot be downloaded: {len(todo)} of {len(ds.files)} files missing in {base / ds.folder}",
                ds.hint or "its checksums are unknown here",
            )
        require_writable(ds, base, todo)
        bar = progress_bar(ds, todo, progress)
        try:
            for f in todo:
                written.append(download(ds, f, base, url_base, timeout, bar))
        finally:
            bar.close()
    return written


# ------------------------------------------------------------------------------------------------ helpers
def _datasets(names: str | Iterable[str]) -> list[Dataset]:
    names = [names] if isinstance(names, str) else list(names)
    out: list[Dataset] = []
    for n in names:
        ds = get(n)
        if ds not in out:
            out.append(ds)
    return out


__all__ = [
    "DATASETS",
    "DataFile",
    "Dataset",
    "MIRROR_ENV",
    "can_fetch",
    "data_root",
    "fetch",
    "get",
    "is_present",
    "missing",
    "status",
    "verify",
]
