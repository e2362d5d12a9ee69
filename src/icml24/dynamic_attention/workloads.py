"""What the experiments and the benchmark run: seeded inputs, operation streams and the clock that times them.

Times are the calling thread's CPU time (``time.thread_time``; every measurement runs on one thread) around single
calls, so that a shared machine's preemptions are not counted as the method's cost.
"""

from __future__ import annotations

import math
import time
from typing import Sequence

import numpy as np
import torch

from ..threads import single_thread
from .baselines import EagerAttention, NaiveAttention
from .maintainer import AttentionMaintainer
from .structure import DynamicAttention

__all__ = ["clock", "random_qkv", "mixed_workload", "split_workload", "revised_memory"]


def clock() -> float:
    """The calling thread's CPU time in seconds (``time.thread_time``): the clock of every measurement here.

    Returns
    -------
    float
    """
    return time.thread_time()


def random_qkv(n: int, d: int, seed: int, dtype=torch.float64, dv: int | None = None, scale: float | None = None):
    """Gaussian ``Q``, ``K``, ``V``, with ``Q`` and ``K`` scaled so that the logits ``Q K^T`` are O(1).

    Parameters
    ----------
    n, d : int
        Rows and width (``Q`` and ``K`` are ``n x d``).
    seed : int
    dtype : torch.dtype, default torch.float64
    dv : int, optional
        Width of ``V`` (default ``d``).
    scale : float, optional
        Standard deviation of ``Q`` and ``K``'s entries (default ``1 / sqrt(d)``).

    Returns
    -------
    (Q, K, V) : tuple of torch.Tensor
    """
    g = torch.Generator().manual_seed(seed)
    s = scale if scale is not None else 1.0 / math.sqrt(d)
    return (
        torch.randn(n, d, generator=g, dtype=dtype) * s,
        torch.randn(n, d, generator=g, dtype=dtype) * s,
        torch.randn(n, dv or d, generator=g, dtype=dtype),
    )


def mixed_workload(n: int, d: int, ops: int, query_fraction: float, seed: int) -> list[tuple[str, int, int, float]]:
    """A seeded sequence of operations with the given share of queries.

    Parameters
    ----------
    n, d : int
    ops : int
    query_fraction : float
    seed : int

    Returns
    -------
    list of (str, int, int, float)
        ``("k" | "v" | "q", i, j, delta)``.
    """
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(ops):
        r = rng.random()
        i, j = int(rng.integers(n)), int(rng.integers(d))
        if r < query_fraction:
            out.append(("q", i, j, 0.0))
        else:
            out.append(("k" if rng.random() < 0.5 else "v", i, j, float(rng.normal(0, 0.01))))
    return out


def split_workload(
    m: AttentionMaintainer, ops: Sequence[tuple[str, int, int, float]]
) -> tuple[float, int, float, int, list[float]]:
    """Run a workload, timing each operation.

    Parameters
    ----------
    m : AttentionMaintainer
    ops : sequence of (str, int, int, float)
        As :func:`mixed_workload` returns.

    Returns
    -------
    (float, int, float, int, list of float)
        Seconds in updates, updates, seconds in queries, queries, and the answers.
    """
    tu = tq = 0.0
    nu = nq = 0
    answers = []
    for op, i, j, delta in ops:
        t = clock()
        if op == "q":
            answers.append(m.query(i, j))
            tq += clock() - t
            nq += 1
            continue
        if op == "k":
            m.update_k(i, j, delta)
        else:
            m.update_v(i, j, delta)
        tu += clock() - t
        nu += 1
    return tu, nu, tq, nq, answers


def revised_memory(
    docs: int = 4096,
    users: int = 1024,
    d: int = 64,
    revisions: int = 300,
    reads: int = 4,
    tau: float = 0.5,
    seed: int = 0,
) -> dict[str, float]:
    """An example a user recognises: attention over a retrieval memory whose documents are revised.

    ``users`` fixed query vectors attend over ``docs`` documents (key and value rows). Each revision replaces
    one document's key and value rows (two row updates); after each revision ``reads`` users read their whole
    attention output (:meth:`query_row`). The same stream runs on the lazy structure, eager maintenance and
    naive recomputation (one softmax row per read); all give the same outputs.

    Parameters
    ----------
    docs, users, d : int
        Documents, fixed queries, embedding width.
    revisions : int
        Documents revised, one after the other.
    reads : int
        Users reading after each revision.
    tau : float
        The lazy structure's trade-off parameter.
    seed : int

    Returns
    -------
    dict of str to float
        ``{lazy,eager,naive}_ms`` per revision (its two row updates and its reads), the lazy structure's
        ``rebuilds``, ``repairs`` and ``fallbacks``, and ``max_answer_diff``.
    """
    g = torch.Generator().manual_seed(seed)
    Q = torch.randn(users, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    K = torch.randn(docs, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    V = torch.randn(docs, d, generator=g, dtype=torch.float64)
    rng = np.random.default_rng(seed)
    stream = [
        (
            int(rng.integers(docs)),
            rng.normal(0, 1 / math.sqrt(d), d),
            rng.normal(0, 1, d),
            [int(x) for x in rng.integers(users, size=reads)],
        )
        for _ in range(revisions)
    ]
    out: dict[str, float] = {}
    answers: dict[str, list[torch.Tensor]] = {}
    with single_thread():
        for name, make in (
            ("lazy", lambda: DynamicAttention(Q, K, V, tau)),
            ("eager", lambda: EagerAttention(Q, K, V)),
            ("naive", lambda: NaiveAttention(Q, K, V)),
        ):
            m = make()
            got = []
            t0 = clock()
            for doc, key, value, readers in stream:
                m.update_k_row(doc, key - m.K_numpy[doc])
                m.update_v_row(doc, value - m.V_numpy[doc])
                got.extend(m.query_row(u) for u in readers)
            out[f"{name}_ms"] = 1e3 * (clock() - t0) / revisions
            answers[name] = got
            if name == "lazy":
                c = m.counters
                out["rebuilds"], out["repairs"], out["fallbacks"] = (
                    float(c.rebuilds),
                    float(c.repairs),
                    float(c.fallbacks),
                )
    out["max_answer_diff"] = max(
        float((a - b).abs().max()) for peer in ("eager", "naive") for a, b in zip(answers["lazy"], answers[peer])
    )
    return out
