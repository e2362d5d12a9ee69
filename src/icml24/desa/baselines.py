"""The peers DeSA is compared with: local training, anchors-only training and gossip FedAvg.

- *Local training*: each client trains on its own data only (the paper's "local" row), same epochs, batch and
  learning rate as DeSA's client objective.
- *Anchors-only*: each client trains on the global anchors only (what the anchors alone teach).
- *Gossip FedAvg* (decentralised FedAvg / D-PSGD style, Lian et al. 2017): one shared architecture; each round
  every sampled client trains one epoch on its data, sends its full weights to its sampled neighbours over the
  same topology, and replaces its weights by the uniform mean of its own and the received ones. It runs in-process
  or one process per client over ``torch.distributed`` (gloo); the weights' payload bytes are counted as sent.

"DeSA without REG" and "without KD" are :func:`~icml24.desa.run_desa` with ``lambda_reg=0`` or ``lambda_kd=0``.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError
from ..validation import check_choice, check_float, check_int, check_tensor
from .anchors import AnchorSet
from .client import check_inputs
from .config import DesaConfig, make_topology, sample_clients
from .optim import SGD
from .transport import report_failure, save_result, spawn_clients

__all__ = ["GossipResult", "ce_epoch", "local_training", "anchors_only_training", "gossip_fedavg"]


def ce_epoch(model: torch.nn.Module, opt, x: torch.Tensor, y: torch.Tensor, batch_size: int, generator) -> float:
    """One epoch of cross-entropy SGD over ``(x, y)`` in a shuffled order.

    Parameters
    ----------
    model : torch.nn.Module
        Trained in place.
    opt : torch.optim.Optimizer
    x, y : torch.Tensor
    batch_size : int
    generator : torch.Generator
        Draws the order.

    Returns
    -------
    float
        Mean loss.
    """
    total, steps = 0.0, 0
    for idx in torch.randperm(len(y), generator=generator).split(batch_size):
        loss = F.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        total += float(loss.detach())
        steps += 1
    return total / max(steps, 1)


def _gen(cfg: DesaConfig, rank: int) -> torch.Generator:
    seq = np.random.SeedSequence([cfg.seed, rank, 31])
    return torch.Generator().manual_seed(int(seq.generate_state(1)[0]))


def local_training(models, train_sets, config: DesaConfig | None = None) -> list[torch.nn.Module]:
    """Each client trains a copy of its model on its own data only (``rounds x local_epochs`` epochs of CE).

    Parameters
    ----------
    models : sequence of torch.nn.Module
        One per client (at least two, as for DeSA); never changed.
    train_sets : sequence of (torch.Tensor, torch.Tensor)
    config : DesaConfig, optional
        ``rounds``, ``local_epochs``, ``lr``, ``batch_size``, ``seed`` are used.

    Returns
    -------
    list of torch.nn.Module
        Trained copies.
    """
    if config is not None and not isinstance(config, DesaConfig):
        raise InputError(f"config must be a DesaConfig, got {type(config).__name__}")
    cfg = (config or DesaConfig()).validated()
    ms, data = check_inputs(models, train_sets, cfg)
    from ..threads import single_thread

    out = []
    with single_thread():
        for i, (m, (x, y)) in enumerate(zip(ms, data)):
            m = copy.deepcopy(m).train()
            opt = SGD(m.parameters(), lr=cfg.lr, momentum=cfg.momentum)
            g = _gen(cfg, i)
            for _ in range(cfg.rounds * cfg.local_epochs):
                ce_epoch(m, opt, x, y, cfg.batch_size, g)
            out.append(m)
    return out


def anchors_only_training(models, anchors: AnchorSet, config: DesaConfig | None = None) -> list[torch.nn.Module]:
    """Each client trains a copy of its model on the global anchors only (same epochs as DeSA).

    Parameters
    ----------
    models : sequence of torch.nn.Module
    anchors : AnchorSet
        The global anchors (:func:`~icml24.desa.global_anchors`).
    config : DesaConfig, optional

    Returns
    -------
    list of torch.nn.Module
        Trained copies.
    """
    if config is not None and not isinstance(config, DesaConfig):
        raise InputError(f"config must be a DesaConfig, got {type(config).__name__}")
    cfg = (config or DesaConfig()).validated()
    if not isinstance(anchors, AnchorSet):
        raise InputError(f"anchors must be an AnchorSet, got {type(anchors).__name__}")
    x = check_tensor(anchors.images, "anchors images", ndim=4)
    y = anchors.labels
    ms, _ = check_inputs(models, [(x, y)] * len(models) if isinstance(models, Sequence) else [], cfg, True, "anchors")
    from ..threads import single_thread

    out = []
    with single_thread():
        for i, m in enumerate(ms):
            m = copy.deepcopy(m).train()
            opt = SGD(m.parameters(), lr=cfg.lr, momentum=cfg.momentum)
            g = _gen(cfg, i)
            for _ in range(cfg.rounds * cfg.local_epochs):
                ce_epoch(m, opt, x, y, cfg.batch_size, g)
            out.append(m)
    return out


@dataclass
class GossipResult:
    """What :func:`gossip_fedavg` returns.

    Parameters
    ----------
    models : list of torch.nn.Module
        Each client's final model.
    bytes_sent : list of int
        Payload bytes each client sent (its weights, to each sampled neighbour, every round).
    topology : list of list of int
    backend : str
    seconds : float
    """

    models: list
    bytes_sent: list
    topology: list
    backend: str
    seconds: float = 0.0


def _flat(m: torch.nn.Module) -> torch.Tensor:
    return torch.cat([t.detach().reshape(-1).float() for t in m.state_dict().values()])


def _load_flat(m: torch.nn.Module, v: torch.Tensor) -> None:
    sd, k = m.state_dict(), 0
    new = {}
    for name, t in sd.items():
        new[name] = v[k : k + t.numel()].view_as(t).to(t.dtype)
        k += t.numel()
    m.load_state_dict(new)


class _GossipClient:
    def __init__(self, rank, model, x, y, cfg):
        self.model = copy.deepcopy(model).train()
        self.x, self.y, self.cfg = x, y, cfg
        self.opt = SGD(self.model.parameters(), lr=cfg.lr, momentum=cfg.momentum)
        self.g = _gen(cfg, rank)

    def local(self) -> torch.Tensor:
        for _ in range(self.cfg.local_epochs):
            ce_epoch(self.model, self.opt, self.x, self.y, self.cfg.batch_size, self.g)
        return _flat(self.model)

    def mix(self, own: torch.Tensor, received: dict[int, torch.Tensor]) -> None:
        vs = [own] + [received[j] for j in sorted(received)]
        _load_flat(self.model, torch.stack(vs).mean(0))


def _gossip_worker(rank, world, address, port, payload, out_dir, timeout, fail_at, queue, release) -> None:
    import os

    import torch.distributed as dist

    torch.set_num_threads(1)
    try:
        model, x, y, cfg, adj = payload
        dist.init_process_group(
            "gloo",
            init_method=f"tcp://{address}:{port}",
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=timeout),
        )
        cl = _GossipClient(rank, model, x, y, cfg)
        sent = 0
        for r in range(cfg.rounds):
            if fail_at == r:
                os._exit(3)
            sampled = sample_clients(world, cfg.client_ratio, r, cfg.seed)
            if rank not in sampled:
                queue.put(("round", rank, r, -1))
                continue
            v = cl.local()
            nbs = [j for j in adj[rank] if j in sampled]
            bufs = {j: torch.empty_like(v) for j in nbs}
            reqs = [dist.isend(v, j, tag=r) for j in nbs] + [dist.irecv(bufs[j], j, tag=r) for j in nbs]
            for q in reqs:
                q.wait()
            sent += len(nbs) * v.numel() * v.element_size()
            cl.mix(v, bufs)
            queue.put(("round", rank, r, -1))
        save_result(out_dir, rank, {"state": cl.model.state_dict(), "bytes": torch.tensor([sent])})
        release.wait(timeout + 60)
        queue.close()
        queue.join_thread()
        os._exit(0)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        report_failure(out_dir, rank, exc)
        raise SystemExit(1) from None


def gossip_fedavg(
    model: torch.nn.Module,
    train_sets,
    config: DesaConfig | None = None,
    *,
    backend: str = "inprocess",
    address: str = "127.0.0.1",
    port: int | None = None,
    timeout: float = 120.0,
    progress: Callable[[int], None] | None = None,
) -> GossipResult:
    """Decentralised (gossip) FedAvg with one shared architecture over ``config.topology``.

    Parameters
    ----------
    model : torch.nn.Module
        The common initial model (every client starts from a copy; never changed).
    train_sets : sequence of (torch.Tensor, torch.Tensor)
        One per client (at least two).
    config : DesaConfig, optional
        ``rounds``, ``local_epochs``, ``lr``, ``batch_size``, ``topology``, ``degree``, ``client_ratio``,
        ``seed`` are used.
    backend : {"inprocess", "gloo"}, default "inprocess"
    address : str, default "127.0.0.1"
    port : int, optional
    timeout : float, default 120.0
    progress : callable ``round -> None``, optional

    Returns
    -------
    GossipResult
    """
    if config is not None and not isinstance(config, DesaConfig):
        raise InputError(f"config must be a DesaConfig, got {type(config).__name__}")
    cfg = (config or DesaConfig()).validated()
    if not isinstance(model, torch.nn.Module):
        raise InputError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    backend = check_choice(backend, "backend", ("inprocess", "gloo"))
    timeout = check_float(timeout, "timeout", min_val=0.0, include_boundaries="neither")
    if port is not None:
        port = check_int(port, "port", min_val=1, max_val=65535)
    if (
        not isinstance(train_sets, Sequence)
        or isinstance(train_sets, tuple)
        and len(train_sets) == 2
        and isinstance(train_sets[0], torch.Tensor)
    ):
        raise InputError("train_sets must be a list of (images, labels) pairs, one per client")
    n = len(train_sets)
    copies = [copy.deepcopy(model) for _ in range(n)]
    ms, data = check_inputs(copies, train_sets, cfg, need_models=False)
    adj = make_topology(cfg.topology, n, degree=cfg.degree, seed=cfg.seed)
    t0 = time.perf_counter()
    if backend == "inprocess":
        from ..threads import single_thread

        with single_thread():
            clients = [_GossipClient(i, model, data[i][0], data[i][1], cfg) for i in range(n)]
            sent = [0] * n
            for r in range(cfg.rounds):
                sampled = sample_clients(n, cfg.client_ratio, r, cfg.seed)
                vs = {i: clients[i].local() for i in sampled}
                for i in sampled:
                    nbs = [j for j in adj[i] if j in sampled]
                    sent[i] += len(nbs) * vs[i].numel() * vs[i].element_size()
                    clients[i].mix(vs[i], {j: vs[j] for j in nbs})
                if progress is not None:
                    progress(r)
        models = [c.model for c in clients]
    else:
        payloads = [(model, data[i][0], data[i][1], cfg, adj) for i in range(n)]
        results, _, _ = spawn_clients(
            _gossip_worker,
            payloads,
            cfg.rounds,
            progress,
            address,
            port,
            float(timeout),
            None,
            60.0,
        )
        models = []
        for res in results:
            m = copy.deepcopy(model)
            m.load_state_dict(res["state"])
            models.append(m.train())
        sent = [int(res["bytes"][0]) for res in results]
    return GossipResult(models, sent, adj, backend, time.perf_counter() - t0)
