"""The paper's claims as executable checks (Yu, Cai, Jiang, Zhang, ICML 2024, arXiv 2403.03562).

The claims run on a synthetic multi-group problem (:func:`~icml24.group_dro.world.synthetic_problem`:
logistic loss, ``W = {||w|| <= 5}``, ``d = 20``, ``n_i = 100`` at quick scale) and count per-sample gradient
evaluations (IFO). In the races (claims 1 to 3) every method's step factor is tuned by the same procedure on the
same grid (:func:`~icml24.group_dro.tuning.tune`); the problem's data seed is ``seed`` and the methods'
sampling seed is ``seed + 1``. The runs are in :mod:`icml24.group_dro.experiments` (claim 5's in
:mod:`icml24.group_dro.minority`). The numbers we measured are in the findings' ``finding`` texts and in the
README's results table.

Experiments (each computed once per scale and seed by ``icml24 verify``): :data:`RACE` (``group_dro/race``,
every method tuned to the target gap) is judged by claims 1 and 1b; every other claim has a run of its own.
Claim 5 needs Fashion-MNIST under the data root (``data:fashion-mnist``): without it, it is not run.

1. ``beats-first-order-baselines``: ALEG reaches duality gap 1e-3 with fewer IFO than each of SMD,
   deterministic mirror prox and online GroupDRO (abstract: the best known rate). Judged on the same
   experiment as claim 1b.
   1b. ``beats-every-baseline``: the same, and also fewer than the one-level variance-reduced mirror prox
   (Alacaoglu-Malitsky). A finding: the one-level method is faster.
2. ``sqrt-m-advantage``: the IFO ratio one-level / ALEG grows like ``sqrt(m)`` (abstract: "outperforms the
   state-of-the-art method by a factor of sqrt(m)"): the fitted log-log slope over ``m in {4, 8, 16}`` (quick
   scale; ``{4, 8, 16, 32}`` at paper scale) lies within 0.25 of 0.5, i.e. closer to the prediction than to "no
   gain" (0) or "linear gain" (1). A finding: with tuned steps the slope is near zero or negative.
3. ``group-sampling-at-equal-steps``: the mechanism the sqrt(m) rests on, checked where only the estimator's
   variance can decide it: ALEG's iteration run with three estimators at the same step and for the same
   number of epochs (``aleg(..., estimator=...)``): group-sampled (ALEG's), one-level, and the exact operator
   as a zero-variance control. The group-sampled one reaches the gap the control reaches, the one-level one
   does not; at a 4-fold smaller step all three converge alike. It shows that group sampling lets a step 4
   times larger converge; it does not show fewer IFO (a one-level step costs 1 IFO against ``m``: claim 2).
4. ``alem-beats-smd-mero``: at an equal IFO budget, ALEM's worst-group excess risk is below that of the
   two-stage SMD approach to MERO (abstract: ALEM's rate "surpassing the rates of existing methods").
5. ``minority-group``: the torch losses (:class:`~icml24.group_dro.loss.GroupDROLoss`, the reference code's
   online exponentiated-gradient q, and :class:`~icml24.group_dro.loss.VRGroupDROLoss`, ALEG's variance-reduced
   q-estimator on minibatches) raise the worst-group accuracy of an MLP on Fashion-MNIST with a planted
   minority group (5 % of images inverted) over plain ERM. Without early stopping or regularisation ERM can
   catch up at paper scale, as unregularised group DRO overfits the minority's training images (Sagawa et
   al.'s point); the claim is judged at quick scale.

Why tuning erases the gain (reported in claim 2's metrics, :func:`~icml24.group_dro.moments.estimator_moments`):
near the solution, the one-level estimator's q-block second moment in the paper's ``l_inf`` norm is about
``m^1.5``-fold that of the group-sampled one (the analysis bounds it by ``m^2``), which would leave the sqrt(m)
gain. But in the local norm of the entropy at ``q`` (what an exponentiated-gradient step feels while
``eta ln(m) |g_q|`` is small) it is exactly ``m``-fold, and the w-block's about ``m``-fold too; an ``m``-fold
second moment costs ``sqrt(m)`` in step size (claim 3 sees the stable step shrink), which the one-level
method's ``m``-fold cheaper steps pay back exactly. The sqrt(m) is a property of the worst-case step sizes of the
analysis: at the analysed steps (``gamma = 0.99``) the IFO ratio follows the analysis' constants, but at small
fixed steps that ratio is the ratio of the step sizes, so we no longer judge that check (it passed by
construction). A user who tunes both steps should not expect the gain on problems like this one."""

from __future__ import annotations

from typing import Mapping

from ..claims import Claim, Experiment, finite
from ..registry import method

SLUG = "group_dro"
#: The peers ALEG must each beat in ``beats-every-baseline`` (the ``ifo_<name>`` metrics).
BASELINES = ("one_level_vr", "smd", "mirror_prox", "online_group_dro")
#: The peers ALEG must each beat in ``beats-first-order-baselines``: those without variance reduction.
FIRST_ORDER_BASELINES = ("smd", "mirror_prox", "online_group_dro")
#: ``group-sampling-at-equal-steps``: at the control step the one-level estimator's gap must be within this
#: multiple of the exact operator's (it converges alike there: the tolerance leaves room for noise only).
CONTROL_TOLERANCE = 1.5
#: ``sqrt-m-advantage``: the fitted log-log slope must lie within this distance of the predicted 0.5, closer to it than
#: to "no gain" (0) or "linear gain" (1).
SLOPE_TOLERANCE = 0.25

_REASON = (
    "in the entropy's local norm the one-level estimator's q-block second moment is exactly m times the "
    "group-sampled one (in the paper's l_inf norm m^1.5-fold: 5.5, 14, 39, 114 for m = 4..32), which its "
    "m-fold cheaper steps pay back, so tuned steps leave no sqrt(m) gain (at equal steps the group-sampled "
    "estimator does converge where the one-level one does not: claim group-sampling-at-equal-steps)"
)


def holds_baselines(mt: Mapping[str, float]) -> bool:
    """``beats-every-baseline``: ALEG's IFO to the target gap is finite and below every baseline's.

    Parameters
    ----------
    mt : mapping of str to float
        The metrics of :func:`~icml24.group_dro.experiments.run_baselines`.

    Returns
    -------
    bool
    """
    a = mt["ifo_aleg"]
    return finite(a) and all(a < mt[f"ifo_{b}"] for b in BASELINES)


def holds_first_order(mt: Mapping[str, float]) -> bool:
    """``beats-first-order-baselines``: ALEG's IFO to the target gap is finite and below that of every
    baseline without variance reduction.

    Parameters
    ----------
    mt : mapping of str to float
        The metrics of :func:`~icml24.group_dro.experiments.run_baselines`.

    Returns
    -------
    bool
    """
    a = mt["ifo_aleg"]
    return finite(a) and all(a < mt[f"ifo_{b}"] for b in FIRST_ORDER_BASELINES)


def holds_equal_steps(mt: Mapping[str, float]) -> bool:
    """``group-sampling-at-equal-steps``: at the shared step the group-sampled estimator and the exact operator
    reach the target gap and the one-level estimator does not; at the control step the one-level estimator's
    gap is within :data:`CONTROL_TOLERANCE` of the exact operator's.

    Parameters
    ----------
    mt : mapping of str to float
        The metrics of :func:`~icml24.group_dro.experiments.run_equal_steps`.

    Returns
    -------
    bool
    """
    names = ("gap_group", "gap_one_level", "gap_full", "gap_one_level_small", "gap_full_small", "target")
    if not finite(*(mt[k] for k in names)):
        return False
    t = mt["target"]
    return (
        mt["gap_full"] <= t
        and mt["gap_group"] <= t
        and mt["gap_one_level"] > t
        and mt["gap_one_level_small"] <= CONTROL_TOLERANCE * mt["gap_full_small"]
    )


def holds_sqrt_m(mt: Mapping[str, float]) -> bool:
    """``sqrt-m-advantage``: the fitted slope is within :data:`SLOPE_TOLERANCE` of the predicted one and ALEG
    wins (ratio one-level / ALEG above 1) at the largest m.

    Parameters
    ----------
    mt : mapping of str to float
        The metrics of :func:`~icml24.group_dro.experiments.run_sqrt_m`.

    Returns
    -------
    bool
    """
    s = mt["slope"]
    return finite(s) and abs(s - mt["predicted_slope"]) <= SLOPE_TOLERANCE and mt["ratio_largest_m"] > 1.0


def holds_alem(mt: Mapping[str, float]) -> bool:
    """``alem-beats-smd-mero``: ALEM's worst-group excess risk is below two-stage SMD's at the same budget.

    Parameters
    ----------
    mt : mapping of str to float
        The metrics of :func:`~icml24.group_dro.experiments.run_alem`.

    Returns
    -------
    bool
    """
    return finite(mt["excess_alem"], mt["excess_smd_mero"]) and mt["excess_alem"] < mt["excess_smd_mero"]


#: ``minority-group``: worst-group test accuracy a robust loss must add over ERM (above the noise of the paired gap
#: on the 500 inverted test images).
MINORITY_MARGIN = 0.03


def holds_minority(mt: Mapping[str, float]) -> bool:
    """``minority-group``: ERM is a trained classifier (average accuracy >= 0.7) and GroupDROLoss and
    VRGroupDROLoss each beat its worst-group test accuracy by at least :data:`MINORITY_MARGIN`.

    Parameters
    ----------
    mt : mapping of str to float
        The metrics of :func:`~icml24.group_dro.minority.run_minority`.

    Returns
    -------
    bool
    """
    e, g, v = mt["erm_worst_acc"], mt["gdro_worst_acc"], mt["vr_worst_acc"]
    return (
        finite(e, g, v, mt["erm_avg_acc"])
        and mt["erm_avg_acc"] >= 0.7
        and g >= e + MINORITY_MARGIN
        and v >= e + MINORITY_MARGIN
    )


#: The race of claims ``beats-first-order-baselines`` and ``beats-every-baseline``: every method of
#: :data:`~icml24.group_dro.experiments.GDRO_METHODS` tuned to the target gap, run once for both.
RACE = Experiment(f"{SLUG}/race", "experiments:run_baselines")

CLAIMS = (
    Claim(
        f"{SLUG}/beats-first-order-baselines",
        "On a synthetic multi-group logistic problem (m=16), ALEG reaches duality gap 1e-3 with fewer "
        "per-sample gradient evaluations than SMD, deterministic mirror prox and online GroupDRO, each with its "
        "step tuned on the same grid (the runs of beats-every-baseline).",
        RACE,
        holds_first_order,
        "ifo_aleg",
        "ifo_best_first_order",
        paper="Abstract: O(m sqrt(n_bar ln m)/eps) IFO, better than SMD's O(m ln m/eps^2)",
    ),
    Claim(
        f"{SLUG}/beats-every-baseline",
        "On a synthetic multi-group logistic problem (m=16), ALEG reaches duality gap 1e-3 with fewer "
        "per-sample gradient evaluations than SMD, the one-level variance-reduced mirror prox (Alacaoglu-"
        "Malitsky), deterministic mirror prox and online GroupDRO, each with its step tuned on the same grid.",
        RACE,
        holds_baselines,
        "ifo_aleg",
        "ifo_best_baseline",
        paper="Abstract: O(m sqrt(n_bar ln m)/eps) IFO, the best known rate; its plots not read",
        expected=False,
        finding="ALEG beats SMD, mirror prox and online GroupDRO (claim beats-first-order-baselines) but not the "
        "one-level VR mirror prox: tuned steps, quick scale (m=16), seed 0, ALEG needs 6.784e5 IFO to gap 1e-3, "
        "the one-level method 4.704e5 (seeds 1, 2: 6.11e5 against 5.79e5, 7.90e5 against 7.14e5); SMD, mirror "
        "prox and online GroupDRO reach it before ALEG on no seed (run to the end, none reached it in 1000 passes, "
        "1.6e6 IFO). Reason: " + _REASON + ".",
    ),
    Claim(
        f"{SLUG}/sqrt-m-advantage",
        "ALEG's advantage over the one-level variance-reduced mirror prox grows like sqrt(m): the log-log slope "
        "of the IFO ratio (one-level / ALEG, to reach the target gap) over m in {4, 8, 16} ({4, 8, 16, 32} at "
        "paper scale) is within 0.25 of 0.5, and the ratio exceeds 1 at the largest m.",
        "experiments:run_sqrt_m",
        holds_sqrt_m,
        "slope",
        "predicted_slope",
        paper="Abstract: outperforms the state-of-the-art method by a factor of sqrt(m)",
        expected=False,
        finding="Tuned steps, quick scale, seed 0: IFO ratio one-level / ALEG 1.17, 0.76, 0.86 for "
        "m = 4, 8, 16, log-log slope -0.222 against the predicted 0.5 (seeds 1, 2: -0.484, -0.279). "
        "With m = 32 as well: ratio 0.84 at m = 32, slopes -0.12, -0.28, -0.20 on seeds 0-2; on "
        "W = {||w|| <= 1} slope 0.08. Reason: " + _REASON + "; the measured moments predict slope -0.03 in the "
        "local norm, 0.18 in l_inf (m = 4..32: -0.05 and 0.24). At the analysed steps (gamma = 0.99 for both, "
        "W = {||w|| <= 1}) the ratio is 1.25, 1.74, 2.42, 3.63 for m = 4..32 (slope 0.51): the ratio of the "
        "worst-case step sizes, as the analysis' constants predict.",
    ),
    Claim(
        f"{SLUG}/group-sampling-at-equal-steps",
        "Run at the same step (64 times ALEG's theory step) for the same number of epochs, ALEG's iteration "
        "reaches duality gap 2e-2 (m=16) with its group-sampled estimator, as with the exact operator, but not "
        "with the one-level estimator, which at a 4 times smaller step converges like the exact operator: "
        "group sampling's smaller variance lets a larger step converge. This does not show fewer gradient "
        "evaluations: a one-level step costs 1 of them against m (see sqrt-m-advantage).",
        "experiments:run_equal_steps",
        holds_equal_steps,
        "gap_group",
        "gap_one_level",
        paper="Analysis: group sampling keeps the estimator's Lipschitz constant O(L+G), not O(m)",
    ),
    Claim(
        f"{SLUG}/alem-beats-smd-mero",
        "At an equal budget of per-sample gradient evaluations, ALEM (two-stage ALEG) reaches a lower "
        "worst-group excess risk max_i [R_i(w) - R_i*] than the two-stage SMD approach to MERO.",
        "experiments:run_alem",
        holds_alem,
        "excess_alem",
        "excess_smd_mero",
        paper="Abstract: ALEM nearly matches ALEG's rate, surpassing existing MERO methods' rates",
    ),
    Claim(
        f"{SLUG}/minority-group",
        "On Fashion-MNIST with 5% of every class's images inverted (train and test; groups: inverted or not), a "
        "784-128-10 MLP trained for the same steps from the same initialisation and batches with GroupDROLoss "
        "(eta=0.01) and with VRGroupDROLoss each reaches a worst-group test accuracy at least "
        f"{MINORITY_MARGIN * 100:g} points above plain ERM's, ERM itself being a trained classifier (average "
        "accuracy >= 0.7). No early stopping or weight decay: at paper scale (60k images, 2000 steps) ERM "
        "catches up on some seeds (figures in the README), as Sagawa et al. warn for unregularised group "
        "DRO; the claim is judged at quick scale (20k images, 600 steps).",
        "minority:run_minority",
        holds_minority,
        "gdro_worst_acc",
        "erm_worst_acc",
        paper="Sagawa et al. 2020 (GroupDRO, not ALEG): group DRO raises worst-group accuracy over ERM",
        needs=("data:fashion-mnist",),
    ),
)

METHOD = method(SLUG, CLAIMS)

__all__ = [
    "METHOD",
    "CLAIMS",
    "RACE",
    "BASELINES",
    "FIRST_ORDER_BASELINES",
    "SLOPE_TOLERANCE",
    "CONTROL_TOLERANCE",
    "holds_baselines",
    "holds_first_order",
    "holds_equal_steps",
    "holds_sqrt_m",
    "holds_alem",
]
