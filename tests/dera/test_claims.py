import subprocess
import sys

import pytest

from icml24 import registry
from icml24.dera import paper
from icml24.testing import check_claim


def test_registered():
    assert registry.get("dera") is paper.METHOD


def test_describe_does_not_import_torch():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('dera'); "
        "print(len(m.claims), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["3", "False"]


def test_paper_texts():
    for claim in paper.METHOD.claims:
        assert 0 < len(claim.paper) <= 90


@pytest.mark.slow
def test_realignment():
    check_claim(
        paper.REALIGNMENT,
        [
            {"lam2_kl_dera_to_retrained": 10.0},
            {"lam0.25_kl_interp_to_retrained": 0.0},
            {"lam4_dera_frontier_gap": 50.0},
            {"lam0.5_kl_ref_to_retrained": 0.0},
        ],
    )


@pytest.mark.slow
def test_identities():
    check_claim(
        paper.IDENTITIES,
        [
            {"max_abs_logp_diff_lam1_vs_aligned": 0.1},
            {"generations_identical": 0.75},
            {"aligned_vs_ref_max_abs_logp_diff": 0.0},
        ],
    )


@pytest.mark.slow
def test_cost():
    check_claim(paper.COST, [{"retrain_over_dera": 2.0}])
