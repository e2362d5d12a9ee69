import subprocess
import sys

import pytest

from icml24 import registry
from icml24.claims import Scale
from icml24.red_xai import paper
from icml24.testing import check_claim


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('red_xai'); "
        "print(len(m.claims), 'numpy' in sys.modules, 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["3", "False", "False", "True"]


def test_method_is_registered():
    m = registry.get("red_xai")
    assert m is paper.METHOD and [c.name for c in m.claims] == ["questioning", "fix", "checks"]


def test_the_claims_judge_one_experiment():
    assert {c.experiment.key for c in paper.METHOD.claims} == {"red_xai/shortcut"}
    assert paper.SHORTCUT.needs == () and paper.SHORTCUT.paper_needs == ("data:fashion-mnist",)


@pytest.fixture(scope="module")
def shortcut():
    """The shortcut experiment's metrics, measured once for the three claims."""
    return paper.SHORTCUT.measure(Scale.SMOKE, 0)


def test_questioning_claim(shortcut):
    m = check_claim(
        paper.QUESTIONING,
        [
            {"digits_acc_test": 0.1},  # an untrained model
            {"digits_acc_test": 0.8},  # accuracy would already reveal the problem
            {"digits_reliance": 0.0},  # the clean oracle's reliance: no shortcut to find
            {"digits_spray_ari": 0.0},  # SpRAy misses the patched images
            {"digits_cav_acc": 0.5},
            {"arms": 2.0},  # an arm went missing
        ],
        metrics=shortcut,
    )
    assert m["digits_reliance"] > m["digits_oracle_reliance"]


def test_fix_claim(shortcut):
    m = check_claim(
        paper.FIX,
        [
            {"digits_pclarc_reliance": 0.2},  # the projection left the shortcut
            {"digits_rrr_reliance": 0.2},
            {"digits_rrr_acc": 0.5},  # fixed by destroying the model
            {"digits_pclarc_acc": 0.5},
            {"digits_rrr_random_reliance": 0.0},  # any penalty would do: the mask does not matter
            {"digits_model_reliance": 0.0},  # nothing to fix
        ],
        metrics=shortcut,
    )
    assert m["digits_rrr_reliance"] < m["digits_rrr_random_reliance"]


def test_checks_claim(shortcut):
    m = check_claim(
        paper.CHECKS,
        [
            {"digits_rma_rrr": 0.3},  # the fix left the mass on the patch
            {"digits_rma_rrr_random": 0.0},  # any mask would do
            {"digits_rand_corr": 0.9},  # the heatmaps do not depend on the weights
            {"digits_rand_corr_input": 0.0},  # the check cannot fail
            {"digits_rma_model": 0.05},  # no mass on the patch before the fix
            {"digits_flip_aopc_model": 0.04},  # flipping by the heatmap is no better than a random order
            {"digits_flip_aopc_init": 0.5},  # the control passes the flipping check: it cannot tell
            {"arms": 2.0},
        ],
        metrics=shortcut,
    )
    assert "digits_rashomon_reliance_max" in m and m["digits_rashomon_models"] >= 3
    assert "digits_rma_init" in m  # the untrained model's mass is measured in the same run and reported


def test_without_fashion_mnist_quick_scale_is_not_run_before_training(monkeypatch, tmp_path):
    from icml24.errors import DataUnavailable
    from icml24.red_xai import experiments

    def no_training(*args, **kwargs):
        raise AssertionError("trained before reading every arm's data")

    monkeypatch.setenv("ICML24_DATA", str(tmp_path))
    monkeypatch.setattr(experiments, "fit", no_training)
    with pytest.raises(DataUnavailable, match="Fashion-MNIST"):
        paper.SHORTCUT.measure(Scale.QUICK, 0)
