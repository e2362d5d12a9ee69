"""The lazy-update data structure for dynamic attention maintenance (ODAMV) of van den Brand, Song and Zhou.

Problem (Definition 1.2 of arXiv 2304.02207): ``Q, K, V`` with ``Q`` fixed, ``A = exp(Q K^T)`` entrywise,
``D = diag(A 1)``; maintain ``B = D^{-1} A V`` under ``UpdateK(i, j, delta)``, ``UpdateV(i, j, delta)`` and
answer ``Query(i, j) = B[i, j]`` exactly.

The structure (the paper's lazy-update algorithm, in a memory-light form) keeps, from the last
rebuild, the snapshot products ``M = A0 V0`` (``m x d_v``) and ``s = A0 1`` (``m``) and lists of the updates
since then:

- ``C``: the key rows changed since the rebuild, with their snapshot rows ``K0[c]``;
- ``R``: the value entries changed since the rebuild, with their accumulated deltas ``V[r, j] - V0[r, j]``.

Since a K update changes one *column* of ``A`` and a V update one entry of ``V``,

    A V - A0 V0 = (A - A0) V + A0 (V - V0),      A 1 - A0 1 = (A - A0) 1,

where ``A - A0`` is non-zero only in the columns ``C``. A query evaluates these corrections for one entry in
``O(|C| d + |R| d)`` work, i.e. ``O(n^tau d)``, the paper's worst-case query bound ``O(n^{1+tau})`` for ``d = n``.
Every ``k = ceil(n^tau)`` updates a rebuild folds them into ``M`` and ``s`` with three rectangular products
(``m x |C|`` and ``m x |R_rows|`` matrices, in row blocks), which costs ``O(m k d)`` with classical
multiplication, i.e. ``O(n^{omega(1,1,tau)})`` with fast rectangular multiplication; amortised over ``k``
updates this is the paper's update bound ``O(n^{omega(1,1,tau) - tau})``. Neither ``A`` nor any ``m x n``
matrix is ever held: the memory is ``O((m + n)(d + d_v))``.

Numerics (our addition; the paper works in exact arithmetic): ``B`` is invariant to scaling a row of ``A``,
so ``M`` and ``s`` are stored for ``exp(Q K^T - shift)`` with a per-row ``shift`` (the row maximum at
construction). The shift is fixed between rebuilds; a rebuild may only raise it (rescaling ``M`` and ``s``),
and a query whose new logits would overflow evaluates with a temporarily raised shift. Corrections are
incremental, so rounding error accumulates over rebuilds (about ``eps * s_i / (A 1)_i`` per rebuild);
:meth:`DynamicAttention.refresh` recomputes ``M`` and ``s`` from scratch, and ``refresh_every`` does it every
that many rebuilds (off by default, as in the paper).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..validation import check_int
from .maintainer import EXP_HEADROOM, AttentionMaintainer, check_index, check_tau

_BLOCK_ELEMENTS = 1 << 22  # at most this many entries of any m x (something) intermediate at a time


def rebuild_period(n: int, tau: float) -> int:
    """The number of updates between rebuilds, ``k = ceil(n^tau)`` (at least 1).

    Parameters
    ----------
    n : int
        Rows of ``K``.
    tau : float
        The trade-off parameter.

    Returns
    -------
    int
    """
    return max(1, math.ceil(n**tau - 1e-9))


class DynamicAttention(AttentionMaintainer):
    """Exact dynamic attention maintenance with lazy updates (the ODAMV algorithm of the paper).

    Parameters
    ----------
    Q : (m, d) array or tensor, fixed queries (the paper has ``m = n``).
    K : (n, d) keys, updated entrywise with :meth:`update_k`.
    V : (n, d_v) values, updated entrywise with :meth:`update_v`.
    tau : float in (0, 1]
        The paper's trade-off parameter: a rebuild every ``k = ceil(n^tau)`` updates; amortised update
        cost ``O(n^{omega(1,1,tau) - tau})``, worst-case query cost ``O(n^{1+tau})`` (``d = n``).
    dtype : torch.float32 or torch.float64 (default: the dtype of ``Q``; integers become float64).
    k : int, optional
        Override the rebuild period (e.g. ``k=1`` rebuilds after every update).
    refresh_every : int, optional
        Recompute ``M`` and ``s`` from scratch every that many rebuilds, bounding accumulated rounding
        error at ``O(m n d)`` extra cost each time. ``None`` (default) never does, as in the paper.

    Attributes
    ----------
    Q, K, V : the current matrices (torch tensors; do not modify them directly).
    counters : :class:`WorkCounters` with the multiply-adds spent on updates, rebuilds and queries
        (``init_work`` holds the preprocessing).
    k : the rebuild period. ``pending`` : the number of updates since the last rebuild.

    Notes
    -----
    The pending updates live in preallocated buffers of ``k`` rows: for each changed key row its current
    and snapshot rows (interleaved, so one product gives both logits) and its current value row; for each
    changed value entry the snapshot key row of its row, its column and its accumulated delta. An update
    therefore costs ``O(d + d_v)`` when it opens a new pending row and ``O(1)`` otherwise, plus the
    amortised rebuild. The scalar paths use numpy views of the same memory, to keep per-operation
    overhead small next to the ``O(k d)`` work.

    References
    ----------
    J. van den Brand, Z. Song, T. Zhou. Algorithm and Hardness for Dynamic Attention Maintenance in Large
    Language Models. ICML 2024, arXiv 2304.02207 (Definition 1.2; Theorem 1.3 for the bounds).
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
        refresh_every: int | None = None,
    ) -> None:
        super().__init__(Q, K, V, dtype=dtype)
        self.tau = check_tau(tau)
        k = check_int(k, "k", min_val=1, allow_none=True)
        if k is None:
            k = rebuild_period(self.n, self.tau)
        refresh_every = check_int(refresh_every, "refresh_every", min_val=1, allow_none=True)
        self.k = k
        self.refresh_every = refresh_every
        self._headroom = EXP_HEADROOM[self.dtype]
        np_dtype = np.float64 if self.dtype == torch.float64 else np.float32
        kc = min(k, self.n)
        # pending key rows C: _KC[2t] = current row, _KC[2t + 1] = snapshot row, _VC[t] = current value row
        self._C: list[int] = []
        self._cpos: dict[int, int] = {}
        self._KC = np.zeros((2 * kc, self.d), dtype=np_dtype)
        self._VC = np.zeros((kc, self.dv), dtype=np_dtype)
        # pending value entries R: snapshot key row of the entry's row, its row, column and accumulated delta
        kr = min(k, self.n * self.dv)
        self._vslot: dict[tuple[int, int], int] = {}
        self._KR = np.zeros((kr, self.d), dtype=np_dtype)
        self._Rrow = np.zeros(kr, dtype=np.int64)
        self._Rcol = np.full(kr, -1, dtype=np.int64)
        self._Rdelta = np.zeros(kr, dtype=np_dtype)
        self.pending = 0
        self.counters.init_work += self._init_snapshot()

    # ------------------------------------------------------------------------------------- snapshot
    def _block(self, width: int) -> int:
        return max(1, min(self.m, _BLOCK_ELEMENTS // max(width, 1)))

    def _init_snapshot(self) -> int:
        """``M = exp(Q K^T - shift) V`` and ``s = exp(Q K^T - shift) 1`` in row blocks: O(m n (d + d_v))."""
        self.M = torch.empty(self.m, self.dv, dtype=self.dtype)
        self.s = torch.empty(self.m, dtype=self.dtype)
        self.shift = torch.empty(self.m, dtype=self.dtype)
        b = self._block(self.n)
        for lo in range(0, self.m, b):
            logits = self.Q[lo : lo + b] @ self.K.T
            sh = logits.max(dim=1).values
            a = torch.exp(logits - sh[:, None])
            self.M[lo : lo + b] = a @ self.V
            self.s[lo : lo + b] = a.sum(dim=1)
            self.shift[lo : lo + b] = sh
        self._Mn, self._sn, self._shn = self.M.numpy(), self.s.numpy(), self.shift.numpy()
        return self.m * self.n * (self.d + self.dv + 1)

    def refresh(self) -> None:
        """Drop the pending lists and recompute ``M``, ``s`` and the shifts from scratch (O(m n d))."""
        self._clear_pending()
        self.counters.rebuild_work += self._init_snapshot()

    # ---------------------------------------------------------------------------------------- updates
    def update_k(self, i: int, j: int, delta: float) -> None:
        """``K[i, j] += delta``: O(1), or O(d + d_v) the first time row ``i`` changes since the rebuild."""
        i, j, delta = self._check_k(i, j, delta)
        t = self._cpos.get(i)
        if t is None:
            t = len(self._C)
            self._cpos[i] = t
            self._C.append(i)
            self._KC[2 * t] = self._Kn[i]
            self._KC[2 * t + 1] = self._Kn[i]
            self._VC[t] = self._Vn[i]
            self.counters.update_work += 2 * self.d + self.dv
        self._Kn[i, j] += delta
        self._KC[2 * t, j] += delta
        self.counters.updates_k += 1
        self.counters.update_work += 2
        self._after_update()

    def update_v(self, i: int, j: int, delta: float) -> None:
        """``V[i, j] += delta``: O(1), or O(d) the first time entry ``(i, j)`` changes since the rebuild."""
        i, j, delta = self._check_v(i, j, delta)
        slot = self._vslot.get((i, j))
        if slot is None:
            slot = len(self._vslot)
            self._vslot[(i, j)] = slot
            t = self._cpos.get(i)
            self._KR[slot] = self._Kn[i] if t is None else self._KC[2 * t + 1]  # the snapshot key row
            self._Rrow[slot], self._Rcol[slot], self._Rdelta[slot] = i, j, 0.0
            self.counters.update_work += self.d
        self._Rdelta[slot] += delta
        self._Vn[i, j] += delta
        t = self._cpos.get(i)
        if t is not None:
            self._VC[t, j] += delta
        self.counters.updates_v += 1
        self.counters.update_work += 2
        self._after_update()

    def _after_update(self) -> None:
        self.pending += 1
        self.counters.max_pending = max(self.counters.max_pending, self.pending)
        if self.pending >= self.k:
            self.rebuild()

    def rebuild(self) -> None:
        """Fold the pending updates into ``M`` and ``s`` with rectangular products, in row blocks.

        ``M += (A_new[:, C] - A_old[:, C]) V[C] + A_old[:, R] (V - V0)[R]`` and ``s += (A_new - A_old)[:, C] 1``,
        where ``A_old`` uses the snapshot key rows; the per-row shift may rise here (``M``, ``s`` rescaled).
        Cost ``O(m (|C| (d + d_v) + |R| (d + d_v)))``, i.e. ``O(m k d)``.
        """
        nc, nr = len(self._C), len(self._vslot)
        if nc or nr:
            KC = torch.from_numpy(self._KC[: 2 * nc])
            Knew, Kold = KC[0::2], KC[1::2]
            VC = torch.from_numpy(self._VC[:nc])
            KR = torch.from_numpy(self._KR[:nr])
            dV = torch.zeros(nr, self.dv, dtype=self.dtype)
            if nr:
                dV[torch.arange(nr), torch.from_numpy(self._Rcol[:nr])] = torch.from_numpy(self._Rdelta[:nr])
            b = self._block(nc + nr)
            for lo in range(0, self.m, b):
                q = self.Q[lo : lo + b]
                sh = self.shift[lo : lo + b]
                if nc:
                    ln, lo_ = q @ Knew.T, q @ Kold.T
                    new_sh = torch.maximum(sh, ln.max(dim=1).values - self._headroom)
                    if bool((new_sh > sh).any()):
                        scale = torch.exp(sh - new_sh)
                        self.M[lo : lo + b] *= scale[:, None]
                        self.s[lo : lo + b] *= scale
                        self.shift[lo : lo + b] = new_sh
                        sh = new_sh
                    da = torch.exp(ln - sh[:, None]) - torch.exp(lo_ - sh[:, None])
                    self.M[lo : lo + b] += da @ VC
                    self.s[lo : lo + b] += da.sum(dim=1)
                if nr:
                    self.M[lo : lo + b] += torch.exp(q @ KR.T - sh[:, None]) @ dV
            self.counters.rebuild_work += self.m * (nc * (2 * self.d + self.dv + 1) + nr * (self.d + self.dv))
        self.counters.rebuilds += 1
        self._clear_pending()
        if self.refresh_every is not None and self.counters.rebuilds % self.refresh_every == 0:
            self.counters.rebuild_work += self._init_snapshot()

    def _clear_pending(self) -> None:
        self._C.clear()
        self._cpos.clear()
        self._vslot.clear()
        self.pending = 0

    # ---------------------------------------------------------------------------------------- queries
    def query(self, i: int, j: int) -> float:
        """``B[i, j]`` exactly, in ``O((|C| + |R|) d)`` work: at most ``k d`` multiply-adds."""
        i, j = self._check_q(i, j)
        q = self._Qn[i]
        sh = float(self._shn[i])
        num = float(self._Mn[i, j])
        den = float(self._sn[i])
        nc, nr = len(self._C), len(self._vslot)
        if nc:
            logits = self._KC[: 2 * nc] @ q
            top = float(logits[0::2].max())
            if top - sh > self._headroom:  # raise the shift for this query only
                scale = math.exp(sh - top)
                num, den, sh = num * scale, den * scale, top
            e = np.exp(logits - sh)
            da = e[0::2] - e[1::2]
            num += float(da @ self._VC[:nc, j])
            den += float(da.sum())
        if nr:
            w = np.where(self._Rcol[:nr] == j, self._Rdelta[:nr], 0.0)
            num += float(np.exp(self._KR[:nr] @ q - sh) @ w)
        self.counters.add_query(nc * (2 * self.d + 3) + nr * (self.d + 2) + 1)
        return num / den

    def query_row(self, i: int) -> torch.Tensor:
        """``B[i, :]`` exactly, in ``O(|C| (d + d_v) + |R| d)`` work."""
        i = check_index("i", i, self.m)
        nc, nr = len(self._C), len(self._vslot)
        self.counters.add_query(nc * (2 * self.d + self.dv + 2) + nr * (self.d + 2) + self.dv)
        return self._rows(slice(i, i + 1))[0]

    def to_dense(self) -> torch.Tensor:
        """The whole ``B`` from ``M``, ``s`` and the pending corrections (row blocks; nothing is folded)."""
        b = self._block(len(self._C) + len(self._vslot))
        return torch.cat([self._rows(slice(lo, min(lo + b, self.m))) for lo in range(0, self.m, b)])

    def _rows(self, rows: slice) -> torch.Tensor:
        nc, nr = len(self._C), len(self._vslot)
        q = self.Q[rows]
        sh = self.shift[rows].clone()
        num = self.M[rows].clone()
        den = self.s[rows].clone()
        if nc:
            KC = torch.from_numpy(self._KC[: 2 * nc])
            ln, lo_ = q @ KC[0::2].T, q @ KC[1::2].T
            new_sh = torch.maximum(sh, ln.max(dim=1).values - self._headroom)
            scale = torch.exp(sh - new_sh)
            num *= scale[:, None]
            den *= scale
            sh = new_sh
            da = torch.exp(ln - sh[:, None]) - torch.exp(lo_ - sh[:, None])
            num += da @ torch.from_numpy(self._VC[:nc])
            den += da.sum(dim=1)
        if nr:
            dV = torch.zeros(nr, self.dv, dtype=self.dtype)
            dV[torch.arange(nr), torch.from_numpy(self._Rcol[:nr])] = torch.from_numpy(self._Rdelta[:nr])
            num += torch.exp(q @ torch.from_numpy(self._KR[:nr]).T - sh[:, None]) @ dV
        return num / den[:, None]
