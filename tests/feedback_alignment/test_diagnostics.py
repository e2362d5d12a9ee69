"""Alignment angles, update-gradient alignment and dominance, the recorder, the aligned initialisation."""

import math

import pytest
import torch
from torch import nn

from icml24.errors import InputError
from icml24.feedback_alignment import (
    AlignmentRecorder,
    FeedbackNetwork,
    align_init_,
    alignment_angles,
    make_mlp,
    train,
    update_alignment,
)


def _data(n_in, n_out, n=40, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, n_in, generator=g)
    return x, torch.randint(0, n_out, (n,), generator=g)


def test_alignment_angles_of_backprop_tied_random_and_dfa():
    model = make_mlp([6, 30, 20, 5], seed=0)
    assert alignment_angles(FeedbackNetwork(model, "backprop")) == pytest.approx([1.0, 1.0])
    lins = [m for m in model if isinstance(m, nn.Linear)]
    tied = FeedbackNetwork(model, "fa", feedback=[l.weight.detach().T for l in lins])
    assert alignment_angles(tied) == pytest.approx([1.0, 1.0])
    rand = alignment_angles(FeedbackNetwork(model, "fa", seed=1))
    assert all(abs(c) < 4 / math.sqrt(n) for c, n in zip(rand, (20 * 30, 5 * 20)))  # chance level
    dfa = alignment_angles(FeedbackNetwork(make_mlp([6, 30, 20, 5], seed=0), "dfa", seed=1))
    assert math.isnan(dfa[0]) and math.isfinite(dfa[1])
    usf = alignment_angles(FeedbackNetwork(model, "usf"))
    assert all(0.6 < c < 1.0 for c in usf)  # sign-concordant: cos = ||W||_1 / (sqrt(n) ||W||_F), about sqrt(2/pi)


def test_update_alignment_leaves_grads_alone_and_reports_dominance():
    x, y = _data(6, 4)
    net = FeedbackNetwork(make_mlp([6, 16, 16, 4], seed=0), "fa", seed=1)
    for p in net.parameters():
        p.grad = torch.full_like(p, 7.0)
    ua = update_alignment(net, x, y)
    assert all(torch.all(p.grad == 7.0) for p in net.parameters())
    assert len(ua.cosine) == 3 and ua.cosine[-1] == pytest.approx(1.0)
    assert ua.rho == pytest.approx(sum(ua.inner) / sum(ua.grad_sq))
    assert all(-1.0 <= c <= 1.0 for c in ua.cosine) and math.isfinite(ua.loss)


def test_training_aligns_fa_and_its_updates_descend():
    """FA learns to align: cos(B, W^T) and the update-gradient cosine rise, and rho stays positive."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 8, generator=g)
    y = x[:, :3].argmax(1)
    net = FeedbackNetwork(make_mlp([8, 32, 32, 3], seed=0, init_scale=0.1), "fa", seed=1)
    rec = AlignmentRecorder(net, x, y, every=20)
    train(net, x, y, lr=0.2, steps=200, callback=rec)
    align = rec.series("alignment")
    assert [r["step"] for r in rec.history] == list(range(0, 201, 20))
    assert all(a > b + 0.05 for a, b in zip(align[-1], align[0]))
    assert all(r > 0 for r in rec.series("rho")[1:])
    inc = rec.series("incoming")
    assert all(a > 2 * b for a, b in zip(inc[-1], inc[0]))
    # the law's bookkeeping: the potential gained what the incoming norms gained (up to the O(eta) drift)
    pot = rec.series("potential")
    for l in range(2):
        assert pot[-1][l] - pot[0][l] == pytest.approx(inc[-1][l] - inc[0][l], rel=0.05)


def test_recorder_without_update_and_bad_arguments():
    net = FeedbackNetwork(make_mlp([4, 5, 3], seed=0), "fa")
    rec = AlignmentRecorder(net, update=False, every=2)
    for s in range(5):
        rec(s)
    assert len(rec.history) == 3 and "rho" not in rec.history[0]
    with pytest.raises(InputError, match="no recorded series"):
        rec.series("rho")
    with pytest.raises(InputError, match="update=True"):
        AlignmentRecorder(net)
    with pytest.raises(InputError, match="every"):
        AlignmentRecorder(net, update=False, every=0)
    with pytest.raises(InputError, match="FeedbackNetwork"):
        AlignmentRecorder(nn.Sequential(nn.Linear(2, 2)), update=False)


def test_align_init_keeps_norms_and_sets_the_alignment():
    net = FeedbackNetwork(make_mlp([6, 30, 20, 5], seed=0), "fa", seed=1)
    norms = [float(l.weight.detach().norm()) for l in net.linears]
    w0 = net.linears[0].weight.detach().clone()
    align_init_(net, 0.0)
    assert alignment_angles(net)[0] < 0.2
    align_init_(net, 1.0)
    assert alignment_angles(net) == pytest.approx([1.0, 1.0])
    assert [float(l.weight.detach().norm()) for l in net.linears] == pytest.approx(norms)
    assert torch.equal(net.linears[0].weight, w0)  # the first layer's feedback only reaches the input
    half = FeedbackNetwork(make_mlp([6, 30, 20, 5], seed=0), "fa", seed=1)
    align_init_(half, 0.5)
    assert all(0.5 < c < 0.85 for c in alignment_angles(half))
    with pytest.raises(InputError, match="strength"):
        align_init_(half, 1.5)
    with pytest.raises(InputError, match="usf"):
        align_init_(FeedbackNetwork(make_mlp([6, 30, 20, 5], seed=0), "usf"), 0.3)
