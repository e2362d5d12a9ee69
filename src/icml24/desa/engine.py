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

import os
import time
from typing import Callable, Sequence

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_choice, check_float, check_int, check_tensor
from .anchors import AnchorSet, global_anchors
from .client import Client, check_inputs, nbytes, teacher
from .config import (  # noqa: F401 - importable from here as before
    TOPOLOGIES,
    ClientFailed,
    DesaConfig,
    DesaResult,
    make_topology,
    sample_clients,
)
from .models import check_classifier
from .transport import exchange, report_failure, run_gloo, save_result, spawn_clients  # noqa: F401

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


def _run_inprocess(models, data, cfg, adj, progress, given) -> DesaResult:
    n = len(models)
    clients = [Client(i, models[i], data[i][0], data[i][1], cfg) for i in range(n)]
    local = [cl.synthesize() if given is None else given[i] for i, cl in enumerate(clients)]
    presence = torch.zeros(cfg.num_classes, dtype=torch.int64)
    bytes_anchors = [(n - 1) * (nbytes(a.images) + nbytes(presence)) for a in local]
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
                bytes_logits[i] += len(nbs) * nbytes(z[i])
            received = {j: z[j] for j in nbs} if cfg.lambda_kd > 0 else {}
            losses[i].append(clients[i].train_round(teacher(received)))
        if progress is not None:
            progress(r)
    return DesaResult(
        [cl.model for cl in clients], glob, local, bytes_anchors, bytes_logits, round_logits, losses, adj, "inprocess"
    )


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
        res = run_gloo(
            ms, data, cfg, adj, progress, address, port, float(timeout), fail, given, on_failure, checkpoint_dir
        )
    res.seconds = time.perf_counter() - t0
    return res


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

    Raises
    ------
    InputError
        Before any model runs: bad pairs, images a model cannot take (shape, or a forward that fails on one
        image), labels outside a model's classes. Every submodule's train/eval mode is restored in any case.
    """
    if isinstance(models, torch.nn.Module) or not isinstance(models, Sequence) or not models:
        raise InputError("models must be a non-empty list of modules")
    if not isinstance(test_sets, Sequence) or not test_sets:
        raise InputError("test_sets must be a non-empty list of (images, labels) pairs")
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    for i, m in enumerate(models):
        if not isinstance(m, torch.nn.Module):
            raise InputError(f"models[{i}] must be a torch.nn.Module, got {type(m).__name__}")
    sets = []
    for j, pair in enumerate(test_sets):
        if not isinstance(pair, Sequence) or len(pair) != 2:
            raise InputError(f"test_sets[{j}] must be an (images, labels) pair")
        x = check_tensor(pair[0], f"test_sets[{j}] images", ndim=4)
        y = check_tensor(pair[1], f"test_sets[{j}] labels", ndim=1, dtype="integer")
        if len(x) != len(y):
            raise InputError(f"test_sets[{j}] has {len(x)} images but {len(y)} labels")
        for i, m in enumerate(models):  # shapes and classes first: no model runs on images it cannot take
            k = check_classifier(m, x, f"test_sets[{j}] images", f"models[{i}]")
            if int(y.min()) < 0 or int(y.max()) >= k:
                got = f"{int(y.min())}..{int(y.max())}"
                raise InputError(f"test_sets[{j}] labels must lie in [0, {k}) for models[{i}], got {got}")
        sets.append((x, y))
    acc = np.zeros((len(models), len(sets)))
    for i, m in enumerate(models):
        modes = [(sub, sub.training) for sub in m.modules()]
        try:
            m.eval()
            with torch.no_grad():
                for j, (x, y) in enumerate(sets):
                    pred = torch.cat([m(b).argmax(1) for b in x.split(batch_size)])
                    acc[i, j] = float((pred == y).float().mean())
        finally:  # every submodule back in its own mode, whatever happened
            for sub, mode in modes:
                sub.training = mode
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
    if a.min() < 0 or a.max() > 1:
        raise InputError(f"acc must hold accuracies in [0, 1], got {a.min():g}..{a.max():g}")
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
