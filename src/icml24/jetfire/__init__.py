"""Jetfire: INT8 transformer training with INT8 data flow and per-block quantization (Xi et al., ICML 2024,
arXiv 2403.12422).

Tensors are quantized to INT8 per 32 x 32 block (absmax / 127; round to nearest in the forward pass,
stochastic rounding for gradients); linear layers run their forward, input-gradient and weight-gradient GEMMs
as block-scaled INT8 GEMMs (``torch._int_mm`` per 32-wide K chunk, FP32 accumulation), and norms and
activations take and emit INT8, so every activation saved for the backward pass is INT8. ``convert(model)``
turns a user's GPT-2-style or Llama-style Hugging Face model into a Jetfire copy; the per-tensor INT8 and
SwitchBack (per-token) baselines and torchao's INT8 mixed-precision training share the API. The same code runs
on CUDA tensors (cuBLASLt INT8 GEMMs; tested only where CUDA is present).

Speed: the block GEMM here is ``torch`` ops, one INT8 GEMM per 32-wide K chunk followed by a rescale pass over
the output, which is memory-bound; on CPU it is slower than FP32 and bf16 (``benchmarks/jetfire.py``), while a
single-scale INT8 GEMM is faster than both. Jetfire's speed needs the rescale fused into the GEMM's registers, as
the official CUDA kernels do.
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
