"""Each paper claim at smoke scale, and its ``holds`` rejecting metrics that contradict it."""

import math
import subprocess
import sys

import pytest

from icml24 import registry
from icml24.feedback_alignment import experiments, paper
from icml24.feedback_alignment.paper import CONSERVATION, IMPLICIT_ALIGNMENT, METHOD, MULTICLASS
from icml24.testing import check_claim


def test_method_identity():
    assert registry.get("feedback_alignment") is METHOD
    assert METHOD.arxiv == "2306.01870" and METHOD.code is None
    assert [c.name for c in METHOD.claims] == ["conservation", "implicit-alignment", "multiclass"]


def test_method_is_described_without_torch():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('feedback_alignment'); "
        "print(len(m.claims), all(c.expected for c in m.claims), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["3", "True", "False"]


def test_claims_state_the_papers_setting_and_share_the_class_counts():
    assert all(0 < len(c.paper) <= 90 for c in METHOD.claims)
    assert paper.CLASS_COUNTS == experiments.CLASS_COUNTS


@pytest.mark.slow
def test_conservation_claim():
    check_claim(
        CONSERVATION,
        [
            {"fa_drift_slope": 0.0},  # drift does not shrink with the step: no conservation law
            {"fa_neuron_drift_slope": 2.0},
            {"bp_drift_slope": 0.3},  # the reference law broken in the harness
            {"fa_drift_to_motion_at_eta_min": 0.5},  # the quantity moves as much as its parts
            {"bp_drift_to_motion_at_eta_min": 0.5},
            {"fa_motion_slope": 1.0},  # the weights themselves move only O(eta): nothing to conserve
            {"tanh_fa_drift_slope": 1.0},  # tanh would obey the law: the harness cannot see violations
            {"fa_drift_slope": math.nan},
        ],
    )


def test_implicit_alignment_claim():
    check_claim(
        IMPLICIT_ALIGNMENT,
        [
            {"fa_final_z_min": 2.0},  # alignment stays at chance
            {"fa_init_z_max": 6.0},  # did not start from chance
            {"bp_final_z_max": 10.0},  # backprop aligned to B too: not FA's doing
            {"rank_corr_min": 0.0},  # alignment unrelated to the norm growth
            {"rank_corr_min": math.nan},
        ],
    )


def test_multiclass_claim():
    check_claim(
        MULTICLASS,
        [
            {"fa_gap_5c": 0.5},  # mean gap does not grow from 5 to 10 classes
            {"fa_gap_2c": 0.5},  # nor from 2 to 5
            {"gap_growth_se": 1.0},  # the growth is within noise
            {"aligned_gain_10c": 0.0},  # better alignment does not help
            {"aligned_gain_10c": -0.01},  # it hurts
            {"aligned_gain_se": 1.0},  # the gain is within noise
            {"seeds": 1.0},  # no standard error from one seed
            {"fa_gap_10c": math.nan},
            {"aligned_gain_se": math.nan},
        ],
    )


def test_claims_save_their_plot_inside_a_run(tmp_path):
    from icml24.runs import artifacts_to

    with artifacts_to(tmp_path):
        IMPLICIT_ALIGNMENT.measure("smoke", 1)
    assert (tmp_path / "feedback_alignment-implicit-alignment.png").stat().st_size > 1000
