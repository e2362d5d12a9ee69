"""Bad input to every public callable of group_dro: a one-line InputError naming the argument, and the user's
objects (arrays, problems, loss modules) exactly as they were."""

import numpy as np
import pytest
import torch

import icml24.group_dro
from icml24.group_dro import (
    Ball,
    Box,
    GroupDROLoss,
    GroupProblem,
    VRGroupDROLoss,
    aleg,
    alem,
    duality_gap,
    group_optima,
    min_weighted_risk,
    minimax_reference,
    mirror_prox,
    one_level_vr,
    online_group_dro,
    pilot_gamma,
    smd,
    smd_mero,
    synthetic_problem,
    tune,
)
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN = float("nan")
_rng = np.random.default_rng(0)
X = _rng.standard_normal((18, 3))
Y = np.where(_rng.random(18) < 0.5, -1.0, 1.0)
G = np.arange(18) % 3
P = GroupProblem.from_data(X, Y, G, domain=Ball(2.0))
W = np.zeros(3)
Q = np.ones(3) / 3
W_NAN = np.array([0.0, NAN, 0.0])
DATA = (X, Y, G)
LOSS = GroupDROLoss(3)
VR = VRGroupDROLoss(3)
VR.refresh(torch.ones(6), torch.tensor([0, 1, 2, 0, 1, 2]))
L6 = torch.rand(6, generator=torch.Generator().manual_seed(0))
G6 = torch.tensor([0, 1, 2, 0, 1, 2])


def _oracle(w, idx):
    return np.zeros(len(idx)), np.zeros((len(idx), 3))


def _runs(name, fn, stop="epochs", extra=None):
    """Cases every solver shares: problem, stopping rule, start point, seed, callback."""
    extra = extra or {}

    def call(**kw):
        return fn(P, **{stop: 1, **extra, **kw})

    return [
        bad(name, "problem", lambda: fn(None, **{stop: 1, **extra}), kind="none"),
        bad(name, "problem", lambda: fn(DATA, **{stop: 1, **extra}), *DATA, kind="type"),
        bad(name, stop, lambda: call(**{stop: 0}), P, kind="range"),
        bad(name, stop, lambda: call(**{stop: 1.5}), P, kind="type"),
        bad(name, "max_ifo", lambda: call(max_ifo=-10), P, kind="range"),
        bad(name, "w0", lambda: call(w0=np.zeros(4)), P, kind="shape"),
        bad(name, "w0", lambda: call(w0=W_NAN), P, W_NAN, kind="nan"),
        bad(name, "w0", lambda: call(w0="zero"), P, kind="type"),
        bad(name, "w0", lambda: call(w0=np.zeros(0)), P, kind="empty"),
        bad(name, "callback", lambda: call(callback=3), P, kind="type"),
    ]


def _seeded(name, fn, stop="epochs", extra=None):
    extra = extra or {}
    return [bad(name, "seed", lambda: fn(P, **{stop: 1, **extra}, seed=-1), P, kind="range")]


CASES = [
    # aleg
    *_runs("aleg", aleg),
    *_seeded("aleg", aleg),
    bad("aleg", "inner", lambda: aleg(P, epochs=1, inner=0), P, kind="range"),
    bad("aleg", "alpha", lambda: aleg(P, epochs=1, alpha=NAN), P, kind="nan"),
    bad("aleg", "alpha", lambda: aleg(P, epochs=1, alpha=-0.5), P, kind="range"),
    bad("aleg", "gamma", lambda: aleg(P, epochs=1, gamma="fast"), P, kind="name"),
    bad("aleg", "gamma", lambda: aleg(P, epochs=1, gamma=-1.0), P, kind="range"),
    bad("aleg", "gamma", lambda: aleg(P, epochs=1, gamma=None), P, kind="none"),
    bad("aleg", "steps", lambda: aleg(P, epochs=1, steps=[NAN]), P, kind="nan"),
    bad("aleg", "steps", lambda: aleg(P, epochs=1, steps=[]), P, kind="empty"),
    bad("aleg", "risk_offsets", lambda: aleg(P, epochs=1, risk_offsets=[0.0, 1.0]), P, kind="shape"),
    bad("aleg", "risk_offsets", lambda: aleg(P, epochs=1, risk_offsets=[0.0, NAN, 1.0]), P, kind="nan"),
    bad("aleg", "estimator", lambda: aleg(P, epochs=1, estimator="exact"), P, kind="name"),
    # alem
    *_runs("alem", alem),
    *_seeded("alem", alem),
    bad("alem", "stage1_epochs", lambda: alem(P, epochs=1, stage1_epochs=0), P, kind="range"),
    bad("alem", "inner", lambda: alem(P, epochs=1, inner=-1), P, kind="range"),
    bad("alem", "gamma", lambda: alem(P, epochs=1, gamma=NAN), P, kind="nan"),
    bad("alem", "stage1_gamma", lambda: alem(P, epochs=1, stage1_gamma="x"), P, kind="name"),
    # pilot_gamma
    bad("pilot_gamma", "problem", lambda: pilot_gamma(None), kind="none"),
    bad("pilot_gamma", "grid", lambda: pilot_gamma(P, grid=()), P, kind="empty"),
    bad("pilot_gamma", "grid", lambda: pilot_gamma(P, grid=(1.0, -2.0)), P, kind="range"),
    bad("pilot_gamma", "grid", lambda: pilot_gamma(P, grid=(NAN,)), P, kind="nan"),
    bad("pilot_gamma", "grid", lambda: pilot_gamma(P, grid="1,2"), P, kind="type"),
    bad("pilot_gamma", "epochs", lambda: pilot_gamma(P, epochs=0), P, kind="range"),
    bad("pilot_gamma", "inner", lambda: pilot_gamma(P, inner=0), P, kind="range"),
    bad("pilot_gamma", "alpha", lambda: pilot_gamma(P, alpha=NAN), P, kind="nan"),
    bad("pilot_gamma", "w0", lambda: pilot_gamma(P, w0=np.ones(7)), P, kind="shape"),
    bad("pilot_gamma", "risk_offsets", lambda: pilot_gamma(P, risk_offsets=[1.0]), P, kind="shape"),
    bad("pilot_gamma", "seed", lambda: pilot_gamma(P, seed=None), P, kind="none"),
    # tune
    bad("tune", "problem", lambda: tune(None, "aleg", targets=(0.1,), max_ifo=100, pilot=10, seed=0), kind="none"),
    bad("tune", "method", lambda: tune(P, "adam", targets=(0.1,), max_ifo=100, pilot=10, seed=0), P, kind="name"),
    bad("tune", "method", lambda: tune(P, None, targets=(0.1,), max_ifo=100, pilot=10, seed=0), P, kind="none"),
    bad("tune", "targets", lambda: tune(P, "aleg", targets=(), max_ifo=100, pilot=10, seed=0), P, kind="empty"),
    bad("tune", "targets", lambda: tune(P, "aleg", targets=(NAN,), max_ifo=100, pilot=10, seed=0), P, kind="nan"),
    bad("tune", "targets", lambda: tune(P, "aleg", targets=(-1.0,), max_ifo=100, pilot=10, seed=0), P, kind="range"),
    bad("tune", "max_ifo", lambda: tune(P, "aleg", targets=(0.1,), max_ifo=0, pilot=10, seed=0), P, kind="range"),
    bad("tune", "pilot", lambda: tune(P, "aleg", targets=(0.1,), max_ifo=100, pilot=-1, seed=0), P, kind="range"),
    bad(
        "tune",
        "stop_ifo",
        lambda: tune(P, "aleg", targets=(0.1,), max_ifo=100, pilot=10, seed=0, stop_ifo=NAN),
        P,
        kind="nan",
    ),
    bad(
        "tune",
        "stop_ifo",
        lambda: tune(P, "aleg", targets=(0.1,), max_ifo=100, pilot=10, seed=0, stop_ifo=-5),
        P,
        kind="range",
    ),
    bad(
        "tune",
        "stop_ifo",
        lambda: tune(P, "aleg", targets=(0.1,), max_ifo=100, pilot=10, seed=0, stop_ifo="10"),
        P,
        kind="type",
    ),
    bad("tune", "seed", lambda: tune(P, "aleg", targets=(0.1,), max_ifo=100, pilot=10, seed=1.5), P, kind="type"),
    bad("tune", "grid", lambda: tune(P, "aleg", targets=(0.1,), max_ifo=100, pilot=10, seed=0, grid=()), P),
    bad("tune", "keep", lambda: tune(P, "aleg", targets=(0.1,), max_ifo=100, pilot=10, seed=0, keep=0), P),
    bad("tune", "extra", lambda: tune(P, "aleg", targets=(0.1,), max_ifo=100, pilot=10, seed=0, extra=-1), P),
    # the baselines
    *_runs("smd", smd, "iterations"),
    *_seeded("smd", smd, "iterations"),
    bad("smd", "gamma", lambda: smd(P, iterations=1, gamma=0.0), P, kind="range"),
    bad("smd", "gamma", lambda: smd(P, iterations=1, gamma=NAN), P, kind="nan"),
    bad("smd", "risk_offsets", lambda: smd(P, iterations=1, risk_offsets="0"), P, kind="type"),
    bad("smd", "record_every", lambda: smd(P, iterations=1, record_every=0), P, kind="range"),
    *_runs("one_level_vr", one_level_vr),
    *_seeded("one_level_vr", one_level_vr),
    bad("one_level_vr", "inner", lambda: one_level_vr(P, epochs=1, inner=0), P, kind="range"),
    bad("one_level_vr", "alpha", lambda: one_level_vr(P, epochs=1, alpha=2.0), P, kind="range"),
    bad("one_level_vr", "gamma", lambda: one_level_vr(P, epochs=1, gamma=-1.0), P, kind="range"),
    *_runs("mirror_prox", mirror_prox, "iterations"),
    bad("mirror_prox", "gamma", lambda: mirror_prox(P, iterations=1, gamma=float("inf")), P, kind="nan"),
    bad("mirror_prox", "gamma", lambda: mirror_prox(P, iterations=1, gamma="1"), P, kind="type"),
    *_runs("online_group_dro", online_group_dro, "iterations"),
    *_seeded("online_group_dro", online_group_dro, "iterations"),
    bad("online_group_dro", "horizon", lambda: online_group_dro(P, iterations=1, horizon=0), P, kind="range"),
    bad("online_group_dro", "step_w", lambda: online_group_dro(P, iterations=1, step_w=-1.0), P, kind="range"),
    bad("online_group_dro", "step_q", lambda: online_group_dro(P, iterations=1, step_q=NAN), P, kind="nan"),
    bad("online_group_dro", "output", lambda: online_group_dro(P, iterations=1, output="best"), P, kind="name"),
    bad("online_group_dro", "output", lambda: online_group_dro(P, iterations=1, output=None), P, kind="none"),
    *_runs("smd_mero", smd_mero, "max_ifo"),
    *_seeded("smd_mero", smd_mero, "max_ifo"),
    bad("smd_mero", "max_ifo", lambda: smd_mero(P, max_ifo=None), P, kind="none"),
    bad("smd_mero", "gamma", lambda: smd_mero(P, max_ifo=10, gamma=0.0), P, kind="range"),
    bad("smd_mero", "stage1_gamma", lambda: smd_mero(P, max_ifo=10, stage1_gamma=NAN), P, kind="nan"),
    # references
    bad("duality_gap", "problem", lambda: duality_gap(None, W, Q), W, Q, kind="none"),
    bad("duality_gap", "w", lambda: duality_gap(P, np.zeros(5), Q), P, Q, kind="shape"),
    bad("duality_gap", "w", lambda: duality_gap(P, W_NAN, Q), P, W_NAN, Q, kind="nan"),
    bad("duality_gap", "w", lambda: duality_gap(P, "w", Q), P, Q, kind="type"),
    bad("duality_gap", "w", lambda: duality_gap(P, None, Q), P, Q, kind="none"),
    bad("duality_gap", "q", lambda: duality_gap(P, W, np.ones(3)), P, W, kind="range"),
    bad("duality_gap", "q", lambda: duality_gap(P, W, Q[:2]), P, W, Q, kind="shape"),
    bad("duality_gap", "q", lambda: duality_gap(P, W, [NAN, 0.5, 0.5]), P, W, kind="nan"),
    bad("duality_gap", "offsets", lambda: duality_gap(P, W, Q, offsets=np.zeros(2)), P, W, Q, kind="shape"),
    bad("duality_gap", "offsets", lambda: duality_gap(P, W, Q, offsets=[0, NAN, 0]), P, W, Q, kind="nan"),
    bad("duality_gap", "w0", lambda: duality_gap(P, W, Q, w0=np.zeros(2)), P, W, Q, kind="shape"),
    bad("minimax_reference", "problem", lambda: minimax_reference("p"), kind="type"),
    bad("minimax_reference", "offsets", lambda: minimax_reference(P, offsets=np.zeros(4)), P, kind="shape"),
    bad("minimax_reference", "offsets", lambda: minimax_reference(P, offsets=[NAN, 0, 0]), P, kind="nan"),
    bad("minimax_reference", "offsets", lambda: minimax_reference(P, offsets="zero"), P, kind="type"),
    bad("minimax_reference", "w0", lambda: minimax_reference(P, w0=np.zeros(6)), P, kind="shape"),
    bad("minimax_reference", "w0", lambda: minimax_reference(P, w0=W_NAN), P, W_NAN, kind="nan"),
    bad("minimax_reference", "w0", lambda: minimax_reference(P, w0=[]), P, kind="empty"),
    bad("min_weighted_risk", "problem", lambda: min_weighted_risk(None, Q), Q, kind="none"),
    bad("min_weighted_risk", "q", lambda: min_weighted_risk(P, [1.0, 1.0, -1.0]), P, kind="range"),
    bad("min_weighted_risk", "q", lambda: min_weighted_risk(P, [NAN, 1.0, 0.0]), P, kind="nan"),
    bad("min_weighted_risk", "q", lambda: min_weighted_risk(P, []), P, kind="empty"),
    bad("min_weighted_risk", "q", lambda: min_weighted_risk(P, None), P, kind="none"),
    bad("min_weighted_risk", "w0", lambda: min_weighted_risk(P, Q, w0=np.ones(9)), P, Q, kind="shape"),
    bad("min_weighted_risk", "offsets", lambda: min_weighted_risk(P, Q, offsets=[1.0]), P, Q, kind="shape"),
    bad("group_optima", "problem", lambda: group_optima(None), kind="none"),
    bad("group_optima", "problem", lambda: group_optima("p"), kind="name"),
    bad("group_optima", "problem", lambda: group_optima(DATA), *DATA, kind="type"),
    bad("group_optima", "problem", lambda: group_optima(X), X, kind="array"),
    bad("group_optima", "problem", lambda: group_optima([P]), P, kind="list"),
    # synthetic_problem
    bad("synthetic_problem", "m", lambda: synthetic_problem(m=0), kind="range"),
    bad("synthetic_problem", "n", lambda: synthetic_problem(m=2, n=0), kind="range"),
    bad("synthetic_problem", "d", lambda: synthetic_problem(m=2, n=5, d=None), kind="none"),
    bad("synthetic_problem", "radius", lambda: synthetic_problem(m=2, n=5, d=2, radius=NAN), kind="nan"),
    bad("synthetic_problem", "radius", lambda: synthetic_problem(m=2, n=5, d=2, radius=-1.0), kind="range"),
    bad("synthetic_problem", "loss", lambda: synthetic_problem(m=2, n=5, d=2, loss="hinge"), kind="name"),
    bad("synthetic_problem", "box", lambda: synthetic_problem(m=2, n=5, d=2, box="yes"), kind="type"),
    bad("synthetic_problem", "seed", lambda: synthetic_problem(m=2, n=5, d=2, seed=-1), kind="range"),
    bad("synthetic_problem", "noise", lambda: synthetic_problem(m=2, n=5, d=2, noise=0.1), kind="name"),
    # GroupProblem builders and methods
    bad("GroupProblem.from_data", "X", lambda: GroupProblem.from_data(X * NAN, Y, G), X, Y, G, kind="nan"),
    bad("GroupProblem.from_data", "X", lambda: GroupProblem.from_data(X[:, 0], Y, G), *DATA, kind="shape"),
    bad("GroupProblem.from_data", "X", lambda: GroupProblem.from_data(X[:0], Y[:0], G[:0]), *DATA, kind="empty"),
    bad("GroupProblem.from_data", "X", lambda: GroupProblem.from_data(None, Y, G), Y, G, kind="none"),
    bad("GroupProblem.from_data", "y", lambda: GroupProblem.from_data(X, Y[:-1], G), *DATA, kind="size"),
    bad("GroupProblem.from_data", "y", lambda: GroupProblem.from_data(X, Y + 2, G), *DATA, kind="range"),
    bad("GroupProblem.from_data", "groups", lambda: GroupProblem.from_data(X, Y, G[:5]), *DATA, kind="size"),
    bad("GroupProblem.from_data", "groups", lambda: GroupProblem.from_data(X, Y, None), X, Y, kind="none"),
    bad("GroupProblem.from_data", "groups", lambda: GroupProblem.from_data(X, Y, [[0, 1], []]), X, Y, kind="empty"),
    bad("GroupProblem.from_data", "groups", lambda: GroupProblem.from_data(X, Y, [[0, 99]]), X, Y, kind="range"),
    bad("GroupProblem.from_data", "groups", lambda: GroupProblem.from_data(X, Y, G * NAN), *DATA, kind="nan"),
    bad("GroupProblem.from_data", "loss", lambda: GroupProblem.from_data(X, Y, G, loss="hinge"), *DATA, kind="name"),
    bad("GroupProblem.from_data", "domain", lambda: GroupProblem.from_data(X, Y, G, domain="ball"), *DATA),
    bad("GroupProblem.from_data", "domain", lambda: GroupProblem.from_data(X, Y, G, domain=Ball(1.0, (0, 0))), *DATA),
    bad("GroupProblem.from_oracle", "oracle", lambda: GroupProblem.from_oracle(3, [[0]], **_ORC), kind="type"),
    bad("GroupProblem.from_oracle", "groups", lambda: GroupProblem.from_oracle(_oracle, G, **_ORC), G, kind="type"),
    bad("GroupProblem.from_oracle", "dim", lambda: GroupProblem.from_oracle(_oracle, [[0]], **{**_ORC, "dim": 0})),
    bad(
        "GroupProblem.from_oracle",
        "n_samples",
        lambda: GroupProblem.from_oracle(_oracle, [[0]], **{**_ORC, "n_samples": -1}),
        kind="range",
    ),
    bad(
        "GroupProblem.from_oracle",
        "domain",
        lambda: GroupProblem.from_oracle(_oracle, [[0]], **{**_ORC, "domain": None}),
        kind="none",
    ),
    bad(
        "GroupProblem.from_oracle",
        "smoothness",
        lambda: GroupProblem.from_oracle(_oracle, [[0]], **{**_ORC, "smoothness": 0.0}),
        kind="range",
    ),
    bad(
        "GroupProblem.from_oracle",
        "lipschitz",
        lambda: GroupProblem.from_oracle(_oracle, [[0]], **{**_ORC, "lipschitz": NAN}),
        kind="nan",
    ),
    bad("GroupProblem.risks", "w", lambda: P.risks(np.zeros(2)), P, kind="shape"),
    bad("GroupProblem.risks", "w", lambda: P.risks(W_NAN), P, W_NAN, kind="nan"),
    bad("GroupProblem.risks", "w", lambda: P.risks(None), P, kind="none"),
    bad("GroupProblem.risks", "w", lambda: P.risks("w"), P, kind="type"),
    bad("GroupProblem.max_risk", "w", lambda: P.max_risk(np.zeros((3, 1))), P, kind="shape"),
    bad("GroupProblem.risks_and_grads", "w", lambda: P.risks_and_grads([]), P, kind="empty"),
    bad("GroupProblem.subproblem", "i", lambda: P.subproblem(3), P, kind="range"),
    bad("GroupProblem.subproblem", "i", lambda: P.subproblem("0"), P, kind="type"),
    bad("GroupProblem.sample_eval", "pos", lambda: P.sample_eval(W, np.array([0, 18])), P, W, kind="range"),
    bad("GroupProblem.sample_eval", "pos", lambda: P.sample_eval(W, np.array([0.5])), P, W, kind="dtype"),
    bad("GroupProblem.sample_eval", "w", lambda: P.sample_eval(np.zeros(4), np.array([0])), P, kind="shape"),
    bad("GroupProblem.full_eval", "w", lambda: P.full_eval(W_NAN), P, W_NAN, kind="nan"),
    bad("GroupProblem.group_means", "per_sample", lambda: P.group_means(np.zeros(5)), P, kind="shape"),
    # Ball and Box
    bad("Ball", "radius", lambda: Ball(0.0), kind="range"),
    bad("Ball", "radius", lambda: Ball(NAN), kind="nan"),
    bad("Ball", "radius", lambda: Ball(None), kind="none"),
    bad("Ball", "radius", lambda: Ball("1"), kind="type"),
    bad("Ball", "center", lambda: Ball(1.0, (0.0, NAN)), kind="nan"),
    bad("Ball", "center", lambda: Ball(1.0, "origin"), kind="type"),
    bad("Ball", "center", lambda: Ball(1.0, ()), kind="empty"),
    bad("Box", "upper", lambda: Box(1.0, 0.0), kind="range"),
    bad("Box", "lower", lambda: Box(NAN, 1.0), kind="nan"),
    bad("Box", "upper", lambda: Box(0.0, None), kind="none"),
    bad("Box", "lower", lambda: Box("a", 1.0), kind="type"),
    bad("Box", "upper", lambda: Box((0.0, 0.0), (1.0, 1.0, 1.0)), kind="shape"),
    bad("Box", "lower", lambda: Box((), 1.0), kind="empty"),
    # the torch losses
    bad("GroupDROLoss", "n_groups", lambda: GroupDROLoss(0), kind="range"),
    bad("GroupDROLoss", "n_groups", lambda: GroupDROLoss(None), kind="none"),
    bad("GroupDROLoss", "eta", lambda: GroupDROLoss(3, eta=0.0), kind="range"),
    bad("GroupDROLoss", "eta", lambda: GroupDROLoss(3, eta=NAN), kind="nan"),
    bad("GroupDROLoss", "group_counts", lambda: GroupDROLoss(3, group_counts=[1, 2]), kind="shape"),
    bad("GroupDROLoss", "adjustment", lambda: GroupDROLoss(3, adjustment=-1.0), kind="range"),
    bad("GroupDROLoss", "group_counts", lambda: GroupDROLoss(3, adjustment=1.0), kind="missing"),
    bad("GroupDROLoss.forward", "losses", lambda: LOSS(L6 * NAN, G6), LOSS, L6, G6, kind="nan"),
    bad("GroupDROLoss.forward", "groups", lambda: LOSS(L6, G6 + 1), LOSS, L6, G6, kind="range"),
    bad("GroupDROLoss.forward", "groups", lambda: LOSS(L6, G6[:4]), LOSS, L6, G6, kind="size"),
    bad("GroupDROLoss.forward", "losses", lambda: LOSS(L6.long(), G6), LOSS, L6, G6, kind="dtype"),
    bad("GroupDROLoss.forward", "groups", lambda: LOSS(L6, G6.float()), LOSS, L6, G6, kind="dtype"),
    bad("GroupDROLoss.forward", "losses", lambda: LOSS(L6[:0], G6[:0]), LOSS, kind="empty"),
    bad("GroupDROLoss.forward", "losses", lambda: LOSS(None, G6), LOSS, G6, kind="none"),
    bad("VRGroupDROLoss", "refresh_every", lambda: VRGroupDROLoss(3, refresh_every=0), kind="range"),
    bad("VRGroupDROLoss", "n_groups", lambda: VRGroupDROLoss(1.5), kind="type"),
    bad("VRGroupDROLoss", "eta", lambda: VRGroupDROLoss(3, eta=-1.0), kind="range"),
    bad("VRGroupDROLoss", "group_counts", lambda: VRGroupDROLoss(3, group_counts=[1, 0, 2]), kind="range"),
    bad("VRGroupDROLoss", "adjustment", lambda: VRGroupDROLoss(3, adjustment=[NAN, 0, 0], group_counts=[1, 1, 1])),
    bad("VRGroupDROLoss.refresh", "losses", lambda: VR.refresh(L6 * NAN, G6), VR, L6, kind="nan"),
    bad("VRGroupDROLoss.refresh", "groups", lambda: VR.refresh(L6, G6 - 1), VR, L6, kind="range"),
    bad("VRGroupDROLoss.forward", "snapshot_losses", lambda: VR(L6, G6, L6[:3]), VR, L6, G6, kind="shape"),
    bad("VRGroupDROLoss.forward", "snapshot_losses", lambda: VR(L6, G6, L6 * NAN), VR, L6, G6, kind="nan"),
    bad("VRGroupDROLoss.forward", "snapshot_losses", lambda: VR(L6, G6, None), VR, L6, G6, kind="none"),
    bad("VRGroupDROLoss.forward", "refresh", lambda: VRGroupDROLoss(3)(L6, G6, L6), L6, G6, kind="state"),
]

_ORC = dict(dim=3, n_samples=18, domain=Ball(1.0), smoothness=1.0, lipschitz=1.0)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_has_cases():
    exempt = {
        "Result": "a record of an algorithm's output (w, q, ifo, trace, info)",
        "Tuned": "a record of tune's runs and pilot scores",
    }
    assert coverage_gaps(icml24.group_dro, CASES, exempt=exempt) == {}


_T = tune(P, "smd", targets=(0.5,), max_ifo=200, pilot=50, seed=0, grid=(1.0,), keep=1, extra=0)
ISSUE47 = [
    bad("aleg", "steps", lambda: aleg(P, epochs=1, steps="abc"), P, kind="str"),
    bad("aleg", "steps", lambda: aleg(P, epochs=1, inner=2, steps=iter([1.0, 1.0])), P, kind="iterator"),
    bad("aleg", "inner", lambda: aleg(P, epochs=1, inner=2**70), P, kind="overflow"),
    bad("alem", "inner", lambda: alem(P, epochs=1, inner=2**70), P, kind="overflow"),
    bad("pilot_gamma", "inner", lambda: pilot_gamma(P, inner=2**70), P, kind="overflow"),
    bad("pilot_gamma", "grid", lambda: pilot_gamma(P, grid=None), P, kind="none"),
    bad("pilot_gamma", "grid", lambda: pilot_gamma(P, grid="abc"), P, kind="str"),
    bad("one_level_vr", "inner", lambda: one_level_vr(P, epochs=1, inner=2**70), P, kind="overflow"),
    bad("smd_mero", "max_ifo", lambda: smd_mero(P, max_ifo=2**70), P, kind="overflow"),
    bad("synthetic_problem", "m", lambda: synthetic_problem(m=2**70), kind="overflow"),
    bad("synthetic_problem", "n", lambda: synthetic_problem(n=2**70), kind="overflow"),
    bad("synthetic_problem", "d", lambda: synthetic_problem(d=2**70), kind="overflow"),
    bad("GroupDROLoss", "n_groups", lambda: GroupDROLoss(2**70), kind="overflow"),
    bad("VRGroupDROLoss", "n_groups", lambda: VRGroupDROLoss(2**70), kind="overflow"),
    bad("Box.bind", "dim", lambda: Box(-1.0, 1.0).bind(None), kind="none"),
    bad("Box.bind", "dim", lambda: Box(-1.0, 1.0).bind(-1), kind="range"),
    bad("Box.bind", "dim", lambda: Box(-1.0, 1.0).bind(2.5), kind="type"),
    bad("Box.bind", "dim", lambda: Box(-1.0, 1.0).bind(2**70), kind="overflow"),
    bad("Tuned.ifo", "target", lambda: _T.ifo(None), _T, kind="none"),
    bad("Tuned.ifo", "target", lambda: _T.ifo(NAN), _T, kind="nan"),
    bad("Tuned.ifo", "target", lambda: _T.ifo("0.5"), _T, kind="type"),
    bad("Tuned.ifo", "target", lambda: _T.ifo(-1.0), _T, kind="range"),
]


@pytest.mark.parametrize("case", ISSUE47, ids=lambda c: c.id)
def test_refuses_issue47(case):
    assert_refuses(case)


def test_tuned_ifo_of_a_reached_target():
    assert _T.ifo(0.5) == _T.best.hits[0.5]
