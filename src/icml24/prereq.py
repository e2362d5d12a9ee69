"""Prerequisites of an experiment (a data set, a GPU, memory), checked before any work.

A requirement is a short string declared on an :class:`~icml24.claims.Experiment`:

- ``"data:<name>"``: the data set ``<name>`` of :mod:`icml24.data.fetch` is under the data root;
- ``"gpu"``: a CUDA device is visible;
- ``"ram:<GiB>"``: the machine has at least that much memory;
- ``"never:<what>"``: something not to be had here (a data set that is not public, a model's weights).

:func:`missing` answers, for one requirement, ``None`` when it is met and otherwise one line saying what is
missing and how to get it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable


def _gpu(light: bool) -> bool:
    if light:  # `icml24 list` does not import torch: the driver's presence answers
        return Path("/proc/driver/nvidia/version").exists() or bool(os.environ.get("CUDA_VISIBLE_DEVICES"))
    import torch

    return bool(torch.cuda.is_available())


def _ram_gib() -> float:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return float("inf")


def _data_missing(name: str) -> str | None:
    from .data import fetch
    from .errors import InputError

    try:
        ds = fetch.get(name)
    except InputError:
        return f"the data set {name!r}, which icml24.data.fetch does not know"
    if fetch.is_present(name):
        return None
    if fetch.can_fetch(name):
        how = f"run 'icml24 data fetch {ds.name}'"
    else:
        how = ds.hint or "not fetchable: see 'icml24 data list'"
    return f"{ds.description} ({ds.name}: not in the data root; {how})"


def missing(need: str, *, light: bool = False) -> str | None:
    """``None`` when ``need`` is met here, else one line naming what is missing and how to get it.

    Parameters
    ----------
    need : str
        A requirement (see the module's docstring).
    light : bool, default False
        Answer without importing torch (for ``icml24 list``).

    Returns
    -------
    str or None
    """
    kind, _, arg = need.partition(":")
    if kind == "data":
        return _data_missing(arg)
    if kind == "gpu":
        return None if _gpu(light) else "a CUDA GPU (none is visible here)"
    if kind == "ram":
        have = _ram_gib()
        return None if have >= float(arg) else f"{float(arg):g} GiB of memory (this machine has {have:.0f} GiB)"
    if kind == "never":
        return arg
    return f"unknown requirement {need!r}"


def unmet(needs: Iterable[str], *, light: bool = False) -> list[str]:
    """The reasons of every requirement in ``needs`` that is not met, in order.

    Parameters
    ----------
    needs : iterable of str
    light : bool, default False
        Answer without importing torch.

    Returns
    -------
    list of str
    """
    return [r for r in (missing(n, light=light) for n in needs) if r]


__all__ = ["missing", "unmet"]
