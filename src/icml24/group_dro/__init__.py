"""ALEG and ALEM: empirical group DRO and minimax excess risk optimisation (Yu, Cai, Jiang, Zhang, ICML 2024).

A user with data split into groups who wants the model whose worst group risk is smallest (GDRO), or whose
worst excess risk is smallest (MERO), with as few per-sample gradient evaluations (IFO) as possible::

    from icml24.group_dro import GroupProblem, Ball, aleg, alem, duality_gap
    problem = GroupProblem.from_data(X, y, groups, loss="logistic", domain=Ball(5.0))
    result = aleg(problem, epochs=200, seed=0)          # result.w, result.q, result.ifo, result.trace
    duality_gap(problem, result.w, result.q)            # certified accuracy of the pair
    mero = alem(problem, epochs=200, seed=0)            # worst excess risk; mero.info["risk_estimates"]

Baselines (same problems, same IFO accounting) are in :mod:`icml24.group_dro.baselines`; exact references in
:mod:`icml24.group_dro.reference`; the synthetic problem of the claims is :func:`synthetic_problem` (its data
generator is :func:`icml24.data.groups.synthetic_groups`); the claims' experiments, step tuning and estimator
moments are in :mod:`icml24.group_dro.experiments`.
"""

from .aleg import aleg, alem
from .baselines import mirror_prox, one_level_vr, online_group_dro, smd, smd_mero
from .mirror import Result
from .problem import LOSSES, Ball, Box, GroupProblem, synthetic_problem
from .reference import duality_gap, group_optima, min_weighted_risk, minimax_reference

__all__ = [
    "GroupProblem",
    "Ball",
    "Box",
    "LOSSES",
    "Result",
    "aleg",
    "alem",
    "smd",
    "one_level_vr",
    "mirror_prox",
    "online_group_dro",
    "smd_mero",
    "duality_gap",
    "minimax_reference",
    "min_weighted_risk",
    "group_optima",
    "synthetic_problem",
]
