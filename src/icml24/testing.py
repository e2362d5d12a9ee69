"""Helpers for testing claims: every claim's test runs it at SMOKE scale and feeds ``holds`` contradictions."""

from __future__ import annotations

from typing import Mapping, Sequence

from .claims import Claim, Metrics, Scale


def check_claim(claim: Claim, contradictions: Sequence[Mapping[str, float]], *, seed: int = 0,
                scale: Scale = Scale.SMOKE, expect: bool = True) -> Metrics:
    """Run ``claim`` and assert that it holds (or not, with ``expect=False``) and that each contradiction,
    overlaid on the measured metrics, makes ``holds`` return False. Returns the measured metrics.

    ``contradictions`` must not be empty: a claim whose ``holds`` cannot be made False is a defect.
    """
    if not contradictions:
        raise AssertionError(f"{claim.key}: give at least one set of contradicting metrics")
    metrics = claim.measure(scale, seed)
    assert claim.judge(metrics) is expect, f"{claim.key} at {scale.value} scale: holds={not expect} on {metrics}"
    for bad in contradictions:
        unknown = set(bad) - set(metrics)
        assert not unknown, f"{claim.key}: contradiction names unknown metrics {sorted(unknown)}"
        assert claim.judge({**metrics, **bad}) is False, f"{claim.key}: holds is True on contradicting {bad}"
    return metrics
