"""Batched multi-head use of the lazy structure: ``heads x n x d`` torch tensors in and out.

One :class:`~.structure.DynamicAttention` per head (the heads share nothing but the row indices), so every
bound of the single-head structure holds per head and the costs add up over heads. Inputs may live on any
device; the structures compute on the CPU, and answers come back on the device (and in the dtype) of ``Q``.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import InputError
from .checks import as_float64, check_index
from .structure import DynamicAttention


def _heads(name: str, value, count: int | None = None) -> list[torch.Tensor]:
    """A ``(heads, rows, cols)`` tensor, or a sequence of per-head 2-D tensors of one shape, as CPU head
    matrices (detached; the structures copy them again)."""
    if isinstance(value, torch.Tensor):
        if value.dim() != 3 or value.shape[0] < 1:
            raise InputError(
                f"{name} must be a (heads, rows, cols) tensor with at least one head, got shape {tuple(value.shape)}",
                "stack the heads along dimension 0",
            )
        heads = list(value.detach().cpu().unbind(0))
    elif isinstance(value, (list, tuple)) and value and all(isinstance(h, torch.Tensor) for h in value):
        heads = [h.detach().cpu() for h in value]
        shapes = {tuple(h.shape) for h in heads}
        if len(shapes) != 1:
            raise InputError(
                f"{name}: the heads disagree in shape ({sorted(shapes)})", "give every head the same (rows, cols)"
            )
    else:
        raise InputError(
            f"{name} must be a (heads, rows, cols) torch tensor or a list of per-head tensors, "
            f"got {type(value).__name__}"
        )
    if count is not None and len(heads) != count:
        raise InputError(f"{name} has {len(heads)} heads but Q has {count}", "give every argument the same heads")
    return heads


class MultiHeadDynamicAttention:
    """Exact dynamic softmax attention for several heads at once, on ``(heads, rows, cols)`` torch tensors.

    Each head ``h`` maintains ``softmax(Q[h] K[h]^T) V[h]`` with its own :class:`DynamicAttention` (same
    ``tau``, ``k``, ``rtol`` and ``capacity``); an update or a query of row ``i`` acts on row ``i`` of every head,
    so its cost is ``heads`` times the single-head cost. Tensors on any device are accepted (CUDA included):
    the structures compute on the CPU, and every answer is returned on the device of ``Q``, in its dtype
    (float32 or float64).

    Parameters
    ----------
    Q : (heads, m, d) tensor, or a list of ``heads`` (m, d) tensors
        Fixed queries.
    K : (heads, n, d) tensor, or a list of per-head tensors
        Keys.
    V : (heads, n, d_v) tensor, or a list of per-head tensors
        Values.
    tau : float in (0, 1], default 0.5
        The paper's trade-off parameter (rebuild every ``ceil(n^tau)`` updates of a head).
    k : int, optional
        Override the rebuild period.
    rtol : float, optional
        The precision guard's threshold (default per dtype, see :class:`DynamicAttention`).
    capacity : int, optional
        A fixed number of rows (appending beyond it is refused); default: grow as needed.

    Attributes
    ----------
    heads : list of DynamicAttention
        One structure per head (their ``counters`` hold the work done).
    device : torch.device
        Where answers are returned.
    """

    def __init__(
        self,
        Q,
        K,
        V,
        tau: float = 0.5,
        *,
        k: int | None = None,
        rtol: float | None = None,
        capacity: int | None = None,
    ) -> None:
        qs = _heads("Q", Q)
        ks, vs = _heads("K", K, len(qs)), _heads("V", V, len(qs))
        if qs[0].dtype not in (torch.float32, torch.float64):
            raise InputError(f"Q must be float32 or float64, got {qs[0].dtype}", "cast Q to torch.float64")
        self.device = Q.device if isinstance(Q, torch.Tensor) else Q[0].device
        self.dtype = qs[0].dtype
        self.heads = [
            DynamicAttention(q, kk, v, tau, dtype=self.dtype, k=k, rtol=rtol, capacity=capacity)
            for q, kk, v in zip(qs, ks, vs)
        ]
        h0 = self.heads[0]
        self.m, self.d, self.dv = h0.m, h0.d, h0.dv

    @property
    def n(self) -> int:
        """The number of key rows (the same in every head)."""
        return self.heads[0].n

    def __len__(self) -> int:
        return len(self.heads)

    def _per_head(self, name: str, value, size: int) -> np.ndarray:
        """A ``(heads, size)`` increment or row as a float64 array (torch tensor on any device, or array-like)."""
        arr = as_float64(value, name, f"a (heads, {size}) tensor")
        if arr.shape != (len(self.heads), size):
            raise InputError(f"{name} must have shape ({len(self.heads)}, {size}), got {arr.shape}", "one row per head")
        return arr

    def _out(self, t: torch.Tensor) -> torch.Tensor:
        return t.to(self.device)

    # ------------------------------------------------------------------------------------------- updates
    def update_k_row(self, i: int, delta) -> None:
        """``K[h, i] += delta[h]`` for every head ``h`` (validated for all heads before any changes).

        Parameters
        ----------
        i : int
            A key row.
        delta : (heads, d) tensor or array
            The increments (finite, keeping the logits finite).
        """
        i = check_index("i", i, self.n)
        arr = self._per_head("delta", delta, self.d)
        rows = [s._check_k_row(i, a)[1] for s, a in zip(self.heads, arr)]
        for s, r in zip(self.heads, rows):
            s.update_k_row(i, r)

    def update_v_row(self, i: int, delta) -> None:
        """``V[h, i] += delta[h]`` for every head ``h`` (validated for all heads before any changes).

        Parameters
        ----------
        i : int
            A value row.
        delta : (heads, d_v) tensor or array
            The increments (finite).
        """
        i = check_index("i", i, self.n)
        arr = self._per_head("delta", delta, self.dv)
        rows = [s._check_v_row(i, a)[1] for s, a in zip(self.heads, arr)]
        for s, r in zip(self.heads, rows):
            s.update_v_row(i, r)

    def append_row(self, k_row, v_row) -> int:
        """Append one key row and one value row to every head.

        Parameters
        ----------
        k_row : (heads, d) tensor or array
            The new keys, one per head.
        v_row : (heads, d_v) tensor or array
            Their values.

        Returns
        -------
        int
            The new row's index (the same in every head).
        """
        ka = self._per_head("k_row", k_row, self.d)
        va = self._per_head("v_row", v_row, self.dv)
        checked = [s._check_append(a, b) for s, a, b in zip(self.heads, ka, va)]
        return [s.append_row(a, b) for s, (a, b) in zip(self.heads, checked)][0]

    def delete_row(self, i: int) -> None:
        """Delete row ``i`` from every head (the last row takes its index).

        Parameters
        ----------
        i : int
            A key row (at least one must remain).
        """
        i = self.heads[0]._check_delete(i)
        for s in self.heads:
            s.delete_row(i)

    # ------------------------------------------------------------------------------------------- queries
    def query_row(self, i: int) -> torch.Tensor:
        """Row ``i`` of the attention output of every head.

        Parameters
        ----------
        i : int
            A query row.

        Returns
        -------
        torch.Tensor
            ``(heads, d_v)``, on the device of ``Q``.
        """
        i = check_index("i", i, self.m)
        return self._out(torch.stack([s.query_row(i) for s in self.heads]))

    def to_dense(self) -> torch.Tensor:
        """The whole output ``softmax(Q K^T) V`` of every head.

        Returns
        -------
        torch.Tensor
            ``(heads, m, d_v)``, on the device of ``Q``.
        """
        return self._out(torch.stack([s.to_dense() for s in self.heads]))

    def __repr__(self) -> str:
        return (
            f"MultiHeadDynamicAttention(heads={len(self.heads)}, m={self.m}, n={self.n}, d={self.d}, "
            f"d_v={self.dv}, dtype={self.dtype}, device={self.device})"
        )
