"""The dense reference: softmax attention computed from scratch, in row blocks."""

from __future__ import annotations

import torch

from ..validation import check_int
from .checks import check_qkv

__all__ = ["attention", "blocked_attention"]


def attention(Q, K, V, *, block_rows: int | None = None) -> torch.Tensor:
    """Exact softmax attention ``D^{-1} exp(Q K^T) V`` (Definition 1.2 of the paper: no 1/sqrt(d), no mask).

    Parameters
    ----------
    Q, K, V : matrices
        ``(m, d)``, ``(n, d)`` and ``(n, d_v)`` (tensors, numpy arrays or lists; see :func:`check_qkv`).
    block_rows : int, optional
        Rows per block (default: about 4 million entries of ``Q K^T`` per block).

    Returns
    -------
    torch.Tensor
        ``(m, d_v)``, in the dtype of ``Q``.
    """
    Q, K, V = check_qkv(Q, K, V)
    block_rows = check_int(block_rows, "block_rows", min_val=1, allow_none=True)
    return blocked_attention(Q, K, V, block_rows)


def blocked_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, block_rows: int | None = None) -> torch.Tensor:
    """:func:`attention` on tensors already checked (no validation, no copy): the reference every maintainer's
    ``to_dense`` and the experiments compare against.

    Computed in row blocks of ``softmax(Q K^T) V``, so the ``m x n`` matrix is never held at once.

    Parameters
    ----------
    Q, K, V : torch.Tensor
        ``(m, d)``, ``(n, d)``, ``(n, d_v)`` of one float dtype.
    block_rows : int, optional

    Returns
    -------
    torch.Tensor
        ``(m, d_v)``.
    """
    m, n = Q.shape[0], K.shape[0]
    b = block_rows or max(1, min(m, (1 << 22) // max(n, 1)))
    out = torch.empty(m, V.shape[1], dtype=Q.dtype)
    for lo in range(0, m, b):
        logits = Q[lo : lo + b] @ K.T
        out[lo : lo + b] = torch.softmax(logits, dim=1) @ V
    return out
