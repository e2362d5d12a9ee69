import subprocess
import sys

import pytest

from icml24 import registry
from icml24.claims import Scale
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


def test_holds_need_the_lambdas_they_judge():
    # a run that measured no lambda on the judged side cannot pass vacuously
    assert (
        paper.holds_dpo_interpolation({"lam2_kl_dera_to_dpo_retrained": 0.1, "lam2_kl_interp_to_dpo_retrained": 1.0})
        is False
    )
    low = {"lam0.5_kl_dera_to_dpo_retrained": 0.01, "lam0.5_kl_interp_to_dpo_retrained": 1.0}
    assert paper.holds_dpo_realignment({**low, "lam0.5_kl_ref_to_dpo_retrained": 1.0}) is False
    assert paper.holds_realignment({}) is False


def test_dpo_interpolation_judges_the_geometric_mean_and_reports_the_strict_count():
    # DeRa loses at lambda 0.5 and wins at 0.25, by more: the geometric mean of the ratios is below 1
    m = {
        "lam0.25_kl_dera_to_dpo_retrained": 0.0074,
        "lam0.25_kl_interp_to_dpo_retrained": 0.0232,
        "lam0.5_kl_dera_to_dpo_retrained": 0.0510,
        "lam0.5_kl_interp_to_dpo_retrained": 0.0336,
    }
    assert paper.holds_dpo_interpolation(m) is True
    assert paper.holds_dpo_interpolation({**m, "lam0.25_kl_dera_to_dpo_retrained": 0.02}) is False
    assert paper.holds_dpo_interpolation({**m, "lam0.5_kl_interp_to_dpo_retrained": 0.0}) is False


def test_claims_share_two_experiments():
    keys = [c.experiment.key for c in paper.METHOD.claims]
    assert keys == ["dera/realignment", "dera/dpo", "dera/dpo", "dera/realignment"]
    assert paper.REALIGNMENT.experiment is paper.LAMBDA_SEARCH.experiment is paper.REALIGNMENT_RUN
    assert paper.DPO_REALIGNMENT.experiment is paper.DPO_INTERPOLATION.experiment is paper.DPO_RUN
    assert all(e.requirements(Scale.PAPER) == () for e in paper.METHOD.experiments)  # no data: a built-in language


@pytest.fixture(scope="module")
def realignment_metrics():
    return paper.REALIGNMENT_RUN.measure(Scale.SMOKE, 0)


@pytest.fixture(scope="module")
def dpo_metrics():
    return paper.DPO_RUN.measure(Scale.SMOKE, 0)


@pytest.mark.slow
def test_realignment(realignment_metrics):
    check_claim(
        paper.REALIGNMENT,
        [
            {"lam2_kl_dera_to_retrained": 10.0},
            {"lam0.5_kl_interp_to_retrained": 0.0},
            {"lam2_dera_frontier_gap": 50.0},
            {"lam0.5_kl_ref_to_retrained": 0.0},
        ],
        metrics=realignment_metrics,
    )


@pytest.mark.slow
def test_dpo_realignment(dpo_metrics):
    check_claim(
        paper.DPO_REALIGNMENT,
        [
            {"lam2_kl_dera_to_dpo_retrained": 50.0},
            {"lam2_kl_interp_to_dpo_retrained": 0.0},
            {"lam0.5_kl_ref_to_dpo_retrained": 0.0},
        ],
        metrics=dpo_metrics,
    )


@pytest.mark.slow
def test_dpo_interpolation(dpo_metrics):  # the same run as test_dpo_realignment
    check_claim(
        paper.DPO_INTERPOLATION,
        [
            {"lam0.5_kl_dera_to_dpo_retrained": 1.0},
            {"lam0.5_kl_interp_to_dpo_retrained": 0.0},
        ],
        metrics=dpo_metrics,
    )


@pytest.mark.slow
def test_lambda_search(realignment_metrics):  # the same run as test_realignment
    check_claim(
        paper.LAMBDA_SEARCH,
        [{"max_log2_distance": 1.0, "matches": 1.0}, {"matches": 0.0}],
        metrics=realignment_metrics,
    )
