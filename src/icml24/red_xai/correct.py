"""Correct: remove a named shortcut from a torch classifier, with or without training.

Each correction returns a corrected deep copy in eval mode and leaves the model passed in untouched:

- :func:`p_clarc`: projective Class Artifact Compensation (Anders et al. 2022), training-free;
- :func:`rrr`: Right for the Right Reasons (Ross et al. 2017), an input-gradient penalty under a mask;
- :func:`rr_clarc`: Right Reason ClArC (Pahde et al. 2023), a penalty on the gradient along the artifact CAV;
- :func:`a_clarc`: augmentative ClArC (Anders et al. 2022), fine-tuning with the artifact pasted.

:func:`fit` is the trainer under all of them (Adam on cross-entropy, optionally with RRR's penalty); it also trains
the models that are questioned.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_choice, check_float, check_int, check_seed
from .checks import check_eval, check_images, check_labels, check_mask, check_model, check_target, get_layer, n_outputs
from .explain import ConceptVector, activations, check_cav
from .nets import Projection

__all__ = ["p_clarc", "fit", "rrr", "rr_clarc", "a_clarc"]


# --------------------------------------------------------------------------------------------------- corrections


def _train_forward(net: nn.Module, xb: torch.Tensor) -> torch.Tensor:
    """``net(xb)`` in train mode, refusing in one line the batch a layer cannot train on (BatchNorm on one image)."""
    try:
        return net(xb)
    except ValueError as error:
        why = str(error).splitlines()[0]
        raise InputError(f"model cannot train on a batch of {len(xb)} image(s): {why}", "change batch") from None


def p_clarc(model: nn.Module, cav: ConceptVector, reference_x: torch.Tensor) -> nn.Module:
    """Projective ClArC (Anders et al. 2022): a training-free copy of ``model`` that removes the CAV direction.

    At ``cav.layer`` the output becomes ``h - v v^T (h - z)``, with ``v`` the unit CAV and ``z`` the mean
    activation of the artifact-free ``reference_x``: the component along ``v`` is set to the clean mean's. In the
    copy, the module at ``cav.layer`` is ``nn.Sequential(layer, projection)``.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier (left untouched; a corrected deep copy is returned).
    cav : ConceptVector
        The artifact's CAV, fitted at a module of ``model``.
    reference_x : torch.Tensor
        Artifact-free images.

    Returns
    -------
    torch.nn.Module
        The corrected copy, in eval mode.
    """
    check_eval(model)
    check_cav(cav)
    reference_x = check_images(reference_x, "reference_x")
    get_layer(model, cav.layer)
    n_outputs(model, reference_x, "reference_x")
    z = activations(model, cav.layer, reference_x)[0].mean(0)
    if z.numel() != cav.vector.numel():
        raise InputError(f"cav has {cav.vector.numel()} dimensions, layer {cav.layer!r} {z.numel()}", "refit it")
    fixed = copy.deepcopy(model)
    mod = get_layer(fixed, cav.layer)
    # the layer becomes Sequential(layer, projection): a module of its own in the forward pass (so LRP gives the
    # projection, an affine map, its epsilon rule), and hooks at cav.layer still see the projected output
    parent_name, _, child = cav.layer.rpartition(".")
    parent = get_layer(fixed, parent_name) if parent_name else fixed
    setattr(parent, child, nn.Sequential(mod, Projection(cav.vector.to(z.dtype), z)))
    return fixed.eval()


def fit(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int = 30,
    lr: float = 3e-3,
    batch: int = 64,
    weight_decay: float = 1e-4,
    seed: int = 0,
    mask: torch.Tensor | None = None,
    lam: float = 0.0,
) -> nn.Module:
    """Train a copy of ``model`` with Adam on cross-entropy, optionally with the RRR input-gradient penalty.

    With ``mask`` and ``lam > 0`` the loss is Ross et al.'s (2017, Eq. 1):
    ``CE + lam * sum_n || A_n * d/dx_n sum_k log p_k(x_n) ||^2`` (weight decay through Adam).

    Parameters
    ----------
    model : torch.nn.Module
        The starting model, in either mode, with some parameter that requires grad (left untouched: a deep copy is
        trained in train mode; the probe of its output size runs in eval mode, so BatchNorm statistics stay as they
        are).
    x : torch.Tensor
        Images ``(N, C, H, W)``.
    y : torch.Tensor
        Integer labels ``(N,)``.
    epochs : int, default 30
    lr : float, default 3e-3
    batch : int, default 64
    weight_decay : float, default 1e-4
    seed : int, default 0
        Seed of the batch order.
    mask : torch.Tensor, optional
        Bool ``(C, H, W)`` or ``(N, C, H, W)``: the region whose input gradient must vanish.
    lam : float, default 0.0
        Weight of the penalty.

    Returns
    -------
    torch.nn.Module
        The trained copy, in eval mode.
    """
    check_model(model)
    if not any(p.requires_grad for p in model.parameters()):
        raise InputError("model has no parameter that requires grad: nothing to train", "unfreeze some layers")
    x = check_images(x)
    y = check_labels(y, len(x), classes=n_outputs(model, x))
    epochs = check_int(epochs, "epochs", min_val=0)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="right")
    batch = check_int(batch, "batch", min_val=1)
    weight_decay = check_float(weight_decay, "weight_decay", min_val=0.0)
    seed = check_seed(seed)
    lam = check_float(lam, "lam", min_val=0.0)
    if mask is not None:
        mask = check_mask(mask, x)
    net = copy.deepcopy(model).train()
    opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(seed)
    use_rrr = mask is not None and lam > 0
    for _ in range(epochs):
        perm = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), batch):
            idx = perm[i : i + batch]
            xb = x[idx].detach().clone().requires_grad_(use_rrr)
            logits = _train_forward(net, xb)
            loss = nn.functional.cross_entropy(logits, y[idx])
            if use_rrr:
                logp = torch.log_softmax(logits, 1).sum()
                (g,) = torch.autograd.grad(logp, xb, create_graph=True)
                m = mask if mask.shape == x.shape[1:] else mask[idx]
                loss = loss + lam * (g * m).pow(2).sum() / len(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net.eval()


def rrr(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    *,
    lam: float = 10.0,
    epochs: int = 20,
    lr: float = 3e-3,
    seed: int = 0,
) -> nn.Module:
    """Right for the Right Reasons (Ross et al. 2017): fine-tune a copy of ``model`` so its input gradient vanishes
    on ``mask``.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier (left untouched).
    x : torch.Tensor
        Training images ``(N, C, H, W)``.
    y : torch.Tensor
        Integer labels.
    mask : torch.Tensor
        Bool ``(C, H, W)`` or ``(N, C, H, W)``, True where the model must not look (the annotation A).
    lam : float, default 10.0
        Penalty weight (at least 0).
    epochs : int, default 20
    lr : float, default 3e-3
    seed : int, default 0

    Returns
    -------
    torch.nn.Module
        The corrected copy, in eval mode.
    """
    check_model(model)
    x = check_images(x)
    mask = check_mask(mask, x)
    return fit(model, x, y, epochs=epochs, lr=lr, seed=seed, mask=mask, lam=lam)


RR_CRITERIA = ("all_logits_random", "all_logits", "max_logit")


def rr_clarc(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cav: ConceptVector,
    *,
    lam: float = 1.0,
    criterion: str = "all_logits_random",
    epochs: int = 10,
    lr: float = 1e-3,
    batch: int = 64,
    seed: int = 0,
) -> nn.Module:
    """Right Reason ClArC (Pahde et al. 2023, "Reveal to Revise"): fine-tune a copy so the output's gradient at the
    CAV's layer has no component along the artifact direction.

    Loss: ``CE + lam * mean_n (v . d g(x_n) / d h_l)^2`` with ``v`` the unit CAV, ``h_l`` the output of
    ``cav.layer`` and ``g`` the criterion of the authors' code (default there, and here, ``all_logits_random``: the
    logits summed with random signs drawn for every sample and step). The layers up to and including ``cav.layer``
    are frozen, so the activation space, and the CAV's meaning in it, stay as they were; the layers after it learn.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier (left untouched; a corrected deep copy is returned).
    x : torch.Tensor
        Training images ``(N, C, H, W)``.
    y : torch.Tensor
        Integer labels ``(N,)``.
    cav : ConceptVector
        The artifact's CAV at a module of ``model`` (:func:`concept_vector`).
    lam : float, default 1.0
        Penalty weight (at least 0).
    criterion : {"all_logits_random", "all_logits", "max_logit"}, default "all_logits_random"
        The output whose gradient is penalised.
    epochs : int, default 10
    lr : float, default 1e-3
    batch : int, default 64
    seed : int, default 0
        Seed of the batch order and of the random signs.

    Returns
    -------
    torch.nn.Module
        The corrected copy, in eval mode.
    """
    check_model(model)
    x = check_images(x)
    y = check_labels(y, len(x), classes=n_outputs(model, x))
    check_cav(cav)
    get_layer(model, cav.layer)
    lam = check_float(lam, "lam", min_val=0.0)
    criterion = check_choice(criterion, "criterion", RR_CRITERIA)
    epochs = check_int(epochs, "epochs", min_val=0)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="right")
    batch = check_int(batch, "batch", min_val=1)
    seed = check_seed(seed)
    net = copy.deepcopy(model).eval()
    dims = activations(net, cav.layer, x[:1])[0].shape[1]
    if dims != cav.vector.numel():
        raise InputError(f"cav has {cav.vector.numel()} dimensions, layer {cav.layer!r} {dims}", "refit it")
    order = [name for name, _ in net.named_modules() if name]
    upto = order.index(cav.layer)
    frozen = [
        m for name, m in net.named_modules() if name and (order.index(name) <= upto or name.startswith(cav.layer + "."))
    ]
    trainable = {id(p) for p in net.parameters()} - {id(p) for m in frozen for p in m.parameters(recurse=False)}
    params = [p for p in net.parameters() if id(p) in trainable and p.requires_grad]
    if not params:
        raise InputError(f"cav.layer {cav.layer!r} has no trainable parameter after it", "fit it at an earlier layer")
    v = cav.vector.detach().float()
    store = {}
    handle = get_layer(net, cav.layer).register_forward_hook(lambda _m, _i, out: store.__setitem__("h", out))
    opt = torch.optim.Adam(params, lr=lr)
    gen = torch.Generator().manual_seed(seed)
    net.train()
    try:
        for _ in range(epochs):
            perm = torch.randperm(len(x), generator=gen)
            for i in range(0, len(x), batch):
                idx = perm[i : i + batch]
                xb = x[idx].detach().clone().requires_grad_(lam > 0)
                logits = _train_forward(net, xb)
                loss = nn.functional.cross_entropy(logits, y[idx])
                if lam > 0:
                    if criterion == "all_logits_random":
                        signs = torch.sign(0.5 - torch.rand(logits.shape, generator=gen))
                        out = (logits * signs).sum()
                    elif criterion == "all_logits":
                        out = logits.sum()
                    else:
                        out = logits.max(1).values.sum()
                    (g,) = torch.autograd.grad(out, store["h"], create_graph=True)
                    loss = loss + lam * (g.flatten(1) @ v).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    finally:
        handle.remove()
    for p in net.parameters():
        p.grad = None
    return net.eval()


def a_clarc(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    target,
    *,
    value: float = 1.0,
    epochs: int = 10,
    lr: float = 1e-3,
    seed: int = 0,
) -> nn.Module:
    """Augmentative ClArC (Anders et al. 2022): fine-tune a copy on data where the artifact is pasted onto the
    other classes' images, so it no longer predicts ``target``.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier (left untouched).
    x : torch.Tensor
        Training images ``(N, C, H, W)``.
    y : torch.Tensor
        Integer labels.
    mask : torch.Tensor
        Bool ``(C, H, W)``: the artifact's pixels.
    target : int
        The class the artifact points to.
    value : float, default 1.0
        The artifact's pixel value.
    epochs : int, default 10
    lr : float, default 1e-3
    seed : int, default 0

    Returns
    -------
    torch.nn.Module
        The corrected copy, in eval mode.
    """
    check_model(model)
    x = check_images(x)
    classes = n_outputs(model, x)
    y = check_labels(y, len(x), classes=classes)
    mask = check_mask(mask, x)
    if mask.shape != x.shape[1:]:
        raise InputError("mask must have one image's shape (C, H, W)", "pass the artifact's pixel mask")
    target = check_target(target, classes)
    value = check_float(value, "value")
    seed = check_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    others = (y != target).nonzero().flatten()
    pick = others[torch.randperm(len(others), generator=gen)[: len(others) // 2]]
    xa = x[pick].clone()
    xa[:, mask] = value
    return fit(model, torch.cat([x, xa]), torch.cat([y, y[pick]]), epochs=epochs, lr=lr, seed=seed)
