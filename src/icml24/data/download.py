"""The downloader behind :func:`icml24.data.fetch.fetch`: one file at a time, resumable, checked, then renamed.

Each file goes to ``<file>.part`` (a ``.part`` left by an interrupted download is resumed with an HTTP ``Range``
request), its sha256 is checked, and only then is it renamed to its final name: nothing half-written ever sits
under a final name. ``ICML24_MIRROR`` (or ``mirror=``) replaces every upstream URL by
``<mirror>/<data set name>/<relative path>``.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import re
import stat
import sys
import urllib.error
import urllib.parse
import urllib.request
import zlib
from pathlib import Path

from ..errors import DataError, DataUnavailable
from .catalogue import DataFile, Dataset

MIRROR_ENV = "ICML24_MIRROR"
_CHUNK = 1 << 16


def mirror_base(mirror: str | None) -> str | None:
    """The mirror's base URL without a trailing ``/``: ``mirror``, else ``$ICML24_MIRROR``; None when unset."""
    value = (mirror if mirror is not None else os.environ.get(MIRROR_ENV, "")).strip()
    return value.rstrip("/") or None


def _url(ds: Dataset, f: DataFile, mirror: str | None) -> str:
    if mirror is not None:
        return f"{mirror}/{urllib.parse.quote(ds.name)}/{urllib.parse.quote(f.path)}"
    assert f.url is not None  # can_fetch said so
    return f.url


def file_present(f: DataFile, path: Path) -> bool:
    """Whether ``path`` is a regular file with ``f``'s size (for a ``.gz``, or with its recorded content size).

    Parameters
    ----------
    f : DataFile
        The catalogue's record of the file.
    path : pathlib.Path
        Where it lies under the data root.

    Returns
    -------
    bool
        Nothing is hashed (:func:`check_sha256` does that).
    """
    try:
        st = path.stat()
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    if f.size is None or st.st_size == f.size:
        return True
    return f.content_size is not None and _gzip_isize(path) == f.content_size % (1 << 32)


def _gzip_isize(path: Path) -> int | None:
    """The decompressed size (mod 2**32) that a gzip file's trailer records; None if it is not gzip."""
    try:
        with open(path, "rb") as fh:
            if fh.read(2) != b"\x1f\x8b":
                return None
            fh.seek(-4, os.SEEK_END)
            return int.from_bytes(fh.read(4), "little")
    except OSError:
        return None


def _sha256(path: Path, *, gunzip: bool = False) -> str:
    h = hashlib.sha256()
    with (gzip.open if gunzip else open)(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def check_sha256(ds: Dataset, f: DataFile, path: Path, *, source: str | None = None) -> None:
    """Raise DataError unless ``path`` has ``f``'s sha256 (or, for ``.gz``, its content's).

    Parameters
    ----------
    ds : Dataset
        The data set ``f`` belongs to (named in the message).
    f : DataFile
        The catalogue's record of the file.
    path : pathlib.Path
        The file to hash.
    source : str, optional
        The URL ``path`` (a ``.part``) was downloaded from; it is deleted when it fails.

    Raises
    ------
    DataError
        If neither the file's sha256 nor (for ``.gz``) its content's matches the record.
    """
    got = _sha256(path)
    if got == f.sha256:
        return
    expected = f"sha256 {f.sha256}"
    if f.content_sha256 is not None:
        try:
            content = _sha256(path, gunzip=True)
        except (OSError, EOFError, zlib.error):
            content = "none (not gzip)"
        if content == f.content_sha256:
            return
        expected += f" (or decompressed {f.content_sha256})"
        got += f" (decompressed {content})"
    if source is not None:
        path.unlink(missing_ok=True)
        what = f"{f.path} downloaded from {source}"
        hint = "the server sent other bytes than recorded; nothing was kept"
    else:
        what = str(path)
        hint = f"delete it and run 'icml24 data fetch {ds.name}'"
    raise DataError(f"{ds.name}: {what} failed its checksum: expected {expected}, got sha256 {got}", hint)


def _writable(folder: Path) -> bool:
    """A folder we may write into: writable for us, and with a write bit (root ignores the bits otherwise)."""
    try:
        return os.access(folder, os.W_OK) and bool(folder.stat().st_mode & 0o222)
    except OSError:
        return False


def require_writable(ds: Dataset, base: Path, todo: list[DataFile]) -> None:
    """Raise DataUnavailable unless every folder that ``todo``'s files go to can be written (or made)."""
    for folder in sorted({(base / f.path).parent for f in todo}):
        existing = folder
        while not existing.exists() and existing.parent != existing:
            existing = existing.parent
        if not existing.is_dir() or not _writable(existing):
            raise DataUnavailable(
                f"cannot fetch {ds.name}: {existing} in the data root {base} is not writable",
                "fetch into a writable folder: --root DIR or ICML24_DATA=DIR",
            )


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(ds: Dataset, todo: list[DataFile], progress: bool | None):
    """A tqdm bar on stderr over ``todo``'s bytes, or a silent stand-in (default: when stderr is a terminal)."""
    enabled = sys.stderr.isatty() if progress is None else bool(progress)
    if not enabled:
        return _NoBar()
    from tqdm import tqdm

    sizes = [f.size for f in todo]
    total = None if any(s is None for s in sizes) else sum(sizes)
    return tqdm(total=total, desc=ds.name, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr)


def _offline_hint(ds: Dataset) -> str:
    return f"check the network or set {MIRROR_ENV} to a mirror, then run 'icml24 data fetch {ds.name}' again"


def _read(resp) -> bytes:
    """The next chunk of a response; b"" at its end, or when the connection broke (a short count tells)."""
    try:
        return resp.read(_CHUNK)
    except http.client.IncompleteRead as exc:
        return exc.partial
    except (OSError, http.client.HTTPException):  # reset, timeout: truncated, reported by the caller
        return b""


_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-")


def download(ds: Dataset, f: DataFile, base: Path, mirror: str | None, timeout: float, bar) -> Path:
    """Download one file into ``<target>.part``, resuming it; check it; rename it. Return the target.

    Parameters
    ----------
    ds : Dataset
        The data set ``f`` belongs to.
    f : DataFile
        The file to download.
    base : pathlib.Path
        The data root.
    mirror : str or None
        A mirror's base URL (:func:`mirror_base`), or None for the upstream URL.
    timeout : float
        Seconds to wait for a connection or for data.
    bar : object
        A progress bar with ``update(n)`` (:func:`progress_bar`).

    Returns
    -------
    pathlib.Path
        The file under its final name.

    Raises
    ------
    DataUnavailable
        Unreachable, an HTTP error, an unwritable folder, or fewer bytes than announced (the ``.part`` is kept).
    DataError
        The downloaded bytes fail their checksum (the ``.part`` is deleted).
    """
    target = base / f.path
    part = target.with_name(target.name + ".part")
    url = _url(ds, f, mirror)
    for _attempt in range(3):
        have = part.stat().st_size if part.is_file() else 0
        if f.size is not None and have > f.size:
            part.unlink()
            have = 0
        if have and have == f.size:  # complete but never checked (interrupted before the rename)
            break
        headers = {"User-Agent": "icml24-data-fetch", "Accept-Encoding": "identity"}
        if have:
            headers["Range"] = f"bytes={have}-"
        try:
            resp = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)
        except urllib.error.HTTPError as exc:
            exc.close()
            if exc.code == 416 and have:  # the .part is no prefix the server can continue: start again
                part.unlink()
                continue
            raise DataUnavailable(
                f"{ds.name}: {url} answered HTTP {exc.code} {exc.reason}", _offline_hint(ds)
            ) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise DataUnavailable(f"{ds.name}: cannot reach {url}: {reason}", _offline_hint(ds)) from None
        with resp:
            code = getattr(resp, "status", None) or 200
            if have and code == 206:
                m = _CONTENT_RANGE.match(resp.headers.get("Content-Range", ""))
                if m is None or int(m.group(1)) != have:  # not the continuation asked for: start again
                    part.unlink()
                    continue
            elif have:  # the server ignored the Range: restart from zero
                have = 0
            length = resp.headers.get("Content-Length")
            expected = have + int(length) if length and length.isdigit() else f.size
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                out = open(part, "ab" if have else "wb")
            except OSError as exc:
                raise DataUnavailable(
                    f"cannot fetch {ds.name}: cannot write {part}: {exc.strerror or exc}",
                    "fetch into a writable folder: --root DIR or ICML24_DATA=DIR",
                ) from None
            got = have
            bar.update(have)
            try:
                with out:
                    while chunk := _read(resp):
                        out.write(chunk)
                        got += len(chunk)
                        bar.update(len(chunk))
            except OSError as exc:
                raise DataUnavailable(
                    f"cannot fetch {ds.name}: cannot write {part}: {exc.strerror or exc}",
                    "free some space or fetch into another folder with --root DIR",
                ) from None
        if expected is not None and got < expected:
            raise DataUnavailable(
                f"{ds.name}: the download of {url} stopped at {got} of {expected} bytes",
                f"run 'icml24 data fetch {ds.name}' again to resume from {part}",
            )
        break
    else:
        raise DataUnavailable(f"{ds.name}: {url} does not resume {part} consistently", f"delete {part} and retry")
    check_sha256(ds, f, part, source=url)
    os.replace(part, target)
    return target


__all__ = ["MIRROR_ENV", "download", "file_present", "check_sha256"]
