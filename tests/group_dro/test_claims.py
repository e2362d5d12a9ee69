"""The paper's claims at SMOKE scale (icml24.testing.check_claim), and their holds() on contradictions.

Claims declared to hold are run and must hold at smoke scale. The two findings (``expected=False`` in
group_dro/paper.py: with tuned steps ALEG is not faster than the one-level variance-reduced mirror prox, and its
advantage does not grow like sqrt(m)) are measured too, but their verdict is not asserted here: a test that pins
who wins a race would break the day ALEG improves. ``icml24 verify`` checks the declared verdicts at quick
scale; here their ``holds`` is checked on contradictions and on a constructed win.
"""

import math
import subprocess
import sys

import pytest

from icml24 import registry
from icml24.claims import Method, Scale
from icml24.group_dro.paper import CLAIMS, METHOD, RACE
from icml24.testing import check_claim
from tests.conftest import needs_fashion

BY_NAME = {c.name: c for c in CLAIMS}

OURS = [
    "beats-first-order-baselines",
    "beats-every-baseline",
    "sqrt-m-advantage",
    "group-sampling-at-equal-steps",
    "alem-beats-smd-mero",
    "minority-group",
]


def test_method_is_registered():
    assert isinstance(METHOD, Method) and METHOD.slug == "group_dro" and METHOD.arxiv == "2403.03562"
    assert registry.get("group_dro") is METHOD
    names = [c.name for c in METHOD.claims]
    assert [n for n in names if n in OURS] == OURS
    assert "sqrt-m-at-analysed-steps" not in names  # it passed by construction (step-size ratio), dropped


def test_method_is_described_without_torch():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('group_dro'); "
        "print(sorted(c.name for c in m.claims if not c.expected), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['beats-every-baseline', 'sqrt-m-advantage'] False"


def test_findings_are_declared_with_their_numbers():
    for name, numbers in (("beats-every-baseline", ("6.784e5", "4.704e5")), ("sqrt-m-advantage", ("-0.222",))):
        claim = BY_NAME[name]
        assert claim.expected is False
        assert all(x in claim.finding for x in numbers) and "exactly m times" in claim.finding
    assert "one-level VR mirror prox" in BY_NAME["beats-every-baseline"].finding
    for name in ("beats-first-order-baselines", "group-sampling-at-equal-steps", "alem-beats-smd-mero"):
        assert BY_NAME[name].expected
    assert all(0 < len(c.paper) <= 90 for c in CLAIMS)


def test_claims_and_experiments_compare_the_same_baselines():
    from icml24.group_dro import experiments, paper

    assert set(paper.BASELINES) == set(experiments.BASELINES) == set(experiments.GDRO_METHODS) - {"aleg"}
    assert set(paper.FIRST_ORDER_BASELINES) == set(experiments.FIRST_ORDER_BASELINES)
    assert set(paper.FIRST_ORDER_BASELINES) == set(paper.BASELINES) - {"one_level_vr"}


@pytest.fixture(scope="module")
def race():
    """The race's metrics, measured once for the two claims that judge it."""
    return RACE.measure(Scale.SMOKE, 0)


def test_the_race_is_one_experiment_of_two_claims():
    by_experiment = {}
    for c in METHOD.claims:
        by_experiment.setdefault(c.experiment.key, []).append(c.name)
    assert by_experiment["group_dro/race"] == ["beats-first-order-baselines", "beats-every-baseline"]
    assert len(METHOD.experiments) == len(CLAIMS) - 1
    assert BY_NAME["minority-group"].experiment.needs == ("data:fashion-mnist",)
    assert all(not e.needs for e in METHOD.experiments if e.key != "group_dro/minority-group")


def test_beats_first_order_baselines_claim(race):
    """ALEG to the target gap in fewer IFO than SMD, mirror prox and online GroupDRO (all tuned)."""
    claim = BY_NAME["beats-first-order-baselines"]
    check_claim(
        claim,
        [
            {"ifo_aleg": math.inf},
            {"ifo_aleg": math.nan},
            {"ifo_smd": 1.0},
            {"ifo_mirror_prox": 1.0},
            {"ifo_online_group_dro": 1.0},
        ],
        metrics=race,
    )


def test_beats_every_baseline_finding_is_judged_on_its_metrics(race):
    """The same runs (one experiment); the one-level method decides the finding, so its verdict is not asserted."""
    claim, first = BY_NAME["beats-every-baseline"], BY_NAME["beats-first-order-baselines"]
    assert claim.run is first.run is RACE
    m = dict(race)
    win = {**m, "ifo_aleg": 1.0}
    assert claim.judge(win) is True and first.judge(win) is True
    for bad in ({"ifo_one_level_vr": 0.5}, {"ifo_smd": 0.5}, {"ifo_aleg": math.inf}):
        assert claim.judge({**win, **bad}) is False
    assert first.judge({**win, "ifo_one_level_vr": 0.5}) is True  # the first-order claim ignores the VR peer
    assert m["ratio_best_baseline"] == m["ifo_best_baseline"] / m["ifo_aleg"]


@pytest.mark.slow
def test_sqrt_m_finding_is_judged_on_its_metrics():
    claim = BY_NAME["sqrt-m-advantage"]
    m = claim.measure("smoke", 0)
    win = {**m, "slope": 0.5, "ratio_largest_m": 2.0}
    assert claim.judge(win) is True
    for bad in ({"slope": 0.0}, {"slope": 1.0}, {"slope": math.nan}, {"ratio_largest_m": 0.5}):
        assert claim.judge({**win, **bad}) is False
    assert 0.0 <= m["theory_constants_slope"] < 0.25  # this problem's own constants predict little gain
    # the explanation reported beside it: in the entropy's local norm the one-level estimator's larger moments
    # predict less gain than in the paper's l_inf norm (a property of the moments, not of a race)
    assert m["local_norm_moments_slope"] < m["inf_norm_moments_slope"]


def test_group_sampling_at_equal_steps_claim():
    """Only the estimator differs between the three runs: the claim fails if the one-level estimator converges
    too, if the exact-operator control does not, or if the one-level one fails at the control step as well."""
    claim = BY_NAME["group-sampling-at-equal-steps"]
    m = check_claim(
        claim,
        [
            {"gap_one_level": 0.0},  # as good as the group-sampled estimator: nothing shown
            {"gap_full": 1.0},  # the step is too large even without variance
            {"gap_group": 1.0},
            {"gap_one_level_small": 1.0},  # the one-level runs are broken, not noisier
            {"gap_group": math.nan},
        ],
    )
    assert m["gamma"] == 4 * m["gamma_small"]
    assert m["ifo_group"] > m["ifo_one_level"]  # equal epochs, not equal IFO: the statement says so
    assert m["w_moment_ratio"] > 1 and m["q_inf_moment_ratio"] > 1


def test_alem_claim_holds():
    check_claim(
        BY_NAME["alem-beats-smd-mero"], [{"excess_alem": 1.0, "excess_smd_mero": 0.5}, {"excess_alem": math.nan}]
    )


@needs_fashion
def test_minority_group_claim():
    m = check_claim(
        BY_NAME["minority-group"],
        [
            {"erm_worst_acc": 0.99},
            {"gdro_worst_acc": 0.0},
            {"vr_worst_acc": 0.0},
            {"erm_avg_acc": 0.5},  # an untrained baseline
            {"gdro_worst_acc": math.nan},
        ],
    )
    assert m["gdro_worst_acc"] > m["erm_worst_acc"] and m["erm_avg_acc"] >= 0.7
