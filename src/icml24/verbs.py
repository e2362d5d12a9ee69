"""What every method verb (``icml24 <method> ...``) shares: one output convention and a sign of life.

A verb that writes takes ``--out DIR`` (default ``runs/``) and gets a fresh run directory named like
``verify``'s, ``<out>/<UTC time>-<verb>/``, printed when the verb starts, holding ``config.json`` (the verb's
arguments), ``env.json``, ``results.json`` (its numbers), ``report.md`` (the table it printed) and its plots (PNG),
each written atomically. No verb overwrites an earlier run.

Usage in a package's ``cli.py``::

    from ..verbs import add_out_argument, finish_run, scale_note, start_run

    add_out_argument(parser)                      # in register()
    run = start_run(args, "kisa-train", "train KiSA on 12 demonstrations (scale smoke)")
    ...                                           # work, printing the table
    finish_run(run, results, report_lines, figures={"f1": fig})
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from .files import atomic_write_json, atomic_write_text, encode_nonfinite
from .runs import RunDir, artifacts_to, save_figure

#: Scales below which a verb's numbers cannot be read as the paper's (a table says so in one line).
SMALL_SCALES = ("smoke",)


def add_out_argument(parser: argparse.ArgumentParser, default: str = "runs") -> None:
    """Add ``--out DIR``: the folder in which the verb makes its run directory.

    Parameters
    ----------
    parser : argparse.ArgumentParser
    default : str, default "runs"
    """
    parser.add_argument(
        "--out",
        default=default,
        metavar="DIR",
        help=f"folder in which a new run directory <UTC time>-<verb> is made (default {default}/)",
    )


def _config(args: argparse.Namespace | Mapping[str, Any]) -> dict[str, Any]:
    """The arguments worth saving: JSON values (paths as strings); parsers, functions and other objects left out."""
    items = vars(args).items() if isinstance(args, argparse.Namespace) else dict(args).items()
    plain = (str, int, float, bool, type(None), list, tuple, dict)
    return {k: (str(v) if isinstance(v, Path) else v) for k, v in items if isinstance(v, (Path, *plain))}


@contextlib.contextmanager
def elapsed(desc: str) -> Iterator[None]:
    """Show ``desc: <elapsed>`` on stderr, refreshed every second, while calls with no progress hook run (a tqdm
    line; silent off a terminal).

    Parameters
    ----------
    desc : str
        What is running.

    Yields
    ------
    None
    """
    import threading

    from tqdm.auto import tqdm

    bar = tqdm(desc=desc, bar_format="{desc}: {elapsed} elapsed", file=sys.stderr, disable=None)
    stop = threading.Event()

    def tick():
        while not stop.wait(1.0):
            bar.refresh()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.close()


def start_run(args: argparse.Namespace, verb: str, doing: str) -> RunDir:
    """Make the verb's run directory under ``args.out`` and print where it is and what the verb will do.

    Parameters
    ----------
    args : argparse.Namespace
        The verb's parsed arguments (saved as ``config.json``; ``args.out`` is the folder).
    verb : str
        Names the run directory (``<UTC time>-<verb>``).
    doing : str
        One line: what the verb will do and at what size, printed first.

    Returns
    -------
    RunDir
    """
    run = RunDir.create(args.out, verb, {"command": " ".join(["icml24", *sys.argv[1:]]), **_config(args)})
    print(f"{doing}\nrun directory: {run.path}", flush=True)
    return run


def scale_note(scale: str) -> str | None:
    """The line a verb prints under its table when ``scale`` is too small to judge the method, else None.

    Parameters
    ----------
    scale : str

    Returns
    -------
    str or None
    """
    if scale in SMALL_SCALES:
        return (
            f"note: scale {scale} only shows the verb runs; it is too small to judge the method "
            "(use --scale quick, or paper, for numbers that read as the paper's)"
        )
    return None


def finish_run(
    run: RunDir,
    results: Mapping[str, Any],
    report: str | Sequence[str],
    figures: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write the verb's numbers, its printed table and its plots into the run directory, atomically.

    Parameters
    ----------
    run : RunDir
        From :func:`start_run`.
    results : mapping
        JSON-able numbers (``results.json``; NaN and infinities as strings, as ``verify`` writes them).
    report : str or sequence of str
        The table the verb printed (``report.md``).
    figures : mapping of str to matplotlib.figure.Figure, optional
        Plots, saved as ``<name>.png``.

    Returns
    -------
    dict of str to pathlib.Path
        What was written, by name (``results``, ``report`` and each figure's name); also printed.
    """
    text = report if isinstance(report, str) else "\n".join(report)
    written = {
        "results": atomic_write_json(run.path / "results.json", encode_nonfinite(dict(results))),
        "report": atomic_write_text(run.path / "report.md", text.rstrip("\n") + "\n"),
    }
    with artifacts_to(run.path):
        for name, fig in (figures or {}).items():
            written[name] = save_figure(fig, name)
    print(f"written: {run.path} ({', '.join(p.name for p in written.values())})", flush=True)
    return written


__all__ = ["SMALL_SCALES", "add_out_argument", "elapsed", "finish_run", "scale_note", "start_run"]
