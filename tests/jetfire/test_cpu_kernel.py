"""The fused AVX512-VNNI CPU kernel (``backend="cpu-vnni"``) against the torch-ops path and float64 oracles.

The fused epilogue (bias and per-block requantization of the GEMM's output in the kernel) and the fused
quantize-dequantize pass must equal the unfused kernel ops bit for bit, stochastic rounding included (same seed,
same noise). Every test that runs the kernel skips unless it is already built in torch's extension cache (building takes
a minute or two: ``python -c "from icml24.jetfire.cpu import load_cpu_kernel; load_cpu_kernel()"`` or set
``ICML24_JETFIRE_CPU_KERNEL=1``), so CI never pays a compile.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml24.errors import InputError
from icml24.jetfire import JetfireLinear, JetfireOp, block_matmul, quantize_blocks
from icml24.jetfire import cpu as jcpu
from icml24.jetfire.gemm import linear_gemm
from icml24.jetfire.quant import dequantize_raw, fake_quantize_raw, quantize_raw

BUILT = jcpu.vnni_supported() and jcpu.cpu_kernel_built()
needs_kernel = pytest.mark.skipif(not BUILT, reason="the CPU VNNI kernel is not built (opt-in, see the module)")


def _oracle(qa, qb):
    """float64 products of the same quantized operands, and the scale of FP32 rounding for each entry."""
    da, db = qa.dequantize(torch.float64), qb.dequantize(torch.float64)
    return da @ db.T, da.abs() @ db.abs().T


def _close(y, ref, mag):
    return bool(((y.double() - ref).abs() <= 2e-6 * mag + 1e-30).all())


@needs_kernel
@settings(max_examples=20, deadline=None)
@given(
    m=st.integers(1, 130),
    n=st.integers(1, 130),
    k=st.integers(1, 200),
    block=st.sampled_from([32, 64]),
    transpose=st.sampled_from(["nn", "tn", "nt", "tt"]),
    seed=st.integers(0, 10_000),
)
def test_kernel_equals_torch_path_and_float64_on_odd_and_transposed_shapes(m, n, k, block, transpose, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g) * torch.rand(1, k, generator=g) * 10
    b = torch.randn(n, k, generator=g) * torch.rand(n, 1, generator=g)
    if transpose[0] == "t":  # operands stored as the transpose of a quantized matrix (the backward GEMMs' views)
        qa = quantize_blocks(a.T.contiguous(), block).t()
    else:
        qa = quantize_blocks(a, block)
    qb = quantize_blocks(b.T.contiguous(), block).t() if transpose[1] == "t" else quantize_blocks(b, block)
    y = block_matmul(qa, qb, backend="cpu-vnni")
    ref, mag = _oracle(qa, qb)
    assert y.shape == (m, n) and y.dtype == torch.float32
    assert _close(y, ref, mag)
    assert _close(block_matmul(qa, qb, backend="torch"), ref, mag)


@needs_kernel
def test_kernel_zero_blocks_and_extreme_values():
    x = torch.zeros(70, 100)
    x[:5, :3] = torch.tensor([[127.0, -128.0, 3.0]])
    x[40:, 64:] = torch.randn(30, 36) * 1e4
    q = quantize_blocks(x)
    assert torch.equal(block_matmul(q, quantize_blocks(torch.zeros(9, 100)), backend="cpu-vnni"), torch.zeros(70, 9))
    # INT8 extremes in every position (-128 x -128 sums are where a u8 offset could overflow)
    data = torch.full((64, 96), -128, dtype=torch.int8)
    data[::2, 1::3] = 127
    qe = type(q)(data, torch.ones(2, 3), (64, 96), 32)
    y = block_matmul(qe, qe, backend="cpu-vnni")
    ref = data.double() @ data.double().T
    assert torch.equal(y.double(), ref)  # integers below 2^24: exact in FP32
    ref2, mag = _oracle(q, q)
    assert _close(block_matmul(q, q, backend="cpu-vnni"), ref2, mag)


@needs_kernel
def test_kernel_quantize_matches_torch_path_and_stochastic_is_unbiased():
    g = torch.Generator().manual_seed(0)
    for shape in ((40, 48), (7, 33), (100, 70), (64, 64)):
        x = torch.randn(*shape, generator=g) * torch.rand(shape[0], 1, generator=g) * 5
        x[:32, :32] = 0.0
        ref = quantize_raw(x, 32, "nearest")
        got = quantize_raw(x, 32, "nearest", None, "cpu-vnni")
        assert torch.equal(got.data, ref.data) and torch.equal(got.scales, ref.scales) and got.shape == ref.shape
        assert torch.equal(dequantize_raw(got, "cpu-vnni"), ref.dequantize())
        sto = quantize_raw(x, 32, "stochastic", g, "cpu-vnni")
        assert torch.equal(sto.scales, ref.scales) and int((sto.data.int() - ref.data.int()).abs().max()) <= 1
    step = 1.0 / 127.0
    w = (torch.arange(-63, 65, dtype=torch.float32) * step).repeat(64, 1)
    w[:, ::32] = 1.0
    u = torch.full_like(w, 0.2 * step)
    u[:, ::32] = 0.0
    n = 400
    draws = (quantize_raw(w + u, 32, "stochastic", g, "cpu-vnni") for _ in range(n))
    mean = sum(dequantize_raw(q, "cpu-vnni") for q in draws) / n
    assert float((mean - (w + u)).abs().max()) <= 5 * 0.5 * step / math.sqrt(n)
    assert float((mean - w)[u > 0].mean()) == pytest.approx(0.2 * step, rel=0.05)


@needs_kernel
def test_kernel_linear_three_gemms_match_torch_backend():
    """Forward, input-gradient and weight-gradient GEMMs of a linear layer: the kernel against the torch path on the
    same quantized operands (the stochastic rounding of gradients is left out: round to nearest on both)."""
    g = torch.Generator().manual_seed(1)
    x, w, gy = torch.randn(75, 90, generator=g), torch.randn(50, 90, generator=g), torch.randn(75, 50, generator=g)
    qx, qw, qg = quantize_blocks(x), quantize_blocks(w), quantize_blocks(gy)
    for a, b in ((qx, qw), (qg, qw.t()), (qg.t(), qx.t())):  # Y = X W^T, dX = G W, dW = G^T X
        ref, mag = _oracle(a, b)
        assert _close(block_matmul(a, b, backend="cpu-vnni"), ref, mag)
    torch.manual_seed(0)
    ref = torch.nn.Linear(90, 50)
    fast = JetfireLinear.from_linear(ref, seed=3, backend="cpu-vnni")
    slow = JetfireLinear.from_linear(ref, seed=3, backend="torch")
    x0, x1, x2 = (x.clone().requires_grad_() for _ in range(3))
    y1, y2 = fast(x1), slow(x2)
    assert torch.allclose(y1, y2, rtol=1e-5, atol=1e-5)  # forward: round to nearest, same INT8 operands
    for layer, xi in ((ref, x0), (fast, x1), (slow, x2)):
        layer(xi).square().sum().backward()

    def rel(p, q):
        return float((p - q).norm() / q.norm())

    # backward: the two paths draw different stochastic-rounding noise; each is as close to FP32 as the torch
    # path must be (test_core's bound for JetfireLinear)
    for layer, xi in ((fast, x1), (slow, x2)):
        assert rel(xi.grad, x0.grad) < 0.05 and rel(layer.weight.grad, ref.weight.grad) < 0.05
    assert torch.allclose(fast.bias.grad, slow.bias.grad, rtol=1e-5, atol=1e-4)


def _operands(m, n, k, block, transpose, g):
    a = torch.randn(m, k, generator=g) * torch.rand(1, k, generator=g) * 10
    b = torch.randn(n, k, generator=g) * torch.rand(n, 1, generator=g)
    qa = quantize_blocks(a.T.contiguous(), block).t() if transpose[0] == "t" else quantize_blocks(a, block)
    qb = quantize_blocks(b.T.contiguous(), block).t() if transpose[1] == "t" else quantize_blocks(b, block)
    return qa, qb


@needs_kernel
@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(1, 100),
    n=st.integers(1, 100),
    k=st.integers(1, 130),
    block=st.sampled_from([32, 64]),
    transpose=st.sampled_from(["nn", "tn", "nt", "tt"]),
    with_bias=st.booleans(),
    rounding=st.sampled_from([None, "nearest", "stochastic"]),
    seed=st.integers(-(2**62), 2**62),
)
def test_fused_epilogue_equals_unfused_kernel_ops_bit_for_bit(m, n, k, block, transpose, with_bias, rounding, seed):
    g = torch.Generator().manual_seed(abs(seed) % 10_000)
    qa, qb = _operands(m, n, k, block, transpose, g)
    bias = torch.randn(n, generator=g) if with_bias else None
    y = block_matmul(qa, qb, backend="cpu-vnni")
    if bias is not None:
        y = y + bias
    args = (qa.data, qa.scales, qb.data, qb.scales, block, (m, n))
    fused = jcpu.vnni_block_matmul_epilogue(*args, bias=bias, rounding=rounding, seed=seed)[:m, :n]
    if rounding is None:
        assert torch.equal(fused, y)
        return
    q, s = jcpu.vnni_quantize(y, block, rounding == "stochastic", seed)
    assert torch.equal(fused, jcpu.vnni_dequantize(q, s, block, (m, n)))
    q8, s8 = jcpu.vnni_block_matmul_epilogue(*args, bias=bias, rounding=rounding, seed=seed, out="int8")
    assert torch.equal(q8, q) and torch.equal(s8, s)


@needs_kernel
def test_fused_layer_ops_equal_unfused_with_the_same_generator():
    """What the layers call (linear_gemm, block_matmul(out="int8"), fake_quantize_raw) on the kernel equals the
    unfused kernel ops drawing from a generator in the same state, and leaves the generator in the same state."""
    g = torch.Generator().manual_seed(2)
    qa, qb = _operands(75, 50, 90, 32, "nt", g)
    bias = torch.randn(50, generator=g)
    for rounding in ("nearest", "stochastic"):
        g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
        got = linear_gemm(qa, qb, bias=bias, requantize=rounding, generator=g1, backend="cpu-vnni")
        y = block_matmul(qa, qb, backend="cpu-vnni") + bias
        ref = dequantize_raw(quantize_raw(y, 32, rounding, g2, "cpu-vnni"), "cpu-vnni")
        assert torch.equal(got, ref) and torch.equal(g1.get_state(), g2.get_state())
        q8 = block_matmul(qa, qb, out="int8", rounding=rounding, generator=g1, backend="cpu-vnni")
        ref8 = quantize_raw(block_matmul(qa, qb, backend="cpu-vnni"), 32, rounding, g2, "cpu-vnni")
        assert torch.equal(q8.data, ref8.data) and torch.equal(q8.scales, ref8.scales) and q8.shape == ref8.shape
        x = torch.randn(70, 100, generator=g) * 3
        qf, d = fake_quantize_raw(x, 32, rounding, g1, "cpu-vnni")
        qr = quantize_raw(x, 32, rounding, g2, "cpu-vnni")
        assert torch.equal(qf.data, qr.data) and torch.equal(d, dequantize_raw(qr, "cpu-vnni"))
    assert torch.equal(linear_gemm(qa, qb, backend="cpu-vnni"), block_matmul(qa, qb, backend="cpu-vnni"))


@needs_kernel
def test_fused_stochastic_epilogue_is_unbiased_and_nearest_is_not():
    """Requantizing a GEMM's output in the epilogue: the mean over seeds of stochastic rounding converges to the
    FP32 output (within 5 standard errors of half a step), while round to nearest keeps its bias."""
    g = torch.Generator().manual_seed(3)
    qa, qb = _operands(64, 64, 96, 32, "nn", g)
    args = (qa.data, qa.scales, qb.data, qb.scales, 32, (64, 64))
    y = block_matmul(qa, qb, backend="cpu-vnni").double()
    step = jcpu.vnni_block_matmul_epilogue(*args, rounding="nearest", out="int8")[1]
    step = step.repeat_interleave(32, 0).repeat_interleave(32, 1).double()
    n = 300
    mean = sum(jcpu.vnni_block_matmul_epilogue(*args, rounding="stochastic", seed=s).double() for s in range(n)) / n
    assert bool(((mean - y).abs() <= 5 * 0.5 * step / math.sqrt(n) + 1e-12).all())
    near = jcpu.vnni_block_matmul_epilogue(*args, rounding="nearest").double()
    assert float((near - y).abs().mean()) > 10 * float((mean - y).abs().mean())


@needs_kernel
def test_new_gelu_runs_as_torch_tanh_gelu_on_the_kernel():
    """On the kernel, JetfireOp(NewGELUActivation) computes torch's tanh GELU: outputs and input gradients equal
    JetfireOp(nn.GELU(approximate="tanh")) bit for bit, and the seven-pass formula to FP32 rounding."""
    from transformers.activations import NewGELUActivation

    g = torch.Generator().manual_seed(5)
    x, gy = torch.randn(70, 96, generator=g) * 3, torch.randn(70, 96, generator=g)
    outs = []
    for module in (NewGELUActivation(), torch.nn.GELU(approximate="tanh")):
        xi = x.clone().requires_grad_()
        y = JetfireOp(module, seed=1)(xi)
        y.backward(gy)
        outs.append((y, xi.grad))
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
    xq = quantize_blocks(x).dequantize()
    assert torch.allclose(NewGELUActivation()(xq), torch.nn.functional.gelu(xq, approximate="tanh"), atol=1e-6)


def test_linear_gemm_without_the_kernel_is_the_unfused_ops():
    """The torch-ops path of linear_gemm is block_matmul, + bias, then quantize_raw / dequantize_raw."""
    g = torch.Generator().manual_seed(4)
    qa, qb = _operands(40, 70, 50, 32, "nn", g)
    bias = torch.randn(70, generator=g)
    for rounding in (None, "nearest", "stochastic"):
        g1, g2 = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
        got = linear_gemm(qa, qb, bias=bias, requantize=rounding, generator=g1, backend="torch")
        ref = block_matmul(qa, qb, backend="torch") + bias
        if rounding is not None:
            ref = quantize_raw(ref, 32, rounding, g2).dequantize()
        assert torch.equal(got, ref)
    with pytest.raises(InputError, match="requantize"):
        linear_gemm(qa, qb, requantize="up", backend="torch")
    with pytest.raises(InputError, match="inner dimension"):
        linear_gemm(qa, qa.t(), backend="torch")


def test_cpu_backend_refusals_name_the_fix(monkeypatch):
    q16 = quantize_blocks(torch.randn(40, 48), 16)
    with pytest.raises(InputError, match="backend='cpu-vnni'.*multiple of 32"):
        block_matmul(q16, q16, backend="cpu-vnni")
    monkeypatch.setattr(jcpu, "vnni_supported", lambda: False)
    monkeypatch.setitem(jcpu._state, "module", None)
    q = quantize_blocks(torch.randn(40, 48))
    with pytest.raises(InputError, match="AVX512-VNNI") as err:
        block_matmul(q, q, backend="cpu-vnni")
    assert "\n" not in str(err.value)
    assert not jcpu.cpu_kernel_usable(q.data, 32)  # "auto" falls back to torch ops


def test_auto_never_compiles_unless_asked(monkeypatch, tmp_path):
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))  # an empty cache: nothing built
    monkeypatch.delenv(jcpu.ENV_VAR, raising=False)
    monkeypatch.setitem(jcpu._state, "module", None)
    calls = []
    monkeypatch.setattr(jcpu, "load_cpu_kernel", lambda *a, **k: calls.append(1))
    q = quantize_blocks(torch.randn(40, 48))
    assert not jcpu.cpu_kernel_built() and not jcpu.cpu_kernel_usable(q.data, 32)
    ref, mag = _oracle(q, q)
    assert _close(block_matmul(q, q), ref, mag) and calls == []
    monkeypatch.setenv(jcpu.ENV_VAR, "1")
    assert jcpu.cpu_kernel_usable(q.data, 32) and calls == [1]  # asked for: it is built (here: the stub)
