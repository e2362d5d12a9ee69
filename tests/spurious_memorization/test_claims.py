import subprocess
import sys

import pytest

from icml24 import registry
from icml24.spurious_memorization import paper
from icml24.testing import check_claim


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('spurious_memorization'); "
        "print(len(m.claims), 'numpy' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split()[0] == "4" and out.split()[2] == "True"


def test_method_is_registered():
    m = registry.get("spurious_memorization")
    assert m is paper.METHOD and [c.name for c in m.claims] == [
        "decomposition",
        "alignment",
        "memorization",
        "networks",
    ]


def test_decomposition_claim():
    check_claim(
        paper.DECOMPOSITION,
        [{"max_abs_err": 1e-6}, {"unprojected_max_abs_err": 1e-9}, {"pinv_vs_kernel_max_abs_err": 1e-5}],
    )


def test_alignment_claim():
    m = check_claim(
        paper.ALIGNMENT,
        [
            {"rf_phi2_a0.5_F": 0.25},  # at the other regime's limit
            {"ntk_phi4_a0.25_F": 0.2},
            {"rf_phi4_a0.5_F": 0.4, "rf_phi4_a0.5_gamma": 0.4},  # phi4 above phi2
            {"ntk_relu_a0.5_F": 0.5},  # NTK above RF
            {"rf_relu_a0.25_F": 0.5},  # alpha 1/4 above alpha 1/2
            {"many_rf_phi4_F": 0.3},  # no fall towards the N >> d limit
            {"rf_phi2_a0.5_tol": 0.2},  # a tolerance too wide to mean anything
            {"ntk_relu_a0.5_F": 0.25},  # ReLU away from its gamma
            {"rf_relu_a0.25_gamma_n": 0.3},  # a finite-N value far from the paper's limit
        ],
    )
    assert m["max_abs_dev"] < 0.05


def test_memorization_claim():
    pytest.importorskip("mlxtend")
    check_claim(
        paper.MEMORIZATION,
        [
            {"syn_spur_first": 0.6},  # no memorization at small N
            {"img_spur_last": 0.95},  # no fall
            {"img_test_last": 0.5},  # generalization does not rise
            {"syn_spearman_n_spur": 0.2},
            {"img_control_pooled": 0.7},  # the control memorizes: the query leaks the label
            {"syn_control_max_z": 6.0},
        ],
    )


def test_networks_claim():
    check_claim(
        paper.NETWORKS,
        [
            {"fc_train_acc_min": 0.9},  # not trained to interpolation (an untrained net)
            {"cnn_spurious_acc_first": 0.6},  # no memorization at small N
            {"fc_spurious_acc_last": 0.95},  # no fall
            {"cnn_test_acc_last": 0.5},  # generalization does not rise
            {"fc_control_pooled": 0.8},  # the control leaks the label
            {"cnn_control_pooled": 0.3},
            {"fc_kernel_spurious_acc_first": 0.5},  # the kernel beside it does not memorize
            {"fc_points": 5.0, "fc_spearman_n_spur": 0.0},  # not monotone where enough sizes ran
        ],
    )


def test_paper_scale_says_what_it_lacks():
    from icml24.claims import Scale
    from icml24.errors import DataUnavailable
    from icml24.spurious_memorization import experiments

    with pytest.raises(DataUnavailable, match="full MNIST"):
        experiments.run_networks(Scale.PAPER, 0)
    with pytest.raises(DataUnavailable, match="full MNIST"):
        experiments._mnist_loader(Scale.PAPER, 1000)
    # declared beforehand, so that `icml24 verify --scale paper` says so before any work
    for claim in (paper.MEMORIZATION, paper.NETWORKS):
        (need,) = claim.experiment.requirements(Scale.PAPER)
        assert need.startswith("never:") and "full MNIST" in need
        assert claim.experiment.requirements(Scale.QUICK) == ()
