import math

import numpy as np
import pytest
import torch

from icml24.claims import Claim, Method, Scale, validate_metrics
from icml24.errors import ClaimError, InputError
from icml24.testing import check_claim


def make(run=lambda s, seed: {"a": 1.0, "b": 0.0}, holds=lambda m: m["a"] > m["b"], key="x_y/claim"):
    return Claim(key, "a beats b.", run, holds, "a", "b")


def test_scale_parse_and_pick():
    assert Scale.parse("QUICK") is Scale.QUICK
    assert Scale.parse(Scale.PAPER) is Scale.PAPER
    assert Scale.SMOKE.pick(1, 2, 3) == 1 and Scale.PAPER.pick(1, 2, 3) == 3
    with pytest.raises(InputError, match="smoke, quick, paper"):
        Scale.parse("huge")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"key": "NoSlash"}, "malformed"),
        ({"key": "x/"}, "malformed"),
        ({"statement": "  "}, "statement"),
        ({"run": 3}, "run is not callable"),
        ({"headline": ""}, "headline"),
        ({"baseline": None}, "baseline"),
    ],
)
def test_claim_validation(kwargs, match):
    base = dict(key="m/c", statement="s.", run=lambda s, seed: {}, holds=lambda m: True, headline="a", baseline="b")
    with pytest.raises(InputError, match=match):
        Claim(**{**base, **kwargs})


def test_metrics_are_coerced_and_checked():
    c = make()
    out = validate_metrics(c, {"a": np.float32(2.5), "b": torch.tensor(1.0), "ok": True})
    assert out == {"a": 2.5, "b": 1.0, "ok": 1.0} and all(type(v) is float for v in out.values())
    with pytest.raises(ClaimError, match="baseline metric 'b' missing"):
        validate_metrics(c, {"a": 1.0})
    with pytest.raises(ClaimError, match="not a number"):
        validate_metrics(c, {"a": 1.0, "b": [1, 2]})
    with pytest.raises(ClaimError, match="not a dict"):
        validate_metrics(c, [1.0])


def test_measure_and_judge():
    c = make(run=lambda s, seed: {"a": float(seed), "b": 0.5})
    assert c.judge(c.measure("smoke", 1)) is True
    assert c.judge(c.measure(Scale.SMOKE, 0)) is False
    assert c.judge({"a": math.nan, "b": 0.0}) is False  # NaN comparisons fail
    with pytest.raises(InputError, match="seed"):
        c.measure("smoke", -1)


def test_method_validation():
    c = make(key="m/one")
    m = Method("m", "T", None, None, [c])
    assert m.claims == (c,) and m.claim("one") is c and m.claim("m/one") is c
    with pytest.raises(InputError, match="no claim"):
        m.claim("two")
    with pytest.raises(InputError, match="does not start"):
        Method("other", "T", None, None, (c,))
    with pytest.raises(InputError, match="duplicate"):
        Method("m", "T", None, None, (c, c))
    with pytest.raises(InputError, match="slug"):
        Method("Bad-Slug", "T", None, None, ())


def test_check_claim_helper_requires_contradictions_and_detects_unfalsifiable_claims():
    good = make()
    assert check_claim(good, [{"a": -1.0}]) == {"a": 1.0, "b": 0.0}
    with pytest.raises(AssertionError, match="contradicting"):
        check_claim(good, [])
    always = make(holds=lambda m: True)
    with pytest.raises(AssertionError, match="holds is True on contradicting"):
        check_claim(always, [{"a": -1.0}])
    with pytest.raises(AssertionError, match="unknown metrics"):
        check_claim(good, [{"zzz": 0.0}])


def test_toy_claims_hold_and_fail_on_contradictions(tmp_path, monkeypatch):
    import toy_method

    monkeypatch.setenv("TOY_COUNTER", str(tmp_path / "count"))
    monkeypatch.setenv("TOY_KILL", str(tmp_path / "marker"))
    (tmp_path / "marker").write_text("do not kill")
    for claim in toy_method.METHOD.claims:
        m = claim.measure(Scale.SMOKE, 0)
        flipped = {"ours": m["theirs"], "theirs": m["ours"]}
        check_claim(claim, [flipped])


def test_measure_takes_numpy_seeds_and_refuses_text_metrics():
    c = make(run=lambda s, seed: {"a": float(seed), "b": 0.5})
    assert c.measure("smoke", np.int64(2)) == {"a": 2.0, "b": 0.5}
    with pytest.raises(ClaimError, match="metric 'a' is str"):
        validate_metrics(c, {"a": "0.5", "b": 0.0})
