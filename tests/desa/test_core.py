"""Unit and property tests of icml24.desa: losses against from-scratch formulas, DM, topologies, the engines."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml24.desa import (
    AlexNet,
    AnchorSet,
    ClientFailed,
    ConvNet,
    DesaConfig,
    diff_augment,
    global_anchors,
    gossip_fedavg,
    kd_loss,
    make_topology,
    run_desa,
    supcon_loss,
    synthesize_anchors,
)
from icml24.desa.world import digit_domains
from icml24.errors import InputError


def _clients(n=2, per=40, seed=0):
    """Four classes, each a fixed random pattern plus noise; client k adds a domain offset k."""
    g = torch.Generator().manual_seed(seed)
    centres = 1.5 * torch.randn(4, 3, 16, 16, generator=g)
    out = []
    for k in range(n):
        y = torch.arange(per) % 4
        out.append((centres[y] + 0.5 * torch.randn(per, 3, 16, 16, generator=g) + k, y))
    return out


TINY = DesaConfig(
    rounds=2, ipc=2, dm_iterations=3, dm_batch_real=8, dm_net_width=4, num_classes=4, batch_size=16, topology="mesh"
)


def _models(n=2):
    return [
        ConvNet(width=4, num_classes=4, im_size=16, seed=i) if i % 2 == 0 else AlexNet(3, 4, 4, 16, seed=i)
        for i in range(n)
    ]


# ----------------------------------------------------------------------------------------------- losses
def test_kd_zero_when_teacher_equals_student():
    s = torch.randn(6, 5)
    y = torch.randint(0, 5, (6,))
    assert float(kd_loss(s, s.clone(), y, distil_weight=1.0)) / 400 == pytest.approx(0.0, abs=1e-7)
    # with w < 1 only the hard-label term is left
    want = 0.1 * float(F.cross_entropy(s, y))
    assert float(kd_loss(s, s.clone(), y, distil_weight=0.9)) == pytest.approx(want, abs=1e-5)


def test_kd_matches_float64_formula_and_mean_quirk():
    s, t = torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    y = torch.tensor([0, 1, 2, 0])
    T, w = 20.0, 0.9
    p = torch.softmax(t / T, 1)
    kl_rows = (p * (p.log() - torch.log_softmax(s / T, 1))).sum(1)
    ce = -torch.log_softmax(s, 1)[torch.arange(4), y].mean()
    want_mean = (1 - w) * ce + w * T * T * kl_rows.sum() / (4 * 3)  # nn.KLDivLoss(): mean over all elements
    want_batch = (1 - w) * ce + w * T * T * kl_rows.mean()
    assert float(kd_loss(s, t, y)) == pytest.approx(float(want_mean), rel=1e-9)
    assert float(kd_loss(s, t, y, reduction="batchmean")) == pytest.approx(float(want_batch), rel=1e-9)


def test_supcon_matches_float64_formula():
    torch.manual_seed(0)
    f, a = torch.randn(5, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    y, ya = torch.tensor([0, 1, 0, 2, 1]), torch.tensor([0, 1, 2])
    z = torch.cat([f, a])
    z = z / z.norm(dim=1, keepdim=True)
    lab = torch.cat([y, ya])
    tau = 0.07
    losses = []
    for i in range(8):
        others = [j for j in range(8) if j != i]
        denom = math.log(sum(math.exp(float(z[i] @ z[j]) / tau) for j in others))
        pos = [j for j in others if lab[j] == lab[i]]
        losses.append(-sum(float(z[i] @ z[j]) / tau - denom for j in pos) / max(len(pos), 1))
    assert float(supcon_loss(f, a, y, ya)) == pytest.approx(np.mean(losses), rel=1e-9)


# -------------------------------------------------------------------------------------------- anchors
def test_dm_loss_decreases_and_class_means_approach_real():
    x, y = _clients(1, per=80)[0]
    out = synthesize_anchors(x, y, num_classes=4, ipc=4, iterations=40, batch_real=20, net_width=32, augment="none")
    assert np.mean(out.losses[-5:]) < 0.8 * np.mean(out.losses[:5])
    net = ConvNet(3, 4, 8, im_size=16, seed=123)  # a network DM never saw
    init = torch.randn_like(out.images, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        real = torch.stack([net.embed(x[y == c]).mean(0) for c in range(4)])

        def gap(imgs):
            return float(sum(((net.embed(imgs[c * 4 : (c + 1) * 4]).mean(0) - real[c]) ** 2).sum() for c in range(4)))

        assert gap(out.images) < 0.8 * gap(init)
    assert out.images.shape == (16, 3, 16, 16) and out.labels.tolist() == [c for c in range(4) for _ in range(4)]


def test_dm_leaves_inputs_alone_and_is_seeded():
    x, y = _clients(1)[0]
    x0 = x.clone()
    a = synthesize_anchors(x, y, num_classes=4, ipc=2, iterations=2, batch_real=8, net_width=4, seed=3)
    b = synthesize_anchors(x, y, num_classes=4, ipc=2, iterations=2, batch_real=8, net_width=4, seed=3)
    assert torch.equal(x, x0) and torch.equal(a.images, b.images)


def test_dp_option_reports_epsilon():
    x, y = _clients(1)[0]
    a = synthesize_anchors(x, y, num_classes=4, ipc=2, iterations=3, batch_real=8, net_width=4, dp=True)
    b = synthesize_anchors(
        x, y, num_classes=4, ipc=2, iterations=3, batch_real=8, net_width=4, dp=True, noise_multiplier=2.0
    )
    assert 0 < b.epsilon < a.epsilon < math.inf and a.delta == pytest.approx(1 / 40)


def test_diff_augment_is_siamese():
    x = torch.randn(6, 3, 8, 8)
    for op in ("color", "crop", "cutout", "flip", "scale", "rotate"):
        full = diff_augment(x, op, 7)
        part = diff_augment(x[:2], op, 7, draws=6)
        assert torch.allclose(full[:2], part, atol=1e-6), op


def test_global_anchors_modes_and_absent_classes():
    imgs = [torch.randn(8, 3, 4, 4) for _ in range(2)]
    lab = torch.arange(4).repeat_interleave(2)
    a = AnchorSet(imgs[0], lab, 2, (0, 1, 2, 3))
    b = AnchorSet(imgs[1], lab, 2, (0, 1))
    m = global_anchors([a, b], "mean")
    assert torch.allclose(m.images[:4], (imgs[0][:4] + imgs[1][:4]) / 2) and torch.equal(m.images[4:], imgs[0][4:])
    u = global_anchors([a, b], "union")
    assert len(u.labels) == 8 + 4 and set(u.labels[8:].tolist()) == {0, 1}
    with pytest.raises(InputError, match="no client holds"):
        global_anchors([AnchorSet(imgs[0], lab, 2, (0, 1)), b])


# -------------------------------------------------------------------------------------------- topology
@pytest.mark.parametrize("kind", ["mesh", "ring", "random_regular"])
def test_topologies_are_connected_and_symmetric(kind):
    adj = make_topology(kind, 6, degree=3, seed=1)
    assert all(i in adj[j] for i in range(6) for j in adj[i])
    assert all(i not in adj[i] for i in range(6))
    with pytest.raises(InputError, match="not connected"):
        make_topology([[1], [0], [3], [2]], 4)


def test_digit_domains_disjoint_and_seeded():
    a = digit_domains(["mnist", "noisy", "mnist"], n_train=30, n_test=10, seed=1)
    b = digit_domains(["mnist", "noisy", "mnist"], n_train=30, n_test=10, seed=1)
    idx = [set(d.info["source_index"].tolist()) for d in a]
    assert not (idx[0] & idx[1]) and not (idx[0] & idx[2]) and not (idx[1] & idx[2])
    assert all(np.array_equal(p.x_train, q.x_train) for p, q in zip(a, b))
    assert a[0].x_train.shape == (30, 3, 32, 32) and a[0].x_train.dtype == np.float32


# ---------------------------------------------------------------------------------------------- engines
def test_user_models_are_not_changed_and_bytes_counted():
    models, data = _models(), _clients()
    before = [{k: v.clone() for k, v in m.state_dict().items()} for m in models]
    res = run_desa(models, data, TINY)
    assert all(torch.equal(v, b[k]) for m, b in zip(models, before) for k, v in m.state_dict().items())
    assert res.bytes_logits == [2 * 8 * 4 * 4] * 2  # 2 rounds x (C * ipc) x C logits x 4 bytes, one peer
    assert res.bytes_anchors == [8 * 3 * 16 * 16 * 4 + 4 * 8] * 2


def test_multiprocess_equals_inprocess_and_gossip_counts_weights():
    models, data = _models(), _clients()
    a = run_desa(models, data, TINY)
    b = run_desa(models, data, TINY, backend="gloo", timeout=60)
    assert b.backend == "gloo"
    assert torch.equal(a.anchors.images, b.anchors.images)
    for ra, rb in zip(a.round_logits, b.round_logits):
        assert all(torch.equal(x, y) for x, y in zip(ra, rb))
    for ma, mb in zip(a.models, b.models):
        assert all(torch.equal(p, q) for p, q in zip(ma.state_dict().values(), mb.state_dict().values()))
    assert a.bytes_sent == b.bytes_sent
    g = gossip_fedavg(models[0], data, TINY)
    n_params = sum(t.numel() for t in models[0].state_dict().values())
    assert g.bytes_sent == [2 * n_params * 4] * 2


def test_killed_client_is_recorded_and_survivors_finish():
    """Client 1 of a 3-client mesh is SIGKILLed at round 1: clients 0 and 2 drop it and finish the run."""
    models, data = _models(3), _clients(3)
    cfg = replace(TINY, rounds=3)
    res = run_desa(models, data, cfg, backend="gloo", fail=(1, 1), timeout=30)
    assert list(res.failed) == [1] and "killed by signal 9" in res.failed[1]
    assert res.models[1] is None and res.models[0] is not None and res.models[2] is not None
    assert res.lost_links == [(0, 1, 1), (2, 1, 1)]
    z = 8 * 4 * 4  # (C * ipc) x C float32 logits
    assert res.bytes_logits[0] == res.bytes_logits[2] == (2 + 1 + 1) * z  # two peers at round 0, then one
    assert all(math.isfinite(v) for i in (0, 2) for v in res.losses[i])
    ref = run_desa(models, data, cfg)  # in-process, nobody dies: round 0 is the same
    assert all(torch.equal(ref.round_logits[0][i], res.round_logits[0][i]) for i in (0, 2))
    assert not torch.equal(ref.round_logits[2][0], res.round_logits[2][0])  # later rounds miss client 1


def test_stopped_run_is_reported_and_resumes(tmp_path):
    """on_failure='stop' names the dead client; the same call on the checkpoint folder resumes the run exactly."""
    models, data = _models(), _clients()
    cfg = replace(TINY, rounds=3)
    with pytest.raises(ClientFailed, match=r"client 1 failed .*killed by signal 9.*stopped"):
        run_desa(models, data, cfg, backend="gloo", fail=(1, 2), timeout=30, on_failure="stop", checkpoint_dir=tmp_path)
    seen = []
    res = run_desa(models, data, cfg, backend="gloo", timeout=30, checkpoint_dir=tmp_path, progress=seen.append)
    assert res.extra["resumed_from"] == 1 and seen == [0, 1, 2] and not res.failed
    ref = run_desa(models, data, cfg)
    assert torch.equal(ref.anchors.images, res.anchors.images)
    for ra, rb in zip(ref.round_logits, res.round_logits):
        assert all(torch.equal(x, y) for x, y in zip(ra, rb))
    for ma, mb in zip(ref.models, res.models):
        assert all(torch.equal(p, q) for p, q in zip(ma.state_dict().values(), mb.state_dict().values()))
    assert ref.bytes_sent == res.bytes_sent
    with pytest.raises(InputError, match="checkpoint_dir"):
        run_desa(models, data, replace(cfg, rounds=4), backend="gloo", checkpoint_dir=tmp_path)
