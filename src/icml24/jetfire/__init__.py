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
torch-ops path.

Speed on CPU: the torch-ops block GEMM runs one INT8 GEMM per 32-wide K chunk followed by a rescale pass over the
output, which is memory-bound and slower than FP32 and bf16. ``block_matmul(..., backend="cpu-vnni")`` (and
``JetfireLinear(..., backend="cpu-vnni")``) instead runs a fused C++ kernel (``icml24.jetfire.cpu``): AVX512-VNNI
``vpdpbusd`` on 6 x 32 output tiles held in registers, the per-chunk rescale by ``s_A[I, k] s_B[J, k]`` as one FMA
into FP32 accumulators, and an epilogue per output tile that adds the bias and requantizes the output per block
(round to nearest for INT8 activations, stochastic rounding for the input gradient) while the tile is in cache;
quantization with dequantization in one pass lives in the same extension. It is compiled on first request
(a minute or two) and cached in torch's extension directory; ``backend="auto"`` uses it only once it is built or
when ``ICML24_JETFIRE_CPU_KERNEL=1`` asks for the build, so a default install never compiles.

Modules: ``quant`` (per-block quantization), ``gemm`` (the block GEMM), ``backends`` (which kernel runs it), ``cpu``
and ``cpu_source`` (the fused CPU kernel), ``gpu`` (the Triton kernel), ``layers`` (the INT8 layers and
``convert``), ``targets`` (which modules ``convert`` swaps), ``baselines`` (per-tensor INT8, SwitchBack, torchao),
``paper`` (the claims) and ``experiments`` (their runs).
Measured speeds on GPU and CPU (``benchmarks/jetfire.py``) are in the README's Measured section.
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".quant": (
        "BLOCK",
        "BlockQuant",
        "quantize_blocks",
        "fake_quantize",
        "relative_error",
    ),
    ".gemm": ("block_matmul",),
    ".baselines": (
        "SCHEMES",
        "Int8Linear",
        "convert_baseline",
        "torchao_int8_mixed_precision",
    ),
    ".layers": (
        "JetfireLinear",
        "JetfireOp",
        "convert",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
