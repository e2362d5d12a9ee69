import copy

import numpy as np
import pytest
import torch

import icml24.red_xai as rx
from icml24.errors import InputError


@pytest.fixture(scope="module")
def net():
    return rx.SmallNet(16, 3, 8, seed=0).eval()


X = torch.rand(12, 1, 4, 4, generator=torch.Generator().manual_seed(0))


def test_integrated_gradients_completeness(net):
    r = rx.attribute(net, X, 1, "integrated_gradients", steps=256)
    with torch.no_grad():
        gap = net(X)[:, 1] - net(torch.zeros_like(X))[:, 1]
    assert torch.allclose(r.flatten(1).sum(1), gap, atol=1e-3)


def test_gradient_x_input_matches_autograd(net):
    x = X.clone().requires_grad_(True)
    net(x)[:, 2].sum().backward()
    r = rx.attribute(net, X, 2, "input_x_gradient")
    assert torch.allclose(r, (x.grad * X), atol=1e-6)
    lrp = rx.attribute(net, X, 2, "lrp_epsilon")
    assert lrp.shape == X.shape and torch.isfinite(lrp).all()
    assert not hasattr(net.net[0], "rule")  # Captum's rules are removed again


def _lrp_float64(net, x, target, zplus_layers):
    """LRP written from the rules in float64: epsilon (1e-6) or z+ (positive weights, no bias) per linear layer."""
    lin = [net.net[0], net.net[2], net.net[4]]
    a = [x.flatten(1).double()]
    for i, layer in enumerate(lin):
        z = a[-1] @ layer.weight.double().T + layer.bias.double()
        a.append(z.clamp_min(0) if i < 2 else z)
    r = torch.zeros_like(a[-1])
    r[:, target] = a[-1][:, target]
    for i in reversed(range(3)):
        w, b = lin[i].weight.double(), lin[i].bias.double()
        if i in zplus_layers:
            w, b = w.clamp_min(0), torch.zeros_like(b)
        z = a[i] @ w.T + b
        eps = 1e-9 if i in zplus_layers else 1e-6
        r = a[i] * ((r / (z + eps * torch.where(z >= 0, 1.0, -1.0))) @ w)
    return r.view_as(x)


@pytest.mark.parametrize("method, zplus_layers", [("lrp_epsilon", ()), ("lrp_zplus", (0, 1))])
def test_lrp_rules_match_a_float64_oracle_and_conserve_relevance(method, zplus_layers):
    model = rx.SmallNet(16, 3, 8, seed=2).eval()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    r = rx.attribute(model, X, 1, method)
    assert torch.allclose(r.double(), _lrp_float64(model, X, 1, zplus_layers), atol=1e-5)
    assert torch.equal(rx.attribute(model, X, 1, method), r)  # fresh Captum rules each call: no state carried over
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())  # Captum's weight edits undone
    assert not any(hasattr(m, "rule") for m in model.modules())
    with torch.no_grad():  # no bias: every layer passes on exactly the relevance it gets (conservation)
        for m in model.modules():
            if isinstance(m, torch.nn.Linear):
                m.bias.zero_()
        logit = model(X)[:, 1]
    r = rx.attribute(model, X, 1, method)
    assert torch.allclose(r.flatten(1).sum(1), logit, atol=1e-4)


def test_lrp_passes_flatten_and_refuses_what_captum_cannot_propagate():
    flat = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 3, bias=False)).eval()
    r = rx.attribute(flat, X, 0, "lrp_zplus")  # the last layer takes epsilon: exact for one bias-free layer
    with torch.no_grad():
        assert torch.allclose(r.flatten(1).sum(1), flat(X)[:, 0], atol=1e-5)
    odd = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 8), torch.nn.GELU(), torch.nn.Linear(8, 3))
    with pytest.raises(InputError, match="LRP"):
        rx.attribute(odd.eval(), X, 0, "lrp_epsilon")
    assert not any(hasattr(m, "rule") for m in [*flat.modules(), *odd.modules()])


def test_p_clarc_removes_exactly_the_cav_component(net):
    v = torch.randn(8, generator=torch.Generator().manual_seed(1))
    cav = rx.ConceptVector("net.1", v / v.norm(), 1.0)
    fixed = rx.p_clarc(net, cav, X[:6])
    acts = {}
    net.net[1].register_forward_hook(lambda m, i, o: acts.__setitem__("h", o.detach()))
    with torch.no_grad():
        net(X[:6])
        z = acts["h"].mean(0)
        net(X)
    h = acts["h"].double()
    vv, zz = cav.vector.double(), z.double()
    expect = h - ((h - zz) @ vv)[:, None] * vv[None]
    got = {}
    fixed.net[1].register_forward_hook(lambda m, i, o: got.__setitem__("h", o.detach()))
    with torch.no_grad():
        fixed(X)
    assert torch.allclose(got["h"].double(), expect, atol=1e-5)
    assert torch.allclose((got["h"].double() - zz) @ vv, torch.zeros(12, dtype=torch.double), atol=1e-5)
    net.net[1]._forward_hooks.clear()


def test_spray_recovers_two_planted_groups():
    from sklearn.metrics import adjusted_rand_score

    gen = torch.Generator().manual_seed(0)
    a = torch.zeros(30, 1, 6, 6)
    a[:, :, 3:, 2:5] = 1.0
    b = torch.zeros(20, 1, 6, 6)
    b[:, :, :2, :2] = 1.0
    h = torch.cat([a, b]) + 0.05 * torch.rand(50, 1, 6, 6, generator=gen)
    r = rx.spray(h, seed=0)
    truth = np.r_[np.zeros(30), np.ones(20)]
    assert r.clusters == 2 and adjusted_rand_score(truth, r.labels) == 1.0
    assert r.eigenvalues[0] < 1e-8 and r.means.shape == (2, 6, 6)


def test_tcav_of_random_directions_is_near_half(net):
    gen = torch.Generator().manual_seed(3)
    scores = []
    for _ in range(100):
        v = torch.randn(8, generator=gen)
        cav = rx.ConceptVector("net.1", v / v.norm(), 1.0)
        s, s_neg = rx.tcav_score(net, X, 0, cav), rx.tcav_score(net, X, 0, rx.ConceptVector("net.1", -cav.vector, 1.0))
        assert abs(s + s_neg - 1.0) < 1e-6
        scores.append(s)
    assert abs(np.mean(scores) - 0.5) < 0.1
    pool = torch.rand(40, 1, 4, 4, generator=gen)
    t = rx.tcav(net, "net.1", X, 0, pool[:20], pool[20:], runs=4, seed=0)
    assert 0.0 <= t["score"] <= 1.0 and 0.0 <= t["p_value"] <= 1.0 and len(t["null_scores"]) == 4


def test_rrr_zeroes_the_masked_gradient_and_models_stay_untouched(net):
    y = torch.arange(12) % 3
    mask = torch.zeros(1, 4, 4, dtype=torch.bool)
    mask[:, 0, 0] = True
    before = [p.clone() for p in net.parameters()]
    fixed = rx.rrr(net, X, y, mask, lam=100.0, epochs=30)
    plain = rx.rrr(net, X, y, mask, lam=0.0, epochs=30)
    x = X.clone().requires_grad_(True)
    torch.log_softmax(fixed(x), 1).sum().backward()
    x0 = X.clone().requires_grad_(True)
    torch.log_softmax(plain(x0), 1).sum().backward()
    assert x.grad[:, mask].abs().mean() < 0.6 * x0.grad[:, mask].abs().mean()
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters())) and not net.training


def test_rr_clarc_removes_the_gradient_along_the_cav_and_freezes_the_layers_below(net):
    gen = torch.Generator().manual_seed(4)
    x = torch.rand(48, 1, 4, 4, generator=gen)
    y = torch.arange(48) % 3
    v = torch.randn(8, generator=gen)
    cav = rx.ConceptVector("net.1", v / v.norm(), 1.0)
    before = {k: t.clone() for k, t in net.state_dict().items()}

    def along(model):  # mean squared derivative of the summed logits along the CAV, at the CAV's layer
        store = {}
        h = model.net[1].register_forward_hook(lambda m, i, o: store.__setitem__("h", o))
        out = model(x.clone().requires_grad_(True)).sum()
        (g,) = torch.autograd.grad(out, store["h"])
        h.remove()
        return float((g @ cav.vector).pow(2).mean())

    fixed = rx.rr_clarc(net, x, y, cav, lam=100.0, criterion="all_logits", epochs=30, lr=1e-2, seed=0)
    plain = rx.rr_clarc(net, x, y, cav, lam=0.0, epochs=30, lr=1e-2, seed=0)
    assert along(fixed) < 0.1 * along(plain)
    assert torch.equal(fixed.net[0].weight, net.net[0].weight) and torch.equal(fixed.net[0].bias, net.net[0].bias)
    assert not torch.equal(fixed.net[2].weight, net.net[2].weight) and not fixed.training
    assert all(p.requires_grad for p in fixed.parameters()) and all(p.grad is None for p in fixed.parameters())
    assert all(torch.equal(before[k], t) for k, t in net.state_dict().items())


def test_relevance_mass_and_reliance():
    h = torch.zeros(2, 1, 2, 2)
    h[0, 0, 0, 0], h[0, 0, 1, 1], h[1, 0, 1, 1] = 3.0, 1.0, -1.0
    mask = torch.zeros(1, 2, 2, dtype=torch.bool)
    mask[0, 0, 0] = True
    assert rx.relevance_mass(h, mask).tolist() == [0.75, 0.0]
    m = rx.random_mask(mask, seed=0)
    assert int(m.sum()) == 1 and not bool((m & mask).any())


def test_pixel_flipping_most_relevant_first_beats_random_and_ends_at_the_filled_image():
    torch.manual_seed(0)
    lin = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 2)).eval()
    with torch.no_grad():
        lin[1].weight.copy_(torch.stack([torch.linspace(-1, 3, 16), torch.zeros(16)]))
        lin[1].bias.zero_()
    x = torch.rand(12, 1, 4, 4) + 0.5
    h = x * lin[1].weight[0].view(1, 1, 4, 4)  # gradient x input of the class-0 logit (exact for a linear model)
    r = rx.pixel_flipping(lin, x, 0, h, steps=4, fraction=1.0)
    p0 = torch.softmax(lin(x), 1)[:, 0].mean()
    assert r["curve"][0] == pytest.approx(float(p0)) == pytest.approx(r["random_curve"][0])
    assert r["curve"][-1] == pytest.approx(0.5) and r["random_curve"][-1] == pytest.approx(0.5)  # all pixels 0
    assert r["aopc"] > r["aopc_random"]
    assert int(np.argmin(r["curve"])) == 3  # lowest once the 12 positive-weight pixels are gone
    anti = rx.pixel_flipping(lin, x, 0, -h, steps=4, fraction=1.0)
    assert anti["aopc"] < r["aopc_random"]  # least relevant first is worse than random


def test_rashomon_of_identical_models_has_no_spread():
    net = rx.SmallNet(16, 3, 8, seed=0).eval()
    x = torch.rand(20, 1, 4, 4)
    y = torch.arange(20) % 3
    r = rx.rashomon([net, copy.deepcopy(net)], x, y, x, y, 0, x[:5])
    assert r["accuracy_spread"] == 0 and r["reliance_spread"] == 0
    assert r["rank_correlation"] == pytest.approx(1.0) and r["rank_correlation_min"] == pytest.approx(1.0)


@pytest.mark.parametrize("norm", ["bn1d", "bn2d"])
def test_fit_leaves_a_batchnorm_model_in_training_mode_untouched(norm):
    from icml24.testing import fingerprint, same

    nn = torch.nn
    if norm == "bn1d":
        model = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    else:
        model = nn.Sequential(
            nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(32, 3)
        )
    y = torch.arange(12) % 3
    mask = torch.zeros(1, 4, 4, dtype=torch.bool)
    mask[0, 0, 0] = True
    before = fingerprint(model)
    fixed = [
        rx.fit(model, X, y, epochs=1),
        rx.a_clarc(model, X, y, mask, 0, epochs=1),
        rx.rrr(model, X, y, mask, epochs=1),
    ]
    assert not any(m.training for m in fixed)
    assert same(fingerprint(model), before) and model.training  # no BatchNorm statistics, no mode changed
    assert all(int(b) == 0 for n, b in model.named_buffers() if n.endswith("num_batches_tracked"))


def test_tcav_leaves_no_gradient_on_the_model_and_runs_on_a_frozen_one():
    net = rx.SmallNet(16, 3, 8, seed=0).eval()
    frozen = copy.deepcopy(net).requires_grad_(False)
    v = torch.randn(8, generator=torch.Generator().manual_seed(5))
    cav = rx.ConceptVector("net.1", v / v.norm(), 1.0)
    pool = torch.rand(20, 1, 4, 4, generator=torch.Generator().manual_seed(6))
    assert rx.tcav_score(net, X, 0, cav) == rx.tcav_score(frozen, X, 0, cav)
    t, tf = (rx.tcav(m, "net.1", X, 0, pool[:10], pool[10:], runs=2) for m in (net, frozen))
    assert t["score"] == tf["score"] and np.array_equal(t["null_scores"], tf["null_scores"])
    assert all(p.grad is None for p in [*net.parameters(), *frozen.parameters()])


def test_spray_of_identical_maps_finds_one_cluster():
    r = rx.spray(torch.ones(12, 1, 4, 4))
    assert r.clusters == 1 and set(r.labels.tolist()) == {0} and r.means.shape == (1, 4, 4)
    assert np.allclose(r.means[0], 1 / 16)
    two = rx.spray(torch.cat([torch.ones(6, 4, 4), torch.eye(4).expand(6, 4, 4)]))  # two distinct maps: 2 clusters
    assert two.clusters == 2 and len(set(two.labels[:6])) == len(set(two.labels[6:])) == 1
