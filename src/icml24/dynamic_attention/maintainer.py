"""What every attention maintainer shares: the base API, its storage of ``K`` and ``V``, and its work counters.

The problem (Definition 1.2 of van den Brand, Song, Zhou, arXiv 2304.02207): ``Q`` fixed, ``K`` and ``V`` updated
entrywise; maintain ``B = D^{-1} exp(Q K^T) V`` with ``D = diag(exp(Q K^T) 1)``. The input checks are in
:mod:`.checks`, the dense reference in :mod:`.reference`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_int
from .checks import (  # noqa: F401 - importable from here as before
    EXP_HEADROOM,
    ROWS_MAX,
    UNIT_ROUNDOFF,
    as_float64,
    as_matrix,
    check_delta,
    check_index,
    check_qkv,
    check_tau,
    magnitude_limits,
)
from .reference import attention, blocked_attention  # noqa: F401 - importable from here as before

__all__ = ["WorkCounters", "AttentionMaintainer"]


@dataclass
class WorkCounters:
    """Work done by a maintainer, in scalar multiply-adds (or entries read/written where nothing is
    multiplied), so that costs can be compared without timers.

    ``init_work`` counts the preprocessing (building the first snapshot); ``update_work`` the updates
    themselves; ``rebuild_work`` the rebuilds they trigger (amortised over the updates, with ``update_work``);
    ``query_work`` the queries, ``max_query_work`` the worst single query.

    Parameters
    ----------
    updates_k, updates_v, queries, rebuilds : int
        Operations counted.
    update_work, rebuild_work, query_work, max_query_work, init_work : int
        Multiply-adds, as above.
    max_pending : int
        The most updates pending at once.
    repairs : int
        Rows of the snapshot recomputed from scratch because their maintained sums lost precision.
    fallbacks : int
        Queries answered by recomputing their row exactly, because the pending corrections cancelled.
    repair_work : int
        Multiply-adds of those recomputations.
    """

    updates_k: int = 0
    updates_v: int = 0
    queries: int = 0
    rebuilds: int = 0
    update_work: int = 0
    rebuild_work: int = 0
    query_work: int = 0
    max_query_work: int = 0
    max_pending: int = 0
    init_work: int = 0
    repairs: int = 0
    fallbacks: int = 0
    repair_work: int = 0

    @property
    def updates(self) -> int:
        return self.updates_k + self.updates_v

    @property
    def amortized_update_work(self) -> float:
        return (self.update_work + self.rebuild_work + self.repair_work) / self.updates if self.updates else 0.0

    @property
    def mean_query_work(self) -> float:
        return self.query_work / self.queries if self.queries else 0.0

    def add_query(self, work: int) -> None:
        """Count one query and its work.

        Parameters
        ----------
        work : int
            Multiply-adds of the query; added to ``query_work`` and kept in ``max_query_work`` when the largest.
        """
        self.queries += 1
        self.query_work += work
        self.max_query_work = max(self.max_query_work, work)

    def as_dict(self) -> dict[str, float]:
        """The counters as floats, with ``amortized_update_work`` and ``mean_query_work`` added.

        Returns
        -------
        dict of str to float
        """
        out = {k: float(v) for k, v in asdict(self).items()}
        out["amortized_update_work"] = self.amortized_update_work
        out["mean_query_work"] = self.mean_query_work
        return out


class AttentionMaintainer:
    """The common interface: ``update_k``, ``update_v`` (and their ``_row`` forms), ``append_row``,
    ``delete_row``, ``query``, ``query_row``, ``to_dense``.

    ``Q`` is ``m x d`` (fixed), ``K`` is ``n x d`` and ``V`` is ``n x d_v``; the paper has ``m = n`` and
    ``d_v = d``. Subclasses maintain ``B = D^{-1} exp(Q K^T) V`` under entry updates of ``K`` and ``V``.

    Parameters
    ----------
    Q : (m, d) matrix
        Fixed queries (tensor, numpy array or nested lists; copied).
    K : (n, d) matrix
        Keys, updated entrywise with :meth:`update_k`.
    V : (n, d_v) matrix
        Values, updated entrywise with :meth:`update_v`.
    dtype : torch.float32 or torch.float64, optional
        Default: the dtype of ``Q`` (integers become float64).
    capacity : int, optional
        A fixed number of rows, beyond which :meth:`append_row` is refused; default: grow as needed.
    """

    def __init__(self, Q, K, V, *, dtype: torch.dtype | None = None, capacity: int | None = None) -> None:
        self.Q, K, V = check_qkv(Q, K, V, dtype)
        capacity = check_int(capacity, "capacity", min_val=1, max_val=ROWS_MAX, allow_none=True)
        if capacity is not None and capacity < K.shape[0]:
            raise InputError(
                f"capacity={capacity} is below the {K.shape[0]} rows of K", "pass capacity >= len(K), or None"
            )
        self.capacity = capacity
        self.m, self.d = self.Q.shape
        self.n, self.dv = V.shape
        self.dtype = self.Q.dtype
        self._Qn = self.Q.numpy()
        # K and V live in buffers with room to append (fixed size with `capacity`, else doubled when full)
        room = capacity if capacity is not None else self.n
        self._Kbuf = torch.empty(room, self.d, dtype=self.dtype)
        self._Vbuf = torch.empty(room, self.dv, dtype=self.dtype)
        self._Kbuf[: self.n], self._Vbuf[: self.n] = K, V
        self._kbound, vbound = magnitude_limits(self.Q, self.n)
        self._vbound_1 = vbound * self.n  # the value bound for one key: it scales as 1 / n (O(1) per resize)
        self._set_views()
        self.counters = WorkCounters()

    def _set_views(self) -> None:
        """``K``, ``V`` (the live rows of the buffers), their numpy views and the magnitude limits for ``n``."""
        self.K, self.V = self._Kbuf[: self.n], self._Vbuf[: self.n]
        # numpy views of the same memory, for cheap scalar reads and writes (torch indexing costs ~10 us)
        self._Kn, self._Vn = self.K.numpy(), self.V.numpy()
        self._vbound = self._vbound_1 / self.n

    @property
    def K_numpy(self) -> np.ndarray:
        """The current ``K`` as a read-only numpy array (a view of the same memory, no copy).

        Read a row with ``m.K_numpy[i]`` (e.g. to compute the increment that replaces it); change ``K`` only
        through the update methods. The view is of the rows at the time of reading: take it again after
        :meth:`append_row` or :meth:`delete_row`.
        """
        view = self._Kn.view()
        view.flags.writeable = False
        return view

    @property
    def V_numpy(self) -> np.ndarray:
        """The current ``V`` as a read-only numpy array (a view of the same memory, no copy); see :attr:`K_numpy`."""
        view = self._Vn.view()
        view.flags.writeable = False
        return view

    # -- appending and deleting rows (n changes)
    def _check_append(self, k_row, v_row) -> tuple[np.ndarray, np.ndarray]:
        if self.capacity is not None and self.n >= self.capacity:
            raise InputError(
                f"k_row cannot be appended: the structure is full ({self.n} rows, capacity={self.capacity})",
                "delete a row first, or build it with a larger capacity (or capacity=None)",
            )
        k = self._check_vector(k_row, "k_row", "K", self.d, self._kbound)
        v = self._check_vector(v_row, "v_row", "V", self.dv, self._vbound_1 / (self.n + 1))
        return k, v

    def _check_delete(self, i) -> int:
        i = check_index("i", i, self.n)
        if self.n == 1:
            raise InputError("i: cannot delete the only row of K and V (attention needs a key)", "append one first")
        return i

    def _append_storage(self, k: np.ndarray, v: np.ndarray) -> int:
        """Write the checked row at index ``n`` (doubling the buffers when full); return that index."""
        if self.n == self._Kbuf.shape[0]:
            room = 2 * self.n
            Kb, Vb = torch.empty(room, self.d, dtype=self.dtype), torch.empty(room, self.dv, dtype=self.dtype)
            Kb[: self.n], Vb[: self.n] = self.K, self.V
            self._Kbuf, self._Vbuf = Kb, Vb
        i = self.n
        self._Kbuf.numpy()[i], self._Vbuf.numpy()[i] = k, v
        self.n += 1
        self._set_views()
        return i

    def _delete_storage(self, i: int) -> int:
        """Swap-remove row ``i``: the last row moves to index ``i``; return the last row's old index."""
        last = self.n - 1
        if i != last:
            self._Kn[i], self._Vn[i] = self._Kn[last], self._Vn[last]
        self.n -= 1
        self._set_views()
        return last

    def append_row(self, k_row, v_row) -> int:
        """Append a key row and its value row (``n`` grows by one); here ``O(d + d_v)`` amortised.

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
        self.counters.updates_k += 1
        self.counters.update_work += self.d + self.dv
        return i

    def delete_row(self, i) -> None:
        """Delete key row ``i`` and its value row (``n`` shrinks by one). The last row takes index ``i``
        (attention does not depend on the order of the keys), so no other index changes.

        Parameters
        ----------
        i : int
            A row of ``K`` (at least one row must remain).
        """
        i = self._check_delete(i)
        self._delete_storage(i)
        self.counters.updates_k += 1
        self.counters.update_work += self.d + self.dv

    # -- validation shared by all maintainers
    def _check_k(self, i, j, delta) -> tuple[int, int, float]:
        i, j, delta = check_index("i", i, self.n), check_index("j", j, self.d), check_delta(delta)
        new = float(self._Kn[i, j]) + delta
        if not abs(new) <= self._kbound:
            raise InputError(
                f"delta={delta:.3g} would make K[{i}, {j}] = {new:.3g}, whose logits overflow {self.dtype} "
                f"(|K| must stay below {self._kbound:.3g})",
                "use a smaller delta",
            )
        return i, j, delta

    def _check_v(self, i, j, delta) -> tuple[int, int, float]:
        i, j, delta = check_index("i", i, self.n), check_index("j", j, self.dv), check_delta(delta)
        new = float(self._Vn[i, j]) + delta
        if not abs(new) <= self._vbound:
            raise InputError(
                f"delta={delta:.3g} would make V[{i}, {j}] = {new:.3g}, beyond what {self.dtype} sums of "
                f"{self.n} values hold (|V| must stay below {self._vbound:.3g})",
                "use a smaller delta",
            )
        return i, j, delta

    def _check_vector(self, value, arg: str, name: str, size: int, bound: float, row: int | None = None) -> np.ndarray:
        """A finite vector of length ``size``, cast to the dtype, that keeps ``name`` within ``bound``: as a new
        row, or (``row`` given) added to row ``row`` of ``name``."""
        vec = as_float64(value, arg, f"a vector of {size} numbers")
        if vec.shape != (size,):
            raise InputError(
                f"{arg} must be a vector of length {size}, got shape {vec.shape}", f"one entry per column of {name}"
            )
        if not np.isfinite(vec).all():
            raise InputError(f"{arg} contains NaN or infinite entries")
        new = vec if row is None else (self._Kn if name == "K" else self._Vn)[row].astype(np.float64) + vec
        if not np.abs(new).max() <= bound:
            top = float(np.abs(new).max())
            what = f"put {top:.3g} in {name}" if row is None else f"make {name}[{row}] reach {top:.3g}"
            raise InputError(
                f"{arg} would {what}, beyond {bound:.3g} (overflow in {self.dtype})", f"use a smaller {arg}"
            )
        return vec.astype(np.float64 if self.dtype == torch.float64 else np.float32)

    def _check_k_row(self, i, delta) -> tuple[int, np.ndarray]:
        i = check_index("i", i, self.n)
        return i, self._check_vector(delta, "delta", "K", self.d, self._kbound, row=i)

    def _check_v_row(self, i, delta) -> tuple[int, np.ndarray]:
        i = check_index("i", i, self.n)
        return i, self._check_vector(delta, "delta", "V", self.dv, self._vbound, row=i)

    def _check_q(self, i, j) -> tuple[int, int]:
        return check_index("i", i, self.m), check_index("j", j, self.dv)

    # -- the API
    def update_k(self, i: int, j: int, delta: float) -> None:  # pragma: no cover - abstract
        """``K[i, j] += delta``.

        Parameters
        ----------
        i : int
            A row of ``K``.
        j : int
            A column of ``K``.
        delta : float
            The increment (finite).
        """
        raise NotImplementedError

    def update_v(self, i: int, j: int, delta: float) -> None:  # pragma: no cover - abstract
        """``V[i, j] += delta``.

        Parameters
        ----------
        i : int
            A row of ``V``.
        j : int
            A column of ``V``.
        delta : float
            The increment (finite).
        """
        raise NotImplementedError

    def update_k_row(self, i: int, delta) -> None:
        """``K[i] += delta`` for a whole key row (here: one entry update per column; subclasses do better).

        Parameters
        ----------
        i : int
            A row of ``K``.
        delta : sequence, array or tensor of length d
            The increment (finite, and keeping the logits finite).
        """
        i, delta = self._check_k_row(i, delta)
        for j in np.flatnonzero(delta):
            self.update_k(i, int(j), float(delta[j]))

    def update_v_row(self, i: int, delta) -> None:
        """``V[i] += delta`` for a whole value row (here: one entry update per column; subclasses do better).

        Parameters
        ----------
        i : int
            A row of ``V``.
        delta : sequence, array or tensor of length d_v
            The increment (finite, and keeping the value's sums finite).
        """
        i, delta = self._check_v_row(i, delta)
        for j in np.flatnonzero(delta):
            self.update_v(i, int(j), float(delta[j]))

    def query(self, i: int, j: int) -> float:  # pragma: no cover - abstract
        """``B[i, j]`` exactly.

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
        raise NotImplementedError

    def query_row(self, i: int) -> torch.Tensor:
        """Row ``B[i, :]``.

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
        return torch.tensor([self.query(i, j) for j in range(self.dv)], dtype=self.dtype)

    def to_dense(self) -> torch.Tensor:
        """The whole matrix ``B`` (here computed from the current ``K`` and ``V``).

        Returns
        -------
        torch.Tensor
            ``(m, d_v)``.
        """
        return blocked_attention(self.Q, self.K, self.V)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(m={self.m}, n={self.n}, d={self.d}, d_v={self.dv}, dtype={self.dtype})"
