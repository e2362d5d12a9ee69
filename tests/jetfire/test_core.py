"""Unit and property tests of icml24.jetfire against oracles it does not compute (float64 formulas)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml24.jetfire import (
    BlockQuant,
    Int8Linear,
    JetfireLinear,
    block_matmul,
    convert,
    convert_baseline,
    fake_quantize,
    quantize_blocks,
    relative_error,
)
from icml24.nn.lm import tiny_gpt2, tiny_llama
from icml24.testing import fingerprint, same

CUDA = torch.cuda.is_available()


def _blockwise_step(x: torch.Tensor, b: int) -> torch.Tensor:
    """float64 oracle: each element's quantization step absmax(block) / 127."""
    m, n = x.shape
    out = torch.empty(m, n, dtype=torch.float64)
    for i in range(0, m, b):
        for j in range(0, n, b):
            blk = x[i : i + b, j : j + b].double()
            out[i : i + b, j : j + b] = blk.abs().max() / 127.0
    return out


@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(1, 70),
    n=st.integers(1, 70),
    k=st.integers(1, 90),
    block=st.sampled_from([8, 16, 32]),
    seed=st.integers(0, 10_000),
)
def test_block_gemm_equals_dequantize_then_matmul(m, n, k, block, seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(m, k, generator=g) * torch.rand(1, k, generator=g) * 10
    b = torch.randn(n, k, generator=g)
    qa, qb = quantize_blocks(a, block), quantize_blocks(b, block)
    y = block_matmul(qa, qb)
    ref = qa.dequantize(torch.float64) @ qb.dequantize(torch.float64).T
    mag = qa.dequantize(torch.float64).abs() @ qb.dequantize(torch.float64).abs().T
    assert y.shape == (m, n) and y.dtype == torch.float32
    assert bool(((y.double() - ref).abs() <= 2e-6 * mag + 1e-30).all())


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 70), n=st.integers(1, 70), block=st.sampled_from([4, 32, 64]), seed=st.integers(0, 10_000))
def test_round_trip_error_is_at_most_half_a_step_per_block(m, n, block, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, n, generator=g) * torch.exp(3 * torch.randn(m, 1, generator=g))
    q = quantize_blocks(x, block)
    step = _blockwise_step(x, block)
    assert q.data.dtype == torch.int8 and q.data.shape == (-(-m // block) * block, -(-n // block) * block)
    assert bool(((q.dequantize(torch.float64) - x.double()).abs() <= 0.5 * step * (1 + 1e-5) + 1e-30).all())
    # scales are absmax / 127 of each block
    assert torch.allclose(q.scales.double(), step[::block, ::block], rtol=1e-6, atol=0)


def test_zero_blocks_and_padding():
    x = torch.zeros(40, 70)
    x[:5, :3] = torch.tensor([[127.0, -64.0, 3.0]])  # step 1: exact
    q = quantize_blocks(x)
    assert q.scales.shape == (2, 3) and q.scales[1].eq(0).all() and q.scales[0, 1:].eq(0).all()
    assert q.data[32:].eq(0).all() and torch.equal(q.dequantize()[:5, :3], x[:5, :3])
    assert torch.equal(quantize_blocks(torch.zeros(3, 3)).dequantize(), torch.zeros(3, 3))
    y = block_matmul(q, quantize_blocks(torch.zeros(7, 70)))
    assert torch.equal(y, torch.zeros(40, 7))


def test_stochastic_rounding_is_unbiased_and_nearest_loses_small_updates():
    step = 1.0 / 127.0
    w = (torch.arange(-63, 65, dtype=torch.float32) * step).repeat(64, 1)  # grid points in [-0.5, 0.5]
    w[:, ::32] = 1.0  # one element per block pins absmax = 1, so the step stays 1 / 127
    u = torch.full_like(w, 0.2 * step)  # an update below half a step ...
    u[:, ::32] = 0.0  # ... everywhere but the pinned elements
    g = torch.Generator().manual_seed(0)
    n = 400
    mean = sum(quantize_blocks(w + u, rounding="stochastic", generator=g).dequantize() for _ in range(n)) / n
    # unbiased: the mean over draws is w + u within 5 standard errors (a draw's std is at most step / 2)
    assert float((mean - (w + u)).abs().max()) <= 5 * 0.5 * step / math.sqrt(n)
    assert float((mean - w)[u > 0].mean()) == pytest.approx(0.2 * step, rel=0.05)
    # round to nearest maps w + u back onto w: the update is lost (a bias of -u)
    assert torch.allclose(quantize_blocks(w + u).dequantize(), w, rtol=0, atol=1e-6)


def test_transpose_and_autograd_view_round_trip():
    x = torch.randn(50, 33)
    q = quantize_blocks(x)
    assert torch.equal(q.t().dequantize(), q.dequantize().T)
    data, scales = q.to_autograd()
    assert data.dtype == torch.float8_e4m3fn and data.data_ptr() == q.data.data_ptr()
    back = BlockQuant.from_autograd(data, scales, q.shape, q.block)
    assert torch.equal(back.data, q.data) and back.shape == (50, 33)


def test_relative_error_granularities():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 256, generator=g)
    x[:, 7] *= 50
    e = {gr: relative_error(x, gr) for gr in ("block", "tensor", "token", "channel")}
    assert e["channel"] < e["block"] < e["token"] <= e["tensor"] * 1.01
    assert torch.equal(fake_quantize(x, "block"), quantize_blocks(x).dequantize())


def test_jetfire_linear_gradients_close_to_fp32():
    g = torch.Generator().manual_seed(0)
    ref = torch.nn.Linear(96, 80)
    layer = JetfireLinear.from_linear(ref, seed=1)
    x = torch.randn(4, 30, 96, generator=g)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    w = torch.randn(4, 30, 80, generator=g)
    (ref(x1) * w).sum().backward()
    (layer(x2) * w).sum().backward()

    def rel(a, b):
        return float((a - b).detach().norm() / b.detach().norm())

    assert rel(layer(x), ref(x)) < 0.03
    assert rel(x2.grad, x1.grad) < 0.05
    assert rel(layer.weight.grad, ref.weight.grad) < 0.05
    assert rel(layer.bias.grad, ref.bias.grad) < 1e-5


@pytest.mark.parametrize("scheme", ["per_tensor", "switchback"])
def test_int8_baselines_gradients_close_to_fp32(scheme):
    g = torch.Generator().manual_seed(0)
    ref = torch.nn.Linear(64, 48)
    layer = Int8Linear.from_linear(ref, scheme=scheme)
    x = torch.randn(100, 64, generator=g)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    ref(x1).square().sum().backward()
    layer(x2).square().sum().backward()
    assert float((x2.grad - x1.grad).norm() / x1.grad.norm()) < 0.1
    assert float((layer.weight.grad - ref.weight.grad).norm() / ref.weight.grad.norm()) < 0.1


@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_convert_keeps_outputs_within_quantization_error_and_leaves_model(family):
    if family == "gpt2":
        model = tiny_gpt2(50, n_positions=32, n_embd=64, n_layer=2, n_head=4, seed=0)
    else:
        model = tiny_llama(50, max_position_embeddings=32, hidden_size=64, num_hidden_layers=2, seed=0)
    before = fingerprint(model)
    jet = convert(model)
    assert same(fingerprint(model), before)
    kinds = {type(m).__name__ for m in jet.modules()}
    assert {"JetfireLinear", "JetfireOp"} <= kinds and "Conv1D" not in kinds
    assert type(jet.get_output_embeddings()).__name__ == "Linear"  # the LM head stays FP
    ids = torch.randint(0, 50, (2, 32), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        a, b = model(ids).logits, jet(ids).logits
    assert float((a - b).norm() / a.norm()) < 0.05
    base = convert_baseline(model, "per_tensor")
    with torch.no_grad():
        c = base(ids).logits
    assert float((a - c).norm() / a.norm()) < 0.1
    jet.train()
    jet(input_ids=ids, labels=ids).loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in jet.parameters() if p.requires_grad)


def test_torchao_peer_runs_on_cpu():
    pytest.importorskip("torchao")
    from icml24.jetfire import torchao_int8_mixed_precision

    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 32))
    peer = torchao_int8_mixed_precision(model)
    x = torch.randn(32, 64)
    y = peer(x)
    y.sum().backward()
    with torch.no_grad():
        ref = model(x)
    assert float((y.detach() - ref).norm() / ref.norm()) < 0.05


@pytest.mark.skipif(not CUDA, reason="the GPU path is tested where CUDA is present")
@pytest.mark.parametrize("backend", ["auto", "torch"])
@pytest.mark.parametrize("block", [16, 32, 64, 8])
@pytest.mark.parametrize("shape", [(100, 200, 70), (33, 65, 17), (256, 512, 384)])
def test_gpu_block_matmul_matches_cpu(backend, block, shape):
    m, k, n = shape
    g = torch.Generator().manual_seed(m + k + n)
    a, b = torch.randn(m, k, generator=g), torch.randn(n, k, generator=g)
    a[:, :block] = 0.0  # a zero block column
    qa_c, qb_c = quantize_blocks(a.cuda(), block), quantize_blocks(b.cuda(), block)
    for x, q_c in ((a, qa_c), (b, qb_c)):
        # CPU and CUDA kernels may differ in the last bit of a scale (absmax / 127), which can flip a rare tie
        # of round-to-nearest: one step at a handful of elements, never more
        q = quantize_blocks(x, block)
        assert torch.allclose(q_c.scales.cpu(), q.scales, rtol=1e-6, atol=0)
        diff = (q_c.data.cpu().int() - q.data.int()).abs()
        assert int(diff.max()) <= 1 and float((diff > 0).float().mean()) < 1e-3
    # the GEMM itself, against float64 products of the very operands it was given
    qa, qb = (BlockQuant(q.data.cpu(), q.scales.cpu(), q.shape, q.block) for q in (qa_c, qb_c))
    ref = qa.dequantize().double() @ qb.dequantize().double().t()
    got = block_matmul(qa_c, qb_c, backend=backend)
    assert got.is_cuda and got.shape == (m, n)
    _assert_fp32_close(got, ref, k)
    _assert_fp32_close(got, block_matmul(qa, qb), k)
    # transposed operands, as the backward GEMMs pass them
    got_t = block_matmul(qa_c.t(), qa_c.t(), backend=backend)
    _assert_fp32_close(got_t, qa.dequantize().double().t() @ qa.dequantize().double(), m)


def _assert_fp32_close(got: torch.Tensor, want: torch.Tensor, k: int) -> None:
    """Equal up to FP32 rounding of a k-term sum: |error| <= k * eps32 * sum of |terms| (bounded by max |y| k)."""
    got, want = got.detach().cpu().double(), want.detach().cpu().double()
    err = (got - want).abs()
    bound = k * 1.2e-7 * (want.abs().max() + 1.0)
    i = int(err.argmax())
    assert float(err.max()) <= float(bound), (
        f"max error {float(err.max()):.3g} at {divmod(i, got.shape[1])} (got {float(got.flatten()[i]):.6f}, "
        f"want {float(want.flatten()[i]):.6f}), bound {float(bound):.3g}"
    )


@pytest.mark.skipif(not CUDA, reason="the GPU path is tested where CUDA is present")
def test_gpu_triton_backend_is_used_and_refuses_small_blocks():
    from icml24.errors import InputError

    qa, qb = quantize_blocks(torch.randn(64, 64, device="cuda")), quantize_blocks(torch.randn(64, 64, device="cuda"))
    y = block_matmul(qa, qb, backend="triton")
    assert torch.allclose(y, block_matmul(qa, qb, backend="torch"), rtol=1e-5, atol=1e-4)
    q16 = quantize_blocks(torch.randn(64, 64, device="cuda"), 16)
    with pytest.raises(InputError, match="backend"):
        block_matmul(q16, q16, backend="triton")


@pytest.mark.skipif(not CUDA, reason="the GPU path is tested where CUDA is present")
def test_gpu_linear_gradients_match_cpu_and_fp32():
    torch.manual_seed(0)
    ref = torch.nn.Linear(200, 70)
    x = torch.randn(100, 200)
    outs = {}
    for dev in ("cpu", "cuda"):
        layer = JetfireLinear.from_linear(ref).to(dev)
        xi = x.clone().to(dev).requires_grad_()
        y = layer(xi)
        y.square().sum().backward()
        outs[dev] = (y.detach().cpu(), xi.grad.cpu(), layer.weight.grad.cpu())
        assert y.is_cuda == (dev == "cuda") and layer.weight.grad.device.type == dev
    xr = x.clone().requires_grad_()
    yr = ref(xr)
    yr.square().sum().backward()
    for got, want in zip(outs["cuda"], (yr.detach(), xr.grad, ref.weight.grad)):
        assert float((got - want).norm() / want.norm()) < 0.05
    assert torch.allclose(outs["cuda"][0], outs["cpu"][0], rtol=1e-4, atol=1e-4)  # forward: round to nearest


@pytest.mark.skipif(not CUDA, reason="the GPU path is tested where CUDA is present")
@pytest.mark.parametrize("family", ["gpt2", "llama"])
def test_gpu_convert_trains_a_model(family):
    torch.manual_seed(0)
    make = tiny_gpt2 if family == "gpt2" else tiny_llama
    model = make(50, n_positions=64, n_embd=64, n_layer=2, n_head=2) if family == "gpt2" else make(50)
    model = model.cuda()
    ids = torch.randint(0, 50, (4, 32), device="cuda")
    with torch.no_grad():
        ref = model(ids).logits
    jet = convert(model)
    assert next(model.parameters()).is_cuda  # the user's model is left as it was
    with torch.no_grad():
        got = jet(ids).logits
    assert got.is_cuda and float((got - ref).norm() / ref.norm()) < 0.1
    opt = torch.optim.AdamW(jet.parameters(), lr=1e-3)
    losses = []
    for _ in range(5):
        loss = jet(ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]


@pytest.mark.parametrize("device", ["tpu", "cuda:x"] + ([] if CUDA else ["cuda"]))
def test_cli_refuses_a_bad_device(device, capsys, tmp_path):
    from icml24.cli import main

    argv = ["jetfire", "train", "--steps", "1", "--layers", "1", "--width", "32", "--device", device]
    assert main([*argv, "--out", str(tmp_path)]) != 0 and not list(tmp_path.iterdir())
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) >= 1 and err[0].startswith("error: --device")
