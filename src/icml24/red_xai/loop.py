"""The whole RED loop in one call: explain, cluster, name the concept, correct, re-measure, and write a report.

:func:`question` runs every step of :mod:`.explain`, :mod:`.correct` and :mod:`.measure` on the user's classifier
and data (a deep copy of the model; the user's own model and tensors are never changed) and writes the report
(:mod:`.report`). Each step is a function of its own, to call alone on what :func:`prepare` returns:

1. :func:`prepare` (:mod:`.prepare`): check the inputs, copy the model, split the data, build the images that
   carry the artifact;
2. :func:`examine`: held-out accuracy, :func:`reliance` on the artifact, heatmaps and their mass inside the mask
   (of the model, and again of each corrected copy);
3. :func:`cluster`: SpRAy of the heatmaps, each cluster's mean heatmap under every attribution;
4. :func:`name_concept`: the artifact's CAV and its TCAV score;
5. :func:`fix`: P-ClArC, RR-ClArC and RRR;
6. :func:`check_explanations`: the model-randomisation sanity check and pixel flipping;
7. :func:`explore_rashomon`: near-equal peers, their accuracy, reliance and heatmaps;

and :func:`~icml24.red_xai.report.collect_metrics` and :func:`~icml24.red_xai.report.write_report` turn the
:class:`~icml24.red_xai.report.Findings` into ``metrics.json``, ``report.md`` and its figures.
"""

from __future__ import annotations

import copy
import os

import numpy as np
import torch
from torch import nn

from ..errors import InputError
from .checks import check_model
from .correct import p_clarc, rr_clarc, rrr
from .explain import ConceptVector, attribute, concept_vector, spray, tcav
from .measure import (
    accuracy,
    artifact_flips,
    pixel_flipping,
    randomization_check,
    rashomon,
    relevance_mass,
    shortcut_reliance,
)
from .prepare import Questioning, check_data, check_out, check_questioning, prepare
from .report import Findings, collect_metrics, write_report

__all__ = [
    "Questioning",
    "prepare",
    "reliance",
    "examine",
    "cluster",
    "name_concept",
    "fix",
    "check_explanations",
    "explore_rashomon",
    "question",
]


def reliance(model: nn.Module, q: Questioning) -> float:
    """Reliance of ``model`` on the artifact: :func:`~.measure.shortcut_reliance` on the measured images with the
    artifact pasted (``"paste"``), or :func:`~.measure.artifact_flips` when it is swapped between them (``"swap"``).

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode: ``q.net``, a peer or a corrected copy.
    q : Questioning
        What :func:`prepare` returned.

    Returns
    -------
    float
    """
    check_model(model)
    check_questioning(q)
    if q.artifact == "paste":
        return shortcut_reliance(model, q.xm_patched, q.ym, q.target)
    return artifact_flips(model, q.xm, q.mask, seed=q.seed)


def _try_attribute(m: nn.Module, x: torch.Tensor, target: int, method: str) -> tuple[torch.Tensor | None, str]:
    """Heatmaps, or None and the reason where the model's layers do not allow the method (LRP in Captum)."""
    try:
        return attribute(m, x, target, method), ""
    except (InputError, RuntimeError) as error:
        return None, str(error).splitlines()[0]


def examine(model: nn.Module, q: Questioning) -> dict:
    """Measure ``model``: held-out accuracy, :func:`reliance`, and the heatmaps of the ``target`` images with their
    relevance mass inside the mask (:func:`~.measure.relevance_mass`), under every attribution of ``q.methods``.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode: ``q.net`` or a corrected copy (:func:`fix`).
    q : Questioning
        What :func:`prepare` returned.

    Returns
    -------
    dict
        ``acc``, ``reliance``, ``rma`` (mean relevance mass per attribution computed), ``maps`` (heatmaps per
        attribution, None where Captum's LRP refused the model's layers) and ``why`` (the reason, or ""); with
        ``"swap"`` also ``removed``, ``only_fit`` and ``only_held_out`` (accuracies with the masked pixels removed,
        and of the masked pixels alone on the fit and on the measured images).
    """
    check_model(model)
    check_questioning(q)
    maps, why = {q.method: attribute(model, q.xt, q.target, q.method)}, {q.method: ""}
    for meth in q.methods[1:]:
        maps[meth], why[meth] = _try_attribute(model, q.xt, q.target, meth)
    extra = {}
    if q.artifact == "swap":
        extra = {
            "removed": accuracy(model, q.xm_removed, q.ym),
            "only_fit": accuracy(model, q.xf_only, q.yf),
            "only_held_out": accuracy(model, q.xm_only, q.ym),
        }
    return {
        "acc": accuracy(model, q.xm, q.ym),
        "reliance": reliance(model, q),
        "rma": {k: (float(relevance_mass(h, q.mask).mean()) if h is not None and bool((h > 0).any()) else 0.0)
                for k, h in maps.items() if h is not None},
        "maps": maps,
        "why": why,
        **extra,
    }  # fmt: skip


def shown(before: dict) -> list[str]:
    """The attributions computed on the model (:func:`examine`): ``q.methods`` less those LRP could not run.

    Parameters
    ----------
    before : dict
        :func:`examine` of ``q.net``.

    Returns
    -------
    list of str
    """
    return [k for k, h in before["maps"].items() if h is not None]


def _normalised(h: torch.Tensor) -> np.ndarray:
    """Channel-summed maps, each scaled to unit absolute mass (as SpRAy compares them)."""
    flat = h.detach().double().sum(1).numpy()
    scale = np.abs(flat.reshape(len(flat), -1)).sum(1)
    return flat / np.maximum(scale, 1e-12)[:, None, None]


def _mask_share(maps: np.ndarray, flat_mask: np.ndarray) -> np.ndarray:
    """Share of each map's positive relevance inside the (H, W) mask."""
    pos = np.clip(maps, 0, None).reshape(len(maps), -1)
    return pos[:, flat_mask.reshape(-1)].sum(1) / np.maximum(pos.sum(1), 1e-30)


def cluster(q: Questioning, before: dict) -> dict:
    """SpRAy (:func:`~.explain.spray`) of the model's ``q.method`` heatmaps, and each cluster's mean heatmap under
    every attribution shown with the share of its positive relevance inside the mask.

    Parameters
    ----------
    q : Questioning
        What :func:`prepare` returned.
    before : dict
        :func:`examine` of ``q.net``.

    Returns
    -------
    dict
        ``spray`` (:class:`~.explain.SprayResult`), ``sizes`` (images per cluster), ``means`` and ``mass`` (per
        attribution: the clusters' mean normalised heatmaps ``(clusters, H, W)`` and their shares inside the mask).
    """
    check_questioning(q)
    if not isinstance(before, dict):
        raise InputError(f"before must be the dict that examine(...) returns, got {type(before).__name__}")
    flat_mask = q.mask.reshape(q.mask.shape[0], -1).any(0).reshape(q.mask.shape[1:]).numpy()
    sp = spray(before["maps"][q.method], seed=q.seed)
    sizes = np.bincount(sp.labels, minlength=sp.clusters)
    cluster_means = {}
    for k in shown(before):
        norm = _normalised(before["maps"][k])
        cluster_means[k] = np.stack([norm[sp.labels == c].mean(0) for c in range(sp.clusters)])
    cluster_mass = {k: _mask_share(v, flat_mask) for k, v in cluster_means.items()}
    return {"spray": sp, "sizes": sizes, "means": cluster_means, "mass": cluster_mass}


def name_concept(q: Questioning) -> tuple[dict, ConceptVector]:
    """Name the artifact at ``q.layer``: its TCAV score for ``q.target`` (:func:`~.explain.tcav`, 5 runs) and its CAV
    (:func:`~.explain.concept_vector`), concept images against random images.

    Parameters
    ----------
    q : Questioning
        What :func:`prepare` returned.

    Returns
    -------
    (dict, ConceptVector)
        :func:`~.explain.tcav`'s result and the CAV.
    """
    check_questioning(q)
    t = tcav(q.net, q.layer, q.xt, q.target, q.concept, q.pool, runs=5, seed=q.seed)
    cav = concept_vector(q.net, q.layer, q.concept, q.pool, seed=q.seed)
    return t, cav


def fix(q: Questioning, cav: ConceptVector) -> dict[str, nn.Module]:
    """Correct copies of ``q.net``: P-ClArC (training-free), RR-ClArC (against ``cav``, its defaults) and RRR
    (``q.mask`` as the annotation), each fine-tuned on the fit images for ``q.epochs``.

    Parameters
    ----------
    q : Questioning
        What :func:`prepare` returned.
    cav : ConceptVector
        The artifact's CAV (:func:`name_concept`).

    Returns
    -------
    dict of str to torch.nn.Module
        ``"P-ClArC"``, ``"RR-ClArC"``, ``"RRR"``: the corrected copies, in eval mode.
    """
    check_questioning(q)
    if not isinstance(cav, ConceptVector):
        raise InputError(f"cav must be the ConceptVector that name_concept(...) returns, got {type(cav).__name__}")
    return {
        "P-ClArC": p_clarc(q.net, cav, q.pool),
        "RR-ClArC": rr_clarc(q.net, q.xf, q.yf, cav, epochs=q.epochs, seed=q.seed),
        "RRR": rrr(q.net, q.xf, q.yf, q.mask, lam=q.lam, epochs=q.epochs, seed=q.seed),
    }


def check_explanations(q: Questioning, before: dict) -> dict:
    """Are the explanations sound? The model-randomisation sanity check of ``q.method`` and pixel flipping of every
    attribution shown, on ``q.checked``.

    Parameters
    ----------
    q : Questioning
        What :func:`prepare` returned.
    before : dict
        :func:`examine` of ``q.net``.

    Returns
    -------
    dict
        ``randomization`` (:func:`~.measure.randomization_check`) and ``flips`` (per attribution,
        :func:`~.measure.pixel_flipping`).
    """
    check_questioning(q)
    if not isinstance(before, dict):
        raise InputError(f"before must be the dict that examine(...) returns, got {type(before).__name__}")
    xc = q.checked
    rc = randomization_check(q.net, xc, q.target, q.method, seed=q.seed)
    flips = {k: pixel_flipping(q.net, xc, q.target, before["maps"][k][:64], seed=q.seed) for k in shown(before)}
    return {"randomization": rc, "flips": flips}


def explore_rashomon(q: Questioning) -> dict | None:
    """The Rashomon set of the model and its peers (:func:`~.measure.rashomon`), None without peers.

    With ``"swap"`` the patch-to-target count does not apply, and each model's reliance is :func:`reliance`.

    Parameters
    ----------
    q : Questioning
        What :func:`prepare` returned.

    Returns
    -------
    dict or None
    """
    check_questioning(q)
    if not q.peers:
        return None
    group = [q.net, *[copy.deepcopy(m).eval() for m in q.peers]]
    if q.artifact == "paste":
        return rashomon(group, q.xm, q.ym, q.xm_patched, q.ym, q.target, q.checked, q.method)
    # the patch-to-target count does not apply: measure the prediction flips instead
    rash = rashomon(group, q.xm, q.ym, q.xf, q.yf, q.target, q.checked, q.method)  # (xf, yf) holds non-target images
    rash["reliance"] = np.array([reliance(m, q) for m in group])
    return rash


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

    Each step is a function of :mod:`icml24.red_xai.loop` that can be called alone, on what :func:`prepare`
    returns.

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
    check_data(model, data)  # the data first, then the folder, then the rest (prepare checks the data again)
    out = check_out(out)
    q = prepare(
        model, data, target=target, mask=mask, layer=layer, method=method, value=value, lam=lam, epochs=epochs,
        max_heatmaps=max_heatmaps, holdout=holdout, peers=peers, artifact=artifact, held_out=held_out, seed=seed,
    )  # fmt: skip
    before = examine(q.net, q)
    clusters = cluster(q, before)
    t, cav = name_concept(q)
    after = {k: examine(m, q) for k, m in fix(q, cav).items()}
    checks = check_explanations(q, before)
    rash = explore_rashomon(q)
    findings = Findings(before=before, shown=shown(before), clusters=clusters, tcav=t, cav=cav, after=after,
                        randomization=checks["randomization"], flips=checks["flips"], rashomon=rash)  # fmt: skip
    metrics = collect_metrics(q, findings)
    report = write_report(out, q, findings, metrics)
    return {"report": report, "out": out, "metrics": metrics}
