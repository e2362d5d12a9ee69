"""Argument checks at the public API boundary, in one place.

In the manner of scikit-learn's ``check_scalar`` and ``check_random_state``: each function takes the value
and the *name of the argument*, returns the value in the form the library works with, and raises
:class:`~icml24.errors.InputError` with a one-line message that names the argument and says what was
expected. Every method package uses these instead of its own helpers.

This module imports neither numpy nor torch at import time, so light modules (``paper.py``, ``cli.py``) may
use it; tensor and array checks import them when called.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Iterable, Sequence

from .errors import InputError

__all__ = [
    "check_scalar",
    "check_int",
    "check_float",
    "check_bool",
    "check_seed",
    "check_rng",
    "check_generator",
    "check_torch_generator",
    "check_choice",
    "check_device",
    "check_tensor",
    "check_array",
    "check_probability",
]


def _describe(value: Any) -> str:
    text = " ".join(repr(value).split())  # one line, whatever the repr (modules, tensors span several)
    return text if len(text) <= 60 else f"{type(value).__name__} ({text[:40]}...)"


def _unwrap_0d(value: Any) -> Any:
    """A 0-d numpy or torch scalar as a Python number; anything else unchanged."""
    module = type(value).__module__
    if module.startswith("numpy") and getattr(value, "ndim", None) == 0:
        return value.item()
    if module.startswith("torch") and hasattr(value, "dim") and callable(value.dim) and value.dim() == 0:
        return value.item()
    return value


def _range_text(min_val, max_val, include_boundaries: str) -> str:
    lo = "[" if include_boundaries in ("both", "left") else "("
    hi = "]" if include_boundaries in ("both", "right") else ")"
    a = "-inf" if min_val is None else f"{min_val:g}"
    b = "inf" if max_val is None else f"{max_val:g}"
    return f"{lo}{a}, {b}{hi}"


def check_scalar(
    value: Any,
    name: str,
    target_type: type | tuple[type, ...] = numbers.Real,
    *,
    min_val: float | None = None,
    max_val: float | None = None,
    include_boundaries: str = "both",
    allow_none: bool = False,
) -> Any:
    """Check a scalar's type, finiteness and range.

    Parameters
    ----------
    value : object
        The value the user passed. Booleans are refused unless ``target_type`` is ``bool``; 0-d numpy
        and torch scalars are accepted and converted to Python numbers.
    name : str
        The argument's name, used in the message.
    target_type : type or tuple of types, default ``numbers.Real``
        ``numbers.Integral`` for integers, ``numbers.Real`` for any real number.
    min_val, max_val : float, optional
        The bounds of the valid range.
    include_boundaries : {"both", "left", "right", "neither"}, default "both"
        Which bounds belong to the range.
    allow_none : bool, default False
        Return None for None instead of refusing it.

    Returns
    -------
    int or float
        ``int`` when ``target_type`` is integral, ``float`` otherwise.

    Raises
    ------
    InputError
        Naming ``name``, the value and the expected type or range.
    """
    if value is None and allow_none:
        return None
    if include_boundaries not in ("both", "left", "right", "neither"):
        raise ValueError(f"include_boundaries={include_boundaries!r}")
    types = target_type if isinstance(target_type, tuple) else (target_type,)
    integral = all(t in (int, numbers.Integral) for t in types)
    value = _unwrap_0d(value)
    if bool in types:
        if not isinstance(value, bool):
            raise InputError(f"{name} must be True or False, got {_describe(value)}")
        return value
    if isinstance(value, bool) or not isinstance(value, types):
        kind = "an integer" if integral else "a real number"
        raise InputError(f"{name} must be {kind}, got {_describe(value)}")
    try:
        value = int(value) if integral else float(value)
    except OverflowError:
        raise InputError(f"{name} is too large for a float, got {_describe(value)}") from None
    if not integral and not math.isfinite(value):
        raise InputError(f"{name} must be finite, got {value}")
    lo_ok = min_val is None or (value >= min_val if include_boundaries in ("both", "left") else value > min_val)
    hi_ok = max_val is None or (value <= max_val if include_boundaries in ("both", "right") else value < max_val)
    if not (lo_ok and hi_ok):
        raise InputError(f"{name} must be in {_range_text(min_val, max_val, include_boundaries)}, got {value}")
    return value


def check_int(
    value: Any, name: str, *, min_val: int | None = None, max_val: int | None = None, allow_none: bool = False
) -> int:
    """An integer in ``[min_val, max_val]`` (:func:`check_scalar` with ``numbers.Integral``).

    Parameters
    ----------
    value : object
    name : str
    min_val, max_val : int, optional
    allow_none : bool, default False

    Returns
    -------
    int
    """
    return check_scalar(value, name, numbers.Integral, min_val=min_val, max_val=max_val, allow_none=allow_none)


def check_float(
    value: Any,
    name: str,
    *,
    min_val: float | None = None,
    max_val: float | None = None,
    include_boundaries: str = "both",
    allow_none: bool = False,
) -> float:
    """A finite real number in the given range (:func:`check_scalar` with ``numbers.Real``).

    Parameters
    ----------
    value : object
    name : str
    min_val, max_val : float, optional
    include_boundaries : {"both", "left", "right", "neither"}, default "both"
    allow_none : bool, default False

    Returns
    -------
    float
    """
    return check_scalar(
        value,
        name,
        numbers.Real,
        min_val=min_val,
        max_val=max_val,
        include_boundaries=include_boundaries,
        allow_none=allow_none,
    )


def check_probability(value: Any, name: str, *, open_left: bool = False, open_right: bool = False) -> float:
    """A number in ``[0, 1]`` (bounds excluded as asked).

    Parameters
    ----------
    value : object
    name : str
    open_left, open_right : bool, default False
        Exclude 0, respectively 1.

    Returns
    -------
    float
    """
    bounds = {(False, False): "both", (True, False): "right", (False, True): "left", (True, True): "neither"}
    return check_float(value, name, min_val=0.0, max_val=1.0, include_boundaries=bounds[(open_left, open_right)])


def check_bool(value: Any, name: str) -> bool:
    """A plain ``bool`` (numpy and torch booleans accepted); integers and strings are refused.

    Parameters
    ----------
    value : object
    name : str

    Returns
    -------
    bool
    """
    value = _unwrap_0d(value)
    if not isinstance(value, bool):
        raise InputError(f"{name} must be True or False, got {_describe(value)}")
    return value


SEED_MAX = 2**64 - 1  # torch.Generator.manual_seed overflows beyond


def check_seed(seed: Any, name: str = "seed") -> int:
    """A seed: an integer in [0, 2^64 - 1], the range ``torch.Generator.manual_seed`` takes (numpy integers
    accepted, booleans refused).

    Parameters
    ----------
    seed : object
    name : str, default "seed"

    Returns
    -------
    int
        The seed as a Python ``int``. Use :func:`check_rng` or :func:`check_generator` for a generator.
    """
    seed = check_scalar(seed, name, numbers.Integral, min_val=0)
    if seed > SEED_MAX:
        raise InputError(f"{name} must be at most 2**64 - 1 (torch.Generator's range), got {seed}")
    return seed


def check_rng(seed: Any, name: str = "seed"):
    """A numpy ``Generator`` from a seed, or the ``Generator`` itself (like scikit-learn's ``check_random_state``).

    Parameters
    ----------
    seed : int or numpy.random.Generator
    name : str, default "seed"

    Returns
    -------
    numpy.random.Generator
    """
    import numpy as np

    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(check_seed(seed, name))


def check_generator(seed: Any, name: str = "seed", device: Any = "cpu"):
    """A ``torch.Generator`` from a seed, or the ``Generator`` itself.

    Parameters
    ----------
    seed : int or torch.Generator
    name : str, default "seed"
    device : str or torch.device, default "cpu"
        Where a new generator lives.

    Returns
    -------
    torch.Generator
    """
    import torch

    if isinstance(seed, torch.Generator):
        return seed
    g = torch.Generator(device=device)
    g.manual_seed(check_seed(seed, name))
    return g


def check_torch_generator(value: Any, name: str = "generator", *, optional: bool = True):
    """``value`` itself when it is a ``torch.Generator`` (or None, when ``optional``); else a one-line InputError.

    Unlike :func:`check_generator`, which makes a generator from a seed, this only checks what the caller passed.

    Parameters
    ----------
    value : torch.Generator or None
    name : str, default "generator"
    optional : bool, default True
        Whether None is accepted.

    Returns
    -------
    torch.Generator or None
    """
    import torch

    if isinstance(value, torch.Generator) or (optional and value is None):
        return value
    kind = "a torch.Generator or None" if optional else "a torch.Generator"
    raise InputError(f"{name} must be {kind}, got {type(value).__name__}")


def check_choice(value: Any, name: str, choices: Iterable[str], *, normalise: bool = True) -> str:
    """One of a fixed set of option names.

    Parameters
    ----------
    value : object
    name : str
    choices : iterable of str
    normalise : bool, default True
        Compare case-insensitively, with ``-`` read as ``_``.

    Returns
    -------
    str
        The matching entry of ``choices``.
    """
    options = list(choices)
    if isinstance(value, str):
        key = value.strip().lower().replace("-", "_") if normalise else value
        for c in options:
            if (c.lower().replace("-", "_") if normalise else c) == key:
                return c
    raise InputError(f"unknown {name} {_describe(value)}", f"choose one of: {', '.join(options)}")


def check_device(value: Any, name: str = "device"):
    """A torch device to run on: ``"cpu"``, ``"cuda"``, ``"cuda:N"``, a ``torch.device``, or ``"auto"`` (CUDA when
    present, else the CPU).

    Parameters
    ----------
    value : str or torch.device
    name : str, default "device"

    Returns
    -------
    torch.device
    """
    import torch

    what = f"{name} must be cpu, cuda, cuda:N or auto, got {_describe(value)}"
    if isinstance(value, str) and value == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(value)
    except (RuntimeError, TypeError, ValueError):
        raise InputError(what) from None
    if dev.type not in ("cpu", "cuda"):
        raise InputError(what)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"{name} {value}: no CUDA device is present here", f"use {name}='cpu'")
    return dev


def _shape_text(shape: Sequence[int | None]) -> str:
    return "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"


def _check_shape(actual: Sequence[int], name: str, ndim, shape, allow_empty: bool) -> None:
    if ndim is not None:
        dims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if len(actual) not in dims:
            want = " or ".join(str(d) for d in dims)
            raise InputError(f"{name} must have {want} dimensions, got shape {tuple(actual)}")
    if shape is not None:
        if len(actual) != len(shape) or any(s is not None and a != s for a, s in zip(actual, shape)):
            raise InputError(f"{name} must have shape {_shape_text(shape)}, got {tuple(actual)}")
    if not allow_empty and math.prod(actual) == 0:
        raise InputError(f"{name} is empty (shape {tuple(actual)})", "give at least one element")


def check_tensor(
    value: Any,
    name: str,
    *,
    ndim: int | Sequence[int] | None = None,
    shape: Sequence[int | None] | None = None,
    dtype: str | None = "float",
    finite: bool = True,
    allow_empty: bool = False,
    copy: bool = False,
):
    """A ``torch.Tensor`` of the expected rank, shape, kind and finiteness.

    Parameters
    ----------
    value : torch.Tensor
        Numpy arrays and nested lists are refused: the API speaks torch (convert with ``torch.as_tensor``).
    name : str
    ndim : int or sequence of int, optional
        Allowed numbers of dimensions.
    shape : sequence of int or None, optional
        The expected shape; None entries match any size.
    dtype : {"float", "integer", "bool", "any"} or None, default "float"
        The kind of entries. None or "any" accepts every dtype.
    finite : bool, default True
        Refuse NaN and infinite entries (floating tensors only).
    allow_empty : bool, default False
    copy : bool, default False
        Return a detached copy, so that later edits never reach the user's tensor.

    Returns
    -------
    torch.Tensor
    """
    import torch

    if not isinstance(value, torch.Tensor):
        raise InputError(
            f"{name} must be a torch.Tensor, got {type(value).__name__}", "convert it with torch.as_tensor"
        )
    _check_shape(tuple(value.shape), name, ndim, shape, allow_empty)
    kinds = {
        "float": value.is_floating_point(),
        "integer": not value.is_floating_point() and not value.is_complex() and value.dtype != torch.bool,
        "bool": value.dtype == torch.bool,
    }
    if dtype not in (None, "any"):
        if dtype not in kinds:
            raise ValueError(f"dtype={dtype!r}")
        if not kinds[dtype]:
            raise InputError(f"{name} must hold {dtype} entries, got dtype {value.dtype}")
    if finite and value.is_floating_point() and value.numel() and not bool(torch.isfinite(value).all()):
        raise InputError(f"{name} contains NaN or infinite entries")
    return value.detach().clone() if copy else value


def check_array(
    value: Any,
    name: str,
    *,
    ndim: int | Sequence[int] | None = None,
    shape: Sequence[int | None] | None = None,
    dtype: str | None = "float",
    finite: bool = True,
    allow_empty: bool = False,
):
    """A numpy array (lists and tuples converted) of the expected rank, shape, kind and finiteness.

    Parameters
    ----------
    value : array-like
    name : str
    ndim, shape, dtype, finite, allow_empty
        As in :func:`check_tensor`. With ``dtype="float"`` integer input is converted to float64.

    Returns
    -------
    numpy.ndarray
        A new array (never a view of the user's).
    """
    import numpy as np

    if dtype not in (None, "any", "float", "integer", "bool"):
        raise ValueError(f"dtype={dtype!r}")
    if type(value).__module__.startswith("torch"):
        raise InputError(f"{name} must be a numpy array, got {type(value).__name__}", "call .numpy() on it")
    try:
        arr = np.array(value, copy=True)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} is not an array: {exc}") from None
    if arr.dtype == object:
        raise InputError(f"{name} must be a numeric array, got ragged or non-numeric entries")
    _check_shape(arr.shape, name, ndim, shape, allow_empty)
    if dtype == "float":
        if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
            raise InputError(f"{name} must hold real numbers, got dtype {arr.dtype}")
        if arr.dtype.kind != "f":
            arr = arr.astype(np.float64)
    elif dtype == "integer":
        if arr.dtype.kind not in "iu":
            raise InputError(f"{name} must hold integers, got dtype {arr.dtype}")
    elif dtype == "bool":
        if arr.dtype.kind != "b":
            raise InputError(f"{name} must hold booleans, got dtype {arr.dtype}")
    if finite and arr.dtype.kind == "f" and arr.size and not np.isfinite(arr).all():
        raise InputError(f"{name} contains NaN or infinite entries")
    return arr
