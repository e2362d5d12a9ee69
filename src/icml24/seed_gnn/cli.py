"""``icml24 seed-gnn edit``: pretrain a backbone, pick the paper's targets, edit them one by one."""

from __future__ import annotations

import json
import sys

from ..runs import RunDir, artifacts_to, atomic_write_json, atomic_write_text, save_figure
from ..threads import single_thread
from .editor import summarize
from .protocol import load_graph, make_editor, pretrained, select_targets


def edit_command(args) -> int:
    from tqdm.auto import tqdm

    config = {"command": "seed-gnn edit", "data": args.data, "model": args.model, "editor": args.editor,
              "edits": args.edits, "seed": args.seed, "official_neighbor_quirk": args.official_quirk}
    with single_thread():
        data = load_graph(args.data, seed=42 + args.seed)
        gnn, pre = pretrained(args.model, data, seed=args.seed)
        print(f"{data.name}: {data.num_nodes} nodes; {args.model} pretrained (best epoch {pre.best_epoch}): "
              f"test accuracy {100 * pre.test_acc:.1f}%")
        nodes, labels = select_targets(gnn, data, args.edits, seed=42 + args.seed)
        kwargs = {"official_neighbor_quirk": True} if (args.official_quirk and args.editor == "seed") else {}
        editor = make_editor(args.editor, gnn, data, **kwargs)
        run = RunDir.create(args.out, f"seed-gnn-edit-{args.model}-{args.editor}", config)
        head = f"{'edit':>4} {'node':>5} {'label':>5} {'steps':>5} {'ms':>7} {'fixed':>5} {'SR':>5} {'test%':>6} {'DD':>6}"
        print(head)
        bar = tqdm(list(zip(nodes, labels)), desc=args.editor, unit="edit", file=sys.stderr, disable=None)
        lines = []
        for n, l in bar:
            r = editor.edit(n, l)
            lines.append(json.dumps(r.as_dict()))
            tqdm.write(f"{r.index + 1:>4} {r.node:>5} {r.label:>5} {r.steps:>5} {1e3 * r.seconds:>7.1f} "
                       f"{'yes' if r.target_correct else 'no':>5} {r.success_rate:>5.2f} {100 * r.test_acc:>6.1f} "
                       f"{r.drawdown:>6.1f}")
        bar.close()
    s = summarize(editor.log)
    atomic_write_text(run.path / "edits.jsonl", "\n".join(lines) + "\n")
    atomic_write_json(run.path / "summary.json", {"base_test_acc": editor.base_acc[2], **s})
    if args.save_state:
        editor.save(args.save_state)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    xs = [r.index + 1 for r in editor.log]
    ax[0].plot(xs, [r.drawdown for r in editor.log])
    ax[0].set(title=f"{args.editor} on {args.model}: test drawdown (points)", xlabel="edit")
    ax[1].plot(xs, [r.success_rate for r in editor.log])
    ax[1].set(title="success rate over targets so far", xlabel="edit", ylim=(0, 1.05))
    with artifacts_to(run.path):
        png = save_figure(fig, "drawdown-success")
    marks = "  ".join(f"DD@{c} {s[f'dd@{c}']:.1f} SR@{c} {s[f'sr@{c}']:.2f}" for c in (1, 10, 25, 50) if f"dd@{c}" in s)
    print(f"\n{marks}\nmax DD {s['max_dd']:.1f}, mean DD {s['mean_dd']:.2f}, mean SR {s['mean_sr']:.3f}, "
          f"{s['ms_per_edit']:.1f} ms and {s['mean_steps']:.1f} steps per edit")
    print(f"plot: {png}\nlog: {run.path / 'edits.jsonl'}")
    return 0
