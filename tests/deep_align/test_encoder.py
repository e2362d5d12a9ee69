"""The encoder's symmetries (paper Prop. 4) and the exactness they imply, on untrained and trained encoders."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from icml24.deep_align import DeepAlign
from icml24.deep_align.encoder import DeepAlignNet, EncoderConfig
from icml24.deep_align.permutations import invert, permute_hard, random_perms
from icml24.deep_align.sinkhorn import hungarian
from icml24.deep_align.training import permutation_accuracy
from icml24.deep_align.weights import WeightBatch
from icml24.threads import single_thread

TOL = 1e-5


def random_batch(widths, B, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return WeightBatch(
        tuple(scale * torch.randn(B, widths[k], widths[k + 1], generator=g) for k in range(len(widths) - 1)),
        tuple(scale * torch.randn(B, widths[k + 1], generator=g) for k in range(len(widths) - 1)),
    )


def small(widths, seed=0, **kw):
    cfg = dict(hidden=8, n_hidden=2, output_features=8, set_layer="ds", input_dim_downsample=4)
    cfg.update(kw)
    return DeepAlignNet(widths, EncoderConfig(**cfg), seed=seed).eval()


ARCHS = [(6, 5, 3), (9, 6, 5, 4), (7, 5, 4, 3, 2)]
VARIANTS = [
    dict(set_layer="ds", reduction="mean"),
    dict(set_layer="ds", reduction="max"),
    dict(set_layer="sab", reduction="max", num_heads=2),
    dict(bn=False, input_dim_downsample=None),
]


def check_equivariance(model, widths, seed):
    a, b = random_batch(widths, 3, seed), random_batch(widths, 3, seed + 1)
    g = torch.Generator().manual_seed(seed + 2)
    G, H = random_perms(a.hidden, 3, g), random_perms(a.hidden, 3, g)
    with torch.no_grad():
        S, S_gh, S_sw = model(a, b), model(permute_hard(a, G), permute_hard(b, H)), model(b, a)
    for l, (s, sg, ss) in enumerate(zip(S, S_gh, S_sw)):
        for i in range(3):
            expected = s[i][G[l][i]][:, H[l][i]]  # (G S H^T)[r, c] = S[g(r), h(c)]
            assert (sg[i] - expected).abs().max() <= TOL
        assert (ss - s.transpose(1, 2)).abs().max() <= TOL
    return S


@pytest.mark.parametrize("widths", ARCHS)
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(f"{k}={x}" for k, x in v.items()))
def test_scores_are_equivariant_and_swap_to_the_transpose(widths, variant):
    with single_thread():
        check_equivariance(small(widths, **variant), widths, seed=len(widths))


@settings(max_examples=15, deadline=None)
@given(widths=st.lists(st.integers(1, 7), min_size=3, max_size=5).map(tuple), seed=st.integers(0, 1000))
def test_equivariance_property(widths, seed):
    with single_thread():
        check_equivariance(small(widths, seed=seed), widths, seed)


@pytest.mark.parametrize("widths", ARCHS)
def test_alignment_transforms_with_the_inputs(widths):
    """The Hungarian alignment of (g a, h b) is h^-1 o p o g, and that of (b, a) is p^-1."""
    with single_thread():
        model = small(widths)
        a, b = random_batch(widths, 4, 5), random_batch(widths, 4, 6)
        g = torch.Generator().manual_seed(7)
        G, H = random_perms(a.hidden, 4, g), random_perms(a.hidden, 4, g)
        with torch.no_grad():
            p = [hungarian(s) for s in model(a, b)]
            p_gh = [hungarian(s) for s in model(permute_hard(a, G), permute_hard(b, H))]
            p_sw = [hungarian(s) for s in model(b, a)]
        for q, qg, gg, hh in zip(p, p_gh, G, H):
            assert torch.equal(qg, torch.gather(invert([hh])[0], 1, torch.gather(q, 1, gg)))
        assert permutation_accuracy(p_sw, invert(p)) == 1.0


@pytest.mark.parametrize("widths", ARCHS)
def test_exact_copies_are_recovered_by_construction(widths):
    """S(a, pi a) = F(a) F(a)^T Pi^T with unit-norm rows: the assignment undoing pi has the maximal total score,
    so even an untrained encoder recovers the permutation of an exact copy (generic weights)."""
    with single_thread():
        model = small(widths, seed=3)
        a = random_batch(widths, 6, 11)
        pi = random_perms(a.hidden, 6, torch.Generator().manual_seed(12))
        with torch.no_grad():
            pred = [hungarian(s) for s in model(a, permute_hard(a, pi))]
        assert permutation_accuracy(pred, invert(pi)) == 1.0


def test_embeddings_are_unit_norm_times_scale_and_training_mode_runs():
    model = small((6, 5, 4, 3))
    a = random_batch((6, 5, 4, 3), 4, 0)
    emb = model.embed(a)
    assert [tuple(e.shape) for e in emb] == [(4, 5, 8), (4, 4, 8)]
    assert torch.allclose(emb[0].norm(dim=-1), model.scale.detach().expand(4, 5), atol=1e-5)
    model.train()
    loss = sum(s.sum() for s in model(a, a))
    loss.backward()
    assert model.scale.grad is not None


def test_same_seed_same_encoder_and_public_scores():
    al1, al2 = (
        DeepAlign((6, 5, 4, 3), seed=4, hidden=8, output_features=8),
        DeepAlign((6, 5, 4, 3), seed=4, hidden=8, output_features=8),
    )
    a, b = random_batch((6, 5, 4, 3), 1, 1), random_batch((6, 5, 4, 3), 1, 2)
    with single_thread():
        s1, s2 = al1.scores(a, b), al2.scores(a, b)
    assert all(torch.equal(x, y) for x, y in zip(s1, s2)) and s1[0].shape == (5, 5)
