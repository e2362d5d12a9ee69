"""The claim experiments of C3PO on the templated assistant world (:mod:`icml24.c3po.world`).

The three claims judge one experiment, :func:`run_assistant`: one :class:`~icml24.c3po.world_run.WorldRun`
pretrains the base, builds each feedback's data and trains each adapter once, and keeps them for that run only
(how: :mod:`icml24.c3po.world_run`; which feedbacks and their scopes: :mod:`icml24.c3po.scopes`).
"""

from __future__ import annotations

import time

from ..claims import Scale
from ..runs import save_figure
from ..threads import single_thread
from .scopes import world_feedback
from .world_run import WorldRun

PARETO_METHODS = ("in_context", "scd", "scd_negatives", "dpo", "c3po")


def compare(key: str, scale: Scale, seed: int, *, run: WorldRun | None = None) -> dict[str, float]:
    """C3PO against in-context, SCD, SCD + negatives and DPO on one world feedback; writes the Pareto plot.

    Parameters
    ----------
    key : str
        A feedback key (:func:`world_feedback`).
    scale : Scale
    seed : int
    run : WorldRun, optional
        The run whose base, data and adapters to use (a new one by default).

    Returns
    -------
    dict of str to float
        ``<method>_<metric>`` for the base model and every method; ``seconds``.
    """
    run = WorldRun(scale, seed) if run is None else run
    with single_thread():
        t0 = time.perf_counter()
        m = {}
        for method in ("base",) + PARETO_METHODS:
            for k, v in run.scores(method, key).items():
                m[f"{method}_{k}"] = v
        m["seconds"] = time.perf_counter() - t0
    pareto_plot(m, world_feedback(key).feedback.content, f"c3po-pareto-seed{run.seed}")
    return m


def run_assistant(scale: Scale, seed: int) -> dict[str, float]:
    """The experiment ``c3po/assistant`` of the three claims, on one base model of the assistant world: the "&"
    comparison (:func:`run_adherence`), the anchor ablations (:func:`run_anchors`) and the composition of the "&"
    and "u" adapters (:func:`run_composition`), which share the base, the "&" data and C3PO's "&" adapter.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        The union of their metrics; their times as ``adherence_seconds`` and ``composition_seconds``.
    """
    run = WorldRun(scale, seed)
    m = run_adherence(scale, seed, run=run)
    m["adherence_seconds"] = m.pop("seconds")
    m.update(run_anchors(scale, seed, run=run))
    comp = run_composition(scale, seed, run=run)
    comp["composition_seconds"] = comp.pop("seconds")
    m.update(comp)
    return m


def run_adherence(scale: Scale, seed: int, *, run: WorldRun | None = None) -> dict[str, float]:
    """C3PO against in-context, SCD, SCD + negatives and DPO on the "&" feedback; writes the Pareto plot.

    Parameters
    ----------
    scale : Scale
    seed : int
    run : WorldRun, optional
        The run to share (a new one by default).

    Returns
    -------
    dict of str to float
    """
    return compare("ampersand", scale, seed, run=run)


def pareto_plot(m: dict, title: str, name: str):
    """Draw every method's (overgeneralization, adherence) point and save it in the current run directory.

    Parameters
    ----------
    m : dict
        Metrics of :func:`compare`.
    title : str
        The feedback.
    name : str
        File stem.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5, 4))
    ax = fig.subplots()
    for i, method in enumerate(PARETO_METHODS):
        point = (m[f"{method}_overgen"], m[f"{method}_adherence"])
        ax.scatter(*point, s=40)
        # labels stagger vertically, so that methods on the same point (SCD and DPO often are) stay readable
        ax.annotate(method, point, xytext=(4, 4 - 10 * (i % 3)), textcoords="offset points", fontsize=8)
    ax.set_xlabel("overgeneralization (near + out of scope, lower is better)")
    ax.set_ylabel("feedback adherence (in scope)")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.set_title(title, fontsize=9)
    save_figure(fig, name)
    return fig


def run_anchors(scale: Scale, seed: int, *, run: WorldRun | None = None) -> dict[str, float]:
    """C3PO against itself without the near-scope term and without the out-of-scope term.

    Parameters
    ----------
    scale : Scale
    seed : int
    run : WorldRun, optional
        The run to share (a new one by default).

    Returns
    -------
    dict of str to float
    """
    run = WorldRun(scale, seed) if run is None else run
    with single_thread():
        m = {}
        for name, ln, lo in (("c3po", 0.1, 0.2), ("no_near", 0.0, 0.2), ("no_out", 0.1, 0.0)):
            for k, v in run.scores("c3po", "ampersand", ln, lo).items():
                m[f"{name}_{k}"] = v
    return m


def run_composition(scale: Scale, seed: int, *, run: WorldRun | None = None) -> dict[str, float]:
    """Two C3PO adapters ("&" in colleague DMs, "u" in recipes) alone and served together: their LoRA updates
    summed (the paper's mixing, the default of :func:`compose_adapters`) and composed in logit space.

    The claim ``c3po/composition``, a declared seed-dependent finding (its ``finding`` holds the runs): it holds
    only where the "u" adapter learned its feedback on its own, which it does not do reliably (C3PO's DPO term
    degenerates the recipe answers). Tried beside it, not judged: C3PO at lr 5e-4 instead of 1e-3 (learned "u" less
    often), the KL-distillation anchors (``kd_lambda=1``, ``kd_temperature=1``, the official ``config_lcdpo_kl``;
    not on every seed either), "u" in other domains (no better), and "&" in recipes (not at all: the look-alike
    near scope, math answers also saying "you add 2 and 9", holds it back at 120 steps).

    Parameters
    ----------
    scale : Scale
    seed : int
    run : WorldRun, optional
        The run to share (a new one by default).

    Returns
    -------
    dict of str to float
        ``<key>_alone_<metric>``, ``<key>_mixed_<metric>`` (summed updates) and ``<key>_logits_<metric>`` (logit
        space) for both feedbacks; ``seconds``.
    """
    from .adapters import compose_adapters

    run = WorldRun(scale, seed) if run is None else run
    with single_thread():
        t0 = time.perf_counter()
        m = {}
        base, tok, _ = run.base()
        adapters = [run.trained("c3po", key).model for key in ("ampersand", "u")]
        served = {mode: compose_adapters(base, adapters, mode=mode) for mode in ("logits", "weights")}
        for key in ("ampersand", "u"):
            for k, v in run.scores("c3po", key).items():
                m[f"{key}_alone_{k}"] = v
            for mode, name in (("weights", "mixed"), ("logits", "logits")):
                for k, v in run.evaluate(served[mode], tok, key, kl=False).items():
                    m[f"{key}_{name}_{k}"] = v
        m["seconds"] = time.perf_counter() - t0
    return m


__all__ = [
    "compare",
    "pareto_plot",
    "run_assistant",
    "run_adherence",
    "run_anchors",
    "run_composition",
]
