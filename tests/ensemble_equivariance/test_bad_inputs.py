"""Bad input: every public callable refuses it with a one-line InputError naming the argument, and leaves the
objects passed in as they were."""

import math

import numpy as np
import pytest
import torch

import icml24.ensemble_equivariance as ee
from icml24.testing import assert_refuses, bad, coverage_gaps

GEN = torch.Generator().manual_seed(0)
X = torch.randn(6, 1, 4, 4, generator=GEN)
Y = torch.tensor([0, 1, 2, 0, 1, 2])
XA, YA = ee.augment(X, Y, "c4")
XNP = X.numpy().copy()
XNAN = X.clone()
XNAN[0, 0, 0, 0] = float("nan")
RECT = torch.randn(3, 1, 4, 5)
C4 = ee.Group("c4")
YONE = torch.nn.functional.one_hot(YA, 3).double()
MEAN = ee.NTKEnsembleMean(2).fit(XA.double(), YONE, grp=C4)
MLP = ee.NTKMLP(16, 8, 3, 2, seed=0)
OUT = ee.orbit_outputs(MLP, X, C4)


def factory():
    return ee.NTKMLP(16, 8, 3, 2)


ENS = ee.train_ensemble(factory, XA, YA, members=2, steps=1)
CNN = ee.GroupCNN(1, (2, 3), 3, "c4", seed=0)

CASES = [
    # groups
    bad("Group", "group", lambda: ee.Group("so3"), kind="name"),
    bad("Group", "group", lambda: ee.Group(None), kind="none"),
    bad("Group", "group", lambda: ee.Group(4), kind="type"),
    bad("Group", "group", lambda: ee.Group(""), kind="empty"),
    bad("Group", "group", lambda: ee.Group("c5"), kind="name"),
    bad("Group.act", "x", lambda: C4.act(RECT, 1), RECT, kind="not-square"),
    bad("Group.act", "g", lambda: C4.act(X, 4), X, kind="range"),
    bad("Group.act", "g", lambda: C4.act(X, 1.5), X, kind="type"),
    bad("Group.act", "x", lambda: C4.act(torch.ones(4), 1), kind="shape"),
    bad("Group.orbit", "x", lambda: C4.orbit(None), kind="none"),
    bad("Group.permutation", "size", lambda: C4.permutation(1, 0), kind="range"),
    bad("Group.act_output", "output", lambda: C4.act_output(Y, 1, "vectors"), Y, kind="name"),
    bad("Group.act_output", "y", lambda: C4.act_output(torch.ones(4, 3), 1, "vector"), kind="not-vector"),
    bad("Group.act_output", "y", lambda: C4.act_output(Y, 1, "vector"), Y, kind="dtype"),
    bad("Group.vector_rep", "g", lambda: C4.vector_rep(4), kind="range"),
    bad("Group.vector_rep", "g", lambda: C4.vector_rep(None), kind="none"),
    bad("group", "group", lambda: ee.group("o2"), kind="name"),
    bad("group", "group", lambda: ee.group(None), kind="none"),
    bad("group", "group", lambda: ee.group(8), kind="type"),
    bad("group", "group", lambda: ee.group(""), kind="empty"),
    bad("group", "group", lambda: ee.group("C4 "), kind="name"),
    bad("augment", "x", lambda: ee.augment(RECT, Y[:3]), RECT, kind="not-square"),
    bad("augment", "y", lambda: ee.augment(X, Y[:4]), X, Y, kind="shape"),
    bad("augment", "x", lambda: ee.augment(XNAN, Y), XNAN, kind="nan"),
    bad("augment", "mode", lambda: ee.augment(X, Y, mode="random"), X, kind="name"),
    bad("augment", "grp", lambda: ee.augment(X, Y, "z2"), X, kind="name"),
    bad("augment", "x", lambda: ee.augment(X[:0], Y[:0]), kind="empty"),
    bad("augment", "grp", lambda: ee.augment(X, Y, 3.0), X, kind="type"),
    bad("augment", "y", lambda: ee.augment(X, Y, output="vector"), X, Y, kind="dtype"),
    bad("augment", "y", lambda: ee.augment(X, torch.ones(6, 3), output="vector"), X, kind="not-vector"),
    bad("is_orbit_closed", "x", lambda: ee.is_orbit_closed(RECT), RECT, kind="not-square"),
    bad("is_orbit_closed", "x", lambda: ee.is_orbit_closed(XNAN), XNAN, kind="nan"),
    bad("is_orbit_closed", "grp", lambda: ee.is_orbit_closed(X, "d6"), X, kind="name"),
    bad("is_orbit_closed", "x", lambda: ee.is_orbit_closed(torch.ones(4, 4)), kind="shape"),
    bad("is_orbit_closed", "x", lambda: ee.is_orbit_closed("images"), kind="type"),
    bad("check_images", "x", lambda: ee.check_images(RECT), RECT, kind="not-square"),
    bad("check_images", "x", lambda: ee.check_images(torch.ones(5)), kind="shape"),
    bad("check_images", "x", lambda: ee.check_images(XNAN), XNAN, kind="nan"),
    bad("check_images", "x", lambda: ee.check_images(None), kind="none"),
    bad("check_images", "x", lambda: ee.check_images(np.array(["a", "b"])), kind="type"),
    # NTK
    bad("relu_ntk", "x1", lambda: ee.relu_ntk(np.ones(5)), kind="shape"),
    bad("relu_ntk", "x2", lambda: ee.relu_ntk(np.ones((2, 5)), np.ones((2, 4))), kind="shape"),
    bad("relu_ntk", "depth", lambda: ee.relu_ntk(np.ones((2, 5)), depth=0), kind="range"),
    bad("relu_ntk", "x1", lambda: ee.relu_ntk(np.full((2, 3), np.inf)), kind="inf"),
    bad("relu_ntk", "x1", lambda: ee.relu_ntk(None), kind="none"),
    bad("relu_ntk", "x1", lambda: ee.relu_ntk(np.ones((0, 3))), kind="empty"),
    bad("NTKEnsembleMean", "depth", lambda: ee.NTKEnsembleMean(0), kind="range"),
    bad("NTKEnsembleMean", "lr", lambda: ee.NTKEnsembleMean(2, lr=0.0), kind="range"),
    bad("NTKEnsembleMean", "ridge", lambda: ee.NTKEnsembleMean(2, ridge=-1.0), kind="range"),
    bad("NTKEnsembleMean", "ridge", lambda: ee.NTKEnsembleMean(2, ridge=float("nan")), kind="nan"),
    bad("NTKEnsembleMean", "depth", lambda: ee.NTKEnsembleMean("2"), kind="type"),
    bad("NTKEnsembleMean.fit", "x", lambda: ee.NTKEnsembleMean().fit(XA[1:], YONE[1:], grp=C4), XA, kind="not-closed"),
    bad("NTKEnsembleMean.fit", "y", lambda: ee.NTKEnsembleMean().fit(XA, YONE[:5]), XA, YONE, kind="shape"),
    bad("NTKEnsembleMean.fit", "x", lambda: ee.NTKEnsembleMean().fit(XNAN, Y.double()), XNAN, kind="nan"),
    bad("NTKEnsembleMean.fit", "grp", lambda: ee.NTKEnsembleMean().fit(XA, YONE, grp="c3"), XA, kind="name"),
    bad("NTKEnsembleMean.predict", "t", lambda: MEAN.predict(X, -1.0), MEAN, X, kind="range"),
    bad("NTKEnsembleMean.predict", "x", lambda: MEAN.predict(torch.ones(2, 5)), MEAN, kind="shape"),
    bad("NTKEnsembleMean.predict", "t", lambda: MEAN.predict(X, float("nan")), MEAN, kind="nan"),
    bad("NTKEnsembleMean.predict", "NTKEnsembleMean", lambda: ee.NTKEnsembleMean().predict(X), kind="unfitted"),
    bad("NTKMLP", "width", lambda: ee.NTKMLP(16, 0, 3), kind="range"),
    bad("NTKMLP", "in_features", lambda: ee.NTKMLP(None, 4, 3), kind="none"),
    bad("NTKMLP", "depth", lambda: ee.NTKMLP(16, 4, 3, 0), kind="range"),
    bad("NTKMLP", "out_features", lambda: ee.NTKMLP(16, 4, 2.5), kind="type"),
    bad("NTKMLP", "seed", lambda: ee.NTKMLP(16, 4, 3, seed=-1), kind="range"),
    # ensembles
    bad("train_ensemble", "members", lambda: ee.train_ensemble(factory, XA, YA, members=0), XA, YA, kind="range"),
    bad("train_ensemble", "factory", lambda: ee.train_ensemble(MLP, XA, YA), MLP, XA, kind="type"),
    bad("train_ensemble", "y", lambda: ee.train_ensemble(factory, XA, YA[:5]), XA, YA, kind="shape"),
    bad("train_ensemble", "x", lambda: ee.train_ensemble(factory, XNAN, Y), XNAN, kind="nan"),
    bad("train_ensemble", "lr", lambda: ee.train_ensemble(factory, XA, YA, lr=math.inf), XA, kind="inf"),
    bad("train_ensemble", "x", lambda: ee.train_ensemble(factory, XNP, Y), XNP, kind="type"),
    bad(
        "train_ensemble",
        "checkpoints",
        lambda: ee.train_ensemble(factory, XA, YA, steps=2, checkpoints=[5]),
        kind="range",
    ),
    bad("train_ensemble", "x", lambda: ee.train_ensemble(factory, torch.ones(6, 1, 3, 3), Y), kind="architecture"),
    bad("train_ensemble", "y", lambda: ee.train_ensemble(factory, X, torch.ones(6, 4)), kind="output-shape"),
    bad("make_members", "members", lambda: ee.make_members(factory, 0), kind="range"),
    bad("make_members", "factory", lambda: ee.make_members(None, 2), kind="none"),
    bad("make_members", "seed", lambda: ee.make_members(factory, 2, -1), kind="range"),
    bad("make_members", "factory", lambda: ee.make_members(lambda: 3, 2), kind="type"),
    bad("make_members", "members", lambda: ee.make_members(factory, 1.5), kind="type"),
    bad("targets", "y", lambda: ee.targets(torch.tensor([[0, 1]])), kind="shape"),
    bad("targets", "y", lambda: ee.targets(torch.tensor([0, -1])), kind="range"),
    bad("targets", "y", lambda: ee.targets(torch.tensor([True])), kind="dtype"),
    bad("targets", "classes", lambda: ee.targets(Y, 2), Y, kind="range"),
    bad("targets", "y", lambda: ee.targets(None), kind="none"),
    bad("targets", "y", lambda: ee.targets(torch.tensor([], dtype=torch.long)), kind="empty"),
    bad("Ensemble", "base", lambda: ee.Ensemble("mlp", {"w": torch.ones(2, 3)}), kind="type"),
    bad("Ensemble", "params", lambda: ee.Ensemble(MLP, {}), MLP, kind="empty"),
    bad("Ensemble", "params", lambda: ee.Ensemble(MLP, {"a": torch.ones(2), "b": torch.ones(3)}), MLP, kind="shape"),
    bad("Ensemble", "params", lambda: ee.Ensemble(MLP, None), MLP, kind="none"),
    bad("Ensemble.subset", "index", lambda: ENS.subset([5]), ENS, kind="range"),
    bad("Ensemble.subset", "index", lambda: ENS.subset([]), ENS, kind="empty"),
    bad("Ensemble.subset", "index", lambda: ENS.subset(1), ENS, kind="type"),
    bad("Ensemble.member_outputs", "x", lambda: ENS.member_outputs(XNAN), ENS, XNAN, kind="nan"),
    bad("Ensemble.member_outputs", "x", lambda: ENS.member_outputs(torch.ones(2, 1, 3, 3)), ENS, kind="shape"),
    bad("orbit_outputs", "x", lambda: ee.orbit_outputs(MLP, RECT), MLP, RECT, kind="not-square"),
    bad("orbit_outputs", "f", lambda: ee.orbit_outputs("model", X), X, kind="type"),
    bad("orbit_outputs", "grp", lambda: ee.orbit_outputs(MLP, X, "c6"), MLP, X, kind="name"),
    bad("orbit_outputs", "x", lambda: ee.orbit_outputs(MLP, XNAN), MLP, XNAN, kind="nan"),
    bad("orbit_outputs", "x", lambda: ee.orbit_outputs(MLP, XNP), MLP, XNP, kind="type"),
    bad("orbit_same_prediction", "outputs", lambda: ee.orbit_same_prediction(OUT[0]), OUT, kind="shape"),
    bad("orbit_same_prediction", "outputs", lambda: ee.orbit_same_prediction(OUT[:3]), OUT, kind="order"),
    bad("orbit_same_prediction", "outputs", lambda: ee.orbit_same_prediction(OUT.numpy()), kind="type"),
    bad("orbit_same_prediction", "outputs", lambda: ee.orbit_same_prediction(OUT * np.nan), kind="nan"),
    bad("orbit_same_prediction", "per_sample", lambda: ee.orbit_same_prediction(OUT, per_sample="yes"), kind="type"),
    bad("equivariance_error", "outputs", lambda: ee.equivariance_error(OUT, "d4"), OUT, kind="order"),
    bad("equivariance_error", "output", lambda: ee.equivariance_error(OUT, "c4", output="vectors"), kind="name"),
    bad("equivariance_error", "outputs", lambda: ee.equivariance_error(OUT, "c4", output="vector"), kind="not-vector"),
    bad("equivariance_error", "outputs", lambda: ee.equivariance_error(None), kind="none"),
    bad("equivariance_error", "outputs", lambda: ee.equivariance_error(OUT[:, :0]), kind="empty"),
    bad("equivariance_error", "outputs", lambda: ee.equivariance_error(OUT, "c4", output="image"), kind="not-square"),
    bad("ensemble_metrics", "ensemble", lambda: ee.ensemble_metrics(MLP, X), MLP, X, kind="type"),
    bad("ensemble_metrics", "sizes", lambda: ee.ensemble_metrics(ENS, X, sizes=[3]), ENS, kind="range"),
    bad("ensemble_metrics", "x", lambda: ee.ensemble_metrics(ENS, RECT), ENS, RECT, kind="not-square"),
    bad("ensemble_metrics", "grp", lambda: ee.ensemble_metrics(ENS, X, "c2"), ENS, kind="name"),
    bad("ensemble_metrics", "sizes", lambda: ee.ensemble_metrics(ENS, X, sizes=2), ENS, kind="type"),
    bad("ensemble_metrics", "output", lambda: ee.ensemble_metrics(ENS, X, output="scalar"), ENS, kind="name"),
    bad("ensemble_metrics", "outputs", lambda: ee.ensemble_metrics(ENS, X, output="vector"), ENS, kind="not-vector"),
    # baselines
    bad("OrbitAveraged", "model", lambda: ee.OrbitAveraged("net"), kind="type"),
    bad("OrbitAveraged", "grp", lambda: ee.OrbitAveraged(MLP, "c3"), MLP, kind="name"),
    bad("OrbitAveraged", "model", lambda: ee.OrbitAveraged(None), kind="none"),
    bad("OrbitAveraged", "grp", lambda: ee.OrbitAveraged(MLP, 4), MLP, kind="type"),
    bad("OrbitAveraged.forward", "x", lambda: ee.OrbitAveraged(MLP)(RECT), MLP, RECT, kind="not-square"),
    bad("OrbitAveraged.forward", "x", lambda: ee.OrbitAveraged(MLP)(XNAN), MLP, XNAN, kind="nan"),
    bad("GroupCNN", "channels", lambda: ee.GroupCNN(1, (), 3), kind="empty"),
    bad("GroupCNN", "kernel", lambda: ee.GroupCNN(1, (2,), 3, kernel=2), kind="even"),
    bad("GroupCNN", "grp", lambda: ee.GroupCNN(1, (2,), 3, "c8"), kind="name"),
    bad("GroupCNN", "classes", lambda: ee.GroupCNN(1, (2,), 0), kind="range"),
    bad("GroupCNN", "in_channels", lambda: ee.GroupCNN(None, (2,), 3), kind="none"),
    bad("GroupCNN", "channels", lambda: ee.GroupCNN(1, "8", 3), kind="type"),
    bad("train_members_loop", "members", lambda: ee.train_members_loop(factory, XA, YA, members=0), XA, kind="range"),
    bad("train_members_loop", "factory", lambda: ee.train_members_loop(MLP, XA, YA), MLP, XA, kind="type"),
    bad("train_members_loop", "y", lambda: ee.train_members_loop(factory, XA, YA[:3]), XA, YA, kind="shape"),
    bad("train_members_loop", "x", lambda: ee.train_members_loop(factory, XNAN, Y), XNAN, kind="nan"),
    bad("train_members_loop", "steps", lambda: ee.train_members_loop(factory, XA, YA, steps=-1), XA, kind="range"),
]

# issue 47: torch errors escaping the forwards, silent acceptances, raw errors from the user's callables
F64 = torch.float64
STACKED = {"weights.0": torch.ones(2, 8, 16), "weights.1": torch.ones(2, 8, 8), "weights.2": torch.ones(2, 3, 8)}
CASES += [
    bad("NTKMLP.forward", "x", lambda: MLP(torch.randn(2, 15)), MLP, kind="shape"),
    bad("NTKMLP.forward", "x", lambda: MLP(torch.tensor(1.0)), MLP, kind="scalar"),
    bad("NTKMLP.forward", "x", lambda: MLP(torch.ones(2, 16, dtype=torch.long)), MLP, kind="dtype"),
    bad("NTKMLP.forward", "x", lambda: MLP(torch.ones(2, 16, dtype=F64)), MLP, kind="float64"),
    bad("NTKMLP.forward", "x", lambda: MLP(torch.full((2, 16), math.nan)), MLP, kind="nan"),
    bad("NTKMLP.forward", "x", lambda: MLP(np.ones((2, 16))), MLP, kind="type"),
    bad("NTKMLP.forward", "x", lambda: MLP(None), MLP, kind="none"),
    bad("NTKMLP.forward", "x", lambda: MLP(torch.ones(0, 16)), MLP, kind="empty"),
    bad("GroupCNN.forward", "x", lambda: CNN(torch.randn(2, 3, 8, 8)), CNN, kind="channels"),
    bad("GroupCNN.forward", "x", lambda: CNN(torch.randn(1, 8, 8)), CNN, kind="unbatched"),
    bad("GroupCNN.forward", "x", lambda: CNN(torch.randn(2, 1, 8, 6)), CNN, kind="not-square"),
    bad("GroupCNN.forward", "x", lambda: CNN(torch.ones(2, 1, 8, 8, dtype=torch.long)), CNN, kind="dtype"),
    bad("GroupCNN.forward", "x", lambda: CNN(torch.ones(2, 1, 8, 8, dtype=F64)), CNN, kind="float64"),
    bad("GroupCNN.forward", "x", lambda: CNN(torch.full((2, 1, 8, 8), math.nan)), CNN, kind="nan"),
    bad("GroupCNN.forward", "x", lambda: CNN(np.ones((2, 1, 8, 8))), CNN, kind="type"),
    bad("GroupCNN.forward", "x", lambda: CNN(None), CNN, kind="none"),
    bad("GroupCNN.forward", "x", lambda: CNN(torch.ones(0, 1, 8, 8)), CNN, kind="empty"),
    bad("OrbitAveraged.forward", "x", lambda: ee.OrbitAveraged(MLP)(torch.randn(2, 1, 3, 3)), MLP, kind="size"),
    bad("OrbitAveraged.forward", "model", lambda: ee.OrbitAveraged(lambda v: "s")(X), X, kind="returns-str"),
    bad("OrbitAveraged.forward", "x", lambda: ee.OrbitAveraged(MLP)(X.long()), MLP, kind="dtype"),
    bad("relu_ntk", "x1", lambda: ee.relu_ntk(np.full((2, 3), 1e300)), kind="overflow"),
    bad("NTKEnsembleMean.fit", "y", lambda: ee.NTKEnsembleMean().fit(XA, YA), XA, YA, kind="integer-labels"),
    bad("NTKEnsembleMean.fit", "y", lambda: ee.NTKEnsembleMean().fit(XA, "abc"), XA, kind="str"),
    bad("Group.act_output", "y", lambda: C4.act_output("abc", 1), kind="str"),
    bad("augment", "y", lambda: ee.augment(X, Y.numpy()), X, kind="mixed-types"),
    bad("augment", "x", lambda: ee.augment(torch.ones(6, 1, 4, 4, dtype=torch.complex64), Y), Y, kind="complex"),
    bad("augment", "y", lambda: ee.augment(X, torch.ones(6, dtype=torch.complex64)), X, kind="complex"),
    bad("augment", "y", lambda: ee.augment(XNP, np.array(list("abcdef"))), XNP, kind="str"),
    bad("is_orbit_closed", "x", lambda: ee.is_orbit_closed(torch.ones(2, 4, 4, dtype=torch.complex64)), kind="complex"),
    bad("check_images", "x", lambda: ee.check_images(torch.ones(2, 4, 4, dtype=torch.complex64)), kind="complex"),
    bad("check_images", "x", lambda: ee.check_images(torch.ones(2, 4, 4, dtype=torch.bool)), kind="bool"),
    bad("targets", "y", lambda: ee.targets(torch.tensor(1.0)), kind="scalar"),
    bad("targets", "classes", lambda: ee.targets(torch.ones(3, 2), 5), kind="float-targets"),
    bad("train_ensemble", "factory", lambda: ee.train_ensemble(lambda: 1 / 0, XA, YA), XA, YA, kind="raises"),
    bad(
        "train_ensemble", "lr", lambda: ee.train_ensemble(factory, XA, YA, members=1, steps=20, lr=1e9), kind="diverges"
    ),
    bad("make_members", "factory", lambda: ee.make_members(lambda: 1 / 0, 2), kind="raises"),
    bad("make_members", "factory", lambda: ee.make_members(torch.nn.Linear, 2), kind="needs-arguments"),
    bad("Ensemble", "params", lambda: ee.Ensemble(MLP, {"weights.0": 3}), MLP, kind="not-tensor"),
    bad("Ensemble", "params", lambda: ee.Ensemble(MLP, {"w": torch.ones(2, 3)}), MLP, kind="unknown-name"),
    bad("Ensemble", "params", lambda: ee.Ensemble(MLP, {"weights.0": torch.ones(2, 8, 16)}), MLP, kind="missing"),
    bad("Ensemble", "params", lambda: ee.Ensemble(MLP, {**STACKED, "weights.2": torch.ones(2, 3)}), MLP, kind="shape"),
    bad("Ensemble", "params", lambda: ee.Ensemble(MLP, {k: v * math.nan for k, v in STACKED.items()}), kind="nan"),
    bad("Ensemble", "params", lambda: ee.Ensemble(MLP, {k: v[:0] for k, v in STACKED.items()}), kind="no-members"),
    bad("Ensemble", "buffers", lambda: ee.Ensemble(MLP, STACKED, "b"), MLP, kind="type"),
    bad("Ensemble", "buffers", lambda: ee.Ensemble(MLP, STACKED, {"b": torch.ones(2, 3)}), MLP, kind="unknown-name"),
    bad("Ensemble.subset", "index", lambda: ENS.subset([0, 0]), ENS, kind="duplicate"),
    bad("orbit_outputs", "x", lambda: ee.orbit_outputs(MLP, torch.ones(2, 1, 3, 3)), MLP, kind="size"),
    bad("orbit_outputs", "x", lambda: ee.orbit_outputs(MLP, X.long()), MLP, kind="dtype"),
    bad("orbit_outputs", "f", lambda: ee.orbit_outputs(lambda v: "abc", X), X, kind="returns-str"),
    bad("orbit_outputs", "f", lambda: ee.orbit_outputs(lambda v: v * math.nan, X), X, kind="returns-nan"),
    bad("orbit_outputs", "f", lambda: ee.orbit_outputs(lambda v: 1 / 0, X), X, kind="raises"),
    bad(
        "train_members_loop",
        "x",
        lambda: ee.train_members_loop(factory, torch.ones(6, 1, 3, 3), Y),
        kind="architecture",
    ),
    bad("train_members_loop", "y", lambda: ee.train_members_loop(factory, X, torch.ones(6, 4)), X, kind="output-shape"),
    bad("train_members_loop", "factory", lambda: ee.train_members_loop(lambda: 1 / 0, XA, YA), XA, kind="raises"),
    bad(
        "train_members_loop",
        "lr",
        lambda: ee.train_members_loop(factory, XA, YA, members=1, steps=20, lr=1e9),
        kind="diverges",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    assert coverage_gaps(ee, CASES) == {}


def test_forwards_keep_working_inside_the_vmapped_trainer():
    # the forwards' checks run on the unbatched input inside vmap: the trained ensemble equals the loop
    ens = ee.train_ensemble(factory, XA, YA, members=2, steps=3, lr=0.5)
    loop = ee.train_members_loop(factory, XA, YA, members=2, steps=3, lr=0.5)
    want = torch.stack([m(X) for m in loop]).detach()
    assert torch.allclose(ens.member_outputs(X), want, atol=1e-5)
    cnn = ee.train_ensemble(lambda: ee.GroupCNN(1, (2,), 3), XA, YA, members=2, steps=1)
    assert cnn.member_outputs(X).shape == (2, 6, 3)
