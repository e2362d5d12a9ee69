"""The input checks every attention maintainer shares, and the magnitude limits that keep its sums finite.

The problem (Definition 1.2 of van den Brand, Song, Zhou, arXiv 2304.02207): ``Q`` fixed, ``K`` and ``V`` updated
entrywise; maintain ``B = D^{-1} exp(Q K^T) V`` with ``D = diag(exp(Q K^T) 1)``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_float, check_int, check_tensor

__all__ = [
    "EXP_HEADROOM",
    "UNIT_ROUNDOFF",
    "magnitude_limits",
    "as_matrix",
    "check_qkv",
    "check_index",
    "check_delta",
    "check_tau",
]

# How far a logit may rise above its row's shift before the shift is raised: exp(64) ~ 6e27 in float64,
# exp(16) ~ 9e6 in float32, so that sums of n shifted terms times a value stay far from overflow.
EXP_HEADROOM = {torch.float64: 64.0, torch.float32: 16.0}
# Unit roundoff of each dtype.
UNIT_ROUNDOFF = {torch.float64: 2.0**-53, torch.float32: 2.0**-24}

ROWS_MAX = 2**31 - 1  # the most rows (capacity, pending updates) torch can allocate a buffer for


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
    if value.is_complex():  # a cast would drop the imaginary parts silently
        raise InputError(f"{name} must hold real numbers, got {value.dtype}")
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


def as_float64(value, name: str, expected: str) -> np.ndarray:
    """A user's vector or rows as a float64 numpy array (torch tensors on any device accepted); no shape check.

    Parameters
    ----------
    value : torch.Tensor, numpy.ndarray or array-like
    name : str
        The argument's name, used in the message.
    expected : str
        What it must be, for the message (``"a vector of 3 numbers"``).

    Returns
    -------
    numpy.ndarray

    Raises
    ------
    InputError
        ``"<name> must be <expected>, got <type>"`` when the value is not numbers.
    """
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be {expected}, got {type(value).__name__}") from None
