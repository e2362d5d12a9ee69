"""The rest of the rule family (brSF, Kolen-Pollack, weight mirror), which of them obey the law, and CNNs."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from icml24.errors import InputError
from icml24.feedback_alignment import (
    RULES,
    FeedbackNetwork,
    alignment_angles,
    conserved_quantity,
    make_cnn,
    make_mlp,
    train,
    update_alignment,
)
from tests.conftest import needs_fashion


def _data(shape, n_out, n=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, *shape, generator=g, dtype=torch.float64), torch.randint(0, n_out, (n,), generator=g)


def _euler(net, x, y, eta):
    params = list(net.parameters())  # Kolen-Pollack's and the mirror's feedback move too
    u = torch.autograd.grad(F.cross_entropy(net(x), y), params)
    with torch.no_grad():
        for p, d in zip(params, u):
            p.sub_(eta * d)


def _one_step(net, x, y, eta, reseed=None):
    net = copy.deepcopy(net)
    if reseed is not None:
        net._gen.manual_seed(reseed)
    c0 = torch.cat(conserved_quantity(net))
    _euler(net, x, y, eta)
    return float((torch.cat(conserved_quantity(net)) - c0).abs().max())


def test_every_rule_declares_its_law():
    laws = {name: r.law for name, r in RULES.items()}
    assert laws == {
        "backprop": "exact",
        "fa": "exact",
        "dfa": "none",
        "usf": "exact",
        "frsf": "exact",
        "brsf": "expectation",
        "kp": "exact",
        "wm": "none",
    }


@pytest.mark.parametrize("rule", ["fa", "backprop", "usf", "frsf", "kp"])
@pytest.mark.parametrize("arch", ["mlp", "cnn"])
def test_rules_with_a_potential_change_c_at_second_order(rule, arch):
    """One Euler step changes C_{l,k} by O(eta^2) (x4 when eta doubles) for the rules whose law is exact,
    for MLPs and for CNNs (a channel is a unit; Flatten and pooling in between)."""
    if arch == "mlp":
        net = FeedbackNetwork(make_mlp([5, 9, 8, 3], seed=1, dtype=torch.float64), rule, seed=2)
        x, y = _data((5,), 3, seed=1)
    else:
        net = FeedbackNetwork(make_cnn(1, 8, (3, 4), 3, seed=1, dtype=torch.float64), rule, seed=2)
        x, y = _data((1, 8, 8), 3, seed=1)
    ratio = _one_step(net, x, y, 0.02) / _one_step(net, x, y, 0.01)
    assert 3.8 <= ratio <= 4.2, ratio


@pytest.mark.parametrize("rule", ["brsf", "wm"])
def test_rules_without_a_potential_change_c_at_first_order(rule):
    """brSF (magnitudes redrawn) and the weight mirror (B moved by noise): the first-order terms do not cancel,
    one step changes C by O(eta) (about x2 when eta doubles), as the table in rules.py says."""
    net = FeedbackNetwork(make_mlp([5, 9, 8, 3], seed=1, dtype=torch.float64), rule, seed=2)
    x, y = _data((5,), 3, seed=1)
    ratio = _one_step(net, x, y, 0.02, reseed=5) / _one_step(net, x, y, 0.01, reseed=5)
    assert 1.5 <= ratio <= 2.6, ratio


def test_brsf_law_holds_in_expectation():
    """Averaged over brSF's magnitude draws, the first-order change of C cancels: the mean one-step change is
    far below the typical single-draw change."""
    net = FeedbackNetwork(make_mlp([5, 9, 8, 3], seed=1, dtype=torch.float64), "brsf", seed=2)
    x, y = _data((5,), 3, seed=1)
    changes = []
    for r in range(200):
        n = copy.deepcopy(net)
        n._gen.manual_seed(r)
        c0 = torch.cat(conserved_quantity(n))
        _euler(n, x, y, 1e-3)
        changes.append(torch.cat(conserved_quantity(n)) - c0)
    d = torch.stack(changes)
    assert float(d.mean(0).abs().max()) < 0.25 * float(d.abs().mean(0).max())


def test_brsf_feedback_has_the_signs_of_w_and_new_magnitudes_every_batch():
    net = FeedbackNetwork(make_mlp([6, 9, 8, 4], seed=2), "brsf", seed=3)
    x, y = _data((6,), 4, n=30, seed=2)
    x = x.float()
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    seen = []
    for _ in range(5):
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        for j, lin in enumerate(net.linears):
            b = net.feedback_matrix(j)
            assert torch.equal(torch.sign(b), torch.sign(lin.weight.detach()).T)
        seen.append(net.feedback_matrix(1).abs())
        opt.step()
    assert not torch.equal(seen[0], seen[1])  # magnitudes redrawn per batch
    assert net.fixed_feedback is None and not any("feedback" in k for k in net.state_dict())
    again = FeedbackNetwork(make_mlp([6, 9, 8, 4], seed=2), "brsf", seed=3)
    again(x)
    assert torch.equal(FeedbackNetwork(make_mlp([6, 9, 8, 4], seed=2), "brsf", seed=3)(x), again(x))


@pytest.mark.parametrize("arch", ["mlp", "cnn"])
def test_kolen_pollack_w_minus_b_transpose_decays_geometrically(arch):
    """Akrout et al. 2019: dB = dW^T and the same decay, so W - B^T <- (1 - lr * decay)(W - B^T) each step."""
    lr, decay, steps = 0.05, 0.3, 40
    if arch == "mlp":
        net = FeedbackNetwork(make_mlp([6, 9, 8, 4], seed=0, dtype=torch.float64), "kp", seed=1)
        x, y = _data((6,), 4, n=30)
    else:
        net = FeedbackNetwork(make_cnn(1, 8, (3, 4), 4, dtype=torch.float64), "kp", seed=1)
        x, y = _data((1, 8, 8), 4, n=30)
    diff0 = [l.weight.detach() - net.feedback_matrix(j).transpose(0, 1) for j, l in enumerate(net.layers)]
    before = alignment_angles(net)
    train(net, x, y, lr=lr, steps=steps, weight_decay=decay)
    factor = (1 - lr * decay) ** steps
    for j, l in enumerate(net.layers):
        diff = l.weight.detach() - net.feedback_matrix(j).transpose(0, 1)
        assert torch.allclose(diff, factor * diff0[j], rtol=1e-9, atol=1e-12)
    assert all(a > b for a, b in zip(alignment_angles(net), before))  # so the alignment rises


def test_kolen_pollack_without_decay_keeps_w_minus_b_transpose():
    net = FeedbackNetwork(make_mlp([6, 9, 8, 4], seed=0, dtype=torch.float64), "kp", seed=1)
    x, y = _data((6,), 4, n=30)
    d0 = net.linears[1].weight.detach() - net.feedback_matrix(1).T
    w0 = net.linears[1].weight.detach().clone()
    train(net, x, y, lr=0.1, steps=10)
    assert not torch.allclose(w0, net.linears[1].weight.detach())
    assert torch.allclose(net.linears[1].weight.detach() - net.feedback_matrix(1).T, d0, atol=1e-12)


def test_weight_mirror_drives_b_toward_w_transpose():
    net = FeedbackNetwork(make_mlp([6, 16, 12, 4], seed=0), "wm", seed=1)
    x, y = _data((6,), 4, n=30)
    before = alignment_angles(net)
    train(net, x.float(), y, lr=0.1, steps=60)
    after = alignment_angles(net)
    assert all(abs(b) < 0.3 for b in before) and all(a > 0.8 for a in after)


def test_every_rule_reports_its_conserved_quantity_and_dominance_and_trains():
    x, y = _data((6,), 4, n=64)
    x = x.float()
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    for rule in RULES:
        net = FeedbackNetwork(make_mlp([6, 16, 16, 4], seed=0), rule, seed=1)
        losses = train(net, x, y, lr=0.2, steps=60)
        assert losses[-1] < 0.8 * losses[0], rule
        cs = conserved_quantity(net)
        assert len(cs) == 2 and (rule == "dfa" or all(torch.isfinite(c).all() for c in cs))
        assert math.isfinite(update_alignment(net, x, y).rho)


# ----------------------------------------------------------------------------------------------- CNNs
@pytest.mark.parametrize("pool", ["avg", "max"])
def test_cnn_with_tied_feedback_is_exactly_backprop(pool):
    """FA with feedback kernels tied to W.transpose(0, 1) reproduces autograd's gradient, input included."""
    model = make_cnn(2, 8, (3, 5), 4, pool=pool, seed=3, dtype=torch.float64)
    model[0].stride = (1, 1)
    layers = [m for m in model if isinstance(m, (nn.Linear, nn.Conv2d))]
    net = FeedbackNetwork(model, "fa", feedback=[l.weight.detach().transpose(0, 1) for l in layers])
    x, y = _data((2, 8, 8), 4, n=7, seed=3)
    x.requires_grad_(True)
    ps = list(model.parameters()) + [x]
    g = torch.autograd.grad(F.cross_entropy(model(x), y), ps)
    u = torch.autograd.grad(F.cross_entropy(net(x), y), ps)
    for a, b in zip(g, u):
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-14)


def test_strided_padded_conv_matches_hand_written_transposed_convolution():
    conv = nn.Conv2d(2, 3, 3, stride=2, padding=1, dtype=torch.float64)
    model = nn.Sequential(conv, nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 2, dtype=torch.float64))
    net = FeedbackNetwork(model, "fa", seed=0)
    x, y = _data((2, 8, 8), 2, n=5)
    x.requires_grad_(True)
    z = net(x)
    e = torch.autograd.grad(F.cross_entropy(z, y), [x])[0]
    # the error at the conv output, by hand, then the transposed convolution with the feedback kernel
    h = torch.relu(F.conv2d(x, conv.weight, conv.bias, stride=2, padding=1))
    ez = (torch.softmax(z, 1) - F.one_hot(y, 2)) / 5
    eh = (ez @ net.feedback_matrix(1).T).reshape(h.shape) * (h > 0)
    want = F.conv_transpose2d(eh, net.feedback_matrix(0).transpose(0, 1), stride=2, padding=1, output_padding=1)
    assert torch.allclose(e, want, rtol=1e-10, atol=1e-13)
    assert net.feedback_matrix(0).shape == (2, 3, 3, 3)


def test_cnn_rules_train_and_dfa_needs_the_input_shape():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 1, 8, 8, generator=g)
    y = (x[:, 0, :4].mean((1, 2)) > x[:, 0, 4:].mean((1, 2))).long()
    for rule in RULES:
        net = FeedbackNetwork(make_cnn(1, 8, (4, 8), 2, seed=0), rule, seed=1, input_shape=(1, 8, 8))
        losses = train(net, x, y, lr=0.1, steps=40)
        assert losses[-1] < losses[0], rule
    with pytest.raises(InputError, match="input_shape"):
        FeedbackNetwork(make_cnn(1, 8, (4, 8), 2), "dfa")
    with pytest.raises(InputError, match="does not fit"):
        FeedbackNetwork(make_cnn(1, 8, (4, 8), 2), "dfa", input_shape=(1, 6, 6))
    dfa = FeedbackNetwork(make_cnn(1, 8, (4, 8), 2), "dfa", input_shape=(1, 8, 8))
    assert [tuple(b.shape) for b in dfa.fixed_feedback] == [(64, 2), (4 * 16, 2), (8 * 4, 2)]
    with pytest.raises(InputError, match=r"expected \(n, 1, H, W\)"):
        dfa(torch.randn(3, 2, 8, 8))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"channels": ()}, "channels"),
        ({"image_size": 10, "channels": (2, 2)}, "divisible"),
        ({"kernel_size": 2}, "odd"),
        ({"pool": "lp"}, "pool"),
        ({"n_classes": 1}, "n_classes"),
    ],
)
def test_bad_make_cnn_arguments(kwargs, match):
    with pytest.raises(InputError, match=match):
        make_cnn(**kwargs)


@needs_fashion
def test_fashion_mnist_cnn_table():
    from icml24.feedback_alignment.experiments import fashion_mnist_cnn, format_table

    rows = fashion_mnist_cnn(("backprop", "kp"), epochs=1, n_train=300, n_test=100, channels=(2, 4))
    assert [r["rule"] for r in rows] == ["backprop", "kp"]
    assert all(0.0 <= r["test_accuracy"] <= 1.0 and r["seconds_per_epoch"] > 0 for r in rows)
    assert rows[0]["rho"] == pytest.approx(1.0) and "| kp |" in format_table(rows)
