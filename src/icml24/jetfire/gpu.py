"""The block-scaled INT8 GEMM of Jetfire as one Triton kernel, for CUDA devices.

On a GPU, the torch-ops path of :func:`icml24.jetfire.block_matmul` launches one thin ``torch._int_mm`` per
32-wide K chunk; this kernel does what the official Triton kernels do instead: each program owns a
``BLOCK_M x BLOCK_N`` tile of the output, walks K in steps of one quantization block, takes the exact INT32
product of the two INT8 tiles on the tensor cores (``tl.dot``), scales it by ``s_A[I, k] s_B[J, k]`` and
accumulates in FP32 registers. The result equals the torch path (and ``dequantize(A) @ dequantize(B)^T``) up
to FP32 rounding.

Triton is imported lazily: CPU-only installs never need it, and :func:`triton_available` says whether the
kernel can run on a given tensor.
"""

from __future__ import annotations

import torch
from torch import Tensor

try:  # Triton ships with CUDA builds of torch; CPU builds have none
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - depends on the install
    triton = None
    tl = None

MIN_BLOCK = 32  # tl.dot on INT8 needs a K step of at least 32 on Hopper
MAX_BLOCK = 128  # larger K steps overflow shared memory at these tile sizes


def triton_available(x: Tensor, block: int) -> bool:
    """Whether the Triton kernel can multiply ``x`` quantized with ``block``.

    Parameters
    ----------
    x : torch.Tensor
        An operand's INT8 data.
    block : int
        The quantization block.

    Returns
    -------
    bool
        True when Triton imports, ``x`` is on a CUDA device and ``32 <= block <= 128``.
    """
    return triton is not None and x.is_cuda and MIN_BLOCK <= block <= MAX_BLOCK


if triton is not None:  # pragma: no cover - GPU only

    @triton.autotune(
        configs=[
            triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=4),
            triton.Config({"BLOCK_M": 128, "BLOCK_N": 256}, num_warps=8, num_stages=3),
            triton.Config({"BLOCK_M": 256, "BLOCK_N": 128}, num_warps=8, num_stages=3),
            triton.Config({"BLOCK_M": 64, "BLOCK_N": 128}, num_warps=4, num_stages=4),
            triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=4),
            triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=4, num_stages=5),
            triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=5),
        ],
        key=["M", "N", "K"],
    )
    @triton.jit
    def _block_gemm_kernel(
        a_ptr,
        b_ptr,
        sa_ptr,
        sb_ptr,
        c_ptr,
        M,
        N,
        K,
        stride_am,
        stride_ak,
        stride_bn,
        stride_bk,
        stride_sam,
        stride_sak,
        stride_sbn,
        stride_sbk,
        stride_cm,
        stride_cn,
        QB: tl.constexpr,
        BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr,
    ):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, QB)
        mask_m = offs_m < M
        mask_n = offs_n < N
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        sa_ptrs = sa_ptr + (offs_m // QB) * stride_sam
        sb_ptrs = sb_ptr + (offs_n // QB) * stride_sbn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kb in range(0, K // QB):
            a = tl.load(a_ptrs, mask=mask_m[:, None], other=0)
            b = tl.load(b_ptrs, mask=mask_n[None, :], other=0)
            p = tl.dot(a, b, out_dtype=tl.int32)  # exact INT32 products of one K chunk
            sa = tl.load(sa_ptrs + kb * stride_sak, mask=mask_m, other=0.0)
            sb = tl.load(sb_ptrs + kb * stride_sbk, mask=mask_n, other=0.0)
            acc += p.to(tl.float32) * sa[:, None] * sb[None, :]
            a_ptrs += QB * stride_ak
            b_ptrs += QB * stride_bk
        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc, mask=mask_m[:, None] & mask_n[None, :])


def triton_block_matmul(a: Tensor, sa: Tensor, b: Tensor, sb: Tensor, block: int) -> Tensor:
    """``Y = A B^T`` for block-quantized operands, by the Triton kernel.

    Parameters
    ----------
    a : torch.Tensor
        INT8 ``(Mp, Kp)`` on a CUDA device, both sides multiples of ``block``.
    sa : torch.Tensor
        FP32 scales ``(Mp / block, Kp / block)``.
    b : torch.Tensor
        INT8 ``(Np, Kp)``.
    sb : torch.Tensor
        FP32 scales ``(Np / block, Kp / block)``.
    block : int
        The quantization block (32 to 128).

    Returns
    -------
    torch.Tensor
        FP32 ``(Mp, Np)``.
    """
    if not triton_available(a, block):
        raise RuntimeError("the Triton kernel needs Triton, a CUDA tensor and a block between 32 and 128")
    m, k = a.shape
    n = b.shape[0]
    c = torch.empty(m, n, dtype=torch.float32, device=a.device)
    sa, sb = sa.float(), sb.float()

    def grid(meta):
        return (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]))

    _block_gemm_kernel[grid](
        a,
        b,
        sa,
        sb,
        c,
        m,
        n,
        k,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        sa.stride(0),
        sa.stride(1),
        sb.stride(0),
        sb.stride(1),
        c.stride(0),
        c.stride(1),
        QB=block,
    )
    return c


__all__ = ["triton_available", "triton_block_matmul"]
