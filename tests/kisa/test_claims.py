import subprocess
import sys

import pytest

from icml24 import registry
from icml24.claims import Scale, validate_metrics
from icml24.errors import PrerequisiteMissing
from icml24.kisa import experiments, paper


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('kisa'); "
        "print(len(m.claims), 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["3", "False", "True"]


def test_method_is_registered():
    assert registry.get("kisa") is paper.METHOD
    assert [c.name for c in paper.METHOD.claims] == ["keyframes", "ablation-temporal", "unseen-compositions"]
    assert [c.expected for c in paper.METHOD.claims] == [True, True, False]


# The claims' experiment trains KISA for 300 steps on 200 demonstrations (about 30 s on an idle core) and its
# three ablations: their verdicts are checked by `icml24 verify kisa` at smoke and quick scale, on seeds 0-2.
# Here the experiment's registered runner runs once at a tiny size (one world, the full model and the ablations
# shared by the three claims), their judges are checked against contradicting metrics, and a mid-size training
# checks that KISA learns what the frame-wise baseline cannot.
TINY = experiments.Setting(n_train=12, n_test=4, steps=4, d_model=16, dim_feedforward=32, lr=2e-3, batch_size=4)
MID = experiments.Setting(n_train=64, n_test=16, steps=120, d_model=32, dim_feedforward=64, lr=3e-3, batch_size=8)


@pytest.fixture(scope="module")
def tiny():
    m = paper.TABLETOP.runner()(TINY, 0)
    return {c.name: validate_metrics(c, m) for c in paper.METHOD.claims}


def test_claims_share_one_experiment():
    assert {c.experiment.key for c in paper.METHOD.claims} == {"kisa/tabletop"}
    assert paper.METHOD.experiments == (paper.TABLETOP,)


def test_paper_scale_says_what_it_lacks():
    (need,) = paper.TABLETOP.requirements(Scale.PAPER)
    assert need.startswith("never:") and "LIV" in need
    assert paper.TABLETOP.requirements(Scale.SMOKE) == ()
    with pytest.raises(PrerequisiteMissing, match="ManiSkill2"):
        experiments.setting(Scale.PAPER)


def refuted(claim, metrics, contradictions):
    for bad in contradictions:
        assert set(bad) <= set(metrics), sorted(set(bad) - set(metrics))
        assert claim.judge({**metrics, **bad}) is False, bad
    return True


def test_keyframes_claim_machinery(tiny):
    m = tiny["keyframes"]
    for p in ("kisa", "framewise", "goal", "ruptures", "uvd"):
        assert {f"{p}_f1", f"{p}_mae", f"{p}_number_error"} <= set(m), p
    assert m["best_baseline_f1"] == max(m[f"{b}_f1"] for b in ("framewise", "goal", "ruptures", "uvd"))
    ok = {**m, "kisa_f1": 0.85, "best_baseline_f1": 0.55}
    assert paper.KEYFRAMES.judge(ok) is True
    assert refuted(
        paper.KEYFRAMES,
        ok,
        [
            {"kisa_f1": 0.5},  # an untrained model: flickering argmax, F1 near the frame-wise baseline's
            {"best_baseline_f1": 0.7},  # a baseline as good as KISA (or KISA a copy of one)
            {"kisa_f1": 0.68, "best_baseline_f1": 0.3},  # far above the baselines but below the floor
        ],
    )


def test_kisa_learns_beyond_the_framewise_baseline():
    # a mid-size training (64 demonstrations, 120 steps) already places fewer, closer keyframes than the
    # frame-wise baseline on the same frames (number error 2.8-3.9 vs 6.2-6.5, MAE 21.9-23.8 vs 23.8-27.5, seeds
    # 0-2); the F1 of the claim needs the full training
    t = experiments.train_variants(MID, 0, ("full",))
    m = experiments.keyframes_metrics(t, 0)
    assert m["kisa_number_error"] < m["framewise_number_error"] - 1.0
    assert m["kisa_mae"] < m["framewise_mae"]
    assert m["train_loss_last"] < t.models["full"].losses[0]


def test_ablation_claim_machinery(tiny):
    m = tiny["ablation-temporal"]
    assert set(m) >= {"full_f1", "no_temporal_f1", "no_history_f1", "no_monotonic_f1", "drop_temporal_minus_others"}
    assert m["full_f1"] == tiny["keyframes"]["kisa_f1"]  # the keyframes claim's model, not a retrained one
    assert m["drop_no_temporal"] == m["full_f1"] - m["no_temporal_f1"]
    others = max(m["drop_no_history"], m["drop_no_monotonic"])
    assert m["drop_temporal_minus_others"] == m["drop_no_temporal"] - others
    configs = {v: m.config for v, m in experiments.train_variants(TINY, 0).models.items()}
    full = configs["full"]
    assert (full.temporal, full.negatives, full.alpha) == (True, "history", 0.1)
    assert configs["no_temporal"] == full.replace(temporal=False)
    assert configs["no_history"] == full.replace(negatives="simple")
    assert configs["no_monotonic"] == full.replace(alpha=0.0)
    judge = paper.ABLATION.judge
    ok = {**m, "drop_no_temporal": 0.3, "drop_no_history": 0.05, "drop_no_monotonic": 0.02}
    assert judge({**ok, "drop_temporal_minus_others": 0.25}) is True
    assert judge({**ok, "drop_no_temporal": 0.05, "drop_temporal_minus_others": 0.25}) is False  # hardly matters
    assert judge({**ok, "drop_temporal_minus_others": 0.0}) is False  # another component matters as much
    assert judge({**ok, "drop_no_temporal": 0.0, "drop_temporal_minus_others": 0.0}) is False  # all copies


def test_unseen_compositions_finding(tiny):
    # declared not to reproduce (measured at smoke and quick by `icml24 verify`): each contradiction keeps it
    # False, and it can hold
    m = tiny["unseen-compositions"]
    assert m["seen_f1"] == tiny["keyframes"]["kisa_f1"]
    assert {"unseen_f1", "framewise_unseen_f1", "layout_b_f1", "unseen_top1"} <= set(m)
    measured = {**m, "unseen_f1": 0.786, "seen_f1": 0.830, "framewise_unseen_f1": 0.548}  # quick, seed 0
    assert paper.UNSEEN.judge(measured) is False
    assert refuted(
        paper.UNSEEN,
        {**measured, "unseen_f1": 0.85},
        [
            {"unseen_f1": 0.3},  # collapses on unseen chains
            {"framewise_unseen_f1": 1.0},  # the frame-wise baseline as good on them
        ],
    )
    assert paper.UNSEEN.judge({**m, "unseen_f1": 0.85, "seen_f1": 0.83, "framewise_unseen_f1": 0.55}) is True
