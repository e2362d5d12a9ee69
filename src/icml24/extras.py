"""Optional dependencies, grouped by ground into extras (``pip install 'icml24[graphs]'``).

A method that needs an extra calls :func:`require` before importing it, so that a missing package is one
``error:`` line naming the extra to install, never a traceback from deep inside an import.
"""

from __future__ import annotations

import importlib.util

from .errors import ICML24Error

EXTRAS: dict[str, str] = {
    "torch_geometric": "graphs",
    "pyscipopt": "graphs",
    "transformers": "lm",
    "tokenizers": "lm",
    "safetensors": "lm",
    "ray": "ray",
    "mlxtend": "images",
    "captum": "xai",
    "peft": "lm",
    "accelerate": "lm",
    "gguf": "lm",
    "ruptures": "video",
    "h5py": "video",
    "sentence_transformers": "video",
    "rdkit": "chem",
    "rdchiral": "chem",
    "datamol": "chem",
    "molbloom": "chem",
    "opacus": "federated",
    "torchao": "quant",
}


class MissingExtra(ICML24Error, ImportError):
    """An optional package is not installed; the message names the extra that brings it."""


def require(*modules: str, extra: str | None = None, what: str | None = None) -> None:
    """Raise :class:`MissingExtra` unless every module in ``modules`` can be imported.

    Parameters
    ----------
    *modules : str
        Importable module names, e.g. ``"torch_geometric"``.
    extra : str, optional
        The extra that installs them; looked up in :data:`EXTRAS` when not given.
    what : str, optional
        Who needs them, for the message (e.g. ``"seed_gnn"``).

    Raises
    ------
    MissingExtra
        ``"seed_gnn needs torch_geometric (pip install 'icml24[graphs]')"``.
    """
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        name = extra or EXTRAS.get(missing[0], "all")
        who = f"{what} needs" if what else "needs"
        raise MissingExtra(f"{who} {', '.join(missing)}, which is not installed", f"pip install 'icml24[{name}]'")


__all__ = ["EXTRAS", "MissingExtra", "require"]
