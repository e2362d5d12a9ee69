"""``icml24 data list | fetch``: the public data sets the project reads, and downloading them.

:func:`register` adds the ``data`` verb to the core command line (nothing heavy is imported here). The
handlers return an exit status and raise :mod:`icml24.errors` types, which the core prints as one line.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers, parents) -> None:
    """Add ``icml24 data list`` and ``icml24 data fetch`` to the core command line.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    d = subparsers.add_parser("data", parents=parents, help="the public data sets: list them, fetch them")
    d.set_defaults(func=None, help_parser=d)
    sub = d.add_subparsers(dest="data_command", parser_class=type(d), title="data commands")

    ls = sub.add_parser("list", parents=parents, help="every data set: what, licence, size, where, present or not")
    ls.add_argument("--root", default=None, metavar="DIR", help="the data root (default $ICML24_DATA)")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(func=list_command)

    f = sub.add_parser(
        "fetch", parents=parents, help="download data sets from upstream into the data root, checking sha256s"
    )
    f.add_argument("names", nargs="*", metavar="NAME", help="data sets to fetch (see 'icml24 data list')")
    f.add_argument(
        "--missing",
        action="store_true",
        help="fetch every fetchable data set not present; offline or read-only: one line on stderr, exit 0",
    )
    f.add_argument("--root", default=None, metavar="DIR", help="the data root to write into (default $ICML24_DATA)")
    f.add_argument("--verify", action="store_true", help="also hash the files already present")
    f.add_argument("--mirror", default=None, metavar="URL", help="base URL replacing upstream (default $ICML24_MIRROR)")
    f.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the network (default 30)")
    f.set_defaults(func=fetch_command)


def _human(size: int | None) -> str:
    if size is None:
        return "?"
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return "?"  # pragma: no cover


def rows(root=None) -> list[dict]:
    """One dict per registered data set, as ``icml24 data list --json`` prints them.

    Parameters
    ----------
    root : str or os.PathLike, optional
        The data root (default :func:`~icml24.data.data_root`).

    Returns
    -------
    list of dict
        ``name, description, licence, source, used_by, size, files, folder, present, fetchable,
        checksum_note, hint`` (``folder``: where the data set is looked for).
    """
    from . import fetch as F

    base = F.data_root(root)
    out = []
    for ds in F.DATASETS.values():
        out.append(
            {
                "name": ds.name,
                "description": ds.description,
                "licence": ds.licence,
                "source": ds.source,
                "used_by": ds.used_by,
                "size": ds.size,
                "files": len(ds.files),
                "folder": str(base / ds.folder),
                "present": F.is_present(ds.name, base),
                "fetchable": F.can_fetch(ds.name),
                "checksum_note": ds.checksum_note,
                "hint": ds.hint,
            }
        )
    return out


def list_command(args: argparse.Namespace) -> int:
    """``icml24 data list``: a table (or JSON) of every data set.

    Parameters
    ----------
    args : argparse.Namespace
        ``root`` and ``json``.

    Returns
    -------
    int
        0.
    """
    table = rows(args.root)
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    head = ("name", "what", "licence", "size", "present", "where")
    lines = [
        (
            r["name"],
            r["description"],
            r["licence"],
            _human(r["size"]),
            "yes" if r["present"] else ("no" if r["fetchable"] else "no (not fetchable)"),
            r["folder"],
        )
        for r in table
    ]
    widths = [max(len(x[i]) for x in [head, *lines]) for i in range(len(head) - 1)]
    for line in [head, *lines]:
        print("  ".join(c.ljust(w) for c, w in zip(line, widths)) + "  " + line[-1])
    return 0


def fetch_command(args: argparse.Namespace) -> int:
    """``icml24 data fetch [NAME ...] [--missing] [--root DIR] [--verify]``.

    With names: fetch them and print one line each; any failure raises (one ``error:`` line, exit 2). With
    ``--missing``: fetch every fetchable data set that is not present, silently; when the data cannot be had
    (offline, read-only data root), print one line on stderr and return 0. A checksum mismatch is an error
    either way.

    Parameters
    ----------
    args : argparse.Namespace
        ``names``, ``missing``, ``root``, ``verify``, ``mirror``, ``timeout``.

    Returns
    -------
    int
        0.

    Raises
    ------
    InputError
        No name and no ``--missing``, both, or an unknown name.
    DataUnavailable
        With names: a data set could not be downloaded.
    DataError
        A checksum mismatch.
    """
    from ..errors import DataUnavailable, InputError
    from . import fetch as F

    if args.missing and args.names:
        raise InputError("give data set names or --missing, not both", "see 'icml24 data list'")
    if not args.missing and not args.names:
        raise InputError("name a data set to fetch, or pass --missing", f"choose from: {', '.join(F.DATASETS)}")
    base = F.data_root(args.root)
    kw = dict(mirror=args.mirror, timeout=args.timeout)
    if args.missing:
        if args.verify:
            F.verify([n for n in F.DATASETS if F.is_present(n, base)], base)
        todo = [n for n in F.missing(base) if F.can_fetch(n, args.mirror)]
        try:
            F.fetch(todo, base, **kw)
        except DataUnavailable as exc:
            print(f"icml24 data fetch --missing: not fetched: {exc.one_line()}", file=sys.stderr)
        return 0
    sets = [F.get(n) for n in args.names]  # unknown names fail before any download
    for ds in sets:
        got = F.fetch(ds.name, base, verify=args.verify, **kw)
        what = f"fetched {len(got)} of {len(ds.files)} files" if got else "present"
        checked = ", checked" if args.verify else ""
        print(f"{ds.name}: {what}{checked} in {base / ds.folder}")
    return 0


__all__ = ["register", "list_command", "fetch_command", "rows"]
