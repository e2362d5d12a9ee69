"""The ``icml24`` command: ``list | verify | report | bench | data``.

Errors reach the user as one line on stderr, ``error: <what> (<hint>)``, with exit status 2; ``--debug``
shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Sequence

from . import __version__
from .errors import ICML24Error, InputError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the process is, so that a run stops as on Ctrl-C (what finished is saved)."""


def _on_sigterm(signum, frame):  # pragma: no cover - exercised in a subprocess test
    raise Terminated()


def _quiet_third_parties() -> None:
    """Without -v: no third-party warnings, download bars or library chatter (our own bar stays)."""
    import warnings

    warnings.filterwarnings("ignore")
    for name, value in (
        ("TRANSFORMERS_VERBOSITY", "error"),
        ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
        ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1"),
        ("TOKENIZERS_PARALLELISM", "false"),
        ("PYTHONWARNINGS", "ignore"),
        ("RAY_DEDUP_LOGS", "1"),
    ):
        os.environ.setdefault(name, value)


EXIT_CODES = textwrap.fill(
    "exit status: 0 done (verify: every verdict as declared), 1 a claim failed or a verdict not as declared, "
    "2 bad input (one error line), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM); what finished is saved.",
    width=79,
)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Every option's default in its help (unless the help already names it), descriptions kept as written."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text.lower() or action.default is None or isinstance(action.default, bool):
            return text
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one ``error:`` line and exit 2; helps show defaults and exit codes."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        kwargs.setdefault("epilog", EXIT_CODES)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        raise InputError(message, f"see '{self.prog} --help'")


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    common.add_argument("-v", "--verbose", action="store_true", help="log progress details")

    p = _Parser(
        prog="icml24", description="Nineteen ICML 2024 systems and executable checks of their claims.", parents=[common]
    )
    p.add_argument("--version", action="version", version=f"icml24 {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser, title="commands")

    ls = sub.add_parser("list", parents=[common], help="the nineteen methods, their papers and claims")
    ls.add_argument("--runs", default="runs", help="folder of run directories to read the last results from")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ls.set_defaults(func=_cmd_list)

    v = sub.add_parser("verify", parents=[common], help="run claims and print whether they hold")
    v.add_argument("targets", nargs="*", metavar="SLUG", help="methods (or slug/claim keys); default: all")
    v.add_argument("--scale", default=None, help="smoke | quick | paper (default quick)")
    v.add_argument("--seed", default=None, help="one random seed (default 0); same as --seeds N")
    v.add_argument(
        "--seeds", default=None, help="comma-separated seeds, e.g. 0,1,2: a claim holds when every seed holds"
    )
    v.add_argument("--engine", default="local", help="local (this process) | ray (claims x seeds as Ray tasks)")
    v.add_argument(
        "--address",
        default=None,
        metavar="HOST:PORT",
        help="Ray cluster to join with --engine ray (default: start a local one)",
    )
    v.add_argument("--out", default="runs", help="folder for the run directory (default runs/)")
    v.add_argument("--resume", default=None, metavar="DIR", help="finish an interrupted run directory")
    v.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    v.add_argument(
        "--strict", action="store_true", help="exit 1 when a claim is not run (a data set or a GPU is missing)"
    )
    v.set_defaults(func=_cmd_verify)

    r = sub.add_parser(
        "report",
        parents=[common],
        help="write report.md of a run directory",
        description="Rewrite DIR/report.md (the verdict table, each claim's numbers and plots) from DIR/results.jsonl.",
    )
    r.add_argument("run_dir", metavar="DIR", help="a run directory written by 'icml24 verify'")
    r.set_defaults(func=_cmd_report)

    b = sub.add_parser(
        "bench",
        parents=[common],
        help="run benchmarks/<slug>.py and print its ratios",
        description="Time a method against the peer a user would pick (benchmarks/<slug>.py in a source checkout), "
        "one process, the machine printed first.",
    )
    b.add_argument("slug", help="a method's slug (see 'icml24 list')")
    b.add_argument("bench_args", nargs=argparse.REMAINDER, help="arguments passed to the benchmark")
    b.set_defaults(func=_cmd_bench)

    from .data import cli as data_cli

    data_cli.register(sub, [common])

    # Method verbs register themselves: icml24/<slug>/cli.py defines register(subparsers, parents), read
    # without importing the method (its heavy imports happen inside the command it sets as ``func``).
    from . import registry

    for slug in registry.SLUGS:
        if registry.module_file(slug, "cli") is not None:
            importlib.import_module(f"icml24.{slug}.cli").register(sub, [common])
    return p


# ---------------------------------------------------------------------------------------------- commands
def _cmd_list(args) -> int:
    from .verify import method_rows

    rows = method_rows(args.runs)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return EXIT_OK
    head = ["slug", "claims", "findings", "last run", "paper scale here", "arXiv", "code", "title"]
    body = []
    for r in rows:
        if r["as_declared"] is None:
            last = "-" if not r["not_run"] else f"{r['not_run']} not run"
        else:
            last = f"{r['as_declared']}/{r['ran']} as declared ({r['held']} hold, {r['findings_as_declared']} findings)"
            if r["not_run"]:
                last += f", {r['not_run']} not run"
        if r["status"] != "implemented":
            paper = "-"
        elif r["paper_scale"]:
            paper = "yes"
        else:
            lacks = "; ".join(r["paper_scale_lacks"])
            paper = "no: " + (lacks if len(lacks) <= 48 else lacks[:45] + "...")
        code = (r["code"] or "-").replace("https://", "")
        title = r["title"] if len(r["title"]) <= 60 else r["title"][:57] + "..."
        body.append([r["slug"], str(r["claims"]), str(r["findings"]), last, paper, r["arxiv"] or "-", code, title])
    widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    for row in body:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return EXIT_OK


def _cmd_verify(args) -> int:
    from .claims import Scale
    from .verify import jsonable, parse_seeds, preflight_lines, select_claims, summary_line, text_table, verify

    def started(path: Path) -> None:
        print(f"run directory: {path}", file=sys.stderr, flush=True)

    if args.seed is not None and args.seeds is not None:
        raise InputError("give --seed or --seeds, not both")
    if args.resume is not None:
        if args.targets or args.scale is not None or args.seed is not None or args.seeds is not None:
            raise InputError(
                "--resume takes its methods, scale and seeds from the run directory",
                "drop the other options, or start a new run without --resume",
            )
        outcome = verify(
            resume=args.resume, debug=args.debug, engine=args.engine, address=args.address, on_start=started
        )
    else:
        scale = Scale.parse(args.scale if args.scale is not None else "quick")
        if args.seed is not None and "," in str(args.seed):
            raise InputError(f"--seed takes one seed, got {args.seed!r}", "use --seeds for several")
        raw = args.seeds if args.seeds is not None else (args.seed if args.seed is not None else "0")
        try:
            seeds = parse_seeds(raw)
        except InputError as exc:
            flag = "--seeds" if args.seeds is not None else "--seed"
            raise InputError(f"{flag} must be non-negative integers, got {raw!r}", exc.hint) from None
        if scale is Scale.PAPER:  # say what paper scale lacks here, once, before any work
            for line in preflight_lines(select_claims(args.targets), scale):
                print(f"not at paper scale here: {line}", file=sys.stderr)
        outcome = verify(
            args.targets,
            scale=scale,
            seeds=seeds,
            out=args.out,
            debug=args.debug,
            engine=args.engine,
            address=args.address,
            on_start=started,
        )
    if outcome.run_dir is None:
        msg = "no method has claims yet: nothing to verify"
        if args.json:
            print(json.dumps({"run_dir": None, "results": [], "all_hold": True, "message": msg}))
        else:
            print(msg)
        return EXIT_OK
    if args.json:
        print(
            json.dumps(
                jsonable(
                    {
                        "run_dir": str(outcome.run_dir.path),
                        "results": outcome.records,
                        "claims": outcome.aggregates,
                        "all_hold": outcome.all_hold,
                        "all_match": outcome.all_match,
                    }
                ),
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        print(text_table(outcome.records))
        print(f"\n{summary_line(outcome.records)}; run directory: {outcome.run_dir.path}")
    if args.strict and any(a["status"] == "not_run" for a in outcome.aggregates):
        print("error: --strict: some claims were not run (see the table's notes)", file=sys.stderr)
        return EXIT_FAILED
    return outcome.exit_code


def _cmd_report(args) -> int:
    from .verify import write_report

    print(write_report(args.run_dir))
    return EXIT_OK


def _find_benchmark(slug: str) -> Path:
    candidates = [
        Path.cwd() / "benchmarks" / f"{slug}.py",
        Path(__file__).resolve().parents[2] / "benchmarks" / f"{slug}.py",
    ]
    for c in candidates:
        if c.is_file():
            return c
    raise InputError(
        f"no benchmark for {slug!r}",
        "benchmarks live in benchmarks/<slug>.py of the source checkout; run from its root",
    )


def _cmd_bench(args) -> int:
    from . import registry

    slug = registry.check_slug(args.slug)
    script = _find_benchmark(slug)
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.call([sys.executable, str(script), *args.bench_args], env=env)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``icml24`` command line.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0 ok, 1 a verdict differs from its declaration, 2 bad input, 130 interrupted.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        parser = _parser()
        args = parser.parse_args(argv)
        logging.basicConfig(
            level=logging.INFO if args.verbose else logging.WARNING,
            format="%(levelname)s: %(message)s",
            stream=sys.stderr,
        )
        if not args.verbose:
            _quiet_third_parties()
        if getattr(args, "func", None) is None:
            (getattr(args, "help_parser", None) or parser).print_help()
            return EXIT_USAGE
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, _on_sigterm)
        else:  # pragma: no cover - called from a thread: leave the signals alone
            previous = None
        try:
            return int(args.func(args))
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    except KeyboardInterrupt as exc:
        what = "terminated" if isinstance(exc, Terminated) else "interrupted"
        run_dir = getattr(exc, "run_dir", None)
        if run_dir is not None:
            hint = f"finished claims are saved in {run_dir}; continue with 'icml24 verify --resume {run_dir}'"
        else:
            hint = "nothing was saved"
        print(f"error: {what} ({hint})", file=sys.stderr, flush=True)
        return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED
    except ICML24Error as exc:
        if debug:
            raise
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. `icml24 list | head`
        return EXIT_OK


def entry() -> None:  # pragma: no cover - the console script
    sys.exit(main())


__all__ = ["main"]
