"""The report of the RED loop: ``metrics.json``, ``report.md`` and its figures, from what the steps found.

:func:`collect_metrics` turns the :class:`Findings` of :func:`~icml24.red_xai.loop.question` into named floats,
:func:`figures` draws them on ``matplotlib.figure.Figure`` (never pyplot), :func:`report_text` writes the
markdown, and :func:`write_report` writes all three into a folder, each file atomically (:mod:`icml24.runs`;
figures through :func:`icml24.runs.save_figure`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError
from ..runs import artifacts_to, atomic_write_json, atomic_write_text, save_figure
from .explain import ConceptVector
from .prepare import check_questioning

if TYPE_CHECKING:
    from .loop import Questioning

__all__ = ["Findings", "collect_metrics", "figures", "report_text", "write_report"]


@dataclass(frozen=True)
class Findings:
    """What the steps of :func:`~icml24.red_xai.loop.question` found (each field the result of one step).

    Parameters
    ----------
    before : dict
        :func:`~icml24.red_xai.loop.examine` of the model.
    shown : list of str
        The attributions computed on the model (:func:`~icml24.red_xai.loop.shown`).
    clusters : dict
        :func:`~icml24.red_xai.loop.cluster`.
    tcav : dict
        The TCAV result of :func:`~icml24.red_xai.loop.name_concept`.
    cav : ConceptVector
        The artifact's CAV (:func:`~icml24.red_xai.loop.name_concept`).
    after : dict of str to dict
        :func:`~icml24.red_xai.loop.examine` of each corrected copy (:func:`~icml24.red_xai.loop.fix`).
    randomization, flips : dict
        :func:`~icml24.red_xai.loop.check_explanations`.
    rashomon : dict or None
        :func:`~icml24.red_xai.loop.explore_rashomon`.
    """

    before: dict
    shown: list[str]
    clusters: dict
    tcav: dict
    cav: ConceptVector
    after: dict[str, dict]
    randomization: dict
    flips: dict
    rashomon: dict | None


def collect_metrics(q: Questioning, f: Findings) -> dict[str, float]:
    """The numbers of the report (``metrics.json``): the model's, each fix's (``pclarc_``, ``rrclarc_``, ``rrr_``),
    and the Rashomon set's; relevance masses of the other attributions than ``q.method`` carry their name.

    Parameters
    ----------
    q : Questioning
        What :func:`~icml24.red_xai.loop.prepare` returned.
    f : Findings
        What the steps found.

    Returns
    -------
    dict of str to float
    """
    check_questioning(q)
    if not isinstance(f, Findings):
        raise InputError(f"f must be the Findings of the loop's steps, got {type(f).__name__}")
    before, after, shown, method, mask, artifact = f.before, f.after, f.shown, q.method, q.mask, q.artifact
    sp, cluster_mass, cav, t = f.clusters["spray"], f.clusters["mass"], f.cav, f.tcav
    rc, flips, rash = f.randomization, f.flips, f.rashomon

    def key(meth: str) -> str:
        return "" if meth == method else f"{meth}_"

    metrics = {
        "accuracy": before["acc"],
        "reliance": before["reliance"],
        "spray_clusters": float(sp.clusters),
        "cav_accuracy": float(cav.accuracy),
        "tcav": float(t["score"]),
        "tcav_p": float(t["p_value"]),
        "randomization_correlation": float(rc["final"]),
        "flip_aopc_random": flips[method]["aopc_random"],
    }
    for k in shown:
        metrics[f"{key(k)}relevance_mass"] = before["rma"][k]
        metrics[f"{key(k)}spray_artifact_cluster_mass"] = float(cluster_mass[k].max())
        metrics[f"{key(k)}flip_aopc"] = flips[k]["aopc"]
    swap_keys = {"removed": "artifact_removed_accuracy", "only_fit": "artifact_only_accuracy",
                 "only_held_out": "artifact_only_accuracy_held_out"}  # fmt: skip
    metrics["mask_share"] = float(mask.float().mean())
    if artifact == "swap":
        metrics.update({v: before[k] for k, v in swap_keys.items()})
    for name, a in after.items():
        fix = name.lower().replace("-", "")
        metrics.update({f"{fix}_accuracy": a["acc"], f"{fix}_reliance": a["reliance"]})
        if artifact == "swap":
            metrics.update({f"{fix}_{v}": a[k] for k, v in swap_keys.items()})
        for k, v in a["rma"].items():
            metrics[f"{fix}_{key(k)}relevance_mass"] = v
    if rash is not None:
        metrics.update(
            {
                "rashomon_models": float(len(rash["accuracy"])),
                "rashomon_accuracy_spread": rash["accuracy_spread"],
                "rashomon_reliance_min": float(rash["reliance"].min()),
                "rashomon_reliance_max": float(rash["reliance"].max()),
                "rashomon_rank_correlation": rash["rank_correlation"],
                "rashomon_rank_correlation_min": rash["rank_correlation_min"],
            }
        )
    return metrics


def _grid(rows: list[list[tuple[str, np.ndarray]]], title: str, cmap: str = "bwr"):
    """Heatmaps in rows of panels, each on its own symmetric colour scale (panels labelled "image" in grey)."""
    from matplotlib.figure import Figure

    n_rows, n_cols = len(rows), max(len(r) for r in rows)
    fig = Figure(figsize=(1.6 * n_cols, 1.75 * n_rows + 0.3))
    axes = np.array(fig.subplots(n_rows, n_cols, squeeze=False))
    for r, row in enumerate(rows):
        for c in range(n_cols):
            ax = axes[r, c]
            ax.axis("off")
            if c >= len(row):
                continue
            label, m = row[c]
            lim = float(np.abs(m).max()) or 1.0
            image = label.startswith("image")  # the input itself: grey, not a signed map
            cm = "gray" if image else cmap
            ax.imshow(m, cmap=cm, vmin=-lim if cm == "bwr" else float(m.min()), vmax=lim)
            ax.set_title(label, fontsize=7, y=1.0)  # a fixed y skips the per-axes title layout (slow; no ticks here)
    fig.suptitle(title, fontsize=9)
    return fig


def figures(q: Questioning, f: Findings) -> dict:
    """The report's figures: heatmaps, SpRAy spectrum and cluster means, before and after the fix, pixel flipping
    and (with peers) the Rashomon set.

    Parameters
    ----------
    q : Questioning
        What :func:`~icml24.red_xai.loop.prepare` returned.
    f : Findings
        What the steps found.

    Returns
    -------
    dict of str to matplotlib.figure.Figure
        By file name (without ``.png``).
    """
    check_questioning(q)
    if not isinstance(f, Findings):
        raise InputError(f"f must be the Findings of the loop's steps, got {type(f).__name__}")
    from matplotlib.figure import Figure

    before, after, shown, method, target, xt = f.before, f.after, f.shown, q.method, q.target, q.xt
    sp, sizes, cluster_means, cluster_mass = (f.clusters[k] for k in ("spray", "sizes", "means", "mass"))
    flips, rash = f.flips, f.rashomon
    figs = {}
    k = min(8, len(xt))
    figs["heatmaps"] = _grid(
        [[(f"image {i}", xt[i].sum(0).numpy()) for i in range(k)]]
        + [[(f"{m} {i}", before["maps"][m][i].sum(0).numpy()) for i in range(k)] for m in shown],
        f"class {target}: images and their heatmaps (one row per attribution)",
    )
    fig = Figure(figsize=(4, 2.6))
    ax = fig.subplots()
    ax.plot(np.arange(1, len(sp.eigenvalues) + 1), sp.eigenvalues, "o-")
    ax.axvline(sp.clusters + 0.5, color="grey", ls="--")
    ax.set_xlabel("index")
    ax.set_ylabel("eigenvalue")
    ax.set_title(f"SpRAy spectrum: eigengap at {sp.clusters}", fontsize=9)
    figs["spectrum"] = fig
    figs["cluster_means"] = _grid(
        [
            [
                (f"{m}\ncluster {c} (n={sizes[c]}): {cluster_mass[m][c]:.2f}", cluster_means[m][c])
                for c in range(sp.clusters)
            ]
            for m in shown
        ],
        f"SpRAy clusters of the {method} heatmaps: mean heatmap of each cluster per attribution "
        "(share of positive relevance inside the mask)",
    )
    fig = Figure(figsize=(5.5, 2.8))
    ax = fig.subplots()
    names = ["model", *after]
    rows = [before, *after.values()]
    w = 0.27
    for j, (field, label) in enumerate((("acc", "held-out accuracy"), ("reliance", "reliance"), ("rma", "mass"))):
        vals = [r[field][method] if field == "rma" else r[field] for r in rows]
        ax.bar(np.arange(len(names)) + (j - 1) * w, vals, w, label=label)
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.set_title(f"before and after the fix (mass: {method} relevance inside the mask)", fontsize=9)
    figs["before_after"] = fig
    k = min(4, len(xt))
    figs["heatmaps_after"] = _grid(
        [
            [(f"{n} {i}", r["maps"][m][i].sum(0).numpy()) for n, r in zip(names, rows) for i in range(k)]
            for m in shown
            if all(r["maps"][m] is not None for r in rows)
        ],
        "heatmaps before and after the fix (one row per attribution)",
    )
    fig = Figure(figsize=(4.5, 2.8))
    ax = fig.subplots()
    steps = np.linspace(0, 0.5, len(flips[method]["curve"]))
    for m in shown:
        ax.plot(steps, flips[m]["curve"], label=f"{m} (AOPC {flips[m]['aopc']:.3f})")
    ax.plot(steps, flips[method]["random_curve"], "k--", label=f"random (AOPC {flips[method]['aopc_random']:.3f})")
    ax.set_xlabel("share of pixels removed, most relevant first")
    ax.set_ylabel(f"p(class {target})")
    ax.legend(fontsize=6)
    ax.set_title("pixel flipping", fontsize=9)
    figs["pixel_flipping"] = fig
    if rash is not None:
        fig = Figure(figsize=(4.5, 2.8))
        ax = fig.subplots()
        idx = np.arange(len(rash["accuracy"]))
        ax.bar(idx - 0.2, rash["accuracy"], 0.4, label="held-out accuracy")
        ax.bar(idx + 0.2, rash["reliance"], 0.4, label="reliance")
        ax.set_xticks(idx, ["model", *[f"peer {i}" for i in range(len(idx) - 1)]], fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.legend(fontsize=7)
        ax.set_title("Rashomon set: near-equal accuracy, different reliance", fontsize=9)
        figs["rashomon"] = fig
    return figs


def report_text(q: Questioning, f: Findings, metrics: dict) -> str:
    """The markdown of ``report.md``: one section per step, with the figures linked.

    Parameters
    ----------
    q : Questioning
        What :func:`~icml24.red_xai.loop.prepare` returned.
    f : Findings
        What the steps found.
    metrics : dict
        :func:`collect_metrics`.

    Returns
    -------
    str
    """
    check_questioning(q)
    if not isinstance(f, Findings):
        raise InputError(f"f must be the Findings of the loop's steps, got {type(f).__name__}")
    x, xm, xf, mask, value, held_out, artifact = q.x, q.xm, q.xf, q.mask, q.value, q.held_out, q.artifact
    target, method, methods, layer, seed, xc = q.target, q.method, q.methods, q.layer, q.seed, q.checked
    before, after, shown, cav, t = f.before, f.after, f.shown, f.cav, f.tcav
    rc, flips, rash = f.randomization, f.flips, f.rashomon
    sp, sizes, cluster_mass = f.clusters["spray"], f.clusters["sizes"], f.clusters["mass"]
    names = ["model", *after]
    rows = [before, *after.values()]
    swap = artifact == "swap"
    sizes_text = (
        f"{len(x)} images ({len(xm)} held out for measurement)"
        if not held_out
        else f"{len(x)} images to fit and {len(xm)} held-out images for measurement"
    )
    extra_cols = ("removed", "only_fit", "only_held_out") if swap else ()
    head = " | ".join(
        [*(("accuracy, artifact removed", "artifact alone: fit", "artifact alone: held out") if swap else ())]
        + [f"mass: {m}" for m in shown]
    )
    table = "\n".join(
        f"| {n} | {r['acc']:.3f} | {r['reliance']:.3f} | "
        + " | ".join(
            [f"{r[c]:.3f}" for c in extra_cols] + [f"{r['rma'][m]:.3f}" if m in r["rma"] else "n/a" for m in shown]
        )
        + " |"
        for n, r in zip(names, rows)
    )
    n_cols = len(shown) + len(extra_cols)
    if swap:
        held = "the held-out images" if held_out else "the held-out share"
        section1 = (
            f"Held-out accuracy {before['acc']:.3f}; reliance on the artifact (share of {held} whose\n"
            "predicted class changes when their masked pixels are swapped with another held-out image's) "
            f"{before['reliance']:.3f};\naccuracy with the masked pixels removed (set to {value:g}) "
            f"{before['removed']:.3f}.\nThe masked pixels alone (everything else set to {value:g}) are classified as "
            f"the image's label on\n{before['only_fit']:.3f} of the {len(xf)} fit images and on "
            f"{before['only_held_out']:.3f} of the held-out ones: a gap means\nthe model memorised the fit images' "
            "artifact (when they are its training images)."
        )
        concept_text = "images with their own masked pixels against images with them removed"
    else:
        section1 = f"""Held-out accuracy {before["acc"]:.3f}; shortcut reliance (held-out non-{target} images with the
artifact pasted, predicted as {target}) {before["reliance"]:.3f}."""
        concept_text = "images with the artifact pasted against images without it"
    missing = [f"- `{m}`: {before['why'][m]}" for m in methods if before["maps"][m] is None]
    lrp_note = ("\nNot computed for this model:\n" + "\n".join(missing) + "\n") if missing else ""
    lrp_after = [
        f"`{m}` is not available on {n}: {r['why'][m]}" for n, r in zip(names, rows) for m in shown if m not in r["rma"]
    ]
    flip_rows = "\n".join(f"| {m} | {flips[m]['aopc']:.3f} |" for m in shown)
    cm_rows = "\n".join(
        f"| {c} | {sizes[c]} | " + " | ".join(f"{cluster_mass[m][c]:.3f}" for m in shown) + " |"
        for c in range(sp.clusters)
    )
    rash_text = "Not run: pass `peers` (near-equal models of other seeds or widths) to explore the Rashomon set."
    if rash is not None:
        per = ", ".join(f"{a:.3f}/{r:.3f}" for a, r in zip(rash["accuracy"], rash["reliance"]))
        rash_text = (
            f"{len(rash['accuracy'])} models (the model first), held-out accuracy/reliance: {per}. Accuracy spread "
            f"{rash['accuracy_spread']:.3f}, reliance from {rash['reliance'].min():.3f} to "
            f"{rash['reliance'].max():.3f}; mean pairwise rank correlation of the `{method}` heatmaps "
            f"{rash['rank_correlation']:.3f} (least similar pair {rash['rank_correlation_min']:.3f}): many good "
            "models, different reasons.\n\n![Rashomon set](rashomon.png)"
        )
    text = f"""# RED XAI report: questioning the model about the artifact on class {target}

{sizes_text}, artifact mask of {int(mask.sum())} pixels
({metrics["mask_share"]:.3f} of the input: the relevance mass of a uniform map), attributions
`{method}` (clustered) and {", ".join(f"`{m}`" for m in shown if m != method) or "no LRP"}, concept layer
`{layer}`, seed {seed}. The user's model was not changed (every step ran on a copy).

## 1. What accuracy says and what it hides
{section1}

## 2. Heatmaps
Relevance mass inside the mask on the class-{target} images (share of positive relevance):
{"; ".join(f"`{m}` {before['rma'][m]:.3f}" for m in shown)}. LRP through Captum: epsilon on every layer
(`lrp_epsilon`; with its small epsilon it nearly equals gradient x input on a ReLU network, Ancona et al. 2018),
z+ on every weighted layer but the logits' (`lrp_zplus`: positive contributions only).
{lrp_note}
![heatmaps](heatmaps.png)

## 3. SpRAy
Spectral clustering of the `{method}` heatmaps: eigengap at {sp.clusters} clusters (sizes {sizes.tolist()}).
Each cluster's mean heatmap under every attribution (maps normalised to unit mass) and the share of its positive
relevance inside the mask:

| cluster | size | {" | ".join(shown)} |
|---|---|{"---|" * len(shown)}
{cm_rows}

![spectrum](spectrum.png)

![cluster means](cluster_means.png)

## 4. The concept
CAV at `{layer}` ({concept_text}): probe accuracy {cav.accuracy:.3f}; TCAV score for class {target} {t["score"]:.3f}
(p = {t["p_value"]:.3g} against random concept sets).

## 5. The fix, re-measured
| model | held-out accuracy | reliance | {head} |
|---|---|---|{"---|" * n_cols}
{table}

{" ".join(lrp_after)}

![before and after](before_after.png)

![heatmaps after](heatmaps_after.png)

## 6. Are the explanations sound?
Model-randomisation check: rank correlation of the `{method}` heatmaps with those of the fully randomised model
{rc["final"]:.3f} (cascade, top layer first: {", ".join(f"{c:.2f}" for c in rc["correlations"])}); low means
the heatmaps depend on what the model learned.

Pixel flipping on {len(xc)} class-{target} images (most relevant pixels set to 0 first, half the pixels in 20
steps; AOPC, larger is more faithful; a random order gives {flips[method]["aopc_random"]:.3f}):

| attribution | AOPC |
|---|---|
{flip_rows}

![pixel flipping](pixel_flipping.png)

## 7. Rashomon set
{rash_text}
"""
    return text


def write_report(out: str | os.PathLike, q: Questioning, f: Findings, metrics: dict) -> Path:
    """Write the figures, ``metrics.json`` and ``report.md`` into ``out`` (created), each file atomically.

    Parameters
    ----------
    out : str or os.PathLike
        The folder (existing files of the same names are replaced).
    q : Questioning
        What :func:`~icml24.red_xai.loop.prepare` returned.
    f : Findings
        What the steps found.
    metrics : dict
        :func:`collect_metrics`.

    Returns
    -------
    pathlib.Path
        The path of ``report.md``.
    """
    check_questioning(q)
    if not isinstance(f, Findings):
        raise InputError(f"f must be the Findings of the loop's steps, got {type(f).__name__}")
    out = Path(out)
    figs = figures(q, f)
    out.mkdir(parents=True, exist_ok=True)
    with artifacts_to(out):
        for name, fig in figs.items():
            save_figure(fig, name)
    atomic_write_json(out / "metrics.json", metrics)
    return atomic_write_text(out / "report.md", report_text(q, f, metrics))
