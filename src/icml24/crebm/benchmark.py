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
from .world import RetroTarget
from .world_routes import canonical


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
        The benchmark's depth of the target (the planner's depth limit).
    """

    product: str
    materials: tuple[tuple[str, ...], ...]
    depth: int


def load_route_benchmark(path: str | os.PathLike) -> list[BenchmarkTask]:
    """Read a route-benchmark JSON file as the official ``load_dataset`` does.

    Parameters
    ----------
    path : str or os.PathLike
        A ``train_dataset.json``, ``valid_dataset.json`` or ``test_dataset.json``.

    Returns
    -------
    list of BenchmarkTask
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
    tasks = []
    for key, trees in data.items():
        try:
            first = trees["1"]["retro_routes"][0][0]
            product = canonical(first.split(">")[0])
            n = int(trees["num_reaction_trees"])
            mats = tuple(tuple(trees[str(i)]["materials"]) for i in range(1, n + 1))
            depth = int(trees["depth"])
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            raise DataError(
                f"{path}: entry {key!r} is not a route-benchmark record ({type(e).__name__}: {e})"
            ) from None
        if product is None:
            raise DataError(f"{path}: entry {key!r} has an unparsable product SMILES")
        tasks.append(BenchmarkTask(product, mats, depth))
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
    if isinstance(targets, (str, RetroTarget)) or not hasattr(targets, "__iter__"):
        raise InputError("targets must be a sequence of RetroTarget")
    out = {}
    for i, t in enumerate(targets):
        if not isinstance(t, RetroTarget):
            raise InputError(f"targets[{i}] must be a RetroTarget, got {type(t).__name__}")
        routes = [f"{s.product}>0>{'.'.join(s.reactants)}" for s in t.gt.steps]
        out[str(i)] = {
            "num_reaction_trees": 1,
            "depth": t.depth,
            "1": {"retro_routes": [routes], "materials": list(t.gt.starting_materials()), "depth": t.depth},
        }
    return out


__all__ = ["BenchmarkTask", "load_route_benchmark", "to_route_benchmark"]
