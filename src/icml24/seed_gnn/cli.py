"""``icml24 seed-gnn edit``: pretrain a backbone, pick the paper's targets, edit them one by one."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import InputError
from ..runs import RunDir, artifacts_to, atomic_write_json, atomic_write_text, save_figure
from ..threads import single_thread


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
    e.add_argument("--model", default="gcn", choices=["gcn", "sage", "gin"])
    e.add_argument("--editor", default="seed", choices=["seed", "egnn", "finetune", "gre", "gre+"])
    e.add_argument("--edits", type=int, default=50, help="number of sequential edits (default 50)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--official-quirk", action="store_true", help="reproduce the official neighbour-index bug")
    e.add_argument("--save-state", default=None, metavar="PATH", help="save the editor state here")
    e.add_argument("--out", default="runs", help="folder for the run directory (default runs/)")
    e.set_defaults(func=edit_command)


def edit_command(args: argparse.Namespace) -> int:
    """Run ``icml24 seed-gnn edit`` from parsed arguments.

    Pretrains the backbone, selects the targets, edits them one after another and writes ``edits.jsonl``,
    ``summary.json`` and a drawdown and success-rate plot to a new run directory.

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
    from tqdm.auto import tqdm

    from .records import summarize
    from .workflow import load_graph, make_editor, pretrained, select_targets

    config = {
        "command": "seed-gnn edit",
        "data": args.data,
        "model": args.model,
        "editor": args.editor,
        "edits": args.edits,
        "seed": args.seed,
        "official_neighbor_quirk": args.official_quirk,
    }
    with single_thread():
        data = load_graph(args.data, seed=42 + args.seed)
        gnn, pre = pretrained(args.model, data, seed=args.seed)
        print(
            f"{data.name}: {data.num_nodes} nodes; {args.model} pretrained (best epoch {pre.best_epoch}): "
            f"test accuracy {100 * pre.test_acc:.1f}%"
        )
        nodes, labels = select_targets(gnn, data, args.edits, seed=42 + args.seed)
        kwargs = {"official_neighbor_quirk": True} if (args.official_quirk and args.editor == "seed") else {}
        editor = make_editor(args.editor, gnn, data, **kwargs)
        run = RunDir.create(args.out, f"seed-gnn-edit-{args.model}-{args.editor}", config)
        head = (
            f"{'edit':>4} {'node':>5} {'label':>5} {'steps':>5} {'ms':>7} {'fixed':>5} {'SR':>5} {'test%':>6} {'DD':>6}"
        )
        print(head)
        bar = tqdm(list(zip(nodes, labels)), desc=args.editor, unit="edit", file=sys.stderr, disable=None)
        lines = []
        for n, l in bar:
            r = editor.edit(n, l)
            lines.append(json.dumps(r.as_dict()))
            tqdm.write(
                f"{r.index + 1:>4} {r.node:>5} {r.label:>5} {r.steps:>5} {1e3 * r.seconds:>7.1f} "
                f"{'yes' if r.target_correct else 'no':>5} {r.success_rate:>5.2f} {100 * r.test_acc:>6.1f} "
                f"{r.drawdown:>6.1f}"
            )
        bar.close()
    s = summarize(editor.log)
    atomic_write_text(run.path / "edits.jsonl", "\n".join(lines) + "\n")
    atomic_write_json(run.path / "summary.json", {"base_test_acc": editor.base_acc[2], **s})
    if args.save_state:
        editor.save(args.save_state)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.8))
    ax = fig.subplots(1, 2)
    xs = [r.index + 1 for r in editor.log]
    ax[0].plot(xs, [r.drawdown for r in editor.log])
    ax[0].set(title=f"{args.editor} on {args.model}: test drawdown (points)", xlabel="edit")
    ax[1].plot(xs, [r.success_rate for r in editor.log])
    ax[1].set(title="success rate over targets so far", xlabel="edit", ylim=(0, 1.05))
    with artifacts_to(run.path):
        png = save_figure(fig, "drawdown-success")
    marks = "  ".join(f"DD@{c} {s[f'dd@{c}']:.1f} SR@{c} {s[f'sr@{c}']:.2f}" for c in (1, 10, 25, 50) if f"dd@{c}" in s)
    print(
        f"\n{marks}\nmax DD {s['max_dd']:.1f}, mean DD {s['mean_dd']:.2f}, mean SR {s['mean_sr']:.3f}, "
        f"{s['ms_per_edit']:.1f} ms and {s['mean_steps']:.1f} steps per edit"
    )
    print(f"plot: {png}\nlog: {run.path / 'edits.jsonl'}")
    return 0
