"""Which kernel runs a block operation: torch ops, the Triton GEMM (CUDA) or the fused C++ kernel (CPU).

``backend`` is one of :data:`BACKENDS`. The fused CPU kernel (:mod:`icml24.jetfire.cpu`) also quantizes and
dequantizes where it runs the GEMM; its stochastic rounding draws its noise from a hash seeded by one draw of the
caller's generator (:func:`kernel_seed`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from ..errors import InputError
from ..validation import check_choice
from .cpu import MIN_BLOCK as CPU_MIN_BLOCK
from .cpu import cpu_kernel_usable, load_cpu_kernel
from .gpu import triton_available

if TYPE_CHECKING:
    from .quant import BlockQuant

BACKENDS = ("auto", "triton", "torch", "cpu-vnni")


def check_backend(a: BlockQuant, backend) -> str:
    """A backend name for operands like ``a``, refusing ``"triton"`` / ``"cpu-vnni"`` where they cannot run.

    Parameters
    ----------
    a : BlockQuant
        An operand.
    backend : str
        One of :data:`BACKENDS`.

    Returns
    -------
    str
        ``backend``.

    Raises
    ------
    InputError
        On an unknown name, or a kernel that cannot run on ``a`` here (the message says what to do).
    """
    backend = check_choice(backend, "backend", BACKENDS)
    if backend == "triton" and not triton_available(a.data, a.block):
        raise InputError(
            f"backend='triton' needs Triton, CUDA operands and a block of 32 to 128 (got {a.data.device}, "
            f"block {a.block}): use backend='auto' or 'torch'"
        )
    if backend == "cpu-vnni":
        check_cpu_backend(a)
    return backend


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


def kernel_seed(rounding: str, generator, device) -> int:
    """The CPU kernel's noise seed: one draw of ``generator`` for stochastic rounding, none for round to nearest.

    Parameters
    ----------
    rounding : {"nearest", "stochastic"}
    generator : torch.Generator or None
    device : torch.device
        Where ``generator`` draws.

    Returns
    -------
    int
    """
    if rounding != "stochastic":
        return 0
    return int(torch.randint(-(2**62), 2**62, (1,), generator=generator, device=device))


__all__ = ["BACKENDS"]
