"""Readers of the official artefacts (github.com/christopherhojny/SCIP-MPNN, ``data_experiments/``).

- ``model_<name>.json`` (written by the authors' training scripts, read by
  ``generate_instance_from_json.py``): ``[{"L": k}, layer_1, ..., layer_k]`` with ``{"layer": "sage",
  "in_channels", "out_channels", "w1" (root, [out][in]), "w2" (neighbour, [out][in]), "b", "activation"}``,
  ``{"layer": "add_pool"}`` and ``{"layer": "dense", "in_channels", "out_channels", "w", "b", "activation"}``.
- ``graph_<name>_<i>.gcinfo`` (``generate_basic_instance_files_graphclassification.py``): a line
  ``n m F C label``, then (when ``m > 0``) the ``m`` edge sources and the ``m`` edge targets, then one line per
  node with the indices of its features that are 1. ``label`` is the model's prediction, not the ground truth.
- ``graph_<name>_<i>.ncinfo`` (node classification): the same with a sixth header entry, the target node.

The official scripts treat the edge list of a ``.gcinfo`` file as undirected (``A[u][v] = A[v][u] = 1``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..data import data_root
from ..errors import DataUnavailable, InputError
from ..validation import check_int
from .models import module_from_network
from .network import GRAPH, NODE, DenseLayer, SageLayer, SageNetwork, check_shapes

SOURCE = "github.com/christopherhojny/SCIP-MPNN, data_experiments/ (Apache-2.0)"
MUTAG_GRAPHS = 188


@dataclass(frozen=True)
class GraphInstance:
    """One instance file (``.gcinfo`` / ``.ncinfo``).

    Parameters
    ----------
    data : torch_geometric.data.Data
        ``x`` (float32 [n, F], binary) and ``edge_index`` (the file's edge list).
    label : int
        The class the official model predicted (not the ground truth).
    num_classes : int
    node : int or None
        Node classification: the target node.
    path : pathlib.Path, optional
        Where it was read from.
    """

    data: object
    label: int
    num_classes: int
    node: int | None
    path: Path | None = None

    @property
    def edge_entries(self) -> int:
        return int(self.data.edge_index.shape[1])


def _path(value, name: str = "path") -> Path:
    """A file system path given as str or os.PathLike (not empty, no NUL byte)."""
    if isinstance(value, bool) or not isinstance(value, (str, os.PathLike)):
        raise InputError(f"{name} must be a str or os.PathLike, got {type(value).__name__}")
    text = os.fspath(value)
    if isinstance(text, bytes) or not text.strip() or "\0" in text:
        raise InputError(f"{name} must be a non-empty path, got {value!r}")
    return Path(text)


def _root(root) -> Path | None:
    if root is None:
        return None
    path = _path(root, "root")
    if path.exists() and not path.is_dir():
        raise InputError(f"root must be a directory (the data root), got the file {path}")
    return path


def _bad(path, what: str) -> InputError:
    return InputError(f"{path}: {what}", "see the .gcinfo / model JSON format in icml24.gnn_certify.io")


def _matrix(obj, rows: int, cols: int, path, name: str) -> np.ndarray:
    try:
        arr = np.asarray(obj, dtype=np.float64)
    except (TypeError, ValueError):
        raise _bad(path, f"{name} is not a numeric matrix") from None
    if arr.shape != (rows, cols) or not np.isfinite(arr).all():
        raise _bad(path, f"{name} must be a finite [{rows}][{cols}] matrix, got shape {arr.shape}")
    return arr


def _vector(obj, size: int, path, name: str) -> np.ndarray:
    try:
        arr = np.asarray(obj, dtype=np.float64)
    except (TypeError, ValueError):
        raise _bad(path, f"{name} is not a numeric vector") from None
    if arr.shape != (size,) or not np.isfinite(arr).all():
        raise _bad(path, f"{name} must have {size} finite entries, got shape {arr.shape}")
    return arr


def network_from_json(obj: object, path: str | os.PathLike = "<json>") -> SageNetwork:
    """The network of an official model JSON (already parsed), checked layer by layer.

    Parameters
    ----------
    obj : object
        The parsed JSON: ``[{"L": k}, layer_1, ..., layer_k]``.
    path : str or os.PathLike, default "<json>"
        Named in error messages.

    Returns
    -------
    SageNetwork

    Raises
    ------
    InputError
        Naming the file and what is malformed.
    """
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise InputError(f"path must be a str or os.PathLike (named in messages), got {type(path).__name__}")
    if not isinstance(obj, list) or not obj or not isinstance(obj[0], dict) or "L" not in obj[0]:
        raise _bad(path, 'expected a list starting with {"L": <number of layers>}')
    n_layers = obj[0]["L"]
    if not isinstance(n_layers, int) or n_layers != len(obj) - 1 or n_layers < 1:
        raise _bad(path, f"L = {n_layers!r} does not match the {len(obj) - 1} layers that follow")
    sage: list[SageLayer] = []
    dense: list[DenseLayer] = []
    pooled = False
    for i, layer in enumerate(obj[1:], start=1):
        if not isinstance(layer, dict) or "layer" not in layer:
            raise _bad(path, f"layer {i} is not an object with a 'layer' key")
        kind = layer["layer"]
        if kind == "sage":
            if pooled:
                raise _bad(path, f"layer {i}: a sage layer after add_pool")
            try:
                fi, fo = int(layer["in_channels"]), int(layer["out_channels"])
                relu = layer["activation"]
                w1, w2, b = layer["w1"], layer["w2"], layer["b"]
            except (KeyError, TypeError, ValueError):
                raise _bad(path, f"layer {i} (sage) needs in_channels, out_channels, w1, w2, b, activation") from None
            if not isinstance(relu, bool):
                raise _bad(path, f"layer {i}: activation must be true or false")
            sage.append(
                SageLayer(
                    _matrix(w1, fo, fi, path, f"layer {i} w1"),
                    _matrix(w2, fo, fi, path, f"layer {i} w2"),
                    _vector(b, fo, path, f"layer {i} b"),
                    relu,
                )
            )
        elif kind == "add_pool":
            if pooled or not sage:
                raise _bad(path, f"layer {i}: add_pool must follow the sage layers, once")
            pooled = True
        elif kind == "dense":
            if not pooled:
                raise _bad(path, f"layer {i}: a dense layer needs add_pool before it")
            try:
                fi, fo = int(layer["in_channels"]), int(layer["out_channels"])
                relu = layer["activation"]
            except (KeyError, TypeError, ValueError):
                raise _bad(path, f"layer {i} (dense) needs in_channels, out_channels, w, b, activation") from None
            if not isinstance(relu, bool):
                raise _bad(path, f"layer {i}: activation must be true or false")
            dense.append(
                DenseLayer(
                    _matrix(layer.get("w"), fo, fi, path, f"layer {i} w"),
                    _vector(layer.get("b"), fo, path, f"layer {i} b"),
                    relu,
                )
            )
        else:
            raise _bad(path, f"layer {i}: unsupported layer type {kind!r} (sage, add_pool, dense)")
    if not sage:
        raise _bad(path, "no sage layer")
    if pooled and not dense:
        raise _bad(path, "add_pool without a dense layer after it")
    net = SageNetwork(sage=tuple(sage), dense=tuple(dense), task=GRAPH if pooled else NODE)
    try:
        check_shapes(net)
    except InputError as exc:
        raise _bad(path, exc.message) from None
    return net


def load_model_json(path: str | os.PathLike) -> tuple[torch.nn.Module, SageNetwork]:
    """Read an official ``model_*.json``.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    model : torch.nn.Module
        A PyG module computing the network (float32, eval mode).
    net : SageNetwork
    """
    path = _path(path)
    if not path.is_file():
        raise InputError(f"path: model file {path} does not exist")
    try:
        obj = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _bad(path, f"not valid JSON ({type(exc).__name__}: {exc})") from None
    net = network_from_json(obj, path)
    return module_from_network(net), net


def _ints(tokens: list[str], path, what: str) -> list[int]:
    try:
        return [int(t) for t in tokens]
    except ValueError:
        raise _bad(path, f"{what} must be integers") from None


def read_instance(path: str | os.PathLike) -> GraphInstance:
    """Read a ``.gcinfo`` (graph classification) or ``.ncinfo`` (node classification) instance file.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    GraphInstance

    Raises
    ------
    InputError
        A missing or malformed file, naming the line that is wrong.
    """
    from torch_geometric.data import Data

    path = _path(path)
    if not path.is_file():
        raise InputError(f"path: instance file {path} does not exist")
    try:
        lines = path.read_text().split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise _bad(path, f"unreadable ({type(exc).__name__})") from None
    head = _ints(lines[0].split(), path, "the header")
    if len(head) not in (5, 6):
        raise _bad(path, "the first line must be 'n m F C label' (+ node for .ncinfo)")
    n, m, F, C, label = head[:5]
    node = head[5] if len(head) == 6 else None
    if n < 1 or m < 0 or F < 1 or C < 2 or not 0 <= label < C or (node is not None and not 0 <= node < n):
        raise _bad(path, f"inconsistent header {head}")
    row = 1
    if m > 0:
        if len(lines) < 3:
            raise _bad(path, "missing edge lines")
        first = _ints(lines[1].split(), path, "edge sources")
        second = _ints(lines[2].split(), path, "edge targets")
        if len(first) != m or len(second) != m:
            raise _bad(path, f"expected {m} edge sources and targets, got {len(first)} and {len(second)}")
        if min(first + second) < 0 or max(first + second) >= n:
            raise _bad(path, f"edge endpoints must be in [0, {n})")
        row = 3
    else:
        first, second = [], []
    if len(lines) < row + n:
        raise _bad(path, f"expected {n} feature lines, got {max(0, len(lines) - row)}")
    x = np.zeros((n, F), dtype=np.float32)
    for v in range(n):
        idx = _ints(lines[row + v].split(), path, f"features of node {v}")
        if any(i < 0 or i >= F for i in idx):
            raise _bad(path, f"feature index of node {v} outside [0, {F})")
        x[v, idx] = 1.0
    edge_index = torch.tensor([first, second], dtype=torch.long).reshape(2, -1)
    data = Data(x=torch.from_numpy(x), edge_index=edge_index)
    return GraphInstance(data=data, label=int(label), num_classes=int(C), node=node, path=path)


# ------------------------------------------------------------------------------------------ MUTAG
def mutag_dir(root: str | os.PathLike | None = None) -> Path:
    """Where the official MUTAG artefacts live: ``<data root>/scip_mpnn/MUTAG``.

    Parameters
    ----------
    root : str or os.PathLike, optional
        The data root (default ``$ICML24_DATA``, else ``~/.cache/icml24``).

    Returns
    -------
    pathlib.Path
    """
    return data_root(_root(root)) / "scip_mpnn" / "MUTAG"


def mutag_model(root: str | os.PathLike | None = None) -> tuple[torch.nn.Module, SageNetwork]:
    """The paper's trained MUTAG model (``model_MUTAG.json``) from the data root.

    Parameters
    ----------
    root : str or os.PathLike, optional
        The data root.

    Returns
    -------
    model : torch.nn.Module
    net : SageNetwork

    Raises
    ------
    DataUnavailable
        When the file is not there, saying where to get it.
    """
    folder = mutag_dir(root)
    path = folder / "model_MUTAG.json"
    if not path.is_file():
        raise DataUnavailable(
            f"MUTAG model is not in the data root: missing model_MUTAG.json in {folder}",
            f"run 'icml24 data fetch mutag', or copy data_experiments/trained_models/model_MUTAG.json from {SOURCE}",
        )
    return load_model_json(path)


def mutag_instance(index: int, root: str | os.PathLike | None = None) -> GraphInstance:
    """MUTAG graph ``index`` as the official ``graph_MUTAG_<index>.gcinfo``.

    Parameters
    ----------
    index : int
        0-187.
    root : str or os.PathLike, optional
        The data root.

    Returns
    -------
    GraphInstance

    Raises
    ------
    DataUnavailable
        When the file is not there, saying where to get it.
    """
    index = check_int(index, "index", min_val=0, max_val=MUTAG_GRAPHS - 1)
    folder = mutag_dir(root) / "instances"
    path = folder / f"graph_MUTAG_{index}.gcinfo"
    if not path.is_file():
        raise DataUnavailable(
            f"MUTAG instance is not in the data root: missing {path.name} in {folder}",
            f"run 'icml24 data fetch mutag', or copy data_experiments/graph_classification_instances/ from {SOURCE}",
        )
    return read_instance(path)


__all__ = [
    "GraphInstance",
    "network_from_json",
    "load_model_json",
    "read_instance",
    "mutag_dir",
    "mutag_model",
    "mutag_instance",
]
