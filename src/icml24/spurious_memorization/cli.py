"""``icml24 spurious-memorization``: spurious and test accuracy, feature alignment and gamma vs N on a data set.

:func:`register` adds the verb to the core command line; :func:`curves_command` runs it. Bad input raises
:class:`~icml24.errors.InputError` (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..validation import check_int, check_seed

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
    p.add_argument("--data", default="synthetic", choices=DATA, help="data set (default synthetic)")
    p.add_argument("--features", default="rf", choices=("rf", "ntk"), help="feature map (default rf)")
    p.add_argument("--act", default="phi2", choices=("phi2", "phi4", "relu"), help="activation (default phi2)")
    p.add_argument("--ns", type=int, nargs="+", default=[10, 20, 50, 100, 200], help="training-set sizes N")
    p.add_argument("--width", type=int, default=None, help="k (default 2000 for rf, 50 for ntk)")
    p.add_argument("--d", type=int, default=400, help="input dimension of the synthetic data (default 400)")
    p.add_argument("--samples", type=int, default=200, help="training samples averaged per N (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default="spurious_memorization.png", metavar="FILE.png", help="where to save the plot")
    return p


def curves_command(args: argparse.Namespace) -> int:
    """Run the verb: print one line per N and save the plot.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    from ..errors import InputError
    from ..runs import atomic_write_bytes
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
    pts = memorization_curve(
        lambda n, s: load_data(args.data, n, s, d=args.d),
        args.features,
        args.act,
        sorted(args.ns),
        width,
        samples=args.samples,
        seed=seed,
    )
    gammas = {
        f"{regime}, alpha={probe.alpha:.2f}": predicted_gamma(args.features, args.act, probe.alpha, regime)
        for regime in ("few", "many")
    }
    print(f"{args.data}: d={probe.d} alpha={probe.alpha:.3f}  {args.features} {args.act} width={width}")
    print(f"{'N':>6} {'reps':>5} {'spurious':>9} {'test':>6} {'control':>8} {'F':>7} {'|LOO|':>7}")
    for p in pts:
        print(
            f"{p.n:>6} {p.replicates:>5} {p.spurious_acc:>9.3f} {p.test_acc:>6.3f} {p.control_acc:>8.3f} "
            f"{p.alignment:>7.3f} {p.loo_abs:>7.3f}"
        )
    print("gamma: " + ", ".join(f"{k} -> {v:.3f}" for k, v in gammas.items()))
    fig = curve_figure({f"{args.data} {args.features} {args.act}": pts}, gammas, title=f"{args.data}, seed {seed}")
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    path = atomic_write_bytes(Path(args.plot), buf.getvalue())
    print(f"plot: {path}")
    return 0


__all__ = ["register", "add_arguments", "curves_command"]
