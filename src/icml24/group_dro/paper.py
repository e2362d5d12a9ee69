"""The paper's claims as executable checks (Yu, Cai, Jiang, Zhang, ICML 2024, arXiv 2403.03562).

The claims run on a synthetic multi-group problem (:func:`~icml24.group_dro.problem.synthetic_problem`:
logistic loss, ``W = {||w|| <= 5}``, ``d = 20``, ``n_i = 100`` at quick scale) and count per-sample gradient
evaluations (IFO). Except in claim 2b, every method's step factor is tuned by the same procedure on the same
grid (:func:`~icml24.group_dro.experiments.tune`); the problem's data seed is ``seed`` and the methods'
sampling seed is ``seed + 1``. The runs are in :mod:`icml24.group_dro.experiments`.

1. ``beats-every-baseline``: ALEG reaches duality gap 1e-3 with fewer IFO than each of SMD, the one-level
   variance-reduced mirror prox, deterministic mirror prox and online GroupDRO (abstract).
2. ``sqrt-m-advantage``: the IFO ratio one-level / ALEG grows like ``sqrt(m)`` (abstract: "outperforms the
   state-of-the-art method by a factor of sqrt(m)"): the fitted log-log slope over ``m in {4, 8, 16, 32}``
   lies within 0.25 of 0.5, i.e. closer to the prediction than to "no gain" (0) or "linear gain" (1).
   2b. ``sqrt-m-at-analysed-steps``: the same test for the algorithms the analysis is about: both methods at
   their theory steps (``gamma = 0.99``, untuned), on ``W = {||w|| <= 1}``, the radius at which the
   analysis' own constants predict the gain (at radius 5 they predict slope 0.12). Target gap 3e-2 at quick
   scale, 1e-2 at paper scale.
3. ``alem-beats-smd-mero``: at an equal IFO budget, ALEM's worst-group excess risk is below that of the
   two-stage SMD approach to MERO (abstract: ALEM's rate "surpassing the rates of existing methods").

Measured (seed 0, quick scale): claims 1 and 2 do not hold and are declared findings; 2b and 3 hold. ALEG needs
678k IFO to gap 1e-3 at m = 16, the one-level method 470k; with tuned steps the IFO ratio one-level / ALEG is
1.17, 0.76, 0.86, 0.84 over m = 4..32 (slope -0.12), and with ``W = {||w|| <= 1}`` slope 0.08
(``benchmarks/group_dro.py --radius 1``). At the analysed steps (2b) the ratio is 1.25, 1.74, 2.42, 3.63 (slope
0.51; seed 1: 0.43), as the analysis' constants predict (1.28, 1.73, 2.41, 3.53).

Why tuning erases the gain (reported in claim 2's metrics, :func:`~icml24.group_dro.experiments.
estimator_moments`): near the solution, the one-level estimator's q-block second moment in the paper's
``l_inf`` norm is ``m^1.5``-fold that of the group-sampled one (5.5, 14, 39, 114 for m = 4..32; the analysis
bounds it by ``m^2``), which would leave the sqrt(m) gain. But in the local norm of the entropy at ``q`` (what
an exponentiated-gradient step feels while ``eta ln(m) |g_q|`` is small) it is exactly ``m``-fold, and the
w-block's about ``m``-fold too; an ``m``-fold second moment costs ``sqrt(m)`` in step size, which the one-level
method's ``m``-fold cheaper steps pay back exactly. The moments predict ratios 0.95, 0.93, 0.91, 0.86 in the
local norm (slope -0.05) against 0.97, 1.04, 1.24, 1.60 in ``l_inf`` (slope 0.24); the tuned runs measure
1.17, 0.76, 0.86, 0.84. The sqrt(m) is a property of the worst-case step sizes of the analysis, and it is
real for them (2b); a user who tunes both steps should not expect it on problems like this one.
"""

from __future__ import annotations

from typing import Mapping

from ..claims import Claim, finite
from ..registry import method

SLUG = "group_dro"
#: The peers ALEG must each beat in ``beats-every-baseline`` (the ``ifo_<name>`` metrics).
BASELINES = ("one_level_vr", "smd", "mirror_prox", "online_group_dro")
#: ``sqrt-m-*``: the fitted log-log slope must lie within this distance of the predicted 0.5, closer to it than
#: to "no gain" (0) or "linear gain" (1).
SLOPE_TOLERANCE = 0.25

_REASON = (
    "in the entropy's local norm the one-level estimator's q-block second moment is exactly m times the "
    "group-sampled one (in the paper's l_inf norm m^1.5-fold: 5.5, 14, 39, 114 for m = 4..32), which its "
    "m-fold cheaper steps pay back, so tuned steps leave no sqrt(m) gain; at the analysis' own step sizes "
    "the gain shows (claim sqrt-m-at-analysed-steps)"
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


def holds_sqrt_m(mt: Mapping[str, float]) -> bool:
    """``sqrt-m-*``: the fitted slope is within :data:`SLOPE_TOLERANCE` of the predicted one and ALEG wins
    (ratio one-level / ALEG above 1) at the largest m.

    Parameters
    ----------
    mt : mapping of str to float
        The metrics of :func:`~icml24.group_dro.experiments.run_sqrt_m` or ``run_sqrt_m_analysed``.

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


CLAIMS = (
    Claim(
        f"{SLUG}/beats-every-baseline",
        "On a synthetic multi-group logistic problem (m=16), ALEG reaches duality gap 1e-3 with fewer "
        "per-sample gradient evaluations than SMD, the one-level variance-reduced mirror prox (Alacaoglu-"
        "Malitsky), deterministic mirror prox and online GroupDRO, each with its step tuned on the same grid.",
        "experiments:run_baselines",
        holds_baselines,
        "ifo_aleg",
        "ifo_best_baseline",
        paper="Abstract: O(m sqrt(n_bar ln m)/eps) IFO, the best known rate; its plots not read",
        expected=False,
        finding="Tuned steps, quick scale (m=16), seed 0: ALEG needs 6.784e5 IFO to gap 1e-3, the best baseline "
        "(one-level VR mirror prox) 4.704e5; SMD, mirror prox and online GroupDRO do not reach it in "
        "1000 passes. Reason: " + _REASON + ".",
    ),
    Claim(
        f"{SLUG}/sqrt-m-advantage",
        "ALEG's advantage over the one-level variance-reduced mirror prox grows like sqrt(m): the log-log slope "
        "of the IFO ratio (one-level / ALEG, to reach the target gap) over m in {4, 8, 16, 32} is within 0.25 "
        "of 0.5, and the ratio exceeds 1 at the largest m.",
        "experiments:run_sqrt_m",
        holds_sqrt_m,
        "slope",
        "predicted_slope",
        paper="Abstract: outperforms the state-of-the-art method by a factor of sqrt(m)",
        expected=False,
        finding="Tuned steps, quick scale, seed 0: IFO ratio one-level / ALEG 1.17, 0.76, 0.86, 0.84 for "
        "m = 4, 8, 16, 32, log-log slope -0.125 against the predicted 0.5. Reason: "
        + _REASON
        + "; the measured moments predict slope -0.05 in the local norm, 0.24 in l_inf.",
    ),
    Claim(
        f"{SLUG}/sqrt-m-at-analysed-steps",
        "With the step sizes of the analysis (gamma=0.99 times each method's own theory step, no tuning) on the "
        "synthetic problem with W={||w||<=1}, where the analysis' constants are dominated by the q-block, the IFO "
        "ratio one-level VR / ALEG to reach the target gap grows like sqrt(m): log-log slope over m in "
        "{4, 8, 16, 32} within 0.25 of 0.5, and the ratio exceeds 1 at the largest m.",
        "experiments:run_sqrt_m_analysed",
        holds_sqrt_m,
        "slope",
        "predicted_slope",
        paper="Analysis (abstract): a factor sqrt(m) over the one-level VR method at its step sizes",
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
)

METHOD = method(SLUG, CLAIMS)

__all__ = ["METHOD", "CLAIMS", "BASELINES", "SLOPE_TOLERANCE", "holds_baselines", "holds_sqrt_m", "holds_alem"]
