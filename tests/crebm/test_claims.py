import subprocess
import sys

import pytest

from icml24 import registry
from icml24.claims import Scale
from icml24.crebm import experiments, paper
from icml24.testing import check_claim


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('crebm'); "
        "print(len(m.claims), 'torch' in sys.modules, 'rdkit' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["5", "False", "False", "True"]


def test_method_is_registered():
    assert registry.get("crebm") is paper.METHOD
    assert [c.name for c in paper.METHOD.claims] == [
        "top1",
        "top1-retro-star",
        "preferences",
        "criteria-cost",
        "criteria-steps",
    ]


def test_claims_share_one_experiment():
    assert {c.experiment.key for c in paper.METHOD.claims} == {"crebm/pipeline"}
    assert paper.PIPELINE.runner() is experiments.run_pipeline
    needs = paper.PIPELINE.requirements(Scale.PAPER)
    assert "gpu" in needs and any(n.startswith("never:") and "USPTO" in n for n in needs)
    assert paper.PIPELINE.requirements(Scale.SMOKE) == ()


@pytest.fixture(scope="module")
def pipeline(crebm_trained):
    """The experiment's metrics at smoke scale, seed 0: ``run_pipeline`` is ``pipeline_metrics(train_all(...))``,
    here on the smoke training shared with test_core."""
    return experiments.pipeline_metrics(crebm_trained)


def test_top1_claim(pipeline):
    m = check_claim(
        paper.TOP1,
        [
            {"crebm_top1": 0.5, "base_top1": 0.5},  # an untrained energy: no gain
            {"crebm_top5": 0.5, "base_top5": 0.9},  # reranking lost routes: not a permutation of the beam
            {"alpha0_identical": 0.0},  # alpha = 0 does not give the base order back
        ],
        metrics=pipeline,
    )
    assert m["base_top5"] >= m["base_top1"] and m["n_test"] >= 50
    check_claim(
        paper.TOP1_RETRO_STAR,
        [
            {"retro_star_crebm_top1": m["retro_star_top1"]},  # reranking changed nothing
            {"retro_star_crebm_top5": m["retro_star_top5"] - 0.1},  # routes lost: not a permutation
        ],
        metrics=pipeline,
    )


def test_preference_and_criteria_claims(pipeline):
    m = check_claim(
        paper.PREFERENCES,
        [{"crebm_top1": 0.6, "mle_top1": 0.6}, {"crebm_top1": 0.5, "mle_top1": 0.6}],  # a copy of MLE; worse
        metrics=pipeline,
    )
    check_claim(
        paper.CRITERIA_COST,
        [
            {"cost_top1_price": 30.0, "base_top1_price": 30.0},  # price not lowered
            {"cost_top1": 0.2, "base_top1": 0.6},  # cheaper by losing accuracy
        ],
        metrics=pipeline,
    )
    assert m["n_pref_pairs"] > 0
    # a finding: the beam holds almost no shorter routes, so the steps criterion cannot lower the depth
    steps = check_claim(paper.CRITERIA_STEPS, [{"steps_top1_steps": 5.0}], expect=False, metrics=pipeline)
    assert steps["steps_top1_steps"] == steps["steps_heuristic_top1_steps"] <= steps["base_top1_steps"]
    assert paper.CRITERIA_STEPS.judge({**steps, "steps_top1_steps": steps["base_top1_steps"] - 0.2})
