"""DeSA's decentralised engine: one client per OS process over ``torch.distributed`` (gloo), or all in-process.

Algorithm 1 of the paper with the official ``iterative_desa.py`` schedule:

1. every client synthesises local anchors by distribution matching (:func:`~icml24.desa.synthesize_anchors`);
2. the anchors are exchanged once with a collective (``all_gather``) and every client builds the same global
   anchor set (:func:`~icml24.desa.global_anchors`, ``mode`` "mean" as the code or "union" as the paper);
3. for ``rounds`` rounds (official ``kd_iters`` 100): a subset of clients is sampled (``client_ratio``, same
   draw on every client), each sampled client evaluates its model on the anchors (eval mode, fixed order)
   and sends the logits to its sampled neighbours in the topology, then trains ``local_epochs`` epochs
   (official ``c_iters`` 1) on ``lambda_ce CE(local U anchors) + lambda_kd KD + lambda_reg REG``, the KD
   teacher being the mean of the neighbours' logits. Only anchors (once) and logits travel, never weights.

The in-process mode runs the same client code in one process, in lock-step; on the same seeds it gives the
same anchors, logits, bytes and weights as the multi-process mode (both run every client on one thread).
Bytes are counted from the payload of every tensor a client hands to ``torch.distributed`` (the same
tensors are counted in-process).

Failures (multi-process): a client whose process dies after the anchor exchange closes its sockets; each
neighbour sees the failed send or receive (or the peer's silence past the group timeout), drops that peer and
distils from the others' logits, and the run finishes with the survivors (``DesaResult.failed`` and
``lost_links`` record it), or stops with a one-line :class:`ClientFailed` when asked to. With a
``checkpoint_dir`` every client saves its state after every round, and an interrupted run resumes from the
last round every live client saved.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import math
import os
import signal
import socket
import tempfile
import time
import traceback
from dataclasses import dataclass, field, fields
from datetime import timedelta
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import ICML24Error, InputError
from ..validation import check_choice, check_float, check_int, check_seed, check_tensor
from .anchors import DSA_STRATEGY, AnchorSet, global_anchors, synthesize_anchors
from .losses import kd_loss, supcon_loss
from .models import check_model
from .optim import SGD

__all__ = [
    "DesaConfig",
    "DesaResult",
    "ClientFailed",
    "make_topology",
    "sample_clients",
    "run_desa",
    "accuracy_matrix",
    "domain_summary",
]

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

    def validated(self) -> "DesaConfig":
        """A copy with every field checked (one-line ``InputError`` naming the field otherwise).

        Returns
        -------
        DesaConfig
        """
        kw = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("rounds", "dm_iterations"):
            kw[name] = check_int(kw[name], name, min_val=0)
        for name in ("local_epochs", "batch_size", "ipc", "dm_batch_real", "dm_net_width", "dm_net_depth"):
            kw[name] = check_int(kw[name], name, min_val=1)
        kw["degree"] = check_int(kw["degree"], "degree", min_val=1)
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
        if not isinstance(kw["dp"], bool):
            raise InputError(f"dp must be True or False, got {kw['dp']!r}")
        if not isinstance(kw["augment"], str):
            raise InputError("augment must be a string of DSA operations")
        kw["seed"] = check_seed(kw["seed"])
        topo = kw["topology"]
        if isinstance(topo, str):
            kw["topology"] = check_choice(topo, "topology", TOPOLOGIES)
        elif isinstance(topo, Sequence):
            kw["topology"] = tuple(tuple(int(j) for j in row) for row in topo)
        else:
            raise InputError(f"topology must be one of {TOPOLOGIES} or neighbour lists, got {type(topo).__name__}")
        if kw["lambda_ce"] + kw["lambda_kd"] + kw["lambda_reg"] == 0:
            raise InputError("lambda_ce, lambda_kd and lambda_reg are all 0", "keep at least one loss term")
        return DesaConfig(**kw)


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


# ---------------------------------------------------------------------------------------------- topology
def _connected(adj: list[list[int]]) -> bool:
    seen, todo = {0}, [0]
    while todo:
        for j in adj[todo.pop()]:
            if j not in seen:
                seen.add(j)
                todo.append(j)
    return len(seen) == len(adj)


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
    if not isinstance(kind, Sequence) or len(kind) != n:
        raise InputError(f"topology must be a name or {n} neighbour lists, got {type(kind).__name__}")
    adj = []
    for i, row in enumerate(kind):
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence):
            raise InputError(f"topology[{i}] must be a list of neighbour indices")
        nb = sorted({int(j) for j in row})
        if any(j < 0 or j >= n for j in nb):
            raise InputError(f"topology[{i}] names a client outside 0..{n - 1}")
        if i in nb:
            raise InputError(f"topology[{i}] lists client {i} as its own neighbour")
        adj.append(nb)
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


# ------------------------------------------------------------------------------------------------ client
def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


class _Client:
    """The state and steps of one client; the same code runs in-process and in a worker process."""

    def __init__(self, rank: int, model, x: torch.Tensor, y: torch.Tensor, cfg: DesaConfig) -> None:
        self.rank, self.cfg = rank, cfg
        self.model = copy.deepcopy(model).train()
        self.x, self.y = x, y
        seq = np.random.SeedSequence([cfg.seed, rank, 29])
        s_dm, s_train = (int(s.generate_state(1)[0]) for s in seq.spawn(2))
        self.dm_seed = s_dm
        self.g = torch.Generator().manual_seed(s_train)
        self.opt = SGD(self.model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
        self.losses: list[float] = []

    def synthesize(self) -> AnchorSet:
        c = self.cfg
        return synthesize_anchors(
            self.x,
            self.y,
            num_classes=c.num_classes,
            ipc=c.ipc,
            iterations=c.dm_iterations,
            batch_real=c.dm_batch_real,
            lr=c.dm_lr,
            momentum=c.dm_momentum,
            augment=c.augment,
            net_width=c.dm_net_width,
            net_depth=c.dm_net_depth,
            dp=c.dp,
            l2_norm_clip=c.l2_norm_clip,
            noise_multiplier=c.noise_multiplier,
            seed=self.dm_seed,
        )

    def set_anchors(self, anchors: AnchorSet) -> None:
        self.anchors = anchors
        # the code shuffles the anchors once; the KD loader then walks them in that fixed order
        order = torch.randperm(len(anchors.labels), generator=self.g)
        self.ax, self.ay = anchors.images[order], anchors.labels[order]
        self.cx = torch.cat([self.x, self.ax])
        self.cy = torch.cat([self.y, self.ay])

    def restore_anchors(self, anchors: AnchorSet, ax: torch.Tensor, ay: torch.Tensor) -> None:
        self.anchors, self.ax, self.ay = anchors, ax, ay
        self.cx = torch.cat([self.x, self.ax])
        self.cy = torch.cat([self.y, self.ay])

    def anchor_logits(self) -> torch.Tensor:
        self.model.eval()
        with torch.no_grad():
            z = torch.cat([self.model(b) for b in self.ax.split(self.cfg.batch_size)])
        self.model.train()
        return z

    def train_round(self, teacher: torch.Tensor | None) -> float:
        c, m = self.cfg, self.model
        bs = c.batch_size
        use_kd = teacher is not None and c.lambda_kd > 0
        total, steps = 0.0, 0
        for _ in range(c.local_epochs):
            perm = torch.randperm(len(self.cy), generator=self.g)
            kd_step = 0
            n_kd = math.ceil(len(self.ay) / bs)
            reg_perm = torch.randperm(len(self.ay), generator=self.g)
            reg_step = 0
            for idx in perm.split(bs):
                x, y = self.cx[idx], self.cy[idx]
                h = m.embed(x)
                loss = c.lambda_ce * F.cross_entropy(m.classify(h), y) if c.lambda_ce > 0 else h.new_zeros(())
                if use_kd:
                    if kd_step == n_kd:
                        kd_step = 0
                    sl = slice(kd_step * bs, (kd_step + 1) * bs)
                    loss = loss + c.lambda_kd * kd_loss(
                        m(self.ax[sl]),
                        teacher[sl],
                        self.ay[sl],
                        temperature=c.temperature,
                        distil_weight=c.distil_weight,
                        reduction=c.kl_reduction,
                    )
                    kd_step += 1
                if c.lambda_reg > 0:
                    if reg_step * bs >= len(reg_perm):
                        reg_perm = torch.randperm(len(self.ay), generator=self.g)
                        reg_step = 0
                    ridx = reg_perm[reg_step * bs : (reg_step + 1) * bs]
                    reg_step += 1
                    with torch.no_grad():
                        ha = m.embed(self.ax[ridx])
                    loss = loss + c.lambda_reg * supcon_loss(
                        h,
                        ha,
                        y,
                        self.ay[ridx],
                        temperature=c.reg_temperature,
                        base_temperature=c.reg_temperature,
                    )
                if not torch.isfinite(loss):
                    raise ClientFailed(f"client {self.rank} diverged (non-finite loss)", "lower lr or momentum")
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                self.opt.step()
                total += float(loss.detach())
                steps += 1
        return total / max(steps, 1)


def _teacher(received: dict[int, torch.Tensor]) -> torch.Tensor | None:
    if not received:
        return None
    return torch.stack([received[j] for j in sorted(received)]).mean(0)


# ------------------------------------------------------------------------------------------- validation
def check_inputs(models, train_sets, cfg: DesaConfig, need_models: bool = True) -> tuple[list, list]:
    """Validate the clients' models and data (one-line ``InputError`` naming the argument).

    Parameters
    ----------
    models : sequence of torch.nn.Module
    train_sets : sequence of (torch.Tensor, torch.Tensor)
    cfg : DesaConfig
    need_models : bool, default True
        Require ``embed`` and ``classify`` on every model.

    Returns
    -------
    (list, list)
        The models and the ``(float images, int64 labels)`` pairs.
    """
    if isinstance(models, torch.nn.Module) or not isinstance(models, Sequence):
        raise InputError("models must be a list of modules, one per client")
    if isinstance(train_sets, tuple) and len(train_sets) == 2 and isinstance(train_sets[0], torch.Tensor):
        raise InputError("train_sets must be a list of (images, labels) pairs, one per client")
    if not isinstance(train_sets, Sequence):
        raise InputError("train_sets must be a list of (images, labels) pairs, one per client")
    if len(models) < 2:
        raise InputError(f"models holds {len(models)} client(s); DeSA needs at least two clients")
    if len(train_sets) != len(models):
        raise InputError(f"train_sets has {len(train_sets)} entries for {len(models)} models")
    ms = [check_model(m, f"models[{i}]") if need_models else m for i, m in enumerate(models)]
    if len({id(m) for m in ms}) != len(ms):
        raise InputError("models holds the same module twice", "give each client its own module")
    data = []
    shape = None
    for i, pair in enumerate(train_sets):
        if not isinstance(pair, Sequence) or len(pair) != 2:
            raise InputError(f"train_sets[{i}] must be an (images, labels) pair")
        x = check_tensor(pair[0], f"train_sets[{i}] images", ndim=4)
        y = check_tensor(pair[1], f"train_sets[{i}] labels", ndim=1, dtype="integer")
        if len(x) != len(y):
            raise InputError(f"train_sets[{i}] has {len(x)} images but {len(y)} labels")
        if int(y.min()) < 0 or int(y.max()) >= cfg.num_classes:
            raise InputError(f"train_sets[{i}] labels must lie in [0, {cfg.num_classes})", "set num_classes")
        if shape is None:
            shape = x.shape[1:]
        elif x.shape[1:] != shape:
            raise InputError(f"train_sets[{i}] images have shape {tuple(x.shape[1:])}, client 0 {tuple(shape)}")
        data.append((x.detach().float().contiguous(), y.detach().long().contiguous()))
    held = set().union(*[set(y.tolist()) for _, y in data])
    missing = sorted(set(range(cfg.num_classes)) - held)
    if missing:
        raise InputError(
            f"the anchors would have classes {missing} that no client holds (num_classes={cfg.num_classes})",
            "lower num_classes or relabel",
        )
    return ms, data


# ---------------------------------------------------------------------------------------------- engines
def _run_inprocess(models, data, cfg, adj, progress, given) -> DesaResult:
    n = len(models)
    clients = [_Client(i, models[i], data[i][0], data[i][1], cfg) for i in range(n)]
    local = [cl.synthesize() if given is None else given[i] for i, cl in enumerate(clients)]
    presence = torch.zeros(cfg.num_classes, dtype=torch.int64)
    bytes_anchors = [(n - 1) * (_nbytes(a.images) + _nbytes(presence)) for a in local]
    glob = global_anchors(local, cfg.anchor_mode)
    for cl in clients:
        cl.set_anchors(glob)
    bytes_logits = [0] * n
    round_logits, losses = [], [[] for _ in range(n)]
    for r in range(cfg.rounds):
        sampled = sample_clients(n, cfg.client_ratio, r, cfg.seed)
        z = {}
        if cfg.lambda_kd > 0:
            for i in sampled:
                z[i] = clients[i].anchor_logits()
        round_logits.append([z.get(i) for i in range(n)])
        for i in range(n):
            if i not in sampled:
                losses[i].append(float("nan"))
                continue
            nbs = [j for j in adj[i] if j in sampled]
            if cfg.lambda_kd > 0:
                bytes_logits[i] += len(nbs) * _nbytes(z[i])
            received = {j: z[j] for j in nbs} if cfg.lambda_kd > 0 else {}
            losses[i].append(clients[i].train_round(_teacher(received)))
        if progress is not None:
            progress(r)
    return DesaResult(
        [cl.model for cl in clients], glob, local, bytes_anchors, bytes_logits, round_logits, losses, adj, "inprocess"
    )


def _free_port(address: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def _die() -> None:
    """Fault injection: the client process kills itself (SIGKILL, no clean-up, sockets closed by the OS)."""
    os.kill(os.getpid(), signal.SIGKILL)


def exchange(dist, tensor: torch.Tensor, peers: Sequence[int], tag: int) -> tuple[dict, set, int]:
    """Send ``tensor`` to every peer and receive theirs; a peer whose link fails is reported, not fatal.

    Parameters
    ----------
    dist : module
        ``torch.distributed`` with an initialised process group.
    tensor : torch.Tensor
    peers : sequence of int
    tag : int

    Returns
    -------
    (dict, set, int)
        The tensors received from the peers that answered, the peers whose link failed (their process died or
        did not answer within the group's timeout), and the number of sends that completed.
    """
    bufs = {j: torch.empty_like(tensor) for j in peers}
    works, lost, sent = [], set(), 0
    for j in peers:
        try:
            works.append((j, dist.isend(tensor, j, tag=tag), True))
            works.append((j, dist.irecv(bufs[j], j, tag=tag), False))
        except RuntimeError:
            lost.add(j)
    for j, work, is_send in works:
        try:
            work.wait()
            sent += int(is_send and j not in lost)
        except RuntimeError:
            lost.add(j)
    return {j: b for j, b in bufs.items() if j not in lost}, lost, sent


def _ckpt(ckdir: str, rank: int, r: int | None) -> str:
    return os.path.join(ckdir, f"client{rank}.anchors.pt" if r is None else f"client{rank}.round{r}.pt")


def _finish(queue, release, timeout: float) -> None:
    """Wait until the parent has every survivor's results, flush the queue and leave without tearing gloo down."""
    release.wait(timeout + 60)
    queue.close()
    queue.join_thread()
    os._exit(0)


def _worker(rank, world, address, port, payload, out_dir, timeout, fail_at, queue, release) -> None:
    """Entry point of one client process (module-level so that the child process can import it)."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    try:
        model, x, y, cfg, adj, given, (ckdir, start, ghost) = payload
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://{address}:{port}",
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=timeout),
        )
        if ghost:  # failed in the interrupted run: it only completes the rendezvous, nobody talks to it
            _finish(queue, release, timeout)
        client = _Client(rank, model, x, y, cfg)
        if fail_at == -1:
            _die()
        if start is None:
            mine = client.synthesize() if given is None else given
            presence = torch.zeros(cfg.num_classes, dtype=torch.int64)
            presence[list(mine.classes_present)] = 1
            gathered = [torch.empty_like(mine.images) for _ in range(world)]
            dist.all_gather(gathered, mine.images.contiguous())
            pres = [torch.empty_like(presence) for _ in range(world)]
            dist.all_gather(pres, presence)
            gathered, pres = torch.stack(gathered), torch.stack(pres)
            bytes_anchors = (world - 1) * (_nbytes(mine.images) + _nbytes(presence))
            own = [torch.tensor(mine.losses), _privacy(mine)]
            anchor_labels = mine.labels
            glob = global_anchors(_local_sets(gathered, pres, anchor_labels, cfg.ipc), cfg.anchor_mode)
            client.set_anchors(glob)
            if ckdir is not None:
                anchors_state = {
                    "gathered": gathered,
                    "presence": pres,
                    "labels": mine.labels,
                    "own": own,
                    "ax": client.ax,
                    "ay": client.ay,
                    "gen": client.g.get_state(),
                    "bytes": bytes_anchors,
                }
                save_result(ckdir, rank, anchors_state, _ckpt(ckdir, rank, None))
            first, bytes_logits, logits, losses, alive, lost = 0, 0, [], [], set(adj[rank]), []
        else:
            st = torch.load(_ckpt(ckdir, rank, None), weights_only=True)
            gathered, pres, own, bytes_anchors = st["gathered"], st["presence"], st["own"], int(st["bytes"])
            anchor_labels = st["labels"]
            glob = global_anchors(_local_sets(gathered, pres, anchor_labels, cfg.ipc), cfg.anchor_mode)
            client.restore_anchors(glob, st["ax"], st["ay"])
            client.g.set_state(st["gen"])
            first, bytes_logits, logits, losses, alive, lost = 0, 0, [], [], set(adj[rank]), []
            if start >= 0:
                st = torch.load(_ckpt(ckdir, rank, start), weights_only=True)
                client.model.load_state_dict(st["model"])
                client.opt.bufs = list(st["bufs"])
                client.g.set_state(st["gen"])
                first, bytes_logits = start + 1, int(st["bytes"])
                logits, losses = list(st["logits"]), [float(v) for v in st["losses"]]
                alive, lost = {int(j) for j in st["alive"]}, [tuple(int(v) for v in p) for p in st["lost"]]
        for r in range(first, cfg.rounds):
            if fail_at == r:
                _die()
            sampled = sample_clients(world, cfg.client_ratio, r, cfg.seed)
            z = None
            if rank in sampled:
                received = {}
                if cfg.lambda_kd > 0:
                    z = client.anchor_logits()
                    nbs = [j for j in adj[rank] if j in sampled and j in alive]
                    received, gone, sent = exchange(dist, z, nbs, r)
                    bytes_logits += sent * _nbytes(z)
                    for j in sorted(gone):
                        alive.discard(j)
                        lost.append((j, r))
                        queue.put(("lost", rank, r, j))
                losses.append(client.train_round(_teacher(received)))
            else:
                losses.append(float("nan"))
            logits.append(z)
            if ckdir is not None:
                round_state = {
                    "model": client.model.state_dict(),
                    "bufs": list(client.opt.bufs),
                    "gen": client.g.get_state(),
                    "bytes": bytes_logits,
                    "logits": logits,
                    "losses": losses,
                    "alive": sorted(alive),
                    "lost": [list(p) for p in lost],
                }
                save_result(ckdir, rank, round_state, _ckpt(ckdir, rank, r))
            queue.put(("round", rank, r, -1))
        out = {
            "state": client.model.state_dict(),
            "gathered": gathered,
            "presence": pres,
            "labels": anchor_labels,
            "own": own,
            "bytes": torch.tensor([bytes_anchors, bytes_logits]),
            "logits": logits,
            "losses": torch.tensor(losses),
            "lost": [list(p) for p in lost],
        }
        save_result(out_dir, rank, out)
        _finish(queue, release, timeout)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which names this client
        report_failure(out_dir, rank, exc)
        raise SystemExit(1) from None


def _privacy(a: AnchorSet) -> torch.Tensor:
    eps = float("nan") if a.epsilon is None else a.epsilon
    delta = float("nan") if a.delta is None else a.delta
    return torch.tensor([eps, delta], dtype=torch.float64)


def _local_sets(gathered: torch.Tensor, presence: torch.Tensor, labels: torch.Tensor, ipc: int) -> list[AnchorSet]:
    return [
        AnchorSet(gathered[j], labels.clone(), ipc, tuple(int(c) for c in torch.nonzero(presence[j]).flatten()))
        for j in range(len(gathered))
    ]


def _why(out_dir: str, i: int, code) -> str:
    err = os.path.join(out_dir, f"client{i}.err")
    if os.path.exists(err):
        with open(err) as fh:
            return fh.readline().strip()
    if code is not None and code < 0:
        return f"its process was killed by signal {-code}"
    return f"its process exited with code {code}"


def _mp_context():
    """The start method of the client processes: *forkserver* where the platform has it, else *spawn*.

    Both start every client from a fresh interpreter state (no copy of the caller's threads or tensors); the
    fork server imports torch and this module once, so each client starts in milliseconds instead of
    importing torch again (a second or more per process).
    """
    import multiprocessing as mp

    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["__main__", __name__])  # only read when the server starts
    return ctx


def spawn_clients(
    worker,
    payloads,
    rounds,
    progress,
    address,
    port,
    timeout,
    fail,
    budget,
    *,
    on_failure: str = "stop",
    ghosts: dict | None = None,
    gc: Callable[[int], None] | None = None,
    start_round: int = 0,
) -> tuple[list, dict, list]:
    """Start one OS process per client running ``worker``, watch them, and collect their results.

    Parameters
    ----------
    worker : callable
        Module-level ``worker(rank, world, address, port, payload, out_dir, timeout, fail_at, queue, release)``;
        it puts ``("round", rank, r, -1)`` on the queue after each round and ``("lost", rank, r, peer)`` when
        a peer stops answering, writes ``client<rank>.pt`` (read back with ``weights_only=True``) at the end,
        then waits for ``release`` (a ``multiprocessing.Event``) before it exits; on an error it writes
        ``client<rank>.err`` and exits non-zero.
    payloads : list
        One picklable payload per client.
    rounds : int
    progress : callable or None
        Called with ``r`` once every live client has finished round ``r``.
    address : str
    port : int or None
    timeout : float
    fail : (int, int) or None
    budget : float
        Seconds allowed before the first round completes (anchor synthesis).
    on_failure : {"stop", "continue"}, default "stop"
        ``"stop"``: the first client that dies stops the run (``ClientFailed``). ``"continue"``: it is recorded
        and the others run on; ``ClientFailed`` only when no client finishes.
    ghosts : dict, optional
        ``{rank: reason}`` of clients already failed (a resumed run): they join the rendezvous and leave.
    gc : callable, optional
        Called with ``r`` when every live client has finished round ``r`` (to drop older checkpoints).
    start_round : int, default 0
        The first round the workers run (a resumed run).

    Returns
    -------
    (list, dict, list)
        Each client's saved results (None for a failed client), ``{rank: reason}`` of the failed clients and
        the ``(client, peer, round)`` links reported lost.
    """
    import queue as queue_mod

    n = len(payloads)
    ghosts = dict(ghosts or {})
    ctx = _mp_context()
    q = ctx.Queue()
    release = ctx.Event()
    port = _free_port(address) if port is None else port
    with tempfile.TemporaryDirectory(prefix="desa-") as out_dir:
        procs = []
        for i in range(n):
            fail_at = fail[1] if fail is not None and fail[0] == i else None
            p = ctx.Process(
                target=worker,
                args=(i, n, address, port, payloads[i], out_dir, timeout, fail_at, q, release),
                daemon=True,
            )
            p.start()
            procs.append(p)
        done: dict[int, set] = {}
        failed: dict[int, str] = {}
        lost: list[tuple[int, int, int]] = []
        reported = start_round
        deadline = time.monotonic() + timeout + budget

        def drain() -> None:
            nonlocal deadline
            try:
                while True:
                    kind, rank, r, peer = q.get(timeout=0.05)
                    if kind == "lost":
                        lost.append((rank, peer, r))
                    else:
                        done.setdefault(r, set()).add(rank)
                    deadline = time.monotonic() + timeout + 60
            except queue_mod.Empty:
                pass

        def report(live: list) -> None:
            nonlocal reported
            while reported < rounds and all(i in done.get(reported, ()) for i in live):
                if progress is not None:
                    progress(reported)
                if gc is not None:
                    gc(reported)
                reported += 1

        try:
            while True:
                drain()
                dead = [
                    (i, p.exitcode)
                    for i, p in enumerate(procs)
                    if p.exitcode not in (None, 0) and i not in failed and i not in ghosts
                ]
                if dead:
                    # once per death: give a client that is exiting the moment to finish writing its .err file
                    time.sleep(0.2)
                    for i, code in dead:
                        failed[i] = _why(out_dir, i, code)
                    silent = [i for i, _ in dead if not os.path.exists(os.path.join(out_dir, f"client{i}.err"))]
                    if on_failure == "stop" or len(failed) + len(ghosts) == n:
                        first = (silent or [i for i, _ in dead])[0]
                        also = "the other clients were stopped" if on_failure == "stop" else "no client finished"
                        raise ClientFailed(
                            f"client {first} failed during the run ({failed[first]}); {also}",
                            "rerun; check that client's data and model, and that the address and port are free",
                        )
                live = [i for i in range(n) if i not in failed and i not in ghosts]
                report(live)
                finished = [os.path.exists(os.path.join(out_dir, f"client{i}.pt")) for i in range(n)]
                if all(finished[i] or i in failed or i in ghosts for i in range(n)):
                    release.set()
                    break
                if time.monotonic() > deadline:
                    stuck = [i for i in live if not finished[i]]
                    raise ClientFailed(f"clients {stuck} made no progress within the timeout", "raise timeout")
            results = [
                None
                if i in failed or i in ghosts
                else torch.load(os.path.join(out_dir, f"client{i}.pt"), weights_only=True)
                for i in range(n)
            ]
            for p in procs:
                p.join(timeout)
            drain()  # the last rounds' messages may arrive after the result files
            report(live)
            return results, {**ghosts, **failed}, sorted(lost)
        finally:
            for p in procs:
                if p.is_alive():
                    p.terminate()
            for p in procs:
                p.join(5)
            q.close()
            q.join_thread()


def save_result(out_dir: str, rank: int, out: dict, path: str | None = None) -> None:
    """Write a worker's results atomically as ``client<rank>.pt`` (or ``path``).

    Parameters
    ----------
    out_dir : str
    rank : int
    out : dict
        Tensors, numbers and lists of them.
    path : str, optional
        Where to write instead of ``<out_dir>/client<rank>.pt``.
    """
    path = os.path.join(out_dir, f"client{rank}.pt") if path is None else path
    tmp = path + ".tmp"
    torch.save(out, tmp)
    os.replace(tmp, path)


def report_failure(out_dir: str, rank: int, exc: BaseException) -> None:
    """Write a worker's error as ``client<rank>.err`` (first line: one-line summary).

    Parameters
    ----------
    out_dir : str
    rank : int
    exc : BaseException
    """
    with open(os.path.join(out_dir, f"client{rank}.err"), "w") as fh:
        fh.write(f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}\n")
        fh.write(traceback.format_exc())


def _fingerprint(data, cfg: DesaConfig, adj) -> str:
    h = hashlib.sha256(repr((cfg, adj)).encode())
    for x, y in data:
        h.update(repr((tuple(x.shape), float(x.double().sum()), y.tolist())).encode())
    return h.hexdigest()


def _resume_point(ckdir: str, n: int, rounds: int, fingerprint: str) -> tuple[int | None, dict]:
    """Where a run in ``ckdir`` stopped: the last round every live client saved (-1: anchors only; None: fresh)."""
    os.makedirs(ckdir, exist_ok=True)
    manifest = os.path.join(ckdir, "manifest.json")
    if not os.path.exists(manifest):
        _write_manifest(ckdir, fingerprint, {})
        return None, {}
    with open(manifest) as fh:
        man = json.load(fh)
    if man.get("fingerprint") != fingerprint:
        raise InputError(
            f"checkpoint_dir {ckdir} holds a run of other clients, data or settings", "give an empty folder"
        )
    failed = {int(k): str(v) for k, v in man.get("failed", {}).items()}
    live = [i for i in range(n) if i not in failed]
    if not live or not all(os.path.exists(_ckpt(ckdir, i, None)) for i in live):
        _write_manifest(ckdir, fingerprint, {})
        return None, {}
    common = set(range(rounds))
    for i in live:
        common &= {r for r in range(rounds) if os.path.exists(_ckpt(ckdir, i, r))}
    return (max(common) if common else -1), failed


def _write_manifest(ckdir: str, fingerprint: str, failed: dict) -> None:
    tmp = os.path.join(ckdir, "manifest.json.tmp")
    with open(tmp, "w") as fh:
        json.dump({"fingerprint": fingerprint, "failed": {str(k): v for k, v in failed.items()}}, fh)
    os.replace(tmp, os.path.join(ckdir, "manifest.json"))


def _run_gloo(models, data, cfg, adj, progress, address, port, timeout, fail, given, on_failure, ckdir):
    n = len(models)
    start, ghosts, fp = None, {}, None
    if ckdir is not None:
        fp = _fingerprint(data, cfg, adj)
        start, ghosts = _resume_point(ckdir, n, cfg.rounds, fp)
    if progress is not None and start is not None:
        for r in range(start + 1):
            progress(r)
    payloads = [
        (models[i], data[i][0], data[i][1], cfg, adj, None if given is None else given[i], (ckdir, start, i in ghosts))
        for i in range(n)
    ]
    kept = {"from": 0 if start is None else max(start, 0)}

    def gc(r: int) -> None:  # every live client holds round r: older round checkpoints are not needed
        for old in range(kept["from"], r):
            for i in range(n):
                with contextlib.suppress(OSError):
                    os.remove(_ckpt(ckdir, i, old))
        kept["from"] = max(kept["from"], r)

    results, failed, lost = spawn_clients(
        _worker,
        payloads,
        cfg.rounds,
        None if progress is None else (lambda r: progress(r) if start is None or r > start else None),
        address,
        port,
        timeout,
        fail,
        60.0 + 0.5 * cfg.dm_iterations * n,
        on_failure=on_failure,
        ghosts=ghosts,
        gc=None if ckdir is None else gc,
        start_round=0 if start is None else start + 1,
    )
    if ckdir is not None and failed:
        _write_manifest(ckdir, fp, failed)
    ref = next(res for res in results if res is not None)
    trained, local, round_logits, losses, bytes_a, bytes_l = [], [], [], [], [], []
    sets = _local_sets(ref["gathered"], ref["presence"], ref["labels"], cfg.ipc)
    for i, res in enumerate(results):
        if res is None:
            trained.append(None)
            local.append(sets[i])
            losses.append([float("nan")] * cfg.rounds)
            bytes_a.append(0)
            bytes_l.append(0)
            continue
        m = copy.deepcopy(models[i])
        m.load_state_dict(res["state"])
        trained.append(m.train())
        dm_losses, privacy = res["own"]
        eps, delta = (None if v != v else float(v) for v in privacy.tolist())
        a = sets[i]
        local.append(AnchorSet(a.images, a.labels, a.ipc, a.classes_present, [float(v) for v in dm_losses], eps, delta))
        losses.append(res["losses"].tolist())
        bytes_a.append(int(res["bytes"][0]))
        bytes_l.append(int(res["bytes"][1]))
    glob = global_anchors(local, cfg.anchor_mode)
    for r in range(cfg.rounds):
        round_logits.append([None if res is None else res["logits"][r] for res in results])
    out = DesaResult(trained, glob, local, bytes_a, bytes_l, round_logits, losses, adj, "gloo")
    out.failed = dict(sorted(failed.items()))
    restored = {(i, int(j), int(r)) for i, res in enumerate(results) if res is not None for j, r in res["lost"]}
    out.lost_links = sorted(set(lost) | restored)
    out.extra["resumed_from"] = start
    return out


def run_desa(
    models: Sequence[torch.nn.Module],
    train_sets: Sequence[tuple[torch.Tensor, torch.Tensor]],
    config: DesaConfig | None = None,
    *,
    backend: str = "inprocess",
    address: str = "127.0.0.1",
    port: int | None = None,
    timeout: float = 120.0,
    progress: Callable[[int], None] | None = None,
    fail: tuple[int, int] | None = None,
    local_anchors: Sequence[AnchorSet] | None = None,
    on_failure: str = "continue",
    checkpoint_dir: str | os.PathLike | None = None,
) -> DesaResult:
    """Run DeSA on the given clients (Algorithm 1): anchors once, then ``rounds`` rounds of logit exchange.

    Parameters
    ----------
    models : sequence of torch.nn.Module
        One per client (at least two), each with ``embed(x)`` and ``classify(h)``; architectures may
        differ. Never changed: the run trains copies.
    train_sets : sequence of (torch.Tensor, torch.Tensor)
        Each client's normalised images ``(N_i, ch, H, W)`` and labels ``(N_i,)``; image shapes must agree.
    config : DesaConfig, optional
        Defaults to the official settings (:class:`DesaConfig`).
    backend : {"inprocess", "gloo"}, default "inprocess"
        ``"gloo"``: one OS process per client, talking through ``torch.distributed`` over TCP.
    address : str, default "127.0.0.1"
        Where the gloo rendezvous listens (any address the clients can reach).
    port : int, optional
        Rendezvous port; a free one is picked when None.
    timeout : float, default 120.0
        Seconds a client waits on a peer before failing (gloo).
    progress : callable ``round -> None``, optional
        Called after every round.
    fail : (int, int), optional
        Fault injection for tests of the gloo engine: client ``fail[0]`` kills its own process (SIGKILL) at the
        start of round ``fail[1]`` (``-1``: before anchor synthesis).
    local_anchors : sequence of AnchorSet, optional
        Each client's local anchors from an earlier run (``DesaResult.local_anchors``): Phase 1 is skipped and
        these are exchanged instead (for ablations that share the anchors).
    on_failure : {"continue", "stop"}, default "continue"
        What a multi-process run does when a client process dies or fails after the anchors were exchanged.
        ``"continue"``: its neighbours find the dead link (gloo reports the closed connection, or the peer
        stays silent past ``timeout``), drop that peer and distil from the remaining neighbours' logits; the
        run finishes with the survivors and records the client in ``DesaResult.failed`` and the links in
        ``DesaResult.lost_links``. ``"stop"``: the run stops with :class:`ClientFailed` naming it. A client
        lost before the anchors are exchanged always stops the run (the anchors need every client).
    checkpoint_dir : str or os.PathLike, optional
        Multi-process only: every client saves its state there after the anchor exchange and after every
        round (older rounds are dropped once every live client has passed them). Calling again with the same
        folder, clients, data and settings resumes an interrupted run from the last round every live client
        saved (clients recorded as failed stay out); on the same seeds the resumed run gives the same anchors,
        logits and weights as an uninterrupted one.

    Returns
    -------
    DesaResult

    Notes
    -----
    ``backend="gloo"`` starts the clients with ``multiprocessing``'s *forkserver* method (*spawn* where the
    platform lacks it), so a script that calls it must guard its entry point with ``if __name__ == "__main__":``
    (as for ``torch.multiprocessing.spawn``); the models must be picklable (their classes importable).

    Raises
    ------
    InputError
        Fewer than two clients, models without ``embed``/``classify``, a topology that is not connected,
        ``ipc < 1``, classes no client holds, or any other bad setting.
    ClientFailed
        A client process died or failed (gloo) with ``on_failure="stop"``, before the anchors were exchanged,
        or every client failed.
    """
    if config is not None and not isinstance(config, DesaConfig):
        raise InputError(f"config must be a DesaConfig, got {type(config).__name__}")
    cfg = (config or DesaConfig()).validated()
    backend = check_choice(backend, "backend", ("inprocess", "gloo"))
    if not isinstance(address, str) or not address:
        raise InputError("address must be a host name or IP address")
    if port is not None:
        port = check_int(port, "port", min_val=1, max_val=65535)
    timeout = check_float(timeout, "timeout", min_val=0.0, include_boundaries="neither")
    if progress is not None and not callable(progress):
        raise InputError("progress must be callable (round -> None)")
    ms, data = check_inputs(models, train_sets, cfg)
    n = len(ms)
    adj = make_topology(cfg.topology, n, degree=cfg.degree, seed=cfg.seed)
    if fail is not None:
        if backend != "gloo" or not isinstance(fail, tuple) or len(fail) != 2:
            raise InputError("fail must be (client, round) and needs backend='gloo'")
        check_int(fail[0], "fail client", min_val=0, max_val=n - 1)
        check_int(fail[1], "fail round", min_val=-1)
    on_failure = check_choice(on_failure, "on_failure", ("continue", "stop"))
    if checkpoint_dir is not None:
        if backend != "gloo":
            raise InputError("checkpoint_dir needs backend='gloo'")
        if not isinstance(checkpoint_dir, (str, os.PathLike)):
            raise InputError(f"checkpoint_dir must be a folder path, got {type(checkpoint_dir).__name__}")
        checkpoint_dir = os.fspath(checkpoint_dir)
    given = None
    if local_anchors is not None:
        if not isinstance(local_anchors, Sequence) or len(local_anchors) != n:
            raise InputError(f"local_anchors must hold one AnchorSet per client ({n})")
        for i, a in enumerate(local_anchors):
            if not isinstance(a, AnchorSet) or a.ipc != cfg.ipc or a.images.shape[1:] != data[0][0].shape[1:]:
                raise InputError(f"local_anchors[{i}] is not an AnchorSet of ipc {cfg.ipc} on these images")
        given = list(local_anchors)
    t0 = time.perf_counter()
    if backend == "inprocess":
        from ..threads import single_thread

        with single_thread():
            res = _run_inprocess(ms, data, cfg, adj, progress, given)
    else:
        res = _run_gloo(
            ms, data, cfg, adj, progress, address, port, float(timeout), fail, given, on_failure, checkpoint_dir
        )
    res.seconds = time.perf_counter() - t0
    return res


# ------------------------------------------------------------------------------------------- evaluation
def accuracy_matrix(models: Sequence[torch.nn.Module], test_sets, *, batch_size: int = 256) -> np.ndarray:
    """``acc[i, j]``: accuracy of client ``i``'s model on client ``j``'s test set (eval mode, no gradients).

    Parameters
    ----------
    models : sequence of torch.nn.Module
    test_sets : sequence of (torch.Tensor, torch.Tensor)
    batch_size : int, default 256

    Returns
    -------
    numpy.ndarray
        ``(len(models), len(test_sets))``.
    """
    if isinstance(models, torch.nn.Module) or not isinstance(models, Sequence) or not models:
        raise InputError("models must be a non-empty list of modules")
    if not isinstance(test_sets, Sequence) or not test_sets:
        raise InputError("test_sets must be a non-empty list of (images, labels) pairs")
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    for i, m in enumerate(models):
        if not isinstance(m, torch.nn.Module):
            raise InputError(f"models[{i}] must be a torch.nn.Module")
    sets = []
    for j, pair in enumerate(test_sets):
        if not isinstance(pair, Sequence) or len(pair) != 2:
            raise InputError(f"test_sets[{j}] must be an (images, labels) pair")
        x = check_tensor(pair[0], f"test_sets[{j}] images", ndim=4)
        y = check_tensor(pair[1], f"test_sets[{j}] labels", ndim=1, dtype="integer")
        if len(x) != len(y):
            raise InputError(f"test_sets[{j}] has {len(x)} images but {len(y)} labels")
        sets.append((x, y))
    acc = np.zeros((len(models), len(sets)))
    for i, m in enumerate(models):
        was = m.training
        m.eval()
        with torch.no_grad():
            for j, (x, y) in enumerate(sets):
                pred = torch.cat([m(b).argmax(1) for b in x.split(batch_size)])
                acc[i, j] = float((pred == y).float().mean())
        m.train(was)
    return acc


def domain_summary(acc) -> dict[str, float]:
    """Intra, inter and worst accuracy from an accuracy matrix (the official evaluation).

    Parameters
    ----------
    acc : array-like
        Square ``(n, n)`` matrix from :func:`accuracy_matrix`, ``n >= 2``.

    Returns
    -------
    dict of str to float
        ``intra`` (mean of the diagonal), ``inter`` (mean over clients of the mean off-diagonal row),
        ``worst_intra``, ``worst_inter`` (the lowest client), and per client ``intra_<i>``, ``inter_<i>``.
    """
    from ..validation import check_array

    a = check_array(acc, "acc", ndim=2)
    if a.shape[0] != a.shape[1] or a.shape[0] < 2:
        raise InputError(f"acc must be a square matrix of at least two clients, got shape {a.shape}")
    n = a.shape[0]
    intra = np.diag(a)
    inter = np.array([(a[i].sum() - a[i, i]) / (n - 1) for i in range(n)])
    out = {
        "intra": float(intra.mean()),
        "inter": float(inter.mean()),
        "worst_intra": float(intra.min()),
        "worst_inter": float(inter.min()),
    }
    for i in range(n):
        out[f"intra_{i}"] = float(intra[i])
        out[f"inter_{i}"] = float(inter[i])
    return out
