import subprocess
import sys

from icml24 import registry
from icml24.kisa import paper
from icml24.testing import check_claim


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('kisa'); "
        "print(len(m.claims), 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["2", "False", "True"]


def test_method_is_registered():
    assert registry.get("kisa") is paper.METHOD
    assert [c.name for c in paper.METHOD.claims] == ["keyframes", "ablation-temporal"]


def test_keyframes_claim():
    m = check_claim(
        paper.KEYFRAMES,
        [
            {"kisa_f1": 0.5},  # an untrained model: flickering argmax, F1 near the frame-wise baseline's
            {"best_baseline_f1": 0.7},  # a baseline as good as KISA (or KISA a copy of one)
            {"kisa_f1": 0.68, "best_baseline_f1": 0.3},  # far above the baselines but below the floor
        ],
    )
    assert m["kisa_mae"] < m["framewise_mae"] and m["kisa_number_error"] < m["framewise_number_error"]


def test_ablation_claim():
    m = check_claim(
        paper.ABLATION,
        [
            {"drop_no_temporal": 0.05},  # the temporal module hardly matters
            {"drop_temporal_minus_others": 0.0},  # another component matters as much
            {"drop_no_temporal": 0.0, "drop_temporal_minus_others": 0.0},  # all variants equal (copies)
        ],
    )
    assert m["no_temporal_top1"] < m["full_top1"]
