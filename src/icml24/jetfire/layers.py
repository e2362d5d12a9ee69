"""Jetfire's layers: the INT8 linear layer (Sec. 5.1), INT8-in/INT8-out non-linear operators (Sec. 5.2) and
``convert``, which turns a user's GPT-2-style or Llama-style Hugging Face model into a Jetfire model (the modules
it swaps are chosen in :mod:`icml24.jetfire.targets`).

Data flow (official ``INT8_GPT2/qmodel.py``): every operator of a transformer block takes an INT8 tensor with
32x32 block scales, computes in FP32 and emits INT8 again; the attention core (softmax(QK^T)V), the FP
residual stream, embeddings, the final norm and the LM head stay in floating point. Between operators we
pass the tensor's dequantized value (exactly the INT8 x scale product), while what each operator saves for
its backward pass is the INT8 data and the scales; gradients are quantized per block with stochastic
rounding at every operator boundary.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Sequence

import torch
from torch import Tensor, nn

from ..errors import InputError
from ..validation import check_bool, check_choice, check_device, check_int
from .backends import BACKENDS, check_cpu_backend, use_cpu_kernel
from .gemm import block_matmul, linear_gemm
from .quant import (
    BLOCK,
    BlockQuant,
    check_block_size,
    check_dtype,
    check_layer_input,
    check_seed,
    dequantize_raw,
    fake_quantize_raw,
    quantize_raw,
)
from .targets import check_model_and_modules, is_activation, is_norm, linear_weight, replace_modules

_ATTN_INPUT_NAMES = ("c_attn", "q_proj", "k_proj", "v_proj", "qkv", "query", "key", "value", "qkv_proj")


@dataclass
class QuantState:
    """What one Jetfire operator needs at run time: block size, stochastic-rounding generator, output mode.

    Parameters
    ----------
    block : int
        Block side.
    generator : torch.Generator
        Noise of the stochastic rounding of gradients (seeded per layer; no global RNG).
    int8_output : bool
        Requantize the output per block (INT8 data flow) or keep it in floating point.
    backend : str, default "auto"
        Backend of the block GEMMs (see :func:`icml24.jetfire.block_matmul`); where it is the fused CPU
        kernel, quantization and dequantization run in the same extension.
    """

    block: int
    generator: torch.Generator
    int8_output: bool
    backend: str = "auto"


def _as_matrix(x: Tensor) -> Tensor:
    return x.reshape(-1, x.shape[-1]).to(torch.float32)


def _gen(st: QuantState, t: Tensor):
    return st.generator if st.generator.device == t.device else None


def _q(x2: Tensor, st: QuantState, rounding: str) -> BlockQuant:
    gen = _gen(st, x2) if rounding == "stochastic" else None
    return quantize_raw(x2, st.block, rounding, gen, st.backend)


def _fq(x2: Tensor, st: QuantState, rounding: str) -> tuple[BlockQuant, Tensor]:
    """``_q`` and the dequantized value (``dequantize_raw(_q(...))``), in one pass where the CPU kernel runs."""
    gen = _gen(st, x2) if rounding == "stochastic" else None
    return fake_quantize_raw(x2, st.block, rounding, gen, st.backend)


class _JetfireLinearFn(torch.autograd.Function):
    """Y = X W^T + b with INT8 block GEMMs in the forward, input-gradient and weight-gradient passes."""

    @staticmethod
    def forward(ctx, x, weight, bias, st: QuantState):
        with torch.autocast(x.device.type, enabled=False):  # INT8 GEMMs and FP32 math, whatever the caller's
            return _JetfireLinearFn._forward(ctx, x, weight, bias, st)

    @staticmethod
    def _forward(ctx, x, weight, bias, st: QuantState):
        x2 = _as_matrix(x)
        qx = _q(x2, st, "nearest")
        qw = _q(weight.to(torch.float32), st, "nearest")  # weights requantized from the FP master copy
        # + bias and the INT8 requantization in the GEMM's epilogue where the CPU kernel runs
        y = linear_gemm(qx, qw, bias=bias, requantize="nearest" if st.int8_output else None, backend=st.backend)
        ctx.save_for_backward(qx.data, qx.scales, qw.data, qw.scales)
        ctx.meta = (qx.shape, qw.shape, st, bias is not None, x.dtype, weight.dtype, x.shape)
        return y.reshape(*x.shape[:-1], weight.shape[0]).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        xd, xs, wd, ws = ctx.saved_tensors
        xshape, wshape, st, has_bias, xdtype, wdtype, full = ctx.meta
        qx = BlockQuant._trusted(xd, xs, xshape, st.block)
        qw = BlockQuant._trusted(wd, ws, wshape, st.block)
        g2 = _as_matrix(g)
        qg = _q(g2, st, "stochastic")
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = linear_gemm(qg, qw.t(), requantize="stochastic", generator=_gen(st, g2), backend=st.backend)
            gx = gx.reshape(full).to(xdtype)
        if ctx.needs_input_grad[1]:
            gw = block_matmul(qg.t(), qx.t(), backend=st.backend).to(
                wdtype
            )  # FP output, kept high precision for the optimizer
        if has_bias and ctx.needs_input_grad[2]:
            gb = g2.sum(0).to(wdtype)
        return gx, gw, gb, None


class _JetfireOpFn(torch.autograd.Function):
    """An element-wise or row-wise operator (norm, activation) with INT8 input and output (Sec. 5.2)."""

    @staticmethod
    def forward(ctx, x, st: QuantState, fn, *params):
        with torch.autocast(x.device.type, enabled=False):  # FP32 math on the dequantized input
            return _JetfireOpFn._forward(ctx, x, st, fn, *params)

    @staticmethod
    def _forward(ctx, x, st: QuantState, fn, *params):
        qx, xd = _fq(_as_matrix(x), st, "nearest")
        xd = xd.reshape(x.shape)
        with torch.no_grad():
            y = fn(xd, *[p.to(torch.float32) for p in params])
        y2 = _as_matrix(y)
        if st.int8_output:
            y2 = _fq(y2, st, "nearest")[1]
        ctx.save_for_backward(qx.data, qx.scales)
        ctx.meta = (qx.shape, st, fn, x.shape, x.dtype)
        ctx.params = params  # parameters, not activations: held by reference
        return y2.reshape(y.shape).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        xd_, xs = ctx.saved_tensors
        xshape, st, fn, full, xdtype = ctx.meta
        xd = dequantize_raw(BlockQuant._trusted(xd_, xs, xshape, st.block), st.backend).reshape(full)
        xd.requires_grad_(True)
        with torch.autocast(xd.device.type, enabled=False):
            return _JetfireOpFn._backward(ctx, g, xd, st, fn, full, xdtype)

    @staticmethod
    def _backward(ctx, g, xd, st, fn, full, xdtype):
        gd = _fq(_as_matrix(g), st, "stochastic")[1].reshape(g.shape)
        params = [p.detach().to(torch.float32).requires_grad_(p.requires_grad) for p in ctx.params]
        with torch.enable_grad():
            y = fn(xd, *params)
            want = [xd] + [p for p in params if p.requires_grad]
            grads = list(torch.autograd.grad(y, want, gd))
        gx = _fq(_as_matrix(grads.pop(0)), st, "stochastic")[1]
        gx = gx.reshape(full).to(xdtype)
        out = [grads.pop(0).to(p.dtype) if q.requires_grad else None for p, q in zip(ctx.params, params)]
        return (gx, None, None, *out)


class JetfireLinear(nn.Module):
    """A linear layer whose three GEMMs run in INT8 with 32x32 block scales (Jetfire Sec. 5.1, Alg. 1).

    Forward: ``X`` and the FP32 master weight are quantized per block (round to nearest), ``Y = X W^T + b``
    by the block-scaled INT8 GEMM, optionally requantized to INT8. Backward: the output gradient is
    quantized per block with stochastic rounding; ``dX = G W`` is emitted as INT8 (stochastic rounding) and
    ``dW = G^T X`` in floating point. Only INT8 tensors and their scales are saved for the backward pass.

    Parameters
    ----------
    in_features, out_features : int
        Sizes, as in ``nn.Linear``; the weight is ``(out_features, in_features)``.
    bias : bool, default True
    block_size : int, default 32
        Block side (official ``qgroup_size_lin = 32``).
    int8_output : bool, default False
        Requantize the output per block (Jetfire's out-projection, FC1 and FC2 do; QKV does not).
    seed : int, default 0
        Seed of the stochastic-rounding generator.
    backend : {"auto", "triton", "torch", "cpu-vnni"}, default "auto"
        Backend of the three block GEMMs (:func:`icml24.jetfire.block_matmul`); ``"cpu-vnni"`` builds the
        fused CPU kernel now (a minute or two the first time, then cached) and also quantizes with it.
    device, dtype : optional
        Of the parameters.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        *,
        block_size: int = BLOCK,
        int8_output: bool = False,
        seed: int = 0,
        backend: str = "auto",
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        in_features = check_int(in_features, "in_features", min_val=1)
        out_features = check_int(out_features, "out_features", min_val=1)
        bias = check_bool(bias, "bias")
        self.block_size = check_block_size(block_size)
        self.int8_output = check_bool(int8_output, "int8_output")
        self.seed = check_seed(seed)
        self.backend = check_choice(backend, "backend", BACKENDS)
        device = None if device is None else check_device(device)
        dtype = None if dtype is None else check_dtype(dtype)
        if self.backend == "cpu-vnni":  # refuse early, with the fix, where the kernel cannot run
            probe = torch.zeros(0, 0, dtype=torch.int8, device=device)
            check_cpu_backend(BlockQuant._trusted(probe, torch.zeros(0, 0), (0, 0), self.block_size))
        self.in_features, self.out_features = in_features, out_features
        ref = nn.Linear(in_features, out_features, bias=bias, device=device, dtype=dtype)
        self.weight = ref.weight
        self.bias = ref.bias
        self._gen = None

    @classmethod
    def from_linear(
        cls,
        linear: nn.Module,
        *,
        block_size: int = BLOCK,
        int8_output: bool = False,
        seed: int = 0,
        backend: str = "auto",
    ) -> "JetfireLinear":
        """A Jetfire copy of an ``nn.Linear`` (or a transformers ``Conv1D``, whose weight is ``(in, out)``).

        Parameters
        ----------
        linear : nn.Linear or transformers.pytorch_utils.Conv1D
            The layer to copy; it is not modified.
        block_size : int, default 32
        int8_output : bool, default False
        seed : int, default 0
        backend : {"auto", "triton", "torch", "cpu-vnni"}, default "auto"

        Returns
        -------
        JetfireLinear
            With copied weight (``(out, in)`` orientation) and bias.
        """
        w, b = linear_weight(linear, "linear")
        layer = cls(
            w.shape[1],
            w.shape[0],
            bias=b is not None,
            block_size=block_size,
            int8_output=int8_output,
            seed=seed,
            backend=backend,
            device=w.device,
            dtype=w.dtype,
        )
        with torch.no_grad():
            layer.weight.copy_(w)
            if b is not None:
                layer.bias.copy_(b)
        layer.weight.requires_grad_(linear.weight.requires_grad)
        if b is not None:
            layer.bias.requires_grad_(linear.bias.requires_grad)
        return layer

    def __getstate__(self):
        state = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__
        return {**state, "_gen": None}  # a generator is not copied: the copy restarts from its seed

    def _state(self, device) -> QuantState:
        if self._gen is None or self._gen.device != torch.device(device):
            self._gen = torch.Generator(device=device).manual_seed(self.seed)
        return QuantState(self.block_size, self._gen, self.int8_output, getattr(self, "backend", "auto"))

    def forward(self, x: Tensor) -> Tensor:
        """Apply the layer.

        Parameters
        ----------
        x : torch.Tensor
            ``(..., in_features)``, finite floating.

        Returns
        -------
        torch.Tensor
            ``(..., out_features)`` in ``x``'s dtype.
        """
        x = check_layer_input(x, (self.in_features,))
        return _JetfireLinearFn.apply(x, self.weight, self.bias, self._state(x.device))

    def extra_repr(self) -> str:
        """The sizes and settings, for ``print(model)``.

        Returns
        -------
        str
        """
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
            f"block_size={self.block_size}, int8_output={self.int8_output}"
        )


class JetfireOp(nn.Module):
    """Wrap a norm or activation module so that it takes and emits INT8 with block scales (Sec. 5.2).

    The input is quantized per block (round to nearest) and only its INT8 data and scales are saved; the
    operator runs in FP32 on the dequantized input; the output is requantized. In the backward pass the
    incoming gradient is quantized with stochastic rounding, the operator's vector-Jacobian product is
    recomputed from the saved INT8 input, and the input gradient is emitted as INT8 (stochastic rounding),
    as the official Triton GELU / LayerNorm backward kernels do. Where the fused CPU kernel runs (see
    :mod:`icml24.jetfire.cpu`), GPT-2's ``NewGELUActivation`` (the tanh GELU as seven element-wise passes) is
    computed by torch's one-pass ``gelu(approximate="tanh")``, the same function to FP32 rounding.

    Parameters
    ----------
    module : nn.Module
        LayerNorm, RMSNorm or an activation; deep-copied, so the user's module is not shared.
    block_size : int, default 32
    seed : int, default 0
        Seed of the stochastic-rounding generator.
    """

    def __init__(self, module: nn.Module, *, block_size: int = BLOCK, seed: int = 0) -> None:
        super().__init__()
        if not isinstance(module, nn.Module) or not (is_norm(module) or is_activation(module)):
            what = type(module).__name__ if isinstance(module, nn.Module) else f"a {type(module).__name__}"
            raise InputError(f"module must be a LayerNorm, an RMSNorm or an element-wise activation, got {what}")
        self.block_size = check_block_size(block_size)
        self.seed = check_seed(seed)
        # the trailing sizes the operator takes: a norm's normalized_shape (or its weight's shape)
        shape = getattr(module, "normalized_shape", None)
        if shape is None and is_norm(module) and isinstance(getattr(module, "weight", None), Tensor):
            shape = module.weight.shape
        self._trailing = (shape,) if isinstance(shape, int) else tuple(shape or ())
        self.inner = copy.deepcopy(module)
        self._names = [n for n, _ in self.inner.named_parameters()]
        self._gen = None

    def __getstate__(self):
        state = super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__
        return {**state, "_gen": None}  # a generator is not copied: the copy restarts from its seed

    def _fn(self, x: Tensor, *params: Tensor) -> Tensor:
        return torch.func.functional_call(self.inner, dict(zip(self._names, params)), (x,))

    def forward(self, x: Tensor) -> Tensor:
        """Apply the wrapped operator with INT8 input and output.

        Parameters
        ----------
        x : torch.Tensor
            Finite floating tensor.

        Returns
        -------
        torch.Tensor
            Same dtype as ``x``.
        """
        x = check_layer_input(x, getattr(self, "_trailing", ()))
        if self._gen is None or self._gen.device != x.device:
            self._gen = torch.Generator(device=x.device).manual_seed(self.seed)
        st = QuantState(self.block_size, self._gen, True)
        params = [p for _, p in self.inner.named_parameters()]
        fn = self._fn
        if type(self.inner).__name__ == "NewGELUActivation" and use_cpu_kernel(x, self.block_size, "auto"):
            fn = _gelu_tanh
        return _JetfireOpFn.apply(x, st, fn, *params)


def _gelu_tanh(x: Tensor, *params: Tensor) -> Tensor:
    return torch.nn.functional.gelu(x, approximate="tanh")


def convert(
    model: nn.Module,
    *,
    block_size: int = BLOCK,
    seed: int = 0,
    modules: Sequence[str] | None = None,
) -> nn.Module:
    """A Jetfire copy of a transformer: INT8 linear layers and INT8-in/out norms and activations.

    Works on a user's GPT-2-style (``Conv1D``, LayerNorm, GELU) or Llama-style (``nn.Linear``, RMSNorm,
    SiLU) Hugging Face model, or any module built of these. The linear layers (except the LM head) become
    :class:`JetfireLinear` (INT8 output except for the QKV projections, which feed the FP attention core, as
    in the official ``qmodel.py``); the norms and activations inside the numbered blocks become
    :class:`JetfireOp`. The attention core, residual stream, embeddings, final norm and LM head stay FP.

    Parameters
    ----------
    model : nn.Module
        The model; it is deep-copied and left unchanged.
    block_size : int, default 32
        Block side (official 32).
    seed : int, default 0
        Seed of the stochastic rounding (layer ``i`` uses ``seed + i``).
    modules : sequence of str, optional
        Names of the submodules to convert; by default every target of
        :func:`~icml24.jetfire.targets.jetfire_targets`.

    Returns
    -------
    nn.Module
        The converted copy, in the mode (train/eval) of ``model``.

    Raises
    ------
    InputError
        If ``model`` is not a module or has no linear layer, a named module is missing or of an unsupported
        type, or ``block_size`` is not a power of two.
    """
    block_size = check_block_size(block_size)
    seed = check_seed(seed)
    targets = check_model_and_modules(model, modules, "all")
    new = copy.deepcopy(model)
    order = {n: i for i, n in enumerate(targets)}

    def factory(name: str, old: nn.Module) -> nn.Module:
        s = seed + order[name]
        if targets[name] == "linear":
            leaf = name.rsplit(".", 1)[-1]
            return JetfireLinear.from_linear(
                old, block_size=block_size, int8_output=leaf not in _ATTN_INPUT_NAMES, seed=s
            )
        return JetfireOp(old, block_size=block_size, seed=s)

    return replace_modules(new, factory, list(targets))


__all__ = ["JetfireLinear", "JetfireOp", "convert", "QuantState"]
