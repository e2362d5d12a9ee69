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

This module holds the snapshot, its error bounds and the rebuild; the updates (the pending lists) are in
:mod:`.pending`, the queries in :mod:`.lazy_queries`, both parts of :class:`DynamicAttention`.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_float, check_int
from .checks import EXP_HEADROOM, UNIT_ROUNDOFF, check_tau
from .lazy_queries import LazyQueries
from .maintainer import AttentionMaintainer
from .pending import PendingUpdates

__all__ = ["DEFAULT_RTOL", "rebuild_period", "DynamicAttention"]

_BLOCK_ELEMENTS = 1 << 17  # entries of any m x (something) intermediate at a time: 1 MiB in float64, cache-sized
# The default repair threshold: the largest relative error bound a maintained sum may carry.
DEFAULT_RTOL = {torch.float64: 1e-10, torch.float32: 1e-4}


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


class DynamicAttention(PendingUpdates, LazyQueries, AttentionMaintainer):
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

    # ---------------------------------------------------------------------------------------- rebuilds
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
