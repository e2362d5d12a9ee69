"""Run directories: atomic writes, environment capture, append-only results, resume.

A run directory ``runs/<UTC time>-<what>/`` holds

- ``config.json``: everything needed to re-run (command, methods, claim keys, scale, seed);
- ``env.json``: package versions, Python, CPU, thread count, git commit;
- ``results.jsonl``: one JSON line per finished claim, appended, flushed and fsynced, so a killed run
  loses at most the claim in flight; ``--resume`` skips the claims already there;
- ``report.md`` and plots (PNG), which claims save through :func:`save_figure`.

Every file except ``results.jsonl`` is written to a temporary name in the same folder and renamed.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import json
import logging
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

from .errors import InputError, RunDirError

log = logging.getLogger(__name__)

CONFIG = "config.json"
ENV = "env.json"
RESULTS = "results.jsonl"
REPORT = "report.md"
LOCK = ".lock"

_PACKAGES = (
    "icml24",
    "torch",
    "numpy",
    "scipy",
    "scikit-learn",
    "torch-geometric",
    "matplotlib",
    "tqdm",
    "transformers",
    "tokenizers",
    "pyscipopt",
    "rdkit",
    "hypothesis",
    "pytest",
)


from .files import (  # noqa: F401 - importable from here as before
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    current_umask,
    decode_nonfinite,
    encode_nonfinite,
    json_default,
)


def git_commit(start: str | os.PathLike | None = None) -> str | None:
    """The commit of the checkout holding this package (``+dirty`` when it has changes), or None.

    Parameters
    ----------
    start : path, optional
        Where to look (default: this package's folder).

    Returns
    -------
    str or None
    """
    where = Path(start) if start else Path(__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10
        ).stdout.strip()
        if not sha:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return sha + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def environment() -> dict[str, Any]:
    """Versions, CPU and git commit: what ``env.json`` records.

    Returns
    -------
    dict
    """
    versions = {}
    for name in _PACKAGES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    env: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "packages": versions,
        "git_commit": git_commit(),
        "icml24_data": os.environ.get("ICML24_DATA") or None,
    }
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        env["torch_threads"] = torch.get_num_threads()
        env["cuda"] = bool(torch.cuda.is_available())
    return env


# ---------------------------------------------------------------------------------------------- run dirs
def _utc_stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


@dataclass
class RunDir:
    """A run directory. Create one with :meth:`create`, reopen one with :meth:`open`.

    Parameters
    ----------
    path : pathlib.Path
    """

    path: Path

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    @classmethod
    def create(cls, out: str | os.PathLike, what: str, config: dict[str, Any]) -> "RunDir":
        """Make ``<out>/<UTC time>-<what>/`` and write ``config.json`` and ``env.json`` into it.

        Parameters
        ----------
        out : path
            The folder of run directories (created when missing).
        what : str
            A short description for the folder name.
        config : dict
            Everything needed to re-run.

        Returns
        -------
        RunDir

        Raises
        ------
        InputError
            When ``out`` is a file or cannot be written.
        """
        out = Path(out)
        if out.exists() and not out.is_dir():
            raise InputError(f"--out {out} is a file", "give a folder for run directories")
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in what)[:80] or "run"
        stamp = _utc_stamp()
        for i in range(1000):
            path = out / (f"{stamp}-{safe}" if i == 0 else f"{stamp}-{safe}-{i}")
            try:
                path.mkdir(parents=True, exist_ok=False)
                break
            except FileExistsError:
                continue
            except OSError as exc:
                raise InputError(
                    f"--out {out} is not writable: {exc.strerror or exc}", "give a folder you can write to"
                ) from None
        else:  # pragma: no cover
            raise RunDirError(f"cannot create a run directory under {out}")
        run = cls(path)
        try:
            atomic_write_json(path / CONFIG, config)
            atomic_write_json(path / ENV, environment())
        except OSError as exc:
            raise InputError(
                f"--out {out} is not writable: {exc.strerror or exc}", "give a folder you can write to"
            ) from None
        return run

    @classmethod
    def open(cls, path: str | os.PathLike) -> "RunDir":
        """Reopen an existing run directory (for ``--resume`` or ``report``); checks ``config.json``.

        Parameters
        ----------
        path : path

        Returns
        -------
        RunDir

        Raises
        ------
        RunDirError
            When it does not exist or its ``config.json`` is missing or unreadable.
        """
        path = Path(path)
        if not path.is_dir():
            raise RunDirError(f"run directory {path} does not exist", "give a folder that 'icml24 verify' wrote")
        if not (path / CONFIG).is_file():
            raise RunDirError(f"{path} has no {CONFIG}", "it is not a run directory that 'icml24 verify' wrote")
        run = cls(path)
        _ = run.config  # parse now, so that a broken config is reported before anything runs
        return run

    @property
    def config(self) -> dict[str, Any]:
        """The parsed ``config.json`` (raises :class:`RunDirError` when unreadable)."""
        try:
            return json.loads((self.path / CONFIG).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise RunDirError(f"{self.path / CONFIG} is unreadable: {exc}", "it is left as it is") from None

    def env(self) -> dict[str, Any]:
        """The parsed ``env.json``, or an empty dict when it is missing or unreadable."""
        with contextlib.suppress(OSError, json.JSONDecodeError):
            return json.loads((self.path / ENV).read_text())
        return {}

    def results(self, repair: bool = False) -> list[dict[str, Any]]:
        """The finished claims of ``results.jsonl``, in order.

        A truncated last line (a run killed while writing it) is ignored with a warning; with
        ``repair=True`` it is also cut off the file (atomically) so that appends start on a fresh line.
        Any other unreadable line is refused with :class:`RunDirError`; the file is never overwritten then.

        Parameters
        ----------
        repair : bool, default False

        Returns
        -------
        list of dict
        """
        path = self.path / RESULTS
        if not path.exists():
            return []
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise RunDirError(f"cannot read {path}: {exc}") from None
        lines = raw.split(b"\n")
        records: list[dict[str, Any]] = []
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            last = i == len(lines) - 1  # no newline after it: the write was interrupted
            try:
                rec = json.loads(line.decode("utf-8"))
                if not isinstance(rec, dict) or "key" not in rec:
                    raise ValueError("not a result record")
            except (ValueError, UnicodeDecodeError):
                if last:
                    log.warning("ignoring the truncated last line of %s (a run was killed while writing it)", path)
                    if repair:
                        good = b"\n".join(lines[:i]) + (b"\n" if i else b"")
                        atomic_write_bytes(path, good)
                    break
                raise RunDirError(
                    f"{path} line {i + 1} is unreadable", "the file is left untouched; move it away to start afresh"
                ) from None
            records.append(decode_nonfinite(rec))
        return records

    def append(self, record: dict[str, Any]) -> None:
        """Append one result line, flushed and fsynced.

        Parameters
        ----------
        record : dict
        """
        path = self.path / RESULTS
        line = json.dumps(encode_nonfinite(record), sort_keys=True, default=json_default, allow_nan=False)
        needs_newline = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
        with open(path, "a", encoding="utf-8") as f:
            if needs_newline:
                f.write("\n")
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run directory for this process: a second ``verify`` or ``--resume`` of it is refused.

        An advisory ``flock`` on ``<run>/.lock``, released when the block ends or the process dies.

        Raises
        ------
        RunDirError
            When another process holds it.
        """
        import fcntl

        path = self.path / LOCK
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise RunDirError(f"cannot lock {self.path}: {exc.strerror or exc}") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = ""
                with contextlib.suppress(OSError, ValueError):
                    holder = f" (pid {int(os.pread(fd, 32, 0).decode().strip())})"
                raise RunDirError(
                    f"run directory {self.path} is in use by another icml24 process{holder}",
                    "wait for it to finish, or resume it once it has stopped",
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def record_resume(self, **extra: Any) -> None:
        """Append this resume (time, command line, environment) to ``env.json``'s ``resumes`` list.

        Parameters
        ----------
        **extra
            More to record (``verify`` records its engine).
        """
        env = self.env()
        now = environment()
        entry = {
            **extra,
            "time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "argv": sys.argv,
            "git_commit": now.get("git_commit"),
            "packages": now.get("packages"),
            "python": now.get("python"),
        }
        env.setdefault("resumes", []).append(entry)
        atomic_write_json(self.path / ENV, env)

    def pngs(self) -> list[Path]:
        """Every PNG under the run directory, sorted."""
        return sorted(p for p in self.path.rglob("*.png") if p.is_file())


# ------------------------------------------------------------------------------------ artefacts of claims
_ARTIFACT_DIR: contextvars.ContextVar[Path | None] = contextvars.ContextVar("icml24_artifact_dir", default=None)


@contextlib.contextmanager
def artifacts_to(path: str | os.PathLike | None) -> Iterator[None]:
    """Within this block, :func:`save_figure` writes into ``path`` (the run directory of a claim).

    Parameters
    ----------
    path : path or None
        None: nothing is saved within the block.

    Yields
    ------
    None
    """
    token = _ARTIFACT_DIR.set(Path(path) if path is not None else None)
    try:
        yield
    finally:
        _ARTIFACT_DIR.reset(token)


def artifact_dir() -> Path | None:
    """The folder a running claim may write plots and tables into, or None outside ``icml24 verify``.

    Returns
    -------
    pathlib.Path or None
    """
    return _ARTIFACT_DIR.get()


def save_figure(fig, name: str) -> Path | None:
    """Save a matplotlib figure as ``<name>.png`` in the current run directory (atomically).

    Draw on a :class:`matplotlib.figure.Figure` (``fig = Figure(); ax = fig.subplots()``): library code
    never touches pyplot's global state or the user's backend. A pyplot figure is closed after saving.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    name : str
        The file's stem; characters other than letters, digits, ``-``, ``_`` and ``.`` become ``-``.

    Returns
    -------
    pathlib.Path or None
        The PNG written, or None outside a run (tests, interactive use), where nothing is written.
    """
    import io
    import sys

    where = artifact_dir()
    try:
        if where is None:
            return None
        stem = "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
        return atomic_write_bytes(where / f"{stem}.png", buf.getvalue())
    finally:
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:  # a figure made with pyplot: release it (a no-op for a plain Figure)
            plt.close(fig)


# -------------------------------------------------------------------------------------- substitutions
_SUBSTITUTIONS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("icml24_substitutions", default=None)


@contextlib.contextmanager
def recording_substitutions() -> Iterator[list[str]]:
    """Collect what :func:`note_substitution` reports within the block (``verify`` does this per claim).

    Yields
    ------
    list of str
        The notes, filled as the block runs.
    """
    notes: list[str] = []
    token = _SUBSTITUTIONS.set(notes)
    try:
        yield notes
    finally:
        _SUBSTITUTIONS.reset(token)


def note_substitution(text: str) -> None:
    """Say that a claim's run stands something in for what its statement names (a synthetic graph for
    Cora when the data root lacks it, at QUICK or SMOKE scale). ``verify`` names it in the table and
    report. At PAPER scale nothing may be substituted: raise :class:`~icml24.errors.DataUnavailable`.

    Parameters
    ----------
    text : str
        One line: what is missing and what stands in for it.
    """
    notes = _SUBSTITUTIONS.get()
    if notes is not None and text not in notes:
        notes.append(text)
    log.warning("substitution: %s", text)


__all__ = [
    "RunDir",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_write_json",
    "environment",
    "git_commit",
    "artifacts_to",
    "artifact_dir",
    "save_figure",
    "encode_nonfinite",
    "decode_nonfinite",
    "note_substitution",
    "recording_substitutions",
]
