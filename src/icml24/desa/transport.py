"""DeSA's multi-process transport: one client per OS process over ``torch.distributed`` (gloo), the exchanges
between neighbours, failure handling (a dead peer is dropped, or :class:`~icml24.desa.config.ClientFailed`), and
per-round checkpoints from which an interrupted run resumes."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import signal
import socket
import tempfile
import time
import traceback
from datetime import timedelta
from typing import Callable, Sequence

import torch

from ..errors import InputError
from .anchors import AnchorSet, global_anchors
from .client import Client, nbytes, teacher
from .config import ClientFailed, DesaConfig, DesaResult, sample_clients


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
        client = Client(rank, model, x, y, cfg)
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
            bytes_anchors = (world - 1) * (nbytes(mine.images) + nbytes(presence))
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
                    bytes_logits += sent * nbytes(z)
                    for j in sorted(gone):
                        alive.discard(j)
                        lost.append((j, r))
                        queue.put(("lost", rank, r, j))
                losses.append(client.train_round(teacher(received)))
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


def run_gloo(models, data, cfg, adj, progress, address, port, timeout, fail, given, on_failure, ckdir):
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


__all__ = ["exchange", "spawn_clients", "save_result", "report_failure"]
