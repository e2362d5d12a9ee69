"""The ``icml24`` command: ``list | verify | report | bench``.

Errors reach the user as one line on stderr, ``error: <what> (<hint>)``, with exit status 2; ``--debug``
shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from . import __version__
from .errors import ICML24Error, InputError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one ``error:`` line and exit 2."""

    def error(self, message: str):  # type: ignore[override]
        raise InputError(message, f"see '{self.prog} --help'")


def _parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    common.add_argument("-v", "--verbose", action="store_true", help="log progress details")

    p = _Parser(prog="icml24", description="Nineteen ICML 2024 systems and executable checks of their claims.",
                parents=[common])
    p.add_argument("--version", action="version", version=f"icml24 {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser,
                           metavar="{list,verify,report,bench,seed-gnn,dera,gnn-certify}")

    ls = sub.add_parser("list", parents=[common], help="the nineteen methods, their papers and claims")
    ls.add_argument("--runs", default="runs", help="folder of run directories to read the last results from")
    ls.add_argument("--json", action="store_true", help="print JSON instead of a table")

    v = sub.add_parser("verify", parents=[common], help="run claims and print whether they hold")
    v.add_argument("targets", nargs="*", metavar="SLUG", help="methods (or slug/claim keys); default: all")
    v.add_argument("--scale", default=None, help="smoke | quick | paper (default quick)")
    v.add_argument("--seed", default=None, help="random seed (default 0)")
    v.add_argument("--out", default="runs", help="folder for the run directory (default runs/)")
    v.add_argument("--resume", default=None, metavar="DIR", help="finish an interrupted run directory")
    v.add_argument("--json", action="store_true", help="print the results as JSON on stdout")

    r = sub.add_parser("report", parents=[common], help="write report.md of a run directory")
    r.add_argument("run_dir", metavar="DIR")

    b = sub.add_parser("bench", parents=[common], help="run benchmarks/<slug>.py and print its ratios")
    b.add_argument("slug")
    b.add_argument("bench_args", nargs=argparse.REMAINDER, help="arguments passed to the benchmark")

    sg = sub.add_parser("seed-gnn", parents=[common], help="SEED-GNN sequential GNN editing")
    sg_sub = sg.add_subparsers(dest="verb", parser_class=_Parser, metavar="{edit}")
    e = sg_sub.add_parser("edit", parents=[common], help="edit the paper's targets one after another")
    e.add_argument("--data", default="auto", choices=["auto", "cora", "csbm"],
                   help="cora (data root), csbm (synthetic), auto (cora when present)")
    e.add_argument("--model", default="gcn", choices=["gcn", "sage", "gin"])
    e.add_argument("--editor", default="seed", choices=["seed", "egnn", "finetune", "gre", "gre+"])
    e.add_argument("--edits", type=int, default=50, help="number of sequential edits (default 50)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--official-quirk", action="store_true", help="reproduce the official neighbour-index bug")
    e.add_argument("--save-state", default=None, metavar="PATH", help="save the editor state here")
    e.add_argument("--out", default="runs", help="folder for the run directory (default runs/)")

    dr = sub.add_parser("dera", parents=[common], help="DeRa decoding-time realignment")
    dr_sub = dr.add_subparsers(dest="verb", parser_class=_Parser, metavar="{generate}")
    g = dr_sub.add_parser("generate", parents=[common], help="decode with DeRa at a chosen lambda")
    g.add_argument("--lambda", dest="lam", type=float, required=True,
                   help="0 = reference, 1 = aligned model, > 1 extrapolates")
    g.add_argument("--prompt", required=True)
    g.add_argument("--aligned", default=None, help="local HF folder of the aligned model (default: trained pair)")
    g.add_argument("--ref", default=None, help="local HF folder of its reference model")
    g.add_argument("--samples", type=int, default=4, help="number of samples (1 = greedy unless --sample)")
    g.add_argument("--sample", action="store_true", help="sample even for one output")
    g.add_argument("--max-new-tokens", type=int, default=64)
    g.add_argument("--temperature", type=float, default=1.0)
    g.add_argument("--top-k", type=int, default=0)
    g.add_argument("--top-p", type=float, default=1.0)
    g.add_argument("--seed", type=int, default=0)

    gc = sub.add_parser("gnn-certify", parents=[common], help="certify a GNN's robustness to edge flips (MIP)")
    if "gnn-certify" in argv:  # its arguments live with the method; import it only when it is used
        from .gnn_certify.cli import add_arguments

        add_arguments(gc)
    return p


# ---------------------------------------------------------------------------------------------- commands
def _cmd_list(args) -> int:
    from .verify import method_rows

    rows = method_rows(args.runs)
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return EXIT_OK
    head = ["slug", "status", "claims", "held", "arXiv", "code", "title"]
    body = []
    for r in rows:
        held = "-" if r["held"] is None else f"{r['held']}/{r['ran']}"
        code = (r["code"] or "-").replace("https://", "")
        title = r["title"] if len(r["title"]) <= 60 else r["title"][:57] + "..."
        body.append([r["slug"], r["status"], str(r["claims"]), held, r["arxiv"] or "-", code, title])
    widths = [max(len(x[i]) for x in [head] + body) for i in range(len(head))]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
    for row in body:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return EXIT_OK


def _parse_seed(raw) -> int:
    try:
        seed = int(raw)
    except (TypeError, ValueError):
        raise InputError(f"--seed must be a non-negative integer, got {raw!r}") from None
    if seed < 0:
        raise InputError(f"--seed must be a non-negative integer, got {raw!r}")
    return seed


def _cmd_verify(args) -> int:
    from .claims import Scale
    from .verify import jsonable, text_table, verify

    if args.resume is not None:
        if args.targets or args.scale is not None or args.seed is not None:
            raise InputError("--resume takes its methods, scale and seed from the run directory",
                             "drop the other options, or start a new run without --resume")
        outcome = verify(resume=args.resume, debug=args.debug)
    else:
        scale = Scale.parse(args.scale if args.scale is not None else "quick")
        seed = _parse_seed(args.seed if args.seed is not None else 0)
        outcome = verify(args.targets, scale=scale, seed=seed, out=args.out, debug=args.debug)
    if outcome.run_dir is None:
        msg = "no method has claims yet: nothing to verify"
        if args.json:
            print(json.dumps({"run_dir": None, "results": [], "all_hold": True, "message": msg}))
        else:
            print(msg)
        return EXIT_OK
    if args.json:
        print(json.dumps(jsonable({"run_dir": str(outcome.run_dir.path), "results": outcome.records,
                                   "all_hold": outcome.all_hold}), indent=2, ensure_ascii=False))
    else:
        print(text_table(outcome.records))
        n_hold = sum(1 for r in outcome.records if r["holds"] is True)
        print(f"\n{n_hold}/{len(outcome.records)} claims hold; run directory: {outcome.run_dir.path}")
    return outcome.exit_code


def _cmd_report(args) -> int:
    from .verify import write_report

    print(write_report(args.run_dir))
    return EXIT_OK


def _find_benchmark(slug: str) -> Path:
    candidates = [Path.cwd() / "benchmarks" / f"{slug}.py",
                  Path(__file__).resolve().parents[2] / "benchmarks" / f"{slug}.py"]
    for c in candidates:
        if c.is_file():
            return c
    raise InputError(f"no benchmark for {slug!r}",
                     "benchmarks live in benchmarks/<slug>.py of the source checkout; run from its root")


def _cmd_bench(args) -> int:
    from . import registry

    slug = registry.check_slug(args.slug)
    script = _find_benchmark(slug)
    env = dict(os.environ)
    src = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.call([sys.executable, str(script), *args.bench_args], env=env)


def _cmd_seed_gnn(args) -> int:
    if args.verb != "edit":
        raise InputError("seed-gnn needs a verb", "try 'icml24 seed-gnn edit --help'")
    if args.edits < 1 or args.seed < 0:
        raise InputError("--edits must be >= 1 and --seed >= 0")
    from .seed_gnn.cli import edit_command

    return edit_command(args)


def _cmd_dera(args) -> int:
    if args.verb != "generate":
        raise InputError("dera needs a verb", "try 'icml24 dera generate --help'")
    from .dera.cli import generate_command

    return generate_command(args)


def _cmd_gnn_certify(args) -> int:
    from .gnn_certify.cli import certify_command

    return certify_command(args)


COMMANDS = {"list": _cmd_list, "verify": _cmd_verify, "report": _cmd_report, "bench": _cmd_bench,
            "seed-gnn": _cmd_seed_gnn, "dera": _cmd_dera, "gnn-certify": _cmd_gnn_certify}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    try:
        args = _parser(argv).parse_args(argv)
        logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                            format="%(levelname)s: %(message)s", stream=sys.stderr)
        if args.command is None:
            _parser().print_help()
            return EXIT_USAGE
        return COMMANDS[args.command](args)
    except KeyboardInterrupt:
        print("error: interrupted (finished claims are saved; continue with 'icml24 verify --resume DIR')",
              file=sys.stderr)
        return EXIT_INTERRUPTED
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
