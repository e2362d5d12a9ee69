"""Jetfire: INT8 transformer training with INT8 data flow and per-block quantization (Xi et al., ICML 2024,
arXiv 2403.12422).

Tensors are quantized to INT8 per 32 x 32 block (absmax / 127; round to nearest in the forward pass,
stochastic rounding for gradients); linear layers run their forward, input-gradient and weight-gradient GEMMs
as block-scaled INT8 GEMMs (``torch._int_mm`` per 32-wide K chunk, FP32 accumulation), and norms and
activations take and emit INT8, so every activation saved for the backward pass is INT8. ``convert(model)``
turns a user's GPT-2-style or Llama-style Hugging Face model into a Jetfire copy; the per-tensor INT8 and
SwitchBack (per-token) baselines and torchao's INT8 mixed-precision training share the API.

On CUDA tensors the block GEMM is one fused Triton kernel (``icml24.jetfire.gpu``; blocks of 32 to 128): each
program walks K one block at a time, takes the exact INT32 product of two INT8 tiles on the tensor cores and
rescales it into FP32 registers, as the official kernels do; ``block_matmul(..., backend="torch")`` keeps the
torch-ops path. Measured on an H200 (torch 2.11, Triton 3.6; ``benchmarks/jetfire.py``): the whole jetfire
test suite passes with CUDA present; the kernel runs at 215-280 TOP/s, 0.32-0.38x of cuBLAS bf16 at n = 4096-8192
(the per-chunk rescale on CUDA cores bounds it; the torch-ops path is 0.01x), a Jetfire linear layer's
forward + backward is 0.20-0.23x bf16's, and 500 steps of the tiny GPT on tiny Shakespeare reach validation loss
2.208 against FP32's 2.206 (+0.13 %).

Speed on CPU: the block GEMM is ``torch`` ops, one INT8 GEMM per 32-wide K chunk followed by a rescale pass over
the output, which is memory-bound; it is slower than FP32 and bf16 (``benchmarks/jetfire.py``), while a
single-scale INT8 GEMM is faster than both. Jetfire's speed needs the rescale fused into the GEMM's registers, as
the Triton kernel does on GPUs; no such kernel exists for CPUs here.
"""

from .baselines import SCHEMES, Int8Linear, convert_baseline, torchao_int8_mixed_precision
from .layers import JetfireLinear, JetfireOp, convert
from .quant import BLOCK, BlockQuant, block_matmul, fake_quantize, quantize_blocks, relative_error

__all__ = [
    "BLOCK",
    "SCHEMES",
    "BlockQuant",
    "quantize_blocks",
    "fake_quantize",
    "relative_error",
    "block_matmul",
    "JetfireLinear",
    "JetfireOp",
    "convert",
    "Int8Linear",
    "convert_baseline",
    "torchao_int8_mixed_precision",
]
