"""Argument checks shared by the modules of :mod:`icml24.crebm` (private; the generic ones are in
:mod:`icml24.validation`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from ..validation import check_float


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'AEIOU' else 'a'} {noun}"


def check_sequence(value: Any, name: str, *, allow_empty: bool = False) -> list:
    """``value`` as a new list when it is a sized sequence (not a string, mapping or iterator).

    Parameters
    ----------
    value : object
    name : str
        The argument's name, for the message.
    allow_empty : bool, default False

    Returns
    -------
    list
    """
    if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__len__") or not hasattr(value, "__iter__"):
        raise InputError(f"{name} must be a sequence (a list or tuple), got {type(value).__name__}")
    out = list(value)
    if not out and not allow_empty:
        raise InputError(f"{name} is empty", "give at least one item")
    return out


def check_instances(value: Any, name: str, cls: type | tuple[type, ...], *, allow_empty: bool = False) -> list:
    """A sequence of ``cls`` objects as a new list (:func:`check_sequence`, then each item's type).

    Parameters
    ----------
    value : object
    name : str
    cls : type or tuple of types
    allow_empty : bool, default False

    Returns
    -------
    list
    """
    out = check_sequence(value, name, allow_empty=allow_empty)
    for i, x in enumerate(out):
        if not isinstance(x, cls):
            kind = " or ".join(c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,)))
            raise InputError(f"{name}[{i}] must be {_a(kind)}, got {type(x).__name__}")
    return out


def check_config(config: Any, cls: type, name: str = "config"):
    """``config``, or ``cls()`` for None (configs check their fields when constructed).

    Parameters
    ----------
    config : cls or None
    cls : type
    name : str, default "config"

    Returns
    -------
    cls
    """
    if config is None:
        return cls()
    if not isinstance(config, cls):
        raise InputError(f"{name} must be {_a(cls.__name__)} or None, got {type(config).__name__}")
    return config


def check_returned(value: Any, name: str, about: str) -> float:
    """The finite real number a user's callable ``name`` returned for ``about``, as a float.

    Parameters
    ----------
    value : object
    name : str
        The callable's argument name.
    about : str
        What it was called on, for the message.

    Returns
    -------
    float
    """
    try:
        return check_float(value, name)
    except InputError:
        raise InputError(f"{name} returned {str(value)[:40]!r} for {about[:60]}", "return a finite number") from None
