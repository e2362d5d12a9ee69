"""``icml24 spurious-memorization``: spurious and test accuracy, feature alignment and gamma vs N on a data set,
written with its plot to a new run directory.

:func:`register` adds the verb to the core command line; :func:`curves_command` runs it. Bad input raises
:class:`~icml24.errors.InputError` (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse
import sys

from ..validation import check_int, check_seed
from ..verbs import add_out_argument, finish_run, start_run

DATA = ("synthetic", "mnist17", "digits", "fashion")


def register(subparsers, parents) -> None:
    """Add ``icml24 spurious-memorization`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    p = subparsers.add_parser(
        "spurious-memorization",
        parents=parents,
        help="memorization of spurious features by RF / NTK regression vs N (curves and plot)",
    )
    add_arguments(p)
    p.set_defaults(func=curves_command)


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the verb's arguments (defaults: the official code's activations; widths scaled for a CPU).

    Parameters
    ----------
    p : argparse.ArgumentParser

    Returns
    -------
    argparse.ArgumentParser
        ``p`` itself.
    """
    p.add_argument("--data", default="synthetic", choices=DATA, help="data set")
    p.add_argument("--features", default="rf", choices=("rf", "ntk"), help="feature map: random features or NTK")
    p.add_argument("--act", default="phi2", choices=("phi2", "phi4", "relu"), help="activation")
    p.add_argument("--ns", type=int, nargs="+", default=[10, 20, 50, 100, 200], help="training-set sizes N")
    p.add_argument("--width", type=int, default=None, help="k (default 2000 for rf, 50 for ntk)")
    p.add_argument("--d", type=int, default=400, help="input dimension of the synthetic data")
    p.add_argument("--samples", type=int, default=200, help="training samples averaged per N")
    p.add_argument("--seed", type=int, default=0, help="seeds the data draws and the feature weights")
    add_out_argument(p)
    return p


def curves_command(args: argparse.Namespace) -> int:
    """Run the verb: print one line per N; write ``results.json``, ``report.md`` and ``curves.png`` to a new run
    directory under ``--out``.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    from tqdm.auto import tqdm

    from ..errors import InputError
    from .experiments import curve_figure, load_data, memorization_curve
    from .memorization import predicted_gamma

    for n in args.ns:
        check_int(n, "--ns", min_val=2)
    check_int(args.width, "--width", min_val=1, allow_none=True)
    check_int(args.samples, "--samples", min_val=1)
    check_int(args.d, "--d", min_val=2)
    seed = check_seed(args.seed, "--seed")
    width = args.width or (2000 if args.features == "rf" else 50)
    probe = load_data(args.data, 2, seed, d=args.d, n_test=1)
    if args.data == "mnist17" and max(args.ns) > 990:
        raise InputError("--ns must stay below 990 for mnist17 (1000 images of 1 and 7)")
    ns = sorted(args.ns)
    fits = sum(max(1, args.samples // n) for n in ns)
    run = start_run(
        args,
        "spurious-memorization",
        f"fit {fits} min-norm {args.features} {args.act} interpolators (width {width}) on {args.data} at "
        f"N = {', '.join(map(str, ns))}, about {args.samples} training samples per N",
    )
    bar = tqdm(total=fits, desc="fits", unit="fit", file=sys.stderr, disable=None)

    def loader(n, s):
        bar.update()
        return load_data(args.data, n, s, d=args.d)

    try:
        pts = memorization_curve(loader, args.features, args.act, ns, width, samples=args.samples, seed=seed)
    finally:
        bar.close()
    gammas = {
        f"{regime}, alpha={probe.alpha:.2f}": predicted_gamma(args.features, args.act, probe.alpha, regime)
        for regime in ("few", "many")
    }
    lines = [
        f"{args.data}: d={probe.d} alpha={probe.alpha:.3f}  {args.features} {args.act} width={width}",
        f"{'N':>6} {'reps':>5} {'spurious':>9} {'test':>6} {'control':>8} {'F':>7} {'|LOO|':>7}",
    ]
    for p in pts:
        lines.append(
            f"{p.n:>6} {p.replicates:>5} {p.spurious_acc:>9.3f} {p.test_acc:>6.3f} {p.control_acc:>8.3f} "
            f"{p.alignment:>7.3f} {p.loo_abs:>7.3f}"
        )
    lines.append("gamma: " + ", ".join(f"{k} -> {v:.3f}" for k, v in gammas.items()))
    print("\n".join(lines), flush=True)
    fig = curve_figure({f"{args.data} {args.features} {args.act}": pts}, gammas, title=f"{args.data}, seed {seed}")
    results = {
        "data": args.data,
        "d": probe.d,
        "alpha": probe.alpha,
        "features": args.features,
        "act": args.act,
        "width": width,
        "seed": seed,
        "points": [
            {
                "n": p.n,
                "replicates": p.replicates,
                "spurious_acc": p.spurious_acc,
                "test_acc": p.test_acc,
                "control_acc": p.control_acc,
                "alignment": p.alignment,
                "loo_abs": p.loo_abs,
            }
            for p in pts
        ],
        "gamma": gammas,
    }
    finish_run(run, results, lines, figures={"curves": fig})
    return 0


__all__ = ["register", "add_arguments", "curves_command"]
