"""The claims of "BRAIn: Bayesian Reward-conditioned Amortized Inference for natural language generation from
feedback" (Pandey et al., ICML 2024, arXiv 2402.02479). The experiments are in ``experiments.py``.

Experiments: :data:`DISTILLATION_RUN` (``brain/distillation``: BRAIn and its peers distilling the exact posterior
at equal sampled responses) is judged by ``distillation``, ``distillation-gdcpp`` and
``distillation-gdcpp-estimated``; ``variance`` and ``dpo-special-case`` each have a run of their own. None needs
data: the toy and the enumerable language are built in.
"""

from __future__ import annotations

from typing import Mapping

from ..claims import Claim, Experiment
from ..registry import method

SLUG = "brain"
FAR_RATIO = 4.0  # Gaussian toy: at the farthest proposal BRAIn's variance is at least 4x below GDC++'s and DPG's
DPO_TOL = 1e-6  # the DPO option equals the DPO loss (and its gradient) to this absolute tolerance
DISTIL_MARGIN = 0.8  # BRAIn's final KL to the posterior is at most 0.8x that of DPG and of BRAIn without baseline
TRAINED = 0.5  # ... and at most half the SFT model's (it learned)

DISTILLATION_RUN = Experiment(f"{SLUG}/distillation", "experiments:run_distillation")


# ---------------------------------------------------------------------------------------------- variance
def _holds_variance(m: Mapping[str, float]) -> bool:
    return bool(
        m["gauss_min_ratio_gdcpp"] > 1.0
        and m["gauss_min_ratio_dpg_far"] > 1.0
        and m["gauss_last_ratio_gdcpp"] >= FAR_RATIO
        and m["gauss_last_ratio_dpg"] >= FAR_RATIO
        and m["gauss_gap_gdcpp_last"] > m["gauss_gap_gdcpp_first"]
        and m["gauss_gap_dpg_last"] > m["gauss_gap_dpg_first"]
    )


VARIANCE = Claim(
    key=f"{SLUG}/variance",
    statement=(
        "The variance of the gradient estimate is smaller for BRAIn (self-normalised target and baseline) than for "
        "GDC++ and DPG (exact Z given to both): on the author's 1-D Gaussian toy (posterior N(0,1), policy N(1,1), "
        "proposal mean swept 0 -> 1, n = 8) below GDC++'s at every proposal and below DPG's at every proposal with "
        f"KL(proposal || posterior) >= 0.08, at least {FAR_RATIO:g}x below both at the farthest, the gap to each "
        "growing from the nearest proposal to the farthest. The same run reports (not judged) the enumerable "
        "language at the SFT policy (proposals from the posterior to the policy, total variance over all "
        "parameters): BRAIn below GDC++ by 1.1-1.8x, and below DPG except near the posterior on some seeds."
    ),
    run="experiments:run_variance",
    holds=_holds_variance,
    headline="gauss_brain_var_last",
    baseline="gauss_gdcpp_var_last",
    paper=(
        "author repo gradient_estimators.py / proposal_vs_variance.png: BRAIn's variance far below GDC++'s and "
        "DPG's, the gap growing with KL(proposal || posterior); near the posterior DPG's weights are uniform and its "
        "variance is lowest (seen here too)"
    ),
)


# ------------------------------------------------------------------------------------------ distillation
def _holds_distillation(m: Mapping[str, float]) -> bool:
    return bool(
        m["brain_kl_post"] <= DISTIL_MARGIN * m["brain_no_baseline_kl_post"]
        and m["brain_kl_post"] <= TRAINED * m["sft_kl_post"]
    )


DISTILLATION = Claim(
    key=f"{SLUG}/distillation",
    statement=(
        "On the enumerable language (posterior p exp(r) / Z exact), with equal numbers of sampled responses (n = 8, "
        "proposal refreshed from the policy every 10 steps), BRAIn ends with an exact KL(posterior || policy) at "
        f"most {DISTIL_MARGIN:g}x that of BRAIn without its self-normalised baseline and "
        f"{TRAINED:g}x the SFT model's. Reported, not judged (seed-dependent at smoke): DPG (exact Z) beside BRAIn, "
        "and the distance below the exact reward-KL frontier of BRAIn and of DPO-sft (n = 2, argmax, SFT samples, "
        "same responses); the figures are in the README."
    ),
    run=DISTILLATION_RUN,
    holds=_holds_distillation,
    headline="brain_kl_post",
    baseline="dpg_kl_post",
    paper="removing the self-normalised baseline hurts; BRAIn outperforms DPO-sft (TL;DR, HH win rates)",
)


def _holds_distillation_gdcpp(m: Mapping[str, float]) -> bool:
    return bool(m["brain_kl_post"] <= DISTIL_MARGIN * m["gdcpp_kl_post"])


DISTILLATION_GDCPP = Claim(
    key=f"{SLUG}/distillation-gdcpp",
    statement=(
        f"In the same runs BRAIn's final KL(posterior || policy) is at most {DISTIL_MARGIN:g}x GDC++'s "
        "(GDC++ given the exact partition function Z)."
    ),
    run=DISTILLATION_RUN,
    holds=_holds_distillation_gdcpp,
    headline="brain_kl_post",
    baseline="gdcpp_kl_post",
    paper="GDC++-style distribution matching trails BRAIn (paper's comparison, with estimated Z)",
    expected=False,
    finding=(
        "Does not reproduce with an oracle Z: at smoke scale (30 steps of 8 prompts x 8 samples) BRAIn / GDC++ end "
        "at KL 0.035 / 0.033 (seed 0) and 0.100 / 0.054 (seed 1); at 60 steps, seed 0, 0.0121 / 0.0124. GDC++'s "
        "un-normalised baseline with the exact Z is as good or better here; GDC++ in practice estimates Z, which "
        "this comparison does not penalise."
    ),
)


def _holds_distillation_gdcpp_est(m: Mapping[str, float]) -> bool:
    return bool(m["brain_kl_post"] <= DISTIL_MARGIN * m["gdcpp_est_kl_post"])


DISTILLATION_GDCPP_EST = Claim(
    key=f"{SLUG}/distillation-gdcpp-estimated",
    statement=(
        f"In the same runs BRAIn's final KL(posterior || policy) is at most {DISTIL_MARGIN:g}x that of GDC++ "
        "as run in practice, with log Z(x) estimated by importance sampling from each prompt's own n samples "
        "(the conditional GDC++/CDPG estimate)."
    ),
    run=DISTILLATION_RUN,
    holds=_holds_distillation_gdcpp_est,
    headline="brain_kl_post",
    baseline="gdcpp_est_kl_post",
    paper="GDC++-style distribution matching trails BRAIn (paper's comparison, with estimated Z)",
    expected=False,
    finding=(
        "Does not reproduce with the estimated Z either. With Z estimated from the n samples, GDC++'s weights are "
        "alpha_i - q_theta(y_i) / (n q'(y_i)): BRAIn's self-normalised target with an un-normalised baseline, "
        "whose mean is the same 1/n-scaled ratio BRAIn normalises. Measured (BRAIn / GDC++-estimated, final KL): "
        "smoke seeds 0-2 0.0346 / 0.0348, 0.0995 / 0.0548, 0.0909 / 0.0645; quick 0.0076 / 0.0071, "
        "0.0131 / 0.0118, 0.0165 / 0.0087. On this small language the un-normalised baseline costs nothing; the "
        "paper's comparison is on LLM summarization and dialogue (TL;DR, HH), which we cannot run offline."
    ),
)


# ------------------------------------------------------------------------------------------------- DPO
def _holds_dpo(m: Mapping[str, float]) -> bool:
    return bool(
        m["max_abs_loss_diff"] <= DPO_TOL and m["max_abs_grad_diff"] <= DPO_TOL and m["soft_target_max_diff"] > 1e-3
    )


DPO = Claim(
    key=f"{SLUG}/dpo-special-case",
    statement=(
        "With two SFT samples per prompt, argmax targets and the policy log-ratios scaled by DPO's beta, the BRAIn "
        f"loss equals the DPO loss (and its gradient) to {DPO_TOL:g} on random batches, while BRAIn's soft targets "
        "give a different loss."
    ),
    run="experiments:run_dpo_equivalence",
    holds=_holds_dpo,
    headline="max_abs_loss_diff",
    baseline="soft_target_max_diff",
    paper="Sec. 4: DPO is BRAIn with n = 2, q' = SFT and the reward softmax replaced by argmax",
)

METHOD = method(SLUG, (VARIANCE, DISTILLATION, DISTILLATION_GDCPP, DISTILLATION_GDCPP_EST, DPO))
