"""Every public callable of icml24.jetfire refuses bad input with a one-line InputError naming the argument, and
leaves the objects passed in (models, tensors) unchanged."""

import pytest
import torch

import icml24.jetfire as jetfire
from icml24.jetfire import (
    BlockQuant,
    Int8Linear,
    JetfireLinear,
    JetfireOp,
    block_matmul,
    convert,
    convert_baseline,
    fake_quantize,
    quantize_blocks,
    relative_error,
    torchao_int8_mixed_precision,
)
from icml24.nn.lm import tiny_gpt2
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN = float("nan")
X = torch.randn(40, 48)
X_NAN = X.clone()
X_NAN[3, 4] = NAN
X_INF = X.clone()
X_INF[0, 0] = float("inf")
X_INT = torch.ones(4, 4, dtype=torch.int32)
X3 = torch.randn(2, 3, 4)
QA = quantize_blocks(torch.randn(40, 48))
QB = quantize_blocks(torch.randn(20, 48))
QB16 = quantize_blocks(torch.randn(20, 48), 16)
QK = quantize_blocks(torch.randn(20, 50))
DATA8, SCALES = QA.to_autograd()
X64_HUGE = torch.full((4, 4), 1e300, dtype=torch.float64)
ATTN = torch.nn.MultiheadAttention(8, 2)
MODEL = tiny_gpt2(30, n_positions=16, n_embd=32, n_layer=1, n_head=2)
LIN = torch.nn.Linear(8, 4)
CONV = torch.nn.Conv2d(1, 1, 3)
NOLIN = torch.nn.Sequential(torch.nn.ReLU())
JL = JetfireLinear(8, 4)
JO = JetfireOp(torch.nn.LayerNorm(8))
IL = Int8Linear(8, 4)
GEN = torch.Generator().manual_seed(0)
NAN_LIN = torch.nn.Linear(8, 4)
NAN_MODEL = tiny_gpt2(30, n_positions=16, n_embd=32, n_layer=1, n_head=2)
with torch.no_grad():
    NAN_LIN.weight[0, 0] = NAN
    NAN_MODEL.transformer.h[0].mlp.c_fc.weight[0, 0] = NAN

CASES = [
    # ----------------------------------------------------------------------------------- quantize_blocks
    bad("quantize_blocks", "x", lambda: quantize_blocks(X_NAN), X_NAN, kind="nan"),
    bad("quantize_blocks", "x", lambda: quantize_blocks(X_INF), kind="inf"),
    bad("quantize_blocks", "x", lambda: quantize_blocks(X_INT), kind="dtype"),
    bad("quantize_blocks", "x", lambda: quantize_blocks(X3), kind="ndim"),
    bad("quantize_blocks", "block_size", lambda: quantize_blocks(X, 48), kind="not-power-of-two"),
    bad("quantize_blocks", "block_size", lambda: quantize_blocks(X, 0), kind="range"),
    bad("quantize_blocks", "rounding", lambda: quantize_blocks(X, rounding="up"), kind="name"),
    bad("quantize_blocks", "generator", lambda: quantize_blocks(X, rounding="stochastic", generator=0), kind="type"),
    bad("quantize_blocks", "x", lambda: quantize_blocks(X.numpy()), kind="numpy"),
    # ------------------------------------------------------------------------------------- fake_quantize
    bad("fake_quantize", "granularity", lambda: fake_quantize(X, "row"), kind="name"),
    bad("fake_quantize", "x", lambda: fake_quantize(X_NAN), kind="nan"),
    bad("fake_quantize", "block_size", lambda: fake_quantize(X, block_size=24), kind="not-power-of-two"),
    bad("fake_quantize", "rounding", lambda: fake_quantize(X, rounding=None), kind="none"),
    bad("fake_quantize", "x", lambda: fake_quantize(torch.zeros(0, 3)), kind="empty"),
    # ------------------------------------------------------------------------------------ relative_error
    bad("relative_error", "x", lambda: relative_error(torch.zeros(4, 4)), kind="all-zero"),
    bad("relative_error", "x", lambda: relative_error(X_INF), kind="inf"),
    bad("relative_error", "granularity", lambda: relative_error(X, "group"), kind="name"),
    bad("relative_error", "block_size", lambda: relative_error(X, block_size=2048), kind="range"),
    bad("relative_error", "x", lambda: relative_error([[1.0]]), kind="type"),
    # -------------------------------------------------------------------------------------- block_matmul
    bad("block_matmul", "a", lambda: block_matmul(X, QB), kind="tensor"),
    bad("block_matmul", "b", lambda: block_matmul(QA, QB16), kind="block"),
    bad("block_matmul", "b", lambda: block_matmul(QA, QK), kind="inner-dim"),
    bad("block_matmul", "a", lambda: block_matmul(QA.data, QB), kind="data-not-blockquant"),
    bad("block_matmul", "generator", lambda: block_matmul(QA, QB, generator="g"), kind="type-float-out"),
    bad("block_matmul", "b", lambda: block_matmul(QA, None), kind="none"),
    bad("block_matmul", "out", lambda: block_matmul(QA, QB, out="fp16"), kind="name"),
    bad("block_matmul", "rounding", lambda: block_matmul(QA, QB, rounding="floor"), kind="name"),
    bad("block_matmul", "backend", lambda: block_matmul(QA, QB, backend="cublas"), kind="name"),
    bad("block_matmul", "backend", lambda: block_matmul(QA, QB, backend="triton"), kind="triton-on-cpu"),
    bad("block_matmul", "backend", lambda: block_matmul(QB16, QB16, backend="cpu-vnni"), kind="cpu-block-16"),
    bad("quantize_blocks", "x", lambda: quantize_blocks(X64_HUGE), X64_HUGE, kind="beyond-float32"),
    bad("fake_quantize", "x", lambda: fake_quantize(X64_HUGE), kind="beyond-float32"),
    bad("relative_error", "x", lambda: relative_error(X64_HUGE), kind="beyond-float32"),
    # ------------------------------------------------------------------------------------------ BlockQuant
    # the constructor checks data, scales, shape and block against each other (issue 47: a shape that
    # disagreed with the data made block_matmul return rows of the wrong matrix)
    bad("BlockQuant", "shape", lambda: BlockQuant(QA.data, QA.scales, (30, 64), 32), kind="disagrees-with-data"),
    bad("BlockQuant", "shape", lambda: BlockQuant(QA.data, QA.scales, None, 32), kind="none"),
    bad("BlockQuant", "shape", lambda: BlockQuant(QA.data, QA.scales, (40, -48), 32), kind="range"),
    bad("BlockQuant", "shape", lambda: BlockQuant(QA.data, QA.scales, "ab", 32), kind="str"),
    bad("BlockQuant", "data", lambda: BlockQuant(QA.data.to(torch.int16), QA.scales, (40, 48), 32), kind="dtype"),
    bad("BlockQuant", "data", lambda: BlockQuant(None, QA.scales, (40, 48), 32), kind="none"),
    bad("BlockQuant", "data", lambda: BlockQuant(QA.data.flatten(), QA.scales, (40, 48), 32), kind="ndim"),
    bad("BlockQuant", "scales", lambda: BlockQuant(QA.data, QA.scales * NAN, (40, 48), 32), kind="nan"),
    bad("BlockQuant", "scales", lambda: BlockQuant(QA.data, -QA.scales, (40, 48), 32), kind="negative"),
    bad("BlockQuant", "scales", lambda: BlockQuant(QA.data, QA.scales.double(), (40, 48), 32), kind="dtype"),
    bad("BlockQuant", "scales", lambda: BlockQuant(QA.data, QA.scales[:1], (40, 48), 32), kind="shape"),
    bad("BlockQuant", "block", lambda: BlockQuant(QA.data, QA.scales, (40, 48), 7), kind="not-power-of-two"),
    bad("BlockQuant", "block", lambda: BlockQuant(QA.data, QA.scales, (40, 48), 16), kind="disagrees-with-data"),
    bad("BlockQuant.dequantize", "dtype", lambda: QA.dequantize("float32"), QA, kind="str"),
    bad("BlockQuant.dequantize", "dtype", lambda: QA.dequantize(torch.int8), QA, kind="integer"),
    bad("BlockQuant.from_autograd", "shape", lambda: BlockQuant.from_autograd(DATA8, SCALES, (30, 64), 32), kind="x"),
    bad("BlockQuant.from_autograd", "shape", lambda: BlockQuant.from_autograd(DATA8, SCALES, None, 32), kind="none"),
    bad("BlockQuant.from_autograd", "data", lambda: BlockQuant.from_autograd(QA.scales, SCALES, (40, 48), 32)),
    bad("BlockQuant.from_autograd", "data", lambda: BlockQuant.from_autograd(None, SCALES, (40, 48), 32), kind="none"),
    bad("BlockQuant.from_autograd", "scales", lambda: BlockQuant.from_autograd(DATA8, SCALES[:1], (40, 48), 32)),
    bad("BlockQuant.from_autograd", "scales", lambda: BlockQuant.from_autograd(DATA8, None, (40, 48), 32), kind="n"),
    bad("BlockQuant.from_autograd", "block", lambda: BlockQuant.from_autograd(DATA8, SCALES, (40, 48), 24)),
    # ------------------------------------------------------------------------------------------ JetfireLinear
    bad("JetfireLinear", "in_features", lambda: JetfireLinear(0, 4), kind="range"),
    bad("JetfireLinear", "out_features", lambda: JetfireLinear(4, 2.5), kind="type"),
    bad("JetfireLinear", "block_size", lambda: JetfireLinear(4, 4, block_size=12), kind="not-power-of-two"),
    bad("JetfireLinear", "int8_output", lambda: JetfireLinear(4, 4, int8_output="yes"), kind="type"),
    bad("JetfireLinear", "seed", lambda: JetfireLinear(4, 4, seed=-1), kind="range"),
    bad("JetfireLinear", "backend", lambda: JetfireLinear(4, 4, backend="vnni"), kind="name"),
    bad("JetfireLinear", "backend", lambda: JetfireLinear(4, 4, block_size=16, backend="cpu-vnni"), kind="cpu-16"),
    bad("JetfireLinear", "bias", lambda: JetfireLinear(4, 4, bias="no"), kind="type"),
    bad("JetfireLinear", "dtype", lambda: JetfireLinear(4, 4, dtype=torch.int8), kind="integer"),
    bad("JetfireLinear", "dtype", lambda: JetfireLinear(4, 4, dtype="float32"), kind="str"),
    bad("JetfireLinear", "device", lambda: JetfireLinear(4, 4, device="tpu"), kind="name"),
    bad("JetfireLinear", "seed", lambda: JetfireLinear(4, 4, seed=2**70), kind="beyond-generator"),
    bad("JetfireLinear.forward", "x", lambda: JL(torch.randn(3, 5)), JL, kind="shape"),
    bad("JetfireLinear.forward", "x", lambda: JL(torch.full((3, 8), NAN)), JL, kind="nan"),
    bad("JetfireLinear.forward", "x", lambda: JL(torch.full((3, 8), float("inf"))), JL, kind="inf"),
    bad("JetfireLinear.forward", "x", lambda: JL(torch.zeros(0, 8)), JL, kind="empty"),
    bad("JetfireLinear.forward", "x", lambda: JL(None), JL, kind="none"),
    bad("JetfireLinear.from_linear", "linear", lambda: JetfireLinear.from_linear(NAN_LIN), NAN_LIN, kind="nan"),
    bad("JetfireLinear.forward", "x", lambda: JL(torch.ones(3, 8, dtype=torch.long)), JL, kind="dtype"),
    bad("JetfireLinear.from_linear", "linear", lambda: JetfireLinear.from_linear(CONV), CONV, kind="unsupported"),
    # ---------------------------------------------------------------------------------------------- JetfireOp
    bad("JetfireOp", "module", lambda: JetfireOp(3), kind="type"),
    bad("JetfireOp", "module", lambda: JetfireOp(torch.relu), kind="function"),
    bad("JetfireOp", "block_size", lambda: JetfireOp(torch.nn.GELU(), block_size=5), kind="not-power-of-two"),
    bad("JetfireOp", "seed", lambda: JetfireOp(torch.nn.GELU(), seed="a"), kind="type"),
    bad("JetfireOp", "module", lambda: JetfireOp(LIN), LIN, kind="linear"),
    bad("JetfireOp", "module", lambda: JetfireOp(ATTN), ATTN, kind="attention"),
    bad("JetfireOp.forward", "x", lambda: JO(torch.ones(2, 8, dtype=torch.long)), JO, kind="dtype"),
    bad("JetfireOp.forward", "x", lambda: JO(torch.randn(3, 5)), JO, kind="shape"),
    bad("JetfireOp.forward", "x", lambda: JO(torch.tensor(1.0)), JO, kind="0-d"),
    bad("JetfireOp.forward", "x", lambda: JO(torch.full((2, 8), NAN)), JO, kind="nan"),
    bad("JetfireOp.forward", "x", lambda: JO(torch.zeros(0, 8)), JO, kind="empty"),
    # ------------------------------------------------------------------------------------------------ convert
    bad("convert", "model", lambda: convert(None), kind="none"),
    bad("convert", "model", lambda: convert(NOLIN), NOLIN, kind="no-linear"),
    bad("convert", "modules", lambda: convert(MODEL, modules=["transformer.wte"]), MODEL, kind="unsupported"),
    bad("convert", "modules", lambda: convert(MODEL, modules=["transformer.h.9"]), MODEL, kind="missing"),
    bad("convert", "modules", lambda: convert(MODEL, modules="transformer.h.0.attn.c_attn"), MODEL, kind="str"),
    bad("convert", "modules", lambda: convert(MODEL, modules=[]), MODEL, kind="empty"),
    bad("convert", "block_size", lambda: convert(MODEL, block_size=100), MODEL, kind="not-power-of-two"),
    bad("convert", "seed", lambda: convert(MODEL, seed=None), MODEL, kind="none"),
    bad("convert", "seed", lambda: convert(MODEL, seed=2**70), MODEL, kind="beyond-generator"),
    bad("convert", "modules", lambda: convert(MODEL, modules=5), MODEL, kind="int"),
    bad("convert", "modules", lambda: convert(MODEL, modules=(m for m in ["transformer.h.0.ln_1"])), kind="iterator"),
    bad("convert", "model", lambda: convert(NAN_MODEL), NAN_MODEL, kind="nan"),
    # ---------------------------------------------------------------------------------------------- Int8Linear
    bad("Int8Linear", "scheme", lambda: Int8Linear(4, 4, scheme="fp8"), kind="name"),
    bad("Int8Linear", "in_features", lambda: Int8Linear(-1, 4), kind="range"),
    bad("Int8Linear", "seed", lambda: Int8Linear(4, 4, seed=1.5), kind="type"),
    bad("Int8Linear", "bias", lambda: Int8Linear(4, 4, bias=None), kind="none"),
    bad("Int8Linear.forward", "x", lambda: IL(torch.randn(2, 3)), IL, kind="shape"),
    bad("Int8Linear.forward", "x", lambda: IL(torch.zeros(0, 8)), IL, kind="empty"),
    bad("Int8Linear.forward", "x", lambda: IL(torch.full((2, 8), NAN)), IL, kind="nan"),
    bad("Int8Linear.forward", "x", lambda: IL(torch.tensor(1.0)), IL, kind="0-d"),
    bad("Int8Linear.from_linear", "linear", lambda: Int8Linear.from_linear(CONV), CONV, kind="unsupported"),
    # ------------------------------------------------------------------------------------------ convert_baseline
    bad("convert_baseline", "scheme", lambda: convert_baseline(MODEL, "per_block"), MODEL, kind="name"),
    bad("convert_baseline", "model", lambda: convert_baseline("gpt2"), kind="type"),
    bad(
        "convert_baseline",
        "modules",
        lambda: convert_baseline(MODEL, modules=["transformer.h.0.ln_1"]),
        MODEL,
        kind="norm-not-linear",
    ),
    bad("convert_baseline", "model", lambda: convert_baseline(NOLIN), NOLIN, kind="no-linear"),
    bad("convert_baseline", "seed", lambda: convert_baseline(MODEL, seed=-3), MODEL, kind="range"),
    bad("convert_baseline", "modules", lambda: convert_baseline(MODEL, modules=5), MODEL, kind="int"),
    bad("convert_baseline", "model", lambda: convert_baseline(NAN_MODEL), NAN_MODEL, kind="nan"),
    # ------------------------------------------------------------------------------- torchao_int8_mixed_precision
    bad("torchao_int8_mixed_precision", "model", lambda: torchao_int8_mixed_precision(None), kind="none"),
    bad("torchao_int8_mixed_precision", "model", lambda: torchao_int8_mixed_precision("gpt2"), kind="str"),
    bad("torchao_int8_mixed_precision", "model", lambda: torchao_int8_mixed_precision(X), X, kind="tensor"),
    bad("torchao_int8_mixed_precision", "model", lambda: torchao_int8_mixed_precision([LIN]), LIN, kind="list"),
    bad("torchao_int8_mixed_precision", "model", lambda: torchao_int8_mixed_precision(LIN.state_dict()), kind="dict"),
    bad("torchao_int8_mixed_precision", "model", lambda: torchao_int8_mixed_precision(NOLIN), NOLIN, kind="no-linear"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    assert coverage_gaps(jetfire, CASES) == {}


def test_block_matmul_of_a_valid_blockquant_built_by_hand_matches_quantize_blocks():
    # a BlockQuant the constructor accepts is the same operand as the one quantize_blocks makes
    qa = BlockQuant(QA.data, QA.scales, [40, 48], 32)
    assert qa.shape == (40, 48)
    assert torch.equal(block_matmul(qa, QB), block_matmul(QA, QB))


def test_jetfire_op_checks_the_norm_size_of_an_rms_norm_without_normalized_shape():
    class RMSNorm(torch.nn.Module):  # a transformers-style RMSNorm: a weight, no normalized_shape
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(6))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    op = JetfireOp(RMSNorm())
    assert op(torch.randn(2, 6)).shape == (2, 6)
    assert "x" in assert_refuses(bad("JetfireOp.forward", "x", lambda: op(torch.randn(2, 5)), op))
