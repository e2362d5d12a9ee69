import subprocess
import sys

import pytest

from icml24 import registry
from icml24.claims import Scale
from icml24.graph_transformer import paper
from icml24.testing import check_claim


@pytest.fixture(scope="module")
def attention_metrics():
    """The attention experiment at SMOKE scale, measured once for the three claims that judge it."""
    return paper.ATTENTION.measure(Scale.SMOKE, 0)


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('graph_transformer'); "
        "print(len(m.claims), 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["4", "False", "True"]


def test_method_is_registered():
    m = registry.get("graph_transformer")
    assert m is paper.METHOD
    assert [c.name for c in m.claims] == [
        "sample-complexity",
        "pe-finds-core",
        "sparse-attention",
        "attention-mass-to-one",
    ]


def test_sample_complexity_claim():
    m = check_claim(
        paper.SAMPLE_COMPLEXITY,
        [
            {"pe_err_max_labels": 0.3},  # an untrained / failed GT+PE never reaches the target
            {"pe_labels_total": 512.0},  # needs as many labels as the peers (a copy of an ablation)
            {"pe_area_g0.2": 0.39},  # no better than the no-PE model over the label grid
            {"gcn_area_g0.4": 0.1},  # PyG's GCN as good as GT+PE
        ],
    )
    assert m["nope_err_max_labels"] > 0.1 and m["uniform_err_max_labels"] > 0.1


def test_attention_experiment_is_shared():
    assert [e.key for e in paper.METHOD.experiments] == [
        "graph_transformer/sample-complexity",
        "graph_transformer/attention",
    ]
    assert paper.PE_CORE.experiment is paper.SPARSE.experiment is paper.MASS_TO_ONE.experiment is paper.ATTENTION


def test_attention_claims(attention_metrics):
    m = check_claim(
        paper.PE_CORE,
        [
            {"argmax_b_z2": 3.0},  # b peaks at the wrong hop
            {"b_gap_z1": 0.1},  # b barely prefers the core hop
            {"pe_err_max": 0.5},  # PE does not help
        ],
        metrics=attention_metrics,
    )
    check_claim(
        paper.SPARSE,
        [
            {"mass_gain_min": 1.0},  # attention never moves (an untrained model)
            {"mass_over_nope_min": 1.0},  # no more concentrated than without PE
            {"entropy_drop_min": 0.0},  # attention does not sparsify
        ],
        metrics=attention_metrics,
    )
    # the finding: a mass near 1 would contradict it
    check_claim(paper.MASS_TO_ONE, [{"core_mass_end_min": 0.1}], expect=False, metrics=attention_metrics)
    assert paper.MASS_TO_ONE.judge({**m, "core_mass_end_min": 0.9}) is True
