"""The block-scaled INT8 GEMM of Jetfire (Xi et al., ICML 2024, Sec. 5.1).

``Y = A B^T`` accumulates the INT8 x INT8 products of each 32-wide K chunk in INT32 (``torch._int_mm``: oneDNN
VNNI kernels on CPUs, cuBLASLt on GPUs), rescales them by ``s_A[I, k] s_B[J, k]`` and accumulates in FP32; its
output is FP32 or requantized per block to INT8. On CUDA the fused Triton kernel (:mod:`icml24.jetfire.gpu`) and on
CPUs with AVX512-VNNI the fused C++ kernel (:mod:`icml24.jetfire.cpu`) run it instead (see
:mod:`icml24.jetfire.backends`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..errors import InputError
from ..validation import check_choice
from .backends import check_backend, kernel_seed, use_cpu_kernel
from .cpu import vnni_block_matmul, vnni_block_matmul_epilogue
from .gpu import triton_available, triton_block_matmul
from .quant import ROUNDINGS, BlockQuant, check_generator, dequantize_raw, quantize_raw


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
    generator = check_generator(generator, device=a.data.device)
    backend = check_backend(a, backend)
    if out == "int8" and _fused_epilogue(a, b, backend):  # requantized in the CPU kernel's epilogue
        data, scales = vnni_block_matmul_epilogue(
            a.data,
            a.scales,
            b.data,
            b.scales,
            a.block,
            (a.shape[0], b.shape[0]),
            rounding=rounding,
            seed=kernel_seed(rounding, generator, a.data.device),
            out="int8",
        )
        return BlockQuant._trusted(data, scales, (a.shape[0], b.shape[0]), a.block)
    y = _block_matmul(a, b, backend)
    if out == "float":
        return y
    return quantize_raw(y, a.block, rounding, generator, backend)


def _check_operands(a, b) -> None:
    for name, v in (("a", a), ("b", b)):
        if not isinstance(v, BlockQuant):
            raise InputError(f"{name} must be a BlockQuant (from quantize_blocks), got {type(v).__name__}")
    if a.block != b.block:
        raise InputError(f"b has block size {b.block}, a has {a.block}: quantize both with the same block_size")
    if a.shape[1] != b.shape[1]:
        raise InputError(f"b has inner dimension {b.shape[1]}, a has {a.shape[1]} (Y = A B^T needs equal K)")
    if a.data.device != b.data.device:
        raise InputError(f"b is on {b.data.device}, a on {a.data.device}: move both to one device")


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
    generator = check_generator(generator, device=a.data.device)
    backend = check_backend(a, backend)
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
            seed=kernel_seed(requantize or "nearest", generator, a.data.device),
        )
        return y[:m, :n]
    y = _block_matmul(a, b, backend)
    if bias is not None:
        y = y + bias.to(torch.float32)
    if requantize is not None:
        y = dequantize_raw(quantize_raw(y, a.block, requantize, generator, backend), backend)
    return y


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


__all__ = ["block_matmul"]
