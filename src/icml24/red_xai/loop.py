"""The whole RED loop in one call: explain, cluster, name the concept, correct, re-measure, and write a report.

:func:`question` runs every step of :mod:`.questioning` on the user's classifier and data (a deep copy of the
model; the user's own model and tensors are never changed) and writes ``report.md`` with its figures and
``metrics.json`` into a folder, each file atomically (:mod:`icml24.runs`; figures through
:func:`icml24.runs.save_figure`), figures drawn on ``matplotlib.figure.Figure`` (never pyplot).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..errors import InputError
from ..runs import artifacts_to, atomic_write_json, atomic_write_text, save_figure
from ..validation import check_choice, check_float, check_int, check_seed
from .questioning import (
    METHODS,
    accuracy,
    artifact_flips,
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
    pixel_flipping,
    randomization_check,
    rashomon,
    relevance_mass,
    rr_clarc,
    rrr,
    shortcut_reliance,
    spray,
    swap_pairs,
    tcav,
)


def _default_layer(model: nn.Module) -> str:
    for name, m in model.named_modules():
        if isinstance(m, nn.ReLU):
            return name
    raise InputError("model has no nn.ReLU module to probe", "pass layer='<module name>'")


LRP_RULES = ("lrp_epsilon", "lrp_zplus")  # the LRP heatmaps every report shows beside the chosen method's
ARTIFACTS = ("paste", "swap")  # a constant artifact pasted on the mask, or per-image content (a noise border) swapped


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


def _normalised(h: torch.Tensor) -> np.ndarray:
    """Channel-summed maps, each scaled to unit absolute mass (as SpRAy compares them)."""
    flat = h.detach().double().sum(1).numpy()
    scale = np.abs(flat.reshape(len(flat), -1)).sum(1)
    return flat / np.maximum(scale, 1e-12)[:, None, None]


def _mask_share(maps: np.ndarray, flat_mask: np.ndarray) -> np.ndarray:
    """Share of each map's positive relevance inside the (H, W) mask."""
    pos = np.clip(maps, 0, None).reshape(len(maps), -1)
    return pos[:, flat_mask.reshape(-1)].sum(1) / np.maximum(pos.sum(1), 1e-30)


def _try_attribute(m: nn.Module, x: torch.Tensor, target: int, method: str) -> tuple[torch.Tensor | None, str]:
    """Heatmaps, or None and the reason where the model's layers do not allow the method (LRP in Captum)."""
    try:
        return attribute(m, x, target, method), ""
    except (InputError, RuntimeError) as error:
        return None, str(error).splitlines()[0]


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
    peers=None,
    artifact: str = "paste",
    held_out=None,
    seed: int = 0,
) -> dict:
    """Question ``model`` on ``data`` about a suspected artifact, fix it, re-measure, and write the report.

    Steps: (1) held-out accuracy and shortcut reliance (held-out non-``target`` images with the artifact pasted,
    predicted as ``target``); (2) heatmaps of the ``target`` images (:func:`attribute` with ``method``, and LRP with
    the epsilon and the z+ rules) and their relevance mass inside ``mask``; (3) SpRAy of the ``method`` heatmaps
    (spectrum, clusters), with each cluster's mean heatmap under every attribution (the LRP means included);
    (4) the artifact's CAV at ``layer`` and its TCAV score with significance; (5) P-ClArC (training-free), RRR
    (fine-tuned from the model's weights with ``mask`` as the annotation) and RR-ClArC (fine-tuned against the CAV,
    :func:`rr_clarc` with its defaults); (6) the same measurements on the
    corrected copies; (7) checks of the explanations: the model-randomisation sanity check and pixel flipping
    (AOPC against a random order) of every attribution; (8) with ``peers``, the Rashomon set (near-equal models:
    spreads of accuracy and reliance, heatmap rank correlation). ``out`` gets ``report.md``, ``metrics.json``
    and the PNG figures, each written atomically (figures through :func:`icml24.runs.save_figure`). Where
    Captum's LRP does not support a layer of the model, the report says so and shows the other heatmaps.

    With ``artifact="swap"`` the masked pixels hold per-image content that is not tied to one class (the noise
    border of :func:`icml24.data.spurious.digits_border`): reliance becomes the share of held-out images whose
    predicted class changes when their masked pixels are swapped with another held-out image's (a fixed random
    pairing), and the report adds the held-out accuracy with the masked pixels removed (set to ``value``) and
    the accuracy of the masked pixels alone (everything else set to ``value``) on the fit images against the
    held-out ones: above the held-out figure, the model memorised the fit images' artifact (when ``data`` is
    its training set). The CAV separates images with their own masked pixels from images with them removed.

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
        Attribution method of :func:`attribute` that SpRAy clusters.
    value : float, optional
        The artifact's pixel value when pasted (default: the largest pixel value of the images); with
        ``artifact="swap"``, the value that removes it (default 0, the mean of centred inputs).
    lam : float, default 0.1
        RRR's penalty weight.
    epochs : int, default 10
        Fine-tuning epochs of RRR and RR-ClArC.
    max_heatmaps : int, default 200
        At most this many ``target`` images are explained and clustered (at least 4).
    holdout : float, default 0.3
        Share of ``data`` held out for the accuracy and reliance measurements (the rest fits the CAV and RRR);
        not used with ``held_out``.
    peers : sequence of torch.nn.Module, optional
        Near-equal models (other seeds, widths) for the Rashomon exploration, in eval mode, same inputs and
        outputs as ``model``; left unchanged.
    artifact : {"paste", "swap"}, default "paste"
        How the artifact is put on images: ``"paste"`` writes ``value`` on the mask (a planted patch);
        ``"swap"`` treats the masked pixels as per-image content (see above).
    held_out : tuple of (torch.Tensor, torch.Tensor), optional
        Images and labels measured for accuracy and reliance (e.g. the model's test set, at least 2 images);
        then all of ``data`` fits the CAV and the fixes and ``holdout`` is not used.
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
    if peers is not None:
        if not isinstance(peers, (list, tuple)) or not peers:
            raise InputError(f"peers must be a non-empty list of models, got {type(peers).__name__}", "or None")
        for i, m in enumerate(peers):
            check_eval(m, f"peers[{i}]")
            if n_outputs(m, x[:1]) != classes:
                raise InputError(f"peers[{i}] has {n_outputs(m, x[:1])} outputs, model {classes}", "same classes")
    artifact = check_choice(artifact, "artifact", ARTIFACTS)
    if held_out is not None:
        if not isinstance(held_out, (tuple, list)) or len(held_out) != 2:
            raise InputError(f"held_out must be a pair (x, y), got {type(held_out).__name__}", "or None")
        xh = check_images(held_out[0], "held_out[0]")
        yh = check_labels(held_out[1], len(xh), "held_out[1]")
        if tuple(xh.shape[1:]) != tuple(x.shape[1:]):
            raise InputError(f"held_out[0] holds {tuple(xh.shape[1:])} images, data {tuple(x.shape[1:])}", "same shape")
        if len(xh) < 2:
            raise InputError(f"held_out holds {len(xh)} image", "pass at least 2")
        if int(yh.max()) >= classes:
            raise InputError(f"held_out[1] holds class {int(yh.max())}, the model has {classes} outputs", "check")
    net = copy.deepcopy(model).eval()
    layer = _default_layer(net) if layer is None else layer
    get_layer(net, layer)
    method = check_choice(method, "method", METHODS)
    default = float(x.max()) if artifact == "paste" else 0.0
    value = default if value is None else check_float(value, "value")
    lam = check_float(lam, "lam", min_val=0.0)
    epochs = check_int(epochs, "epochs", min_val=0)
    max_heatmaps = check_int(max_heatmaps, "max_heatmaps", min_val=4)
    holdout = check_float(holdout, "holdout", min_val=0.0, max_val=1.0, include_boundaries="neither")
    seed = check_seed(seed)
    x, y = x.detach().clone(), y.detach().clone()

    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(x), generator=gen)
    if held_out is None:
        n_meas = max(int(round(holdout * len(x))), 2)
        meas, fit_idx = perm[:n_meas], perm[n_meas:]
        xm, ym, xf, yf = x[meas], y[meas], x[fit_idx], y[fit_idx]
    else:
        xm, ym, xf, yf = xh.detach().clone(), yh.detach().clone(), x, y
    tgt = (yf == target).nonzero().flatten()[:max_heatmaps]
    oth = (yf != target).nonzero().flatten()
    if len(tgt) < 4 or len(oth) < 8 or (artifact == "paste" and not bool((ym != target).any())):
        raise InputError(
            f"data holds {len(tgt)} target and {len(oth)} other images outside the held-out share",
            "pass more images of both the target class and the others",
        )
    xt = xf[tgt]
    xm_patched = xm.clone()
    oth = oth[torch.randperm(len(oth), generator=gen)]
    half = len(oth) // 2
    concept = xf[oth[:half]].clone()
    pool = xf[oth[half:]]
    if artifact == "paste":
        xm_patched[:, mask] = value
        concept[:, mask] = value
    else:  # per-image content: swap it between held-out images (a random cycle, no image keeps its own)
        xm_patched[:, mask] = xm[swap_pairs(len(xm), seed)][:, mask]
        pool = pool.clone()
        pool[:, mask] = value  # the random set: the same kind of images with the artifact removed
        xm_removed, xm_only, xf_only = xm.clone(), xm.clone(), xf.clone()
        xm_removed[:, mask] = value
        xm_only[:, ~mask] = value
        xf_only[:, ~mask] = value

    def reliance(m: nn.Module) -> float:
        if artifact == "paste":
            return shortcut_reliance(m, xm_patched, ym, target)
        return artifact_flips(m, xm, mask, seed=seed)

    # the attributions shown: the one SpRAy clusters, then the LRP rules (each once)
    methods = [method, *[r for r in LRP_RULES if r != method]]
    flat_mask = mask.reshape(mask.shape[0], -1).any(0).reshape(mask.shape[1:]).numpy()

    def measure(m: nn.Module) -> dict:
        maps, why = {method: attribute(m, xt, target, method)}, {method: ""}
        for meth in methods[1:]:
            maps[meth], why[meth] = _try_attribute(m, xt, target, meth)
        extra = {}
        if artifact == "swap":
            extra = {
                "removed": accuracy(m, xm_removed, ym),
                "only_fit": accuracy(m, xf_only, yf),
                "only_held_out": accuracy(m, xm_only, ym),
            }
        return {
            "acc": accuracy(m, xm, ym),
            "reliance": reliance(m),
            "rma": {k: (float(relevance_mass(h, mask).mean()) if h is not None and bool((h > 0).any()) else 0.0)
                    for k, h in maps.items() if h is not None},
            "maps": maps,
            "why": why,
            **extra,
        }  # fmt: skip

    before = measure(net)
    shown = [k for k in methods if before["maps"][k] is not None]  # LRP only where Captum supports the layers
    sp = spray(before["maps"][method], seed=seed)
    sizes = np.bincount(sp.labels, minlength=sp.clusters)
    cluster_means = {}
    for k in shown:
        norm = _normalised(before["maps"][k])
        cluster_means[k] = np.stack([norm[sp.labels == c].mean(0) for c in range(sp.clusters)])
    cluster_mass = {k: _mask_share(v, flat_mask) for k, v in cluster_means.items()}
    t = tcav(net, layer, xt, target, concept, pool, runs=5, seed=seed)
    cav = concept_vector(net, layer, concept, pool, seed=seed)
    fixed = {
        "P-ClArC": p_clarc(net, cav, pool),
        "RR-ClArC": rr_clarc(net, xf, yf, cav, epochs=epochs, seed=seed),
        "RRR": rrr(net, xf, yf, mask, lam=lam, epochs=epochs, seed=seed),
    }
    after = {k: measure(m) for k, m in fixed.items()}
    xc = xt[:64]
    rc = randomization_check(net, xc, target, method, seed=seed)
    flips = {k: pixel_flipping(net, xc, target, before["maps"][k][:64], seed=seed) for k in shown}
    rash = None
    if peers is not None:
        group = [net, *[copy.deepcopy(m).eval() for m in peers]]
        rash = rashomon(group, xm, ym, xm_patched, ym, target, xc, method) if artifact == "paste" else None
        if rash is None:  # the patch-to-target count does not apply: measure the prediction flips instead
            rash = rashomon(group, xm, ym, xf, yf, target, xc, method)  # (xf, yf) holds non-target images
            rash["reliance"] = np.array([reliance(m) for m in group])

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

    from matplotlib.figure import Figure

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

    out.mkdir(parents=True, exist_ok=True)
    with artifacts_to(out):
        for name, fig in figs.items():
            save_figure(fig, name)
    atomic_write_json(out / "metrics.json", metrics)
    swap = artifact == "swap"
    sizes_text = (
        f"{len(x)} images ({len(xm)} held out for measurement)"
        if held_out is None
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
        held = "the held-out images" if held_out is not None else "the held-out share"
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
    report = atomic_write_text(out / "report.md", text)
    return {"report": report, "out": out, "metrics": metrics}


__all__ = ["question"]
