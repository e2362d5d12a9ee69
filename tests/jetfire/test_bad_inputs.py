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
Q_INT16 = BlockQuant(QA.data.to(torch.int16), QA.scales, QA.shape, QA.block)
DATA8, SCALES = QA.to_autograd()
MODEL = tiny_gpt2(30, n_positions=16, n_embd=32, n_layer=1, n_head=2)
LIN = torch.nn.Linear(8, 4)
CONV = torch.nn.Conv2d(1, 1, 3)
NOLIN = torch.nn.Sequential(torch.nn.ReLU())
JL = JetfireLinear(8, 4)
JO = JetfireOp(torch.nn.LayerNorm(8))
IL = Int8Linear(8, 4)
GEN = torch.Generator().manual_seed(0)

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
    bad("block_matmul", "a", lambda: block_matmul(Q_INT16, QB), kind="dtype-int_mm"),
    bad("block_matmul", "out", lambda: block_matmul(QA, QB, out="fp16"), kind="name"),
    bad("block_matmul", "rounding", lambda: block_matmul(QA, QB, rounding="floor"), kind="name"),
    bad("block_matmul", "backend", lambda: block_matmul(QA, QB, backend="cublas"), kind="name"),
    bad("block_matmul", "backend", lambda: block_matmul(QA, QB, backend="triton"), kind="triton-on-cpu"),
    bad("block_matmul", "backend", lambda: block_matmul(QB16, QB16, backend="cpu-vnni"), kind="cpu-block-16"),
    # ------------------------------------------------------------------------------------------ BlockQuant
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
    bad("JetfireLinear.forward", "x", lambda: JL(torch.randn(3, 5)), JL, kind="shape"),
    bad("JetfireLinear.forward", "x", lambda: JL(torch.ones(3, 8, dtype=torch.long)), JL, kind="dtype"),
    bad("JetfireLinear.from_linear", "linear", lambda: JetfireLinear.from_linear(CONV), CONV, kind="unsupported"),
    # ---------------------------------------------------------------------------------------------- JetfireOp
    bad("JetfireOp", "module", lambda: JetfireOp(3), kind="type"),
    bad("JetfireOp", "module", lambda: JetfireOp(torch.relu), kind="function"),
    bad("JetfireOp", "block_size", lambda: JetfireOp(torch.nn.GELU(), block_size=5), kind="not-power-of-two"),
    bad("JetfireOp", "seed", lambda: JetfireOp(torch.nn.GELU(), seed="a"), kind="type"),
    bad("JetfireOp.forward", "x", lambda: JO(torch.ones(2, 8, dtype=torch.long)), JO, kind="dtype"),
    # ------------------------------------------------------------------------------------------------ convert
    bad("convert", "model", lambda: convert(None), kind="none"),
    bad("convert", "model", lambda: convert(NOLIN), NOLIN, kind="no-linear"),
    bad("convert", "modules", lambda: convert(MODEL, modules=["transformer.wte"]), MODEL, kind="unsupported"),
    bad("convert", "modules", lambda: convert(MODEL, modules=["transformer.h.9"]), MODEL, kind="missing"),
    bad("convert", "modules", lambda: convert(MODEL, modules="transformer.h.0.attn.c_attn"), MODEL, kind="str"),
    bad("convert", "modules", lambda: convert(MODEL, modules=[]), MODEL, kind="empty"),
    bad("convert", "block_size", lambda: convert(MODEL, block_size=100), MODEL, kind="not-power-of-two"),
    bad("convert", "seed", lambda: convert(MODEL, seed=None), MODEL, kind="none"),
    # ---------------------------------------------------------------------------------------------- Int8Linear
    bad("Int8Linear", "scheme", lambda: Int8Linear(4, 4, scheme="fp8"), kind="name"),
    bad("Int8Linear", "in_features", lambda: Int8Linear(-1, 4), kind="range"),
    bad("Int8Linear", "seed", lambda: Int8Linear(4, 4, seed=1.5), kind="type"),
    bad("Int8Linear.forward", "x", lambda: IL(torch.randn(2, 3)), IL, kind="shape"),
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
    # ------------------------------------------------------------------------------- torchao_int8_mixed_precision
    bad("torchao_int8_mixed_precision", "model", lambda: torchao_int8_mixed_precision(None), kind="none"),
    bad("torchao_int8_mixed_precision", "model", lambda: torchao_int8_mixed_precision("gpt2"), kind="str"),
    bad("torchao_int8_mixed_precision", "model", lambda: torchao_int8_mixed_precision(X), X, kind="tensor"),
    bad("torchao_int8_mixed_precision", "model", lambda: torchao_int8_mixed_precision([LIN]), LIN, kind="list"),
    bad("torchao_int8_mixed_precision", "model", lambda: torchao_int8_mixed_precision(LIN.state_dict()), kind="dict"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    assert coverage_gaps(jetfire, CASES) == {}
