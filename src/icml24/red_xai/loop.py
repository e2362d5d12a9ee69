"""The whole RED loop in one call: explain, cluster, name the concept, correct, re-measure, and write a report.

:func:`question` runs every step of :mod:`.questioning` on the user's classifier and data (a deep copy of the
model; the user's own model and tensors are never changed) and writes ``report.md`` with its figures and
``metrics.json`` into a folder, each file atomically (:mod:`icml24.runs`), figures drawn on
``matplotlib.figure.Figure`` (never pyplot).
"""

from __future__ import annotations

import copy
import io
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..errors import InputError
from ..runs import atomic_write_bytes, atomic_write_json, atomic_write_text
from ..validation import check_choice, check_float, check_int, check_seed
from .questioning import (
    METHODS,
    accuracy,
    attribute,
    check_eval,
    check_images,
    check_labels,
    check_mask,
    check_target,
    concept_vector,
    get_layer,
    n_outputs,
    p_clarc,
    randomization_check,
    relevance_mass,
    rrr,
    shortcut_reliance,
    spray,
    tcav,
)


def _default_layer(model: nn.Module) -> str:
    for name, m in model.named_modules():
        if isinstance(m, nn.ReLU):
            return name
    raise InputError("model has no nn.ReLU module to probe", "pass layer='<module name>'")


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def _grid(maps: list[tuple[str, np.ndarray]], title: str, cmap: str = "bwr"):
    from matplotlib.figure import Figure

    n = len(maps)
    fig = Figure(figsize=(1.6 * n, 1.9))
    axes = np.atleast_1d(fig.subplots(1, n))
    for ax, (label, m) in zip(axes, maps):
        lim = float(np.abs(m).max()) or 1.0
        ax.imshow(m, cmap=cmap, vmin=-lim if cmap == "bwr" else 0.0, vmax=lim)
        ax.set_title(label, fontsize=7)
        ax.axis("off")
    fig.suptitle(title, fontsize=9)
    return fig


def question(
    model: nn.Module,
    data,
    out: str | os.PathLike,
    *,
    target,
    mask: torch.Tensor,
    layer: str | None = None,
    method: str = "input_x_gradient",
    value: float | None = None,
    lam: float = 0.1,
    epochs: int = 10,
    max_heatmaps: int = 200,
    holdout: float = 0.3,
    seed: int = 0,
) -> dict:
    """Question ``model`` on ``data`` about a suspected artifact, fix it, re-measure, and write the report.

    Steps: (1) held-out accuracy and shortcut reliance (held-out non-``target`` images with the artifact pasted,
    predicted as ``target``); (2) heatmaps of the ``target`` images (:func:`attribute`) and their relevance mass
    inside ``mask``; (3) SpRAy of those heatmaps (spectrum, clusters, cluster means); (4) the artifact's CAV at
    ``layer`` and its TCAV score with significance; (5) P-ClArC (training-free) and RRR (fine-tuned from the
    model's weights with ``mask`` as the annotation); (6) the same measurements on both corrected copies;
    (7) the model-randomisation sanity check of the heatmaps. ``out`` gets ``report.md``, ``metrics.json`` and
    the PNG figures (heatmaps, spectrum, cluster means, before/after), each written atomically.

    Parameters
    ----------
    model : torch.nn.Module
        The user's classifier, in eval mode (never changed: every step works on a deep copy).
    data : tuple of (torch.Tensor, torch.Tensor)
        Images ``(N, C, H, W)`` and integer labels ``(N,)``, at least 20 images of two or more classes.
    out : str or os.PathLike
        The folder for the report (created; existing files of the same names are replaced).
    target : int
        The class the suspected artifact points to.
    mask : torch.Tensor
        Bool ``(C, H, W)``: the artifact's pixels (the concept the analyst named).
    layer : str, optional
        The module where the CAV is fitted and P-ClArC projects (default: the first ``nn.ReLU``).
    method : str, default "input_x_gradient"
        Attribution method of :func:`attribute`.
    value : float, optional
        The artifact's pixel value when pasted (default: the largest pixel value of the images).
    lam : float, default 0.1
        RRR's penalty weight.
    epochs : int, default 10
        RRR's fine-tuning epochs.
    max_heatmaps : int, default 200
        At most this many ``target`` images are explained and clustered (at least 4).
    holdout : float, default 0.3
        Share of ``data`` held out for the accuracy and reliance measurements (the rest fits the CAV and RRR).
    seed : int, default 0

    Returns
    -------
    dict
        ``report`` (path of ``report.md``), ``out`` (the folder) and ``metrics`` (dict of floats).
    """
    check_eval(model)
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise InputError(f"data must be a pair (x, y), got {type(data).__name__}", "pass (images, labels)")
    x = check_images(data[0], "data[0]")
    y = check_labels(data[1], len(x), "data[1]")
    if out is None or not isinstance(out, (str, os.PathLike)):
        raise InputError(f"out must be a folder path, got {type(out).__name__}", "pass e.g. 'red_xai_report'")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"out {str(out)!r} is a file", "pass a folder path")
    mask = check_mask(mask, x)
    if tuple(mask.shape) != tuple(x.shape[1:]):
        raise InputError(f"mask has shape {tuple(mask.shape)}, one image {tuple(x.shape[1:])}", "pass (C, H, W)")
    if len(x) < 20:
        raise InputError(f"data holds {len(x)} images", "pass at least 20")
    classes = n_outputs(model, x)
    target = check_target(target, classes)
    if int(y.max()) >= classes:
        raise InputError(f"data[1] holds class {int(y.max())}, the model has {classes} outputs", "check the labels")
    if len(torch.unique(y)) < 2:
        raise InputError("data[1] holds one class only", "pass images of the target class and of others")
    net = copy.deepcopy(model).eval()
    layer = _default_layer(net) if layer is None else layer
    get_layer(net, layer)
    method = check_choice(method, "method", METHODS)
    value = float(x.max()) if value is None else check_float(value, "value")
    lam = check_float(lam, "lam", min_val=0.0)
    epochs = check_int(epochs, "epochs", min_val=0)
    max_heatmaps = check_int(max_heatmaps, "max_heatmaps", min_val=4)
    holdout = check_float(holdout, "holdout", min_val=0.0, max_val=1.0, include_boundaries="neither")
    seed = check_seed(seed)
    x, y = x.detach().clone(), y.detach().clone()

    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(x), generator=gen)
    n_meas = max(int(round(holdout * len(x))), 2)
    meas, fit_idx = perm[:n_meas], perm[n_meas:]
    xm, ym, xf, yf = x[meas], y[meas], x[fit_idx], y[fit_idx]
    tgt = (yf == target).nonzero().flatten()[:max_heatmaps]
    oth = (yf != target).nonzero().flatten()
    if len(tgt) < 4 or len(oth) < 8 or not bool((ym != target).any()):
        raise InputError(
            f"data holds {len(tgt)} target and {len(oth)} other images outside the held-out share",
            "pass more images of both the target class and the others",
        )
    xt = xf[tgt]
    xm_patched = xm.clone()
    xm_patched[:, mask] = value
    oth = oth[torch.randperm(len(oth), generator=gen)]
    half = len(oth) // 2
    concept = xf[oth[:half]].clone()
    concept[:, mask] = value
    pool = xf[oth[half:]]

    def measure(m: nn.Module) -> dict:
        h = attribute(m, xt, target, method)
        return {
            "acc": accuracy(m, xm, ym),
            "reliance": shortcut_reliance(m, xm_patched, ym, target),
            "rma": float(relevance_mass(h, mask).mean()) if bool((h > 0).any()) else 0.0,
            "heatmaps": h,
        }

    before = measure(net)
    sp = spray(before["heatmaps"], seed=seed)
    flat_mask = mask.reshape(mask.shape[0], -1).any(0).reshape(mask.shape[1:]).numpy()
    pos = np.clip(sp.means, 0, None).reshape(sp.clusters, -1)
    cluster_mass = pos[:, flat_mask.reshape(-1)].sum(1) / np.maximum(pos.sum(1), 1e-30)
    sizes = np.bincount(sp.labels, minlength=sp.clusters)
    t = tcav(net, layer, xt, target, concept, pool, runs=5, seed=seed)
    cav = concept_vector(net, layer, concept, pool, seed=seed)
    fixed = {
        "P-ClArC": p_clarc(net, cav, pool),
        "RRR": rrr(net, xf, yf, mask, lam=lam, epochs=epochs, seed=seed),
    }
    after = {k: measure(m) for k, m in fixed.items()}
    rc = randomization_check(net, xt[:64], target, method, seed=seed)

    metrics = {
        "accuracy": before["acc"],
        "reliance": before["reliance"],
        "relevance_mass": before["rma"],
        "spray_clusters": float(sp.clusters),
        "spray_artifact_cluster_mass": float(cluster_mass.max()),
        "cav_accuracy": float(cav.accuracy),
        "tcav": float(t["score"]),
        "tcav_p": float(t["p_value"]),
        "randomization_correlation": float(rc["final"]),
    }
    for k, a in after.items():
        key = k.lower().replace("-", "")
        metrics.update(
            {f"{key}_accuracy": a["acc"], f"{key}_reliance": a["reliance"], f"{key}_relevance_mass": a["rma"]}
        )

    from matplotlib.figure import Figure

    figs = {}
    hm = before["heatmaps"].sum(1).numpy()
    k = min(8, len(xt))
    figs["heatmaps"] = _grid(
        [(f"image {i}", xt[i].sum(0).numpy()) for i in range(k)] + [(f"heatmap {i}", hm[i]) for i in range(k)],
        f"class {target}: images and {method} heatmaps",
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
        [(f"cluster {c}: n={sizes[c]}, mask {cluster_mass[c]:.2f}", sp.means[c]) for c in range(sp.clusters)],
        "SpRAy cluster means (share of positive relevance inside the mask)",
    )
    fig = Figure(figsize=(5.5, 2.8))
    ax = fig.subplots()
    names = ["model", *after]
    rows = [before, *after.values()]
    w = 0.27
    for j, (field, label) in enumerate((("acc", "held-out accuracy"), ("reliance", "reliance"), ("rma", "mass"))):
        ax.bar(np.arange(len(names)) + (j - 1) * w, [r[field] for r in rows], w, label=label)
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7)
    ax.set_title("before and after the fix", fontsize=9)
    figs["before_after"] = fig
    k = min(4, len(xt))
    figs["heatmaps_after"] = _grid(
        [(f"{n} {i}", r["heatmaps"][i].sum(0).numpy()) for n, r in zip(names, rows) for i in range(k)],
        "heatmaps before and after the fix",
    )

    out.mkdir(parents=True, exist_ok=True)
    for name, fig in figs.items():
        atomic_write_bytes(out / f"{name}.png", _png(fig))
    atomic_write_json(out / "metrics.json", metrics)
    table = "\n".join(f"| {n} | {r['acc']:.3f} | {r['reliance']:.3f} | {r['rma']:.3f} |" for n, r in zip(names, rows))
    text = f"""# RED XAI report: questioning the model about the artifact on class {target}

{len(x)} images ({len(xm)} held out for measurement), artifact mask of {int(mask.sum())} pixels, attributions
`{method}`, concept layer `{layer}`, seed {seed}. The user's model was not changed (every step ran on a copy).

## 1. What accuracy says and what it hides
Held-out accuracy {before["acc"]:.3f}; shortcut reliance (held-out non-{target} images with the artifact pasted,
predicted as {target}) {before["reliance"]:.3f}.

## 2. Heatmaps
Relevance mass inside the mask on the class-{target} images: {before["rma"]:.3f}.

![heatmaps](heatmaps.png)

## 3. SpRAy
Eigengap at {sp.clusters} clusters (sizes {sizes.tolist()}); the largest share of a cluster mean's positive
relevance inside the mask is {cluster_mass.max():.3f}.

![spectrum](spectrum.png)

![cluster means](cluster_means.png)

## 4. The concept
CAV at `{layer}`: probe accuracy {cav.accuracy:.3f}; TCAV score for class {target} {t["score"]:.3f}
(p = {t["p_value"]:.3g} against random concept sets).

## 5. The fix, re-measured
| model | held-out accuracy | reliance | relevance mass in the mask |
|---|---|---|---|
{table}

![before and after](before_after.png)

![heatmaps after](heatmaps_after.png)

## 6. Are the explanations sound?
Model-randomisation check: rank correlation of the heatmaps with those of the fully randomised model
{rc["final"]:.3f} (cascade, top layer first: {", ".join(f"{c:.2f}" for c in rc["correlations"])}); low means
the heatmaps depend on what the model learned.
"""
    report = atomic_write_text(out / "report.md", text)
    return {"report": report, "out": out, "metrics": metrics}


__all__ = ["question"]
