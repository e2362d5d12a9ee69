"""``icml24 desa run``: decentralised DeSA on the offline digit domains (or Fashion-MNIST), one process per client.

Starts the clients over ``torch.distributed`` (gloo, 127.0.0.1 by default), shows a progress bar per round and
prints intra / inter / worst accuracy per client beside local training, with the bytes each client sent, and
writes them to a new run directory under ``--out``. A client
that dies is reported and the others finish (``--on-failure stop`` ends the run instead); ``--checkpoint-dir``
makes an interrupted run resumable.
"""

from __future__ import annotations

import argparse

from ..validation import check_choice, check_int, check_seed
from ..verbs import add_out_argument, finish_run, start_run

TOPOLOGIES = ("ring", "mesh", "random_regular")
DOMAINS = ("mnist", "digits", "mnistm", "synth", "noisy")


def register(subparsers, parents) -> None:
    """Add ``icml24 desa`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    p = subparsers.add_parser("desa", parents=parents, help="DeSA: decentralised FL with synthetic anchors")
    sub = p.add_subparsers(dest="desa_command", required=True)
    r = sub.add_parser("run", parents=parents, help="run DeSA with one process per client and print the table")
    add_arguments(r)
    r.set_defaults(func=run_command)


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the verb's arguments.

    Parameters
    ----------
    p : argparse.ArgumentParser

    Returns
    -------
    argparse.ArgumentParser
        ``p`` itself.
    """
    p.add_argument("--clients", type=int, default=5, help="number of clients, 2-10 (domains cycle; default 5)")
    p.add_argument("--topology", default="ring", help="ring (default), mesh or random_regular")
    p.add_argument("--rounds", type=int, default=20, help="communication rounds (default 20)")
    p.add_argument("--ipc", type=int, default=10, help="anchors per class and client (default 10)")
    p.add_argument("--dm-iterations", type=int, default=100, help="distribution-matching iterations (default 100)")
    p.add_argument("--n-train", type=int, default=300, help="training images per client (default 300)")
    p.add_argument("--anchor-mode", default="mean", help="mean (official code, default) or union (paper)")
    p.add_argument("--address", default="127.0.0.1", help="rendezvous address (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=None, help="rendezvous port (default: a free one)")
    p.add_argument("--inprocess", action="store_true", help="run the clients in this process instead")
    p.add_argument(
        "--dp",
        action="store_true",
        help="DP-SGD anchor synthesis (clip 2.0, noise 0.6); its (epsilon, delta) is on each AnchorSet (library API)",
    )
    p.add_argument("--task", default="digits", help="digits (offline domains, default) or fashion (data root)")
    p.add_argument(
        "--checkpoint-dir",
        default=None,
        help="save every client's state there each round; rerunning with the same folder resumes (multi-process)",
    )
    p.add_argument(
        "--on-failure",
        default="continue",
        help="continue (default: the other clients finish without a dead one) or stop (one-line error)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the data, the models and the run")
    add_out_argument(p)
    return p


def run_command(args: argparse.Namespace) -> int:
    """Run the verb.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    n = check_int(args.clients, "--clients", min_val=2, max_val=10)
    rounds = check_int(args.rounds, "--rounds", min_val=1)
    ipc = check_int(args.ipc, "--ipc", min_val=1)
    dm_iterations = check_int(args.dm_iterations, "--dm-iterations", min_val=0)
    n_train = check_int(args.n_train, "--n-train", min_val=20)
    topology = check_choice(args.topology, "--topology", TOPOLOGIES)
    anchor_mode = check_choice(args.anchor_mode, "--anchor-mode", ("mean", "union"))
    seed = check_seed(args.seed, "--seed")
    task = check_choice(args.task, "--task", ("digits", "fashion"))
    on_failure = check_choice(args.on_failure, "--on-failure", ("continue", "stop"))
    if args.checkpoint_dir is not None and args.inprocess:
        from ..errors import InputError

        raise InputError("--checkpoint-dir needs the multi-process run (drop --inprocess)")
    if args.port is not None:
        check_int(args.port, "--port", min_val=1, max_val=65535)
    backend = "inprocess" if args.inprocess else "gloo"
    run = start_run(
        args,
        "desa-run",
        f"run DeSA on {n} {task} clients ({topology}, {rounds} rounds, {n_train} training images and {ipc} anchors "
        f"per class each, {dm_iterations} distribution-matching iterations, backend {backend}), then local "
        "training alone for comparison",
    )
    import sys

    import numpy as np
    import torch
    from tqdm import tqdm

    from .baselines import local_training
    from .engine import DesaConfig, accuracy_matrix, domain_summary, run_desa
    from .experiments import client_models
    from .world import digit_domains

    n_test = max(10, n_train // 2)
    if task == "fashion":
        from .fashion import fashion_domains

        ds = fashion_domains(n, n_train=n_train, n_test=n_test, seed=seed)
    else:
        ds = digit_domains([DOMAINS[i % len(DOMAINS)] for i in range(n)], n_train=n_train, n_test=n_test, seed=seed)
    domains = [d.name for d in ds]
    train = [(torch.from_numpy((d.x_train - 0.5) / 0.5), torch.from_numpy(d.y_train)) for d in ds]
    test = [(torch.from_numpy((d.x_test - 0.5) / 0.5), torch.from_numpy(d.y_test)) for d in ds]
    models = client_models(n, 16, 8, seed)
    cfg = DesaConfig(
        rounds=rounds,
        ipc=ipc,
        dm_iterations=dm_iterations,
        dm_batch_real=64,
        dm_net_width=16,
        topology=topology,
        anchor_mode=anchor_mode,
        lr=0.05,
        momentum=0.9,
        dp=bool(args.dp),
        seed=seed,
    )
    print(f"{n} clients ({', '.join(domains)}), {topology}, {rounds} rounds, backend {backend}", flush=True)
    bar = tqdm(total=rounds, desc="rounds", unit="round", file=sys.stderr, disable=None)
    res = run_desa(
        models,
        train,
        cfg,
        backend=backend,
        address=args.address,
        port=args.port,
        progress=lambda r: bar.update(1),
        on_failure=on_failure,
        checkpoint_dir=args.checkpoint_dir,
    )
    bar.close()
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    if res.extra.get("resumed_from") is not None:
        say(f"resumed from {args.checkpoint_dir} after round {res.extra['resumed_from']}")
    for i, why in res.failed.items():
        say(f"client {i} failed ({why}); the others finished without it and are compared among themselves")
    keep = [i for i in range(n) if i not in res.failed]
    results = {
        "clients": n,
        "domains": domains,
        "failed": {str(i): str(why) for i, why in res.failed.items()},
        "seconds": res.seconds,
    }
    if len(keep) < 2:
        say(f"only client(s) {keep} finished: no inter-domain table")
        finish_run(run, results, lines)
        return 1
    models, train, test, domains = ([v[i] for i in keep] for v in (models, train, test, domains))
    trained, sent = [res.models[i] for i in keep], [res.bytes_sent[i] for i in keep]
    print("local training alone, for comparison...", flush=True)
    local = domain_summary(accuracy_matrix(local_training(models, train, cfg), test))
    ours = domain_summary(accuracy_matrix(trained, test))
    say(
        f"{'client':>7} {'domain':>8} {'model':>8} {'local intra':>11} {'local inter':>11} {'DeSA intra':>10} "
        f"{'DeSA inter':>10} {'bytes sent':>11}"
    )
    for k, i in enumerate(keep):
        say(
            f"{i:>7} {domains[k]:>8} {type(models[k]).__name__:>8} {local[f'intra_{k}']:>11.3f} "
            f"{local[f'inter_{k}']:>11.3f} {ours[f'intra_{k}']:>10.3f} {ours[f'inter_{k}']:>10.3f} "
            f"{sent[k]:>11,d}"
        )
    say(
        f"{'mean':>7} {'':>8} {'':>8} {local['intra']:>11.3f} {local['inter']:>11.3f} {ours['intra']:>10.3f} "
        f"{ours['inter']:>10.3f} {int(np.mean(sent)):>11,d}"
    )
    say(
        f"{'worst':>7} {'':>8} {'':>8} {local['worst_intra']:>11.3f} {local['worst_inter']:>11.3f} "
        f"{ours['worst_intra']:>10.3f} {ours['worst_inter']:>10.3f}"
    )
    anchors = int(np.mean([res.bytes_anchors[i] for i in keep]))
    logits = int(np.mean([res.bytes_logits[i] for i in keep])) // rounds
    say(f"anchors once: {anchors:,d} B per client; logits: {logits:,d} B per client per round; {res.seconds:.1f} s")
    results.update(
        finished=keep,
        local={k: float(v) for k, v in local.items()},
        desa={k: float(v) for k, v in ours.items()},
        bytes_sent=[int(b) for b in sent],
        bytes_anchors_per_client=anchors,
        bytes_logits_per_client_per_round=logits,
    )
    finish_run(run, results, lines)
    return 0


__all__ = ["register", "add_arguments", "run_command"]
