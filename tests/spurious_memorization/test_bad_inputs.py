"""Bad input: every public callable refuses it with a one-line InputError naming the argument, and leaves the
objects passed in as they were."""

import numpy as np
import pytest
import torch

import icml24.spurious_memorization as sm
from icml24.testing import assert_refuses, bad, coverage_gaps

D = 6
Z = np.random.default_rng(0).standard_normal((5, D))
G = np.array([1.0, -1.0, 1.0, -1.0, 1.0])
MASK = np.array([False, False, False, True, True, True])
ZNAN = Z.copy()
ZNAN[0, 0] = np.nan
ZINF = Z.copy()
ZINF[1, 2] = np.inf
FM = sm.RandomFeatures(D, 40, "phi2", seed=0)
NTK = sm.NTKFeatures(D, 8, "relu", seed=0)
MODEL = sm.MinNormInterpolator(FM).fit(Z, G)
RIDGE = sm.KernelRidge(FM, 0.1).fit(Z, G)
NET = sm.FullyConnected(D, hidden=(8,), seed=0)
TZ = torch.from_numpy(Z.copy())
FITTED_NET = sm.NetworkInterpolator(NET, epochs=2).fit(Z, G)

CASES = [
    # feature maps
    bad("FeatureMap", "d", lambda: sm.FeatureMap(0, 10), kind="range"),
    bad("FeatureMap", "width", lambda: sm.FeatureMap(4, -1), kind="range"),
    bad("FeatureMap", "act", lambda: sm.FeatureMap(4, 10, "gelu"), kind="name"),
    bad("FeatureMap", "d", lambda: sm.FeatureMap("4", 10), kind="type"),
    bad("FeatureMap", "seed", lambda: sm.FeatureMap(4, 10, "phi2", seed=-3), kind="range"),
    bad("RandomFeatures", "d", lambda: sm.RandomFeatures(None, 10), kind="none"),
    bad("RandomFeatures", "width", lambda: sm.RandomFeatures(4, 2.5), kind="type"),
    bad("RandomFeatures", "act", lambda: sm.RandomFeatures(4, 10, "tanh"), kind="name"),
    bad("RandomFeatures.features", "z", lambda: FM.features(np.ones((2, D + 1))), FM, kind="shape"),
    bad("RandomFeatures.features", "z", lambda: FM.features(ZNAN), FM, ZNAN, kind="nan"),
    bad("RandomFeatures.kernel", "a", lambda: FM.kernel(np.ones((0, D))), FM, kind="empty"),
    bad("RandomFeatures.kernel", "b", lambda: FM.kernel(Z, ZINF), FM, ZINF, kind="inf"),
    bad("RandomFeatures.features", "width", lambda: sm.RandomFeatures(D, None).features(Z), kind="infinite"),
    bad("NTKFeatures", "d", lambda: sm.NTKFeatures(-2, 5), kind="range"),
    bad("NTKFeatures", "width", lambda: sm.NTKFeatures(4, 0), kind="range"),
    bad("NTKFeatures", "act", lambda: sm.NTKFeatures(4, 5, "swish"), kind="name"),
    bad("NTKFeatures.features", "z", lambda: NTK.features(np.ones(D)), NTK, kind="shape"),
    bad("NTKFeatures.kernel", "a", lambda: NTK.kernel("zz"), NTK, kind="type"),
    bad("NTKFeatures.infinite_kernel", "b", lambda: NTK.infinite_kernel(Z, ZNAN), NTK, kind="nan"),
    bad("feature_map", "features", lambda: sm.feature_map("cnn", 4, 10), kind="name"),
    bad("feature_map", "d", lambda: sm.feature_map("rf", 0, 10), kind="range"),
    bad("feature_map", "width", lambda: sm.feature_map("ntk", 4, -5), kind="range"),
    bad("feature_map", "act", lambda: sm.feature_map("rf", 4, 10, "elu"), kind="name"),
    bad("feature_map", "features", lambda: sm.feature_map(None, 4, 10), kind="none"),
    # activations and Hermite
    bad("activation", "features", lambda: sm.activation("rbf", "phi2"), kind="name"),
    bad("activation", "act", lambda: sm.activation("rf", "phi3"), kind="name"),
    bad("activation", "act", lambda: sm.activation("rf", None), kind="none"),
    bad("activation", "features", lambda: sm.activation(3, "phi2"), kind="type"),
    bad("activation", "act", lambda: sm.activation("ntk", ""), kind="empty"),
    bad("activation_energy", "features", lambda: sm.activation_energy("xx", "relu"), kind="name"),
    bad("activation_energy", "act", lambda: sm.activation_energy("rf", "sigmoid"), kind="name"),
    bad("activation_energy", "act", lambda: sm.activation_energy("rf", None), kind="none"),
    bad("activation_energy", "features", lambda: sm.activation_energy(1.5, "relu"), kind="type"),
    bad("activation_energy", "features", lambda: sm.activation_energy("", "relu"), kind="empty"),
    bad("hermite", "degree", lambda: sm.hermite(-1, 0.5), kind="range"),
    bad("hermite", "degree", lambda: sm.hermite(1.5, 0.5), kind="type"),
    bad("hermite", "t", lambda: sm.hermite(2, np.array([np.nan])), kind="nan"),
    bad("hermite", "t", lambda: sm.hermite(2, "x"), kind="type"),
    bad("hermite", "t", lambda: sm.hermite(2, None), kind="none"),
    bad("hermite_coefficients", "features", lambda: sm.hermite_coefficients("rff", "relu"), kind="name"),
    bad("hermite_coefficients", "act", lambda: sm.hermite_coefficients("rf", "softplus"), kind="name"),
    bad("hermite_coefficients", "max_degree", lambda: sm.hermite_coefficients("rf", "relu", -1), kind="range"),
    bad("hermite_coefficients", "max_degree", lambda: sm.hermite_coefficients("rf", "relu", 2.5), kind="type"),
    bad("hermite_coefficients", "max_degree", lambda: sm.hermite_coefficients("rf", "relu", None), kind="none"),
    # the interpolator
    bad("MinNormInterpolator", "feature_map", lambda: sm.MinNormInterpolator("rf"), kind="type"),
    bad("MinNormInterpolator", "feature_map", lambda: sm.MinNormInterpolator(None), kind="none"),
    bad("MinNormInterpolator.fit", "z", lambda: sm.MinNormInterpolator(FM).fit(ZNAN, G), FM, ZNAN, kind="nan"),
    bad("MinNormInterpolator.fit", "g", lambda: sm.MinNormInterpolator(FM).fit(Z, G[:3]), FM, kind="shape"),
    bad(
        "MinNormInterpolator.fit",
        "z",
        lambda: sm.MinNormInterpolator(sm.RandomFeatures(D, 3)).fit(Z, G),
        kind="N>p",
    ),
    bad("MinNormInterpolator.fit", "z", lambda: sm.MinNormInterpolator(FM).fit(np.ones((3, D)), G[:3]), kind="rank"),
    bad("MinNormInterpolator.fit", "g", lambda: sm.MinNormInterpolator(FM).fit(Z, np.full(5, np.inf)), kind="inf"),
    bad("MinNormInterpolator.predict", "z", lambda: MODEL.predict(np.ones((2, D + 2))), MODEL, kind="shape"),
    bad("MinNormInterpolator.predict", "z", lambda: sm.MinNormInterpolator(FM).predict(Z), kind="unfitted"),
    bad("MinNormInterpolator.loo_predictions", "z", lambda: MODEL.loo_predictions(Z[:2]), MODEL, kind="rows"),
    bad("MinNormInterpolator.feature_alignment", "z_spurious", lambda: MODEL.feature_alignment(Z[:3]), MODEL),
    bad("MinNormInterpolator.feature_alignment", "z_spurious", lambda: MODEL.feature_alignment(ZINF), MODEL),
    # accuracies and queries
    bad("accuracy", "f", lambda: sm.accuracy(np.ones((2, 2)), G), kind="shape"),
    bad("accuracy", "g", lambda: sm.accuracy(np.ones(5), np.zeros(5)), kind="labels"),
    bad("accuracy", "g", lambda: sm.accuracy(np.ones(5), G[:2]), kind="size"),
    bad("accuracy", "f", lambda: sm.accuracy(np.array([np.nan] * 5), G), kind="nan"),
    bad("accuracy", "f", lambda: sm.accuracy(np.ones(0), np.ones(0)), kind="empty"),
    bad("check_mask", "mask", lambda: sm.check_mask(np.ones(D, dtype=bool), D), kind="no core"),
    bad("check_mask", "mask", lambda: sm.check_mask(np.zeros(D, dtype=bool), D), kind="no spurious"),
    bad("check_mask", "mask", lambda: sm.check_mask(MASK[:3], D), kind="shape"),
    bad("check_mask", "mask", lambda: sm.check_mask(np.ones(D), D), kind="dtype"),
    bad("check_mask", "mask", lambda: sm.check_mask(None, D), kind="none"),
    bad("spurious_queries", "mask", lambda: sm.spurious_queries(Z, np.ones(D, dtype=bool)), Z, kind="no core"),
    bad("spurious_queries", "z", lambda: sm.spurious_queries(ZNAN, MASK), ZNAN, kind="nan"),
    bad("spurious_queries", "core", lambda: sm.spurious_queries(Z, MASK, np.ones((5, 2))), Z, kind="shape"),
    bad("spurious_queries", "core", lambda: sm.spurious_queries(Z, MASK, np.full((5, 3), np.inf)), Z, kind="inf"),
    bad("spurious_queries", "z", lambda: sm.spurious_queries(np.ones((0, D)), MASK), kind="empty"),
    bad("spurious_accuracy", "model", lambda: sm.spurious_accuracy(None, Z, G), kind="none"),
    bad("spurious_accuracy", "z_spurious", lambda: sm.spurious_accuracy(MODEL, ZNAN, G), MODEL, kind="nan"),
    bad("spurious_accuracy", "z", lambda: sm.spurious_accuracy(MODEL, Z[:, :2], G), MODEL, kind="shape"),
    bad("spurious_accuracy", "g", lambda: sm.spurious_accuracy(MODEL, Z, G[:2]), MODEL, kind="size"),
    bad("spurious_accuracy", "model", lambda: sm.spurious_accuracy("m", Z, G), kind="type"),
    bad("test_accuracy", "model", lambda: sm.test_accuracy(object(), Z, G), kind="type"),
    bad("test_accuracy", "z_test", lambda: sm.test_accuracy(MODEL, ZINF, G), MODEL, kind="inf"),
    bad("test_accuracy", "g", lambda: sm.test_accuracy(MODEL, Z, 2 * G), MODEL, kind="labels"),
    bad("test_accuracy", "z", lambda: sm.test_accuracy(MODEL, np.ones(D), G[:1]), MODEL, kind="ndim"),
    bad("test_accuracy", "model", lambda: sm.test_accuracy(None, Z, G), kind="none"),
    bad("loo_errors", "feature_map", lambda: sm.loo_errors("rf", Z, G), kind="type"),
    bad("loo_errors", "z", lambda: sm.loo_errors(FM, ZNAN, G), FM, ZNAN, kind="nan"),
    bad("loo_errors", "g", lambda: sm.loo_errors(FM, Z, G[:4]), FM, kind="shape"),
    bad("loo_errors", "z", lambda: sm.loo_errors(FM, np.ones((0, D)), np.ones(0)), FM, kind="empty"),
    bad("loo_errors", "feature_map", lambda: sm.loo_errors(None, Z, G), kind="none"),
    bad("feature_alignment", "feature_map", lambda: sm.feature_alignment(np.eye(3), Z, Z), kind="type"),
    bad("feature_alignment", "z", lambda: sm.feature_alignment(FM, ZINF, Z), FM, kind="inf"),
    bad("feature_alignment", "z_spurious", lambda: sm.feature_alignment(FM, Z, Z[:2]), FM, kind="rows"),
    bad("feature_alignment", "z_spurious", lambda: sm.feature_alignment(FM, Z, "abc"), FM, kind="type"),
    bad("feature_alignment", "feature_map", lambda: sm.feature_alignment(None, Z, Z), kind="none"),
    bad("predicted_gamma", "alpha", lambda: sm.predicted_gamma("rf", "phi2", 1.5), kind="range"),
    bad("predicted_gamma", "alpha", lambda: sm.predicted_gamma("rf", "phi2", float("nan")), kind="nan"),
    bad("predicted_gamma", "regime", lambda: sm.predicted_gamma("rf", "phi2", 0.5, "some"), kind="name"),
    bad("predicted_gamma", "act", lambda: sm.predicted_gamma("rf", "tanh", 0.5), kind="name"),
    bad("predicted_gamma", "n_train", lambda: sm.predicted_gamma("rf", "relu", 0.5, n_train=1), kind="range"),
    bad("predicted_gamma", "max_degree", lambda: sm.predicted_gamma("rf", "relu", 0.5, max_degree=None), kind="none"),
    # baselines
    bad("KernelRidge", "feature_map", lambda: sm.KernelRidge("rf"), kind="type"),
    bad("KernelRidge", "ridge", lambda: sm.KernelRidge(FM, -1.0), kind="range"),
    bad("KernelRidge", "ridge", lambda: sm.KernelRidge(FM, float("inf")), kind="inf"),
    bad("KernelRidge", "ridge", lambda: sm.KernelRidge(FM, "big"), kind="type"),
    bad("KernelRidge.fit", "g", lambda: sm.KernelRidge(FM).fit(Z, G[:2]), FM, kind="shape"),
    bad("KernelRidge.fit", "z", lambda: sm.KernelRidge(FM).fit(ZNAN, G), FM, ZNAN, kind="nan"),
    bad("KernelRidge.predict", "z", lambda: sm.KernelRidge(FM).predict(Z), kind="unfitted"),
    bad("KernelRidge.predict", "z", lambda: RIDGE.predict(np.ones((1, D + 1))), RIDGE, kind="shape"),
    bad("control_accuracy", "model", lambda: sm.control_accuracy(None, Z, G), kind="none"),
    bad("control_accuracy", "z_control", lambda: sm.control_accuracy(MODEL, ZNAN, G), MODEL, kind="nan"),
    bad("control_accuracy", "g", lambda: sm.control_accuracy(MODEL, Z, np.zeros(5)), MODEL, kind="labels"),
    bad("control_accuracy", "z", lambda: sm.control_accuracy(MODEL, Z[:, :3], G), MODEL, kind="shape"),
    bad("control_accuracy", "model", lambda: sm.control_accuracy(3, Z, G), kind="type"),
    bad("resample_spurious", "mask", lambda: sm.resample_spurious(Z, np.zeros(D, dtype=bool)), Z, kind="no spurious"),
    bad("resample_spurious", "mask", lambda: sm.resample_spurious(Z, MASK[:-1]), Z, kind="shape"),
    bad("resample_spurious", "z_spurious", lambda: sm.resample_spurious(ZNAN, MASK), ZNAN, kind="nan"),
    bad("resample_spurious", "seed", lambda: sm.resample_spurious(Z, MASK, seed=-1), Z, kind="range"),
    bad("resample_spurious", "z_spurious", lambda: sm.resample_spurious(None, MASK), kind="none"),
    bad("feature_alignment_refits", "feature_map", lambda: sm.feature_alignment_refits("ntk", Z, Z), kind="type"),
    bad("feature_alignment_refits", "z_spurious", lambda: sm.feature_alignment_refits(FM, Z, Z[:3]), FM),
    bad("feature_alignment_refits", "z", lambda: sm.feature_alignment_refits(FM, ZINF, Z), FM, kind="inf"),
    bad("feature_alignment_refits", "z", lambda: sm.feature_alignment_refits(FM, Z[:1], Z[:1]), FM, kind="one"),
    bad("feature_alignment_refits", "z", lambda: sm.feature_alignment_refits(FM, np.ones((3, D)), Z[:3]), kind="rank"),
    bad("loo_refits", "feature_map", lambda: sm.loo_refits(None, Z, G, Z), kind="none"),
    bad("loo_refits", "g", lambda: sm.loo_refits(FM, Z, G[:2], Z), FM, kind="shape"),
    bad("loo_refits", "queries", lambda: sm.loo_refits(FM, Z, G, Z[:2]), FM, kind="rows"),
    bad("loo_refits", "z", lambda: sm.loo_refits(FM, ZNAN, G, Z), FM, kind="nan"),
    bad("loo_refits", "queries", lambda: sm.loo_refits(FM, Z, G, Z[:, :2]), FM, kind="cols"),
    # networks
    bad("FullyConnected", "d", lambda: sm.FullyConnected(0), kind="range"),
    bad("FullyConnected", "hidden", lambda: sm.FullyConnected(4, hidden=(10, -2)), kind="range"),
    bad("FullyConnected", "hidden", lambda: sm.FullyConnected(4, hidden=5), kind="type"),
    bad("FullyConnected", "seed", lambda: sm.FullyConnected(4, seed=-1), kind="range"),
    bad("FullyConnected", "d", lambda: sm.FullyConnected(None), kind="none"),
    bad("SmallConvNet", "shape", lambda: sm.SmallConvNet((2, 16)), kind="range"),
    bad("SmallConvNet", "shape", lambda: sm.SmallConvNet(16), kind="type"),
    bad("SmallConvNet", "channels", lambda: sm.SmallConvNet((8, 8), channels=(0, 4)), kind="range"),
    bad("SmallConvNet", "hidden", lambda: sm.SmallConvNet((8, 8), hidden=2.5), kind="type"),
    bad("SmallConvNet", "shape", lambda: sm.SmallConvNet(None), kind="none"),
    bad("NetworkInterpolator", "net", lambda: sm.NetworkInterpolator(FM), kind="type"),
    bad("NetworkInterpolator", "epochs", lambda: sm.NetworkInterpolator(NET, epochs=0), NET, kind="range"),
    bad("NetworkInterpolator", "lr", lambda: sm.NetworkInterpolator(NET, lr=float("nan")), NET, kind="nan"),
    bad("NetworkInterpolator", "step_gamma", lambda: sm.NetworkInterpolator(NET, step_gamma=1.5), NET, kind="range"),
    bad("NetworkInterpolator", "tol", lambda: sm.NetworkInterpolator(NET, tol=-1.0), NET, kind="range"),
    bad("NetworkInterpolator", "net", lambda: sm.NetworkInterpolator(None), kind="none"),
    bad("NetworkInterpolator.fit", "z", lambda: sm.NetworkInterpolator(NET).fit(ZNAN, G), NET, ZNAN, kind="nan"),
    bad("NetworkInterpolator.fit", "g", lambda: sm.NetworkInterpolator(NET).fit(Z, np.zeros(5)), NET, kind="labels"),
    bad("NetworkInterpolator.fit", "net", lambda: sm.NetworkInterpolator(NET).fit(Z[:, :3], G), NET, kind="shape"),
    bad("NetworkInterpolator.fit", "z", lambda: sm.NetworkInterpolator(NET).fit(TZ[:0], G[:0]), NET, TZ, kind="empty"),
    bad("NetworkInterpolator.predict", "z", lambda: sm.NetworkInterpolator(NET).predict(Z), NET, kind="unfitted"),
    bad("NetworkInterpolator.predict", "z", lambda: FITTED_NET.predict(Z[:, :4]), FITTED_NET, kind="shape"),
]

# issue 47: overflow passed silently, messages that named an internal argument, raw errors from the user's model


class Predictor:
    def __init__(self, predict):
        self.predict = predict


HUGE = Z * 1e200  # finite, but every kernel of it overflows
BEYOND32 = Z * 1e39  # finite in float64, infinite in the networks' float32
CRASH = Predictor(lambda z: 1 / 0)
CASES += [
    bad("hermite", "degree", lambda: sm.hermite(200, 0.5), kind="range"),
    bad("hermite", "t", lambda: sm.hermite(4, 1e200), kind="overflow"),
    bad("RandomFeatures.features", "z", lambda: FM.features(HUGE), FM, HUGE, kind="overflow"),
    bad("RandomFeatures.kernel", "a", lambda: FM.kernel(HUGE), FM, kind="overflow"),
    bad("NTKFeatures.infinite_kernel", "a", lambda: NTK.infinite_kernel(Z, HUGE), NTK, kind="overflow"),
    bad("MinNormInterpolator.fit", "z", lambda: sm.MinNormInterpolator(FM).fit(HUGE, G), FM, HUGE, kind="overflow"),
    bad(
        "MinNormInterpolator.fit", "z", lambda: sm.MinNormInterpolator(FM).fit(np.ones((2, D + 1)), G[:2]), kind="cols"
    ),
    bad("MinNormInterpolator.predict", "z", lambda: MODEL.predict(HUGE), MODEL, kind="overflow"),
    bad("MinNormInterpolator.loo_predictions", "z", lambda: MODEL.loo_predictions(np.ones((5, D + 1))), MODEL),
    bad("MinNormInterpolator.feature_alignment", "z_spurious", lambda: MODEL.feature_alignment(np.ones((5, 2))), MODEL),
    bad("spurious_accuracy", "model", lambda: sm.spurious_accuracy(CRASH, Z, G), kind="predict-raises"),
    bad("spurious_accuracy", "model", lambda: sm.spurious_accuracy(sm.MinNormInterpolator, Z, G), kind="class"),
    bad("spurious_accuracy", "model", lambda: sm.spurious_accuracy(Predictor(lambda z: G[:3]), Z, G), kind="length"),
    bad("test_accuracy", "model", lambda: sm.test_accuracy(Predictor(lambda z: "ab"), Z, G), kind="predict-str"),
    bad("control_accuracy", "model", lambda: sm.control_accuracy(CRASH, Z, G), kind="predict-raises"),
    bad("KernelRidge.fit", "z", lambda: sm.KernelRidge(FM).fit(HUGE, G), FM, HUGE, kind="overflow"),
    bad("KernelRidge.fit", "z", lambda: sm.KernelRidge(FM).fit(np.ones((5, D + 1)), G), FM, kind="cols"),
    bad("feature_alignment_refits", "z", lambda: sm.feature_alignment_refits(FM, HUGE, Z), FM, kind="overflow"),
    bad("NetworkInterpolator", "net", lambda: sm.NetworkInterpolator(torch.nn.Flatten()), kind="no-parameters"),
    bad("NetworkInterpolator.fit", "lr", lambda: sm.NetworkInterpolator(NET, epochs=3, lr=1e30).fit(Z, G), NET),
    bad("NetworkInterpolator.fit", "z", lambda: sm.NetworkInterpolator(NET).fit(BEYOND32, G), NET, kind="float32"),
    bad("NetworkInterpolator.predict", "z", lambda: FITTED_NET.predict(BEYOND32), FITTED_NET, kind="float32"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    assert coverage_gaps(sm, CASES) == {}
