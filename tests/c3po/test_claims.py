import subprocess
import sys

import pytest

from icml24 import registry
from icml24.c3po import paper
from icml24.claims import Scale
from icml24.testing import check_claim


@pytest.fixture(scope="module")
def metrics():
    """The one experiment of the three claims, measured once at smoke scale, seed 0."""
    return paper.ASSISTANT.measure(Scale.SMOKE, 0)


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('c3po'); "
        "print(len(m.claims), 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["3", "False", "True"]


def test_method_is_registered():
    assert registry.get("c3po") is paper.METHOD
    assert [c.name for c in paper.METHOD.claims] == [
        "adherence-without-overgeneralization",
        "anchor-terms",
        "composition",
    ]


def test_claims_share_one_experiment():
    assert {c.experiment.key for c in paper.METHOD.claims} == {"c3po/assistant"}
    assert all(c.experiment is paper.ASSISTANT for c in paper.METHOD.claims)
    assert paper.ASSISTANT.requirements(Scale.SMOKE) == ()  # the world is built in
    assert "gpu" in paper.ASSISTANT.requirements(Scale.PAPER)


def test_adherence_claim(metrics):
    m = check_claim(
        paper.ADHERENCE,
        [
            {"c3po_adherence": 0.0},  # an untrained adapter: nothing learned
            {"c3po_overgen": 1.0},  # a copy of SCD: applies the feedback everywhere
            {"c3po_adherence": 0.6, "dpo_adherence": 1.0},  # far below DPO's adherence
            {"dpo_overgen": 0.0, "scd_overgen": 0.0},  # plain fine-tuning does not overgeneralize: nothing to show
            {"c3po_overgen": 0.3, "in_context_overgen": 0.3},  # no better than prompting
        ],
        metrics=metrics,
    )
    assert m["base_adherence"] == 0.0  # the base model never writes '&' on its own


def test_anchor_claim(metrics):
    check_claim(
        paper.ANCHORS,
        [
            {"no_near_near": 0.0, "c3po_near": 0.0},  # dropping the near-scope term changes nothing
            {"c3po_adherence": 0.0},  # C3PO learned nothing
        ],
        metrics=metrics,
    )
    # one C3PO "&" adapter in the whole experiment: the anchors' and the composition's are the comparison's
    assert metrics["c3po_adherence"] == metrics["ampersand_alone_adherence"]
    assert metrics["c3po_overgen"] == metrics["ampersand_alone_overgen"]


def test_composition_claim_judges_its_metrics(metrics):
    """The composition is a seed-dependent finding; at smoke seed 0 the "&" adapter learns its feedback alone and
    keeps it mixed. Its judge can fail: an adapter that learned nothing alone, a mix that drops a feedback, a mix
    that leaks it, and a no-op mix serving only the first adapter."""
    assert metrics["ampersand_alone_adherence"] >= paper.LEARNED
    assert metrics["ampersand_mixed_adherence"] >= metrics["ampersand_alone_adherence"] - paper.ADH_MARGIN
    assert paper.COMPOSITION.matches(paper.COMPOSITION.judge(metrics))
    good = {}
    for k in paper.COMPOSED:
        good.update({f"{k}_alone_adherence": 1.0, f"{k}_mixed_adherence": 0.9, f"{k}_alone_overgen": 0.0})
        good[f"{k}_mixed_overgen"] = 0.05
    assert paper.COMPOSITION.judge(good) is True
    for bad in (
        {"u_alone_adherence": 0.3, "u_mixed_adherence": 0.3},  # "u" not learned alone: nothing to keep
        {"ampersand_mixed_adherence": 0.8},  # mixing drops "&" by 0.2
        {"u_mixed_overgen": 0.15},  # mixing leaks "u" beyond its adapter alone
        {"u_mixed_adherence": 0.0},  # a no-op mix: only the "&" adapter served
    ):
        assert paper.COMPOSITION.judge({**good, **bad}) is False
    assert paper.COMPOSITION.seed_dependent and not paper.COMPOSITION.expected
