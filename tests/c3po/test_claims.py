import subprocess
import sys

from icml24 import registry
from icml24.c3po import paper
from icml24.testing import check_claim


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('c3po'); "
        "print(len(m.claims), 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["2", "False", "True"]


def test_method_is_registered():
    assert registry.get("c3po") is paper.METHOD
    assert [c.name for c in paper.METHOD.claims] == ["adherence-without-overgeneralization", "anchor-terms"]


def test_adherence_claim():
    m = check_claim(
        paper.ADHERENCE,
        [
            {"c3po_adherence": 0.0},  # an untrained adapter: nothing learned
            {"c3po_overgen": 1.0},  # a copy of SCD: applies the feedback everywhere
            {"c3po_adherence": 0.6, "dpo_adherence": 1.0},  # far below DPO's adherence
            {"dpo_overgen": 0.0, "scd_overgen": 0.0},  # plain fine-tuning does not overgeneralize: nothing to show
            {"c3po_overgen": 0.3, "in_context_overgen": 0.3},  # no better than prompting
        ],
    )
    assert m["base_adherence"] == 0.0  # the base model never writes '&' on its own


def test_anchor_claim():
    check_claim(
        paper.ANCHORS,
        [
            {"no_near_near": 0.0, "c3po_near": 0.0},  # dropping the near-scope term changes nothing
            {"c3po_adherence": 0.0},  # C3PO learned nothing
        ],
    )
