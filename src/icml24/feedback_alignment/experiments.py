"""The claims' experiments (Robertson & Koyejo, ICML 2024, arXiv 2306.01870); declared in :mod:`.paper`.

All three run on scikit-learn's digits (``icml24.data.digits``, pixels in [0, 1], stratified 75/25 split)
with the MLP ``64 -> h -> h -> n_classes`` of :func:`~icml24.feedback_alignment.models.make_mlp` (ReLU,
Gaussian init ``std = init_scale/sqrt(fan_in)``, random feedback of std ``1/sqrt(fan_in)``), full-batch
gradient descent and cross-entropy, on one thread (their matrices are small, at most 1347 x 128: one thread is
as fast as two on an idle machine, and on a shared one two busy threads slow full-batch steps several-fold). The paper
validates on MNIST, CIFAR-100 and Tiny-ImageNet; none of them is available offline here, so PAPER scale runs
the same experiments longer and with more seeds on digits, and says so in the log.

* :func:`run_conservation`: the drift of the conserved quantity against the step size, for FA, backprop and
  FA with tanh.
* :func:`run_alignment`: alignment ``cos(B, W^T)`` and incoming norms along training from small
  initialisation, FA against backprop.
* :func:`run_multiclass`: test accuracy of backprop, FA and FA with an aligned initialisation on 2, 5 and 10
  classes, over seeds, judged on paired differences.

Beyond the claims, :func:`fashion_mnist_cnn` compares the rules on a small CNN trained on Fashion-MNIST from
the data root (test accuracy and seconds per epoch, as a table: :func:`format_table`).
"""

from __future__ import annotations

import logging
import math

import numpy as np
import torch
from matplotlib.figure import Figure

from ..claims import Scale
from ..data import digits, fashion_mnist
from ..runs import artifact_dir, note_substitution, save_figure
from ..threads import single_thread
from .diagnostics import (
    AlignmentRecorder,
    alignment_angles,
    incoming_norms,
    layer_conserved_quantity,
    potential,
    update_alignment,
)
from .models import align_init_, make_cnn, make_mlp
from .network import FeedbackNetwork, get_rule
from .training import accuracy, train

log = logging.getLogger(__name__)


def _say_what_paper_scale_lacks(scale: Scale) -> None:
    if scale is Scale.PAPER:
        note_substitution(
            "the paper's MNIST, CIFAR-100 and Tiny-ImageNet are not available offline: scikit-learn's digits "
            "stand in, trained longer and with more seeds"
        )


def _slope(xs, ys) -> float:
    """Least-squares slope of log(ys) against log(xs); NaN when a value is not positive."""
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if np.any(ys <= 0) or np.any(~np.isfinite(ys)):
        return math.nan
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def _spearman(a, b) -> float:
    ra = np.argsort(np.argsort(np.asarray(a, dtype=float)))
    rb = np.argsort(np.argsort(np.asarray(b, dtype=float)))
    if ra.std() == 0 or rb.std() == 0:
        return math.nan
    return float(np.corrcoef(ra, rb)[0, 1])


def _plotting() -> bool:
    return artifact_dir() is not None


# ------------------------------------------------------------------------------------------ 1. conservation
#: ``conservation``: the step sizes, run for the same training time ``eta * steps``.
ETAS = (0.16, 0.08, 0.04, 0.02)


def _drift_run(rule: str, activation: str, eta: float, horizon: float, width: int, data, seed: int) -> dict:
    x, y = data
    model = make_mlp([x.shape[1], width, width, 10], activation, seed=seed, dtype=torch.float64)
    net = FeedbackNetwork(model, rule, seed=seed + 1, homogeneous=activation != "tanh")
    c0 = layer_conserved_quantity(net)
    inc = incoming_norms(net)
    n0 = torch.cat(inc) - torch.cat([potential(net, l + 1) for l in range(2)])
    i0 = torch.tensor([float(v.sum()) for v in inc], dtype=torch.float64)
    st = {"drift": torch.zeros(2, dtype=torch.float64), "neuron": 0.0, "moved": torch.zeros(2, dtype=torch.float64)}

    def watch(step: int) -> None:
        c = layer_conserved_quantity(net)
        st["drift"] = torch.maximum(st["drift"], (c - c0).abs())
        inc = incoming_norms(net)  # once per step, for both measures
        i = torch.tensor([float(v.sum()) for v in inc], dtype=torch.float64)
        st["moved"] = torch.maximum(st["moved"], (i - i0).abs())
        n = torch.cat(inc) - torch.cat([potential(net, l + 1) for l in range(2)])
        st["neuron"] = max(st["neuron"], float((n - n0).abs().max()))

    train(net, x, y, lr=eta, steps=int(round(horizon / eta)), callback=watch)
    return {
        "drift": float(st["drift"].max()),
        "neuron": st["neuron"],
        "ratio": float((st["drift"] / st["moved"]).max()),
        "moved": float(st["moved"].min()),
    }


def run_conservation(scale: Scale, seed: int) -> dict[str, float]:
    """Claim ``conservation``: the drift of ``C_l`` over a fixed training time ``eta * steps`` at four step
    sizes :data:`ETAS`, for FA and backprop with ReLU and for FA with tanh (float64, full batch).

    Parameters
    ----------
    scale : Scale
        SMOKE (width 64, training time 1.6), QUICK (width 128, time 4) or PAPER (width 128, time 32).
    seed : int
        Seeds the split, the weights (``seed``) and the feedback (``seed + 1``).

    Returns
    -------
    dict of str to float
        Per arm (``fa``, ``bp``, ``tanh_fa``): ``<arm>_drift_slope`` (log-log slope of the layer-wise drift
        against the step), ``<arm>_neuron_drift_slope``, ``<arm>_motion_slope`` (of the change of
        ``1/2||W_l||^2``), ``<arm>_drift_to_motion_at_eta_min`` and the drifts at the largest and smallest step;
        ``predicted_slope`` (1).
    """
    _say_what_paper_scale_lacks(scale)
    with single_thread():
        width = scale.pick(64, 128, 128)
        horizon = scale.pick(1.6, 4.0, 32.0)  # training time eta * steps, the same for every step size
        n_train = scale.pick(None, None, None)
        split = digits(seed=seed)
        x, y = split.x_train.double(), split.y_train
        if n_train is not None:
            x, y = x[:n_train], y[:n_train]
        out: dict[str, float] = {}
        curves = {}
        for arm, rule, act in (("fa", "fa", "relu"), ("bp", "backprop", "relu"), ("tanh_fa", "fa", "tanh")):
            runs = [_drift_run(rule, act, eta, horizon, width, (x, y), seed) for eta in ETAS]
            drifts = [r["drift"] for r in runs]
            curves[arm] = drifts
            out[f"{arm}_drift_slope"] = _slope(ETAS, drifts)
            out[f"{arm}_neuron_drift_slope"] = _slope(ETAS, [r["neuron"] for r in runs])
            out[f"{arm}_drift_at_eta_max"] = drifts[0]
            out[f"{arm}_drift_at_eta_min"] = drifts[-1]
            # the parts of C move by an amount that does not depend on the step size (slope ~ 0) ...
            out[f"{arm}_motion_slope"] = _slope(ETAS, [r["moved"] for r in runs])
            out[f"{arm}_norm_change_min"] = min(r["moved"] for r in runs)
            # ... so that C's drift relative to them vanishes with the step: drift / max_t |change of 1/2||W_l||^2|
            out[f"{arm}_drift_to_motion_max"] = max(r["ratio"] for r in runs)
            out[f"{arm}_drift_to_motion_at_eta_min"] = runs[-1]["ratio"]
        out["predicted_slope"] = 1.0
        if _plotting():
            fig = Figure(figsize=(5, 4))
            ax = fig.subplots()
            for arm, label in (("fa", "FA, ReLU"), ("bp", "backprop, ReLU (balancedness)"), ("tanh_fa", "FA, tanh")):
                ax.loglog(ETAS, curves[arm], "o-", label=f"{label}: slope {out[f'{arm}_drift_slope']:.2f}")
            ref = np.array(ETAS) / ETAS[-1] * curves["fa"][-1]
            ax.loglog(ETAS, ref, "k--", lw=0.8, label="slope 1 (theory)")
            ax.set_xlabel("learning rate eta (same training time eta*steps)")
            ax.set_ylabel("max_t |C_l(t) - C_l(0)|")
            ax.set_title("Conservation law: drift vs step size")
            ax.legend(fontsize=7)
            save_figure(fig, "feedback_alignment-conservation")
        return out


# ------------------------------------------------------------------------------------ 2. implicit alignment
def run_alignment(scale: Scale, seed: int) -> dict[str, float]:
    """Claim ``implicit-alignment``: FA and backprop from the same small initialisation (x0.1), the alignment
    ``cos(B_l, W_l^T)`` and the incoming norms recorded along FA's training.

    Parameters
    ----------
    scale : Scale
        SMOKE (width 64, 150 steps), QUICK (width 128, 500 steps) or PAPER (width 128, 2000 steps).
    seed : int
        Seeds the split, the weights (``seed``) and the feedback (``seed + 1``).

    Returns
    -------
    dict of str to float
        ``fa_init_z_max`` and ``fa_final_z_min`` (FA's alignment at the start and end in chance standard
        deviations ``1/sqrt(numel)``), ``bp_final_z_max`` (backprop against the same B), ``rank_corr_min``
        (Spearman correlation of alignment and incoming norm over time), the per-layer cosines, and test
        accuracies.
    """
    _say_what_paper_scale_lacks(scale)
    with single_thread():
        width = scale.pick(64, 128, 128)
        steps = scale.pick(150, 500, 2000)
        lr, init = 0.1, 0.1  # the small-initialisation arm (x0.1)
        split = digits(seed=seed)
        x, y = split.x_train, split.y_train
        fa = FeedbackNetwork(make_mlp([64, width, width, 10], seed=seed, init_scale=init), "fa", seed=seed + 1)
        bp = FeedbackNetwork(make_mlp([64, width, width, 10], seed=seed, init_scale=init), "backprop")
        rec = AlignmentRecorder(fa, x, y, every=max(1, steps // 10))
        train(fa, x, y, lr=lr, steps=steps, callback=rec)
        train(bp, x, y, lr=lr, steps=steps)
        hist = rec.history
        fixed = fa.fixed_feedback
        assert fixed is not None
        out: dict[str, float] = {}
        z0, z1, bp_abs, rank = [], [], [], []
        for l, j in enumerate(range(1, len(fa.linears))):
            sigma = 1.0 / math.sqrt(fa.linears[j].weight.numel())  # std of cos between independent random matrices
            cos = [r["alignment"][l] for r in hist]
            inc = [r["incoming"][l] for r in hist]
            wb = bp.linears[j].weight.detach()
            cos_bp = float((fixed[j] * wb.T).sum() / (fixed[j].norm() * wb.norm()))
            out[f"fa_cos_init_layer{j + 1}"] = cos[0]
            out[f"fa_cos_final_layer{j + 1}"] = cos[-1]
            out[f"bp_cos_final_layer{j + 1}"] = cos_bp
            out[f"chance_std_layer{j + 1}"] = sigma
            out[f"incoming_growth_layer{l + 1}"] = inc[-1] / inc[0]
            out[f"rank_corr_norm_alignment_layer{l + 1}"] = _spearman(inc, cos)
            z0.append(abs(cos[0]) / sigma)
            z1.append(cos[-1] / sigma)
            bp_abs.append(abs(cos_bp) / sigma)
            rank.append(out[f"rank_corr_norm_alignment_layer{l + 1}"])
        out["fa_cos_final_min"] = min(r for r in hist[-1]["alignment"])
        out["bp_cos_final_maxabs"] = max(abs(out[k]) for k in out if k.startswith("bp_cos_final_layer"))
        out["fa_init_z_max"] = max(z0)  # |cos| at init in chance standard deviations
        out["fa_final_z_min"] = min(z1)
        out["bp_final_z_max"] = max(bp_abs)
        out["rank_corr_min"] = min(rank)
        out["fa_rho_final"] = hist[-1]["rho"]
        out["fa_test_accuracy"] = accuracy(fa, split.x_test, split.y_test)
        out["bp_test_accuracy"] = accuracy(bp, split.x_test, split.y_test)
        if _plotting():
            steps_ = [r["step"] for r in hist]
            fig = Figure(figsize=(9, 3.6))
            axes = fig.subplots(1, 2)
            for l in range(len(hist[0]["alignment"])):
                axes[0].plot(steps_, [r["alignment"][l] for r in hist], "o-", label=f"cos(B{l + 2}, W{l + 2}^T), FA")
                axes[1].plot(
                    steps_, [r["incoming"][l] for r in hist], "o-", label=f"1/2||W{l + 1}||^2+1/2||b{l + 1}||^2"
                )
            axes[0].axhline(out["bp_cos_final_maxabs"], color="k", ls="--", lw=0.8, label="backprop, final |cos|")
            axes[0].set_xlabel("step")
            axes[0].set_title("alignment rises from chance (FA, init x0.1)")
            axes[0].legend(fontsize=7)
            axes[1].set_xlabel("step")
            axes[1].set_title("incoming norms grow")
            axes[1].legend(fontsize=7)
            save_figure(fig, "feedback_alignment-implicit-alignment")
        return out


# ---------------------------------------------------------------------------------------------- 3. multiclass
#: ``multiclass``: the class counts (the first ``k`` digits) and the mixing weight of the aligned initialisation.
CLASS_COUNTS = (2, 5, 10)
ALIGN_STRENGTH = 0.5


def _paired(d) -> tuple[float, float]:
    """Mean and standard error (``sd / sqrt(n)``, ``ddof=1``) of paired per-seed differences."""
    d = np.asarray(d, dtype=float)
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(len(d))) if len(d) > 1 else math.nan


def run_multiclass(scale: Scale, seed: int) -> dict[str, float]:
    """Claim ``multiclass``: test accuracy of backprop and FA on digits restricted to 2, 5 and 10 classes, and of
    FA with an aligned initialisation (:func:`~icml24.feedback_alignment.models.align_init_` with
    :data:`ALIGN_STRENGTH`; why it mixes ``B^T`` into ``W`` is argued there) on 10 classes, over several
    consecutive seeds inside one run, judged on paired per-seed differences.

    Each seed fixes the split, the initial weights (shared by all arms) and the feedback: arms differ only by
    the rule (and the aligned arm by its initial alignment), so per-seed differences cancel the shared noise.

    Parameters
    ----------
    scale : Scale
        SMOKE (6 seeds, width 32, 150 steps), QUICK (6 seeds, width 128, 200 steps) or PAPER (10 seeds, 1000
        steps).
    seed : int
        The first of the consecutive seeds.

    Returns
    -------
    dict of str to float
        ``<arm>_acc_<k>c`` (means over seeds) for arms ``bp``, ``fa`` and ``fa_aligned`` (10 classes only); the
        gaps ``fa_gap_<k>c`` (backprop minus FA) and ``aligned_fa_gap_10c``; the paired statistics
        ``gap_growth_10c_vs_2c`` (mean over seeds of ``gap_10 - gap_2``) with its standard error
        ``gap_growth_se``, and ``aligned_gain_10c`` (mean of ``acc(aligned FA) - acc(FA)``) with
        ``aligned_gain_se``, each also as a z-score; ``fa_gap_std_<k>c``; the initial and final mean alignments
        at 10 classes; ``seeds``.
    """
    _say_what_paper_scale_lacks(scale)
    with single_thread():
        n_seeds = scale.pick(6, 6, 10)
        width = scale.pick(32, 128, 128)
        steps = scale.pick(150, 200, 1000)
        lr = 0.1
        last = CLASS_COUNTS[-1]
        arms = {k: ("bp", "fa", "fa_aligned") if k == last else ("bp", "fa") for k in CLASS_COUNTS}
        acc = {(arm, k): [] for k in CLASS_COUNTS for arm in arms[k]}
        cos = {"fa": [], "fa_aligned": [], "fa_init": [], "fa_aligned_init": []}
        for k in CLASS_COUNTS:
            for s in range(seed, seed + n_seeds):
                split = digits(classes=list(range(k)), seed=s)
                for arm in arms[k]:
                    model = make_mlp([64, width, width, k], seed=s)
                    net = FeedbackNetwork(model, "backprop" if arm == "bp" else "fa", seed=s + 1)
                    if arm == "fa_aligned":
                        align_init_(net, ALIGN_STRENGTH)
                    if k == last and arm != "bp":
                        cos[f"{arm}_init"].append(float(np.mean(alignment_angles(net))))
                    train(net, split.x_train, split.y_train, lr=lr, steps=steps)
                    acc[(arm, k)].append(accuracy(net, split.x_test, split.y_test))
                    if k == last and arm != "bp":
                        cos[arm].append(float(np.mean(alignment_angles(net))))
        out: dict[str, float] = {}
        for (arm, k), v in acc.items():
            out[f"{arm}_acc_{k}c"] = float(np.mean(v))
        gap = {k: np.array(acc[("bp", k)]) - np.array(acc[("fa", k)]) for k in CLASS_COUNTS}
        for k in CLASS_COUNTS:
            out[f"fa_gap_{k}c"] = float(gap[k].mean())
            out[f"fa_gap_std_{k}c"] = float(gap[k].std(ddof=1))
        out[f"aligned_fa_gap_{last}c"] = out[f"bp_acc_{last}c"] - out[f"fa_aligned_acc_{last}c"]
        growth, growth_se = _paired(gap[last] - gap[CLASS_COUNTS[0]])
        gain, gain_se = _paired(np.array(acc[("fa_aligned", last)]) - np.array(acc[("fa", last)]))
        out["gap_growth_10c_vs_2c"], out["gap_growth_se"] = growth, growth_se
        out["gap_growth_z"] = growth / growth_se if growth_se > 0 else math.nan
        out["aligned_gain_10c"], out["aligned_gain_se"] = gain, gain_se
        out["aligned_gain_z"] = gain / gain_se if gain_se > 0 else math.nan
        out["fa_cos_init_10c"] = float(np.mean(cos["fa_init"]))
        out["aligned_fa_cos_init_10c"] = float(np.mean(cos["fa_aligned_init"]))
        out["fa_cos_final_10c"] = float(np.mean(cos["fa"]))
        out["aligned_fa_cos_final_10c"] = float(np.mean(cos["fa_aligned"]))
        out["seeds"] = float(n_seeds)
        if _plotting():
            fig = Figure(figsize=(5, 4))
            ax = fig.subplots()
            for arm, label in (("bp", "backprop"), ("fa", "FA")):
                ax.plot(CLASS_COUNTS, [out[f"{arm}_acc_{k}c"] for k in CLASS_COUNTS], "o-", label=label)
            ax.errorbar(
                [last],
                [out[f"fa_aligned_acc_{last}c"]],
                yerr=[gain_se],
                fmt="s",
                label=f"FA, aligned init (lambda={ALIGN_STRENGTH}), +-SE of the paired gain",
            )
            ax.set_xlabel("number of classes (digits)")
            ax.set_ylabel(f"test accuracy (mean of {n_seeds} seeds)")
            ax.set_xticks(CLASS_COUNTS)
            ax.legend(fontsize=7)
            ax.set_title("FA falls behind as classes grow; alignment helps")
            save_figure(fig, "feedback_alignment-multiclass")
        return out


# ---------------------------------------------------------------------------------- Fashion-MNIST, small CNN
#: the rules of the Fashion-MNIST comparison, in table order
CNN_RULES = ("backprop", "fa", "dfa", "usf", "brsf", "kp")


def fashion_mnist_cnn(
    rules=CNN_RULES,
    *,
    epochs: int = 2,
    n_train: int | None = 10_000,
    n_test: int | None = 2_000,
    channels=(8, 16),
    batch_size: int = 64,
    lr: float = 0.05,
    weight_decay: float = 1e-3,
    seed: int = 0,
    root=None,
) -> list[dict]:
    """Train the small CNN of :func:`~icml24.feedback_alignment.models.make_cnn` on Fashion-MNIST under each rule.

    ``Conv2d(1, 8, 3) -> ReLU -> AvgPool(2) -> Conv2d(8, 16, 3) -> ReLU -> AvgPool(2) -> Flatten -> Linear(784,
    10)`` by default; the same initial weights and the same minibatch order for every rule; plain SGD with
    ``weight_decay`` on every parameter (Kolen-Pollack needs it to bring ``B`` to ``W^T``; the others get the
    same for fairness); cross-entropy. Times are wall-clock seconds per epoch of training (forward, the rule's
    backward, the optimizer step) on the current thread setting.

    Parameters
    ----------
    rules : sequence of str, default :data:`CNN_RULES`
    epochs : int, default 2
    n_train, n_test : int or None, default 10000 and 2000
        Class-stratified subsets (None: the full 60000 / 10000).
    channels : sequence of int, default (8, 16)
    batch_size : int, default 64
    lr : float, default 0.05
    weight_decay : float, default 1e-3
    seed : int, default 0
        Seeds the subsets, the weights, the feedback and the minibatch order.
    root : path, optional
        The data root (default ``$ICML24_DATA``).

    Returns
    -------
    list of dict
        One row per rule: ``rule``, ``test_accuracy``, ``train_loss`` (mean over the last epoch),
        ``seconds_per_epoch``, ``alignment`` (mean ``cos(B, W^T)`` over the layers whose feedback has that shape,
        NaN where none has) and ``rho`` (the dominance ratio on the first test batch at the end).

    Raises
    ------
    DataUnavailable
        When Fashion-MNIST is not under the data root.
    """
    import time

    from ..validation import check_float, check_int, check_seed

    epochs = check_int(epochs, "epochs", min_val=1)
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="right")
    weight_decay = check_float(weight_decay, "weight_decay", min_val=0.0)
    seed = check_seed(seed)
    rules = [get_rule(r).name for r in rules]
    split = fashion_mnist(root=root, n_train=n_train, n_test=n_test, seed=seed)
    x, y, xt, yt = split.x_train, split.y_train, split.x_test, split.y_test
    rows = []
    for rule in rules:
        model = make_cnn(1, 28, tuple(channels), 10, seed=seed)
        net = FeedbackNetwork(model, rule, seed=seed + 1, input_shape=(1, 28, 28))
        opt = torch.optim.SGD(net.parameters(), lr=float(lr), weight_decay=float(weight_decay))
        gen = torch.Generator().manual_seed(seed)
        seconds, last_losses = [], []
        for _ in range(epochs):
            order = torch.randperm(len(x), generator=gen)
            last_losses = []
            t0 = time.perf_counter()
            for i in range(0, len(x), batch_size):
                idx = order[i : i + batch_size]
                opt.zero_grad(set_to_none=True)
                loss = torch.nn.functional.cross_entropy(net(x[idx]), y[idx])
                loss.backward()
                opt.step()
                last_losses.append(float(loss.detach()))
            seconds.append(time.perf_counter() - t0)
        with torch.no_grad():
            correct = sum(
                int((net(xt[i : i + 1000]).argmax(1) == yt[i : i + 1000]).sum()) for i in range(0, len(xt), 1000)
            )
        cos = [c for c in alignment_angles(net) if math.isfinite(c)]
        rows.append(
            {
                "rule": rule,
                "test_accuracy": correct / len(xt),
                "train_loss": float(np.mean(last_losses)),
                "seconds_per_epoch": float(np.median(seconds)),
                "alignment": float(np.mean(cos)) if cos else math.nan,
                "rho": update_alignment(net, xt[:256], yt[:256]).rho,
            }
        )
        log.info("fashion_mnist_cnn %s: %s", rule, rows[-1])
    return rows


def format_table(rows: list[dict]) -> str:
    """A Markdown table of :func:`fashion_mnist_cnn`'s rows, with the time per epoch relative to backprop.

    Parameters
    ----------
    rows : list of dict

    Returns
    -------
    str
    """
    ref = next((r["seconds_per_epoch"] for r in rows if r["rule"] == "backprop"), math.nan)
    lines = [
        "| rule | test accuracy | train loss (last epoch) | s / epoch | vs backprop | cos(B, W^T) | rho |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['rule']} | {r['test_accuracy']:.4f} | {r['train_loss']:.3f} | {r['seconds_per_epoch']:.2f} | "
            f"{r['seconds_per_epoch'] / ref:.2f}x | {r['alignment']:.3f} | {r['rho']:.3f} |"
        )
    return "\n".join(lines)


__all__ = [
    "ETAS",
    "CLASS_COUNTS",
    "ALIGN_STRENGTH",
    "CNN_RULES",
    "run_conservation",
    "run_alignment",
    "run_multiclass",
    "fashion_mnist_cnn",
    "format_table",
]
