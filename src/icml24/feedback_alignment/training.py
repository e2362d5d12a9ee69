"""Training and scoring a :class:`~.network.FeedbackNetwork`: the losses, plain SGD, accuracy, batch checks."""

from __future__ import annotations

from typing import Callable, Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import InputError
from ..validation import check_float, check_int, check_seed
from .network import FeedbackNetwork

Tensor = torch.Tensor

LOSSES = ("cross_entropy", "mse")


def loss_fn(name: str) -> Callable[[Tensor, Tensor], Tensor]:
    """The loss called ``name``: ``cross_entropy`` or ``mse`` (``1/2 ||z - onehot(y)||^2``), means over the batch.

    Parameters
    ----------
    name : {"cross_entropy", "mse"}

    Returns
    -------
    callable
        ``loss(logits, labels) -> scalar tensor``.
    """
    if name == "cross_entropy":
        return F.cross_entropy
    if name == "mse":

        def mse(z: Tensor, y: Tensor) -> Tensor:
            target = F.one_hot(y, z.shape[-1]).to(z.dtype)
            return 0.5 * ((z - target) ** 2).sum(dim=-1).mean()

        return mse
    raise InputError(f"loss must be one of {', '.join(LOSSES)}, got {name!r}", "give the loss's name as a string")


def train(
    net: FeedbackNetwork,
    x: Tensor,
    y: Tensor,
    *,
    lr: float,
    steps: int,
    loss: str = "cross_entropy",
    batch_size: Optional[int] = None,
    seed: int = 0,
    callback: Optional[Callable[[int], None]] = None,
    weight_decay: float = 0.0,
) -> list[float]:
    """Plain (stochastic) gradient descent with ``torch.optim.SGD`` under the network's rule.

    Full batch by default: the setting of the conservation law (gradient descent approximating gradient
    flow; momentum, weight decay or adaptive optimizers break it). ``callback(step)`` runs before the first
    update (step 0) and after each update.

    Parameters
    ----------
    net : FeedbackNetwork
    x : torch.Tensor of shape (n, features)
        Finite inputs.
    y : torch.Tensor of shape (n,)
        Integer class labels in ``0..n_out-1``.
    lr : float
        Learning rate, positive.
    steps : int
        Number of updates (0: none).
    loss : {"cross_entropy", "mse"}, default "cross_entropy"
    batch_size : int, optional
        Minibatches drawn with replacement; default the full batch.
    seed : int, default 0
        Seeds the minibatch draws.
    callback : callable, optional
        ``callback(step)``.
    weight_decay : float, default 0.0
        ``torch.optim.SGD``'s ``weight_decay``, applied to every parameter of ``net`` (Kolen-Pollack's and the
        weight mirror's feedback too). Any positive value breaks the conservation law.

    Returns
    -------
    list of float
        The training loss before each update.
    """
    if not isinstance(net, FeedbackNetwork):
        raise InputError(f"net must be a FeedbackNetwork, got {type(net).__name__}")
    x, y = check_batch(net, x, y)
    if callback is not None and not callable(callback):
        raise InputError(f"callback must be callable (called as callback(step)), got {type(callback).__name__}")
    top = torch.finfo(next(net.parameters()).dtype).max  # SGD casts lr and weight_decay to the weights' dtype
    lr = check_float(lr, "lr", min_val=0.0, max_val=top, include_boundaries="right")
    steps = check_int(steps, "steps", min_val=0)
    batch_size = check_int(batch_size, "batch_size", min_val=1, allow_none=True)
    seed = check_seed(seed)
    weight_decay = check_float(weight_decay, "weight_decay", min_val=0.0, max_val=top)
    lf = loss_fn(loss)
    opt = torch.optim.SGD(net.parameters(), lr=float(lr), weight_decay=float(weight_decay))
    gen = torch.Generator(device="cpu").manual_seed(seed)
    y = y.long()
    hooked = bool(net._forward_hooks or net._forward_pre_hooks)
    losses = []
    if callback is not None:
        callback(0)
    for step in range(1, steps + 1):
        if batch_size is None or batch_size >= x.shape[0]:
            xb, yb = x, y
        else:
            idx = torch.randint(0, x.shape[0], (batch_size,), generator=gen)
            xb, yb = x[idx], y[idx]
        opt.zero_grad(set_to_none=True)
        # x was checked and cast once, above (through net(...) when the caller hooked the wrapper)
        value = lf(net(xb) if hooked else net._forward_checked(xb), yb)
        value.backward()
        opt.step()
        losses.append(float(value.detach()))
        if callback is not None:
            callback(step)
    return losses


@torch.no_grad()
def accuracy(net: nn.Module, x: Tensor, y: Tensor) -> float:
    """Fraction of ``x`` whose arg-max logit is ``y``.

    Parameters
    ----------
    net : torch.nn.Module
    x : torch.Tensor
    y : torch.Tensor
        Class labels.

    Returns
    -------
    float
    """
    if not isinstance(net, nn.Module):
        raise InputError(f"net must be a torch.nn.Module, got {type(net).__name__}")
    x, y = check_batch(net, x, y)
    try:
        out = net(x)
    except InputError:
        raise
    except (RuntimeError, TypeError, ValueError) as exc:
        raise InputError(f"net failed on x: {' '.join(str(exc).split())}") from None
    if not isinstance(out, Tensor) or out.dim() != 2 or out.shape[0] != x.shape[0]:
        raise InputError(f"net must return (n, classes) logits, got {getattr(out, 'shape', type(out).__name__)}")
    if int(y.max()) >= out.shape[1]:
        raise InputError(f"y holds label {int(y.max())} but net gives {out.shape[1]} classes")
    return float((out.argmax(dim=-1) == y).double().mean())


def check_batch(net: nn.Module, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Validate a batch for ``net``: ``x`` a finite floating tensor of ``n >= 1`` examples that the first layer
    takes, ``y`` ``n`` integer labels in ``0..classes-1``.

    ``x`` is returned in the network's floating dtype (float64 data for a float32 network is converted, as
    :class:`FeedbackNetwork` does in its forward pass); ``y`` as a long tensor. The user's tensors are not
    modified.

    Parameters
    ----------
    net : torch.nn.Module
        A :class:`FeedbackNetwork` (its first layer and number of classes are checked) or any module.
    x : torch.Tensor of shape (n, ...)
    y : torch.Tensor of shape (n,)

    Returns
    -------
    x : torch.Tensor
    y : torch.Tensor

    Raises
    ------
    InputError
        Naming ``x`` or ``y``.
    """
    if not isinstance(x, Tensor):
        raise InputError(f"x must be a torch.Tensor, got {type(x).__name__}", "convert it with torch.as_tensor")
    if not x.is_floating_point():
        raise InputError(f"x must be a real floating-point tensor, got {x.dtype}")
    if x.dim() < 2 or x.shape[0] == 0:
        raise InputError(f"x must be (n, features...) with n >= 1, got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise InputError("x contains NaN or infinite entries")
    if not isinstance(y, Tensor):
        raise InputError(f"y must be a torch.Tensor of class labels, got {type(y).__name__}")
    if y.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise InputError(f"y must hold integer class labels, got {y.dtype}")
    if y.dim() != 1 or y.shape[0] != x.shape[0]:
        raise InputError(f"y must be ({x.shape[0]},): one label per row of x, got shape {tuple(y.shape)}")
    if int(y.min()) < 0:
        raise InputError(f"y holds the negative label {int(y.min())}", "labels are 0..classes-1")
    params = [p for p in net.parameters() if p.is_floating_point()]
    if isinstance(net, FeedbackNetwork):
        first = net.layers[0]
        if isinstance(first, nn.Linear) and x.shape[-1] != first.in_features:
            raise InputError(f"x has shape {tuple(x.shape)}, expected (n, {first.in_features})")
        if isinstance(first, nn.Conv2d) and (x.dim() != 4 or x.shape[1] != first.in_channels):
            raise InputError(f"x has shape {tuple(x.shape)}, expected (n, {first.in_channels}, H, W)")
        n_out = net.linears[-1].out_features
        if int(y.max()) >= n_out:
            raise InputError(f"y must hold labels in 0..{n_out - 1}, got {int(y.max())}")
    if params and x.dtype != params[0].dtype:
        x = x.to(params[0].dtype)
    return x, y.long()


__all__ = ["LOSSES", "loss_fn", "train", "accuracy", "check_batch"]
