"""The claims of "Momentum Particle Maximum Likelihood" (Lim, Kuntz, Power & Johansen, ICML 2024, arXiv
2312.07335). The experiments are in ``experiments.py``.
"""

from __future__ import annotations

from typing import Mapping

from ..claims import Claim
from ..registry import method

SLUG = "momentum_particles"
FAR_FEWER = 4.0  # "far fewer steps": at least 4x fewer than PGD (and 2x fewer gradient evaluations)
SETTLE_FEWER = 2.0  # ... and settles (stays within the tolerance) in at least 2x fewer steps
OVERSHOOT_MIN = 0.2  # the underdamped run overshoots theta_hat by at least 20% ...
OVERSHOOT_MARGIN = 0.1  # ... and by 10 points more than the critical one
TOY_TOL = 1e-2  # |theta - theta_hat| < 1e-2 |theta_hat|
PPCA_TOL = 0.1  # nats per datum from the closed-form maximum likelihood


# ----------------------------------------------------------------------------------------------- regimes
def _holds_regimes(m: Mapping[str, float]) -> bool:
    return bool(
        m["critical_steps_median"] * FAR_FEWER <= m["pgd_steps_median"]
        and m["critical_evals_to_tol"] * FAR_FEWER / 2 <= m["pgd_evals_to_tol"]
        and m["critical_settle_median"] * SETTLE_FEWER <= m["pgd_settle_median"]
        and m["critical_final_rel_err"] <= TOY_TOL
        and m["underdamped_overshoot"] >= OVERSHOOT_MIN
        and m["underdamped_overshoot"] >= m["critical_overshoot"] + OVERSHOOT_MARGIN
        and m["underdamped_settle_median"] > m["critical_settle_median"]
        and m["overdamped_steps_median"] >= m["pgd_steps_median"]
        and m["overdamped_mean_log_err"] >= m["pgd_mean_log_err"]
    )


REGIMES = Claim(
    key=f"{SLUG}/regimes",
    statement=(
        "On the official toy hierarchical model (100 data, truth 100, theta from 0, h_x = 1e-2, h_theta = 1e-4, "
        "eta = 2000), MPD near critical damping (gamma 0.1) reaches |theta - theta_hat| < 1e-2 |theta_hat| in at "
        f"least {FAR_FEWER:g}x fewer steps (and {FAR_FEWER / 2:g}x fewer gradient evaluations) than PGD at the same "
        f"steps (median over independent data sets), settles within it in {SETTLE_FEWER:g}x fewer steps despite "
        f"overshooting, and ends within it; the underdamped run (gamma 0.05) overshoots theta_hat by at least "
        f"{OVERSHOOT_MIN:.0%} and more than the critical one, and settles later; the overdamped run (gamma 2) is "
        "no faster than PGD (steps and mean log error)."
    ),
    run="experiments:run_regimes",
    holds=_holds_regimes,
    headline="critical_steps_median",
    baseline="pgd_steps_median",
    paper=(
        "scripts/toyhmm/different_regimes.py (Fig. of theta vs k): critical MPD reaches theta_hat far sooner than "
        "PGD (which needs ~1200 of 2000 steps), underdamped oscillates, overdamped lags"
    ),
)


# -------------------------------------------------------------------------------------------------- ppca
def _holds_ppca(m: Mapping[str, float]) -> bool:
    return bool(
        m["mpd_gap"] <= m["pgd_gap"]
        and m["mpd_mean_gap"] < m["pgd_mean_gap"]
        and m["mpd_evals_to_tol"] <= m["pgd_evals_to_tol"]
        and m["mpd_gap"] <= PPCA_TOL
        and m["pgd_x10_gap"] <= PPCA_TOL
    )


PPCA = Claim(
    key=f"{SLUG}/ppca",
    statement=(
        "On probabilistic PCA (D = 8, q = 2, theta = (W, mu, log sigma)), at an equal budget of gradient "
        "evaluations and the toy script's step convention for both (h_x = 1e-2, h_theta = h_x / n_data), MPD "
        "(gamma_theta 0.1, target momentum 0.9) ends with an exact log-likelihood at least PGD's, is closer to the "
        "closed-form MLE on average over the run, reaches a gap below "
        f"{PPCA_TOL:g} nats per datum no later, and ends within it; a PGD with a 10x theta step also ends within it "
        "(the gaps of PGD and of EM are reported)."
    ),
    run="experiments:run_ppca",
    holds=_holds_ppca,
    headline="mpd_gap",
    baseline="pgd_gap",
    paper="not in the paper; the natural closed-form check of 'MPD >= PGD at equal cost' (toy convention of steps)",
)


def _holds_ppca_tuned(m: Mapping[str, float]) -> bool:
    return bool(m["mpd_evals_to_tol"] < m["pgd_x10_evals_to_tol"])


PPCA_TUNED = Claim(
    key=f"{SLUG}/ppca-tuned-peer",
    statement=(
        "On the same probabilistic PCA runs, MPD reaches the MLE tolerance in fewer gradient evaluations than PGD "
        "whose theta step is tuned up 10x (the largest of 1x, 10x, 30x that stays stable)."
    ),
    run="experiments:run_ppca",
    holds=_holds_ppca_tuned,
    headline="mpd_evals_to_tol",
    baseline="pgd_x10_evals_to_tol",
    paper="reviewers of the ICLR version: gains over a tuned PGD are modest",
    expected=False,
    finding=(
        "Does not reproduce: at quick scale (500 data, 5 particles, 1000 evaluations) MPD reaches a gap of 0.1 nats "
        "per datum after 750 / 500 / 400 evaluations on seeds 0 / 1 / 2, PGD with a 10x theta step after "
        "250 / 250 / 200, and ends as close (final gaps 0.037 / 0.006 / 0.022 for MPD, 0.031 / 0.004 / 0.017 for "
        "PGD x10; smoke: 560 / 640 / 400 vs 240 / 200 / 200). MPD's advantage holds against PGD at a shared step; "
        "a plain PGD with a larger theta step is faster on this well-conditioned problem (a 30x step diverges)."
    ),
)


# --------------------------------------------------------------------------------------------- generator
def _holds_generator(m: Mapping[str, float]) -> bool:
    return bool(
        m["mpd_mse"] < m["pgd_mse"]
        and m["mpd_mse"] < m["mean_image_mse"]
        and m["mpd_mse"] < 0.5 * m["untrained_mse"]
        and m["mpd_grad_evals"] <= m["pgd_grad_evals"]
    )


GENERATOR = Claim(
    key=f"{SLUG}/generator",
    statement=(
        "A generator network (MLP decoder, 8 latents, Gaussian pixels) trained on MNIST digits by MPD has a lower "
        "held-out reconstruction error than the same network trained by PGD at an equal budget of gradient "
        "evaluations (RMSProp on theta for both, shared steps 1e-3; held-out images encoded by the same Langevin "
        "chain under each model), below the mean training image's and half the untrained network's; ABP reported."
    ),
    run="experiments:run_generator",
    holds=_holds_generator,
    headline="mpd_mse",
    baseline="pgd_mse",
    paper="MNIST MLP generator (configs/mnist/mpd_mlp.py vs pgd_mlp.py): MPD's reconstruction/FID below PGD's",
)

METHOD = method(SLUG, (REGIMES, PPCA, PPCA_TUNED, GENERATOR))
