"""Exactness: every maintainer's answers against attention recomputed from scratch, on random mixed sequences
and under adversarial magnitudes (the experiment of the exact claim)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from .baselines import DenseLazyAttention, EagerAttention, NaiveAttention
from .maintainer import AttentionMaintainer
from .reference import blocked_attention
from .structure import DynamicAttention
from .workloads import random_qkv

__all__ = ["ExactnessResult", "exactness_sweep", "adversarial_sweep"]


@dataclass
class ExactnessResult:
    """What :func:`exactness_sweep` found.

    Parameters
    ----------
    max_err : dict of str to float
        The largest absolute error of each maintainer (``lazy``, ``eager``, ``dense_lazy``, ``naive``).
    queries, rebuilds, boundary_queries : int
        Queries asked, rebuilds of the lazy structure, queries asked right after a rebuild.
    max_pending_over_k : float
        The most pending updates seen, over ``k``.
    repairs : int
        Rows the lazy structures' precision guard recomputed.
    """

    max_err: dict[str, float]
    queries: int
    rebuilds: int
    boundary_queries: int
    max_pending_over_k: float
    repairs: int = 0


def exactness_sweep(
    configs: Sequence[tuple[int, int, float, int | None]],
    ops: int,
    seed: int,
    mix: tuple[float, float, float] = (0.4, 0.4, 0.2),
    delta_std: float = 0.1,
    dtype=torch.float64,
) -> ExactnessResult:
    """Random mixed sequences of UpdateK / UpdateV / Query on every maintainer; every answer is compared
    with softmax attention recomputed from the current K and V (the naive ground truth).

    A fifth of the updates repeat the previous entry, and after every rebuild the next query is issued at once
    (queries straddle rebuild boundaries).

    Parameters
    ----------
    configs : sequence of (n, d, tau, k)
        ``k=None``: ``ceil(n^tau)``.
    ops : int
        Operations per configuration.
    seed : int
    mix : (float, float, float), default (0.4, 0.4, 0.2)
        Shares of K updates, V updates and queries.
    delta_std : float, default 0.1
        Standard deviation of the increments.
    dtype : torch.dtype, default torch.float64

    Returns
    -------
    ExactnessResult
    """
    rng = np.random.default_rng(seed)
    errs = {"lazy": 0.0, "eager": 0.0, "dense_lazy": 0.0, "naive": 0.0}
    queries = rebuilds = boundary = repairs = 0
    worst_fill = 0.0
    for ci, (n, d, tau, k) in enumerate(configs):
        Q, K, V = random_qkv(n, d, seed * 1000 + ci, dtype=dtype, scale=1.0)
        ms: dict[str, AttentionMaintainer] = {
            "lazy": DynamicAttention(Q, K, V, tau, k=k),
            "eager": EagerAttention(Q, K, V),
            "dense_lazy": DenseLazyAttention(Q, K, V, tau, k=k),
            "naive": NaiveAttention(Q, K, V),
        }
        lazy = ms["lazy"]
        last = None
        for _ in range(ops):
            r = rng.random()
            before = lazy.counters.rebuilds
            if r < mix[0] + mix[1]:
                which = "k" if r < mix[0] else "v"
                if last is not None and last[0] == which and rng.random() < 0.2:
                    i, j = last[1], last[2]  # the same entry again
                else:
                    i, j = int(rng.integers(n)), int(rng.integers(d))
                delta = float(rng.normal(0.0, delta_std))
                for m in ms.values():
                    (m.update_k if which == "k" else m.update_v)(i, j, delta)
                last = (which, i, j)
                if lazy.counters.rebuilds == before:
                    continue
                boundary += 1  # a rebuild just happened: query right away
            i, j = int(rng.integers(n)), int(rng.integers(d))
            truth = float(blocked_attention(lazy.Q, lazy.K, lazy.V)[i, j])
            for name, m in ms.items():
                errs[name] = max(errs[name], abs(m.query(i, j) - truth))
            queries += 1
        row = blocked_attention(lazy.Q, lazy.K, lazy.V)
        for name, m in ms.items():
            errs[name] = max(errs[name], float((m.to_dense() - row).abs().max()))
        rebuilds += lazy.counters.rebuilds
        repairs += lazy.counters.repairs
        worst_fill = max(worst_fill, lazy.counters.max_pending / lazy.k)
    return ExactnessResult(errs, queries, rebuilds, boundary, worst_fill, repairs)


def adversarial_sweep(
    n: int, d: int, ops: int, seed: int, k: int | None = None, dtype=torch.float64
) -> dict[str, float]:
    """Dominant keys inserted and removed, logits up to about +-700, values near zero: the lazy structure's and
    eager maintenance's answers against attention recomputed from scratch.

    Each step either makes one key dominate one query row (a logit of 30 to 700 above the rest), removes the
    last dominant key again, edits a value down to ``1e-12`` of itself, makes a small update, or queries;
    the error of an answer is measured relative to ``softmax(Q_i K^T) |V[:, j]|``, the scale of its own
    conditioning.

    Parameters
    ----------
    n, d : int
        Rows and width of ``Q``, ``K``, ``V``.
    ops : int
        Steps.
    seed : int
    k : int, optional
        Rebuild period (default ``ceil(n^0.5)``).
    dtype : torch.dtype, default torch.float64

    Returns
    -------
    dict of str to float
        ``lazy_max_rel_err``, ``eager_max_rel_err``, ``queries``, ``dominant_edits``, and the lazy
        structure's ``repairs``, ``fallbacks`` and ``rebuilds``.
    """
    rng = np.random.default_rng(seed)
    Q, K, V = random_qkv(n, d, seed, dtype=dtype, scale=1.0)
    lazy, eager = DynamicAttention(Q, K, V, 0.5, k=k), EagerAttention(Q, K, V)
    err = {"lazy": 0.0, "eager": 0.0}
    queries = dominant = 0
    last = None
    for _ in range(ops):
        r = rng.random()
        if r < 0.15:  # make key c dominate row i: K[c] += t Q[i] / |Q[i]|^2 raises logit (i, c) by t
            i, c = int(rng.integers(n)), int(rng.integers(n))
            t = float(rng.choice([30.0, 60.0, 200.0, 700.0]))
            q = lazy.Q[i]
            step = (q / float(q @ q) * t).tolist()
            for j in range(d):
                lazy.update_k(c, j, step[j])
                eager.update_k(c, j, step[j])
            last, dominant = (c, step), dominant + 1
        elif r < 0.3 and last is not None:  # remove it again
            c, step = last
            for j in range(d):
                lazy.update_k(c, j, -step[j])
                eager.update_k(c, j, -step[j])
            last = None
        elif r < 0.4:
            i, j = int(rng.integers(n)), int(rng.integers(d))
            delta = -float(lazy.V[i, j]) * (1 - 1e-12)
            lazy.update_v(i, j, delta)
            eager.update_v(i, j, delta)
        elif r < 0.7:
            i, j, delta = int(rng.integers(n)), int(rng.integers(d)), float(rng.normal(0, 0.3))
            (lazy.update_k if r < 0.55 else lazy.update_v)(i, j, delta)
            (eager.update_k if r < 0.55 else eager.update_v)(i, j, delta)
        else:
            i = int(rng.integers(n))
            logits = lazy.K.double() @ lazy.Q[i].double()
            p = torch.softmax(logits, dim=0)
            truth, scale = p @ lazy.V.double(), p @ lazy.V.double().abs()
            for name, m in (("lazy", lazy), ("eager", eager)):
                got = torch.tensor([m.query(i, j) for j in range(d)], dtype=torch.float64)
                rel = float(((got - truth).abs() / scale.clamp(min=1e-300)).nan_to_num(1.0).max())
                err[name] = max(err[name], min(rel, 1.0))  # 1: all accuracy lost (capped)
            queries += 1
    c = lazy.counters
    return {
        "lazy_max_rel_err": err["lazy"],
        "eager_max_rel_err": err["eager"],
        "queries": float(queries),
        "dominant_edits": float(dominant),
        "repairs": float(c.repairs),
        "fallbacks": float(c.fallbacks),
        "rebuilds": float(c.rebuilds),
    }
