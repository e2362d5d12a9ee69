"""DeSA's configuration and results, the client topology and the per-round client sampling (the same draw on every
client)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Sequence

import numpy as np

from ..errors import ICML24Error, InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed
from .anchors import DSA_STRATEGY, AnchorSet, check_strategy

TOPOLOGIES = ("mesh", "ring", "random_regular")


class ClientFailed(ICML24Error, RuntimeError):
    """A client process died or failed during a multi-process run; the message names it.

    Parameters
    ----------
    message : str
    hint : str, optional
    """


@dataclass(frozen=True)
class DesaConfig:
    """Settings of a DeSA run; defaults are the official code's (``iterative_desa.py``, digits).

    Parameters
    ----------
    rounds : int, default 100
        Communication rounds (official ``kd_iters``).
    local_epochs : int, default 1
        Epochs over ``local U anchors`` per round (official ``c_iters``).
    lr : float, default 0.01
        SGD learning rate of the clients (official ``lr_kd``).
    momentum : float, default 0.0
        SGD momentum of the clients (official: none).
    batch_size : int, default 32
        Local, KD and REG batch size (official ``batch`` = ``kd_batch``).
    lambda_ce, lambda_kd, lambda_reg : float, default 1.0
        Loss weights (official ``lambda_ori``, ``lambda_kd``, ``lambda_reg``); 0 removes a term.
    temperature : float, default 20.0
        KD temperature.
    distil_weight : float, default 0.9
        KD weight ``w`` of the soft term.
    kl_reduction : {"mean", "batchmean"}, default "mean"
        ``nn.KLDivLoss()``'s element-wise mean as the code, or the per-sample KL.
    reg_temperature : float, default 0.07
        SupCon temperature (and base temperature).
    ipc : int, default 50
        Anchors per class and client.
    dm_iterations : int, default 1000
        Distribution-matching iterations (official ``inv_iters``).
    dm_batch_real : int, default 256
    dm_lr, dm_momentum : float, default 1.0, 0.5
    augment : str, default ``DSA_STRATEGY``
        DSA operations used by DM (``"none"`` off).
    dm_net_width, dm_net_depth : int, default 128, 3
        The fresh random ConvNet of each DM iteration.
    dp : bool, default False
        DP-SGD anchor synthesis (clip ``l2_norm_clip``, noise ``noise_multiplier``).
    l2_norm_clip, noise_multiplier : float, default 2.0, 0.6
    anchor_mode : {"mean", "union"}, default "mean"
    topology : str or sequence of sequence of int, default "mesh"
        ``"mesh"`` (the code: all sampled clients), ``"ring"``, ``"random_regular"``, or neighbour lists.
    degree : int, default 2
        Degree of ``"random_regular"``.
    client_ratio : float, default 1.0
        Fraction of clients sampled each round (official ``client_ratio``).
    num_classes : int, default 10
    seed : int, default 0
    """

    rounds: int = 100
    local_epochs: int = 1
    lr: float = 0.01
    momentum: float = 0.0
    batch_size: int = 32
    lambda_ce: float = 1.0
    lambda_kd: float = 1.0
    lambda_reg: float = 1.0
    temperature: float = 20.0
    distil_weight: float = 0.9
    kl_reduction: str = "mean"
    reg_temperature: float = 0.07
    ipc: int = 50
    dm_iterations: int = 1000
    dm_batch_real: int = 256
    dm_lr: float = 1.0
    dm_momentum: float = 0.5
    augment: str = DSA_STRATEGY
    dm_net_width: int = 128
    dm_net_depth: int = 3
    dp: bool = False
    l2_norm_clip: float = 2.0
    noise_multiplier: float = 0.6
    anchor_mode: str = "mean"
    topology: str | tuple = "mesh"
    degree: int = 2
    client_ratio: float = 1.0
    num_classes: int = 10
    seed: int = 0

    def __post_init__(self) -> None:
        """Check every field when the config is made (one-line ``InputError`` naming the field otherwise).

        Numbers are stored as Python ``int`` / ``float``, names in their canonical spelling and neighbour lists
        as tuples.
        """
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("rounds", "dm_iterations"):
            kw[name] = check_int(kw[name], name, min_val=0)
        for name in ("local_epochs", "batch_size", "ipc", "dm_batch_real", "dm_net_width", "dm_net_depth", "degree"):
            kw[name] = check_int(kw[name], name, min_val=1)
        kw["num_classes"] = check_int(kw["num_classes"], "num_classes", min_val=2)
        for name in ("lr", "temperature", "reg_temperature", "dm_lr", "l2_norm_clip"):
            kw[name] = check_float(kw[name], name, min_val=0.0, include_boundaries="neither")
        for name in ("lambda_ce", "lambda_kd", "lambda_reg", "noise_multiplier"):
            kw[name] = check_float(kw[name], name, min_val=0.0)
        kw["distil_weight"] = check_float(kw["distil_weight"], "distil_weight", min_val=0.0, max_val=1.0)
        kw["momentum"] = check_float(kw["momentum"], "momentum", min_val=0.0, max_val=1.0, include_boundaries="left")
        kw["dm_momentum"] = check_float(kw["dm_momentum"], "dm_momentum", min_val=0.0, max_val=1.0)
        kw["client_ratio"] = check_float(
            kw["client_ratio"], "client_ratio", min_val=0.0, max_val=1.0, include_boundaries="right"
        )
        kw["kl_reduction"] = check_choice(kw["kl_reduction"], "kl_reduction", ("mean", "batchmean"))
        kw["anchor_mode"] = check_choice(kw["anchor_mode"], "anchor_mode", ("mean", "union"))
        kw["dp"] = check_bool(kw["dp"], "dp")
        kw["augment"] = check_strategy(kw["augment"], "augment")
        kw["seed"] = check_seed(kw["seed"])
        topo = kw["topology"]
        if isinstance(topo, str):
            kw["topology"] = check_choice(topo, "topology", TOPOLOGIES)
        else:
            kw["topology"] = tuple(tuple(row) for row in _neighbour_lists(topo, None))
        if kw["lambda_ce"] + kw["lambda_kd"] + kw["lambda_reg"] == 0:
            raise InputError("lambda_ce, lambda_kd and lambda_reg are all 0", "keep at least one loss term")
        for name, value in kw.items():
            object.__setattr__(self, name, value)

    def validated(self) -> "DesaConfig":
        """The config itself: it was checked when it was made.

        Returns
        -------
        DesaConfig
        """
        return self


@dataclass
class DesaResult:
    """What a DeSA run returns.

    Parameters
    ----------
    models : list of torch.nn.Module
        Trained copies of the clients' models (the user's modules are never changed).
    anchors : AnchorSet
        The global anchor set.
    local_anchors : list of AnchorSet
        Each client's own anchors.
    bytes_anchors, bytes_logits : list of int
        Payload bytes each client sent: anchors (once) and logits (all rounds).
    round_logits : list of list of torch.Tensor or None
        ``round_logits[r][i]``: client ``i``'s logits on the anchors at round ``r`` (None when not sampled).
    losses : list of list of float
        Each client's mean training loss per round (NaN when not sampled).
    topology : list of list of int
        The neighbour lists used.
    backend : str
    seconds : float
        Wall time of the run.
    failed : dict of int to str
        Clients that died or failed during a multi-process run, with the reason; their ``models`` entry is
        None, their ``round_logits`` None, their ``losses`` NaN and their byte counters 0 (the counters died
        with them). The other clients finished without them.
    lost_links : list of (int, int, int)
        ``(client, peer, round)``: ``client`` found at ``round`` that ``peer`` no longer answered and went on
        with the other neighbours' logits.
    extra : dict
        ``resumed_from``: the last round restored from ``checkpoint_dir`` (-1: the anchors only; None: a fresh run).
    """

    models: list
    anchors: AnchorSet
    local_anchors: list
    bytes_anchors: list
    bytes_logits: list
    round_logits: list
    losses: list
    topology: list
    backend: str
    seconds: float = 0.0
    failed: dict = field(default_factory=dict)
    lost_links: list = field(default_factory=list)
    extra: dict = field(default_factory=dict)

    @property
    def bytes_sent(self) -> list[int]:
        """Payload bytes each client sent in total.

        Returns
        -------
        list of int
        """
        return [a + b for a, b in zip(self.bytes_anchors, self.bytes_logits)]


def _connected(adj: list[list[int]]) -> bool:
    seen, todo = {0}, [0]
    while todo:
        for j in adj[todo.pop()]:
            if j not in seen:
                seen.add(j)
                todo.append(j)
    return len(seen) == len(adj)


def _neighbour_lists(kind, n: int | None) -> list[list[int]]:
    """Neighbour lists as lists of client indices in ``0..n-1`` (any non-negative index when ``n`` is None)."""
    if isinstance(kind, (str, bytes)) or not isinstance(kind, Sequence) or (n is not None and len(kind) != n):
        want = f"{n} neighbour lists" if n is not None else "neighbour lists"
        raise InputError(f"topology must be one of {TOPOLOGIES} or {want}, got {type(kind).__name__}")
    out = []
    for i, row in enumerate(kind):
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
            raise InputError(f"topology[{i}] must be a list of neighbour indices, got {type(row).__name__}")
        top = None if n is None else n - 1
        out.append([check_int(j, f"topology[{i}] entries", min_val=0, max_val=top) for j in row])
    return out


def make_topology(kind, n_clients: int, *, degree: int = 2, seed: int = 0) -> list[list[int]]:
    """Neighbour lists of a connected undirected communication graph.

    Parameters
    ----------
    kind : {"mesh", "ring", "random_regular"} or sequence of sequence of int
        A named graph, or neighbour lists to check (made symmetric is *not* assumed: ``j in adj[i]`` must
        imply ``i in adj[j]``).
    n_clients : int
        At least 2.
    degree : int, default 2
        Degree of ``"random_regular"`` (``n_clients * degree`` even, ``degree < n_clients``).
    seed : int, default 0
        Seeds ``"random_regular"`` (redrawn until connected).

    Returns
    -------
    list of list of int
        ``adj[i]``: the sorted neighbours of client ``i``.

    Raises
    ------
    InputError
        A graph that is not connected, not symmetric, has self-loops or out-of-range clients.
    """
    n = check_int(n_clients, "n_clients", min_val=2)
    seed = check_seed(seed)
    degree = check_int(degree, "degree", min_val=1)
    if isinstance(kind, str):
        kind = check_choice(kind, "topology", TOPOLOGIES)
        if kind == "mesh":
            return [[j for j in range(n) if j != i] for i in range(n)]
        if kind == "ring":
            return [sorted({(i - 1) % n, (i + 1) % n}) for i in range(n)]
        degree = check_int(degree, "degree", min_val=1, max_val=n - 1)
        if (n * degree) % 2:
            raise InputError(f"degree {degree} x {n} clients is odd", "no regular graph exists; change degree")
        import networkx as nx

        for attempt in range(100):
            g = nx.random_regular_graph(degree, n, seed=seed * 1000 + attempt)
            adj = [sorted(g.neighbors(i)) for i in range(n)]
            if _connected(adj):
                return adj
        raise InputError(f"no connected {degree}-regular graph on {n} clients was drawn", "raise degree")
    adj = [sorted(set(row)) for row in _neighbour_lists(kind, n)]
    for i, nb in enumerate(adj):
        if i in nb:
            raise InputError(f"topology[{i}] lists client {i} as its own neighbour")
    for i, nb in enumerate(adj):
        for j in nb:
            if i not in adj[j]:
                raise InputError(f"topology is not symmetric: {j} in topology[{i}] but {i} not in topology[{j}]")
    if not _connected(adj):
        raise InputError("topology is not connected", "every client must reach every other through neighbours")
    return adj


def sample_clients(n_clients: int, client_ratio: float, round_index: int, seed: int) -> list[int]:
    """The clients taking part in a round: ``int(client_ratio * n)`` of them (at least one), same on every client.

    Parameters
    ----------
    n_clients : int
    client_ratio : float
        In (0, 1]; 1 selects everyone (the official ``client_ratio``).
    round_index : int
    seed : int

    Returns
    -------
    list of int
        Sorted client indices.
    """
    n = check_int(n_clients, "n_clients", min_val=1)
    ratio = check_float(client_ratio, "client_ratio", min_val=0.0, max_val=1.0, include_boundaries="right")
    r = check_int(round_index, "round_index", min_val=0)
    seed = check_seed(seed)
    if ratio >= 1.0:
        return list(range(n))
    k = max(1, int(ratio * n))
    rng = np.random.default_rng([seed, r, 7])
    return sorted(int(i) for i in rng.choice(n, size=k, replace=False))


__all__ = ["TOPOLOGIES", "ClientFailed", "DesaConfig", "DesaResult", "make_topology", "sample_clients"]
