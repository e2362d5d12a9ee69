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
    assert out.split() == [str(len(paper.METHOD.claims)), "False"]


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
def test_dpo_realignment():
    check_claim(
        paper.DPO_REALIGNMENT,
        [
            {"lam2_kl_dera_to_dpo_retrained": 50.0},
            {"lam4_kl_interp_to_dpo_retrained": 0.0},
            {"lam0.25_kl_ref_to_dpo_retrained": 0.0},
        ],
    )


@pytest.mark.slow
def test_lambda_search():
    check_claim(
        paper.LAMBDA_SEARCH,
        [{"max_log2_distance": 1.0, "matches": 1.0}, {"matches": 0.0}],
    )
