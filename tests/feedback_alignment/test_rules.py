"""The learning rules: exactness against autograd, what the backward pass reads, fixed feedback, sign symmetry."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from icml24.feedback_alignment import RULES, FeedbackNetwork, make_mlp, train, update_alignment

ACTS = ["relu", "leaky_relu", "identity"]


def _data(n_in, n_out, n=9, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, n_in, generator=g, dtype=dtype), torch.randint(0, n_out, (n,), generator=g)


def _grads(net_or_model, params, x, y):
    return torch.autograd.grad(F.cross_entropy(net_or_model(x), y), params)


def _params(model):
    return [p for p in model.parameters()]


stacks = st.tuples(st.lists(st.integers(3, 20), min_size=2, max_size=5), st.sampled_from(ACTS), st.integers(0, 10_000))


@settings(max_examples=25, deadline=None)
@given(stacks)
def test_fa_with_feedback_tied_to_w_transpose_is_exactly_backprop(stack):
    sizes, act, seed = stack
    model = make_mlp(sizes, act, seed=seed, dtype=torch.float64)
    lins = [m for m in model if isinstance(m, nn.Linear)]
    net = FeedbackNetwork(model, "fa", feedback=[l.weight.detach().T for l in lins])
    x, y = _data(sizes[0], sizes[-1], seed=seed)
    x.requires_grad_(True)
    ps = _params(model) + [x]
    g = _grads(model, ps, x, y)
    u = _grads(net, ps, x, y)
    for a, b in zip(g, u):
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-14)


def test_tied_feedback_stays_exact_over_training_when_retied_every_step():
    sizes = [6, 9, 7, 4]
    ref = make_mlp(sizes, seed=3, dtype=torch.float64)
    model = make_mlp(sizes, seed=3, dtype=torch.float64)
    x, y = _data(6, 4, n=20, seed=3)
    opt_r = torch.optim.SGD(ref.parameters(), lr=0.3)
    opt_m = torch.optim.SGD(model.parameters(), lr=0.3)
    for _ in range(25):
        lins = [m for m in model if isinstance(m, nn.Linear)]
        net = FeedbackNetwork(model, "fa", feedback=[l.weight.detach().T for l in lins])  # re-tie
        for opt, f in ((opt_r, ref), (opt_m, net)):
            opt.zero_grad()
            F.cross_entropy(f(x), y).backward()
            opt.step()
    for a, b in zip(ref.parameters(), model.parameters()):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12)


def test_backprop_rule_is_plain_autograd_and_output_layer_is_always_exact():
    x, y = _data(5, 3, seed=1)
    for name in RULES:
        model = make_mlp([5, 8, 6, 3], seed=1, dtype=torch.float64)
        net = FeedbackNetwork(model, name, seed=2)
        g = _grads(model, _params(model), x, y)
        u = _grads(net, _params(model), x, y)
        assert torch.equal(g[-1], u[-1]) and torch.equal(g[-2], u[-2])  # output layer: exact
        if name == "backprop":
            assert all(torch.equal(a, b) for a, b in zip(g, u))
        else:
            assert not torch.allclose(g[0], u[0])  # hidden layers: the rule's own update


def _manual_fa(model, feedback, x, y, direct=False):
    """The rules' equations by hand: e_L = softmax - onehot, e_l = (B_{l+1} e_{l+1}) o relu'(z_l) (DFA: B e_L)."""
    lins = [m for m in model if isinstance(m, nn.Linear)]
    hs, zs = [x], []
    h = x
    for i, lin in enumerate(lins):
        z = h @ lin.weight.T + lin.bias
        zs.append(z)
        h = torch.relu(z) if i < len(lins) - 1 else z
        hs.append(h)
    e = (torch.softmax(zs[-1], 1) - F.one_hot(y, zs[-1].shape[1]).double()) / x.shape[0]
    e_out = e
    grads = [None] * len(lins)
    for i in range(len(lins) - 1, -1, -1):
        grads[i] = (e.T @ hs[i], e.sum(0))
        if i:
            src = e_out if direct else e
            e = (src @ feedback[i].T) * (zs[i - 1] > 0).double()
    return grads


@pytest.mark.parametrize("rule", ["fa", "dfa"])
def test_fa_and_dfa_match_the_hand_written_equations(rule):
    model = make_mlp([5, 8, 7, 6, 4], seed=4, dtype=torch.float64)
    net = FeedbackNetwork(model, rule, seed=5)
    x, y = _data(5, 4, n=13, seed=4)
    u = _grads(net, _params(model), x, y)
    want = _manual_fa(model, net.fixed_feedback, x, y, direct=(rule == "dfa"))
    for i, (gw, gb) in enumerate(want):
        assert torch.allclose(u[2 * i], gw, rtol=1e-10, atol=1e-13)
        assert torch.allclose(u[2 * i + 1], gb, rtol=1e-10, atol=1e-13)
    if rule == "dfa":
        assert net.fixed_feedback[1].shape == (8, 4) and net.fixed_feedback[-1].shape == (6, 4)


@pytest.mark.parametrize("rule", ["fa", "dfa"])
def test_hidden_update_never_reads_the_next_layers_weights(rule):
    """Poison every W after the forward pass: the rule's hidden-layer updates are unchanged (and finite)."""
    x, y = _data(6, 4, n=11, seed=7)
    results = []
    for poison in (False, True):
        model = make_mlp([6, 9, 8, 4], seed=7, dtype=torch.float64)
        net = FeedbackNetwork(model, rule, seed=8)
        loss = F.cross_entropy(net(x), y)
        if poison:
            with torch.no_grad():
                for lin in net.linears:
                    lin.weight.fill_(math.nan)
        loss.backward()
        results.append([lin.weight.grad.clone() for lin in net.linears])
    for a, b in zip(*results):
        assert torch.isfinite(b).all() and torch.equal(a, b)


def test_backprop_does_read_the_next_layers_weights():
    """The contrast that makes the test above meaningful: autograd refuses a W changed after the forward."""
    x, y = _data(6, 4, seed=7)
    model = make_mlp([6, 9, 4], seed=7, dtype=torch.float64)
    loss = F.cross_entropy(FeedbackNetwork(model, "backprop")(x), y)
    with torch.no_grad():
        model[2].weight.add_(1.0)
    with pytest.raises(RuntimeError, match="inplace"):
        loss.backward()


@pytest.mark.parametrize("rule", ["fa", "dfa", "frsf"])
def test_fixed_feedback_is_bit_identical_after_training_and_not_a_parameter(rule):
    model = make_mlp([6, 9, 8, 4], seed=0)
    net = FeedbackNetwork(model, rule, seed=1)
    before = [b.clone() for b in net.fixed_feedback]
    w_before = [l.weight.detach().clone() for l in net.linears]
    x, y = _data(6, 4, n=30, seed=1, dtype=torch.float32)
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)  # any optimizer: the feedback is not a parameter
    for _ in range(20):
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
    assert all(torch.equal(a, b) for a, b in zip(before, net.fixed_feedback))
    assert not any(torch.equal(a, l.weight) for a, l in zip(w_before, net.linears))
    ids = {id(p) for p in net.parameters()}
    assert all(id(b) not in ids for b in net.fixed_feedback)
    assert {f"feedback_{j}" for j in range(3)} <= set(net.state_dict())


def test_sign_symmetry_feedback_follows_the_signs_every_step():
    x, y = _data(6, 4, n=30, seed=2, dtype=torch.float32)
    for rule in ("usf", "frsf"):
        net = FeedbackNetwork(make_mlp([6, 9, 8, 4], seed=2), rule, seed=3)
        opt = torch.optim.SGD(net.parameters(), lr=0.5)
        for _ in range(10):
            for j, lin in enumerate(net.linears):
                b = net.feedback_matrix(j)
                sign = torch.sign(lin.weight.detach()).T
                if rule == "usf":
                    assert torch.equal(b, net.scales[j] * sign)
                else:
                    assert torch.equal(b, net.fixed_feedback[j].abs() * sign)
            opt.zero_grad()
            F.cross_entropy(net(x), y).backward()
            opt.step()


def test_feedback_is_seeded_and_ordinary_loops_train():
    a = FeedbackNetwork(make_mlp([6, 9, 4], seed=0), "fa", seed=11)
    b = FeedbackNetwork(make_mlp([6, 9, 4], seed=0), "fa", seed=11)
    c = FeedbackNetwork(make_mlp([6, 9, 4], seed=0), "fa", seed=12)
    assert torch.equal(a.feedback_0, b.feedback_0) and not torch.equal(a.feedback_0, c.feedback_0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 6, generator=g)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    for rule in RULES:
        net = FeedbackNetwork(make_mlp([6, 16, 16, 4], seed=0), rule, seed=1)
        losses = train(net, x, y, lr=0.2, steps=60)
        assert losses[-1] < 0.8 * losses[0], rule


def test_leading_batch_dims_and_input_gradient():
    model = make_mlp([5, 7, 3], seed=0, dtype=torch.float64)
    lins = [m for m in model if isinstance(m, nn.Linear)]
    net = FeedbackNetwork(model, "fa", feedback=[l.weight.detach().T for l in lins])
    x = torch.randn(2, 4, 5, dtype=torch.float64, requires_grad=True)
    (gx_ref,) = torch.autograd.grad(model(x).square().sum(), [x])
    (gx,) = torch.autograd.grad(net(x).square().sum(), [x])
    assert gx.shape == x.shape and torch.allclose(gx, gx_ref, rtol=1e-12)


def test_flatten_first_and_nested_sequential_are_accepted():
    model = nn.Sequential(nn.Flatten(), nn.Sequential(nn.Linear(4, 6), nn.ReLU()), nn.Linear(6, 2))
    net = FeedbackNetwork(model, "dfa", seed=0)
    out = net(torch.randn(3, 2, 2))
    assert out.shape == (3, 2) and len(net.linears) == 2


def test_update_direction_of_the_output_layer_and_rho_of_backprop():
    x, y = _data(6, 4, n=20, seed=5)
    net = FeedbackNetwork(make_mlp([6, 9, 8, 4], seed=5, dtype=torch.float64), "backprop")
    ua = update_alignment(net, x, y)
    assert ua.rho == pytest.approx(1.0) and all(c == pytest.approx(1.0) for c in ua.cosine)
