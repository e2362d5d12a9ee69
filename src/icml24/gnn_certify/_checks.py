"""Argument checks shared by the gnn_certify modules: tensors or arrays to numpy, class indices, modes (a network's
and a space's checks live beside their types: :func:`~icml24.gnn_certify.network.check_network`,
:func:`~icml24.gnn_certify.space.check_space`)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from ..errors import InputError
from ..validation import check_array, check_int

BUDGET_MAX = 2**31 - 1  # flip budgets and strengths (beyond any graph's slots; larger overflows numpy's int64 math)
TIME_MAX = 1e20  # seconds: SCIP's largest time limit
THREADS_MAX = 64  # SCIP's largest thread count


def as_array(value: Any, name: str, **kwargs) -> np.ndarray:
    """``value`` (numpy array, list or torch tensor) as a checked numpy copy (:func:`~icml24.validation.check_array`).

    Parameters
    ----------
    value : array-like or torch.Tensor
    name : str
        The argument's name.
    **kwargs
        ``ndim``, ``shape``, ``dtype``, ``finite``, ``allow_empty`` of ``check_array``.

    Returns
    -------
    numpy.ndarray
    """
    if value is None:
        raise InputError(f"{name} must be an array, got None")
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return check_array(value, name, **kwargs)


def check_class(value: Any, name: str, num_classes: int) -> int:
    """A class index in ``[0, num_classes)``.

    Parameters
    ----------
    value : object
    name : str
    num_classes : int

    Returns
    -------
    int
    """
    return check_int(value, name, min_val=0, max_val=num_classes - 1)


@contextlib.contextmanager
def kept_modes(model) -> Iterator[None]:
    """Restore the ``training`` flag of every submodule of ``model`` on exit (success or error).

    Parameters
    ----------
    model : torch.nn.Module

    Returns
    -------
    context manager
    """
    modes = [(m, m.training) for m in model.modules()]
    try:
        yield
    finally:
        for m, mode in modes:
            m.training = mode
