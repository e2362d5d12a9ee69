import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icml24.dynamic_attention import (
    DenseLazyAttention,
    DynamicAttention,
    EagerAttention,
    FullRecompute,
    NaiveAttention,
    attention,
    rebuild_period,
    structure,
)
from icml24.errors import InputError


def qkv(n, d, seed, dv=None, dtype=torch.float64, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(n, d, generator=g, dtype=dtype) * scale,
        torch.randn(n, d, generator=g, dtype=dtype) * scale,
        torch.randn(n, dv or d, generator=g, dtype=dtype),
    )


def naive(s):
    return attention(s.Q, s.K, s.V)


# ------------------------------------------------------------------------------------------ properties
op = st.tuples(
    st.sampled_from("kvq"), st.integers(0, 10**6), st.integers(0, 10**6), st.floats(-0.5, 0.5, allow_nan=False)
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 12),
    d=st.integers(1, 5),
    dv=st.integers(1, 4),
    tau=st.sampled_from([0.2, 0.5, 0.8, 1.0]),
    k=st.one_of(st.none(), st.integers(1, 4)),
    ops=st.lists(op, min_size=1, max_size=60),
    repeat=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_every_answer_equals_naive_attention(n, d, dv, tau, k, ops, repeat, seed):
    Q, K, V = qkv(n, d, seed, dv)
    s = DynamicAttention(Q, K, V, tau, k=k)
    dense = DenseLazyAttention(Q, K, V, tau, k=k)
    updates = 0
    last = None
    for kind, a, b, delta in ops:
        if kind == "q":
            i, j = a % n, b % dv
            truth = naive(s)
            assert abs(s.query(i, j) - float(truth[i, j])) <= 1e-9
            assert abs(dense.query(i, j) - float(truth[i, j])) <= 1e-9
            torch.testing.assert_close(s.query_row(i), truth[i], rtol=0, atol=1e-9)
            continue
        i, j = (a % n, b % (d if kind == "k" else dv)) if not (repeat and last and last[0] == kind) else last[1:]
        for m in (s, dense):
            (m.update_k if kind == "k" else m.update_v)(i, j, delta)
        last = (kind, i, j)
        updates += 1
        assert s.pending <= s.k and s.pending == updates % s.k
        assert s.counters.rebuilds == updates // s.k  # rebuild count = floor(updates / k)
    torch.testing.assert_close(s.to_dense(), naive(s), rtol=0, atol=1e-9)
    torch.testing.assert_close(dense.to_dense(), s.to_dense(), rtol=0, atol=1e-9)
    assert s.counters.max_pending <= s.k


@pytest.mark.parametrize("tau", [0.25, 0.5, 1.0])
def test_rebuild_folds_everything_into_the_snapshot(tau):
    Q, K, V = qkv(20, 6, 1)
    s = DynamicAttention(Q, K, V, tau)
    rng = np.random.default_rng(0)
    for t in range(5 * s.k):
        (s.update_k if t % 2 else s.update_v)(int(rng.integers(20)), int(rng.integers(6)), float(rng.normal()))
    assert s.pending == 0
    A = torch.exp(s.Q @ s.K.T - s.shift[:, None])
    torch.testing.assert_close(s.M, A @ s.V, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(s.s, A.sum(1), rtol=1e-12, atol=1e-12)


def test_rebuild_period_and_counters():
    assert rebuild_period(1, 0.5) == 1 and rebuild_period(16, 0.5) == 4 and rebuild_period(17, 0.5) == 5
    assert rebuild_period(1024, 1.0) == 1024 and rebuild_period(1000, 0.25) == 6
    Q, K, V = qkv(64, 8, 2)
    s = DynamicAttention(Q, K, V, 0.5)
    assert s.k == 8 and s.counters.init_work == 64 * 64 * (8 + 2 * 8 + 1)
    for t in range(7):
        s.update_k(t, 0, 0.1)
    s.query(3, 2)
    assert s.counters.max_query_work <= s.k * (2 * s.d + 5) + 1  # a query touches O(k d) entries
    s.update_v(1, 1, 0.1)
    assert s.counters.rebuilds == 1 and s.pending == 0


def test_query_reads_only_pending_rows():
    """A query's work depends on the pending updates, not on n."""
    works = []
    for n in (50, 400):
        Q, K, V = qkv(n, 4, 3)
        s = DynamicAttention(Q, K, V, 1.0)
        for t in range(5):
            s.update_k(t, 1, 0.2)
        s.query(0, 0)
        works.append(s.counters.max_query_work)
    assert works[0] == works[1]


def test_blocked_rebuild_is_exact(monkeypatch):
    monkeypatch.setattr(structure, "_BLOCK_ELEMENTS", 7)  # force many tiny row blocks
    Q, K, V = qkv(23, 3, 4)
    s = DynamicAttention(Q, K, V, 0.7)
    rng = np.random.default_rng(1)
    for t in range(40):
        (s.update_k if t % 3 else s.update_v)(int(rng.integers(23)), int(rng.integers(3)), float(rng.normal()))
    torch.testing.assert_close(s.to_dense(), naive(s), rtol=0, atol=1e-10)


def test_float32_and_large_logits_stay_finite():
    Q, K, V = qkv(30, 4, 5, dtype=torch.float32, scale=3.0)
    s = DynamicAttention(Q, K, V, 0.5)
    assert s.dtype == torch.float32
    s.update_k(2, 0, 40.0)  # row 2's logits jump by up to ~40 * |Q|: beyond float32's exp range
    s.update_k(2, 1, -25.0)
    truth = attention(s.Q.double(), s.K.double(), s.V.double())
    got = torch.tensor([[s.query(i, j) for j in range(4)] for i in range(30)], dtype=torch.float64)
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, truth, rtol=1e-4, atol=1e-4)
    for _ in range(s.k):
        s.update_v(0, 0, 0.1)  # forces a rebuild, which raises the shifts
    torch.testing.assert_close(
        s.to_dense().double(), attention(s.Q.double(), s.K.double(), s.V.double()), rtol=1e-4, atol=1e-4
    )


def test_refresh_and_refresh_every():
    Q, K, V = qkv(16, 4, 6)
    s = DynamicAttention(Q, K, V, 0.5, refresh_every=2)
    for t in range(3 * s.k):
        s.update_k(t % 16, t % 4, 0.3)
    assert s.counters.rebuilds == 3
    s.update_v(0, 0, 1.0)
    s.refresh()
    assert s.pending == 0
    torch.testing.assert_close(s.to_dense(), naive(s), rtol=0, atol=1e-12)


def test_inputs_are_copied_and_numpy_accepted():
    Q, K, V = qkv(5, 2, 7)
    s = DynamicAttention(Q.numpy(), K.numpy(), V.numpy(), 1.0)
    s.update_k(0, 0, 1.0)
    assert float(K[0, 0]) != float(s.K[0, 0])
    ints = DynamicAttention([[1, 2]], [[0, 1], [1, 0]], [[1], [2]], 1.0)
    assert ints.dtype == torch.float64


@pytest.mark.parametrize("cls", [DynamicAttention, DenseLazyAttention, EagerAttention, NaiveAttention, FullRecompute])
def test_baselines_agree(cls):
    Q, K, V = qkv(12, 3, 8, dv=2)
    m = cls(Q, K, V)
    rng = np.random.default_rng(2)
    for t in range(25):
        if t % 2:
            m.update_k(int(rng.integers(12)), int(rng.integers(3)), float(rng.normal()))
        else:
            m.update_v(int(rng.integers(12)), int(rng.integers(2)), float(rng.normal()))
    truth = attention(m.Q, m.K, m.V)
    torch.testing.assert_close(m.to_dense(), truth, rtol=0, atol=1e-10)
    assert abs(m.query(4, 1) - float(truth[4, 1])) < 1e-10
    torch.testing.assert_close(m.query_row(7), truth[7], rtol=0, atol=1e-10)


# ----------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda s: s.update_k(5, 0, 0.1), r"i must be in \[0, 4\], got 5"),
        (lambda s: s.update_k(0, 3, 0.1), r"j must be in \[0, 2\], got 3"),
        (lambda s: s.update_v(-1, 0, 0.1), r"i must be in \[0, 4\], got -1"),
        (lambda s: s.update_v(0, 0, float("nan")), "delta must be finite"),
        (lambda s: s.update_k(0, 0, math.inf), "delta must be finite"),
        (lambda s: s.update_k(0, 0, "1"), "delta must be a real number"),
        (lambda s: s.query(0, 2), r"j must be in \[0, 1\], got 2"),
        (lambda s: s.query(1.5, 0), "i must be an integer"),
        (lambda s: s.query_row(9), r"i must be in \[0, 4\], got 9"),
    ],
)
def test_bad_calls(call, match):
    Q, K, V = qkv(5, 3, 0, dv=2)
    s = DynamicAttention(Q, K, V, 0.5)
    with pytest.raises(InputError, match=match):
        call(s)


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2), 0.0), {}, "tau must be in"),
        ((torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2), 1.5), {}, "tau must be in"),
        ((torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2), float("nan")), {}, "tau must be"),
        ((torch.ones(3, 2), torch.ones(3, 3), torch.ones(3, 2), 0.5), {}, "share the width"),
        ((torch.ones(3, 2), torch.ones(3, 2), torch.ones(4, 2), 0.5), {}, "one row per key"),
        ((torch.ones(3), torch.ones(3, 2), torch.ones(3, 2), 0.5), {}, "Q must be a non-empty 2-D"),
        ((torch.tensor([[float("nan"), 0.0]]), torch.ones(3, 2), torch.ones(3, 2), 0.5), {}, "Q contains NaN"),
        ((torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2), 0.5), {"k": 0}, r"k must be in \[1, inf\], got 0"),
        (
            (torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2), 0.5),
            {"dtype": torch.float16},
            "dtype must be torch.float32 or torch.float64",
        ),
        ((torch.ones(3, 2), torch.ones(3, 2), torch.ones(3, 2), 0.5), {"refresh_every": 0}, "refresh_every"),
    ],
)
def test_bad_construction(args, kwargs, match):
    with pytest.raises(InputError, match=match):
        DynamicAttention(*args, **kwargs)


# ------------------------------------------------------------------------------------------- row updates
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 10),
    d=st.integers(1, 4),
    dv=st.integers(1, 3),
    k=st.one_of(st.none(), st.integers(1, 4)),
    ops=st.lists(st.tuples(st.sampled_from(["k", "v", "krow", "vrow", "q"]), st.integers(0, 99)), max_size=40),
    seed=st.integers(0, 1000),
)
def test_row_updates_are_one_pending_update_each(n, d, dv, k, ops, seed):
    Q, K, V = qkv(n, d, seed, dv)
    s = DynamicAttention(Q, K, V, 0.5, k=k)
    peers = [EagerAttention(Q, K, V), NaiveAttention(Q, K, V), DenseLazyAttention(Q, K, V, 0.5, k=k)]
    rng = np.random.default_rng(seed)
    updates = 0
    for kind, a in ops:
        i = a % n
        if kind == "q":
            truth = naive(s)[i]
            torch.testing.assert_close(s.query_row(i), truth, rtol=0, atol=1e-9)
            continue
        if kind in ("krow", "vrow"):
            delta = rng.normal(0, 0.5, d if kind == "krow" else dv)
            for m in (s, *peers):
                (m.update_k_row if kind == "krow" else m.update_v_row)(i, torch.from_numpy(delta))
        else:
            j, delta = int(rng.integers(d if kind == "k" else dv)), float(rng.normal(0, 0.5))
            for m in (s, *peers):
                (m.update_k if kind == "k" else m.update_v)(i, j, delta)
        updates += 1
        assert s.pending == updates % s.k and s.counters.rebuilds == updates // s.k
    truth = naive(s)
    torch.testing.assert_close(s.to_dense(), truth, rtol=0, atol=1e-9)
    for m in peers:
        torch.testing.assert_close(m.K, s.K, rtol=0, atol=1e-12)
        torch.testing.assert_close(m.to_dense(), truth, rtol=0, atol=1e-9)


def test_a_revised_document_is_one_update():
    """A retrieval memory: a document's key and value rows replaced, as two updates of the lazy structure."""
    Q, K, V = qkv(32, 8, 3)
    s = DynamicAttention(Q, K, V, 0.5)
    new_key, new_value = torch.randn(8, dtype=torch.float64), torch.randn(8, dtype=torch.float64)
    s.update_k_row(5, new_key - s.K[5])
    s.update_v_row(5, (new_value - s.V[5]).numpy())
    assert s.pending == 2 and s.counters.updates == 2
    torch.testing.assert_close(s.K[5], new_key)
    torch.testing.assert_close(s.to_dense(), naive(s), rtol=0, atol=1e-12)


def test_appends_and_deletes_agree_across_maintainers_and_count_as_updates():
    """Rows appended (beyond the initial buffers and the pending slots) and swap-deleted: every maintainer
    gives the same answers as attention on the current K and V; the lazy structure spends O(d + d_v) per
    append or delete outside rebuilds and rebuilds every k of them."""
    g = torch.Generator().manual_seed(5)
    Q = torch.randn(6, 3, generator=g, dtype=torch.float64)
    K = torch.randn(2, 3, generator=g, dtype=torch.float64)
    V = torch.randn(2, 2, generator=g, dtype=torch.float64)
    ms = [cls(Q, K, V) for cls in (DynamicAttention, NaiveAttention, EagerAttention, FullRecompute, DenseLazyAttention)]
    lazy = DynamicAttention(Q, K, V, k=5)
    ms.append(lazy)
    rng = np.random.default_rng(0)
    for t in range(60):
        if t % 3 == 2 and ms[0].n > 1:
            i = int(rng.integers(ms[0].n))
            for m in ms:
                m.delete_row(i)
        else:
            kr, vr = rng.normal(size=3), rng.normal(size=2)
            idx = {m.append_row(kr, vr) for m in ms}
            assert idx == {ms[0].n - 1}
        truth = attention(ms[0].Q, ms[0].K, ms[0].V)
        for m in ms:
            assert m.n == ms[0].n
            torch.testing.assert_close(m.K, ms[0].K, rtol=0, atol=0)
            torch.testing.assert_close(m.to_dense(), truth, rtol=1e-11, atol=1e-12)
    assert lazy.counters.rebuilds == 60 // 5
    assert lazy.counters.max_pending <= 5
    assert lazy.counters.update_work <= 60 * 4 * (3 + 2)


def test_fixed_capacity_allows_appends_after_deletes():
    g = torch.Generator().manual_seed(6)
    Q, K, V = (torch.randn(4, 3, generator=g, dtype=torch.float64) for _ in range(3))
    s = DynamicAttention(Q, K, V, capacity=5)
    s.append_row([0.1, 0.2, 0.3], [1.0, 2.0, 3.0])
    with pytest.raises(InputError, match="capacity=5"):
        s.append_row([0.1, 0.2, 0.3], [1.0, 2.0, 3.0])
    s.delete_row(0)
    assert s.append_row([0.0, 0.0, 1.0], [0.0, 0.0, 1.0]) == 4
    torch.testing.assert_close(s.to_dense(), attention(s.Q, s.K, s.V), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cls", [DynamicAttention, EagerAttention, NaiveAttention, DenseLazyAttention, FullRecompute])
def test_numpy_views_of_k_and_v_are_current_and_read_only(cls):
    Q, K, V = qkv(6, 3, 7, dv=2)
    m = cls(Q, K, V)
    m.update_k(1, 2, 0.5)
    m.update_v_row(0, [0.25, -0.5])
    np.testing.assert_array_equal(m.K_numpy, m.K.numpy())
    np.testing.assert_array_equal(m.V_numpy, m.V.numpy())
    with pytest.raises(ValueError, match="read-only"):
        m.K_numpy[0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        m.V_numpy[0] = 0.0
    m.append_row([0.1, 0.2, 0.3], [1.0, 2.0])
    m.delete_row(0)
    assert m.K_numpy.shape == (6, 3) and m.V_numpy.shape == (6, 2)
    np.testing.assert_array_equal(m.K_numpy, m.K.numpy())
    torch.testing.assert_close(m.to_dense(), attention(m.Q, m.K, m.V), rtol=1e-12, atol=1e-12)
