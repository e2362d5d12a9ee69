"""How :class:`~.structure.DynamicAttention` records updates between rebuilds: the pending lists ``C`` and ``R``.

A key update (of an entry or a whole row) opens a pending key slot for its row: the current and snapshot key rows
and the current value row. A value update opens a pending value slot: the snapshot key row of its row and its
snapshot and current values. Appending a row opens a key slot with no snapshot term, deleting one a key slot with
no current term (masked to ``-inf``). Every update counts towards the rebuild after ``k`` of them.
"""

from __future__ import annotations

import math

import numpy as np

__all__: list[str] = []  # a part of DynamicAttention: nothing here to import on its own


def _grow(buf: np.ndarray) -> np.ndarray:
    """``buf`` with twice the rows (the new ones zero)."""
    out = np.zeros((2 * len(buf),) + buf.shape[1:], dtype=buf.dtype)
    out[: len(buf)] = buf
    return out


class PendingUpdates:
    """The update methods of :class:`~.structure.DynamicAttention` and its pending-slot bookkeeping.

    A part of that class, not usable alone: it reads the buffers that ``DynamicAttention.__init__`` allocates
    (``_C``, ``_cpos``, ``_KC``, ``_VC``, ``_LM``, ``_vslot``, ``_KR``, ``_Rold``, ``_Rnew``) and calls its
    :meth:`~.structure.DynamicAttention.rebuild`.
    """

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

    def _clear_pending(self) -> None:
        self._C.clear()
        self._cpos.clear()
        self._vslot.clear()
        self._nr = 0
        self._LM[:] = 0.0
        self._masked = False
        self._pend_kmax = 0.0
        self.pending = 0
