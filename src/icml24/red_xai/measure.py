"""Measure: what a torch classifier relies on, before and after the fix, and whether its explanations are sound.

- :func:`predict`, :func:`accuracy`: predictions and held-out accuracy;
- :func:`shortcut_reliance`, :func:`artifact_flips`, :func:`relevance_mass`: the measurements before and after
  the fix (a patch that points to one class, a per-image artifact such as a noise border, and the heatmaps);
- :func:`pixel_flipping`: faithfulness of a heatmap (Bach et al. 2015; Samek et al. 2017);
- :func:`randomization_check`: the model-parameter randomisation sanity check (Adebayo et al. 2018);
- :func:`rashomon`: near-equal models, how far their reliance and their explanations differ.
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed
from .checks import check_eval, check_images, check_labels, check_mask, check_target, n_outputs
from .explain import METHODS, attribute

__all__ = [
    "predict",
    "accuracy",
    "shortcut_reliance",
    "artifact_flips",
    "relevance_mass",
    "pixel_flipping",
    "rashomon",
    "randomization_check",
]


# --------------------------------------------------------------------------------------------------- measurements


def predict(model: nn.Module, x: torch.Tensor, *, batch: int = 1024) -> torch.Tensor:
    """Predicted classes of ``model`` on ``x`` (eval mode required).

    Parameters
    ----------
    model : torch.nn.Module
    x : torch.Tensor
        Images ``(N, C, H, W)``.
    batch : int, default 1024

    Returns
    -------
    torch.Tensor
        int64 ``(N,)``.
    """
    check_eval(model)
    x = check_images(x)
    batch = check_int(batch, "batch", min_val=1)
    n_outputs(model, x)
    with torch.no_grad():
        return torch.cat([model(x[i : i + batch]).argmax(1) for i in range(0, len(x), batch)])


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of ``x`` classified as ``y``.

    Parameters
    ----------
    model : torch.nn.Module
    x : torch.Tensor
    y : torch.Tensor
        Labels in ``0..classes-1``.

    Returns
    -------
    float
    """
    x = check_images(x)
    y = check_labels(y, len(x), classes=n_outputs(check_eval(model), x))
    return float((predict(model, x) == y).float().mean())


def shortcut_reliance(model: nn.Module, x_patched: torch.Tensor, y: torch.Tensor, target) -> float:
    """Fraction of non-``target`` images carrying the artifact that ``model`` predicts as ``target``.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode.
    x_patched : torch.Tensor
        Images with the artifact pasted (the artifact-swapped test set).
    y : torch.Tensor
        Their true labels.
    target : int
        The class the artifact points to.

    Returns
    -------
    float
    """
    x_patched = check_images(x_patched, "x_patched")
    classes = n_outputs(check_eval(model), x_patched, "x_patched")
    y = check_labels(y, len(x_patched), classes=classes)
    target = check_target(target, classes)
    keep = y != target
    if not bool(keep.any()):
        raise InputError("y holds the target class only", "pass images of other classes too")
    return float((predict(model, x_patched[keep]) == target).float().mean())


def swap_pairs(n: int, seed: int = 0) -> torch.Tensor:
    """A random pairing of ``n`` images in one cycle: image ``i`` takes the artifact of image ``out[i]``, never its own.

    Parameters
    ----------
    n : int
        Number of images (at least 2).
    seed : int, default 0

    Returns
    -------
    torch.Tensor
        int64 ``(n,)``.
    """
    n = check_int(n, "n", min_val=2)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(check_seed(seed)))
    partner = torch.empty_like(order)
    partner[order] = torch.roll(order, -1)
    return partner


def artifact_flips(model: nn.Module, x: torch.Tensor, mask: torch.Tensor, *, seed: int = 0) -> float:
    """Reliance on a per-image artifact: the share of images whose predicted class changes when their masked
    pixels are swapped with another image's (:func:`swap_pairs`), e.g. a noise border not tied to any class.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode.
    x : torch.Tensor
        Images ``(N, C, H, W)``, at least 2.
    mask : torch.Tensor
        Bool ``(C, H, W)``: the artifact's pixels.
    seed : int, default 0
        Seed of the pairing.

    Returns
    -------
    float
        0 for a model that never reads the masked pixels.
    """
    check_eval(model)
    x = check_images(x)
    mask = check_mask(mask, x)
    seed = check_seed(seed)
    if tuple(mask.shape) != tuple(x.shape[1:]):
        raise InputError(f"mask has shape {tuple(mask.shape)}, one image {tuple(x.shape[1:])}", "pass (C, H, W)")
    if len(x) < 2:
        raise InputError(f"x holds {len(x)} image", "pass at least 2 to swap between")
    swapped = x.clone()
    swapped[:, mask] = x[swap_pairs(len(x), seed)][:, mask]
    return float((predict(model, x) != predict(model, swapped)).float().mean())


def relevance_mass(heatmaps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Relevance mass accuracy (Arras et al. 2022): the share of each map's positive relevance inside ``mask``.

    Parameters
    ----------
    heatmaps : torch.Tensor
        ``(N, C, H, W)``, finite.
    mask : torch.Tensor
        Bool ``(C, H, W)`` or ``(N, C, H, W)``.

    Returns
    -------
    torch.Tensor
        ``(N,)`` in [0, 1] (0 where a map has no positive relevance).
    """
    h = check_images(heatmaps, "heatmaps")
    mask = check_mask(mask, h)
    pos = h.clamp_min(0)
    inside = (pos * mask).flatten(1).sum(1)
    total = pos.flatten(1).sum(1)
    return torch.where(total > 0, inside / total.clamp_min(1e-30), torch.zeros_like(total))


# --------------------------------------------------------------------------------------------------- faithfulness


def pixel_flipping(
    model: nn.Module,
    x: torch.Tensor,
    target,
    heatmaps: torch.Tensor,
    *,
    steps: int = 20,
    fraction: float = 0.5,
    fill: float = 0.0,
    seed: int = 0,
) -> dict:
    """Pixel-flipping faithfulness (Bach et al. 2015; Samek et al. 2017): remove pixels most relevant first.

    For each image the pixels (all channels of a location together) are ranked by the heatmap's relevance summed
    over channels; ``steps`` times, the next ``fraction / steps`` of the locations are set to ``fill`` and the
    model's softmax probability of ``target`` is recorded. The area over the perturbation curve,
    ``AOPC = 1/(L+1) sum_{k=0..L} (p_0 - p_k)`` (Samek et al. 2017, Eq. 12), is larger for a more faithful
    heatmap. The same curve for a uniformly random order (seeded) is the control every heatmap must beat.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode (left untouched).
    x : torch.Tensor
        Images ``(N, C, H, W)``.
    target : int
        The class whose probability is tracked.
    heatmaps : torch.Tensor
        Relevance maps of ``x`` for ``target``, same shape.
    steps : int, default 20
        Perturbation steps ``L``.
    fraction : float, default 0.5
        Share of the pixel locations removed by the last step, in (0, 1].
    fill : float, default 0.0
        The value a removed pixel takes.
    seed : int, default 0
        Seed of the random order.

    Returns
    -------
    dict
        ``curve`` and ``random_curve`` (numpy ``(L + 1,)``, mean probability after each step), ``aopc`` and
        ``aopc_random``.
    """
    check_eval(model)
    x = check_images(x)
    h = check_images(heatmaps, "heatmaps")
    if h.shape != x.shape:
        raise InputError(f"heatmaps have shape {tuple(h.shape)}, x {tuple(x.shape)}", "pass one map per image")
    target = check_target(target, n_outputs(model, x))
    steps = check_int(steps, "steps", min_val=1)
    fraction = check_float(fraction, "fraction", min_val=0.0, max_val=1.0, include_boundaries="right")
    fill = check_float(fill, "fill")
    seed = check_seed(seed)
    n, c = x.shape[:2]
    locs = x.shape[2] * x.shape[3]
    score = h.sum(1).flatten(1)
    orders = {
        "curve": torch.argsort(score, dim=1, descending=True, stable=True),
        "random_curve": torch.argsort(torch.rand(n, locs, generator=torch.Generator().manual_seed(seed)), dim=1),
    }
    out: dict = {}
    for key, order in orders.items():
        xs = x.detach().clone().flatten(2)
        probs = []
        done = 0
        for k in range(steps + 1):
            upto = int(round(fraction * locs * k / steps))
            if upto > done:
                idx = order[:, done:upto].unsqueeze(1).expand(n, c, upto - done)
                xs.scatter_(2, idx, fill)
                done = upto
            with torch.no_grad():
                p = torch.softmax(model(xs.view_as(x)), dim=1)[:, target]
            probs.append(float(p.mean()))
        curve = np.array(probs)
        out[key] = curve
        out["aopc" if key == "curve" else "aopc_random"] = float((curve[0] - curve).mean())
    return out


# --------------------------------------------------------------------------------------------------- Rashomon


def rashomon(
    models,
    x: torch.Tensor,
    y: torch.Tensor,
    x_patched: torch.Tensor,
    y_patched: torch.Tensor,
    target,
    x_explain: torch.Tensor,
    method: str = "input_x_gradient",
) -> dict:
    """Explore a Rashomon set: near-equal models, how far their shortcut reliance and their explanations differ.

    Parameters
    ----------
    models : sequence of torch.nn.Module
        At least two classifiers in eval mode (e.g. :func:`fit` from several seeds and widths).
    x, y : torch.Tensor
        Held-out images and labels: the accuracy that makes the models "near-equal".
    x_patched, y_patched : torch.Tensor
        The artifact-swapped images and their true labels (for :func:`shortcut_reliance`).
    target : int
        The class the artifact points to, and the class explained.
    x_explain : torch.Tensor
        Images whose heatmaps are compared across models.
    method : str, default "input_x_gradient"
        An attribution method of :func:`attribute`.

    Returns
    -------
    dict
        ``accuracy`` and ``reliance`` (numpy, one per model), ``accuracy_spread`` and ``reliance_spread``
        (max - min), ``rank_correlation`` (mean Spearman correlation of the heatmaps over all pairs of models) and
        ``rank_correlation_min`` (of the least similar pair).
    """
    models = list(models) if isinstance(models, (list, tuple)) else None
    if models is None or len(models) < 2:
        raise InputError("models must be a list of at least two classifiers", "train several seeds or widths")
    x = check_images(x)
    x_patched = check_images(x_patched, "x_patched", like=x)
    x_explain = check_images(x_explain, "x_explain", like=x)
    classes = [n_outputs(check_eval(m, f"models[{i}]"), x, model_name=f"models[{i}]") for i, m in enumerate(models)]
    for i, c in enumerate(classes):
        if c != classes[0]:
            raise InputError(f"models[{i}] has {c} outputs, models[0] {classes[0]}", "compare models of one task")
    y = check_labels(y, len(x), classes=classes[0])
    y_patched = check_labels(y_patched, len(x_patched), "y_patched", classes[0])
    target = check_target(target, classes[0])
    if not bool((y_patched != target).any()):
        raise InputError("y_patched holds the target class only", "pass images of other classes too")
    method = check_choice(method, "method", METHODS)
    acc = np.array([accuracy(m, x, y) for m in models])
    rel = np.array([shortcut_reliance(m, x_patched, y_patched, target) for m in models])
    maps = [attribute(m, x_explain, target, method) for m in models]
    pairs = [
        float(rank_correlation(maps[i], maps[j]).mean()) for i in range(len(maps)) for j in range(i + 1, len(maps))
    ]
    return {
        "accuracy": acc,
        "reliance": rel,
        "accuracy_spread": float(acc.max() - acc.min()),
        "reliance_spread": float(rel.max() - rel.min()),
        "rank_correlation": float(np.mean(pairs)),
        "rank_correlation_min": float(np.min(pairs)),
    }


# --------------------------------------------------------------------------------------------------- sanity check


def rank_correlation(a: torch.Tensor, b: torch.Tensor, absolute: bool = False) -> np.ndarray:
    """Spearman rank correlation of each pair of maps (rows), 0 where a map is constant (internal helper).

    Parameters
    ----------
    a, b : torch.Tensor
        ``(N, ...)`` maps of equal shape.
    absolute : bool, default False
        Rank absolute values.

    Returns
    -------
    numpy.ndarray
        ``(N,)`` correlations.
    """
    from scipy.stats import rankdata

    fa, fb = a.flatten(1).double().numpy(), b.flatten(1).double().numpy()
    if absolute:
        fa, fb = np.abs(fa), np.abs(fb)
    ra, rb = rankdata(fa, axis=1), rankdata(fb, axis=1)
    ra = ra - ra.mean(1, keepdims=True)
    rb = rb - rb.mean(1, keepdims=True)
    den = np.sqrt((ra**2).sum(1) * (rb**2).sum(1))
    return np.where(den > 0, (ra * rb).sum(1) / np.maximum(den, 1e-300), 0.0)


def randomization_check(
    model: nn.Module,
    x: torch.Tensor,
    target,
    method: str = "input_x_gradient",
    *,
    absolute: bool = False,
    seed: int = 0,
) -> dict:
    """Model-parameter randomisation sanity check (Adebayo et al. 2018, cascading, top layer first).

    A copy of ``model`` has its parametrised layers re-initialised one after another from the output back to the
    input; after each step the heatmaps of the copy are compared with those of ``model`` by the Spearman rank
    correlation of each image's map. An explanation that depends on what the model learned decorrelates; one
    that mostly reproduces the input (an edge detector) does not. Written here because Quantus, which ships this
    metric, is absent from this environment (an optional dependency of +690 MB, kept out).

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode (left untouched).
    x : torch.Tensor
        Images ``(N, C, H, W)``.
    target : int
        The class whose logit is explained.
    method : str, default "input_x_gradient"
        An attribution method of :func:`attribute`.
    absolute : bool, default False
        Correlate the absolute relevance (Adebayo et al. report both); the default keeps the sign.
    seed : int, default 0
        Seed of the re-initialisation.

    Returns
    -------
    dict
        ``layers`` (cascade order), ``correlations`` (mean rank correlation after each step), ``final`` (after
        every layer is randomised) and ``per_image`` (the final per-image correlations).
    """
    check_eval(model)
    x = check_images(x)
    method = check_choice(method, "method", METHODS)
    absolute = check_bool(absolute, "absolute")
    seed = check_seed(seed)
    target = check_target(target, n_outputs(model, x))
    layers = [
        name
        for name, m in model.named_modules()
        if name and len(list(m.children())) == 0 and any(True for _ in m.parameters(recurse=False))
    ]
    if not layers:
        raise InputError("model has no parametrised layer to randomise", "pass a trained classifier")
    base = attribute(model, x, target, method)
    rand = copy.deepcopy(model).eval()
    mods = dict(rand.named_modules())
    means, last = [], None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for name in reversed(layers):
            m = mods[name]
            with torch.no_grad():
                if hasattr(m, "reset_parameters"):
                    m.reset_parameters()
                else:
                    for p in m.parameters(recurse=False):
                        p.normal_(0.0, float(p.std()) if p.numel() > 1 else 0.01)
            last = rank_correlation(base, attribute(rand, x, target, method), absolute)
            means.append(float(last.mean()))
    return {
        "layers": list(reversed(layers)),
        "correlations": np.array(means),
        "final": means[-1],
        "per_image": last,
    }
