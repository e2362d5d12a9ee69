"""ALEG and ALEM: empirical group DRO and minimax excess risk optimisation (Yu, Cai, Jiang, Zhang, ICML 2024).

A user with data split into groups who wants the model whose worst group risk is smallest (GDRO), or whose
worst excess risk is smallest (MERO), with as few per-sample gradient evaluations (IFO) as possible::

    from icml24.group_dro import GroupProblem, Ball, aleg, alem, duality_gap
    problem = GroupProblem.from_data(X, y, groups, loss="logistic", domain=Ball(5.0))
    result = aleg(problem, epochs=200, seed=0)          # result.w, result.q, result.ifo, result.trace
    duality_gap(problem, result.w, result.q)            # certified accuracy of the pair
    mero = alem(problem, epochs=200, seed=0)            # worst excess risk; mero.info["risk_estimates"]

Steps: by default ``aleg`` and ``alem`` pick their step factor by a short pilot (:func:`pilot_gamma`, counted in
``result.ifo``; the factor is ``result.info["gamma"]``): the theory's step (``gamma="theory"``) is far too small
in practice. To compare methods at their best steps to a target gap, as the claims do, use
:func:`tune` (``tune(problem, "aleg", targets=(1e-3,), max_ifo=..., pilot=..., seed=0).best.gamma``).

The problem is in :mod:`icml24.group_dro.problem` (its set ``W`` in :mod:`~icml24.group_dro.domain`, its
built-in losses in :mod:`~icml24.group_dro.glm_losses`); ALEG's operator and estimators in
:mod:`~icml24.group_dro.operators`. Baselines (same problems, same IFO accounting) are in
:mod:`icml24.group_dro.baselines`; exact references in :mod:`icml24.group_dro.reference`; the synthetic problem
of the claims is :func:`synthetic_problem` (with its data generator
:func:`~icml24.group_dro.world.synthetic_groups`, in :mod:`icml24.group_dro.world`); the step tuning is in
:mod:`icml24.group_dro.tuning`, the estimators' second moments in :mod:`icml24.group_dro.moments`, the claims'
experiments in :mod:`icml24.group_dro.experiments` and :mod:`icml24.group_dro.minority`.

For minibatch training of a torch model, :class:`GroupDROLoss` (online group DRO, Sagawa et al. 2020, as a loss
object) and :class:`VRGroupDROLoss` (its q-step on ALEG's variance-reduced group risks) are in
:mod:`icml24.group_dro.loss`::

    robust = GroupDROLoss(n_groups)                                    # eta = 0.01, as the reference code
    loss = robust(F.cross_entropy(model(x), y, reduction="none"), g)   # updates robust.q
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light, and the
# torch losses (minibatch group DRO for any nn.Module) cost torch only when asked for.
_EXPORTS = {
    ".aleg": ("aleg", "alem", "pilot_gamma"),
    ".baselines": ("mirror_prox", "one_level_vr", "online_group_dro", "smd", "smd_mero"),
    ".tuning": ("Tuned", "tune"),
    ".mirror": ("Result",),
    ".glm_losses": ("LOSSES",),
    ".domain": ("Ball", "Box"),
    ".problem": ("GroupProblem",),
    ".world": ("synthetic_problem",),
    ".reference": ("duality_gap", "group_optima", "min_weighted_risk", "minimax_reference"),
    ".loss": ("GroupDROLoss", "VRGroupDROLoss"),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
