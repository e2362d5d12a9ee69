"""Exactness under adversarial magnitudes, against a from-scratch float64 oracle written here.

The oracle computes each answer with Python floats: logits as ``math.fsum`` of products, the row maximum
subtracted, ``math.exp``, and ``math.fsum`` for both sums. An answer is correct when it is within ``1e-9`` of
the oracle relative to ``sum_c p_c |V[c, j]|`` (the scale of the answer's own conditioning), plus ``1e-300``
absolute for underflow.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml24.dynamic_attention import DynamicAttention

RTOL = 1e-9


def oracle(Q, K, V, i, j):
    """``(B[i, j], sum_c p_c |V[c, j]|)`` from scratch in Python floats."""
    q = [float(x) for x in Q[i]]
    logits = [math.fsum(a * float(b) for a, b in zip(q, K[c])) for c in range(len(K))]
    top = max(logits)
    w = [math.exp(x - top) for x in logits]
    den = math.fsum(w)
    col = [float(V[c][j]) for c in range(len(V))]
    return math.fsum(a * b for a, b in zip(w, col)) / den, math.fsum(a * abs(b) for a, b in zip(w, col)) / den


def check_all(s, rtol=RTOL, rows=None):
    Q, K, V = s.Q.double().numpy(), s.K.double().numpy(), s.V.double().numpy()
    dense = s.to_dense().double().numpy()
    for i in range(s.m) if rows is None else rows:
        for j in range(s.dv):
            truth, scale = oracle(Q, K, V, i, j)
            tol = rtol * scale + 1e-300
            got = s.query(i, j)
            assert abs(got - truth) <= tol, (i, j, got, truth, scale)
            got_row = float(s.query_row(i)[j])
            assert abs(got_row - truth) <= tol, (i, j, got_row, truth, scale)
            assert abs(dense[i, j] - truth) <= tol, (i, j, dense[i, j], truth, scale)


MAGS = [1e-3, 0.3, 5.0, 30.0, 120.0, 400.0, 700.0]
op = st.one_of(
    st.tuples(st.just("k"), st.integers(0, 99), st.integers(0, 9), st.sampled_from(MAGS), st.booleans()),
    st.tuples(st.just("v"), st.integers(0, 99), st.integers(0, 9), st.sampled_from([1e-3, 1.0, 1e3]), st.booleans()),
    st.tuples(st.just("undo"), st.integers(0, 0), st.integers(0, 0), st.just(0.0), st.booleans()),
    st.tuples(st.just("vtiny"), st.integers(0, 99), st.integers(0, 9), st.just(0.0), st.booleans()),
    st.tuples(st.just("q"), st.integers(0, 99), st.integers(0, 9), st.just(0.0), st.booleans()),
    st.tuples(st.just("krow"), st.integers(0, 99), st.integers(0, 99), st.sampled_from(MAGS), st.booleans()),
    st.tuples(st.just("vrow"), st.integers(0, 99), st.integers(0, 99), st.sampled_from([1e-3, 1.0]), st.booleans()),
    st.tuples(st.just("append"), st.integers(0, 99), st.integers(0, 99), st.sampled_from(MAGS), st.booleans()),
    st.tuples(st.just("delete"), st.integers(0, 99), st.integers(0, 0), st.just(0.0), st.booleans()),
)


@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 9),
    d=st.integers(1, 4),
    dv=st.integers(1, 3),
    k=st.one_of(st.none(), st.integers(1, 5)),
    vscale=st.sampled_from([1.0, 1e-150, 1e-250, 1e150]),
    dominant=st.sampled_from([0.0, 40.0, 700.0]),
    ops=st.lists(op, min_size=1, max_size=40),
    seed=st.integers(0, 10**6),
)
def test_adversarial_magnitudes_match_the_oracle(n, d, dv, k, vscale, dominant, ops, seed):
    """Dominant keys inserted and removed (logits up to about +-700 and beyond), tiny and huge values,
    values edited to near zero, rows appended (dominant or not) and deleted, rebuild boundaries in between:
    every answer matches the oracle."""
    g = torch.Generator().manual_seed(seed)
    Q = torch.randn(n, d, generator=g, dtype=torch.float64)
    K = torch.randn(n, d, generator=g, dtype=torch.float64) * 0.5
    V = torch.randn(n, dv, generator=g, dtype=torch.float64) * vscale
    if dominant:
        K[0] = Q[0] / float(Q[0].norm()) ** 2 * dominant  # key 0 dominates row 0 at the start
    s = DynamicAttention(Q, K, V, 0.5, k=k)
    last_k = None
    for kind, a, b, mag, sign in ops:
        if kind == "q":
            i, j = a % n, b % dv
            truth, scale = oracle(s.Q.numpy(), s.K.numpy(), s.V.numpy(), i, j)
            assert abs(s.query(i, j) - truth) <= RTOL * scale + 1e-300
        elif kind == "k":
            i, j = a % s.n, b % d
            delta = mag if sign else -mag
            s.update_k(i, j, delta)
            last_k = (i, j, delta)
        elif kind == "undo" and last_k is not None:
            i, j, delta = last_k
            s.update_k(i, j, -delta)  # the dominant key removed again
            last_k = None
        elif kind == "v":
            s.update_v(a % s.n, b % dv, (mag if sign else -mag) * vscale)
        elif kind == "krow":  # a whole key row moved towards (or away from) query row b: a dominant key
            i, q = a % s.n, s.Q[b % n]
            delta = q / float(q @ q + 1e-300) * (mag if sign else -mag)
            s.update_k_row(i, delta)
            last_k = None
        elif kind == "vrow":
            i = a % s.n
            s.update_v_row(i, -s.V[i] * (1 - 1e-12) if sign else torch.full((dv,), mag * vscale, dtype=torch.float64))
        elif kind == "append":  # a new key, dominant for query row b when sign (logit +-mag), else ordinary
            q = s.Q[b % n]
            key = q / float(q @ q + 1e-300) * mag if sign else torch.randn(d, generator=g, dtype=torch.float64) * 0.5
            s.append_row(key, torch.randn(dv, generator=g, dtype=torch.float64) * vscale)
            last_k = None
        elif kind == "delete" and s.n > 1:  # the dominant key 0 among others, when it is still there
            s.delete_row(0 if sign else a % s.n)
            last_k = None
        elif kind == "vtiny":
            i, j = a % s.n, b % dv
            s.update_v(i, j, -float(s.V[i, j]) * (1 - 1e-12))  # the value cancels to ~1e-12 of itself
    check_all(s)


@pytest.mark.parametrize("logit", [20.0, 30.0, 40.0, 60.0, 300.0, 700.0, 5000.0])
def test_a_dominant_key_edited_down_keeps_every_answer_exact(logit):
    """The defect: built while one key dominates a row, then that key edited down. No refresh() called."""
    g = torch.Generator().manual_seed(0)
    Q = torch.randn(16, 3, generator=g, dtype=torch.float64)
    K = torch.randn(16, 3, generator=g, dtype=torch.float64) * 0.3
    V = torch.randn(16, 2, generator=g, dtype=torch.float64)
    Q[:, 0] = 1.0
    K[3, 0] = logit
    s = DynamicAttention(Q, K, V, 0.5)
    s.update_k(3, 0, -logit)
    check_all(s)  # pending: answered through the fallback where the corrections cancel
    assert s.counters.fallbacks > 0
    while s.pending:
        s.update_v(5, 1, 0.0)  # to the rebuild
    check_all(s)
    assert s.counters.repairs > 0
    fallbacks = s.counters.fallbacks
    check_all(s)  # repaired: the snapshot answers on its own again
    assert s.counters.fallbacks == fallbacks


def test_ordinary_workloads_need_no_repairs():
    """The guard does not fire on O(1) logits: its cost appears only where precision is really lost."""
    g = torch.Generator().manual_seed(1)
    Q, K, V = (torch.randn(64, 8, generator=g, dtype=torch.float64) for _ in range(3))
    s = DynamicAttention(Q / 3, K / 3, V, 0.5)
    rng = np.random.default_rng(0)
    for t in range(2000):
        if t % 3 == 2:
            s.query(int(rng.integers(64)), int(rng.integers(8)))
        else:
            (s.update_k if t % 2 else s.update_v)(
                int(rng.integers(64)), int(rng.integers(8)), float(rng.normal(0, 0.1))
            )
    assert s.counters.rebuilds > 100
    assert s.counters.repairs == 0 and s.counters.fallbacks == 0
    check_all(s, rows=range(0, 64, 7))


def test_float32_bound():
    """float32: answers within 2e-3 relative (rtol 1e-4 per sum, plus the logits' own rounding)."""
    g = torch.Generator().manual_seed(2)
    Q = torch.randn(12, 3, generator=g)
    K = torch.randn(12, 3, generator=g) * 0.5
    V = torch.randn(12, 2, generator=g)
    Q[:, 0] = 1.0
    K[2, 0] = 60.0
    s = DynamicAttention(Q, K, V, 0.5)
    rng = np.random.default_rng(3)
    for t in range(60):
        (s.update_k if t % 2 else s.update_v)(int(rng.integers(12)), int(rng.integers(2)), float(rng.normal(0, 2)))
        if t == 30:
            s.update_k(2, 0, -60.0)
        if t == 40:
            s.append_row([50.0, 0.0, 0.0], [1.0, -1.0])  # a dominant key appended, then deleted
        if t == 45:
            s.delete_row(s.n - 1)
    check_all(s, rtol=2e-3)
