"""Per-block INT8 quantization of Jetfire (Xi et al., ICML 2024, Sec. 4).

A 2-D tensor is cut into ``B x B`` blocks (``B = 32`` in the official code, ``QArgs.qgroup_size_lin``); each
block gets the scale ``s = max|X_block| / 127`` and ``q = round(X / s)`` in INT8 (Eq. 1 of the paper). Rounding
is to nearest even in the forward pass and stochastic for gradients (official ``quantize_stochastic``: uniform
noise in (-0.5, 0.5) added to ``|x| / s``, sign restored, clamped, rounded). Square blocks make the transpose of
a quantized tensor a quantized tensor with the same blocks, which the backward GEMMs use.

The block-scaled GEMM that consumes these tensors is :mod:`icml24.jetfire.gemm`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..errors import InputError
from ..validation import check_choice, check_int, check_tensor, check_torch_generator
from .backends import kernel_seed, use_cpu_kernel
from .cpu import vnni_dequantize, vnni_fake_quantize, vnni_quantize

BLOCK = 32  # official QArgs.qgroup_size_lin = qgroup_size_non = 32
QMAX = 127.0
ROUNDINGS = ("nearest", "stochastic")
GRANULARITIES = ("block", "tensor", "token", "channel")


def check_block_size(block_size, name: str = "block_size") -> int:
    """A block size: a power of two between 1 and 1024.

    Parameters
    ----------
    block_size : int
        The value to check.
    name : str, default "block_size"
        The argument's name for the message.

    Returns
    -------
    int
        ``block_size``.

    Raises
    ------
    InputError
        If it is not an integer power of two in [1, 1024].
    """
    b = check_int(block_size, name, min_val=1, max_val=1024)
    if b & (b - 1):
        raise InputError(f"{name} must be a power of two (official 32), got {b}")
    return b


def check_float_tensor(x, name: str, ndim=(2,)) -> Tensor:
    """A finite floating tensor (float16, bfloat16, float32 or float64) of the given dimensions.

    Parameters
    ----------
    x : torch.Tensor
        The value to check.
    name : str
        The argument's name for the message.
    ndim : tuple of int, default (2,)
        Allowed dimensions.

    Returns
    -------
    torch.Tensor
        ``x``.

    Raises
    ------
    InputError
        If ``x`` is not a finite floating tensor of those dimensions.
    """
    x = check_tensor(x, name, ndim=ndim, finite=False)
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise InputError(f"{name} must be float16, bfloat16, float32 or float64, got {x.dtype}")
    with torch.no_grad():  # checks of values must not record autograd nodes on x
        check_tensor(x, name)
        if x.dtype == torch.float64 and float(x.abs().max()) > torch.finfo(torch.float32).max:
            raise InputError(f"{name} has entries beyond float32's range, which the INT8 scales cannot hold")
    return x


def check_layer_input(x, trailing: tuple = ()) -> Tensor:
    """``x`` of a layer's forward: a non-empty, finite floating tensor of one or more dimensions ending in ``trailing``.

    Parameters
    ----------
    x : torch.Tensor
    trailing : tuple of int, default ()
        The sizes its last dimensions must have (``(in_features,)``, a norm's ``normalized_shape``).

    Returns
    -------
    torch.Tensor
        ``x``.
    """
    x = check_float_tensor(x, "x", ndim=None)
    k = len(trailing)
    if x.dim() < max(k, 1) or tuple(x.shape[x.dim() - k :]) != tuple(trailing):
        want = ", ".join(["..."] + [str(t) for t in trailing])
        raise InputError(f"x must have shape ({want}), got {tuple(x.shape)}")
    return x


def check_seed(seed, name: str = "seed") -> int:
    """A seed for a layer's stochastic-rounding generator: an integer in [0, 2^63] (layer ``i`` of ``convert``
    uses ``seed + i``, which ``torch.Generator.manual_seed`` must still take).

    Parameters
    ----------
    seed : int
    name : str, default "seed"

    Returns
    -------
    int
    """
    return check_int(seed, name, min_val=0, max_val=2**63)


def check_generator(generator, name: str = "generator", device=None):
    """A ``torch.Generator`` or None (on the device of the tensors it draws noise for).

    Parameters
    ----------
    generator : torch.Generator or None
        The value to check.
    name : str, default "generator"
        The argument's name for the message.
    device : torch.device, optional
        Where the noise is drawn; the generator must live on the same kind of device.

    Returns
    -------
    torch.Generator or None
        ``generator``.

    Raises
    ------
    InputError
        If it is neither, or lives on another kind of device than ``device``.
    """
    generator = check_torch_generator(generator, name)
    if generator is not None and device is not None and generator.device.type != torch.device(device).type:
        raise InputError(f"{name} is on {generator.device}, the tensors on {device}: make it on their device")
    return generator


def check_dtype(dtype, name: str = "dtype") -> torch.dtype:
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise InputError(f"{name} must be a floating torch.dtype (e.g. torch.float32), got {dtype!r}")
    return dtype


def _round(y: Tensor, rounding: str, generator: torch.Generator | None) -> Tensor:
    if rounding == "nearest":
        return torch.round(y)  # round half to even, as the official kernels' rint
    return torch.sign(y) * torch.round(y.abs() + uniform_noise(y.shape, generator, y.device))


def uniform_noise(shape, generator: torch.Generator | None, device) -> Tensor:
    """Uniform noise in (-0.5, 0.5) with 16-bit resolution, two draws per 32-bit random integer.

    Cheaper than ``torch.rand`` on CPU; the rounding bias it leaves is below 2^-17 of a step.

    Parameters
    ----------
    shape : tuple of int
    generator : torch.Generator or None
    device : torch.device

    Returns
    -------
    torch.Tensor
        FP32 of ``shape``.
    """
    n = 1
    for d in shape:
        n *= int(d)
    r = torch.randint(-(2**31), 2**31 - 1, ((n + 1) // 2,), generator=generator, device=device, dtype=torch.int32)
    return ((r.view(torch.int16)[:n].to(torch.float32) + 0.5) / 65536.0).view(shape)


@dataclass(frozen=True)
class BlockQuant:
    """An INT8 tensor with one scale per ``block x block`` tile: the pair Jetfire's operators exchange.

    Parameters
    ----------
    data : torch.Tensor
        INT8, shape ``(Mp, Np)``: the original ``(M, N)`` zero-padded to multiples of ``block``.
    scales : torch.Tensor
        FP32, shape ``(Mp / block, Np / block)``; 0 for an all-zero block.
    shape : tuple of int
        The unpadded ``(M, N)``.
    block : int
        The block size.
    """

    data: Tensor
    scales: Tensor
    shape: tuple[int, int]
    block: int

    def __post_init__(self) -> None:
        """Check that ``data``, ``scales``, ``shape`` and ``block`` describe one quantized matrix.

        Raises
        ------
        InputError
            If ``data`` is not an INT8 matrix zero-padded from ``shape`` to multiples of ``block``, or ``scales``
            is not a finite, non-negative FP32 matrix with one entry per block of ``data`` on its device.
        """
        block = check_block_size(self.block, "block")
        data = check_tensor(self.data, "data", ndim=2, dtype="any", allow_empty=True)
        if data.dtype != torch.int8:
            raise InputError(f"data must be int8, got {data.dtype}")
        if isinstance(self.shape, (str, bytes)) or not hasattr(self.shape, "__len__") or len(self.shape) != 2:
            raise InputError(f"shape must be the unpadded (rows, columns), got {self.shape!r}")
        shape = tuple(check_int(v, "shape", min_val=0) for v in self.shape)
        padded = tuple(-(-v // block) * block for v in shape)
        if data.shape != padded:
            raise InputError(f"data has shape {tuple(data.shape)}, shape {shape} in blocks of {block} needs {padded}")
        scales = check_tensor(self.scales, "scales", shape=(padded[0] // block, padded[1] // block), allow_empty=True)
        if scales.dtype != torch.float32 or scales.device != data.device:
            raise InputError(f"scales must be float32 on {data.device}, got {scales.dtype} on {scales.device}")
        if scales.numel() and bool((scales < 0).any()):
            raise InputError("scales must be non-negative (absmax / 127 per block)")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "block", block)

    @classmethod
    def _trusted(cls, data: Tensor, scales: Tensor, shape: tuple[int, int], block: int) -> "BlockQuant":
        """The pair without the checks of ``__post_init__``, for operands this package made (inner loops)."""
        q = object.__new__(cls)
        for k, v in (("data", data), ("scales", scales), ("shape", shape), ("block", block)):
            object.__setattr__(q, k, v)
        return q

    def dequantize(self, dtype: torch.dtype = torch.float32) -> Tensor:
        """The real tensor ``q * s`` per block, cropped to ``shape``.

        Parameters
        ----------
        dtype : torch.dtype, default torch.float32

        Returns
        -------
        torch.Tensor
            Shape ``shape``.
        """
        dtype = check_dtype(dtype)
        b = self.block
        s = self.scales.repeat_interleave(b, 0).repeat_interleave(b, 1)
        return (self.data.to(torch.float32) * s)[: self.shape[0], : self.shape[1]].to(dtype)

    def t(self) -> "BlockQuant":
        """The transpose: square blocks transpose into the blocks of the transpose (no requantization).

        On the CPU the data and scales are transposed views (no copy), which the GEMM backends read through their
        strides; on CUDA they are contiguous copies, the layout the Triton kernel was measured with.

        Returns
        -------
        BlockQuant
        """
        data, scales = self.data.t(), self.scales.t()
        if data.is_cuda:
            data, scales = data.contiguous(), scales.contiguous()
        return BlockQuant._trusted(data, scales, self.shape[::-1], self.block)

    def nbytes(self) -> int:
        """Bytes held: the INT8 data and the FP32 scales.

        Returns
        -------
        int
        """
        return self.data.numel() * self.data.element_size() + self.scales.numel() * self.scales.element_size()

    def to_autograd(self) -> tuple[Tensor, Tensor]:
        """The pair as tensors autograd accepts across ``autograd.Function`` boundaries.

        Autograd tracks floating dtypes only, so the INT8 data is viewed (not copied) as ``float8_e4m3fn``,
        as the official ``qmodel.py`` does; :meth:`from_autograd` views it back.

        Returns
        -------
        (torch.Tensor, torch.Tensor)
            The data viewed as ``float8_e4m3fn`` and the scales.
        """
        return self.data.view(torch.float8_e4m3fn), self.scales

    @classmethod
    def from_autograd(cls, data: Tensor, scales: Tensor, shape: tuple[int, int], block: int) -> "BlockQuant":
        """Rebuild the pair from :meth:`to_autograd`'s tensors.

        Parameters
        ----------
        data : torch.Tensor
            ``float8_e4m3fn`` view of the INT8 data.
        scales : torch.Tensor
            The block scales.
        shape : tuple of int
            The unpadded shape.
        block : int
            The block size.

        Returns
        -------
        BlockQuant

        Raises
        ------
        InputError
            If ``data`` is not one byte per element or the scales do not tile it.
        """
        if not isinstance(data, Tensor) or data.element_size() != 1:
            raise InputError("data must be the one-byte view made by BlockQuant.to_autograd")
        return cls(data.view(torch.int8), scales, shape, block)


def _pad_to(x: Tensor, rows: int, cols: int) -> Tensor:
    pr, pc = rows - x.shape[0], cols - x.shape[1]
    return torch.nn.functional.pad(x, (0, pc, 0, pr)) if pr or pc else x


def _quantize_blocks(x: Tensor, block: int, rounding: str, generator) -> BlockQuant:
    m, n = x.shape
    mp, np_ = -(-m // block) * block, -(-n // block) * block
    xp = _pad_to(x.to(torch.float32), mp, np_)
    tiles = xp.view(mp // block, block, np_ // block, block)
    scales = tiles.abs().amax(dim=(1, 3)) / QMAX
    safe = torch.where(scales > 0, scales, torch.ones_like(scales))
    y = tiles / safe[:, None, :, None]
    q = _round(y, rounding, generator).clamp_(-128, 127).to(torch.int8)
    return BlockQuant._trusted(q.view(mp, np_), scales, (m, n), block)


def quantize_raw(x: Tensor, block: int, rounding: str, generator=None, backend: str = "torch") -> BlockQuant:
    """:func:`quantize_blocks` without argument checks, for the layers' inner loops.

    Parameters
    ----------
    x : torch.Tensor
        Floating matrix.
    block : int
    rounding : {"nearest", "stochastic"}
    generator : torch.Generator, optional
    backend : str, default "torch"
        One of ``BACKENDS``: where :func:`block_matmul` would run the fused CPU kernel, the quantization runs
        in the same extension (same INT8 data with round to nearest; stochastic noise drawn from a hash seeded
        by one draw of ``generator``).

    Returns
    -------
    BlockQuant
    """
    if backend in ("auto", "cpu-vnni") and use_cpu_kernel(x, block, backend):
        data, scales = vnni_quantize(x, block, rounding == "stochastic", kernel_seed(rounding, generator, x.device))
        return BlockQuant._trusted(data, scales, (int(x.shape[0]), int(x.shape[1])), block)
    return _quantize_blocks(x, block, rounding, generator)


def fake_quantize_raw(
    x: Tensor, block: int, rounding: str, generator=None, backend: str = "torch"
) -> tuple[BlockQuant, Tensor]:
    """:func:`quantize_raw` and the dequantized FP32 tensor (one pass by the CPU extension where it runs).

    Equal to ``q = quantize_raw(...)`` followed by ``dequantize_raw(q, backend)``, the same generator draws
    included.

    Parameters
    ----------
    x : torch.Tensor
        Floating matrix.
    block : int
    rounding : {"nearest", "stochastic"}
    generator : torch.Generator, optional
    backend : str, default "torch"

    Returns
    -------
    (BlockQuant, torch.Tensor)
    """
    if backend in ("auto", "cpu-vnni") and use_cpu_kernel(x, block, backend):
        seed = kernel_seed(rounding, generator, x.device)
        data, scales, deq = vnni_fake_quantize(x, block, rounding == "stochastic", seed)
        return BlockQuant._trusted(data, scales, (int(x.shape[0]), int(x.shape[1])), block), deq
    q = quantize_raw(x, block, rounding, generator, backend)
    return q, dequantize_raw(q, backend)


def dequantize_raw(q: BlockQuant, backend: str = "torch") -> Tensor:
    """``q.dequantize()`` (FP32), by the CPU extension where :func:`block_matmul` would use it.

    Parameters
    ----------
    q : BlockQuant
    backend : str, default "torch"

    Returns
    -------
    torch.Tensor
    """
    if backend in ("auto", "cpu-vnni") and use_cpu_kernel(q.data, q.block, backend):
        return vnni_dequantize(q.data, q.scales, q.block, q.shape)
    return q.dequantize()


def quantize_blocks(
    x: Tensor, block_size: int = BLOCK, *, rounding: str = "nearest", generator: torch.Generator | None = None
) -> BlockQuant:
    """Quantize a matrix per ``block_size x block_size`` block (Jetfire Eq. 1).

    Parameters
    ----------
    x : torch.Tensor
        Finite floating matrix ``(M, N)``; any ``M, N`` (zero-padded to multiples of the block).
    block_size : int, default 32
        Side of the square blocks, a power of two; 32 is the official ``qgroup_size``.
    rounding : {"nearest", "stochastic"}, default "nearest"
        Round half to even (forward) or stochastic rounding (gradients, official ``quantize_stochastic``).
    generator : torch.Generator, optional
        Source of the stochastic-rounding noise.

    Returns
    -------
    BlockQuant
        INT8 data, FP32 scales ``absmax / 127`` (0 for an all-zero block), the unpadded shape.

    Raises
    ------
    InputError
        If ``x`` is not a finite floating matrix, ``block_size`` is not a power of two or ``rounding`` is unknown.
    """
    x = check_float_tensor(x, "x")
    b = check_block_size(block_size)
    rounding = check_choice(rounding, "rounding", ROUNDINGS)
    return _quantize_blocks(x, b, rounding, check_generator(generator, device=x.device))


def fake_quantize(
    x: Tensor,
    granularity: str = "block",
    block_size: int = BLOCK,
    *,
    rounding: str = "nearest",
    generator: torch.Generator | None = None,
) -> Tensor:
    """Quantize to INT8 and back at a given granularity (the comparison of Jetfire Sec. 4, Fig. 3).

    Parameters
    ----------
    x : torch.Tensor
        Finite floating matrix ``(tokens, channels)``.
    granularity : {"block", "tensor", "token", "channel"}, default "block"
        One scale per ``block_size``-square block (Jetfire), for the whole tensor, per row (token,
        SwitchBack's activations) or per column (channel).
    block_size : int, default 32
        Block side for ``"block"``.
    rounding : {"nearest", "stochastic"}, default "nearest"
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor
        The dequantized tensor, same shape and dtype as ``x``.

    Raises
    ------
    InputError
        On a non-finite or non-matrix ``x``, an unknown granularity or rounding, a bad block size.
    """
    x = check_float_tensor(x, "x")
    granularity = check_choice(granularity, "granularity", GRANULARITIES)
    b = check_block_size(block_size)
    rounding = check_choice(rounding, "rounding", ROUNDINGS)
    return _fake_quantize(x, granularity, b, rounding, check_generator(generator, device=x.device))


def _fake_quantize(x: Tensor, granularity: str, block: int, rounding: str, generator) -> Tensor:
    if granularity == "block":
        return _quantize_blocks(x, block, rounding, generator).dequantize(x.dtype)
    xf = x.to(torch.float32)
    if granularity == "tensor":
        s = xf.abs().amax() / QMAX
    elif granularity == "token":
        s = xf.abs().amax(dim=1, keepdim=True) / QMAX
    else:
        s = xf.abs().amax(dim=0, keepdim=True) / QMAX
    safe = torch.where(s > 0, s, torch.ones_like(s))
    q = _round(xf / safe, rounding, generator).clamp_(-128, 127)
    return (q * s).to(x.dtype)


def relative_error(x: Tensor, granularity: str = "block", block_size: int = BLOCK) -> float:
    """Relative quantization error ``||Q(x) - x||_F / ||x||_F`` with round-to-nearest.

    Parameters
    ----------
    x : torch.Tensor
        Finite floating matrix, not all zero.
    granularity : {"block", "tensor", "token", "channel"}, default "block"
    block_size : int, default 32

    Returns
    -------
    float

    Raises
    ------
    InputError
        On bad ``x`` (also when it is all zero), granularity or block size.
    """
    x = check_float_tensor(x, "x")
    granularity = check_choice(granularity, "granularity", GRANULARITIES)
    b = check_block_size(block_size)
    xf = x.to(torch.float64)
    norm = float(xf.norm())
    if norm == 0.0:
        raise InputError("x is all zero: its relative error is undefined")
    return float((_fake_quantize(x.float(), granularity, b, "nearest", None).double() - xf).norm()) / norm


__all__ = [
    "BLOCK",
    "BlockQuant",
    "quantize_blocks",
    "fake_quantize",
    "relative_error",
    "check_block_size",
]
