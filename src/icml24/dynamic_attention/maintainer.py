"""What every attention maintainer shares: input checks, the dense reference, work counters, the base API.

The problem (Definition 1.2 of van den Brand, Song, Zhou, arXiv 2304.02207): ``Q`` fixed, ``K`` and ``V`` updated
entrywise; maintain ``B = D^{-1} exp(Q K^T) V`` with ``D = diag(exp(Q K^T) 1)``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_float, check_int, check_tensor

# How far a logit may rise above its row's shift before the shift is raised: exp(64) ~ 6e27 in float64,
# exp(16) ~ 9e6 in float32, so that sums of n shifted terms times a value stay far from overflow.
EXP_HEADROOM = {torch.float64: 64.0, torch.float32: 16.0}
# Unit roundoff of each dtype.
UNIT_ROUNDOFF = {torch.float64: 2.0**-53, torch.float32: 2.0**-24}


def magnitude_limits(Q: torch.Tensor, n: int) -> tuple[float, float]:
    """The largest absolute key and value entries that keep every computation finite.

    Keys: ``|Q_i . K_c| <= max_i ||Q_i||_1 * max |K|`` must stay below an eighth of the dtype's largest
    number (logits, their differences and partial sums finite). Values: ``n * exp(headroom) * max |V|`` below
    a 64th of it (the shifted sums ``exp(Q K^T - shift) V`` finite).

    Parameters
    ----------
    Q : torch.Tensor
        ``(m, d)`` queries, already checked finite.
    n : int
        The number of keys.

    Returns
    -------
    (float, float)
        The bounds on ``|K|`` and ``|V|``.
    """
    fmax = float(torch.finfo(Q.dtype).max)
    qmax1 = float(Q.abs().sum(dim=1).max()) if Q.numel() else 0.0
    kbound = fmax / 8.0 / qmax1 if qmax1 > 0.0 else fmax
    vbound = fmax / 64.0 / math.exp(EXP_HEADROOM[Q.dtype]) / max(n, 1)
    return min(kbound, fmax), vbound


def as_matrix(name: str, value, dtype: torch.dtype | None = None) -> torch.Tensor:
    """A user's matrix as a new 2-D, finite, float32 or float64 CPU tensor (never shared with the input).

    Parameters
    ----------
    name : str
        The argument's name, used in messages.
    value : torch.Tensor, numpy.ndarray or nested lists
        A non-empty matrix of numbers (numpy arrays and lists are converted).
    dtype : torch.float32 or torch.float64, optional
        The dtype of the result; default the input's (integers become float64).

    Returns
    -------
    torch.Tensor

    Raises
    ------
    InputError
        Naming ``name``, when the value is not such a matrix.
    """
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(np.array(value, copy=True))
    elif not isinstance(value, torch.Tensor):
        try:
            value = torch.tensor(value)
        except (TypeError, ValueError, RuntimeError):
            raise InputError(f"{name} must be a 2-D array of numbers, got {type(value).__name__}") from None
    if value.dim() != 2 or value.shape[0] < 1 or value.shape[1] < 1:
        raise InputError(f"{name} must be a non-empty 2-D matrix, got shape {tuple(value.shape)}")
    target = dtype if dtype is not None else value.dtype
    if not value.is_floating_point() and dtype is None:
        target = torch.float64
    if target not in (torch.float32, torch.float64):
        raise InputError(f"{name} must be float32 or float64, got {target}", "pass dtype=torch.float64")
    # a cast can overflow (float64 to float32): then finite entries become infinite; without a cast the one check
    # of check_tensor (NaN or infinite entries) is the whole story
    cast = not (value.is_floating_point() and value.dtype == target)
    source_finite = not value.is_floating_point() or not cast or bool(torch.isfinite(value).all())
    value = value.detach().to(device="cpu", dtype=target).clone().contiguous()
    if cast and source_finite and not bool(torch.isfinite(value).all()):
        raise InputError(f"{name} has entries beyond the range of {target}", "scale it down or use torch.float64")
    return check_tensor(value, name, ndim=2)


def check_qkv(Q, K, V, dtype: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Validate ``Q (m x d)``, ``K (n x d)``, ``V (n x d_v)`` and cast them to one float dtype.

    Parameters
    ----------
    Q, K, V : matrices
        See :func:`as_matrix`.
    dtype : torch.float32 or torch.float64, optional
        Default: the dtype of ``Q``.

    Returns
    -------
    (Q, K, V) : tuple of torch.Tensor
        New tensors of one dtype.
    """
    if dtype is not None and dtype not in (torch.float32, torch.float64):
        raise InputError(f"dtype must be torch.float32 or torch.float64, got {dtype!r}", "pass dtype=torch.float64")
    Q = as_matrix("Q", Q, dtype)
    K = as_matrix("K", K, Q.dtype)
    V = as_matrix("V", V, Q.dtype)
    if K.shape[1] != Q.shape[1]:
        raise InputError(f"K has {K.shape[1]} columns but Q has {Q.shape[1]}", "Q and K must share the width d")
    if V.shape[0] != K.shape[0]:
        raise InputError(f"V has {V.shape[0]} rows but K has {K.shape[0]}", "K and V need one row per key")
    if not math.isfinite(float(Q.abs().sum(dim=1).max()) * 8.0):
        raise InputError(f"Q has rows too large for {Q.dtype}: their logits overflow", "scale Q down")
    kbound, vbound = magnitude_limits(Q, K.shape[0])
    kmax, vmax = float(K.abs().max()), float(V.abs().max())
    if kmax > kbound:
        raise InputError(
            f"K has entries up to {kmax:.3g}: with these queries the logits Q K^T overflow {Q.dtype} "
            f"(|K| must stay below {kbound:.3g})",
            "scale Q or K down",
        )
    if vmax > vbound:
        raise InputError(
            f"V has entries up to {vmax:.3g}: sums of {K.shape[0]} weighted values overflow {Q.dtype} "
            f"(|V| must stay below {vbound:.3g})",
            "scale V down",
        )
    return Q, K, V


def check_index(name: str, value, size: int) -> int:
    """An index in ``0 .. size - 1`` (integer tensors of one element accepted).

    Parameters
    ----------
    name : str
        The argument's name, used in messages.
    value : int
    size : int
        The length of the indexed axis.

    Returns
    -------
    int

    Notes
    -----
    A plain ``int`` in range returns at once: updates and queries call this twice each, and their own work is a
    few microseconds (:func:`icml24.validation.check_int` costs several).
    """
    if type(value) is int and 0 <= value < size:
        return value
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_floating_point():
        value = value.reshape(()).item()
    return check_int(value, name, min_val=0, max_val=size - 1)


def check_delta(delta) -> float:
    """An update's increment: a finite real number (one-element tensors accepted).

    Parameters
    ----------
    delta : float

    Returns
    -------
    float
    """
    if type(delta) is float and math.isfinite(delta):  # the hot path, as in check_index
        return delta
    if isinstance(delta, torch.Tensor) and delta.numel() == 1:
        delta = delta.reshape(()).item()
    return check_float(delta, "delta")


def check_tau(tau) -> float:
    """The trade-off parameter ``tau`` in ``(0, 1]``.

    Parameters
    ----------
    tau : float

    Returns
    -------
    float
    """
    return check_float(tau, "tau", min_val=0.0, max_val=1.0, include_boundaries="right")


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
        capacity = check_int(capacity, "capacity", min_val=1, allow_none=True)
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

    def _check_vector(self, value, arg: str, name: str, size: int, bound: float, base=None) -> np.ndarray:
        """A finite float64 vector of length ``size`` whose sum with ``base`` (if given) stays within ``bound``."""
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().numpy()
        try:
            vec = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"{arg} must be a vector of {size} numbers, got {type(value).__name__}") from None
        if vec.shape != (size,):
            raise InputError(
                f"{arg} must be a vector of length {size}, got shape {vec.shape}", f"one entry per column of {name}"
            )
        if not np.isfinite(vec).all():
            raise InputError(f"{arg} contains NaN or infinite entries")
        new = vec if base is None else base.astype(np.float64) + vec
        if not np.abs(new).max() <= bound:
            raise InputError(
                f"{arg} would put {float(np.abs(new).max()):.3g} in {name}, beyond {bound:.3g} "
                f"(overflow in {self.dtype})",
                f"use a smaller {arg}",
            )
        return vec.astype(np.float64 if self.dtype == torch.float64 else np.float32)

    def _check_row(self, i, delta, name: str, size: int, current: np.ndarray, bound: float):
        i = check_index("i", i, current.shape[0])
        if isinstance(delta, torch.Tensor):
            delta = delta.detach().cpu().numpy()
        try:
            vec = np.asarray(delta, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputError(f"delta must be a vector of {size} numbers, got {type(delta).__name__}") from None
        if vec.shape != (size,):
            raise InputError(
                f"delta must be a vector of length {size}, got shape {vec.shape}", f"one entry per column of {name}"
            )
        if not np.isfinite(vec).all():
            raise InputError("delta contains NaN or infinite entries")
        new = current[i].astype(np.float64) + vec
        if not np.abs(new).max() <= bound:
            raise InputError(
                f"delta would make {name}[{i}] reach {float(np.abs(new).max()):.3g}, beyond {bound:.3g} "
                f"(overflow in {self.dtype})",
                "use a smaller delta",
            )
        return i, vec.astype(current.dtype)

    def _check_k_row(self, i, delta):
        return self._check_row(i, delta, "K", self.d, self._Kn, self._kbound)

    def _check_v_row(self, i, delta):
        return self._check_row(i, delta, "V", self.dv, self._Vn, self._vbound)

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
