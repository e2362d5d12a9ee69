"""The paper's claims at SMOKE scale (icml24.testing.check_claim), and their holds() on contradictions.

Findings (declared ``expected=False`` in group_dro/paper.py): on the synthetic logistic problem the one-level
variance-reduced mirror prox (Alacaoglu-Malitsky) reaches a given duality gap with as few or fewer IFO
than ALEG when both steps are tuned on the same grid, so ``beats-every-baseline`` and ``sqrt-m-advantage``
do not hold at smoke (nor at quick) scale; ``alem-beats-smd-mero`` holds. At the analysis' own step sizes
(no tuning) the sqrt(m) gain does show where the analysis' constants predict it (``sqrt-m-at-analysed-steps``).
"""

import math
import subprocess
import sys

import pytest

from icml24 import registry
from icml24.claims import Method
from icml24.group_dro.paper import CLAIMS, METHOD
from icml24.testing import check_claim

BY_NAME = {c.name: c for c in CLAIMS}


def test_method_is_registered():
    assert isinstance(METHOD, Method) and METHOD.slug == "group_dro" and METHOD.arxiv == "2403.03562"
    assert registry.get("group_dro") is METHOD
    assert [c.name for c in METHOD.claims] == [
        "beats-every-baseline",
        "sqrt-m-advantage",
        "sqrt-m-at-analysed-steps",
        "alem-beats-smd-mero",
    ]


def test_method_is_described_without_torch():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('group_dro'); "
        "print(len(m.claims), sum(not c.expected for c in m.claims), 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["4", "2", "False"]


def test_findings_are_declared_with_their_numbers():
    for name, numbers in (("beats-every-baseline", ("6.784e5", "4.704e5")), ("sqrt-m-advantage", ("-0.125",))):
        claim = BY_NAME[name]
        assert claim.expected is False
        assert all(x in claim.finding for x in numbers) and "exactly m times" in claim.finding
    assert BY_NAME["sqrt-m-at-analysed-steps"].expected and BY_NAME["alem-beats-smd-mero"].expected
    assert all(0 < len(c.paper) <= 90 for c in CLAIMS)


def test_claims_and_experiments_compare_the_same_baselines():
    from icml24.group_dro import experiments, paper

    assert set(paper.BASELINES) == set(experiments.BASELINES) == set(experiments.GDRO_METHODS) - {"aleg"}


def test_beats_every_baseline_claim():
    claim = BY_NAME["beats-every-baseline"]
    m = check_claim(
        claim,
        [
            {"ifo_aleg": math.inf},
            {"ifo_one_level_vr": 1.0},
            {"ifo_smd": 1.0},
            {"ifo_mirror_prox": 1.0},
            {"ifo_online_group_dro": 1.0},
        ],
        expect=False,
    )
    # the finding: the one-level VR method is the one ALEG does not beat; the non-VR methods it does
    assert m["ifo_aleg"] < min(m["ifo_smd"], m["ifo_mirror_prox"])
    assert m["ifo_one_level_vr"] <= m["ifo_aleg"]
    ok = {**m, "ifo_aleg": 1.0, "ifo_best_baseline": 2.0}  # the holds() logic itself accepts a win
    assert claim.judge(ok) is True


@pytest.mark.slow
def test_sqrt_m_claim():
    claim = BY_NAME["sqrt-m-advantage"]
    m = check_claim(
        claim, [{"slope": 0.0}, {"slope": 1.0}, {"slope": math.nan}, {"ratio_largest_m": 0.5}], expect=False
    )
    assert claim.judge({**m, "slope": 0.5, "ratio_largest_m": 2.0}) is True
    assert 0.0 <= m["theory_constants_slope"] < 0.25  # this problem's own constants predict little gain
    # the explanation reported beside it: in the entropy's local norm the one-level estimator's larger moments
    # predict less gain than in the paper's l_inf norm
    assert m["local_norm_moments_slope"] < m["inf_norm_moments_slope"]


def test_sqrt_m_at_analysed_steps_claim():
    """At the analysis' own steps, on W = {||w|| <= 1}, the sqrt(m) gain shows (smoke: m = 2, 4, 8)."""
    claim = BY_NAME["sqrt-m-at-analysed-steps"]
    m = check_claim(claim, [{"slope": 0.0}, {"slope": 1.0}, {"slope": math.nan}, {"ratio_largest_m": 0.9}])
    assert m["gamma"] < 1.0 and m["radius"] == 1.0
    assert m["theory_constants_slope"] > 0.3  # chosen where the analysis' constants predict the gain


def test_alem_claim_holds():
    check_claim(
        BY_NAME["alem-beats-smd-mero"], [{"excess_alem": 1.0, "excess_smd_mero": 0.5}, {"excess_alem": math.nan}]
    )
