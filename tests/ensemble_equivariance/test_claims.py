import subprocess
import sys

import pytest

from icml24 import registry
from icml24.claims import Scale
from icml24.ensemble_equivariance import paper
from icml24.testing import check_claim


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('ensemble_equivariance'); "
        "print(len(m.claims), 'numpy' in sys.modules, 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["7", "False", "False", "True"]


def test_method_is_registered():
    m = registry.get("ensemble_equivariance")
    assert m is paper.METHOD and [c.name for c in m.claims] == [
        "exactness",
        "emergence",
        "accuracy",
        "training-time",
        "width",
        "d4",
        "vector",
    ]


def test_emergence_and_training_time_judge_one_experiment():
    assert paper.EMERGENCE.run is paper.TRAINING_TIME.run is paper.C4_ENSEMBLES
    assert len(paper.METHOD.experiments) == len(paper.METHOD.claims) - 1
    assert paper.ACCURACY.experiment.paper_needs == ("data:fashion-mnist",) and not paper.ACCURACY.experiment.needs


@pytest.fixture(scope="module")
def c4_ensembles():
    """The C4 ensembles' metrics, measured once for the two claims that judge them."""
    return paper.C4_ENSEMBLES.measure(Scale.SMOKE, 0)


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


def test_emergence_claim(c4_ensembles):
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
        metrics=c4_ensembles,
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


def test_training_time_claim(c4_ensembles):
    m = check_claim(
        paper.TRAINING_TIME,
        [
            {"ntk_err_max": 1e-6},  # the closed form would not be exact
            {"aug_err_ratio_max_test": 1.0},  # the mean as far from invariant as a member (no cancellation)
            {"aug_err_ratio_max_noise": 0.5},
            {"aug_osp_gain_min_late_test": 0.0},  # no emergence on test data
            {"noaug_err_ratio_last_noise": 0.13},  # no augmentation would do as well (same init: equal ratios)
        ],
        metrics=c4_ensembles,
    )
    assert m["ntk_err_s0_noise"] == 0.0 and m["aug_osp_gain_s150_test"] > m["aug_osp_gain_s0_test"]


class _Trained(Exception):
    """Raised in place of training: the run got past reading its data."""


def _no_training(*args, **kwargs):
    raise _Trained


def test_accuracy_without_fashion_mnist(monkeypatch, tmp_path):
    # quick scale: the digits stand in, announced; paper scale: not run, before any training
    from icml24.ensemble_equivariance import experiments
    from icml24.errors import DataUnavailable
    from icml24.runs import recording_substitutions

    monkeypatch.setenv("ICML24_DATA", str(tmp_path))
    monkeypatch.setattr(experiments, "train_ensemble", _no_training)
    with recording_substitutions() as notes, pytest.raises(_Trained):
        paper.ACCURACY.measure(Scale.QUICK, 0)
    assert notes == [experiments.FASHION_STAND_IN]
    with recording_substitutions() as notes, pytest.raises(DataUnavailable, match="Fashion-MNIST"):
        paper.ACCURACY.measure(Scale.PAPER, 0)
    assert notes == []


def test_width_claim():
    m = check_claim(
        paper.WIDTH,
        [
            # an untrained ensemble: the debiased distance is |f_NTK|^2 at every width
            {"ens_ntk_wide_test": 0.4, "ens_ntk_narrow_test": 0.4},
            {"ens_ntk_wide_noise": 0.1, "ens_ntk_narrow_noise": 0.2},
            {"member_ntk_wide_test": 0.01},  # members would converge too: nothing specific to the mean
            {"test_acc_wide": 0.1},
        ],
    )
    assert m["ens_ntk_mc_w256_test"] > 0 and m["member_ntk_w256_test"] > m["ens_ntk_raw_w256_test"]


def test_d4_claim():
    check_claim(
        paper.D4,
        [
            {"ntk_d4_err_max": 1e-6},
            {"ntk_c4_err_min": 1e-12},  # rotations alone would buy flips: the control sees nothing
            {"d4_osp_gain_noise": 0.2},
            {"d4_err_slope_test": 0.0},
            {"d4_vs_c4_osp_noise": 0.0},
            {"d4_test_acc": 0.1},
        ],
    )


def test_vector_claim():
    check_claim(
        paper.VECTOR,
        [
            {"ntk_aug_err_max": 1e-6},
            {"ntk_inv_err_min": 1e-12},  # the output action would not matter
            {"ntk_noaug_err_min": 1e-12},
            {"aug_test_r2": 0.0},  # an untrained (t = 0) mean predicts 0
            {"aug_err_slope_noise": 0.0},
            {"noaug_over_aug_err_noise": 1.0},
        ],
    )
