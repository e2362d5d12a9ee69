import itertools

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml24.deep_align.sinkhorn import hungarian, sinkhorn


def test_sinkhorn_is_doubly_stochastic_and_sharpens_with_tau():
    s = torch.randn(4, 7, 7, generator=torch.Generator().manual_seed(0))
    p = sinkhorn(s, 200, 1.0)
    assert torch.allclose(p.sum(-1), torch.ones(4, 7), atol=1e-5)
    assert torch.allclose(p.sum(-2), torch.ones(4, 7), atol=1e-4)
    sharp = sinkhorn(s, 500, 0.01)
    assert torch.equal(sharp.argmax(-1), hungarian(s))


def test_implicit_backward_equals_unrolled_autograd_at_the_fixed_point():
    g = torch.Generator().manual_seed(1)
    s = torch.randn(3, 6, 6, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 6, 6, generator=g, dtype=torch.float64)
    for tau in (1.0, 0.5):
        (g_imp,) = torch.autograd.grad((sinkhorn(s, 300, tau, implicit=True) * w).sum(), s)
        (g_unr,) = torch.autograd.grad((sinkhorn(s, 300, tau, implicit=False) * w).sum(), s)
        assert torch.allclose(g_imp, g_unr, atol=1e-9)
    # at the official 20 iterations the two still agree closely
    (g_imp,) = torch.autograd.grad((sinkhorn(s, 20) * w).sum(), s)
    (g_unr,) = torch.autograd.grad((sinkhorn(s, 20, implicit=False) * w).sum(), s)
    assert torch.allclose(g_imp, g_unr, atol=1e-5)


def test_implicit_gradient_matches_finite_differences():
    s = torch.randn(1, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    w = torch.randn(1, 4, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    s.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: (sinkhorn(x, 400) * w).sum(), (s,), atol=1e-6)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 5), seed=st.integers(0, 10_000))
def test_hungarian_maximises_the_total_score(n, seed):
    s = torch.randn(n, n, generator=torch.Generator().manual_seed(seed))
    p = hungarian(s)
    best = max(sum(float(s[i, q[i]]) for i in range(n)) for q in itertools.permutations(range(n)))
    assert abs(sum(float(s[i, p[i]]) for i in range(n)) - best) < 1e-5
    assert sorted(p.tolist()) == list(range(n))
