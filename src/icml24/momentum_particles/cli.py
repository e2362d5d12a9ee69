"""``icml24 momentum-particles``: fit the toy hierarchical model or probabilistic PCA by MPD, PGD or EM, print the
trace (parameter, exact log-likelihood, distance to the closed-form MLE) and save its plot.

:func:`register` adds the verb to the core command line; :func:`fit_command` runs it. Bad input raises
:class:`~icml24.errors.InputError` (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import InputError
from ..validation import check_float, check_int, check_seed

MODELS = ("toy", "ppca")
METHODS = ("mpd", "pgd", "em")


def register(subparsers, parents) -> None:
    """Add ``icml24 momentum-particles`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    p = subparsers.add_parser(
        "momentum-particles",
        parents=parents,
        help="maximum likelihood by momentum particle descent (MPD), PGD or EM on the toy model or PPCA",
    )
    add_arguments(p)
    p.set_defaults(func=fit_command)


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the verb's arguments (defaults: the official toy script's settings).

    Parameters
    ----------
    p : argparse.ArgumentParser

    Returns
    -------
    argparse.ArgumentParser
        ``p`` itself.
    """
    p.add_argument("--model", default="toy", choices=MODELS, help="toy hierarchical model (default) or PPCA")
    p.add_argument("--method", default="mpd", choices=METHODS, help="mpd (default), pgd or em")
    p.add_argument("--gamma", type=float, default=0.1, help="MPD friction on theta and particles (default 0.1)")
    p.add_argument("--eta", type=float, default=2000.0, help="MPD inverse mass, toy model (default 2000)")
    p.add_argument("--steps", type=int, default=None, help="steps (default 2000 toy, 1000 ppca; em 100)")
    p.add_argument("--particles", type=int, default=None, help="particles (default 100 toy, 10 ppca)")
    p.add_argument("--data", type=int, default=None, help="data points (default 100 toy, 500 ppca)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", default="momentum_particles.png", metavar="FILE.png", help="where to save the plot")
    return p


def fit_command(args: argparse.Namespace) -> int:
    """Run the verb: print about ten lines of the trace, the steps to the tolerance, and save the plot.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    gamma = check_float(args.gamma, "--gamma", min_val=0.0, include_boundaries="neither")
    eta = check_float(args.eta, "--eta", min_val=0.0, include_boundaries="neither")
    steps = check_int(args.steps, "--steps", min_val=1, allow_none=True)
    parts = check_int(args.particles, "--particles", min_val=1, allow_none=True)
    n = check_int(args.data, "--data", min_val=2, allow_none=True)
    seed = check_seed(args.seed, "--seed")
    if not str(args.plot).endswith(".png"):
        raise InputError(f"--plot must name a .png file, got {args.plot!r}")
    if args.model == "toy":
        rows, fig, summary = _toy(args.method, gamma, eta, steps, parts, n or 100, seed)
    else:
        rows, fig, summary = _ppca(args.method, gamma, steps, parts, n or 500, seed)
    for line in rows:
        print(line)
    print(summary)
    import io

    from ..runs import atomic_write_bytes

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    print(f"plot: {atomic_write_bytes(Path(args.plot), buf.getvalue())}")
    return 0


def _toy(method, gamma, eta, steps, parts, n, seed):
    import numpy as np
    from matplotlib.figure import Figure

    from .baselines import PGD, toy_em
    from .experiments import TOY_STEP, steps_to_tolerance
    from .models import ToyHierarchical, toy_log_likelihood
    from .mpd import MPD
    from .world import toy_data

    y = toy_data(n, seed=seed)
    mle = float(y.mean())
    if method == "em":
        steps = steps or 100
        theta = np.asarray(toy_em(y, 0.0, steps))
        evals = np.arange(steps + 1)
    else:
        steps = steps or 2000
        parts = parts or 100
        if method == "mpd":
            alg = MPD(
                TOY_STEP / n, TOY_STEP, gamma_theta=gamma, gamma_x=gamma, eta_theta=eta, eta_x=eta, n_particles=parts
            )
        else:
            alg = PGD(TOY_STEP / n, TOY_STEP, n_particles=parts)
        fit = alg.fit(ToyHierarchical(0.0), y, steps, seed=seed)
        theta = fit.theta_trace().numpy()[:, 0]
        evals = np.asarray(fit.grad_evals)
    label = f"MPD gamma={gamma:g} eta={eta:g}" if method == "mpd" else method.upper()
    rows = [f"toy hierarchical model: {n} data, truth 100, theta_hat = mean(y) = {mle:.4f}; {label}"]
    rows.append(f"{'step':>6} {'evals':>6} {'theta':>10} {'|theta-hat|':>12} {'log-lik':>11}")
    for k in sorted(set(np.linspace(0, steps, 11).astype(int))):
        ll = toy_log_likelihood(y, float(theta[k]))
        rows.append(f"{k:>6} {int(evals[k]):>6} {theta[k]:>10.4f} {abs(theta[k] - mle):>12.4f} {ll:>11.2f}")
    hit = int(steps_to_tolerance(theta[:, None], np.array([mle]), np.array([1e-2 * abs(mle)]))[0])
    reached = f"step {hit} ({int(evals[hit])} gradient evaluations)" if hit <= steps else f"not within {steps} steps"
    summary = f"|theta - theta_hat| < 1e-2 |theta_hat| first at {reached}; overshoot {(theta.max() - mle) / mle:+.1%}"
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    ax.plot(theta, label=label)
    ax.axhline(mle, color="black", linestyle=":", label="MLE")
    ax.set_xlabel("step k")
    ax.set_ylabel("theta")
    ax.legend()
    return rows, fig, summary


def _ppca(method, gamma, steps, parts, n, seed):
    import numpy as np
    from matplotlib.figure import Figure

    from .baselines import PGD, ppca_em
    from .models import PPCA, ppca_mle
    from .mpd import MPD
    from .world import ppca_data

    y = ppca_data(n, seed=seed)
    _, _, _, ll_star = ppca_mle(y, 2)
    if method == "em":
        steps = steps or 100
        *_, lls = ppca_em(y, 2, steps, seed=seed + 1)
        evals, ll = np.arange(steps + 1), np.asarray(lls)
    else:
        steps = steps or 1000
        parts = parts or 10
        h_x = 1e-2
        if method == "mpd":
            alg = MPD(
                h_x / n, h_x, gamma_theta=gamma, gamma_x=1.0, momentum_theta=0.9, momentum_x=0.0, n_particles=parts
            )
        else:
            alg = PGD(h_x / n, h_x, n_particles=parts)
        fit = alg.fit(
            PPCA(8, 2, seed=seed + 1),
            y,
            steps,
            seed=seed,
            every=max(1, steps // 50),
            callback=lambda m, _x: {"ll": m.log_likelihood(y)},
        )
        evals, ll = np.asarray(fit.grad_evals), np.asarray(fit.extra["ll"])
    gap = (ll_star - ll) / n
    label = f"MPD gamma_theta={gamma:g}" if method == "mpd" else method.upper()
    rows = [f"probabilistic PCA: {n} data, D=8, q=2, MLE log-lik per datum {ll_star / n:.4f}; {label}"]
    rows.append(f"{'evals':>6} {'log-lik/datum':>14} {'gap':>10}")
    for i in sorted(set(np.linspace(0, len(ll) - 1, 11).astype(int))):
        rows.append(f"{int(evals[i]):>6} {ll[i] / n:>14.4f} {gap[i]:>10.4f}")
    ok = np.nonzero(gap < 0.1)[0]
    summary = f"gap < 0.1 nats per datum first after {int(evals[ok[0]])} evaluations" if len(ok) else "gap >= 0.1"
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    ax.semilogy(evals[1:], np.maximum(gap[1:], 1e-6), label=label)
    ax.set_xlabel("gradient evaluations")
    ax.set_ylabel("gap to the MLE (nats per datum)")
    ax.legend()
    return rows, fig, summary


__all__ = ["register", "add_arguments", "fit_command"]
