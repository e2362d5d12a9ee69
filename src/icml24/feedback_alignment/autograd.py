"""The autograd function behind every weighted layer of :class:`~.network.FeedbackNetwork`.

:class:`FeedbackFunction` computes a Linear or Conv2d layer exactly in its forward pass; its backward pass
gives the weight and bias their ordinary gradients but sends the error down through the rule's *feedback*
``B`` instead of ``W^T`` (see :mod:`.rules`). The weight mirror's noise-driven gradient for ``B``
(:func:`mirror_term`) is computed here too.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import InputError
from .rules import transpose

Tensor = torch.Tensor


class OutputError:
    """Holds the output error ``e_L`` of one forward pass, for DFA's hidden layers (one per forward call)."""

    __slots__ = ("e",)

    def __init__(self) -> None:
        self.e: Optional[Tensor] = None


def conv_args(layer: nn.Module) -> Optional[tuple]:
    """``(stride, padding, dilation)`` of a Conv2d layer (the ``conv`` of :class:`FeedbackFunction`), else None."""
    if isinstance(layer, nn.Conv2d):
        return (layer.stride, layer.padding, layer.dilation)
    return None


def _check_function_args(x, weight, bias, feedback, conv, learn) -> None:
    """Refuse what :class:`FeedbackFunction` cannot compute with (cheap checks of types, shapes and dtypes)."""
    for value, name in ((x, "x"), (weight, "weight"), (feedback, "feedback")):
        if not isinstance(value, Tensor):
            raise InputError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if not value.is_floating_point():
            raise InputError(f"{name} must be a floating-point tensor, got {value.dtype}")
    if bias is not None and not isinstance(bias, Tensor):
        raise InputError(f"bias must be a torch.Tensor or None, got {type(bias).__name__}")
    if learn not in (None, "kp", "wm"):
        raise InputError(f"learn must be None, 'kp' or 'wm', got {learn!r}")
    if conv is not None and not (isinstance(conv, tuple) and len(conv) == 3):
        raise InputError(f"conv must be None or (stride, padding, dilation), got {conv!r}")
    want = 4 if conv is not None else 2
    if weight.dim() != want:
        raise InputError(f"weight must have {want} dimensions, got shape {tuple(weight.shape)}")
    for value, name in ((x, "x"), (feedback, "feedback"), (bias, "bias")):
        if value is not None and value.dtype != weight.dtype:
            raise InputError(
                f"{name} has dtype {value.dtype} but weight has {weight.dtype}", "convert them to one dtype"
            )
    if conv is None:
        if x.dim() == 0 or x.shape[-1] != weight.shape[1]:
            raise InputError(
                f"x has shape {tuple(x.shape)} but weight {tuple(weight.shape)} takes {weight.shape[1]} features"
            )
    elif x.dim() != 4 or x.shape[1] != weight.shape[1]:
        raise InputError(f"x must be (n, {weight.shape[1]}, H, W) for this convolution, got {tuple(x.shape)}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise InputError(f"bias must have shape ({weight.shape[0]},), got {tuple(bias.shape)}")
    per_example = x.shape[-1] if conv is None else math.prod(x.shape[1:])
    if tuple(feedback.shape) != tuple(transpose(weight).shape) and (
        feedback.dim() != 2 or feedback.shape[0] != per_example or learn is not None
    ):
        raise InputError(
            f"feedback has shape {tuple(feedback.shape)}, expected W^T's {tuple(transpose(weight).shape)}",
            "or (size of the layer's input, output width) for DFA",
        )


class FeedbackFunction(torch.autograd.Function):
    """A Linear (``z = x W^T + b``) or Conv2d layer forward; backward sends the error down through the feedback.

    ``backward`` reads only the saved input ``x``, the feedback ``B`` and the incoming error: never ``W``. For
    a Linear layer it sends ``e B^T``; for a convolution the transposed convolution of ``e`` with the kernel
    ``B.transpose(0, 1)`` (``B`` has shape ``(in_c, out_c, kh, kw)``). With ``store`` given (DFA), the output
    layer writes its error ``e_L`` there and every hidden layer sends ``e_L B^T`` (reshaped to its input)
    down instead. When the feedback is learned, its gradient is ``(grad W)^T`` (``learn="kp"``,
    Kolen-Pollack) or the weight-mirror term ``mirror`` computed in the forward pass (``learn="wm"``).
    """

    @staticmethod
    def forward(
        ctx,
        x: Tensor,
        weight: Tensor,
        bias: Optional[Tensor],
        feedback: Tensor,
        store: Optional[OutputError],
        is_output: bool,
        conv: Optional[tuple],
        learn: Optional[str],
        mirror: Optional[Tensor],
    ) -> Tensor:
        _check_function_args(x, weight, bias, feedback, conv, learn)
        ctx.save_for_backward(x, feedback)
        ctx.has_bias = bias is not None
        ctx.store = store
        ctx.is_output = is_output
        ctx.conv = conv
        ctx.learn = learn
        ctx.mirror = mirror
        ctx.weight_shape = weight.shape
        if conv is None:
            return F.linear(x, weight, bias)
        return F.conv2d(x, weight, bias, *conv)

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        x, feedback = ctx.saved_tensors
        conv = ctx.conv
        grad_x = grad_w = grad_b = grad_fb = None
        if conv is None:
            e = grad_out.reshape(-1, grad_out.shape[-1])
            if ctx.needs_input_grad[1] or ctx.learn == "kp":
                grad_w = e.T @ x.reshape(-1, x.shape[-1])
            if ctx.has_bias and ctx.needs_input_grad[2]:
                grad_b = e.sum(dim=0)
        else:
            e = grad_out
            if ctx.needs_input_grad[1] or ctx.learn == "kp":
                grad_w = torch.nn.grad.conv2d_weight(x, ctx.weight_shape, e, *conv)
            if ctx.has_bias and ctx.needs_input_grad[2]:
                grad_b = e.sum(dim=(0, 2, 3))
        if ctx.needs_input_grad[3]:
            grad_fb = transpose(grad_w) if ctx.learn == "kp" else ctx.mirror
        if ctx.learn == "kp" and not ctx.needs_input_grad[1]:
            grad_w = None
        store = ctx.store
        if store is not None and ctx.is_output:
            store.e = e
        if ctx.needs_input_grad[0]:
            if store is not None and not ctx.is_output:
                if store.e is None:  # pragma: no cover - autograd runs the output layer first
                    raise RuntimeError("DFA: the output error was not recorded before a hidden layer's backward")
                grad_x = (store.e @ feedback.T).reshape(x.shape)
            elif conv is None:
                grad_x = (e @ feedback.T).reshape(x.shape)
            else:
                grad_x = torch.nn.grad.conv2d_input(x.shape, transpose(feedback), e, *conv)
        return grad_x, grad_w, grad_b, grad_fb, None, None, None, None, None


#: the former name, from when only Linear layers were supported
FeedbackLinearFunction = FeedbackFunction


@torch.no_grad()
def mirror_term(weight: Tensor, feedback: Tensor, gen: torch.Generator, samples: int) -> Tensor:
    """The weight mirror's gradient for ``B``: ``B - xi^T (W xi) / n`` for ``xi ~ N(0, I)``, in ``B``'s shape.

    Its expectation ``B - W^T`` is the gradient of ``1/2 ||B - W^T||^2``: the mirror's Hebbian term with its decay
    (Akrout et al. 2019, Eq. 6, with the decay rate equal to the mirror's learning rate).
    """
    w = weight.detach()
    flat = w.reshape(w.shape[0], -1)  # (out, fan_in), fan_in ordered (in, kh, kw)
    xi = torch.randn(samples, flat.shape[1], generator=gen, dtype=torch.float64).to(w.dtype)
    g = -(xi.T @ (xi @ flat.T)) / samples  # (fan_in, out)
    if w.dim() > 2:
        g = g.reshape(w.shape[1], *w.shape[2:], w.shape[0])  # (in, kh, kw, out)
        g = g.permute(0, g.dim() - 1, *range(1, g.dim() - 1))
    return feedback.detach() + g


__all__ = ["FeedbackFunction", "FeedbackLinearFunction"]
