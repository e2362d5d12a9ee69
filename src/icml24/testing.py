"""Helpers for testing claims: every claim's test runs it at SMOKE scale and feeds ``holds`` contradictions."""

from __future__ import annotations

from typing import Mapping, Sequence

from .claims import Claim, Metrics, Scale


def check_claim(
    claim: Claim,
    contradictions: Sequence[Mapping[str, float]],
    *,
    seed: int = 0,
    scale: Scale = Scale.SMOKE,
    expect: bool = True,
) -> Metrics:
    """Run ``claim`` and assert that it holds and that each contradiction makes ``holds`` return False.

    The claim is measured once at ``scale`` with ``seed``; its verdict must equal ``expect``. Each
    contradiction is then overlaid on the measured metrics and the verdict on the result must be False.
    ``contradictions`` must not be empty: a claim whose ``holds`` cannot be made False is a defect.

    Parameters
    ----------
    claim : Claim
        The claim to run.
    contradictions : sequence of mapping of str to float
        Metric values that should each break the claim when overlaid on the measured metrics; every key
        must be one of the measured metrics.
    seed : int, default 0
        Seed passed to the claim's measurement.
    scale : Scale, default Scale.SMOKE
        Scale at which the claim is measured.
    expect : bool, default True
        The verdict the measured metrics must give (``False`` for a claim expected not to hold).

    Returns
    -------
    Metrics
        The measured metrics.

    Raises
    ------
    AssertionError
        If ``contradictions`` is empty, the verdict differs from ``expect``, a contradiction names a metric
        that was not measured, or a contradiction leaves ``holds`` True.
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
