"""The claims of "Jetfire: Efficient and Accurate Transformer Pretraining with INT8 Data Flow and Per-Block
Quantization" (Xi et al., ICML 2024, arXiv 2403.12422). The experiments are in ``experiments.py``.

Experiments: :data:`QUANT_RUN` (``jetfire/quantization-error``: synthetic outlier tensors and tensors captured
from a tiny GPT's training) is judged by ``quantization-error`` and ``block-close-to-best``; :data:`PARITY_RUN`
(``jetfire/parity``: FP32, Jetfire and per-tensor INT8 training from one initialisation) by ``parity`` and
``per-tensor-worse``; ``memory`` has a run of its own. Both shared experiments train on tiny Shakespeare
(``data:tinyshakespeare``; no stand-in: without it their claims are not run); the memory run needs no data. The
paper's parity (GPT-2 on OpenWebText) needs GPUs and a corpus not to be had offline.
"""

from __future__ import annotations

from typing import Mapping

from ..claims import Claim, Experiment
from ..registry import method

SLUG = "jetfire"
FAR = 0.5  # per-block error at most half the per-tensor error (activations and gradients)
BEATS_WRONG_AXIS = 0.7  # ... and at most 0.7x the granularity on the wrong axis (per-token on activations, ...)
CLOSE = 1.5  # the paper's "per-block ~ per-channel (activations) / per-token (gradients)": within 1.5x
PARITY = 0.02  # Jetfire's final validation loss within 2 % of FP32's
LEARNED = 0.85  # ... and at most 0.85x the untrained model's (it learned)
QUANTIZED = 1e-3  # ... while its logits at initialisation differ from FP32's by >= 0.1 % (it is quantized)
WORSE = 0.02  # per-tensor INT8's gap to FP32 at least 2 % ...
WORSE_FACTOR = 2.0  # ... and at least twice Jetfire's
ANALYTIC_TOL = 0.10  # measured saved bytes of a Jetfire block within 10 % of the analytic count
MEMORY_RATIO = 1.4  # bf16 autocast saves at least 1.4x Jetfire's bytes (paper: 1.49x less memory)

QUANT_RUN = Experiment(f"{SLUG}/quantization-error", "experiments:run_quant_error", needs=("data:tinyshakespeare",))
PARITY_RUN = Experiment(
    f"{SLUG}/parity",
    "experiments:run_parity",
    needs=("data:tinyshakespeare",),
    paper_needs=(
        "gpu",
        "never:the paper's parity runs pre-train GPT-2 (124M-774M) on OpenWebText, which is not available offline",
    ),
)


# ------------------------------------------------------------------------------------ quantization error
def _holds_quant_error(m: Mapping[str, float]) -> bool:
    return bool(
        m["syn_act_block_over_tensor"] <= FAR
        and m["syn_grad_block_over_tensor"] <= FAR
        and m["syn_act_block_over_token"] <= BEATS_WRONG_AXIS
        and m["syn_grad_block_over_channel"] <= BEATS_WRONG_AXIS
        and m["cap_act_block_over_tensor"] < 1.0
        and m["cap_grad_block_over_tensor"] < 1.0
    )


QUANT_ERROR = Claim(
    key=f"{SLUG}/quantization-error",
    statement=(
        "Per-block INT8 quantization (32 x 32 blocks, absmax / 127, round to nearest) confines outliers: on "
        "1024 x 1024 activations with 8 outlier channels (x50) and gradients with 8 outlier tokens (x50) its "
        f"relative error is at most {FAR:g}x per-tensor's on both, at most {BEATS_WRONG_AXIS:g}x per-token's on "
        f"the activations and {BEATS_WRONG_AXIS:g}x per-channel's on the gradients (the granularities that "
        "fail on each kind), and below per-tensor's on the FC1 input and FC2 output gradient captured from a "
        "tiny GPT's own training on tiny Shakespeare."
    ),
    run=QUANT_RUN,
    holds=_holds_quant_error,
    headline="syn_act_block",
    baseline="syn_act_tensor",
    paper=(
        "Sec. 4 / Fig. 3: activations have channel-wise and gradients token-wise outliers; per-block keeps "
        "the error of both low while per-tensor and per-token fail on activations"
    ),
)


def _holds_close(m: Mapping[str, float]) -> bool:
    return bool(m["syn_act_block_over_channel"] <= CLOSE and m["syn_grad_block_over_token"] <= CLOSE)


BLOCK_CLOSE = Claim(
    key=f"{SLUG}/block-close-to-best",
    statement=(
        f"In the same run, per-block error is within {CLOSE:g}x of per-channel's on the outlier-channel "
        f"activations and within {CLOSE:g}x of per-token's on the outlier-token gradients."
    ),
    run=QUANT_RUN,
    holds=_holds_close,
    headline="syn_act_block_over_channel",
    baseline="syn_grad_block_over_token",
    paper="summary of Sec. 4: quantization error per-block ~ per-channel << per-token ~ per-tensor",
    expected=False,
    finding=(
        "Does not reproduce as 'close': an outlier channel inflates the scale of every 32-wide block it "
        "crosses, so per-block has 3.5-3.9x the error of the best single-axis granularity (per-channel on "
        "activations: 3.80, 3.86, 3.47x on seeds 0-2; per-token on gradients: 3.53, 3.49, 3.74x), e.g. 0.030 "
        "vs 0.008 and 0.028 vs 0.008 on seed 0, while it stays 3-4x below per-tensor and about 1.6x below the "
        "wrong axis on each (same synthetic tensors at smoke and quick scale); per-block wins by "
        "being good on both kinds at once, not by matching the best per kind."
    ),
)


# --------------------------------------------------------------------------------------------- parity
def _holds_parity(m: Mapping[str, float]) -> bool:
    return bool(
        abs(m["jetfire_rel_gap"]) <= PARITY
        and m["jetfire_val"] <= LEARNED * m["init_val"]
        and QUANTIZED <= m["jetfire_init_logits_rel_diff"] <= 0.1
    )


PARITY_CLAIM = Claim(
    key=f"{SLUG}/parity",
    statement=(
        "Training a char-level GPT (quick: 4 layers, d = 128, context 64, 100 steps of 16) on tiny Shakespeare "
        "with Jetfire (INT8 linear layers, LayerNorm and GELU with INT8 in and out, stochastic-rounded INT8 "
        f"gradients) reaches a final validation loss within {PARITY:.0%} of FP32 training from the same "
        f"initialisation on the same batches, and at most {LEARNED:g}x the untrained model's, while the "
        f"quantization is real: at initialisation Jetfire's logits differ from FP32's by {QUANTIZED:g} to 0.1 "
        "(relative norm)."
    ),
    run=PARITY_RUN,
    holds=_holds_parity,
    headline="jetfire_val",
    baseline="fp32_val",
    paper=(
        "Tables 1-2: GPT-2 base/medium/large on OpenWebText, Jetfire's validation loss comparable to FP16 "
        "(e.g. large 2.4696 vs 2.5993)"
    ),
)


def _holds_per_tensor(m: Mapping[str, float]) -> bool:
    return bool(
        m["per_tensor_rel_gap"] >= WORSE and m["per_tensor_rel_gap"] >= WORSE_FACTOR * max(m["jetfire_rel_gap"], 0.0)
    )


PER_TENSOR = Claim(
    key=f"{SLUG}/per-tensor-worse",
    statement=(
        f"In the same runs per-tensor INT8 training (all three GEMMs) ends at least {WORSE:.0%} above FP32's "
        f"validation loss and at least {WORSE_FACTOR:g}x Jetfire's gap."
    ),
    run=PARITY_RUN,
    holds=_holds_per_tensor,
    headline="per_tensor_val",
    baseline="jetfire_val",
    paper="Tables 1-3: per-tensor INT8 trails Jetfire (e.g. WMT14 BLEU 26.04 vs 26.49) and diverges on DeiT",
    expected=False,
    finding=(
        "Does not reproduce at this scale: the tiny char GPT has no outliers for per-tensor scales to trip on "
        "and trains as well in per-tensor INT8 as in FP32 and Jetfire. Per-tensor's gap to FP32's validation "
        "loss: -0.21 %, +0.14 %, +0.04 % at smoke and -0.02 %, +0.15 %, -0.13 % at quick (seeds 0-2); "
        "Jetfire's: +0.08 %, -0.02 %, -0.01 % and -0.02 %, +0.19 %, -0.04 %. The paper's gaps appear at "
        "124M-774M parameters and on ViTs, where outliers grow."
    ),
)


# --------------------------------------------------------------------------------------------- memory
def _holds_memory(m: Mapping[str, float]) -> bool:
    return bool(abs(m["jetfire_over_analytic"] - 1.0) <= ANALYTIC_TOL and m["bf16_over_jetfire"] >= MEMORY_RATIO)


MEMORY = Claim(
    key=f"{SLUG}/memory",
    statement=(
        "The bytes a Jetfire GPT-2 block saves for its backward pass, per token and measured by autograd's "
        f"saved-tensor hooks, are within {ANALYTIC_TOL:.0%} of the analytic count of its data flow (INT8 "
        "inputs of 7 operators with block scales, attention core in bf16), and a bf16-autocast block saves "
        f"at least {MEMORY_RATIO:g}x as many."
    ),
    run="experiments:run_memory",
    holds=_holds_memory,
    headline="jetfire_bytes_per_token",
    baseline="bf16_bytes_per_token",
    paper="abstract / Table 6: 1.49x less memory than FP16 for a transformer block (RTX 4090)",
)

METHOD = method(SLUG, (QUANT_ERROR, BLOCK_CLOSE, PARITY_CLAIM, PER_TENSOR, MEMORY))
