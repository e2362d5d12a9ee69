"""The paper's claims at smoke scale, and contradicting metrics that must make them fail."""

import subprocess
import sys

import pytest

from icml24 import registry
from icml24.gnn_certify import paper
from icml24.testing import check_claim
from tests.conftest import needs_mutag


def test_registered():
    assert registry.get("gnn_certify") is paper.METHOD
    assert [c.name for c in paper.METHOD.claims] == ["soundness", "tightness", "exactness", "speed"]


def test_describe_imports_neither_torch_nor_the_solver():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('gnn_certify'); "
        "print(len(m.claims), all(c.paper for c in m.claims), 'torch' in sys.modules, 'pyscipopt' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["4", "True", "False", "False"]


def test_paper_texts_are_short():
    assert all(0 < len(c.paper) <= 90 for c in paper.METHOD.claims)


@needs_mutag
def test_soundness():
    m = check_claim(paper.SOUNDNESS, [{"violations_sbt": 1.0}, {"violations_abt": 3.0}, {"samples_abt": 10.0}])
    assert m["values_checked"] > 1e6


@needs_mutag
def test_tightness():
    m = check_claim(
        paper.TIGHTNESS,
        [
            {"frac_wider_than_basic": 0.01},
            {"width_ratio_sbt_basic": 1.0},
            {"frac_abt_wider_than_sbt": 0.2},
            {"frac_wider_than_basic_input": 1e-3},
        ],
    )
    assert m["width_ratio_sbt_basic"] < 0.1  # two orders of magnitude on MUTAG


@pytest.mark.slow
@needs_mutag
def test_exactness():
    m = check_claim(
        paper.EXACTNESS,
        [
            {"max_rel_err_sbt": 0.01},
            {"max_dual_excess_abt": 0.5},
            {"optimal_abt": 0.0},
            {"max_primal_deficit_basic": 1.0},
        ],
    )
    assert m["cases"] >= 3 and m["mutag_cases"] >= 1  # 1 MUTAG subgraph + 1 random model x 2 budgets


@pytest.mark.slow
@needs_mutag
def test_speed():
    m = check_claim(
        paper.SPEED,
        [
            {"rob_sgm_time_all_sbt": 5.0, "rob_sgm_time_all_basic": 5.0},  # a copy of the baseline
            {"rob_sgm_time_all_sbt": 1e3},
            {"sgm_time_sbt": 1e3},
            {"verdicts_agree": 0.0},
            {"sbt_dual_worse": 1.0},
            {"all_solved": 0.0},
            {"rob_robust_sbt": 0.0},
            {"rob_verdicts_agree": 0.0},
            {"rob_solved_sbt": 0.0, "rob_robust_sbt": 0.0},
            {"rob_sbt_dual_worse": 1.0},
        ],
    )
    assert m["instances"] == 1 and m["rob_instances"] == 1 and m["rob_robust_sbt"] == 1
