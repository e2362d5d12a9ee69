"""The claims of "Momentum Particle Maximum Likelihood" (Lim, Kuntz, Power & Johansen, ICML 2024, arXiv
2312.07335). The experiments are in ``experiments.py``.

Shared experiments: ``momentum_particles/ppca`` (MPD, PGD, a PGD with a 10x theta step and EM on the same
replicate data sets) is judged by ``ppca`` and ``ppca-tuned-peer``; ``momentum_particles/generator`` (MPD, PGD, ABP
and the official MPD config trained on the same MNIST images, scored with common random numbers) by
``generator``, ``generator-official-config`` and ``generator-mean-latent``. ``regimes`` has its own.
"""

from __future__ import annotations

from typing import Mapping

from ..claims import Claim, Experiment
from ..registry import method

SLUG = "momentum_particles"
FAR_FEWER = 4.0  # "far fewer steps": at least 4x fewer than PGD (and 2x fewer gradient evaluations)
SETTLE_FEWER = 2.0  # ... and settles (stays within the tolerance) in at least 2x fewer steps
OVERSHOOT_MIN = 0.2  # the underdamped run overshoots theta_hat by at least 20% ...
OVERSHOOT_MARGIN = 0.1  # ... and by 10 points more than the critical one
TOY_TOL = 1e-2  # |theta - theta_hat| < 1e-2 |theta_hat|
PPCA_TOL = 0.1  # nats per datum from the closed-form maximum likelihood

PPCA_RUN = Experiment(f"{SLUG}/ppca", "experiments:run_ppca")
GENERATOR_RUN = Experiment(f"{SLUG}/generator", "experiments:run_generator")


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
PPCA_LOG_SE = 3.0  # the paired gain in mean log10 gap over the run is at least 3 standard errors (over replicates)
PPCA_EVALS_SE = 1.0  # the paired gain in evaluations to the tolerance is at least 1 standard error


def _holds_ppca(m: Mapping[str, float]) -> bool:
    return bool(
        m["log_gap_gain"] > 0.0
        and m["log_gap_gain"] >= PPCA_LOG_SE * m["log_gap_gain_se"]
        and m["evals_gain"] > 0.0
        and m["evals_gain"] >= PPCA_EVALS_SE * m["evals_gain_se"]
        and m["mpd_mean_gap"] < m["pgd_mean_gap"]
        and m["mpd_gap_max"] <= PPCA_TOL
        and m["pgd_x10_gap"] <= PPCA_TOL
    )


PPCA = Claim(
    key=f"{SLUG}/ppca",
    statement=(
        "On probabilistic PCA (D = 8, q = 2, theta = (W, mu, log sigma); independent replicate data sets per seed, "
        "each with its own initial parameters), at an equal budget of gradient evaluations and the toy script's "
        "step convention for both (h_x = 1e-2, h_theta = h_x / n_data), MPD (gamma_theta 0.1, target momentum 0.9) "
        "is closer to the closed-form MLE over the run than PGD: paired over replicates, its mean log10 gap per "
        f"datum over the run is lower by at least {PPCA_LOG_SE:g} standard errors, it reaches a gap below "
        f"{PPCA_TOL:g} nats per datum in fewer gradient evaluations (by at least {PPCA_EVALS_SE:g} standard error), "
        "its mean gap over the run is the lower, and it ends within that tolerance on every replicate; a PGD with "
        "a 10x theta step also ends within it on average (the final gaps of MPD, PGD and EM are reported)."
    ),
    run=PPCA_RUN,
    holds=_holds_ppca,
    headline="mpd_mean_log_gap",
    baseline="pgd_mean_log_gap",
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
    run=PPCA_RUN,
    holds=_holds_ppca_tuned,
    headline="mpd_evals_to_tol",
    baseline="pgd_x10_evals_to_tol",
    paper="reviewers of the ICLR version: gains over a tuned PGD are modest",
    expected=False,
    finding=(
        "Does not reproduce: at quick scale (500 data, 5 particles, 1000 evaluations, 10 replicate data sets) MPD "
        "reaches a gap of 0.1 nats per datum after a median 400 / 375 / 450 evaluations on seeds 0 / 1 / 2, PGD with "
        "a 10x theta step after 200 / 200 / 200, and ends as close (mean final gaps 0.015 / 0.018 / 0.017 for MPD, "
        "0.017 / 0.018 / 0.018 for PGD x10; smoke: 400 / 400 / 420 vs 200 / 180 / 220). MPD's advantage holds "
        "against PGD at a shared step; a plain PGD with a larger theta step is faster on this well-conditioned "
        "problem (a 30x step is unstable: final gaps 0.13 to 78 nats per datum over the quick seed-0 replicates)."
    ),
)


# --------------------------------------------------------------------------------------------- generator
MSE_SE = 2.0  # the paired reconstruction gain over PGD is at least 2 standard errors (over held-out images)
LL_SE = 1.0  # the paired marginal-likelihood gain over PGD is at least 1 standard error


def _holds_generator(m: Mapping[str, float]) -> bool:
    return bool(
        m["mse_gain"] >= MSE_SE * m["mse_gain_se"]
        and m["mse_gain"] > 0.0
        and m["log_lik_gain"] >= LL_SE * m["log_lik_gain_se"]
        and m["log_lik_gain"] > 0.0
        and m["mpd_mse"] < m["mean_image_mse"]
        and m["mpd_mse"] < 0.5 * m["untrained_mse"]
        and m["mpd_log_lik"] > m["untrained_log_lik"]
        and m["mpd_grad_evals"] <= m["pgd_grad_evals"]
    )


GENERATOR = Claim(
    key=f"{SLUG}/generator",
    statement=(
        "A generator network (MLP decoder, 8 latents, Gaussian pixels sigma 0.3) trained on MNIST digits by MPD "
        "has, at an equal budget of gradient evaluations, a lower held-out reconstruction error of posterior "
        f"samples than the same network trained by PGD (paired over held-out images, by at least {MSE_SE:g} "
        "standard errors) and a higher held-out log marginal likelihood (importance sampling with a Gaussian "
        f"proposal fitted to Langevin posterior particles; by at least {LL_SE:g} standard error); its error is "
        "below the mean training image's and half the untrained network's. Our MPD settings, not the official "
        "config: h_theta = h_x = 1e-3 (the official PGD step), gamma_theta 0.1, gamma_x 0.2, target momenta "
        "0.95 / 0; RMSProp on theta for both, 5 particles. ABP reported."
    ),
    run=GENERATOR_RUN,
    holds=_holds_generator,
    headline="mpd_log_lik",
    baseline="pgd_log_lik",
    paper="MNIST MLP generator (configs/mnist/mpd_mlp.py vs pgd_mlp.py): MPD's reconstruction/FID below PGD's",
)


def _holds_generator_official(m: Mapping[str, float]) -> bool:
    return bool(m["official_mse_gain"] > 0.0 and m["official_log_lik_gain"] > 0.0)


GENERATOR_OFFICIAL = Claim(
    key=f"{SLUG}/generator-official-config",
    statement=(
        "With the official MNIST MPD config (h = 1e-4, gamma_theta = gamma_x = 0.9, target momenta 0.95 / 0, "
        "RMSProp), the generator network trained by MPD beats PGD (official step 1e-3) on held-out reconstruction "
        "error and log marginal likelihood at an equal budget of gradient evaluations."
    ),
    run=GENERATOR_RUN,
    holds=_holds_generator_official,
    headline="official_log_lik",
    baseline="pgd_log_lik",
    paper="configs/mnist/mpd_mlp.py (h 1e-4, gamma 0.9, momentum 0.95 / 0) vs configs/mnist/pgd_mlp.py (h 1e-3)",
    expected=False,
    finding=(
        "Does not reproduce at our budget (200 / 400 gradient evaluations at smoke / quick, 150 / 500 training "
        "images): the official step 1e-4 is 10x smaller than PGD's, and in so few evaluations its network stays "
        "far behind. Held-out log-likelihood per image (nats), official MPD vs PGD: smoke -9.5 / -9.2 / -12.4 vs "
        "13.6 / 13.5 / 8.9 on seeds 0 / 1 / 2, quick -1.6 / -1.2 / 1.2 vs 13.7 / 14.3 / 14.5; reconstruction "
        "error 0.061 / 0.060 / 0.064 vs 0.037 / 0.037 / 0.042 (smoke), 0.053 / 0.052 / 0.050 vs 0.035 / 0.035 / "
        "0.035 (quick). The paper trains far longer; the generator claim uses our own settings (h 1e-3, "
        "gamma_theta 0.1, gamma_x 0.2)."
    ),
)


def _holds_generator_mean_latent(m: Mapping[str, float]) -> bool:
    return bool(m["mean_latent_gain"] > 0.0 and m["mean_latent_gain"] >= MSE_SE * m["mean_latent_gain_se"])


GENERATOR_MEAN_LATENT = Claim(
    key=f"{SLUG}/generator-mean-latent",
    statement=(
        "On the same generator runs, decoding each held-out image's mean latent (the mean of its posterior "
        f"particles) also gives MPD a lower reconstruction error than PGD, by at least {MSE_SE:g} standard errors "
        "as in the generator claim."
    ),
    run=GENERATOR_RUN,
    holds=_holds_generator_mean_latent,
    headline="mpd_mse_mean_latent",
    baseline="pgd_mse_mean_latent",
    paper="not in the paper; a second reading of 'reconstruction error' checked beside the claim's",
    expected=False,
    finding=(
        "Does not reproduce: the MPD-trained network reconstructs worse from the mean latent than the PGD-trained "
        "one or no better (paired gains in MSE, PGD minus MPD: smoke -0.017 / -0.014 / -0.008 on seeds 0 / 1 / 2, "
        "each over 3 standard errors below zero; quick -0.0085 / -0.019 / +0.0008 with standard errors 0.0013 / "
        "0.0015 / 0.0013), although its posterior samples reconstruct better and its marginal likelihood is "
        "higher: MPD's decoder spreads the posterior over latents whose mean decodes to a blurred image. Which "
        "reading of reconstruction error the paper used is not recoverable here."
    ),
)

METHOD = method(SLUG, (REGIMES, PPCA, PPCA_TUNED, GENERATOR, GENERATOR_OFFICIAL, GENERATOR_MEAN_LATENT))
