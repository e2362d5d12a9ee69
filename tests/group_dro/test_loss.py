"""The torch losses GroupDROLoss and VRGroupDROLoss against from-scratch float64 formulas, their input checks and
state, and the worked example (Fashion-MNIST with a planted minority group) at smoke scale."""

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from icml24.claims import Scale
from icml24.data import fashion_mnist
from icml24.errors import DataUnavailable, InputError
from icml24.group_dro import GroupDROLoss, VRGroupDROLoss
from tests.conftest import needs_fashion


def _ref_group_means(losses, groups, m):
    """Float64 group means written from scratch (0 for an absent group) and counts."""
    losses, groups = np.asarray(losses, dtype=np.float64), np.asarray(groups)
    means = np.array([losses[groups == k].mean() if (groups == k).any() else 0.0 for k in range(m)])
    return means, np.array([(groups == k).sum() for k in range(m)])


def _ref_eg(q, a, eta):
    w = np.asarray(q, dtype=np.float64) * np.exp(eta * np.asarray(a, dtype=np.float64))
    return w / w.sum()


def _batch(seed, m=4, b=32):
    g = torch.Generator().manual_seed(seed)
    return torch.rand(b, generator=g, dtype=torch.float64) * 3, torch.randint(0, m, (b,), generator=g)


# --------------------------------------------------------------------------------- formulas against float64


def test_loss_and_q_step_equal_the_exponentiated_gradient_formula():
    m, eta = 4, 0.3
    robust = GroupDROLoss(m, eta=eta)
    q = np.full(m, 1 / m)
    for step in range(5):
        losses, groups = _batch(step, m)
        losses.requires_grad_(True)
        out = robust(losses, groups)
        means, _ = _ref_group_means(losses.detach(), groups, m)
        q = _ref_eg(q, means, eta)  # q_g <- q_g exp(eta L_g) / Z, then the loss uses the new q
        np.testing.assert_allclose(robust.q.numpy(), q, rtol=1e-12)
        assert out.item() == pytest.approx(float(q @ means), rel=1e-12)
        out.backward()  # d/dl_j = q_{g_j} / n_{g_j}: q is a constant for autograd
        counts = np.bincount(groups.numpy(), minlength=m)
        np.testing.assert_allclose(losses.grad.numpy(), (q / np.maximum(counts, 1))[groups.numpy()], rtol=1e-12)


def test_float32_losses_agree_with_the_float64_formula():
    robust = GroupDROLoss(3, eta=0.05)
    losses = torch.tensor([0.5, 2.0, 1.0, 4.0, 0.25])
    groups = torch.tensor([0, 1, 1, 2, 0])
    out = robust(losses, groups)
    means, _ = _ref_group_means(losses, groups, 3)
    q = _ref_eg(np.full(3, 1 / 3), means, 0.05)
    assert out.dtype == torch.float32 and out.item() == pytest.approx(float(q @ means), rel=1e-6)


def test_generalisation_adjustment_enters_step_and_value_but_not_the_gradient():
    m, eta, C = 3, 0.2, torch.tensor([1.0, 2.0, 0.5])
    counts = [100, 4, 25]
    robust = GroupDROLoss(m, eta=eta, group_counts=counts, adjustment=C)
    losses = torch.tensor([1.0, 0.5, 2.0, 1.5], dtype=torch.float64, requires_grad=True)
    groups = torch.tensor([0, 1, 2, 2])
    out = robust(losses, groups)
    means, _ = _ref_group_means(losses.detach(), groups, m)
    adj = C.double().numpy() / np.sqrt(counts)
    q = _ref_eg(np.full(m, 1 / m), means + adj, eta)
    np.testing.assert_allclose(robust.q.numpy(), q, rtol=1e-12)
    assert out.item() == pytest.approx(float(q @ (means + adj)), rel=1e-12)
    out.backward()
    np.testing.assert_allclose(losses.grad.numpy(), [q[0], q[1], q[2] / 2, q[2] / 2], rtol=1e-12)
    # one C for every group
    scalar = GroupDROLoss(m, eta=eta, group_counts=counts, adjustment=2.0)
    np.testing.assert_allclose(scalar.adjust.numpy(), 2.0 / np.sqrt(counts), rtol=1e-12)


def test_vr_step_uses_snapshot_risks_plus_the_minibatch_correction():
    m, eta = 3, 0.4
    vr = VRGroupDROLoss(m, eta=eta, refresh_every=2)
    full_l, full_g = _batch(10, m, 200)
    risks = vr.refresh(full_l, full_g)
    ref_risks, _ = _ref_group_means(full_l, full_g, m)
    np.testing.assert_allclose(risks.numpy(), ref_risks, rtol=1e-12)
    losses = torch.tensor([1.0, 3.0, 2.0], dtype=torch.float64, requires_grad=True)
    snap = torch.tensor([0.5, 2.0, 2.5], dtype=torch.float64)
    groups = torch.tensor([0, 0, 1])  # group 2 absent: its estimate is the snapshot risk alone
    out = vr(losses, groups, snap)
    est = ref_risks + np.array([(1.0 + 3.0) / 2 - (0.5 + 2.0) / 2, 2.0 - 2.5, 0.0])
    q = _ref_eg(np.full(m, 1 / m), est, eta)
    np.testing.assert_allclose(vr.q.numpy(), q, rtol=1e-12)
    means, _ = _ref_group_means(losses.detach(), groups, m)
    assert out.item() == pytest.approx(float(q @ means), rel=1e-12)
    # at the snapshot (same losses) the estimate is exactly the full risks, whatever the batch
    vr2 = VRGroupDROLoss(m, eta=eta)
    vr2.refresh(full_l, full_g)
    vr2(full_l[:7], full_g[:7], full_l[:7].clone())
    np.testing.assert_allclose(vr2.q.numpy(), _ref_eg(np.full(m, 1 / m), ref_risks, eta), rtol=1e-12)


def test_vr_refresh_schedule_and_reset():
    vr = VRGroupDROLoss(2, refresh_every=2)
    assert vr.needs_refresh and not vr.has_snapshot
    with pytest.raises(InputError, match="refresh"):
        vr(torch.ones(2), torch.tensor([0, 1]), torch.ones(2))
    vr.refresh(torch.tensor([1.0, 2.0]), torch.tensor([0, 1]))
    assert not vr.needs_refresh
    for _ in range(2):
        vr(torch.tensor([1.0, 2.0]), torch.tensor([0, 1]), torch.tensor([1.0, 2.0]))
    assert vr.needs_refresh and vr.has_snapshot
    vr.reset()
    assert not vr.has_snapshot and torch.equal(vr.q, torch.full((2,), 0.5, dtype=torch.float64))


# ------------------------------------------------------------------------------------------ state and use


def test_q_is_a_copy_reset_restores_uniform_and_eval_mode_does_not_step():
    robust = GroupDROLoss(2, eta=1.0)
    q = robust.q
    q[0] = 123.0
    assert torch.equal(robust.q, torch.full((2,), 0.5, dtype=torch.float64))
    robust(torch.tensor([0.0, 1.0]), torch.tensor([0, 1]))
    moved = robust.q
    assert moved[1] > moved[0]
    robust.eval()
    robust(torch.tensor([0.0, 5.0]), torch.tensor([0, 1]))
    assert torch.equal(robust.q, moved)
    robust.train()
    robust.reset()
    assert torch.equal(robust.q, torch.full((2,), 0.5, dtype=torch.float64))


def test_state_dict_round_trip_resumes_the_same_trajectory():
    a = VRGroupDROLoss(3, eta=0.5, refresh_every=4)
    full_l, full_g = _batch(1, 3, 60)
    a.refresh(full_l, full_g)
    for s in range(3):
        a(*_batch(s, 3, 8), _batch(s + 9, 3, 8)[0])
    b = VRGroupDROLoss(3, eta=0.5, refresh_every=4)
    b.load_state_dict(copy.deepcopy(a.state_dict()))
    for loss in (a, b):
        loss(*_batch(7, 3, 8), _batch(8, 3, 8)[0])
    assert torch.equal(a.q, b.q) and a.needs_refresh and b.needs_refresh


def test_trains_any_module_end_to_end():
    torch.manual_seed(0)  # test-local: the model's init only
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))
    robust = GroupDROLoss(2, eta=0.1)
    x, y, g = torch.randn(16, 5), torch.randint(0, 3, (16,)), torch.randint(0, 2, (16,))
    loss = robust(F.cross_entropy(model(x), y, reduction="none"), g)
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_state_follows_the_losses_device():
    robust = GroupDROLoss(2)
    out = robust(torch.tensor([1.0, 2.0], device="cuda"), torch.tensor([0, 1], device="cuda"))
    assert out.device.type == "cuda" and robust.adv_probs.device.type == "cuda" and robust.q.device.type == "cuda"


# ------------------------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"eta": 0.0}, "eta"),
        ({"eta": -0.1}, "eta"),
        ({"eta": math.inf}, "eta"),
        ({"eta": math.nan}, "eta"),
        ({"adjustment": 1.0}, "group_counts"),
        ({"adjustment": -1.0, "group_counts": [1, 2, 3]}, "adjustment"),
        ({"adjustment": [1.0, 2.0]}, "adjustment"),
        ({"group_counts": [1, 0, 3]}, "group_counts"),
    ],
)
def test_bad_constructor_arguments_raise_input_error(kwargs, name):
    with pytest.raises(InputError, match=name):
        GroupDROLoss(3, **kwargs)


def test_bad_n_groups_and_refresh_every():
    with pytest.raises(InputError, match="n_groups"):
        GroupDROLoss(0)
    with pytest.raises(InputError, match="refresh_every"):
        VRGroupDROLoss(2, refresh_every=0)


@pytest.mark.parametrize(
    "losses, groups, pattern",
    [
        (torch.tensor([1.0, 2.0]), torch.tensor([0, 3]), "groups must hold ids in 0..2"),
        (torch.tensor([1.0, 2.0]), torch.tensor([-1, 0]), "groups must hold ids in 0..2"),
        (torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0, 1]), "losses and groups must have the same length"),
        (torch.tensor([1.0, math.nan]), torch.tensor([0, 1]), "losses contains NaN"),
        (torch.tensor([1.0, math.inf]), torch.tensor([0, 1]), "losses contains NaN or infinite"),
        (torch.tensor(1.0), torch.tensor([0]), "losses must have 1 dimensions"),
        (torch.tensor([1.0, 2.0]), torch.tensor([0.0, 1.0]), "groups must hold integer"),
        ([1.0, 2.0], torch.tensor([0, 1]), "losses must be a torch.Tensor"),
    ],
)
def test_bad_batches_raise_input_error_and_leave_q_alone(losses, groups, pattern):
    robust = GroupDROLoss(3)
    with pytest.raises(InputError, match=pattern):
        robust(losses, groups)
    assert torch.equal(robust.q, torch.full((3,), 1 / 3, dtype=torch.float64))


def test_vr_bad_snapshot_losses():
    vr = VRGroupDROLoss(2)
    vr.refresh(torch.tensor([1.0, 2.0]), torch.tensor([0, 1]))
    with pytest.raises(InputError, match="snapshot_losses"):
        vr(torch.tensor([1.0, 2.0]), torch.tensor([0, 1]), torch.tensor([1.0]))
    with pytest.raises(InputError, match="snapshot_losses contains NaN"):
        vr(torch.tensor([1.0, 2.0]), torch.tensor([0, 1]), torch.tensor([1.0, math.nan]))
    with pytest.raises(InputError, match="groups must hold ids"):
        vr.refresh(torch.tensor([1.0, 2.0]), torch.tensor([0, 2]))


# ----------------------------------------------------------------------------------------- worked example


@needs_fashion
def test_planted_minority_split():
    from icml24.data.grouped import fashion_mnist_inverted

    d = fashion_mnist_inverted(n_train=2000, n_test=1000, seed=1)
    assert d.x_train.shape == (2000, 784) and d.group_names == ("as recorded", "inverted")
    inv = d.info["inverted_train"]
    assert torch.equal(d.g_train, inv.long()) and d.group_counts().tolist() == [1900, 100]
    assert torch.bincount(d.y_train[inv], minlength=10).tolist() == [10] * 10  # 5 % of every class
    assert torch.bincount(d.g_test).tolist() == [950, 50]
    plain = fashion_mnist(n_train=2000, n_test=1000, seed=1, flatten=True)
    assert torch.equal(d.x_train[inv], 1 - plain.x_train[inv]) and torch.equal(d.x_train[~inv], plain.x_train[~inv])
    fine = fashion_mnist_inverted(n_train=2000, n_test=1000, seed=1, groups="class_inverted")
    assert torch.equal(fine.g_train, 2 * d.y_train + d.g_train) and fine.num_groups == 20


def test_planted_minority_split_needs_the_data(tmp_path):
    from icml24.data.grouped import fashion_mnist_inverted

    with pytest.raises(DataUnavailable, match="train-images-idx3-ubyte.gz"):
        fashion_mnist_inverted(root=tmp_path)
    with pytest.raises(InputError, match="fraction"):
        fashion_mnist_inverted(root=tmp_path, fraction=0.0)


@needs_fashion
def test_worked_example_raises_the_worst_group_over_erm_at_smoke_scale():
    from icml24.group_dro.minority import run_minority

    mt = run_minority(Scale.SMOKE, 0)
    assert mt["erm_avg_acc"] > 0.7  # the baseline is a trained classifier
    for k in ("gdro", "vr"):
        assert mt[f"{k}_worst_acc"] >= mt["erm_worst_acc"] + 0.03, mt
        assert mt[f"{k}_q_inverted"] > 0.5  # the weight moved to the minority
    assert mt["erm_worst_acc"] == mt["erm_acc_inverted"]  # ERM's worst group is the planted minority
