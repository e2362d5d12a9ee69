"""Argument checks shared by the gnn_certify modules: tensors or arrays to numpy, networks, spaces, modes."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from ..errors import InputError
from ..validation import check_array


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


def check_network(net: Any, name: str = "net"):
    """Refuse anything but a :class:`~icml24.gnn_certify.network.SageNetwork`.

    Parameters
    ----------
    net : object
    name : str

    Returns
    -------
    SageNetwork
    """
    from .network import SageNetwork

    if not isinstance(net, SageNetwork):
        hint = "read a PyG model with network_from_module, or a JSON model with network_from_json"
        raise InputError(f"{name} must be a SageNetwork, got {type(net).__name__}", hint)
    return net


def check_space(space: Any, net=None, name: str = "space"):
    """Refuse anything but an :class:`~icml24.gnn_certify.space.AttackSpace` (matching ``net``'s features).

    Parameters
    ----------
    space : object
    net : SageNetwork, optional
    name : str

    Returns
    -------
    AttackSpace
    """
    from .space import AttackSpace

    if not isinstance(space, AttackSpace):
        raise InputError(f"{name} must be an AttackSpace, got {type(space).__name__}", "build it with build_space")
    if net is not None and space.x_lb.shape[1] != net.in_features:
        raise InputError(
            f"{name} has {space.x_lb.shape[1]} features but the network takes {net.in_features}",
            "build the space from this network's data",
        )
    return space


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
    from ..validation import check_int

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
