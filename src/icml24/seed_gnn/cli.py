"""``icml24 seed-gnn edit``: pretrain a backbone, pick the paper's targets, edit them one by one."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import InputError
from ..runs import atomic_write_text
from ..threads import single_thread
from ..verbs import add_out_argument, finish_run, start_run


def register(subparsers, parents) -> None:
    """Add ``icml24 seed-gnn edit`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The core CLI's sub-command action.
    parents : list of argparse.ArgumentParser
        The common options (``--debug``, ``--verbose``).
    """
    sg = subparsers.add_parser("seed-gnn", parents=parents, help="SEED-GNN sequential GNN editing")
    sg.set_defaults(help_parser=sg)
    sg_sub = sg.add_subparsers(dest="verb", parser_class=type(sg), metavar="{edit}")
    e = sg_sub.add_parser("edit", parents=parents, help="edit the paper's targets one after another")
    e.add_argument(
        "--data",
        default="auto",
        choices=[
            "auto",
            "cora",
            "citeseer",
            "pubmed",
            "csbm",
            "amazoncomputers",
            "amazonphoto",
            "coauthorcs",
            "coauthorphysics",
            "ogbn-arxiv",
            "ogbn-products",
        ],
        help="a graph from the data root (cora, citeseer, pubmed, amazon*, coauthor*), csbm (synthetic), "
        "auto (cora when present)",
    )
    e.add_argument("--model", default="gcn", choices=["gcn", "sage", "gin"], help="the backbone GNN to pretrain")
    e.add_argument(
        "--editor",
        default="seed",
        choices=["seed", "egnn", "finetune", "gre", "gre+"],
        help="the editing method: SEED-GNN, EGNN, plain fine-tuning, GRE or GRE+",
    )
    e.add_argument("--edits", type=int, default=50, help="number of sequential edits")
    e.add_argument("--seed", type=int, default=0, help="seeds the pretraining, the split and the targets")
    e.add_argument("--official-quirk", action="store_true", help="reproduce the official neighbour-index bug")
    e.add_argument(
        "--save-state", action="store_true", help="also save the editor state as editor-state.pt in the run directory"
    )
    add_out_argument(e)
    e.set_defaults(func=edit_command)


def edit_command(args: argparse.Namespace) -> int:
    """Run ``icml24 seed-gnn edit`` from parsed arguments.

    Pretrains the backbone, selects the targets, edits them one after another and writes ``results.json``
    (the summary), ``report.md`` (the printed table), ``edits.jsonl`` (one record per edit), a drawdown and
    success-rate plot and, with ``--save-state``, ``editor-state.pt`` to a new run directory under ``--out``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options: ``data``, ``model``, ``editor``, ``edits``, ``seed``, ``official_quirk``,
        ``save_state`` and ``out``.

    Returns
    -------
    int
        The exit status, 0.

    Raises
    ------
    InputError
        When ``--edits`` is below 1 or ``--seed`` is negative.
    """
    if args.edits < 1 or args.seed < 0:
        raise InputError("--edits must be >= 1 and --seed >= 0")
    quirk = " (official neighbour-index quirk)" if (args.official_quirk and args.editor == "seed") else ""
    run = start_run(
        args,
        "seed-gnn-edit",
        f"seed-gnn edit: pretrain {args.model} on {args.data} (seed {args.seed}), then make {args.edits} "
        f"sequential edits with {args.editor}{quirk}",
    )
    from tqdm.auto import tqdm

    from .records import summarize
    from .workflow import load_graph, make_editor, pretrained, select_targets

    report = []

    def say(line: str = "", write=print) -> None:
        write(line)
        report.append(line)

    with single_thread():
        data = load_graph(args.data, seed=42 + args.seed)
        gnn, pre = pretrained(args.model, data, seed=args.seed)
        say(
            f"{data.name}: {data.num_nodes} nodes; {args.model} pretrained (best epoch {pre.best_epoch}): "
            f"test accuracy {100 * pre.test_acc:.1f}%"
        )
        nodes, labels = select_targets(gnn, data, args.edits, seed=42 + args.seed)
        kwargs = {"official_neighbor_quirk": True} if quirk else {}
        editor = make_editor(args.editor, gnn, data, **kwargs)
        say(
            f"{'edit':>4} {'node':>5} {'label':>5} {'steps':>5} {'ms':>7} {'fixed':>5} {'SR':>5} {'test%':>6} {'DD':>6}"
        )
        bar = tqdm(list(zip(nodes, labels)), desc=args.editor, unit="edit", file=sys.stderr, disable=None)
        lines = []
        for n, l in bar:
            r = editor.edit(n, l)
            lines.append(json.dumps(r.as_dict()))
            say(
                f"{r.index + 1:>4} {r.node:>5} {r.label:>5} {r.steps:>5} {1e3 * r.seconds:>7.1f} "
                f"{'yes' if r.target_correct else 'no':>5} {r.success_rate:>5.2f} {100 * r.test_acc:>6.1f} "
                f"{r.drawdown:>6.1f}",
                write=tqdm.write,
            )
        bar.close()
    s = summarize(editor.log)
    atomic_write_text(run.path / "edits.jsonl", "\n".join(lines) + "\n")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.8))
    ax = fig.subplots(1, 2)
    xs = [r.index + 1 for r in editor.log]
    ax[0].plot(xs, [r.drawdown for r in editor.log])
    ax[0].set(title=f"{args.editor} on {args.model}: test drawdown (points)", xlabel="edit")
    ax[1].plot(xs, [r.success_rate for r in editor.log])
    ax[1].set(title="success rate over targets so far", xlabel="edit", ylim=(0, 1.05))
    marks = "  ".join(f"DD@{c} {s[f'dd@{c}']:.1f} SR@{c} {s[f'sr@{c}']:.2f}" for c in (1, 10, 25, 50) if f"dd@{c}" in s)
    say()
    say(marks)
    say(
        f"max DD {s['max_dd']:.1f}, mean DD {s['mean_dd']:.2f}, mean SR {s['mean_sr']:.3f}, "
        f"{s['ms_per_edit']:.1f} ms and {s['mean_steps']:.1f} steps per edit"
    )
    results = {
        "data": data.name,
        "num_nodes": int(data.num_nodes),
        "pretrain_best_epoch": int(pre.best_epoch),
        "pretrain_test_acc": float(pre.test_acc),
        "base_test_acc": editor.base_acc[2],
        **s,
    }
    finish_run(run, results, report, figures={"drawdown-success": fig})
    print(f"per-edit log: {run.path / 'edits.jsonl'}")
    if args.save_state:
        print(f"editor state: {editor.save(run.path / 'editor-state.pt')}")
    return 0
