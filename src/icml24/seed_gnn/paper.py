"""The claims of "GNNs Also Deserve Editing, and They Need It More Than Once" (SEED-GNN, ICML 2024).

Protocol as the official code: a backbone pretrained inductively on Cora (official split: train_rest, 500
validation, 500 test), 50 misclassified validation nodes edited one after another, drawdown (DD) against the
plain GNN's test accuracy, success rate (SR) over all targets so far. The three editors run on the same
pretrained GNN and the same targets in one call, with GRE (whole-GNN fine-tuning with rewired gradients, a
later peer) measured beside them and reported, not judged. Drawdown is compared by its mean over the sequence
(the paper's "Avg DD"); DD at edits 1/10/25/50 and the max are reported beside it.
"""

from __future__ import annotations

from ..claims import Claim, Scale
from ..registry import method
from ..runs import save_figure
from ..threads import single_thread
from .editor import summarize
from .protocol import load_graph, pretrained, run_editors, select_targets

SLUG = "seed_gnn"
SR_MIN = 0.95
EDITOR_KEYS = ("seed", "egnn", "finetune")  # the claim's ordering
REPORTED_KEYS = EDITOR_KEYS + ("gre",)  # GRE (gradient rewiring, a later peer) is measured and reported only


def sequence_metrics(model: str, scale: Scale, seed: int, data_name: str = "auto") -> dict[str, float]:
    """Pretrain ``model``, pick the targets, run the editors; flat metrics prefixed by editor."""
    edits = scale.pick(8, 50, 50)
    epochs = scale.pick(200 if model == "gcn" else 60, 200, 200)
    with single_thread():
        data = load_graph(data_name, seed=42 + seed)
        gnn, pre = pretrained(model, data, seed=seed, epochs=epochs)
        nodes, labels = select_targets(gnn, data, edits, seed=42 + seed)
        logs = run_editors(gnn, data, nodes, labels, REPORTED_KEYS)
    out: dict[str, float] = {"on_cora": float(data.name == "cora"), "edits": float(len(nodes)),
                             "base_test_acc": pre.test_acc}
    for k, recs in logs.items():
        for name, v in summarize(recs).items():
            if name.startswith(("dd@", "sr@")) or name in ("dd_last", "sr_last", "max_dd", "mean_dd", "mean_sr",
                                                           "mean_steps", "ms_per_edit"):
                out[f"{k}_{name}"] = v
    _plot(model, logs)
    return out


def _plot(model: str, logs) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    for k, recs in logs.items():
        xs = [r.index + 1 for r in recs]
        ax[0].plot(xs, [r.drawdown for r in recs], label=k)
        ax[1].plot(xs, [r.success_rate for r in recs], label=k)
    ax[0].set(title=f"{model}: test drawdown (points)", xlabel="edit")
    ax[1].set(title=f"{model}: success rate over targets so far", xlabel="edit", ylim=(0, 1.05))
    ax[0].legend()
    save_figure(fig, f"seed_gnn-{model}")


def _ordering(m: dict[str, float], prefix: str = "") -> bool:
    s, e, f = (m[f"{prefix}{k}_mean_dd"] for k in EDITOR_KEYS)
    return m[f"{prefix}seed_sr_last"] >= SR_MIN and s < e and f > max(s, e)


def _run_gcn(scale: Scale, seed: int) -> dict[str, float]:
    return sequence_metrics("gcn", scale, seed)


ROBUSTNESS = Claim(
    key=f"{SLUG}/sequential-robustness",
    statement=(f"After 50 sequential edits of a GCN on Cora, SEED-GNN's success rate over all targets is at least "
               f"{SR_MIN} and its mean drawdown is lower than EGNN's; fine-tuning the whole GNN has the largest "
               "mean drawdown."),
    run=_run_gcn, holds=_ordering, headline="seed_mean_dd", baseline="egnn_mean_dd",
)


def _run_backbones(scale: Scale, seed: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for model in ("sage", "gin"):
        for k, v in sequence_metrics(model, scale, seed).items():
            out[f"{model}_{k}"] = v
    return out


def _holds_backbones(m: dict[str, float]) -> bool:
    return _ordering(m, "sage_") and _ordering(m, "gin_")


BACKBONES = Claim(
    key=f"{SLUG}/backbones",
    statement=("The same ordering holds for GraphSAGE and GIN on Cora: SEED-GNN keeps success rate >= "
               f"{SR_MIN} with a lower mean drawdown than EGNN, and whole-GNN fine-tuning drops the most."),
    run=_run_backbones, holds=_holds_backbones, headline="gin_seed_mean_dd", baseline="gin_egnn_mean_dd",
)

METHOD = method(SLUG, (ROBUSTNESS, BACKBONES))
