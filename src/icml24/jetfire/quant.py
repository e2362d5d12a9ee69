"""Per-block INT8 quantization and the block-scaled INT8 GEMM of Jetfire (Xi et al., ICML 2024, Sec. 4-5).

A 2-D tensor is cut into ``B x B`` blocks (``B = 32`` in the official code, ``QArgs.qgroup_size_lin``); each
block gets the scale ``s = max|X_block| / 127`` and ``q = round(X / s)`` in INT8 (Eq. 1 of the paper). Rounding
is to nearest even in the forward pass and stochastic for gradients (official ``quantize_stochastic``: uniform
noise in (-0.5, 0.5) added to ``|x| / s``, sign restored, clamped, rounded). Square blocks make the transpose of
a quantized tensor a quantized tensor with the same blocks, which the backward GEMMs use.

The GEMM ``Y = A B^T`` (Sec. 5.1) accumulates the INT8 x INT8 products of each 32-wide K chunk in INT32
(``torch._int_mm``: oneDNN VNNI kernels on CPUs, cuBLASLt on GPUs), rescales them by ``s_A[I, k] s_B[J, k]``
and accumulates in FP32; its output is FP32 or requantized per block to INT8.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..errors import InputError
from ..validation import check_choice, check_int, check_tensor
from .cpu import MIN_BLOCK as CPU_MIN_BLOCK
from .cpu import (
    cpu_kernel_usable,
    load_cpu_kernel,
    vnni_block_matmul,
    vnni_block_matmul_epilogue,
    vnni_dequantize,
    vnni_fake_quantize,
    vnni_quantize,
)
from .gpu import triton_available, triton_block_matmul

BLOCK = 32  # official QArgs.qgroup_size_lin = qgroup_size_non = 32
QMAX = 127.0
ROUNDINGS = ("nearest", "stochastic")
GRANULARITIES = ("block", "tensor", "token", "channel")
BACKENDS = ("auto", "triton", "torch", "cpu-vnni")


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


def _check_float_tensor(x, name: str, ndim=(2,)) -> Tensor:
    x = check_tensor(x, name, ndim=ndim)
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise InputError(f"{name} must be float16, bfloat16, float32 or float64, got {x.dtype}")
    return x


def _check_generator(generator, name: str = "generator"):
    if generator is not None and not isinstance(generator, torch.Generator):
        raise InputError(f"{name} must be a torch.Generator or None, got {type(generator).__name__}")
    return generator


def _round(y: Tensor, rounding: str, generator: torch.Generator | None) -> Tensor:
    if rounding == "nearest":
        return torch.round(y)  # round half to even, as the official kernels' rint
    return torch.sign(y) * torch.round(y.abs() + uniform_noise(y.shape, generator, y.device))


def uniform_noise(shape, generator: torch.Generator | None, device) -> Tensor:
    """Uniform noise in (-0.5, 0.5) with 16-bit resolution, two draws per 32-bit random integer.

    Four times cheaper than ``torch.rand`` on CPU; the rounding bias it leaves is below 2^-17 of a step.

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
        if self.data.is_cuda:
            return BlockQuant(self.data.t().contiguous(), self.scales.t().contiguous(), self.shape[::-1], self.block)
        return BlockQuant(self.data.t(), self.scales.t(), self.shape[::-1], self.block)

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
        block = check_block_size(block, "block")
        if not isinstance(scales, Tensor) or tuple(scales.shape) != (data.shape[0] // block, data.shape[1] // block):
            raise InputError("scales must have one entry per block of data")
        return cls(data.view(torch.int8), scales, (int(shape[0]), int(shape[1])), block)


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
    return BlockQuant(q.view(mp, np_), scales, (m, n), block)


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
        data, scales = vnni_quantize(x, block, rounding == "stochastic", _kernel_seed(rounding, generator, x.device))
        return BlockQuant(data, scales, (int(x.shape[0]), int(x.shape[1])), block)
    return _quantize_blocks(x, block, rounding, generator)


def _kernel_seed(rounding: str, generator, device) -> int:
    """The CPU kernel's noise seed: one draw of ``generator`` for stochastic rounding, none for round to nearest."""
    if rounding != "stochastic":
        return 0
    return int(torch.randint(-(2**62), 2**62, (1,), generator=generator, device=device))


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
        seed = _kernel_seed(rounding, generator, x.device)
        data, scales, deq = vnni_fake_quantize(x, block, rounding == "stochastic", seed)
        return BlockQuant(data, scales, (int(x.shape[0]), int(x.shape[1])), block), deq
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
    x = _check_float_tensor(x, "x")
    b = check_block_size(block_size)
    rounding = check_choice(rounding, "rounding", ROUNDINGS)
    return _quantize_blocks(x, b, rounding, _check_generator(generator))


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
    x = _check_float_tensor(x, "x")
    granularity = check_choice(granularity, "granularity", GRANULARITIES)
    b = check_block_size(block_size)
    rounding = check_choice(rounding, "rounding", ROUNDINGS)
    return _fake_quantize(x, granularity, b, rounding, _check_generator(generator))


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
    x = _check_float_tensor(x, "x")
    granularity = check_choice(granularity, "granularity", GRANULARITIES)
    b = check_block_size(block_size)
    xf = x.to(torch.float64)
    norm = float(xf.norm())
    if norm == 0.0:
        raise InputError("x is all zero: its relative error is undefined")
    return float((_fake_quantize(x.float(), granularity, b, "nearest", None).double() - xf).norm()) / norm


def _int_mm(a: Tensor, b: Tensor) -> Tensor:
    """INT8 (M, K) x INT8 (K, N) -> INT32, exact, on CPU (oneDNN) or CUDA (cuBLASLt)."""
    return torch._int_mm(a, b)


def block_matmul(
    a: BlockQuant,
    b: BlockQuant,
    *,
    out: str = "float",
    rounding: str = "nearest",
    generator: torch.Generator | None = None,
    backend: str = "auto",
):
    """The block-scaled INT8 GEMM ``Y = A B^T`` of Jetfire Sec. 5.1.

    For every K chunk ``k`` of one block's width, ``torch._int_mm`` computes the exact INT32 products of
    the INT8 operands; each output block ``(I, J)`` is rescaled by ``s_A[I, k] s_B[J, k]`` and accumulated in
    FP32. The result equals ``dequantize(A) @ dequantize(B)^T`` up to FP32 rounding.

    Parameters
    ----------
    a : BlockQuant
        ``(M, K)``.
    b : BlockQuant
        ``(N, K)`` (e.g. a weight in ``nn.Linear``'s ``(out, in)`` orientation).
    out : {"float", "int8"}, default "float"
        FP32 output, or requantized per block (the fused requantization of the official kernels; on the
        fused CPU kernel it runs in the GEMM's epilogue, bit for bit what quantizing the FP32 output gives).
    rounding : {"nearest", "stochastic"}, default "nearest"
        Rounding of the INT8 output (stochastic for the input-gradient GEMM).
    generator : torch.Generator, optional
        Noise of stochastic rounding.
    backend : {"auto", "triton", "torch", "cpu-vnni"}, default "auto"
        ``"triton"``: one fused Triton kernel (CUDA, blocks of 32 to 128, as the official kernels);
        ``"cpu-vnni"``: one fused C++ AVX512-VNNI kernel (CPU, blocks that are multiples of 32; compiled on
        first use, a minute or two, then cached, see :mod:`icml24.jetfire.cpu`); ``"torch"``: one
        ``torch._int_mm`` per K chunk (CPU and CUDA); ``"auto"``: Triton where it runs, the CPU kernel where
        it is already built (or ``ICML24_JETFIRE_CPU_KERNEL=1`` asks to build it), else ``"torch"``.

    Returns
    -------
    torch.Tensor or BlockQuant
        FP32 ``(M, N)``, or its per-block INT8 quantization.

    Raises
    ------
    InputError
        If the operands are not :class:`BlockQuant`, differ in block size or inner dimension, or live on
        different devices, or ``backend="triton"`` / ``"cpu-vnni"`` cannot run on them (the message says
        what to do).
    """
    _check_operands(a, b)
    out = check_choice(out, "out", ("float", "int8"))
    rounding = check_choice(rounding, "rounding", ROUNDINGS)
    backend = _check_backend(a, backend)
    if out == "int8" and _fused_epilogue(a, b, backend):  # requantized in the CPU kernel's epilogue
        generator = _check_generator(generator)
        data, scales = vnni_block_matmul_epilogue(
            a.data,
            a.scales,
            b.data,
            b.scales,
            a.block,
            (a.shape[0], b.shape[0]),
            rounding=rounding,
            seed=_kernel_seed(rounding, generator, a.data.device),
            out="int8",
        )
        return BlockQuant(data, scales, (a.shape[0], b.shape[0]), a.block)
    y = _block_matmul(a, b, backend)
    if out == "float":
        return y
    return quantize_raw(y, a.block, rounding, _check_generator(generator), backend)


def _check_operands(a, b) -> None:
    for name, v in (("a", a), ("b", b)):
        if not isinstance(v, BlockQuant):
            raise InputError(f"{name} must be a BlockQuant (from quantize_blocks), got {type(v).__name__}")
        if v.data.dtype != torch.int8:
            raise InputError(f"{name}.data must be int8 for torch._int_mm, got {v.data.dtype}")
    if a.block != b.block:
        raise InputError(f"b has block size {b.block}, a has {a.block}: quantize both with the same block_size")
    if a.shape[1] != b.shape[1]:
        raise InputError(f"b has inner dimension {b.shape[1]}, a has {a.shape[1]} (Y = A B^T needs equal K)")
    if a.data.device != b.data.device:
        raise InputError(f"b is on {b.data.device}, a on {a.data.device}: move both to one device")


def _check_backend(a: BlockQuant, backend) -> str:
    backend = check_choice(backend, "backend", BACKENDS)
    if backend == "triton" and not triton_available(a.data, a.block):
        raise InputError(
            f"backend='triton' needs Triton, CUDA operands and a block of 32 to 128 (got {a.data.device}, "
            f"block {a.block}): use backend='auto' or 'torch'"
        )
    if backend == "cpu-vnni":
        check_cpu_backend(a)
    return backend


def _fused_epilogue(a: BlockQuant, b: BlockQuant, backend: str) -> bool:
    """Whether the CPU kernel runs the GEMM and can requantize in its epilogue (operands padded by < 1 block)."""
    if backend == "torch" or triton_available(a.data, a.block) or not use_cpu_kernel(a.data, a.block, backend):
        return False
    blk = a.block
    return a.data.shape[0] - a.shape[0] < blk and b.data.shape[0] - b.shape[0] < blk


def linear_gemm(
    a: BlockQuant,
    b: BlockQuant,
    *,
    bias: Tensor | None = None,
    requantize: str | None = None,
    generator: torch.Generator | None = None,
    backend: str = "auto",
) -> Tensor:
    """``Y = A B^T + bias`` in FP32, optionally passed through its per-block INT8 quantization (the layers' GEMMs).

    Equal to :func:`block_matmul`, ``+ bias`` and, with ``requantize``, ``dequantize_raw(quantize_raw(Y, ...))``
    (the same generator draws); where the fused CPU kernel runs the GEMM, the bias and the requantization run in
    its epilogue, on each output tile while it is in cache, with bit-identical results.

    Parameters
    ----------
    a : BlockQuant
        ``(M, K)``.
    b : BlockQuant
        ``(N, K)``, same block size, device and inner dimension.
    bias : torch.Tensor, optional
        ``(N,)``.
    requantize : {None, "nearest", "stochastic"}, default None
        Rounding of the output's requantization, or none.
    generator : torch.Generator, optional
        Noise of stochastic rounding.
    backend : str, default "auto"
        One of ``BACKENDS``.

    Returns
    -------
    torch.Tensor
        FP32 ``(M, N)``.

    Raises
    ------
    InputError
        As :func:`block_matmul`, and on an unknown ``requantize``.
    """
    _check_operands(a, b)
    if requantize is not None:
        requantize = check_choice(requantize, "requantize", ROUNDINGS)
    generator = _check_generator(generator)
    backend = _check_backend(a, backend)
    m, n = a.shape[0], b.shape[0]
    if _fused_epilogue(a, b, backend):
        y = vnni_block_matmul_epilogue(
            a.data,
            a.scales,
            b.data,
            b.scales,
            a.block,
            (m, n),
            bias=bias,
            rounding=requantize,
            seed=_kernel_seed(requantize or "nearest", generator, a.data.device),
        )
        return y[:m, :n]
    y = _block_matmul(a, b, backend)
    if bias is not None:
        y = y + bias.to(torch.float32)
    if requantize is not None:
        y = dequantize_raw(quantize_raw(y, a.block, requantize, generator, backend), backend)
    return y


def check_cpu_backend(a: BlockQuant) -> None:
    """Refuse ``backend="cpu-vnni"`` where the CPU kernel cannot run, and build it if it can.

    Parameters
    ----------
    a : BlockQuant
        An operand.

    Raises
    ------
    InputError
        On a non-CPU operand, a block that is not a multiple of 32, a CPU without AVX512-VNNI or a missing
        compiler.
    """
    if a.data.device.type != "cpu" or a.block < CPU_MIN_BLOCK or a.block % CPU_MIN_BLOCK:
        raise InputError(
            f"backend='cpu-vnni' needs CPU operands and a block that is a multiple of {CPU_MIN_BLOCK} "
            f"(got {a.data.device}, block {a.block}): use backend='auto' or 'torch'"
        )
    load_cpu_kernel()


def use_cpu_kernel(x: Tensor, block: int, backend: str) -> bool:
    """Whether :func:`block_matmul` runs the fused CPU kernel for an operand and backend.

    Parameters
    ----------
    x : torch.Tensor
        An operand's data.
    block : int
        Its block size.
    backend : str
        One of ``BACKENDS``.

    Returns
    -------
    bool
    """
    if backend == "cpu-vnni":
        return x.device.type == "cpu" and block >= CPU_MIN_BLOCK and block % CPU_MIN_BLOCK == 0
    return backend == "auto" and cpu_kernel_usable(x, block)


def _chunk_product(a: Tensor, bt: Tensor) -> Tensor:
    """Exact INT32 products of one K chunk: ``torch._int_mm`` where it takes the shapes, else exact FP32."""
    if not a.is_cuda or (a.shape[0] > 16 and a.shape[1] >= 32 and bt.shape[1] % 8 == 0):
        return _int_mm(a, bt)
    # cuBLASLt needs M > 16 and K >= 32 (blocks below 32): FP32 sums of <= 16 INT8 products are exact
    return (a.to(torch.float32) @ bt.to(torch.float32)).to(torch.int32)


def _block_matmul(a: BlockQuant, b: BlockQuant, backend: str = "auto") -> Tensor:
    blk = a.block
    if backend != "torch" and triton_available(a.data, blk):
        return triton_block_matmul(a.data, a.scales, b.data, b.scales, blk)[: a.shape[0], : b.shape[0]]
    if use_cpu_kernel(a.data, blk, backend):
        return vnni_block_matmul(a.data, a.scales, b.data, b.scales, blk)[: a.shape[0], : b.shape[0]]
    mp, kp = a.data.shape
    np_, kb = b.data.shape[0], kp // blk
    acc = torch.zeros(mp, np_, dtype=torch.float32, device=a.data.device)
    a_chunks = a.data.reshape(mp, kb, blk).transpose(0, 1).contiguous()  # (kb, Mp, B): one copy, K-chunk major
    bt = b.data.t().contiguous()  # (Kp, Np)
    sa = a.scales.repeat_interleave(blk, 0)  # (Mp, kb)
    sb = b.scales.repeat_interleave(blk, 0).t().contiguous()  # (kb, Np)
    for k in range(kb):
        p = _chunk_product(a_chunks[k], bt[k * blk : (k + 1) * blk])  # exact INT32 products of one K chunk
        # rescale by s_A[I, k] s_B[J, k] and accumulate in FP32 (INT32 -> FP32 is exact: |p| <= 32 * 128^2)
        acc.addcmul_(p * sa[:, k : k + 1], sb[k : k + 1])
    return acc[: a.shape[0], : b.shape[0]]


__all__ = [
    "BLOCK",
    "BlockQuant",
    "quantize_blocks",
    "fake_quantize",
    "relative_error",
    "block_matmul",
    "check_block_size",
]
