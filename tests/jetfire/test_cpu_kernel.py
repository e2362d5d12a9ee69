"""The fused AVX512-VNNI CPU kernel (``backend="cpu-vnni"``) against the torch-ops path and float64 oracles.

Every test that runs the kernel skips unless it is already built in torch's extension cache (building takes
a minute or two: ``python -c "from icml24.jetfire.cpu import load_cpu_kernel; load_cpu_kernel()"`` or set
``ICML24_JETFIRE_CPU_KERNEL=1``), so CI never pays a compile.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml24.errors import InputError
from icml24.jetfire import JetfireLinear, block_matmul, quantize_blocks
from icml24.jetfire import cpu as jcpu
from icml24.jetfire.quant import dequantize_raw, quantize_raw

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
