"""Bad input to every public callable of dynamic_attention: a one-line InputError naming the argument, and the
user's tensors and the library's structures exactly as they were."""

import math

import numpy as np
import pytest
import torch

import icml24.dynamic_attention
from icml24.dynamic_attention import (
    AttentionMaintainer,
    DenseLazyAttention,
    DynamicAttention,
    EagerAttention,
    FullRecompute,
    MultiHeadDynamicAttention,
    NaiveAttention,
    attention,
    rebuild_period,
)
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN = float("nan")
G = torch.Generator().manual_seed(0)
Q = torch.randn(6, 3, generator=G, dtype=torch.float64)
K = torch.randn(6, 3, generator=G, dtype=torch.float64)
V = torch.randn(6, 2, generator=G, dtype=torch.float64)
Q_NAN = Q.clone()
Q_NAN[1, 2] = NAN
K_HUGE = K.clone()
K_HUGE[0, 0] = 1.5e308  # finite, but its logits overflow
V_HUGE = V.clone()
V_HUGE[2, 1] = 1e307  # finite, but sums of weighted values overflow
USER = (Q, K, V)


def _structures():
    """One instance of each maintainer, with some pending updates, and the float32 structure."""
    out = {}
    for name, cls in [
        ("DynamicAttention", DynamicAttention),
        ("NaiveAttention", NaiveAttention),
        ("EagerAttention", EagerAttention),
        ("DenseLazyAttention", DenseLazyAttention),
        ("FullRecompute", FullRecompute),
    ]:
        m = cls(Q, K, V)
        m.update_k(1, 0, 0.1)
        m.update_v(2, 1, 0.1)
        out[name] = m
    return out


S = _structures()
S32 = DynamicAttention(Q.float(), K.float(), V.float())
FULL = {cls.__name__: cls(Q, K, V, capacity=6) for cls in (DynamicAttention, NaiveAttention, EagerAttention)}
ONE = {cls.__name__: cls(Q, K[:1], V[:1]) for cls in (DynamicAttention, NaiveAttention, EagerAttention)}


def _constructor(name, cls, **extra):
    def make(q=Q, k=K, v=V, **kw):
        return lambda: cls(q, k, v, **{**extra, **kw})

    return [
        bad(name, "Q", make(q=Q[0]), *USER, kind="shape"),
        bad(name, "Q", make(q=Q_NAN), *USER, kind="nan"),
        bad(name, "Q", make(q=None), *USER, kind="none"),
        bad(name, "Q", make(q=torch.empty(0, 3)), *USER, kind="empty"),
        bad(name, "K", make(k=K[:, :2]), *USER, kind="shape"),
        bad(name, "V", make(v=V[:4]), *USER, kind="shape"),
        bad(name, "K", make(k=K_HUGE), *USER, kind="overflow"),
        bad(name, "V", make(v=V_HUGE), *USER, kind="overflow"),
        bad(name, "K", make(k=K.double().numpy().astype(np.float64) * 1e300, dtype=torch.float32), *USER, kind="range"),
        bad(name, "dtype", make(dtype=torch.float16), *USER, kind="dtype"),
        bad(name, "dtype", make(dtype="float64"), *USER, kind="type"),
        bad(name, "V", make(v="values"), *USER, kind="type"),
        bad(name, "capacity", make(capacity=3), *USER, kind="range"),
        bad(name, "capacity", make(capacity=2.5), *USER, kind="type"),
    ]


def _methods(name, m):
    return [
        bad(f"{name}.update_k", "i", lambda: m.update_k(6, 0, 0.1), m, kind="range"),
        bad(f"{name}.update_k", "j", lambda: m.update_k(0, -1, 0.1), m, kind="range"),
        bad(f"{name}.update_k", "delta", lambda: m.update_k(0, 0, NAN), m, kind="nan"),
        bad(f"{name}.update_k", "delta", lambda: m.update_k(0, 0, 1e308), m, kind="overflow"),
        bad(f"{name}.update_k", "delta", lambda: m.update_k(0, 0, "0.1"), m, kind="type"),
        bad(f"{name}.update_k", "i", lambda: m.update_k(None, 0, 0.1), m, kind="none"),
        bad(f"{name}.update_v", "delta", lambda: m.update_v(0, 0, math.inf), m, kind="inf"),
        bad(f"{name}.update_v", "delta", lambda: m.update_v(0, 0, 1e306), m, kind="overflow"),
        bad(f"{name}.update_v", "j", lambda: m.update_v(0, 2, 0.1), m, kind="range"),
        bad(f"{name}.update_v", "i", lambda: m.update_v(1.5, 0, 0.1), m, kind="type"),
        bad(f"{name}.query", "i", lambda: m.query(6, 0), m, kind="range"),
        bad(f"{name}.query", "j", lambda: m.query(0, 2), m, kind="range"),
        bad(f"{name}.query", "i", lambda: m.query("0", 0), m, kind="type"),
        bad(f"{name}.query_row", "i", lambda: m.query_row(-1), m, kind="range"),
        bad(f"{name}.query_row", "i", lambda: m.query_row(None), m, kind="none"),
        bad(f"{name}.query_row", "i", lambda: m.query_row(torch.tensor([0, 1])), m, kind="shape"),
        bad(f"{name}.update_k_row", "delta", lambda: m.update_k_row(0, [0.1, 0.2]), m, kind="shape"),
        bad(f"{name}.update_k_row", "delta", lambda: m.update_k_row(0, [NAN, 0.0, 0.0]), m, kind="nan"),
        bad(f"{name}.update_k_row", "delta", lambda: m.update_k_row(0, None), m, kind="none"),
        bad(f"{name}.update_k_row", "delta", lambda: m.update_k_row(0, [1e308, 0.0, 0.0]), m, kind="overflow"),
        bad(f"{name}.update_k_row", "delta", lambda: m.update_k_row(0, "abc"), m, kind="type"),
        bad(f"{name}.update_k_row", "i", lambda: m.update_k_row(6, [0.0, 0.0, 0.0]), m, kind="range"),
        bad(f"{name}.update_v_row", "delta", lambda: m.update_v_row(0, np.zeros(3)), m, kind="shape"),
        bad(f"{name}.update_v_row", "delta", lambda: m.update_v_row(0, [math.inf, 0.0]), m, kind="inf"),
        bad(f"{name}.update_v_row", "delta", lambda: m.update_v_row(0, torch.zeros(0)), m, kind="empty"),
        bad(f"{name}.update_v_row", "delta", lambda: m.update_v_row(0, [1e306, 0.0]), m, kind="overflow"),
        bad(f"{name}.update_v_row", "i", lambda: m.update_v_row(-1, [0.0, 0.0]), m, kind="range"),
        bad(f"{name}.append_row", "k_row", lambda: m.append_row([0.1, 0.2], [0.0, 0.0]), m, kind="shape"),
        bad(f"{name}.append_row", "v_row", lambda: m.append_row([0.1, 0.2, 0.3], [0.0] * 3), m, kind="shape"),
        bad(f"{name}.append_row", "k_row", lambda: m.append_row([NAN, 0.0, 0.0], [0.0, 0.0]), m, kind="nan"),
        bad(f"{name}.append_row", "v_row", lambda: m.append_row([0.0] * 3, [0.0, math.inf]), m, kind="inf"),
        bad(f"{name}.append_row", "k_row", lambda: m.append_row(None, [0.0, 0.0]), m, kind="none"),
        bad(f"{name}.append_row", "v_row", lambda: m.append_row([0.0] * 3, "ab"), m, kind="type"),
        bad(f"{name}.append_row", "k_row", lambda: m.append_row([1e308, 0.0, 0.0], [0.0, 0.0]), m, kind="overflow"),
        bad(f"{name}.append_row", "v_row", lambda: m.append_row([0.0] * 3, torch.zeros(0)), m, kind="empty"),
        bad(f"{name}.delete_row", "i", lambda: m.delete_row(6), m, kind="missing"),
        bad(f"{name}.delete_row", "i", lambda: m.delete_row(-1), m, kind="range"),
        bad(f"{name}.delete_row", "i", lambda: m.delete_row(None), m, kind="none"),
        bad(f"{name}.delete_row", "i", lambda: m.delete_row(1.5), m, kind="type"),
        bad(f"{name}.delete_row", "i", lambda: m.delete_row(torch.tensor([0, 1])), m, kind="shape"),
    ]


def _resizing(name):
    full, one = FULL[name], ONE[name]
    return [
        bad(f"{name}.append_row", "k_row", lambda: full.append_row([0.0] * 3, [0.0, 0.0]), full, kind="full"),
        bad(f"{name}.delete_row", "i", lambda: one.delete_row(0), one, kind="empty"),
    ]


Q3, K3, V3 = torch.stack([Q, Q * 0.5]), torch.stack([K, -K]), torch.stack([V, V * 2])
USER3 = (Q3, K3, V3)
MH = MultiHeadDynamicAttention(Q3, K3, V3)
MH.update_k_row(1, torch.full((2, 3), 0.1, dtype=torch.float64))
MH_FULL = MultiHeadDynamicAttention(Q3, K3, V3, capacity=6)
MH_ONE = MultiHeadDynamicAttention(Q3, K3[:, :1], V3[:, :1])
Z = torch.zeros(2, 3, dtype=torch.float64)
ZV = torch.zeros(2, 2, dtype=torch.float64)
K3_NAN = K3.clone()
K3_NAN[1, 0, 0] = NAN


def _multihead():
    name = "MultiHeadDynamicAttention"
    return [
        bad(name, "Q", lambda: MultiHeadDynamicAttention(Q, K3, V3), *USER3, kind="shape"),
        bad(name, "K", lambda: MultiHeadDynamicAttention(Q3, [K, K[:5]], V3), *USER3, kind="heads-disagree"),
        bad(name, "V", lambda: MultiHeadDynamicAttention(Q3, K3, [V, V[:, :1]]), *USER3, kind="heads-disagree"),
        bad(name, "K", lambda: MultiHeadDynamicAttention(Q3, K3[:1], V3), *USER3, kind="head-count"),
        bad(name, "K", lambda: MultiHeadDynamicAttention(Q3, K3[:, :, :2], V3), *USER3, kind="shape"),
        bad(name, "K", lambda: MultiHeadDynamicAttention(Q3, K3_NAN, V3), *USER3, kind="nan"),
        bad(name, "V", lambda: MultiHeadDynamicAttention(Q3, K3, None), *USER3, kind="none"),
        bad(name, "Q", lambda: MultiHeadDynamicAttention(Q3.long(), K3, V3), *USER3, kind="dtype"),
        bad(name, "Q", lambda: MultiHeadDynamicAttention(torch.empty(0, 6, 3), K3, V3), *USER3, kind="empty"),
        bad(name, "tau", lambda: MultiHeadDynamicAttention(Q3, K3, V3, 2.0), *USER3, kind="range"),
        bad(name, "capacity", lambda: MultiHeadDynamicAttention(Q3, K3, V3, capacity=2), *USER3, kind="range"),
        bad(f"{name}.update_k_row", "delta", lambda: MH.update_k_row(0, Z[:1]), MH, kind="heads-disagree"),
        bad(f"{name}.update_k_row", "delta", lambda: MH.update_k_row(0, Z[:, :2]), MH, kind="shape"),
        bad(f"{name}.update_k_row", "delta", lambda: MH.update_k_row(0, Z + NAN), MH, kind="nan"),
        bad(f"{name}.update_k_row", "delta", lambda: MH.update_k_row(0, None), MH, kind="none"),
        bad(f"{name}.update_k_row", "i", lambda: MH.update_k_row(6, Z), MH, kind="range"),
        bad(f"{name}.update_v_row", "delta", lambda: MH.update_v_row(0, ZV[:, :1]), MH, kind="shape"),
        bad(
            f"{name}.update_v_row",
            "delta",
            lambda: MH.update_v_row(0, torch.stack([ZV[0], ZV[1] + 1e306])),
            MH,
            kind="overflow",
        ),
        bad(f"{name}.update_v_row", "delta", lambda: MH.update_v_row(0, "ab"), MH, kind="type"),
        bad(f"{name}.update_v_row", "i", lambda: MH.update_v_row(-1, ZV), MH, kind="range"),
        bad(f"{name}.update_v_row", "delta", lambda: MH.update_v_row(0, ZV + math.inf), MH, kind="inf"),
        bad(f"{name}.append_row", "k_row", lambda: MH.append_row(Z[:, :2], ZV), MH, kind="shape"),
        bad(f"{name}.append_row", "v_row", lambda: MH.append_row(Z, ZV[:1]), MH, kind="heads-disagree"),
        bad(f"{name}.append_row", "k_row", lambda: MH.append_row(torch.stack([Z[0], Z[1] + NAN]), ZV), MH, kind="nan"),
        bad(f"{name}.append_row", "v_row", lambda: MH.append_row(Z, None), MH, kind="none"),
        bad(f"{name}.append_row", "k_row", lambda: MH_FULL.append_row(Z, ZV), MH_FULL, kind="full"),
        bad(f"{name}.delete_row", "i", lambda: MH.delete_row(6), MH, kind="missing"),
        bad(f"{name}.delete_row", "i", lambda: MH.delete_row(None), MH, kind="none"),
        bad(f"{name}.delete_row", "i", lambda: MH.delete_row(0.5), MH, kind="type"),
        bad(f"{name}.delete_row", "i", lambda: MH_ONE.delete_row(0), MH_ONE, kind="empty"),
        bad(f"{name}.delete_row", "i", lambda: MH.delete_row(-2), MH, kind="range"),
        bad(f"{name}.query_row", "i", lambda: MH.query_row(6), MH, kind="range"),
        bad(f"{name}.query_row", "i", lambda: MH.query_row(None), MH, kind="none"),
        bad(f"{name}.query_row", "i", lambda: MH.query_row("1"), MH, kind="type"),
        bad(f"{name}.query_row", "i", lambda: MH.query_row(1.0), MH, kind="type"),
        bad(f"{name}.query_row", "i", lambda: MH.query_row(torch.tensor([0, 1])), MH, kind="shape"),
    ]


CASES = [
    *_multihead(),
    *_constructor("DynamicAttention", DynamicAttention),
    bad("DynamicAttention", "tau", lambda: DynamicAttention(Q, K, V, 1.5), *USER, kind="range"),
    bad("DynamicAttention", "tau", lambda: DynamicAttention(Q, K, V, NAN), *USER, kind="nan"),
    bad("DynamicAttention", "tau", lambda: DynamicAttention(Q, K, V, None), *USER, kind="none"),
    bad("DynamicAttention", "k", lambda: DynamicAttention(Q, K, V, k=0), *USER, kind="range"),
    bad("DynamicAttention", "k", lambda: DynamicAttention(Q, K, V, k=2.5), *USER, kind="type"),
    bad("DynamicAttention", "refresh_every", lambda: DynamicAttention(Q, K, V, refresh_every=-1), *USER, kind="range"),
    bad("DynamicAttention", "rtol", lambda: DynamicAttention(Q, K, V, rtol=-1e-9), *USER, kind="range"),
    bad("DynamicAttention", "rtol", lambda: DynamicAttention(Q, K, V, rtol=NAN), *USER, kind="nan"),
    bad(
        "DynamicAttention",
        "rtol",
        lambda: DynamicAttention(Q, K, V, rtol=1e-6, dtype=torch.float32),
        *USER,
        kind="range",
    ),
    *_methods("DynamicAttention", S["DynamicAttention"]),
    *_resizing("DynamicAttention"),
    *_resizing("NaiveAttention"),
    *_resizing("EagerAttention"),
    bad("DynamicAttention.update_k", "delta", lambda: S32.update_k(0, 0, 1e300), S32, kind="overflow"),
    bad("DynamicAttention.update_k", "delta", lambda: S32.update_k(0, 0, 1e38), S32, kind="overflow"),
    bad("DynamicAttention.update_k", "delta", lambda: S32.update_k(0, 0, 3e38), S32, kind="overflow"),
    bad("DynamicAttention.update_v", "delta", lambda: S32.update_v(0, 0, 1e38), S32, kind="overflow"),
    bad("DynamicAttention.update_k_row", "delta", lambda: S32.update_k_row(0, [1e38, 0, 0]), S32, kind="overflow"),
    bad("DynamicAttention.update_v_row", "delta", lambda: S32.update_v_row(0, [0, 3e38]), S32, kind="overflow"),
    *_constructor("NaiveAttention", NaiveAttention),
    *_methods("NaiveAttention", S["NaiveAttention"]),
    *_constructor("EagerAttention", EagerAttention),
    *_methods("EagerAttention", S["EagerAttention"]),
    *_constructor("FullRecompute", FullRecompute),
    *_methods("FullRecompute", S["FullRecompute"]),
    *_constructor("DenseLazyAttention", DenseLazyAttention),
    bad("DenseLazyAttention", "tau", lambda: DenseLazyAttention(Q, K, V, 0.0), *USER, kind="range"),
    bad("DenseLazyAttention", "k", lambda: DenseLazyAttention(Q, K, V, k=-3), *USER, kind="range"),
    *_methods("DenseLazyAttention", S["DenseLazyAttention"]),
    *_constructor("AttentionMaintainer", AttentionMaintainer),
    bad("attention", "block_rows", lambda: attention(Q, K, V, block_rows=-1), *USER, kind="range"),
    bad("attention", "block_rows", lambda: attention(Q, K, V, block_rows=0), *USER, kind="range"),
    bad("attention", "block_rows", lambda: attention(Q, K, V, block_rows=2.5), *USER, kind="type"),
    bad("attention", "block_rows", lambda: attention(Q, K, V, block_rows="4"), *USER, kind="type"),
    bad("attention", "Q", lambda: attention(Q_NAN, K, V), *USER, kind="nan"),
    bad("attention", "K", lambda: attention(Q, K_HUGE, V), *USER, kind="overflow"),
    bad("attention", "V", lambda: attention(Q, K, V_HUGE), *USER, kind="overflow"),
    bad("attention", "K", lambda: attention(Q, K.T, V), *USER, kind="shape"),
    bad("attention", "V", lambda: attention(Q, K, None), *USER, kind="none"),
    bad("attention", "Q", lambda: attention(torch.empty(2, 0), K, V), *USER, kind="empty"),
    bad("rebuild_period", "n", lambda: rebuild_period(0, 0.5), kind="range"),
    bad("rebuild_period", "n", lambda: rebuild_period(-4, 0.5), kind="range"),
    bad("rebuild_period", "n", lambda: rebuild_period(2.5, 0.5), kind="type"),
    bad("rebuild_period", "n", lambda: rebuild_period(None, 0.5), kind="none"),
    bad("rebuild_period", "tau", lambda: rebuild_period(16, 0.0), kind="range"),
    bad("rebuild_period", "tau", lambda: rebuild_period(16, NAN), kind="nan"),
    bad("rebuild_period", "tau", lambda: rebuild_period(16, "0.5"), kind="type"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_is_refused(case):
    assert_refuses(case)


def test_every_public_callable_has_bad_input_cases():
    exempt = {"WorkCounters": "a plain record of counts, filled by the maintainers themselves"}
    assert coverage_gaps(icml24.dynamic_attention, CASES, exempt=exempt) == {}


def test_structures_still_answer_after_refusals():
    for m in S.values():
        truth = attention(m.Q, m.K, m.V)
        assert abs(m.query(0, 1) - float(truth[0, 1])) <= 1e-12


ISSUE47 = [
    *(
        bad(cls.__name__, "capacity", lambda c=cls: c(Q, K, V, capacity=2**70), *USER, kind="overflow")
        for cls in (DynamicAttention, NaiveAttention, EagerAttention, DenseLazyAttention, FullRecompute)
    ),
    bad("DenseLazyAttention", "k", lambda: DenseLazyAttention(Q, K, V, k=2**70), *USER, kind="overflow"),
    bad("DynamicAttention", "Q", lambda: DynamicAttention(Q.to(torch.complex128), K, V), *USER, kind="complex"),
    bad("NaiveAttention", "V", lambda: NaiveAttention(Q, K, V.to(torch.complex128)), *USER, kind="complex"),
    bad(
        "MultiHeadDynamicAttention",
        "capacity",
        lambda: MultiHeadDynamicAttention(Q[None], K[None], V[None], capacity=2**70),
        *USER,
        kind="overflow",
    ),
]


@pytest.mark.parametrize("case", ISSUE47, ids=lambda c: c.id)
def test_refuses_issue47(case):
    assert_refuses(case)
