from icml24 import registry
from icml24.seed_gnn import paper
from icml24.testing import check_claim


def test_registered():
    assert registry.get("seed_gnn") is paper.METHOD
    assert [c.name for c in paper.METHOD.claims] == ["sequential-robustness", "backbones"]


def test_sequential_robustness():
    m = check_claim(paper.ROBUSTNESS, [{"seed_sr_last": 0.9}, {"seed_mean_dd": 50.0},
                                       {"finetune_mean_dd": 0.0}, {"egnn_mean_dd": -5.0}])
    assert m["edits"] == 8 and {"seed_dd@1", "egnn_max_dd", "finetune_ms_per_edit"} <= set(m)


def test_backbones():
    check_claim(paper.BACKBONES, [{"sage_seed_sr_last": 0.5}, {"gin_seed_mean_dd": 99.0},
                                  {"sage_finetune_mean_dd": -10.0}])
