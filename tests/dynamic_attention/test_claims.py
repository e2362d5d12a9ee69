import subprocess
import sys

from icml24 import registry
from icml24.dynamic_attention import paper
from icml24.testing import check_claim


def test_describe_does_not_import_torch():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('dynamic_attention'); "
        "print(len(m.claims), 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["3", "False", "True"]


def test_method_is_registered():
    m = registry.get("dynamic_attention")
    assert m is paper.METHOD and [c.name for c in m.claims] == ["exact", "cost", "tradeoff"]


def test_exact_claim():
    check_claim(
        paper.EXACT,
        [{"lazy_max_abs_err": 1e-6}, {"rebuilds": 0.0}, {"queries_after_rebuild": 0.0}, {"max_pending_over_k": 1.5}],
    )


def test_cost_claim():
    m = check_claim(
        paper.COST,
        [{"tau0.5_update_work_slope": 2.5}, {"tau0.25_query_work_slope": 2.0}, {"tau0.75_query_work_slope": 1.2}],
    )
    assert m["n_min"] < paper.TIME_MIN_N  # smoke sizes: times are reported, not judged ...
    # ... but at the judged sizes a time slope off the prediction makes the claim fail
    judged = {**m, "n_min": float(paper.TIME_MIN_N)}
    for k in [k for k in m if k.endswith("_slope") and k.startswith("tau")]:
        judged[k] = m[
            k.replace("_slope", "")
            .replace("update_work", "predicted_update")
            .replace("query_work", "predicted_query")
            .replace("update_time", "predicted_update")
            .replace("query_time", "predicted_query")
        ]
    assert paper.COST.judge(judged) is True
    judged.update(
        {
            "tau0.5_k_at_nmin": 23.0,
            "tau0.75_k_at_nmin": 108.0,
            "tau0.25_k_at_nmin": 5.0,
            "tau0.75_query_work_at_nmin": 6.5e4,
            "tau0.5_query_work_at_nmin": 1.7e4,
            "tau0.25_query_work_at_nmin": 3e3,
        }
    )  # the quick-scale sizes
    assert paper.COST.judge(judged) is True
    assert paper.COST.judge({**judged, "tau0.5_update_time_slope": 2.5}) is False  # faster than O(n^2)
    assert paper.COST.judge({**judged, "tau0.5_update_time_slope": 0.9}) is False  # no growth at all
    assert paper.COST.judge({**judged, "tau0.5_update_time_slope": 1.5}) is True  # BLAS speeds up: allowed
    assert paper.COST.judge({**judged, "tau0.75_query_time_slope": 0.5}) is False
    assert paper.COST.judge({**judged, "tau0.75_query_time_slope": 2.3}) is False
    assert paper.COST.judge({**judged, "tau0.25_query_time_slope": 0.5}) is True  # overhead-bound: reported only
    assert paper.COST.judge({**judged, "tau0.25_update_time_slope": 2.6}) is True  # memory-bound: reported only


def test_tradeoff_claim():
    check_claim(
        paper.TRADEOFF,
        [
            {"full_over_lazy": 3.0},
            {"q99_naive_over_lazy": 0.8},
            {"q10_naive_over_lazy": 1.3},
            {"max_answer_diff": 1e-3},
        ],
    )
