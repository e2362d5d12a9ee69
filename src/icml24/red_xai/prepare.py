"""The first step of the RED loop: check the inputs, copy the model, split the data, build the artifact's images.

:func:`prepare` returns a :class:`Questioning`, what every later step of :mod:`.loop` works on; it checks every
argument of :func:`~icml24.red_xai.loop.question` but the report's folder (:func:`check_out`).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_choice, check_float, check_int, check_seed
from .checks import check_eval, check_images, check_labels, check_mask, check_target, get_layer, n_outputs
from .explain import METHODS
from .measure import swap_pairs

__all__ = ["Questioning", "prepare"]

LRP_RULES = ("lrp_epsilon", "lrp_zplus")  # the LRP heatmaps every report shows beside the chosen method's
ARTIFACTS = ("paste", "swap")  # a constant artifact pasted on the mask, or per-image content (a noise border) swapped


@dataclass(frozen=True)
class Questioning:
    """What every step of :func:`~icml24.red_xai.loop.question` works on: the checked settings, the model's copy
    and the data's splits.

    Parameters
    ----------
    net : torch.nn.Module
        A deep copy of the user's model in eval mode (the model the steps question).
    x, y : torch.Tensor
        All of ``data`` (detached copies).
    xm, ym : torch.Tensor
        The images and labels measured for accuracy and reliance (the held-out share, or ``held_out``).
    xf, yf : torch.Tensor
        The images and labels that fit the CAV and the fixes.
    xt : torch.Tensor
        The ``target`` images among the fit ones that are explained and clustered (at most ``max_heatmaps``).
    concept, pool : torch.Tensor
        The CAV's concept images and its random images: two halves of the other classes' fit images, the first
        with the artifact pasted (``"paste"``; with ``"swap"`` each keeps its own), the second without it
        (with ``"swap"``, removed).
    xm_patched : torch.Tensor
        The measured images with the artifact pasted (``"paste"``) or swapped between them (``"swap"``).
    xm_removed, xm_only, xf_only : torch.Tensor or None
        With ``"swap"``: the measured images with the masked pixels removed, and the masked pixels alone of the
        measured and of the fit images (None with ``"paste"``).
    mask : torch.Tensor
        Bool ``(C, H, W)``: the artifact's pixels.
    target : int
        The class the artifact points to.
    layer : str
        The module of the CAV and of P-ClArC's projection.
    method : str
        The attribution SpRAy clusters.
    methods : tuple of str
        The attributions shown: ``method``, then the LRP rules (each once).
    value : float
        The artifact's pixel value (``"paste"``) or the value that removes it (``"swap"``).
    lam : float
        RRR's penalty weight.
    epochs : int
        Fine-tuning epochs of RRR and RR-ClArC.
    artifact : {"paste", "swap"}
        How the artifact is put on images.
    held_out : bool
        True when the measured images were passed as ``held_out`` (not a share of ``data``).
    peers : tuple of torch.nn.Module
        The user's near-equal models (empty without them).
    seed : int
        The seed of every step.
    """

    net: nn.Module
    x: torch.Tensor
    y: torch.Tensor
    xm: torch.Tensor
    ym: torch.Tensor
    xf: torch.Tensor
    yf: torch.Tensor
    xt: torch.Tensor
    concept: torch.Tensor
    pool: torch.Tensor
    xm_patched: torch.Tensor
    xm_removed: torch.Tensor | None
    xm_only: torch.Tensor | None
    xf_only: torch.Tensor | None
    mask: torch.Tensor
    target: int
    layer: str
    method: str
    methods: tuple[str, ...]
    value: float
    lam: float
    epochs: int
    artifact: str
    held_out: bool
    peers: tuple[nn.Module, ...]
    seed: int

    @property
    def checked(self) -> torch.Tensor:
        """The ``target`` images whose explanations are checked and compared across peers (the first 64).

        Returns
        -------
        torch.Tensor
        """
        return self.xt[:64]


def _default_layer(model: nn.Module) -> str:
    for name, m in model.named_modules():
        if isinstance(m, nn.ReLU):
            return name
    raise InputError("model has no nn.ReLU module to probe", "pass layer='<module name>'")


def check_data(model: nn.Module, data) -> tuple[torch.Tensor, torch.Tensor]:
    """Refuse a model not in eval mode, and ``data`` that is not a pair of images and labels.

    Parameters
    ----------
    model : torch.nn.Module
        The user's classifier.
    data : tuple of (torch.Tensor, torch.Tensor)
        Images ``(N, C, H, W)`` and integer labels ``(N,)``.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        The images and the labels.
    """
    check_eval(model)
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise InputError(f"data must be a pair (x, y), got {type(data).__name__}", "pass (images, labels)")
    x = check_images(data[0], "data[0]")
    y = check_labels(data[1], len(x), "data[1]")
    return x, y


def check_out(out) -> Path:
    """Refuse a report folder that is not a path, or that is a file.

    Parameters
    ----------
    out : str or os.PathLike
        The folder.

    Returns
    -------
    pathlib.Path
    """
    if out is None or not isinstance(out, (str, os.PathLike)):
        raise InputError(f"out must be a folder path, got {type(out).__name__}", "pass e.g. 'red_xai_report'")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"out {str(out)!r} is a file", "pass a folder path")
    return out


def _check_peers(peers, x: torch.Tensor, classes: int) -> None:
    """Near-equal models: a non-empty list of classifiers in eval mode with the model's ``classes`` outputs."""
    if not isinstance(peers, (list, tuple)) or not peers:
        raise InputError(f"peers must be a non-empty list of models, got {type(peers).__name__}", "or None")
    for i, m in enumerate(peers):
        c = n_outputs(check_eval(m, f"peers[{i}]"), x, "data[0]", f"peers[{i}]")
        if c != classes:
            raise InputError(f"peers[{i}] has {c} outputs, model {classes}", "same classes")


def _check_held_out(held_out, x: torch.Tensor, classes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The measured pair (images, labels): at least 2 images of ``x``'s shape, labels below ``classes``."""
    if not isinstance(held_out, (tuple, list)) or len(held_out) != 2:
        raise InputError(f"held_out must be a pair (x, y), got {type(held_out).__name__}", "or None")
    xh = check_images(held_out[0], "held_out[0]", like=x)
    yh = check_labels(held_out[1], len(xh), "held_out[1]", classes)
    if len(xh) < 2:
        raise InputError(f"held_out holds {len(xh)} image", "pass at least 2")
    return xh, yh


def check_questioning(q, name: str = "q") -> Questioning:
    """``q`` when it is the :class:`Questioning` that :func:`prepare` returns, else a one-line InputError.

    Parameters
    ----------
    q : Questioning
    name : str, default "q"

    Returns
    -------
    Questioning
    """
    if not isinstance(q, Questioning):
        raise InputError(
            f"{name} must be the Questioning that red_xai.loop.prepare(...) returns, got {type(q).__name__}"
        )
    return q


def prepare(
    model: nn.Module,
    data,
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
) -> Questioning:
    """Check the inputs of :func:`~icml24.red_xai.loop.question`, copy the model and split the data: the first step.

    The measured images are a random ``holdout`` share of ``data`` (or ``held_out``); the rest fits. The CAV's
    concept images are half of the other classes' fit images, shuffled, with the artifact; its random images
    the other half (with ``"swap"``, with the artifact removed). With ``"paste"`` the measured images get the
    artifact pasted; with ``"swap"`` each takes the masked pixels of another (:func:`~.measure.swap_pairs`).

    Parameters
    ----------
    model : torch.nn.Module
        The user's classifier, in eval mode (copied, never changed).
    data : tuple of (torch.Tensor, torch.Tensor)
        Images ``(N, C, H, W)`` and integer labels ``(N,)``, at least 20 images of two or more classes.
    target : int
        The class the suspected artifact points to.
    mask : torch.Tensor
        Bool ``(C, H, W)``: the artifact's pixels.
    layer : str, optional
        The module of the CAV (default: the first ``nn.ReLU``).
    method : str, default "input_x_gradient"
        The attribution that SpRAy clusters.
    value : float, optional
        The artifact's pixel value, or with ``"swap"`` the value that removes it (see
        :func:`~icml24.red_xai.loop.question`).
    lam : float, default 0.1
        RRR's penalty weight.
    epochs : int, default 10
        Fine-tuning epochs of RRR and RR-ClArC.
    max_heatmaps : int, default 200
        At most this many ``target`` images are explained (at least 4).
    holdout : float, default 0.3
        Share of ``data`` measured; not used with ``held_out``.
    peers : sequence of torch.nn.Module, optional
        Near-equal models in eval mode with the model's outputs.
    artifact : {"paste", "swap"}, default "paste"
        How the artifact is put on images (see :func:`~icml24.red_xai.loop.question`).
    held_out : tuple of (torch.Tensor, torch.Tensor), optional
        The images and labels measured (at least 2); then all of ``data`` fits.
    seed : int, default 0

    Returns
    -------
    Questioning
    """
    x, y = check_data(model, data)
    mask = check_mask(mask, x)
    if tuple(mask.shape) != tuple(x.shape[1:]):
        raise InputError(f"mask has shape {tuple(mask.shape)}, one image {tuple(x.shape[1:])}", "pass (C, H, W)")
    if len(x) < 20:
        raise InputError(f"data holds {len(x)} images", "pass at least 20")
    classes = n_outputs(model, x, "data[0]")
    target = check_target(target, classes)
    check_labels(y, len(x), "data[1]", classes)
    if len(torch.unique(y)) < 2:
        raise InputError("data[1] holds one class only", "pass images of the target class and of others")
    if peers is not None:
        _check_peers(peers, x, classes)
    artifact = check_choice(artifact, "artifact", ARTIFACTS)
    if held_out is not None:
        xh, yh = _check_held_out(held_out, x, classes)
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
    xm_removed = xm_only = xf_only = None
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
    # the attributions shown: the one SpRAy clusters, then the LRP rules (each once)
    methods = (method, *[r for r in LRP_RULES if r != method])
    return Questioning(
        net=net, x=x, y=y, xm=xm, ym=ym, xf=xf, yf=yf, xt=xt, concept=concept, pool=pool, xm_patched=xm_patched,
        xm_removed=xm_removed, xm_only=xm_only, xf_only=xf_only, mask=mask, target=target, layer=layer,
        method=method, methods=methods, value=value, lam=lam, epochs=epochs, artifact=artifact,
        held_out=held_out is not None, peers=tuple(peers or ()), seed=seed,
    )  # fmt: skip
