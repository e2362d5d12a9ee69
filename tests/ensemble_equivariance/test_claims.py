import subprocess
import sys

from icml24 import registry
from icml24.ensemble_equivariance import paper
from icml24.testing import check_claim


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('ensemble_equivariance'); "
        "print(len(m.claims), 'numpy' in sys.modules, 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["3", "False", "False", "True"]


def test_method_is_registered():
    m = registry.get("ensemble_equivariance")
    assert m is paper.METHOD and [c.name for c in m.claims] == ["exactness", "emergence", "accuracy"]


def test_exactness_claim():
    m = check_claim(
        paper.EXACTNESS,
        [
            {"aug_err_max": 1e-6},  # not exact
            {"broken_err_min": 1e-12},  # the broken orbit would also be invariant: the check sees nothing
            {"noaug_err_min": 1e-12},
            {"aug_mean_t0_absmax": 0.1},
            {"aug_train_residual_inf": 0.5},
            {"aug_test_acc": 0.1},
        ],
    )
    assert m["aug_err_t1_noise"] <= paper.EXACT_TOL and m["aug_err_tinf_test"] <= paper.EXACT_TOL


def test_emergence_claim():
    m = check_claim(
        paper.EMERGENCE,
        [
            {"aug_osp_m64_noise": 1.5},  # no gain over the members off-manifold
            {"aug_osp_m64_test": 1.5},
            {"aug_osp_min_step_test": -0.3},  # OSP falls with M
            {"aug_err_slope_noise": 0.0},  # error does not fall
            {"aug_err_slope_test": -1.5},
            {"aug_vs_noaug_osp_noise": 0.0},  # an untrained pair (same init) gives 0
            {"noaug_over_aug_err_noise": 1.0},
            {"aug_test_acc": 0.1},
        ],
    )
    assert m["aug_osp_m64_noise"] > m["aug_osp_m1_noise"]


def test_accuracy_claim():
    check_claim(
        paper.ACCURACY,
        [
            {"ensemble_acc": 0.1},
            {"single_acc": 0.99},
            {"tta_osp_noise": 3.5},
            {"gcnn_osp_noise": 3.0},
        ],
    )
