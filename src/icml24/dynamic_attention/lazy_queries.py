"""How :class:`~.structure.DynamicAttention` answers queries: the snapshot plus the pending corrections.

A query reads ``M``, ``s`` (and, for the precision guard, ``H`` and the error bounds) at its row and adds the
corrections of the pending key rows ``C`` and value rows ``R``, in ``O((|C| + |R|) d)`` work; when they cancel
against the snapshot beyond the guard's bound, the row is computed from scratch instead (``counters.fallbacks``).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .checks import check_index
from .reference import blocked_attention

__all__: list[str] = []  # a part of DynamicAttention: nothing here to import on its own


class LazyQueries:
    """The query methods of :class:`~.structure.DynamicAttention`.

    A part of that class, not usable alone: it reads the snapshot (``M``, ``s``, ``shift``, ``H``, ``EM``, ``ES``
    and their numpy views), the pending buffers and the fold of :meth:`~.structure.DynamicAttention.rebuild`.
    """

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
