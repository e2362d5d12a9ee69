"""The lazy-update data structure for dynamic attention maintenance (ODAMV) of van den Brand, Song and Zhou.

Problem (Definition 1.2 of arXiv 2304.02207): ``Q, K, V`` with ``Q`` fixed, ``A = exp(Q K^T)`` entrywise,
``D = diag(A 1)``; maintain ``B = D^{-1} A V`` under ``UpdateK(i, j, delta)``, ``UpdateV(i, j, delta)`` and
answer ``Query(i, j) = B[i, j]`` exactly.

The structure (the paper's lazy-update algorithm, in a memory-light form) keeps, from the last
rebuild, the snapshot products ``M = A0 V0`` (``m x d_v``) and ``s = A0 1`` (``m``) and lists of the updates
since then:

- ``C``: the key rows changed since the rebuild, with their snapshot rows ``K0[c]``;
- ``R``: the value rows changed since the rebuild, with their snapshot rows ``V0[r]`` and snapshot key rows.

Since a K update (of an entry or of a whole row) changes one *column* of ``A`` and a V update one row of ``V``,

    A V - A0 V0 = (A - A0) V + A0 (V - V0),      A 1 - A0 1 = (A - A0) 1,

where ``A - A0`` is non-zero only in the columns ``C``. A query evaluates these corrections for one entry in
``O(|C| d + |R| d)`` work, i.e. ``O(n^tau d)``, the paper's worst-case query bound ``O(n^{1+tau})`` for ``d = n``.
Every ``k = ceil(n^tau)`` updates a rebuild folds them into ``M`` and ``s`` with two rectangular products
(the logits ``Q [K_C; K0_C; K0_R]^T``, then their exponentials times one stacked matrix of value rows, in
cache-sized row blocks), which costs ``O(m k d)`` with classical
multiplication, i.e. ``O(n^{omega(1,1,tau)})`` with fast rectangular multiplication; amortised over ``k``
updates this is the paper's update bound ``O(n^{omega(1,1,tau) - tau})``. Neither ``A`` nor any ``m x n``
matrix is ever held: the memory is ``O((m + n)(d + d_v))``.

Numerics (our addition; the paper works in exact arithmetic): ``B`` is invariant to scaling a row of ``A``, so ``M``
and ``s`` are stored for ``exp(Q K^T - shift)`` with a per-row ``shift`` (the row maximum at construction), which a
rebuild may only raise. Maintaining sums incrementally is exact in exact arithmetic but not in floating point: when
a key that dominated a row (a logit far above the others) is edited down, the maintained sum cancels (``1 - 1 +
tiny``) and keeps only rounding noise. The structure therefore carries, per entry of ``M`` and per row of ``s``, a
running bound on its rounding error (probabilistic bounds of the form ``lambda sqrt(p) u``, Higham and Mary 2019,
for sums of ``p`` terms and for the logits themselves) and the maintained ``H = exp(Q K^T - shift) |V|`` that an
answer's error is measured against. After every rebuild a row whose bound exceeds ``rtol`` relative to ``H`` (or to
``s``) is recomputed from scratch (``O(n (d + d_v))`` per row, counted in ``counters.repairs``), which also resets
its shift to the row's current maximum; a query whose pending corrections cancel against the snapshot in the same
way is answered by computing its row exactly (``counters.fallbacks``). So every answer is within about ``2 rtol`` of
the exact one, relative to ``softmax(Q_i K^T) |V[:, j]|`` (the scale of the answer's own condition): ``rtol =
1e-10`` in float64 by default (tested against a from-scratch oracle to 1e-9 with logits to +-700 and beyond),
``1e-4`` in float32 (tested to 2e-3 with logits to 60, where the logits' own float32 rounding dominates); the
rounding of the logits themselves, ``~sqrt(d) u |Q_i| |K_c|``, is part of the bound, so logits beyond ~1e5 in
float64 are answered by exact recomputation. Without cancellation the bounds grow by about ``u sqrt(k)`` per rebuild
and repairs are rare; :meth:`DynamicAttention.refresh` recomputes everything and ``refresh_every`` does it every
that many rebuilds. The guard costs ``3 d_v`` instead of ``d_v`` columns in the rebuild's second product and ``O(k
d_v)`` per query; eager maintenance (``baselines.EagerAttention``) has no guard.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_float, check_int
from .maintainer import EXP_HEADROOM, UNIT_ROUNDOFF, AttentionMaintainer, blocked_attention, check_index, check_tau

_BLOCK_ELEMENTS = 1 << 17  # entries of any m x (something) intermediate at a time: 1 MiB in float64, cache-sized
# The default repair threshold: the largest relative error bound a maintained sum may carry.
DEFAULT_RTOL = {torch.float64: 1e-10, torch.float32: 1e-4}


def _grow(buf: np.ndarray) -> np.ndarray:
    """``buf`` with twice the rows (the new ones zero)."""
    out = np.zeros((2 * len(buf),) + buf.shape[1:], dtype=buf.dtype)
    out[: len(buf)] = buf
    return out


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
    n = check_int(n, "n", min_val=1)
    tau = check_tau(tau)
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
        Recompute ``M`` and ``s`` from scratch every that many rebuilds, at ``O(m n d)`` extra cost each
        time. ``None`` (default) never does, as in the paper; the precision guard repairs rows as needed.
    rtol : float, optional
        The precision guard's threshold: a row whose maintained sums carry a relative error bound above it is
        recomputed (module docstring). Default ``1e-10`` in float64 (answers within ~2e-10 relative),
        ``1e-4`` in float32.
    capacity : int, optional
        A fixed number of rows: :meth:`append_row` beyond it is refused. Default ``None``: the buffers of ``K``
        and ``V`` double when full (appends stay ``O(d + d_v)`` amortised).

    Attributes
    ----------
    Q, K, V : the current matrices (torch tensors; do not modify them directly).
    counters : :class:`WorkCounters` with the multiply-adds spent on updates, rebuilds, queries and
        repairs (``init_work`` holds the preprocessing; ``repairs`` and ``fallbacks`` count the guard's work).
    k : the rebuild period. ``pending`` : the number of updates since the last rebuild.

    Notes
    -----
    The pending updates live in preallocated buffers of ``k`` rows: for each changed key row its current
    and snapshot rows (interleaved, so one product gives both logits) and its current value row; for each
    changed value row the snapshot key row of its row and its snapshot and current values. An update (of an
    entry, or of a whole row with :meth:`update_k_row` / :meth:`update_v_row`) therefore costs ``O(d + d_v)``
    when it opens a new pending row and ``O(1)`` (``O(d)`` for a row) otherwise, plus the amortised rebuild.
    Appending a row (:meth:`append_row`) adds a column to ``A``: a pending key row without a snapshot term;
    deleting one (:meth:`delete_row`, the last row taking its index) zeroes a column: a pending key row without
    a current term (its logit masked to ``-inf``). Both cost ``O(d + d_v)`` and count as one update towards the
    rebuild, as in the analysis of a key-row update; the precision guard covers them (a deleted dominant key
    cancels exactly as a key edited down does).
    The scalar paths use numpy views of the same memory, to keep per-operation overhead small next to the
    ``O(k d)`` work.

    References
    ----------
    J. van den Brand, Z. Song, T. Zhou. Algorithm and Hardness for Dynamic Attention Maintenance in Large
    Language Models. ICML 2024, arXiv 2304.02207 (Definition 1.2; Theorem 1.3 for the bounds).
    N. J. Higham, T. Mary. A new approach to probabilistic rounding error analysis. SIAM J. Sci. Comput. 2019.
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
        rtol: float | None = None,
        capacity: int | None = None,
    ) -> None:
        tau = check_tau(tau)
        k = check_int(k, "k", min_val=1, allow_none=True)
        refresh_every = check_int(refresh_every, "refresh_every", min_val=1, allow_none=True)
        rtol = check_float(rtol, "rtol", min_val=1e-13, max_val=0.01, allow_none=True)
        super().__init__(Q, K, V, dtype=dtype, capacity=capacity)
        self.tau = tau
        if k is None:
            k = rebuild_period(self.n, self.tau)
        self.k = k
        self.refresh_every = refresh_every
        self._u = UNIT_ROUNDOFF[self.dtype]
        if rtol is not None and rtol < 1e3 * self._u:
            raise InputError(
                f"rtol={rtol:g} is finer than {self.dtype} can guarantee (at least {1e3 * self._u:.2g})",
                "pass a larger rtol or use torch.float64",
            )
        self.rtol = rtol if rtol is not None else DEFAULT_RTOL[self.dtype]
        self._headroom = EXP_HEADROOM[self.dtype]
        self._qnorm = self.Q.norm(dim=1)
        self._qnn = self._qnorm.numpy()
        np_dtype = np.float64 if self.dtype == torch.float64 else np.float32
        kc = min(k, self.n)
        # pending key rows C: _KC[2t] = current row, _KC[2t + 1] = snapshot row, _VC[t] = current value row;
        # _LM[2t] / _LM[2t + 1] is 0, or -inf where the row has no current (deleted) or snapshot (appended) term
        self._C: list[int] = []
        self._cpos: dict[int, int] = {}
        self._KC = np.zeros((2 * kc, self.d), dtype=np_dtype)
        self._VC = np.zeros((kc, self.dv), dtype=np_dtype)
        self._LM = np.zeros(2 * kc, dtype=np_dtype)
        self._masked = False  # whether any _LM entry is -inf
        # pending value rows R: the snapshot key row of each changed value row, its snapshot and current values
        kr = min(k, self.n)
        self._vslot: dict[int, int] = {}
        self._nr = 0
        self._KR = np.zeros((kr, self.d), dtype=np_dtype)
        self._Rold = np.zeros((kr, self.dv), dtype=np_dtype)
        self._Rnew = np.zeros((kr, self.dv), dtype=np_dtype)
        self._pend_kmax = 0.0  # the largest |entry| of a pending key row (current or snapshot): for the error bound
        self.pending = 0
        self.M = torch.empty(self.m, self.dv, dtype=self.dtype)
        self.s = torch.empty(self.m, dtype=self.dtype)
        self.shift = torch.empty(self.m, dtype=self.dtype)
        self.H = torch.empty(self.m, self.dv, dtype=self.dtype)  # exp(Q K^T - shift) |V|: the answers' scale
        self.EM = torch.empty(self.m, self.dv, dtype=self.dtype)  # rounding error bound of M (and H)
        self.ES = torch.empty(self.m, dtype=self.dtype)  # rounding error bound of s
        self._Mn, self._sn, self._shn = self.M.numpy(), self.s.numpy(), self.shift.numpy()
        self._Hn, self._EMn, self._ESn = self.H.numpy(), self.EM.numpy(), self.ES.numpy()
        self.counters.init_work += self._init_snapshot()

    # ------------------------------------------------------------------------------------- snapshot
    def _block(self, width: int) -> int:
        return max(1, min(self.m, _BLOCK_ELEMENTS // max(width, 1)))

    def _rho(self, qn: torch.Tensor, sh: torch.Tensor, kmax: float, p: int) -> torch.Tensor:
        """Relative rounding error bound of each term ``exp(q . k - shift)`` summed ``p`` at a time: the logit's
        rounding (``2 sqrt(d) u |q| |k|``, with ``|k| <= sqrt(d) max|k|``), the shifted argument's (``u |shift|``)
        and the sum's (``2 sqrt(p) u``). Capped at 1 (any bound above ``rtol`` means: recompute)."""
        rho = self._u * (2.0 * self.d * kmax * qn + sh.abs() + (2.0 * math.sqrt(p) + 4.0))
        return rho.clamp(max=1.0)

    def _exact_rows(self, rows: torch.Tensor | slice, kv: tuple[float, torch.Tensor] | None = None) -> None:
        """Recompute ``M``, ``s``, ``H``, the shifts and the error bounds of ``rows`` from the current K and V;
        ``kv`` is ``(max |K|, [V, |V|])`` when the caller has them (row blocks share them)."""
        kmax, VV = kv if kv is not None else self._kv()
        q = self.Q[rows]
        logits = q @ self.K.T
        sh = logits.max(dim=1).values
        a = torch.exp(logits - sh[:, None])
        MH = a @ VV
        s = a.sum(dim=1)
        rho = self._rho(self._qnorm[rows], sh, kmax, self.n)
        self.M[rows], self.H[rows] = MH[:, : self.dv], MH[:, self.dv :]
        self.s[rows], self.shift[rows] = s, sh
        self.EM[rows] = rho[:, None] * MH[:, self.dv :]
        self.ES[rows] = rho * s

    def _kv(self) -> tuple[float, torch.Tensor]:
        """``max |K|`` and ``[V, |V|]`` side by side: what :meth:`_exact_rows` multiplies with."""
        return float(self.K.abs().max()), torch.cat([self.V, self.V.abs()], dim=1)

    def _init_snapshot(self) -> int:
        """``M``, ``s``, ``H`` and their error bounds from scratch, in row blocks: O(m n (d + 2 d_v))."""
        b = self._block(self.n)
        kv = self._kv()
        for lo in range(0, self.m, b):
            self._exact_rows(slice(lo, min(lo + b, self.m)), kv)
        return self.m * self.n * (self.d + 2 * self.dv + 1)

    def refresh(self) -> None:
        """Drop the pending lists and recompute ``M``, ``s`` and the shifts from scratch (O(m n d))."""
        self._clear_pending()
        self.counters.rebuild_work += self._init_snapshot()

    # ---------------------------------------------------------------------------------------- updates
    def update_k(self, i: int, j: int, delta: float) -> None:
        """``K[i, j] += delta``: O(d) (the row's norm), O(d + d_v) the first time row ``i`` changes.

        Parameters
        ----------
        i : int
            A row of ``K``.
        j : int
            A column of ``K``.
        delta : float
            The increment (finite, and keeping the logits finite).
        """
        i, j, delta = self._check_k(i, j, delta)
        t = self._key_slot(i)
        self._Kn[i, j] += delta
        row = self._KC[2 * t]
        row[j] += delta
        self._pend_kmax = max(self._pend_kmax, abs(float(row[j])))
        self.counters.updates_k += 1
        self.counters.update_work += 2 * self.d + 2
        self._after_update()

    def update_v(self, i: int, j: int, delta: float) -> None:
        """``V[i, j] += delta``: O(1), or O(d) the first time entry ``(i, j)`` changes since the rebuild.

        Parameters
        ----------
        i : int
            A row of ``V``.
        j : int
            A column of ``V``.
        delta : float
            The increment (finite, and keeping the value's sums finite).
        """
        i, j, delta = self._check_v(i, j, delta)
        slot = self._value_slot(i)
        self._Vn[i, j] += delta
        if slot is not None:
            self._Rnew[slot, j] = self._Vn[i, j]
        t = self._cpos.get(i)
        if t is not None:
            self._VC[t, j] = self._Vn[i, j]
        self.counters.updates_v += 1
        self.counters.update_work += 2
        self._after_update()

    def _key_slot(self, i: int) -> int:
        """The pending slot of key row ``i``, opened (current and snapshot row, current value row) if new."""
        t = self._cpos.get(i)
        if t is None:
            t = len(self._C)
            if t == len(self._VC):  # more distinct rows than n at construction (rows were appended)
                self._KC, self._VC, self._LM = _grow(self._KC), _grow(self._VC), _grow(self._LM)
            self._cpos[i] = t
            self._C.append(i)
            self._KC[2 * t] = self._Kn[i]
            self._KC[2 * t + 1] = self._Kn[i]
            self._VC[t] = self._Vn[i]
            self._pend_kmax = max(self._pend_kmax, float(np.abs(self._KC[2 * t]).max()))
            self.counters.update_work += 2 * self.d + self.dv
        return t

    def _value_slot(self, i: int) -> int | None:
        """The pending slot of value row ``i``, opened (snapshot key row, snapshot and current values) if new;
        ``None`` for a row appended since the rebuild (no snapshot term: its key slot carries its value)."""
        slot = self._vslot.get(i)
        if slot is None:
            t = self._cpos.get(i)
            if t is not None and self._LM[2 * t + 1] != 0.0:
                return None
            slot = self._nr
            if slot == len(self._KR):
                self._KR, self._Rold, self._Rnew = _grow(self._KR), _grow(self._Rold), _grow(self._Rnew)
            self._nr += 1
            self._vslot[i] = slot
            self._KR[slot] = self._Kn[i] if t is None else self._KC[2 * t + 1]  # the snapshot key row
            self._pend_kmax = max(self._pend_kmax, float(np.abs(self._KR[slot]).max()))
            self._Rold[slot] = self._Vn[i]
            self._Rnew[slot] = self._Vn[i]
            self.counters.update_work += self.d + 2 * self.dv
        return slot

    def update_k_row(self, i: int, delta) -> None:
        """``K[i] += delta``, a whole key row as one update: O(d + d_v), one pending entry (a key row changes one
        column of ``A``, as an entry update does).

        Parameters
        ----------
        i : int
            A row of ``K``.
        delta : sequence, array or tensor of length d
            The increment (finite, and keeping the logits finite).
        """
        i, delta = self._check_k_row(i, delta)
        t = self._key_slot(i)
        self._Kn[i] += delta
        self._KC[2 * t] = self._Kn[i]
        self._pend_kmax = max(self._pend_kmax, float(np.abs(self._KC[2 * t]).max()))
        self.counters.updates_k += 1
        self.counters.update_work += 3 * self.d
        self._after_update()

    def update_v_row(self, i: int, delta) -> None:
        """``V[i] += delta``, a whole value row as one update: O(d + d_v), one pending entry (a rank-one change
        ``A0[:, i] (V[i] - V0[i])`` of ``A V``).

        Parameters
        ----------
        i : int
            A row of ``V``.
        delta : sequence, array or tensor of length d_v
            The increment (finite, and keeping the value's sums finite).
        """
        i, delta = self._check_v_row(i, delta)
        slot = self._value_slot(i)
        self._Vn[i] += delta
        if slot is not None:
            self._Rnew[slot] = self._Vn[i]
        t = self._cpos.get(i)
        if t is not None:
            self._VC[t] = self._Vn[i]
        self.counters.updates_v += 1
        self.counters.update_work += 3 * self.dv
        self._after_update()

    def append_row(self, k_row, v_row) -> int:
        """Append a key row and its value row (``n`` grows by one): a new column of ``A``, i.e. one pending
        key row with no snapshot term. ``O(d + d_v)`` amortised (the buffers double when full, unless
        ``capacity`` is fixed), plus the amortised rebuild, as an update.

        Parameters
        ----------
        k_row : sequence, array or tensor of length d
            The new key (finite, keeping the logits finite).
        v_row : sequence, array or tensor of length d_v
            Its value (finite).

        Returns
        -------
        int
            The new row's index, ``n - 1``.
        """
        k, v = self._check_append(k_row, v_row)
        i = self._append_storage(k, v)
        t = self._key_slot(i)
        self._LM[2 * t + 1] = -math.inf  # no snapshot term: the column was zero at the rebuild
        self._masked = True
        self.counters.updates_k += 1
        self.counters.update_work += self.d + self.dv
        self._after_update()
        return i

    def delete_row(self, i) -> None:
        """Delete key row ``i`` and its value row (``n`` shrinks by one): its column of ``A`` becomes zero, i.e.
        one pending key row with no current term. The last row takes index ``i`` (attention does not depend on
        the order of the keys), so no other index changes. ``O(d + d_v)`` plus the amortised rebuild.

        Parameters
        ----------
        i : int
            A row of ``K`` (at least one row must remain).
        """
        i = self._check_delete(i)
        t = self._key_slot(i)
        self._LM[2 * t] = -math.inf  # no current term; the slot keeps the snapshot row and the last values
        self._masked = True
        del self._cpos[i]  # the slot and the value slot now belong to no index
        self._vslot.pop(i, None)
        last = self._delete_storage(i)
        if last != i:
            if last in self._cpos:
                self._cpos[i] = self._cpos.pop(last)
            if last in self._vslot:
                self._vslot[i] = self._vslot.pop(last)
        self.counters.updates_k += 1
        self.counters.update_work += self.d + self.dv
        self._after_update()

    def _after_update(self) -> None:
        self.pending += 1
        self.counters.max_pending = max(self.counters.max_pending, self.pending)
        if self.pending >= self.k:
            self.rebuild()

    def _pending_value_deltas(self, nr: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``V - V0``, ``|V| - |V0|`` and ``|V - V0|`` on the pending value rows, as ``(nr, d_v)`` matrices."""
        new, old = torch.from_numpy(self._Rnew[:nr]), torch.from_numpy(self._Rold[:nr])
        dV = new - old
        return dV, new.abs() - old.abs(), dV.abs()

    def _fold_operands(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The pending updates as two matrices: ``Kall`` stacks the current and snapshot key rows of ``C`` and
        the snapshot key rows of ``R`` (``(2|C| + |R|) x d``); ``W`` maps the terms ``[a_new - a_old, a_R,
        a_new + a_old]`` of one query row to ``[dM, dH, dEM, ds, dES]`` (``(2|C| + |R|) x (3 d_v + 2)``), so
        that one product folds everything (the error-bound columns get ``rho`` afterwards)."""
        nc, nr, dv = len(self._C), self._nr, self.dv
        Kall = torch.from_numpy(np.concatenate([self._KC[0 : 2 * nc : 2], self._KC[1 : 2 * nc : 2], self._KR[:nr]]))
        self._Lmask = None
        if self._masked:
            lm = self._LM
            self._Lmask = torch.from_numpy(
                np.concatenate([lm[0 : 2 * nc : 2], lm[1 : 2 * nc : 2], np.zeros(nr, lm.dtype)])
            )
        W = torch.zeros(2 * nc + nr, 3 * dv + 2, dtype=self.dtype)
        if nc:
            VC = torch.from_numpy(self._VC[:nc])
            VCa = VC.abs()
            W[:nc, :dv], W[:nc, dv : 2 * dv], W[:nc, 3 * dv] = VC, VCa, 1.0
            W[nc + nr :, 2 * dv : 3 * dv], W[nc + nr :, 3 * dv + 1] = VCa, 1.0
        if nr:
            dV, dVabs, dVmag = self._pending_value_deltas(nr)
            W[nc : nc + nr, :dv], W[nc : nc + nr, dv : 2 * dv], W[nc : nc + nr, 2 * dv : 3 * dv] = dV, dVabs, dVmag
        return Kall, W

    def _fold_terms(self, L: torch.Tensor, sh: torch.Tensor) -> torch.Tensor:
        """``[a_new - a_old, a_R, a_new + a_old]`` from the logits ``L = q Kall^T`` and the shifts."""
        nc = len(self._C)
        E = torch.exp(L - sh[:, None])
        if not nc:
            return E
        an, ao = E[:, :nc], E[:, nc : 2 * nc]
        return torch.cat([an - ao, E[:, 2 * nc :], an + ao], dim=1)

    def rebuild(self) -> None:
        """Fold the pending updates into ``M`` and ``s`` with rectangular products, in row blocks.

        ``M += (A_new[:, C] - A_old[:, C]) V[C] + A_old[:, R] (V - V0)[R]`` and ``s += (A_new - A_old)[:, C] 1``,
        where ``A_old`` uses the snapshot key rows; the per-row shift may rise here (``M``, ``s`` rescaled).
        ``H`` and the error bounds are folded alongside, in the same product; rows whose bound exceeds ``rtol``
        are then recomputed from scratch (``counters.repairs``). Cost ``O(m k (d + d_v))`` plus
        ``O(n (d + d_v))`` per repaired row.
        """
        nc, nr = len(self._C), self._nr
        bad: list[torch.Tensor] = []
        if nc or nr:
            Kall, W = self._fold_operands()
            KallT = Kall.T.contiguous()
            kmax, p, u, dv = self._pend_kmax, nc + nr, self._u, self.dv
            b = self._block(2 * (2 * nc + nr) + 3 * dv)
            for lo in range(0, self.m, b):
                hi = min(lo + b, self.m)
                sh = self.shift[lo:hi]
                M, H, EM = self.M[lo:hi], self.H[lo:hi], self.EM[lo:hi]
                s, ES = self.s[lo:hi], self.ES[lo:hi]
                L = self.Q[lo:hi] @ KallT
                if self._Lmask is not None:
                    L += self._Lmask
                if nc:
                    new_sh = torch.maximum(sh, L[:, :nc].max(dim=1).values - self._headroom)
                    if bool((new_sh > sh).any()):
                        scale = torch.exp(sh - new_sh)
                        for arr in (M, H, EM):
                            arr *= scale[:, None]
                        s *= scale
                        ES *= scale
                        sh.copy_(new_sh)
                rho = self._rho(self._qnorm[lo:hi], sh, kmax, p)
                Y = self._fold_terms(L, sh) @ W
                M += Y[:, :dv]
                H += Y[:, dv : 2 * dv]
                s += Y[:, 3 * dv]
                EM.addcmul_(rho[:, None], Y[:, 2 * dv : 3 * dv]).add_(H, alpha=u)
                ES.addcmul_(rho, Y[:, 3 * dv + 1]).add_(s.abs(), alpha=u)
                ok = (ES <= self.rtol * (s - ES)) & (EM <= self.rtol * (H - EM)).all(dim=1)
                if not bool(ok.all()):
                    bad.append(torch.nonzero(~ok).flatten() + lo)
            self.counters.rebuild_work += self.m * (2 * nc + nr) * (self.d + 3 * self.dv + 3)
        self.counters.rebuilds += 1
        self._clear_pending()
        if bad:
            rows = torch.cat(bad)
            self._exact_rows(rows)  # the snapshot is now the current K and V
            self.counters.repairs += len(rows)
            self.counters.repair_work += len(rows) * self.n * (self.d + 2 * self.dv + 1) + self.n * (self.d + self.dv)
        if self.refresh_every is not None and self.counters.rebuilds % self.refresh_every == 0:
            self.counters.rebuild_work += self._init_snapshot()

    def _clear_pending(self) -> None:
        self._C.clear()
        self._cpos.clear()
        self._vslot.clear()
        self._nr = 0
        self._LM[:] = 0.0
        self._masked = False
        self._pend_kmax = 0.0
        self.pending = 0

    # ---------------------------------------------------------------------------------------- queries
    def query(self, i: int, j: int) -> float:
        """``B[i, j]`` exactly, in ``O((|C| + |R|) d)`` work: at most ``k d`` multiply-adds.

        When the pending corrections cancel against the snapshot beyond the precision guard's bound, the row
        is computed from scratch instead (``O(n d)``, ``counters.fallbacks``).

        Parameters
        ----------
        i : int
            A row of ``Q``.
        j : int
            A column of ``V``.

        Returns
        -------
        float
        """
        i, j = self._check_q(i, j)
        q = self._Qn[i]
        sh = float(self._shn[i])
        num, den = float(self._Mn[i, j]), float(self._sn[i])
        h, em, es = float(self._Hn[i, j]), float(self._EMn[i, j]), float(self._ESn[i])
        nc, nr = len(self._C), self._nr
        u = self._u
        if nc or nr:
            if nc:
                logits = self._KC[: 2 * nc] @ q
                if self._masked:
                    logits += self._LM[: 2 * nc]
                top = float(logits[0::2].max())
                if top - sh > self._headroom:  # raise the shift for this query only
                    scale = math.exp(sh - top)
                    num, den, h, em, es, sh = num * scale, den * scale, h * scale, em * scale, es * scale, top
            rho = min(
                1.0,
                u * (2.0 * self.d * self._pend_kmax * float(self._qnn[i]) + abs(sh) + 2.0 * math.sqrt(nc + nr) + 4.0),
            )
            if nc:
                e = np.exp(logits - sh)
                an, ao = e[0::2], e[1::2]
                da = an - ao
                vc = self._VC[:nc, j]
                vca = np.abs(vc)
                num += float(da @ vc)
                h += float(da @ vca)
                em += rho * float((an + ao) @ vca)
                den += float(da.sum())
                es += rho * float((an + ao).sum())
            if nr:
                ar = np.exp(self._KR[:nr] @ q - sh)
                new, old = self._Rnew[:nr, j], self._Rold[:nr, j]
                dv_ = new - old
                num += float(ar @ dv_)
                h += float(ar @ (np.abs(new) - np.abs(old)))
                em += rho * float(ar @ np.abs(dv_))
            em += u * (abs(num) + h)
            es += u * abs(den)
        self.counters.add_query(nc * (2 * self.d + 5) + nr * (self.d + 4) + 1)
        if es <= self.rtol * (den - es) and em <= self.rtol * (h - em):
            return num / den
        return self._exact_entry(i, j)

    def _exact_entry(self, i: int, j: int) -> float:
        logits = self._Kn @ self._Qn[i]
        a = np.exp(logits - logits.max())
        self.counters.fallbacks += 1
        self.counters.repair_work += self.n * (self.d + 2)
        return float(a @ self._Vn[:, j]) / float(a.sum())

    def query_row(self, i: int) -> torch.Tensor:
        """``B[i, :]`` exactly, in ``O(|C| (d + d_v) + |R| d)`` work (or ``O(n (d + d_v))`` on a fallback).

        Parameters
        ----------
        i : int
            A row of ``Q``.

        Returns
        -------
        torch.Tensor
            Length ``d_v``.
        """
        i = check_index("i", i, self.m)
        nc, nr = len(self._C), self._nr
        self.counters.add_query(nc * (2 * self.d + 3 * self.dv + 2) + nr * (self.d + 3 * self.dv) + self.dv)
        q = self._Qn[i]
        sh = float(self._shn[i])
        num, h, em = self._Mn[i].copy(), self._Hn[i].copy(), self._EMn[i].copy()
        den, es = float(self._sn[i]), float(self._ESn[i])
        u = self._u
        if nc or nr:
            if nc:
                logits = self._KC[: 2 * nc] @ q
                if self._masked:
                    logits += self._LM[: 2 * nc]
                top = float(logits[0::2].max())
                if top - sh > self._headroom:  # raise the shift for this query only
                    scale = math.exp(sh - top)
                    num *= scale
                    h *= scale
                    em *= scale
                    den, es, sh = den * scale, es * scale, top
            rho = min(
                1.0,
                u * (2.0 * self.d * self._pend_kmax * float(self._qnn[i]) + abs(sh) + 2.0 * math.sqrt(nc + nr) + 4.0),
            )
            if nc:
                e = np.exp(logits - sh)
                an, ao = e[0::2], e[1::2]
                da = an - ao
                vc = self._VC[:nc]
                vca = np.abs(vc)
                num += da @ vc
                h += da @ vca
                em += rho * ((an + ao) @ vca)
                den += float(da.sum())
                es += rho * float((an + ao).sum())
            if nr:
                ar = np.exp(self._KR[:nr] @ q - sh)
                new, old = self._Rnew[:nr], self._Rold[:nr]
                dv_ = new - old
                num += ar @ dv_
                h += ar @ (np.abs(new) - np.abs(old))
                em += rho * (ar @ np.abs(dv_))
            em += u * (np.abs(num) + h)
            es += u * abs(den)
        if es <= self.rtol * (den - es) and bool((em <= self.rtol * (h - em)).all()):
            return torch.from_numpy(num / den)
        logits = self._Kn @ q
        a = np.exp(logits - logits.max())
        self.counters.fallbacks += 1
        self.counters.repair_work += self.n * (self.d + self.dv + 1)
        return torch.from_numpy((a @ self._Vn) / a.sum())

    def to_dense(self) -> torch.Tensor:
        """The whole ``B`` from ``M``, ``s`` and the pending corrections (row blocks; nothing is folded).

        Returns
        -------
        torch.Tensor
            ``(m, d_v)``.
        """
        b = self._block(2 * len(self._C) + self._nr + 3 * self.dv)
        return torch.cat([self._rows(slice(lo, min(lo + b, self.m))) for lo in range(0, self.m, b)])

    def _rows(self, rows: slice) -> torch.Tensor:
        nc, nr = len(self._C), self._nr
        q = self.Q[rows]
        sh = self.shift[rows].clone()
        num, h, em = self.M[rows].clone(), self.H[rows].clone(), self.EM[rows].clone()
        den, es = self.s[rows].clone(), self.ES[rows].clone()
        u, dv = self._u, self.dv
        if nc or nr:
            Kall, W = self._fold_operands()
            L = q @ Kall.T
            if self._Lmask is not None:
                L = L + self._Lmask
            if nc:
                new_sh = torch.maximum(sh, L[:, :nc].max(dim=1).values - self._headroom)
                scale = torch.exp(sh - new_sh)
                for arr in (num, h, em):
                    arr *= scale[:, None]
                den *= scale
                es *= scale
                sh = new_sh
            rho = self._rho(self._qnorm[rows], sh, self._pend_kmax, nc + nr)
            Y = self._fold_terms(L, sh) @ W
            num += Y[:, :dv]
            h += Y[:, dv : 2 * dv]
            den += Y[:, 3 * dv]
            em += rho[:, None] * Y[:, 2 * dv : 3 * dv] + u * (num.abs() + h)
            es += rho * Y[:, 3 * dv + 1] + u * den.abs()
        out = num / den[:, None]
        ok = (es <= self.rtol * (den - es)) & (em <= self.rtol * (h - em)).all(dim=1)
        if not bool(ok.all()):
            badr = torch.nonzero(~ok).flatten()
            out[badr] = blocked_attention(q[badr], self.K, self.V)
            self.counters.fallbacks += len(badr)
            self.counters.repair_work += len(badr) * self.n * (self.d + self.dv + 1)
        return out
