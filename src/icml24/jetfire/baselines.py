"""The peers Jetfire is compared with (Sec. 6): per-tensor INT8 training, SwitchBack (per-token INT8), and
torchao's INT8 mixed-precision training where it runs. FP32 and bf16 autocast need no code of their own.

Both INT8 baselines quantize the linear layers only (their operators between GEMMs stay in floating point),
as the paper's per-tensor baseline and bitsandbytes' ``SwitchBackLinear`` do; their GEMMs are single
``torch._int_mm`` calls rescaled by outer products of the scales (no per-chunk rescale is needed).
"""

from __future__ import annotations

import copy
from typing import Sequence

import torch
from torch import Tensor, nn

from ..errors import InputError
from ..extras import require
from ..validation import check_bool, check_choice, check_int
from .quant import check_layer_input, check_seed
from .targets import check_model_and_modules, linear_weight, replace_modules

SCHEMES = ("per_tensor", "switchback")


def _qrows(x: Tensor, per_row: bool, stochastic: bool, gen) -> tuple[Tensor, Tensor]:
    """Symmetric INT8 with one scale per row (``per_row``) or for the whole tensor; scales as a column."""
    s = (x.abs().amax(dim=1, keepdim=True) if per_row else x.abs().amax().reshape(1, 1)) / 127.0
    safe = torch.where(s > 0, s, torch.ones_like(s))
    y = x / safe
    if stochastic:
        y = torch.sign(y) * torch.round(y.abs() + torch.rand(y.shape, generator=gen, device=y.device) - 0.5)
    else:
        y = torch.round(y)
    return y.clamp_(-128, 127).to(torch.int8), s


class _Int8LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, scheme, gen):
        with torch.autocast(x.device.type, enabled=False):
            return _Int8LinearFn._forward(ctx, x, weight, bias, scheme, gen)

    @staticmethod
    def _forward(ctx, x, weight, bias, scheme, gen):
        x2 = x.reshape(-1, x.shape[-1]).to(torch.float32)
        w = weight.to(torch.float32)
        token = scheme == "switchback"
        qx, sx = _qrows(x2, token, False, gen)
        qw, sw = _qrows(w, False, False, gen)
        y = torch._int_mm(qx, qw.t()).to(torch.float32) * (sx * sw.reshape(1, 1))
        if bias is not None:
            y = y + bias.to(torch.float32)
        if token:  # SwitchBack keeps X in 16 bits for its 16-bit weight-gradient GEMM
            ctx.save_for_backward(x2.to(torch.bfloat16), qw, sw)
        else:
            ctx.save_for_backward(qx, sx, qw, sw)
        ctx.meta = (scheme, gen, bias is not None, x.shape, x.dtype, weight.dtype)
        return y.reshape(*x.shape[:-1], weight.shape[0]).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        scheme, gen, has_bias, xshape, xdtype, wdtype = ctx.meta
        g2 = g.reshape(-1, g.shape[-1]).to(torch.float32)
        gx = gw = gb = None
        if scheme == "switchback":
            xb, qw, sw = ctx.saved_tensors
            qg, sg = _qrows(g2, True, False, gen)  # row-wise gradient, round to nearest (bitsandbytes)
            gx = torch._int_mm(qg, qw).to(torch.float32) * (sg * sw)
            gw = (g2.to(torch.bfloat16).t() @ xb).to(torch.float32)  # the 16-bit weight-gradient GEMM
        else:
            qx, sx, qw, sw = ctx.saved_tensors
            qg, sg = _qrows(g2, False, True, gen)  # per-tensor gradient, stochastic rounding
            gx = torch._int_mm(qg, qw).to(torch.float32) * (sg * sw)
            gw = torch._int_mm(qg.t().contiguous(), qx).to(torch.float32) * (sg * sx)
        if has_bias:
            gb = g2.sum(0).to(wdtype)
        return gx.reshape(xshape).to(xdtype), gw.to(wdtype), gb, None, None


class Int8Linear(nn.Module):
    """A linear layer trained with a coarse-grained INT8 baseline.

    ``"per_tensor"``: one scale for X, W and the output gradient (stochastic rounding), all three GEMMs in
    INT8 (the paper's per-tensor baseline). ``"switchback"``: per-token (row-wise) X and gradient, per-tensor
    W, the forward and input-gradient GEMMs in INT8 and the weight-gradient GEMM in 16 bits (bfloat16 here),
    as bitsandbytes' ``SwitchBackLinear`` (Wortsman et al., 2023).

    Parameters
    ----------
    in_features, out_features : int
    bias : bool, default True
    scheme : {"per_tensor", "switchback"}, default "per_tensor"
    seed : int, default 0
        Seed of the stochastic rounding.
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, *, scheme: str = "per_tensor", seed: int = 0
    ) -> None:
        super().__init__()
        in_features = check_int(in_features, "in_features", min_val=1)
        out_features = check_int(out_features, "out_features", min_val=1)
        bias = check_bool(bias, "bias")
        self.scheme = check_choice(scheme, "scheme", SCHEMES)
        self.seed = check_seed(seed)
        self.in_features, self.out_features = in_features, out_features
        ref = nn.Linear(in_features, out_features, bias=bias)
        self.weight, self.bias = ref.weight, ref.bias
        self._gen = None

    def __getstate__(self):
        state = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__
        return {**state, "_gen": None}  # a generator is not copied: the copy restarts from its seed

    @classmethod
    def from_linear(cls, linear: nn.Module, *, scheme: str = "per_tensor", seed: int = 0) -> "Int8Linear":
        """A copy of an ``nn.Linear`` or transformers ``Conv1D`` with the baseline's INT8 training.

        Parameters
        ----------
        linear : nn.Linear or Conv1D
        scheme : {"per_tensor", "switchback"}, default "per_tensor"
        seed : int, default 0

        Returns
        -------
        Int8Linear
        """
        w, b = linear_weight(linear, "linear")
        layer = cls(w.shape[1], w.shape[0], bias=b is not None, scheme=scheme, seed=seed).to(w.device, w.dtype)
        with torch.no_grad():
            layer.weight.copy_(w)
            if b is not None:
                layer.bias.copy_(b)
        return layer

    def forward(self, x: Tensor) -> Tensor:
        """Apply the layer.

        Parameters
        ----------
        x : torch.Tensor
            ``(..., in_features)``, floating.

        Returns
        -------
        torch.Tensor
            ``(..., out_features)``.
        """
        x = check_layer_input(x, (self.in_features,))
        if self._gen is None or self._gen.device != x.device:
            self._gen = torch.Generator(device=x.device).manual_seed(self.seed)
        return _Int8LinearFn.apply(x, self.weight, self.bias, self.scheme, self._gen)


def convert_baseline(
    model: nn.Module, scheme: str = "per_tensor", *, seed: int = 0, modules: Sequence[str] | None = None
) -> nn.Module:
    """A copy of ``model`` whose linear layers (except the LM head) train with an INT8 baseline.

    Parameters
    ----------
    model : nn.Module
        Left unchanged.
    scheme : {"per_tensor", "switchback"}, default "per_tensor"
        See :class:`Int8Linear`.
    seed : int, default 0
    modules : sequence of str, optional
        Linear layers to convert; all but the LM head by default.

    Returns
    -------
    nn.Module

    Raises
    ------
    InputError
        On a non-module, no linear layer, a named module that is not linear, or an unknown scheme.
    """
    scheme = check_choice(scheme, "scheme", SCHEMES)
    seed = check_seed(seed)
    targets = check_model_and_modules(model, modules, "linear")
    order = {n: i for i, n in enumerate(targets)}
    new = copy.deepcopy(model)
    return replace_modules(
        new, lambda n, m: Int8Linear.from_linear(m, scheme=scheme, seed=seed + order[n]), list(targets)
    )


def torchao_int8_mixed_precision(model: nn.Module) -> nn.Module:
    """A copy of ``model`` with torchao's INT8 mixed-precision training (row-wise INT8 GEMMs) on its linears.

    torchao (extra ``quant``) is an optional peer: ``torchao.prototype.quantized_training``'s
    ``int8_mixed_precision_training``. Its INT8 matmul goes through ``torch._int_mm`` and runs on CPU beside
    torch 2.13 (checked in the benchmark; speed there is the peer's, not ours).

    Parameters
    ----------
    model : nn.Module
        Left unchanged. Only ``nn.Linear`` layers are converted (not GPT-2's ``Conv1D``).

    Returns
    -------
    nn.Module

    Raises
    ------
    InputError
        If ``model`` is not a module or has no ``nn.Linear``.
    icml24.extras.MissingExtra
        Without torchao.
    """
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not any(isinstance(m, nn.Linear) for m in model.modules()):
        raise InputError("model has no nn.Linear layer for torchao to convert (GPT-2's Conv1D is not one)")
    require("torchao", extra="quant", what="jetfire's torchao baseline")
    from torchao import quantize_
    from torchao.prototype.quantized_training import int8_mixed_precision_training

    new = copy.deepcopy(model)
    quantize_(new, int8_mixed_precision_training())
    return new


__all__ = ["SCHEMES", "Int8Linear", "convert_baseline", "torchao_int8_mixed_precision"]
