"""The input checks every step of the loop shares: one-line :class:`~icml24.errors.InputError` naming the argument.

Models must be ``torch.nn.Module`` classifiers returning logits ``(N, classes)`` (in eval mode wherever they are
explained or measured), images ``(N, C, H, W)`` float tensors, labels ``(N,)`` integers, masks bool tensors of one
image's shape (or of the batch's), and layers the names of ``model.named_modules()``.
"""

from __future__ import annotations

import torch
from torch import nn

from ..errors import InputError
from ..validation import check_int, check_tensor

__all__ = [
    "check_model",
    "check_eval",
    "check_images",
    "check_labels",
    "check_mask",
    "check_target",
    "n_outputs",
    "get_layer",
]


def check_model(model, name: str = "model") -> nn.Module:
    """Refuse anything but a ``torch.nn.Module``.

    Parameters
    ----------
    model : object
        The classifier.
    name : str, default "model"
        The argument's name in the message.

    Returns
    -------
    torch.nn.Module
        ``model``.
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"{name} must be a torch.nn.Module, got {type(model).__name__}", "pass the classifier")
    return model


def check_eval(model, name: str = "model") -> nn.Module:
    """Refuse a model that is not a ``torch.nn.Module`` in eval mode.

    Parameters
    ----------
    model : object
        The classifier.
    name : str, default "model"
        The argument's name in the message.

    Returns
    -------
    torch.nn.Module
        ``model``.
    """
    check_model(model, name)
    if model.training:
        raise InputError(f"{name} is in training mode", "call model.eval() before explaining or measuring it")
    return model


def check_images(x, name: str = "x", like: torch.Tensor | None = None) -> torch.Tensor:
    """Refuse anything but a finite float tensor ``(N, C, H, W)`` (of ``like``'s image shape, when given).

    Parameters
    ----------
    x : object
        The images.
    name : str, default "x"
        The argument's name in the message.
    like : torch.Tensor, optional
        Images whose shape ``(C, H, W)`` each of ``x`` must have.

    Returns
    -------
    torch.Tensor
        ``x``.
    """
    x = check_tensor(x, name, ndim=4, dtype="float")
    if like is not None and x.shape[1:] != like.shape[1:]:
        raise InputError(f"{name} holds {tuple(x.shape[1:])} images, expected {tuple(like.shape[1:])}", "same shape")
    return x


def check_labels(y, n: int, name: str = "y", classes: int | None = None) -> torch.Tensor:
    """Refuse anything but ``n`` integer labels ``(n,)`` in ``0..classes-1``.

    Parameters
    ----------
    y : object
        The labels.
    n : int
        The number of images they label.
    name : str, default "y"
        The argument's name in the message.
    classes : int, optional
        The model's number of outputs (no upper bound when None).

    Returns
    -------
    torch.Tensor
        ``y``.
    """
    y = check_tensor(y, name, ndim=1, dtype="integer", allow_empty=True)
    if len(y) != n:
        raise InputError(f"{name} has {len(y)} labels for {n} images", "pass one label per image")
    if n and int(y.min()) < 0:
        raise InputError(f"{name} holds a negative label", "labels are 0..classes-1")
    if n and classes is not None and int(y.max()) >= classes:
        raise InputError(f"{name} holds class {int(y.max())}, the model has {classes} outputs", "check the labels")
    return y


def check_mask(mask, x: torch.Tensor, name: str = "mask") -> torch.Tensor:
    """Refuse anything but a bool mask of one image's shape ``(C, H, W)`` or of the batch's, marking some pixel.

    Parameters
    ----------
    mask : object
        The mask.
    x : torch.Tensor
        The images it masks.
    name : str, default "mask"
        The argument's name in the message.

    Returns
    -------
    torch.Tensor
        ``mask``.
    """
    mask = check_tensor(mask, name, dtype="bool")
    if tuple(mask.shape) not in (tuple(x.shape[1:]), tuple(x.shape)):
        raise InputError(
            f"{name} has shape {tuple(mask.shape)}, the inputs {tuple(x.shape)}",
            "pass a mask of one image's shape (C, H, W) or of the whole batch",
        )
    if not bool(mask.any()):
        raise InputError(f"{name} marks no pixel", "mark the region at least one pixel wide")
    return mask


def check_target(target, classes: int | None = None, name: str = "target") -> int:
    """Refuse anything but a class index below ``classes``.

    Parameters
    ----------
    target : object
        The class.
    classes : int, optional
        The model's number of outputs (no upper bound when None).
    name : str, default "target"
        The argument's name in the message.

    Returns
    -------
    int
    """
    target = check_int(target, name, min_val=0)
    if classes is not None and target >= classes:
        raise InputError(f"{name}={target} but the model has {classes} outputs", f"pick a class in 0..{classes - 1}")
    return target


def n_outputs(model: nn.Module, x: torch.Tensor, name: str = "x", model_name: str = "model") -> int:
    """The number of classes of ``model``, read off its logits on the first image of ``x``.

    The probe runs in eval mode without gradients and puts every module's mode back after, so it never changes the
    model (BatchNorm's running statistics, Dropout's draws of the global generator).

    Parameters
    ----------
    model : torch.nn.Module
        The classifier.
    x : torch.Tensor
        Images it accepts (one is run).
    name, model_name : str, default "x", "model"
        The arguments' names in the message when ``model`` cannot run on ``x``.

    Returns
    -------
    int
    """
    modes = [(m, m.training) for m in model.modules()]
    try:
        with torch.no_grad():
            out = model.eval()(x[:1])
    except (RuntimeError, ValueError, TypeError, IndexError) as error:
        why = (str(error).splitlines() or [type(error).__name__])[0]
        raise InputError(f"{name} of shape {tuple(x.shape)} does not fit {model_name}: {why}") from None
    finally:
        for m, training in modes:
            m.training = training
    if not isinstance(out, torch.Tensor) or out.ndim != 2:
        got = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise InputError(f"{model_name} returns {got}", "the model must return logits (N, classes)")
    return int(out.shape[1])


def get_layer(model: nn.Module, layer) -> nn.Module:
    """The module of ``model`` named ``layer`` (a name of ``model.named_modules()``), refusing any other name.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier.
    layer : str
        The module's name, e.g. ``"net.1"``.

    Returns
    -------
    torch.nn.Module
    """
    if not isinstance(layer, str):
        raise InputError(f"layer must be a module name (str), got {type(layer).__name__}", "e.g. 'net.1'")
    modules = dict(model.named_modules())
    if layer not in modules or layer == "":
        names = [n for n in modules if n][:8]
        raise InputError(f"layer {layer!r} is not a module of the model", f"pick one of {names}")
    return modules[layer]
