"""Projections onto permutations: log-domain Sinkhorn with an implicit-differentiation backward pass (training),
and the Hungarian algorithm (inference).

Deep-Align (Navon et al., ICML 2024, Sec. 5) projects each score matrix ``S_l`` onto the Birkhoff polytope with
Sinkhorn during training and onto permutation matrices with the Hungarian algorithm at inference. The official
code (``deepalign/sinkhorn.py``, after Eisenberger et al., CVPR 2022, "A unified framework for implicit Sinkhorn
differentiation") runs Sinkhorn on the cost ``-S`` with unit marginals, 20 iterations and entropy weight 1, and
differentiates the fixed point implicitly instead of unrolling the iterations. This module derives the same
backward pass from the optimality conditions (see :class:`_ImplicitSinkhorn`).
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment


def _sinkhorn_iterations(log_p: torch.Tensor, n_iter: int) -> torch.Tensor:
    """Alternate column and row normalisation in the log domain (unit marginals); rows are normalised last."""
    for _ in range(n_iter):
        log_p = log_p - torch.logsumexp(log_p, dim=-2, keepdim=True)
        log_p = log_p - torch.logsumexp(log_p, dim=-1, keepdim=True)
    return log_p


class _ImplicitSinkhorn(torch.autograd.Function):
    """``P = Sinkhorn(C)``, the entropic transport plan of cost ``C`` with unit marginals, weight ``lam``.

    Backward. At the fixed point ``P = exp((f 1^T + 1 g^T - C) / lam)`` with ``P 1 = r``, ``P^T 1 = c``.
    Perturbing ``C`` by ``dC`` with fixed marginals gives ``dP = P * (df 1^T + 1 dg^T - dC) / lam`` and
    ``K [df; dg] = [(P * dC) 1; (P * dC)^T 1]`` with ``K = [[diag(r), P], [P^T, diag(c)]]`` (singular along
    ``(1, -1)``, so the last ``dg`` is fixed to 0). For an upstream gradient ``G`` and ``H = G * P / lam``:
    ``dL/dC = -H + P * (u 1^T + 1 v^T)`` where ``[u; v] = K^{-1} [H 1; H^T 1]``. ``r`` and ``c`` are the row and
    column sums of the returned ``P`` (after a finite number of iterations they differ slightly from 1).
    """

    @staticmethod
    def forward(ctx, cost: torch.Tensor, n_iter: int, lam: float) -> torch.Tensor:
        p = torch.exp(_sinkhorn_iterations(-cost / lam, n_iter))
        ctx.save_for_backward(p)
        ctx.lam = lam
        return p

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (p,) = ctx.saved_tensors
        lam = ctx.lam
        m, n = p.shape[-2:]
        h = grad * p / lam
        r, c = p.sum(-1), p.sum(-2)
        top = torch.cat([torch.diag_embed(r), p], dim=-1)
        bottom = torch.cat([p.transpose(-2, -1), torch.diag_embed(c)], dim=-1)
        k = torch.cat([top, bottom], dim=-2)[..., :-1, :-1]
        rhs = torch.cat([h.sum(-1), h.sum(-2)[..., :-1]], dim=-1).unsqueeze(-1)
        sol = torch.linalg.solve(k, rhs).squeeze(-1)
        u = sol[..., :m]
        v = torch.cat([sol[..., m:], torch.zeros_like(sol[..., :1])], dim=-1)
        grad_cost = -h + p * (u.unsqueeze(-1) + v.unsqueeze(-2))
        return grad_cost, None, None


def sinkhorn(scores: torch.Tensor, n_iter: int = 20, tau: float = 1.0, implicit: bool = True) -> torch.Tensor:
    """Doubly stochastic projection of ``scores`` ``(..., n, n)``: Sinkhorn on the cost ``-scores``.

    Parameters
    ----------
    scores : tensor ``(..., n, n)``
        Similarity scores (larger is a better match), e.g. Deep-Align's ``S_l``.
    n_iter : int
        Sinkhorn iterations; 20 mirrors the official ``--n-sink`` default.
    tau : float
        Entropy weight; 1.0 mirrors the official value.
    implicit : bool
        Differentiate the fixed point implicitly (official); ``False`` back-propagates through the unrolled
        iterations (used in tests as a reference).

    Returns
    -------
    torch.Tensor
        ``(..., n, n)``: the entropic transport plan of cost ``-scores`` with unit marginals after ``n_iter``
        iterations (rows normalised last), an approximately doubly stochastic matrix.
    """
    if implicit:
        return _ImplicitSinkhorn.apply(-scores, int(n_iter), float(tau))
    return torch.exp(_sinkhorn_iterations(scores / tau, int(n_iter)))


def hungarian(scores: torch.Tensor) -> torch.Tensor:
    """Maximum-score assignment per matrix (the Hungarian algorithm).

    Uses scipy's ``linear_sum_assignment`` (maximise), as ``deepalign.sinkhorn.matching`` in the official code.

    Parameters
    ----------
    scores : torch.Tensor
        ``(..., n, n)`` scores (larger is a better match); detached and solved in float64 on the CPU.

    Returns
    -------
    torch.Tensor
        ``(..., n)`` int64 indices ``p`` (on the CPU) with row ``i`` matched to column ``p[i]``.
    """
    s = scores.detach().cpu().double().numpy()
    flat = s.reshape(-1, *s.shape[-2:])
    out = np.empty(flat.shape[:2], dtype=np.int64)
    for i, m in enumerate(flat):
        _, cols = linear_sum_assignment(m, maximize=True)
        out[i] = cols
    return torch.from_numpy(out.reshape(s.shape[:-1]))


__all__ = ["sinkhorn", "hungarian"]
