"""Reading the route benchmark of FusionRetro/CREBM (``train/valid/test_dataset.json``) and writing a world in it.

Each entry of the JSON maps a key to ``{"num_reaction_trees": n, "depth": d, "1": {"retro_routes": [[
"product>score>reactants", ...], ...], "materials": [...], "depth": d}, "2": {...}, ...}``; the target is the
product of the first reaction of the first tree (the official ``load_dataset``). The USPTO-derived files are not
shipped here; :func:`load_route_benchmark` reads them from a path the user gives.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Sequence

from ..errors import DataError, DataUnavailable, InputError
from ..validation import check_int
from ._checks import check_instances
from .world import RetroTarget
from .world_routes import check_smiles


@dataclass(frozen=True)
class BenchmarkTask:
    """One target of the route benchmark.

    Parameters
    ----------
    product : str
        Canonical SMILES of the target.
    materials : tuple of tuple of str
        The starting-material set of each ground-truth tree.
    depth : int
        The benchmark's depth of the target (the planner's depth limit), at least 1.

    Every field is checked when the task is made (valid SMILES, at least one non-empty set).
    """

    product: str
    materials: tuple[tuple[str, ...], ...]
    depth: int

    def __post_init__(self) -> None:
        check_smiles(self.product, "product")
        if not isinstance(self.materials, tuple) or not self.materials:
            raise InputError("materials must be a non-empty tuple of starting-material sets (one per tree)")
        for mats in self.materials:
            if not isinstance(mats, tuple) or not mats:
                raise InputError(f"materials must hold non-empty tuples of SMILES, got {str(mats)[:60]}")
            for m in mats:
                check_smiles(m, "materials")
        check_int(self.depth, "depth", min_val=1)


def load_route_benchmark(path: str | os.PathLike) -> list[BenchmarkTask]:
    """Read a route-benchmark JSON file as the official ``load_dataset`` does.

    Parameters
    ----------
    path : str or os.PathLike
        A ``train_dataset.json``, ``valid_dataset.json`` or ``test_dataset.json``.

    Returns
    -------
    list of BenchmarkTask

    Raises
    ------
    InputError
        ``path`` is not a file path, or is a folder.
    DataUnavailable
        The file does not exist.
    DataError
        The file is not JSON, holds no targets, or an entry is not a valid record (no tree, a depth below 1,
        a SMILES RDKit cannot parse), named in the message.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"path must be a file path, got {type(path).__name__}")
    path = os.fspath(path)
    if not isinstance(path, str) or not path.strip():
        raise InputError("path is empty", "pass the path of a route-benchmark JSON file")
    if os.path.isdir(path):
        raise InputError(f"path {path} is a folder", "pass the JSON file inside it, e.g. test_dataset.json")
    if not os.path.isfile(path):
        raise DataUnavailable(
            f"route benchmark file {path} does not exist",
            "get train/valid/test_dataset.json from the FusionRetro/CREBM repository and pass its path",
        )
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise DataError(f"{path} is not readable JSON: {e}".splitlines()[0]) from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected a JSON object of targets")
    if not data:
        raise DataError(f"{path}: holds no targets")
    tasks = []
    for key, trees in data.items():
        try:
            first = trees["1"]["retro_routes"][0][0]
            n = check_int(trees["num_reaction_trees"], "num_reaction_trees", min_val=1)
            mats = [trees[str(i)]["materials"] for i in range(1, n + 1)]
            if not all(isinstance(m, list) for m in mats):
                raise InputError("materials must be lists of SMILES")
            product = check_smiles(first.split(">")[0], "product")
            tasks.append(BenchmarkTask(product, tuple(tuple(m) for m in mats), trees["depth"]))
        except InputError as e:
            raise DataError(f"{path}: entry {key!r}: {e.one_line()}") from None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            raise DataError(
                f"{path}: entry {key!r} is not a route-benchmark record ({type(e).__name__}: {e})"
            ) from None
    return tasks


def to_route_benchmark(targets: Sequence[RetroTarget]) -> dict:
    """A world's targets in the route-benchmark JSON layout (the ground truth as tree ``"1"``).

    Parameters
    ----------
    targets : sequence of RetroTarget

    Returns
    -------
    dict
        JSON-serialisable, readable back by :func:`load_route_benchmark`.
    """
    if isinstance(targets, RetroTarget):
        raise InputError("targets must be a sequence of RetroTarget, got one RetroTarget", "wrap it in a list")
    out = {}
    for i, t in enumerate(check_instances(targets, "targets", RetroTarget)):
        routes = [f"{s.product}>0>{'.'.join(s.reactants)}" for s in t.gt.steps]
        out[str(i)] = {
            "num_reaction_trees": 1,
            "depth": t.depth,
            "1": {"retro_routes": [routes], "materials": list(t.gt.starting_materials()), "depth": t.depth},
        }
    return out


__all__ = ["BenchmarkTask", "load_route_benchmark", "to_route_benchmark"]
