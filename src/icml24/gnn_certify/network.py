"""The network as the MIP sees it: sum-SAGE layers, ReLU, (add-pool + dense layers), float64 numpy weights.

A SAGE layer computes ``h_v' = W1 h_v + W2 sum_{u in N(v)} h_u + b`` (paper §2, eq. (1) with sum
aggregation); in PyG ``lin_r`` holds the root weights W1 (the JSON's ``w1``) and ``lin_l`` the neighbour
weights W2 (``w2``) and the bias. :class:`SageNetwork` is the solver-side copy of such a model: float64
numpy weights and a batched forward pass over many adjacency matrices (used by brute force and sampling).
Its checks (:func:`check_shapes`, :func:`check_network`) and its official JSON layout (:func:`network_to_json`)
live here; the PyG modules are in :mod:`~icml24.gnn_certify.models`, the reading of a user's PyG model in
:mod:`~icml24.gnn_certify.reading`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InputError
from ..validation import check_bool, check_choice
from ._checks import as_array

GRAPH, NODE = "graph", "node"


@dataclass(frozen=True)
class SageLayer:
    """One SAGE layer: ``pre_v = w_root @ h_v + w_nbr @ sum_{u -> v} h_u + bias`` (paper eq. (1), sum aggregation).

    Parameters
    ----------
    w_root, w_nbr : float array [out, in]
        Root (the JSON's ``w1``, PyG's ``lin_r``) and neighbour (``w2``, ``lin_l``) weights.
    bias : float array [out]
    relu : bool
        Whether ReLU follows.
    """

    w_root: np.ndarray  # [out, in]
    w_nbr: np.ndarray  # [out, in]
    bias: np.ndarray  # [out]
    relu: bool

    def __post_init__(self) -> None:
        w_root = as_array(self.w_root, "w_root", ndim=2)
        w_nbr = as_array(self.w_nbr, "w_nbr", shape=w_root.shape)
        bias = as_array(self.bias, "bias", shape=(w_root.shape[0],))
        object.__setattr__(self, "w_root", w_root.astype(np.float64))
        object.__setattr__(self, "w_nbr", w_nbr.astype(np.float64))
        object.__setattr__(self, "bias", bias.astype(np.float64))
        object.__setattr__(
            self, "relu", check_bool(bool(self.relu) if isinstance(self.relu, np.bool_) else self.relu, "relu")
        )

    @property
    def in_features(self) -> int:
        return int(self.w_root.shape[1])

    @property
    def out_features(self) -> int:
        return int(self.w_root.shape[0])


@dataclass(frozen=True)
class DenseLayer:
    """A dense layer on the pooled vector: ``pre = weight @ h + bias``.

    Parameters
    ----------
    weight : float array [out, in]
    bias : float array [out]
    relu : bool
        Whether ReLU follows.
    """

    weight: np.ndarray  # [out, in]
    bias: np.ndarray  # [out]
    relu: bool

    def __post_init__(self) -> None:
        weight = as_array(self.weight, "weight", ndim=2)
        bias = as_array(self.bias, "bias", shape=(weight.shape[0],))
        object.__setattr__(self, "weight", weight.astype(np.float64))
        object.__setattr__(self, "bias", bias.astype(np.float64))
        object.__setattr__(
            self, "relu", check_bool(bool(self.relu) if isinstance(self.relu, np.bool_) else self.relu, "relu")
        )


@dataclass(frozen=True)
class SageNetwork:
    """A sum-SAGE network as the MIP sees it (float64 weights).

    Parameters
    ----------
    sage : tuple of SageLayer
    dense : tuple of DenseLayer
        Empty for node classification.
    task : {"graph", "node"}
        "graph": SAGE layers, global add-pool, dense layers (logits). "node": SAGE layers only; the logits of
        a node are its last-layer outputs.
    """

    sage: tuple[SageLayer, ...]
    dense: tuple[DenseLayer, ...]
    task: str

    def __post_init__(self) -> None:
        task = check_choice(self.task, "task", (GRAPH, NODE))
        for name, layers, kind in (("sage", self.sage, SageLayer), ("dense", self.dense, DenseLayer)):
            if isinstance(layers, (str, bytes)) or not isinstance(layers, (tuple, list)):
                raise InputError(f"{name} must be a tuple of {kind.__name__}, got {type(layers).__name__}")
            bad = [type(x).__name__ for x in layers if not isinstance(x, kind)]
            if bad:
                raise InputError(f"{name} must hold {kind.__name__} objects, got {bad[0]}")
        if not self.sage:
            raise InputError("sage is empty", "a network needs at least one SAGE layer")
        if task == GRAPH and not self.dense:
            raise InputError("dense is empty, but graph classification needs a dense head after the pooling")
        if task == NODE and self.dense:
            raise InputError("dense must be empty for node classification (the last SAGE layer gives the logits)")
        object.__setattr__(self, "task", task)
        object.__setattr__(self, "sage", tuple(self.sage))
        object.__setattr__(self, "dense", tuple(self.dense))
        check_shapes(self)

    @property
    def in_features(self) -> int:
        return self.sage[0].in_features

    @property
    def num_classes(self) -> int:
        return int(self.dense[-1].weight.shape[0]) if self.task == GRAPH else self.sage[-1].out_features

    def forward(self, x: np.ndarray, adj: np.ndarray) -> np.ndarray:
        """Logits for one or many graphs on the same nodes.

        ``x``: [n, F] or [B, n, F]; ``adj``: [n, n] or [B, n, n] with ``adj[u, v] = 1`` for a message
        u -> v (symmetric for undirected graphs). Returns [C] / [B, C] (graph task) or [n, C] / [B, n, C].
        """
        return self.trace(x, adj)[-1]

    def trace(self, x: np.ndarray, adj: np.ndarray) -> list[np.ndarray]:
        """Every intermediate quantity: SAGE pre-activations (one [B, n, F_l] per layer), then (graph task)
        the pooled vector and each dense pre-activation, then the logits (last entry). Single graphs drop
        the batch axis."""
        a = as_array(adj, "adj", ndim=(2, 3), dtype=None)
        if a.dtype.kind not in "biuf" or a.shape[-2] != a.shape[-1]:
            raise InputError(f"adj must be a real [n, n] or [B, n, n] array, got {a.dtype} of shape {a.shape}")
        h = as_array(x, "x", ndim=(2, 3))
        if h.shape[-2:] != (a.shape[-1], self.in_features) or (h.ndim == a.ndim == 3 and len(h) != len(a)):
            raise InputError(
                f"x must be [n, {self.in_features}] or [B, n, {self.in_features}] for adj {a.shape}, got {h.shape}"
            )
        single = a.ndim == 2
        a, h = a.astype(np.float64, copy=False), h.astype(np.float64, copy=False)
        if single:
            a = a[None]
        if h.ndim == 2:
            h = h[None]
        if h.shape[0] != a.shape[0]:
            h = np.broadcast_to(h, (a.shape[0],) + h.shape[1:])
        out: list[np.ndarray] = []
        for layer in self.sage:
            agg = np.einsum("buv,buf->bvf", a, h)
            h = h @ layer.w_root.T + agg @ layer.w_nbr.T + layer.bias
            out.append(h)
            if layer.relu:
                h = np.maximum(h, 0.0)
        if self.task == GRAPH:
            h = h.sum(axis=1)
            out.append(h)
            for layer in self.dense:
                h = h @ layer.weight.T + layer.bias
                out.append(h)
                if layer.relu:
                    h = np.maximum(h, 0.0)
        out.append(h)
        return [o[0] for o in out] if single else out


def check_shapes(net: SageNetwork) -> None:
    """Refuse a network whose layer widths do not chain or whose weights are not finite.

    Parameters
    ----------
    net : SageNetwork

    Raises
    ------
    InputError
        Naming the mismatch.
    """
    for a, b in zip(net.sage[:-1], net.sage[1:]):
        if a.out_features != b.in_features:
            raise InputError(f"model: sage layer widths do not chain ({a.out_features} -> {b.in_features})")
    prev = net.sage[-1].out_features
    for d in net.dense:
        if d.weight.shape[1] != prev:
            raise InputError(f"model: dense layer expects {d.weight.shape[1]} inputs, gets {prev}")
        prev = d.weight.shape[0]
    for layer in net.sage:
        if not (np.isfinite(layer.w_root).all() and np.isfinite(layer.w_nbr).all() and np.isfinite(layer.bias).all()):
            raise InputError("model: weights must be finite")
    for d in net.dense:
        if not (np.isfinite(d.weight).all() and np.isfinite(d.bias).all()):
            raise InputError("model: weights must be finite")
    if net.num_classes < 2:
        raise InputError(f"model: the network has {net.num_classes} output, a classifier needs at least 2")


def network_to_json(net: SageNetwork) -> list:
    """The official JSON layout of a network (the inverse of :func:`~icml24.gnn_certify.io.network_from_json`).

    Parameters
    ----------
    net : SageNetwork

    Returns
    -------
    list
        ``[{"L": k}, {"layer": "sage", ...}, ..., {"layer": "add_pool"}, {"layer": "dense", ...}]``.
    """
    net = check_network(net)
    layers: list = []
    for s in net.sage:
        layers.append(
            {
                "layer": "sage",
                "in_channels": s.in_features,
                "out_channels": s.out_features,
                "w1": s.w_root.tolist(),
                "w2": s.w_nbr.tolist(),
                "b": s.bias.tolist(),
                "activation": s.relu,
            }
        )
    if net.task == GRAPH:
        layers.append({"layer": "add_pool"})
        for d in net.dense:
            layers.append(
                {
                    "layer": "dense",
                    "in_channels": int(d.weight.shape[1]),
                    "out_channels": int(d.weight.shape[0]),
                    "w": d.weight.tolist(),
                    "b": d.bias.tolist(),
                    "activation": d.relu,
                }
            )
    return [{"L": len(layers)}] + layers


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
    if not isinstance(net, SageNetwork):
        hint = "read a PyG model with network_from_module, or a JSON model with network_from_json"
        raise InputError(f"{name} must be a SageNetwork, got {type(net).__name__}", hint)
    return net


__all__ = [
    "SageLayer",
    "DenseLayer",
    "SageNetwork",
    "network_to_json",
    "check_shapes",
    "check_network",
    "GRAPH",
    "NODE",
]
