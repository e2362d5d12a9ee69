"""``icml24 momentum-particles``: fit the toy hierarchical model or probabilistic PCA by MPD, PGD or EM, print the
trace (parameter, exact log-likelihood, distance to the closed-form MLE), when it first reaches and when it settles
within the tolerance, and write it with its plot to a new run directory.

:func:`register` adds the verb to the core command line; :func:`fit_command` runs it. Bad input raises
:class:`~icml24.errors.InputError` (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse
import sys

from ..validation import check_float, check_int, check_seed
from ..verbs import add_out_argument, finish_run, start_run

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
    p.add_argument("--model", default="toy", choices=MODELS, help="toy hierarchical model or probabilistic PCA")
    p.add_argument("--method", default="mpd", choices=METHODS, help="momentum particle descent, PGD or EM")
    p.add_argument("--gamma", type=float, default=0.1, help="MPD friction on theta and particles")
    p.add_argument("--eta", type=float, default=2000.0, help="MPD inverse mass, toy model")
    p.add_argument("--steps", type=int, default=None, help="steps (default 2000 toy, 1000 ppca; em 100)")
    p.add_argument("--particles", type=int, default=None, help="particles (default 100 toy, 10 ppca)")
    p.add_argument("--data", type=int, default=None, help="data points (default 100 toy, 500 ppca)")
    p.add_argument("--seed", type=int, default=0, help="seeds the data, the particles and the PPCA start")
    add_out_argument(p)
    return p


class _Progress:
    """A tqdm bar over the fit's steps on stderr (silent off a terminal), ticked by the fit's trace callback."""

    def __init__(self, total: int, every: int, desc: str) -> None:
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc=desc, unit="step", file=sys.stderr, disable=None)
        self.every, self.started = every, False

    def __call__(self, *_args) -> dict:
        if self.started:  # the first call records step 0
            self.bar.update(min(self.every, self.bar.total - self.bar.n))
        self.started = True
        return {}

    def close(self) -> None:
        self.bar.close()


def _crossings(inside) -> tuple[int | None, int | None]:
    """The first index where ``inside`` holds, and the first after which it always holds (None when never)."""
    import numpy as np

    inside = np.asarray(inside, dtype=bool)
    if not inside.any():
        return None, None
    first = int(np.argmax(inside))
    if not inside[-1]:
        return first, None
    outside = np.nonzero(~inside)[0]
    return first, int(outside[-1] + 1) if len(outside) else 0


def fit_command(args: argparse.Namespace) -> int:
    """Run the verb: print about ten lines of the trace, when it first reaches and when it settles within the
    tolerance, and the overshoot; write ``results.json``, ``report.md`` and ``trace.png`` to a new run directory.

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
    toy = args.model == "toy"
    n = n or (100 if toy else 500)
    steps = steps or (100 if args.method == "em" else 2000 if toy else 1000)
    if args.method != "em":
        parts = parts or (100 if toy else 10)
    what = "the toy hierarchical model" if toy else "probabilistic PCA (D=8, q=2)"
    how = "EM" if args.method == "em" else f"{args.method.upper()} with {parts} particles"
    run = start_run(args, "momentum-particles", f"fit {what} to {n} data points by {how}, {steps} steps, seed {seed}")
    if toy:
        rows, fig, summary, results = _toy(args.method, gamma, eta, steps, parts, n, seed)
    else:
        rows, fig, summary, results = _ppca(args.method, gamma, steps, parts, n, seed)
    lines = [*rows, *summary]
    print("\n".join(lines), flush=True)
    finish_run(run, {"model": args.model, "method": args.method, "seed": seed, **results}, lines, {"trace": fig})
    return 0


def _evals(evals, k) -> str:
    return f"{int(evals[k])} gradient evaluations"


def _toy(method, gamma, eta, steps, parts, n, seed):
    import numpy as np
    from matplotlib.figure import Figure

    from .baselines import PGD, toy_em
    from .experiments import TOY_STEP
    from .models import ToyHierarchical, toy_log_likelihood
    from .mpd import MPD
    from .world import toy_data

    y = toy_data(n, seed=seed)
    mle = float(y.mean())
    label = f"MPD gamma={gamma:g} eta={eta:g}" if method == "mpd" else method.upper()
    if method == "em":
        theta = np.asarray(toy_em(y, 0.0, steps))
        evals = np.arange(steps + 1)
    else:
        if method == "mpd":
            alg = MPD(
                TOY_STEP / n, TOY_STEP, gamma_theta=gamma, gamma_x=gamma, eta_theta=eta, eta_x=eta, n_particles=parts
            )
        else:
            alg = PGD(TOY_STEP / n, TOY_STEP, n_particles=parts)
        bar = _Progress(steps, 1, label)
        try:
            fit = alg.fit(ToyHierarchical(0.0), y, steps, seed=seed, callback=bar)
        finally:
            bar.close()
        theta = fit.theta_trace().numpy()[:, 0]
        evals = np.asarray(fit.grad_evals)
    rows = [f"toy hierarchical model: {n} data, truth 100, theta_hat = mean(y) = {mle:.4f}; {label}"]
    rows.append(f"{'step':>6} {'evals':>6} {'theta':>10} {'|theta-hat|':>12} {'log-lik':>11}")
    trace = []
    for k in sorted(set(np.linspace(0, steps, 11).astype(int))):
        ll = toy_log_likelihood(y, float(theta[k]))
        rows.append(f"{k:>6} {int(evals[k]):>6} {theta[k]:>10.4f} {abs(theta[k] - mle):>12.4f} {ll:>11.2f}")
        trace.append({"step": int(k), "evals": int(evals[k]), "theta": float(theta[k]), "log_lik": float(ll)})
    tol = 1e-2 * abs(mle)
    first, settle = _crossings(np.abs(theta - mle) < tol)
    head = "|theta - theta_hat| < 1e-2 |theta_hat|"
    if first is None:
        reached = [f"{head} not within {steps} steps"]
    else:
        reached = [f"{head} first at step {first} ({_evals(evals, first)})"]
        reached.append(
            f"settled at step {settle} ({_evals(evals, settle)}): within {tol:.4f} of theta_hat from then on"
            if settle is not None
            else f"not settled: outside {tol:.4f} of theta_hat again at step {steps}"
        )
    past = (1.0 if mle >= theta[0] else -1.0) * (theta - mle)
    peak = int(np.argmax(past))
    overshoot = max(float(past[peak]), 0.0) / abs(mle)
    over = (
        f"overshoot {overshoot:.1%} of theta_hat: theta peaks at {theta[peak]:.4f} (step {peak})"
        if past[peak] > 0
        else "overshoot none: theta never passes theta_hat"
    )
    results = {
        "theta_hat": mle,
        "tolerance": tol,
        "first_step": first,
        "first_evals": None if first is None else int(evals[first]),
        "settle_step": settle,
        "settle_evals": None if settle is None else int(evals[settle]),
        "overshoot": overshoot,
        "peak_step": peak,
        "peak_theta": float(theta[peak]),
        "trace": trace,
    }
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    ax.plot(theta, label=label)
    ax.axhline(mle, color="black", linestyle=":", label="MLE")
    ax.axhspan(mle - tol, mle + tol, color="black", alpha=0.1, label="tolerance")
    if settle is not None:
        ax.axvline(settle, color="grey", linestyle="--", label=f"settled (step {settle})")
    ax.set_xlabel("step k")
    ax.set_ylabel("theta")
    ax.legend()
    return rows, fig, [*reached, over], results


def _ppca(method, gamma, steps, parts, n, seed):
    import numpy as np
    from matplotlib.figure import Figure

    from .baselines import PGD, ppca_em
    from .models import PPCA, ppca_mle
    from .mpd import MPD
    from .world import ppca_data

    y = ppca_data(n, seed=seed)
    _, _, _, ll_star = ppca_mle(y, 2)
    label = f"MPD gamma_theta={gamma:g}" if method == "mpd" else method.upper()
    if method == "em":
        *_, lls = ppca_em(y, 2, steps, seed=seed + 1)
        evals, ll = np.arange(steps + 1), np.asarray(lls)
    else:
        h_x = 1e-2
        if method == "mpd":
            alg = MPD(
                h_x / n, h_x, gamma_theta=gamma, gamma_x=1.0, momentum_theta=0.9, momentum_x=0.0, n_particles=parts
            )
        else:
            alg = PGD(h_x / n, h_x, n_particles=parts)
        every = max(1, steps // 50)
        bar = _Progress(steps, every, label)
        try:
            fit = alg.fit(
                PPCA(8, 2, seed=seed + 1),
                y,
                steps,
                seed=seed,
                every=every,
                callback=lambda m, _x: {"ll": m.log_likelihood(y), **bar()},
            )
        finally:
            bar.close()
        evals, ll = np.asarray(fit.grad_evals), np.asarray(fit.extra["ll"])
    gap = (ll_star - ll) / n
    rows = [f"probabilistic PCA: {n} data, D=8, q=2, MLE log-lik per datum {ll_star / n:.4f}; {label}"]
    rows.append(f"{'evals':>6} {'log-lik/datum':>14} {'gap':>10}")
    trace = []
    for i in sorted(set(np.linspace(0, len(ll) - 1, 11).astype(int))):
        rows.append(f"{int(evals[i]):>6} {ll[i] / n:>14.4f} {gap[i]:>10.4f}")
        trace.append({"evals": int(evals[i]), "log_lik_per_datum": float(ll[i] / n), "gap": float(gap[i])})
    first, settle = _crossings(gap < 0.1)
    if first is None:
        summary = [f"gap >= 0.1 nats per datum throughout ({int(evals[-1])} evaluations)"]
    else:
        summary = [f"gap < 0.1 nats per datum first after {int(evals[first])} evaluations"]
        summary.append(
            f"settled after {int(evals[settle])} evaluations: below 0.1 from then on"
            if settle is not None
            else "not settled: the gap is above 0.1 again at the end"
        )
    results = {
        "log_lik_mle_per_datum": float(ll_star / n),
        "first_evals": None if first is None else int(evals[first]),
        "settle_evals": None if settle is None else int(evals[settle]),
        "final_gap": float(gap[-1]),
        "trace": trace,
    }
    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    ax.semilogy(evals[1:], np.maximum(gap[1:], 1e-6), label=label)
    ax.set_xlabel("gradient evaluations")
    ax.set_ylabel("gap to the MLE (nats per datum)")
    ax.legend()
    return rows, fig, summary, results


__all__ = ["register", "add_arguments", "fit_command"]
