"""Multi-head use: every head's answers equal ``softmax(Q K^T) V`` computed here, through updates, appends and
deletes, in float32 and float64, returned on the input's device."""

import pytest
import torch

from icml24.dynamic_attention import MultiHeadDynamicAttention


def reference(Q, K, V):
    return torch.softmax(Q @ K.transpose(1, 2), dim=2) @ V


@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 2e-5)])
def test_heads_match_softmax_attention(dtype, tol):
    g = torch.Generator().manual_seed(0)
    h, m, n, d, dv = 3, 5, 7, 4, 2
    Q = torch.randn(h, m, d, generator=g).to(dtype)
    K = torch.randn(h, n, d, generator=g).to(dtype)
    V = torch.randn(h, n, dv, generator=g).to(dtype)
    mh = MultiHeadDynamicAttention(Q, K, V, 0.5, k=3)
    K, V = K.clone(), V.clone()
    for t in range(24):
        if t % 4 == 0:
            kr, vr = torch.randn(h, d, generator=g).to(dtype), torch.randn(h, dv, generator=g).to(dtype)
            assert mh.append_row(kr, vr) == K.shape[1]
            K, V = torch.cat([K, kr[:, None]], 1), torch.cat([V, vr[:, None]], 1)
        elif t % 4 == 1:
            i = t % mh.n
            mh.delete_row(i)
            K[:, i], V[:, i] = K[:, -1], V[:, -1]  # the last row takes index i
            K, V = K[:, :-1], V[:, :-1]
        elif t % 4 == 2:
            delta = torch.randn(h, d, generator=g).to(dtype)
            mh.update_k_row(t % mh.n, delta)
            K[:, t % mh.n] += delta
        else:
            delta = torch.randn(h, dv, generator=g).to(dtype)
            mh.update_v_row(t % mh.n, delta)
            V[:, t % mh.n] += delta
        truth = reference(Q, K, V)
        out = mh.to_dense()
        assert out.dtype == dtype and out.shape == (h, m, dv)
        torch.testing.assert_close(out, truth, rtol=tol, atol=tol)
        torch.testing.assert_close(mh.query_row(t % m), truth[:, t % m], rtol=tol, atol=tol)
    assert mh.n == K.shape[1]


def test_a_list_of_heads_and_the_input_device():
    g = torch.Generator().manual_seed(1)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    Q = [torch.randn(4, 3, generator=g, dtype=torch.float64).to(dev) for _ in range(2)]
    K = [torch.randn(6, 3, generator=g, dtype=torch.float64).to(dev) for _ in range(2)]
    V = [torch.randn(6, 2, generator=g, dtype=torch.float64).to(dev) for _ in range(2)]
    mh = MultiHeadDynamicAttention(Q, K, V)
    out = mh.to_dense()
    assert out.device.type == dev and mh.query_row(0).device.type == dev
    torch.testing.assert_close(out.cpu(), reference(*(torch.stack(x).cpu() for x in (Q, K, V))))
