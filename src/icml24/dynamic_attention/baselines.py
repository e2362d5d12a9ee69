"""The peers a user would pick instead of the lazy structure, with the same API and work counters.

- :class:`NaiveAttention`: store ``Q, K, V``; a query recomputes one softmax row, ``O(n d)``; updates ``O(1)``.
- :class:`FullRecompute`: recompute all of ``B`` after every update, ``O(m n d)``; queries ``O(1)``.
- :class:`EagerAttention`: keep ``M = A V`` and ``s = A 1`` exact after every update (recompute the changed
  column of ``A`` and apply a rank-1 correction, ``O(m (d + d_v))``); queries ``O(1)``.
- :class:`DenseLazyAttention`: the lazy structure with ``O(m n)`` memory: ``A`` is stored, a K update
  refreshes one column in ``O(m d)``, each pending update is a rank-1 pair, so a query costs ``O(k)``;
  rebuilds every ``k = ceil(n^tau)`` updates fold the pairs with one ``m x k x d_v`` product.

All of them append and delete rows (``append_row``, ``delete_row``: the last row takes the deleted index) at
their own cost: ``O(d + d_v)`` naive, ``O(m (d + d_v))`` eager (one column of ``A`` added or subtracted),
``O(m n (d + d_v))`` full recomputation, ``O(m n)`` for the dense lazy variant (its stored ``A`` is reallocated).
"""

from __future__ import annotations

import numpy as np
import torch

from ..validation import check_int
from .checks import EXP_HEADROOM, ROWS_MAX, check_index, check_tau
from .maintainer import AttentionMaintainer
from .reference import blocked_attention
from .structure import rebuild_period


class NaiveAttention(AttentionMaintainer):
    """Recompute per query: ``B[i, j] = softmax(Q_i K^T) V[:, j]`` in ``O(n d)``; updates are ``O(1)``.

    Parameters
    ----------
    Q, K, V, dtype, capacity
        As for :class:`~.maintainer.AttentionMaintainer`.
    """

    def update_k(self, i, j, delta) -> None:
        i, j, delta = self._check_k(i, j, delta)
        self._Kn[i, j] += delta
        self.counters.updates_k += 1
        self.counters.update_work += 1

    def update_v(self, i, j, delta) -> None:
        i, j, delta = self._check_v(i, j, delta)
        self._Vn[i, j] += delta
        self.counters.updates_v += 1
        self.counters.update_work += 1

    def update_k_row(self, i, delta) -> None:
        i, delta = self._check_k_row(i, delta)
        self._Kn[i] += delta
        self.counters.updates_k += 1
        self.counters.update_work += self.d

    def update_v_row(self, i, delta) -> None:
        i, delta = self._check_v_row(i, delta)
        self._Vn[i] += delta
        self.counters.updates_v += 1
        self.counters.update_work += self.dv

    def query(self, i, j) -> float:
        i, j = self._check_q(i, j)
        p = torch.softmax(self.K @ self.Q[i], dim=0)
        self.counters.add_query(self.n * (self.d + 2))
        return float(p @ self.V[:, j])

    def query_row(self, i) -> torch.Tensor:
        i = check_index("i", i, self.m)
        self.counters.add_query(self.n * (self.d + self.dv + 1))
        return torch.softmax(self.K @ self.Q[i], dim=0) @ self.V


class FullRecompute(AttentionMaintainer):
    """Recompute the whole ``B`` after every update, ``O(m n (d + d_v))``; a query reads one entry.

    Parameters
    ----------
    Q, K, V, dtype, capacity
        As for :class:`~.maintainer.AttentionMaintainer`.
    """

    def __init__(self, Q, K, V, *, dtype: torch.dtype | None = None, capacity: int | None = None) -> None:
        super().__init__(Q, K, V, dtype=dtype, capacity=capacity)
        self._recompute()
        self.counters.rebuilds, self.counters.rebuild_work = 0, 0
        self.counters.init_work = self.m * self.n * (self.d + self.dv + 1)

    def _recompute(self) -> None:
        self.B = blocked_attention(self.Q, self.K, self.V)
        self.counters.rebuilds += 1
        self.counters.rebuild_work += self.m * self.n * (self.d + self.dv + 1)

    def update_k(self, i, j, delta) -> None:
        i, j, delta = self._check_k(i, j, delta)
        self._Kn[i, j] += delta
        self.counters.updates_k += 1
        self._recompute()

    def update_v(self, i, j, delta) -> None:
        i, j, delta = self._check_v(i, j, delta)
        self._Vn[i, j] += delta
        self.counters.updates_v += 1
        self._recompute()

    def update_k_row(self, i, delta) -> None:
        i, delta = self._check_k_row(i, delta)
        self._Kn[i] += delta
        self.counters.updates_k += 1
        self._recompute()

    def update_v_row(self, i, delta) -> None:
        i, delta = self._check_v_row(i, delta)
        self._Vn[i] += delta
        self.counters.updates_v += 1
        self._recompute()

    def append_row(self, k_row, v_row) -> int:
        i = super().append_row(k_row, v_row)
        self._recompute()
        return i

    def delete_row(self, i) -> None:
        super().delete_row(i)
        self._recompute()

    def query(self, i, j) -> float:
        i, j = self._check_q(i, j)
        self.counters.add_query(1)
        return float(self.B[i, j])

    def query_row(self, i) -> torch.Tensor:
        i = check_index("i", i, self.m)
        self.counters.add_query(self.dv)
        return self.B[i].clone()


class EagerAttention(AttentionMaintainer):
    """Exact ``M = exp(Q K^T - shift) V`` and ``s`` after every update, in ``O(m (d + d_v))``; ``O(1)`` query.

    Memory ``O((m + n)(d + d_v))``: the changed column of ``A`` is recomputed (one matrix-vector product; the
    new logits are the old ones plus ``delta Q[:, j]``), never stored; the query reads two numbers through
    numpy views. It has no precision guard: under cancelling large logits it loses accuracy as the lazy
    structure would without its guard, and it is that much cheaper, which only favours it in comparisons.

    Parameters
    ----------
    Q, K, V, dtype, capacity
        As for :class:`~.maintainer.AttentionMaintainer`.
    """

    def __init__(self, Q, K, V, *, dtype: torch.dtype | None = None, capacity: int | None = None) -> None:
        super().__init__(Q, K, V, dtype=dtype, capacity=capacity)
        self._headroom = EXP_HEADROOM[self.dtype]
        self.M = torch.empty(self.m, self.dv, dtype=self.dtype)
        self.s = torch.empty(self.m, dtype=self.dtype)
        self.shift = torch.empty(self.m, dtype=self.dtype)
        b = max(1, min(self.m, (1 << 22) // self.n))
        for lo in range(0, self.m, b):
            logits = self.Q[lo : lo + b] @ self.K.T
            sh = logits.max(dim=1).values
            a = torch.exp(logits - sh[:, None])
            self.M[lo : lo + b], self.s[lo : lo + b], self.shift[lo : lo + b] = a @ self.V, a.sum(1), sh
        self.counters.init_work += self.m * self.n * (self.d + self.dv + 1)

        self._Mn, self._sn = self.M.numpy(), self.s.numpy()

    def update_k(self, i, j, delta) -> None:
        i, j, delta = self._check_k(i, j, delta)
        old = self.Q @ self.K[i]
        self._Kn[i, j] += delta
        new = old + self.Q[:, j] * delta  # one GEMV per update: the new column from the old one
        self._refresh_column(i, old, new)  # raises the shifts of rows that would overflow
        self.counters.updates_k += 1
        self.counters.update_work += self.m * (self.d + self.dv + 4)

    def update_k_row(self, i, delta) -> None:
        i, delta = self._check_k_row(i, delta)
        old = self.Q @ self.K[i]
        self._Kn[i] += delta
        self._refresh_column(i, old, self.Q @ self.K[i])
        self.counters.updates_k += 1
        self.counters.update_work += self.m * (2 * self.d + self.dv + 4)

    def append_row(self, k_row, v_row) -> int:
        """Append a key and value row: the new column of ``A`` times the value row added to ``M``, ``O(m (d +
        d_v))``.

        Parameters
        ----------
        k_row : sequence, array or tensor of length d
        v_row : sequence, array or tensor of length d_v

        Returns
        -------
        int
            The new row's index.
        """
        k, v = self._check_append(k_row, v_row)
        i = self._append_storage(k, v)
        new = self.Q @ self.K[i]
        self._raise_shift(new)
        a = torch.exp(new - self.shift)
        self.M.addr_(a, self.V[i])
        self.s += a
        self.counters.updates_k += 1
        self.counters.update_work += self.m * (self.d + self.dv + 2)
        return i

    def delete_row(self, i) -> None:
        """Delete row ``i`` (the last row takes its index): its column of ``A`` times its value row subtracted
        from ``M``, ``O(m (d + d_v))``.

        Parameters
        ----------
        i : int
        """
        i = self._check_delete(i)
        a = torch.exp(self.Q @ self.K[i] - self.shift)
        self.M.addr_(a, self.V[i], alpha=-1.0)
        self.s -= a
        self._delete_storage(i)
        self.counters.updates_k += 1
        self.counters.update_work += self.m * (self.d + self.dv + 2)

    def _raise_shift(self, new: torch.Tensor) -> None:
        if float((new - self.shift).max()) > self._headroom:
            new_sh = torch.maximum(self.shift, new - self._headroom)
            scale = torch.exp(self.shift - new_sh)
            self.M *= scale[:, None]
            self.s *= scale
            self.shift.copy_(new_sh)

    def _refresh_column(self, i: int, old: torch.Tensor, new: torch.Tensor) -> None:
        if float((new - self.shift).max()) > self._headroom:
            new_sh = torch.maximum(self.shift, new - self._headroom)
            scale = torch.exp(self.shift - new_sh)
            self.M *= scale[:, None]
            self.s *= scale
            self.shift.copy_(new_sh)
        da = torch.exp(new - self.shift).sub_(torch.exp(old - self.shift))
        self.M.addr_(da, self.V[i])
        self.s += da

    def update_v_row(self, i, delta) -> None:
        i, delta = self._check_v_row(i, delta)
        self._Vn[i] += delta
        self.M.addr_(torch.exp(self.Q @ self.K[i] - self.shift), torch.from_numpy(delta))
        self.counters.updates_v += 1
        self.counters.update_work += self.m * (self.d + self.dv + 1)

    def update_v(self, i, j, delta) -> None:
        i, j, delta = self._check_v(i, j, delta)
        self._Vn[i, j] += delta
        self.M[:, j].add_(torch.exp(self.Q @ self.K[i] - self.shift), alpha=delta)
        self.counters.updates_v += 1
        self.counters.update_work += self.m * (self.d + 2)

    def query(self, i, j) -> float:
        i, j = self._check_q(i, j)
        self.counters.add_query(1)
        with np.errstate(divide="ignore", invalid="ignore"):  # no guard: a cancelled sum gives inf or nan
            return float(self._Mn[i, j] / self._sn[i])

    def query_row(self, i) -> torch.Tensor:
        i = check_index("i", i, self.m)
        self.counters.add_query(self.dv)
        return self.M[i] / self.s[i]


class DenseLazyAttention(AttentionMaintainer):
    """The lazy structure with ``A`` stored explicitly (``O(m n)`` memory) and pending updates as rank-1 pairs.

    Each update ``t`` changes ``A V`` by ``u_t w_t^T``: a K update of row ``c`` has ``u = A_new[:, c] -
    A_old[:, c]`` and ``w = V[c]`` (and changes ``s`` by ``u``); a V update ``(r, j, delta)`` has ``u = A[:, r]``
    and ``w = delta e_j``. A query sums ``u_t[i] w_t[j]`` over at most ``k`` pending pairs: ``O(k)`` instead of
    the memory-light structure's ``O(k d)``. It does not contradict the paper's lower bound, which forbids
    improving both exponents at once (its update costs ``O(m d)`` and it needs ``O(m n)`` memory).

    Parameters
    ----------
    Q : (m, d) matrix
        Fixed queries (tensor, numpy array or nested lists; copied).
    K : (n, d) matrix
        Keys, updated entrywise with :meth:`update_k`.
    V : (n, d_v) matrix
        Values, updated entrywise with :meth:`update_v`.
    tau : float in (0, 1], default 0.5
        Rebuild every ``k = ceil(n^tau)`` updates.
    dtype : torch.float32 or torch.float64, optional
        Default: the dtype of ``Q`` (integers become float64).
    k : int, optional
        Override the rebuild period.
    capacity : int, optional
        A fixed number of rows, beyond which ``append_row`` is refused; default: grow as needed.
    """

    def __init__(
        self,
        Q,
        K,
        V,
        tau: float = 0.5,
        *,
        dtype: torch.dtype | None = None,
        k: int | None = None,
        capacity: int | None = None,
    ) -> None:
        super().__init__(Q, K, V, dtype=dtype, capacity=capacity)
        self.tau = check_tau(tau)
        k = check_int(k, "k", min_val=1, max_val=ROWS_MAX, allow_none=True)
        self.k = rebuild_period(self.n, self.tau) if k is None else k
        logits = self.Q @ self.K.T
        self.shift = logits.max(dim=1).values
        self.A = torch.exp(logits - self.shift[:, None])
        self.M = self.A @ self.V
        self.s = self.A.sum(dim=1)
        self.U = torch.empty(self.m, self.k, dtype=self.dtype)
        self.W = torch.empty(self.k, self.dv, dtype=self.dtype)
        self._is_k = torch.zeros(self.k, dtype=self.dtype)
        self.pending = 0
        self.counters.init_work += self.m * self.n * (self.d + self.dv + 1)

    def update_k(self, i, j, delta) -> None:
        i, j, delta = self._check_k(i, j, delta)
        self._Kn[i, j] += delta
        new = torch.exp(self.Q @ self.K[i] - self.shift)
        t = self.pending
        self.U[:, t] = new - self.A[:, i]
        self.W[t] = self.V[i]
        self._is_k[t] = 1.0
        self.A[:, i] = new
        self.counters.updates_k += 1
        self.counters.update_work += self.m * (self.d + 2) + self.dv
        self._after()

    def update_v(self, i, j, delta) -> None:
        i, j, delta = self._check_v(i, j, delta)
        self._Vn[i, j] += delta
        t = self.pending
        self.U[:, t] = self.A[:, i]
        self.W[t].zero_()
        self.W[t, j] = delta
        self._is_k[t] = 0.0
        self.counters.updates_v += 1
        self.counters.update_work += self.m + self.dv
        self._after()

    def append_row(self, k_row, v_row) -> int:
        """Append a key and value row: fold the pending pairs, then add the new column of ``A`` (``O(m (k d_v +
        n))``: the stored ``A`` is reallocated).

        Parameters
        ----------
        k_row : sequence, array or tensor of length d
        v_row : sequence, array or tensor of length d_v

        Returns
        -------
        int
            The new row's index.
        """
        k, v = self._check_append(k_row, v_row)
        self.rebuild()
        i = self._append_storage(k, v)
        a = torch.exp(self.Q @ self.K[i] - self.shift)
        self.A = torch.cat([self.A, a[:, None]], dim=1)
        self.M.addr_(a, self.V[i])
        self.s += a
        self.counters.updates_k += 1
        self.counters.update_work += self.m * (self.n + self.d + self.dv)
        return i

    def delete_row(self, i) -> None:
        """Delete row ``i`` (the last row takes its index): fold the pending pairs, subtract its column of ``A``
        times its value row (``O(m (k d_v + n))``: the stored ``A`` is reallocated).

        Parameters
        ----------
        i : int
        """
        i = self._check_delete(i)
        self.rebuild()
        a = self.A[:, i].clone()
        self.M.addr_(a, self.V[i], alpha=-1.0)
        self.s -= a
        last = self._delete_storage(i)
        self.A[:, i] = self.A[:, last]
        self.A = self.A[:, :last].contiguous()
        self.counters.updates_k += 1
        self.counters.update_work += self.m * (self.n + self.d + self.dv)

    def _after(self) -> None:
        self.pending += 1
        self.counters.max_pending = max(self.counters.max_pending, self.pending)
        if self.pending >= self.k:
            self.rebuild()

    def rebuild(self) -> None:
        """Fold the pending rank-1 pairs into ``M`` and ``s`` (``M += U W``, ``s += U 1_K``) and clear them.

        Called automatically after ``k`` updates; cost ``O(m p d_v)`` for ``p`` pending pairs.
        """
        p = self.pending
        if p:
            self.M += self.U[:, :p] @ self.W[:p]
            self.s += self.U[:, :p] @ self._is_k[:p]
            self.counters.rebuild_work += self.m * p * (self.dv + 1)
        self.pending = 0
        self.counters.rebuilds += 1

    def query(self, i, j) -> float:
        i, j = self._check_q(i, j)
        p = self.pending
        u = self.U[i, :p]
        num = float(self.M[i, j]) + float(u @ self.W[:p, j])
        den = float(self.s[i]) + float(u @ self._is_k[:p])
        self.counters.add_query(2 * p + 1)
        return num / den

    def query_row(self, i) -> torch.Tensor:
        i = check_index("i", i, self.m)
        p = self.pending
        u = self.U[i, :p]
        self.counters.add_query(p * (self.dv + 1) + self.dv)
        return (self.M[i] + u @ self.W[:p]) / (self.s[i] + u @ self._is_k[:p])

    def to_dense(self) -> torch.Tensor:
        p = self.pending
        return (self.M + self.U[:, :p] @ self.W[:p]) / (self.s + self.U[:, :p] @ self._is_k[:p])[:, None]
