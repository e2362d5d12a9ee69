"""The block-scaled INT8 GEMM of Jetfire as one fused C++ kernel for CPUs with AVX512-VNNI (opt-in).

The torch-ops path of :func:`icml24.jetfire.block_matmul` runs one thin ``torch._int_mm`` per 32-wide K chunk
and a rescale pass over the whole output after each, which is memory-bound. This kernel does on the CPU what
the official CUDA kernels and our Triton kernel do on GPUs: each micro-tile of 6 rows x 32 columns of the output
lives in registers; per K chunk of one block's width the exact INT8 x INT8 products are summed in INT32 by
``vpdpbusd`` (u8 x s8: the right operand is offset by 128 and ``-128 x`` the chunk's row sums of the left one
start the INT32 accumulator, so the sum is exact), converted to FP32 and accumulated with one FMA by
``s_A[I, k] s_B[J, k]``. Operands may be strided (transposed views): ``A`` is read in place when its rows are
contiguous and transposed once otherwise, ``B`` is packed to the 16-column x 4-byte VNNI layout (transposed views
by 4 x 16-byte SIMD interleaves), which costs O(MK + NK) against the GEMM's O(MNK).

The output's epilogue runs per macro-tile (whole blocks) while the tile is in cache: the bias, and the per-block
requantization of the result (absmax / 127 scales; round to nearest even, or stochastic rounding), emitted as INT8
data and scales or as the dequantized FP32 values, bit for bit what quantizing the finished output would give
(see :func:`vnni_block_matmul_epilogue`). The layers use it for the bias and INT8 outputs of the forward GEMM and
the requantized input gradient, which saves the passes over the output that quantizing and dequantizing it take.

The kernel (its C++ source in :mod:`icml24.jetfire.cpu_source`) is compiled with
``torch.utils.cpp_extension.load_inline`` on first request (g++ and ninja needed; a minute or two) and cached
under torch's extension directory (a folder named after the source's hash), so later processes only load it.
Quantization (round to nearest: the same INT8 data and scales as the torch-ops quantizer; stochastic: noise from
a hash of one draw of the caller's generator and the element's index), dequantization and both in one pass live
in the same extension.

It is opt-in: ``block_matmul(..., backend="cpu-vnni")`` builds it when needed; ``backend="auto"`` uses it on CPU
only when it is already built or loaded, or when the environment variable ``ICML24_JETFIRE_CPU_KERNEL=1`` asks
for it, so default runs never pay a compile.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from pathlib import Path

from torch import Tensor

from ..errors import InputError
from .cpu_source import SOURCE

ENV_VAR = "ICML24_JETFIRE_CPU_KERNEL"
MIN_BLOCK = 32  # a 32-column micro-tile must lie inside one block of columns

_NAME = "icml24_jetfire_vnni_" + hashlib.sha1(SOURCE.encode()).hexdigest()[:12]
_FLAGS = ["-O3", "-fopenmp", "-mavx512f", "-mavx512bw", "-mavx512dq", "-mavx512vl", "-mavx512vnni", "-mfma"]
_state: dict = {"module": None, "build_seconds": None, "vnni": None}


def build_directory() -> Path:
    """Where the compiled kernel is cached: ``$TORCH_EXTENSIONS_DIR`` or torch's default root, per source hash.

    Returns
    -------
    pathlib.Path
    """
    from torch.utils.cpp_extension import get_default_build_root

    root = os.environ.get("TORCH_EXTENSIONS_DIR") or get_default_build_root()
    return Path(root) / "icml24_jetfire" / _NAME


def vnni_supported() -> bool:
    """Whether this CPU has AVX512-VNNI (and AVX512-BW), read from ``/proc/cpuinfo`` (Linux x86).

    Returns
    -------
    bool
    """
    if _state["vnni"] is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            text = ""
        flags = set()
        for line in text.splitlines():
            if line.startswith("flags"):
                flags.update(line.split(":", 1)[1].split())
                break
        _state["vnni"] = {"avx512_vnni", "avx512bw", "avx512f"} <= flags
    return _state["vnni"]


def cpu_kernel_built() -> bool:
    """Whether the kernel is loaded in this process or compiled in the cache (loading it then needs no compile).

    Returns
    -------
    bool
    """
    return _state["module"] is not None or (build_directory() / f"{_NAME}.so").exists()


def cpu_kernel_requested() -> bool:
    """Whether the environment variable ``ICML24_JETFIRE_CPU_KERNEL`` asks ``backend="auto"`` to build it.

    Returns
    -------
    bool
    """
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


def build_seconds() -> float | None:
    """Seconds the last :func:`load_cpu_kernel` of this process took (compile or cache load), or None.

    Returns
    -------
    float or None
    """
    return _state["build_seconds"]


def load_cpu_kernel(verbose: bool = False):
    """Compile (first time) or load the kernel.

    Parameters
    ----------
    verbose : bool, default False
        Print the compiler's output.

    Returns
    -------
    module
        The extension, with ``block_gemm(a, sa, b, sb, block)``.

    Raises
    ------
    InputError
        Without AVX512-VNNI, without a C++ compiler or ninja, or when the build fails.
    """
    if _state["module"] is not None:
        return _state["module"]
    if not vnni_supported():
        raise InputError(
            "backend='cpu-vnni' needs a CPU with AVX512-VNNI (none found in /proc/cpuinfo): use backend='torch'"
        )
    from torch.utils.cpp_extension import is_ninja_available, load_inline

    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None or not is_ninja_available():
        raise InputError(
            f"backend='cpu-vnni' compiles a C++ kernel and needs a C++ compiler ({cxx}) and ninja on PATH: "
            "install them or use backend='torch'"
        )
    t0 = time.perf_counter()
    folder = build_directory()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        mod = load_inline(
            _NAME,
            cpp_sources=[SOURCE],
            functions=["block_gemm", "block_gemm_ex", "quantize", "quantize_ex", "dequantize"],
            extra_cflags=_FLAGS,
            extra_ldflags=["-fopenmp"],
            build_directory=str(folder),
            verbose=verbose,
        )
    except (RuntimeError, OSError, ImportError) as exc:
        msg = str(exc).strip().splitlines()
        raise InputError(
            f"backend='cpu-vnni': building the C++ kernel failed ({msg[-1] if msg else type(exc).__name__}): "
            "use backend='torch'"
        ) from exc
    _state["module"] = mod
    _state["build_seconds"] = time.perf_counter() - t0
    return mod


def cpu_kernel_usable(x: Tensor, block: int) -> bool:
    """Whether ``backend="auto"`` should use the kernel for an operand: CPU, ``block`` a multiple of 32, VNNI,
    and the kernel loaded, built in the cache (it is then loaded), or requested by ``ICML24_JETFIRE_CPU_KERNEL=1``
    (it is then built).

    Parameters
    ----------
    x : torch.Tensor
        An operand's INT8 data.
    block : int
        The quantization block.

    Returns
    -------
    bool

    Raises
    ------
    InputError
        When the environment variable asks for the kernel and it cannot be built.
    """
    if x.device.type != "cpu" or block < MIN_BLOCK or block % MIN_BLOCK or sys.platform != "linux":
        return False
    if _state["module"] is not None:
        return True
    if cpu_kernel_requested():
        load_cpu_kernel()  # asked for: a failure is reported, not hidden
        return True
    if not (cpu_kernel_built() and vnni_supported()):
        return False
    try:  # built in the cache: loading needs no compile; a stale or foreign build falls back to torch ops
        load_cpu_kernel()
    except InputError:
        return False
    return True


def vnni_block_matmul(a: Tensor, sa: Tensor, b: Tensor, sb: Tensor, block: int) -> Tensor:
    """``Y = A B^T`` for block-quantized CPU operands, by the fused VNNI kernel (built on first use).

    Parameters
    ----------
    a : torch.Tensor
        INT8 ``(Mp, Kp)`` (any strides, e.g. a transposed view), sides multiples of ``block``.
    sa : torch.Tensor
        Scales ``(Mp / block, Kp / block)``.
    b : torch.Tensor
        INT8 ``(Np, Kp)``.
    sb : torch.Tensor
        Scales ``(Np / block, Kp / block)``.
    block : int
        The quantization block: a multiple of 32.

    Returns
    -------
    torch.Tensor
        FP32 ``(Mp, Np)``.

    Raises
    ------
    InputError
        If the kernel cannot be built here (see :func:`load_cpu_kernel`).
    """
    return load_cpu_kernel().block_gemm(a, sa, b, sb, int(block))


def vnni_block_matmul_epilogue(
    a: Tensor,
    sa: Tensor,
    b: Tensor,
    sb: Tensor,
    block: int,
    shape: tuple[int, int],
    bias: Tensor | None = None,
    rounding: str | None = None,
    seed: int = 0,
    out: str = "float",
):
    """``Y = A B^T (+ bias)`` by the fused kernel, with the output's requantization in the kernel's epilogue.

    Each macro-tile of the output (whole blocks) gets the bias and, with ``rounding``, its per-block quantization
    while it is still in cache: the same INT8 data and scales as :func:`vnni_quantize` on the cropped ``Y`` (with
    the same ``seed``), and with ``out="float"`` the dequantized ``q * scale`` (what :func:`vnni_dequantize` gives).

    Parameters
    ----------
    a, sa, b, sb, block
        As :func:`vnni_block_matmul`.
    shape : tuple of int
        The unpadded ``(M, N)`` of ``Y``: at most one block below the operands' padded sides.
    bias : torch.Tensor, optional
        ``(N,)``, added in FP32.
    rounding : {None, "nearest", "stochastic"}, default None
        No requantization, or its rounding.
    seed : int, default 0
        Seed of the stochastic-rounding noise.
    out : {"float", "int8"}, default "float"
        With ``rounding``: the dequantized FP32 output, or the INT8 data and scales.

    Returns
    -------
    torch.Tensor or (torch.Tensor, torch.Tensor)
        FP32 ``(Mp, Np)`` (crop it to ``shape``), or INT8 ``(Mp, Np)`` and scales ``(Mp / block, Np / block)``.
    """
    import torch

    mode = 0 if rounding is None else (1 if out == "int8" else 2)
    bias_t = bias.detach() if bias is not None else torch.empty(0)
    res = load_cpu_kernel().block_gemm_ex(
        a, sa, b, sb, int(block), bias_t, int(shape[0]), int(shape[1]), mode, rounding == "stochastic", int(seed)
    )
    return (res[0], res[1]) if mode == 1 else res[0]


def vnni_fake_quantize(x: Tensor, block: int, stochastic: bool, seed: int) -> tuple[Tensor, Tensor, Tensor]:
    """:func:`vnni_quantize` and the dequantized tensor from the same pass over ``x``.

    Parameters
    ----------
    x : torch.Tensor
        Floating ``(M, N)`` on CPU.
    block : int
        A multiple of 32.
    stochastic : bool
        Stochastic rounding instead of round to nearest even.
    seed : int
        Seed of the noise.

    Returns
    -------
    (torch.Tensor, torch.Tensor, torch.Tensor)
        INT8 ``(Mp, Np)``, scales, and FP32 ``(M, N)`` equal to :func:`vnni_dequantize` of the two.
    """
    q, s, d = load_cpu_kernel().quantize_ex(x, int(block), bool(stochastic), int(seed), True)
    return q, s, d


def vnni_quantize(x: Tensor, block: int, stochastic: bool, seed: int) -> tuple[Tensor, Tensor]:
    """Per-block INT8 quantization of a CPU matrix by the extension (one pass per row of blocks).

    Round to nearest even gives the same INT8 data and scales as the torch-ops quantizer; stochastic rounding
    draws its noise (16-bit resolution, as :func:`icml24.jetfire.quant.uniform_noise`) from a counter-based hash
    of ``seed`` and the element's index instead of torch's generator.

    Parameters
    ----------
    x : torch.Tensor
        Floating ``(M, N)`` on CPU.
    block : int
        A multiple of 32.
    stochastic : bool
        Stochastic rounding instead of round to nearest even.
    seed : int
        Seed of the noise (any 64-bit integer).

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        INT8 ``(Mp, Np)`` zero-padded to multiples of ``block`` and FP32 scales ``(Mp / block, Np / block)``.
    """
    q, s = load_cpu_kernel().quantize(x, int(block), bool(stochastic), int(seed))
    return q, s


def vnni_dequantize(q: Tensor, scales: Tensor, block: int, shape: tuple[int, int]) -> Tensor:
    """``q * scale`` per block, cropped to ``shape``, by the extension.

    Parameters
    ----------
    q : torch.Tensor
        INT8 ``(Mp, Np)`` on CPU.
    scales : torch.Tensor
        ``(Mp / block, Np / block)``.
    block : int
        A multiple of 32.
    shape : tuple of int
        The unpadded ``(M, N)``.

    Returns
    -------
    torch.Tensor
        FP32 ``shape``.
    """
    return load_cpu_kernel().dequantize(q, scales, int(block), int(shape[0]), int(shape[1]))


__all__ = [
    "ENV_VAR",
    "vnni_quantize",
    "vnni_dequantize",
    "build_directory",
    "vnni_supported",
    "cpu_kernel_built",
    "cpu_kernel_requested",
    "build_seconds",
    "load_cpu_kernel",
    "cpu_kernel_usable",
    "vnni_block_matmul",
    "vnni_block_matmul_epilogue",
    "vnni_fake_quantize",
]
