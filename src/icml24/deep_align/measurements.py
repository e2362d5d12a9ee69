"""Building blocks of the Deep-Align experiments (``experiments.py``): the types of a scale's settings and of a
trained setup, the held-out pairs, statistics, permutation recovery on permuted copies, and the metrics read from
a pair study and from the aligner's symmetries.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

import torch

from ..runs import save_figure
from ..threads import single_thread
from .align import DeepAlign
from .baselines import weight_matching
from .paper import N_UNTRAINED, NOISE_LEVEL, SYM_TOL
from .permutations import invert, permute_hard, random_perms
from .sinkhorn import hungarian
from .training import augment, permutation_accuracy
from .weights import WeightBatch
from .zoo import Zoo

__all__ = [
    "Settings",
    "CNNSettings",
    "Setup",
    "mean_se",
    "held_out_pairs",
    "stack_perms",
    "untrained_controls",
    "Recovery",
    "copy_recovery",
    "quality_metrics",
    "init_metrics",
    "symmetry_metrics",
]

T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """The sizes of one scale.

    Parameters
    ----------
    n_nets, n_val, n_test : int
        Networks in the zoo, of which validation and held-out test networks (the rest train Deep-Align).
    zoo_steps : int
        Adam steps of the zoo's networks.
    widths : tuple of int
        Their architecture.
    encoder : dict
        :class:`~icml24.deep_align.encoder.EncoderConfig` options of the aligner.
    train : dict
        :class:`~icml24.deep_align.training.TrainConfig` options.
    copies_per_net : int
        Randomly permuted copies of each test network (exactness).
    sr_pairs : int
        Test pairs given to Sinkhorn re-basin (slow per pair).
    sr_steps : int
        Sinkhorn re-basin's steps per pair.
    am_images : int
        Images of Activation Matching's activations.
    zoo_batch : int or None, default None
        Mini-batch size of the zoo's training (None: full batch).
    data : str, default "digits"
        ``"digits"`` or ``"fashion_mnist"`` (from the data root).
    """

    n_nets: int
    n_val: int
    n_test: int
    zoo_steps: int
    widths: tuple[int, ...]
    encoder: dict
    train: dict
    copies_per_net: int
    sr_pairs: int
    sr_steps: int
    am_images: int
    zoo_batch: int | None = None
    data: str = "digits"


@dataclass(frozen=True)
class CNNSettings:
    """The sizes of one scale of the CNN experiment (:func:`~icml24.deep_align.experiments.run_cnn`).

    Parameters
    ----------
    n_nets, n_val, n_test : int
        Networks in the zoo, of which validation and held-out test networks (the rest train Deep-Align).
    zoo_steps : int
        Adam steps of every network (each draws its own mini-batches).
    zoo_lr : float
    zoo_batch : int
    channels : tuple of int
        The :class:`~icml24.deep_align.cnn.CNNSpec` channels.
    encoder : dict
        :class:`~icml24.deep_align.encoder.EncoderConfig` options of the aligner.
    train : dict
        :class:`~icml24.deep_align.training.TrainConfig` options (``recon`` is always ``"l2"``).
    eval_images : int
        Test images of the interpolation losses.
    copies_per_net : int
        Randomly permuted copies of each test network (exact and noisy recovery).
    """

    n_nets: int
    n_val: int
    n_test: int
    zoo_steps: int
    zoo_lr: float
    zoo_batch: int
    channels: tuple[int, ...]
    encoder: dict
    train: dict
    eval_images: int
    copies_per_net: int


@dataclass
class Setup:
    """A trained zoo and aligner, shared by the measurements of one ``(scale, seed)``.

    Parameters
    ----------
    zoo : Zoo
    aligner : DeepAlign
        Trained on ``zoo``'s train networks, selected on its val networks.
    zoo_seconds, train_seconds : float
        Time to train the zoo and the aligner.
    settings : Settings
    """

    zoo: Zoo
    aligner: DeepAlign
    zoo_seconds: float
    train_seconds: float
    settings: Settings


# ------------------------------------------------------------------------------------------------ helpers
def mean_se(values: Sequence[float] | torch.Tensor) -> tuple[float, float]:
    """The mean and its standard error (``inf`` for fewer than two values).

    Parameters
    ----------
    values : sequence of float or torch.Tensor

    Returns
    -------
    (float, float)
    """
    v = torch.as_tensor(values, dtype=torch.float64).reshape(-1)
    if len(v) < 2:
        return float(v.mean()), float("inf")
    return float(v.mean()), float(v.std() / math.sqrt(len(v)))


def held_out_pairs(zoo: Zoo) -> tuple[WeightBatch, WeightBatch]:
    """Every pair ``(i, j)``, ``i < j``, of the zoo's test networks, as two aligned batches.

    Parameters
    ----------
    zoo : Zoo

    Returns
    -------
    (WeightBatch, WeightBatch)
        The first and the second network of each pair.
    """
    te = zoo.split("test")
    pairs = [(i, j) for i in range(te.size) for j in range(i + 1, te.size)]
    return te[torch.tensor([p[0] for p in pairs])], te[torch.tensor([p[1] for p in pairs])]


def stack_perms(perm_lists: list[list[torch.Tensor]]) -> list[torch.Tensor]:
    """Per-pair permutations (a list per pair of one ``(d_l,)`` tensor per layer) as ``(B, d_l)`` tensors.

    Parameters
    ----------
    perm_lists : list of list of torch.Tensor

    Returns
    -------
    list of torch.Tensor
    """
    return [torch.stack([p[l] for p in perm_lists]) for l in range(len(perm_lists[0]))]


def timed(fn: Callable[[], T]) -> tuple[T, float]:
    """``fn()`` and the seconds it took."""
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def base_metrics(s: Setup) -> dict[str, float]:
    """The metrics of the setup itself, shared by every measurement on it."""
    return {
        "zoo_seconds": s.zoo_seconds,
        "train_seconds": s.train_seconds,
        "train_steps": float(s.settings.train["steps"]),
        "best_step": float(s.aligner.history.best_step),
        "zoo_test_acc": float(s.zoo.test_acc.mean()),
        "n_test_nets": float(s.zoo.splits["test"].numel()),
        "on_paper_data": 0.0,
    }


def per_copy_accuracy(pred: list[torch.Tensor], truth: list[torch.Tensor]) -> torch.Tensor:
    """The fraction of hidden neurons of each copy whose permutation ``pred`` recovers."""
    hits = sum((p == t).double().sum(1) for p, t in zip(pred, truth))
    return hits / sum(t.shape[1] for t in truth)


# ------------------------------------------------------------------------------------ permuted copies
def untrained_controls(
    widths: Sequence[int], encoder: dict, seed: int, features: Sequence[int] | None = None
) -> list[DeepAlign]:
    """``N_UNTRAINED`` randomly initialised aligners, the untrained controls of an aligner trained from ``seed``.

    Parameters
    ----------
    widths : sequence of int
        The architecture of the aligned networks.
    encoder : dict
        :class:`~icml24.deep_align.encoder.EncoderConfig` options of the trained aligner.
    seed : int
        The trained aligner's seed.
    features : sequence of int, optional
        The kernel features of a CNN's layers (None: MLPs).

    Returns
    -------
    list of DeepAlign
        Initialised from seeds ``100 * (seed + 1) + k`` (never the trained aligner's seed).
    """
    return [DeepAlign(widths, features=features, seed=100 * (seed + 1) + k, **encoder) for k in range(N_UNTRAINED)]


@dataclass(frozen=True)
class Recovery:
    """Permutation recovery on one kind of permuted copies (exact or noisy), per copy.

    Parameters
    ----------
    da : torch.Tensor
        ``(copies,)``: the fraction of hidden neurons the aligner recovers.
    untrained : torch.Tensor
        ``(copies,)``: the same for the best of the untrained controls (the highest mean).
    wm : float
        The fraction Weight Matching recovers, over all copies.
    da_seconds, wm_seconds : float
        Time of the aligner (batched) and of Weight Matching (one copy at a time) on all copies.
    """

    da: torch.Tensor
    untrained: torch.Tensor
    wm: float
    da_seconds: float
    wm_seconds: float


def copy_recovery(
    aligner: DeepAlign, controls: Sequence[DeepAlign], nets: WeightBatch, copies_per_net: int, seed: int
) -> tuple[int, dict[str, Recovery]]:
    """Permutation recovery on randomly permuted copies of ``nets``, exact and with Gaussian noise.

    Each network is copied ``copies_per_net`` times; each copy is permuted at random (generator seeded
    ``10_000 + seed``) as it is (``"exact"``) and after Gaussian noise of ``NOISE_LEVEL`` times each tensor's std
    (``"noisy"``). The aligner, each untrained control and Weight Matching (seed ``seed + k`` for copy ``k``)
    recover the permutation of every copy, on one thread.

    Parameters
    ----------
    aligner : DeepAlign
        The trained aligner.
    controls : sequence of DeepAlign
        Untrained aligners of the same architecture.
    nets : WeightBatch
        The held-out networks.
    copies_per_net : int
    seed : int

    Returns
    -------
    copies : int
        The number of copies.
    recovery : dict of str to Recovery
        ``"exact"`` and ``"noisy"``.
    """
    g = torch.Generator().manual_seed(10_000 + seed)
    a = WeightBatch.cat([nets] * copies_per_net)
    pi = random_perms(a.hidden, a.size, g)
    truth = invert(pi)  # permute(pa, inverse(pi)) == a
    noisy = augment(a, g, noise_scale=NOISE_LEVEL, drop_rate=0.0, pos_scale=0.0, quantile_dropout=0.0)
    copies = {"exact": permute_hard(a, pi), "noisy": permute_hard(noisy, pi)}
    out = {}
    with single_thread():
        for kind, b in copies.items():
            da, t_da = timed(lambda b=b: aligner.align_batch(a, b))
            wm, t_wm = timed(lambda b=b: [weight_matching(a[k], b[k], seed=seed + k).perms for k in range(a.size)])
            acc = per_copy_accuracy(da, truth)
            # the control is the best untrained initialisation on these very copies: the strongest one
            un = max((per_copy_accuracy(c.align_batch(a, b), truth) for c in controls), key=lambda v: float(v.mean()))
            out[kind] = Recovery(acc, un, permutation_accuracy(stack_perms(wm), truth), t_da, t_wm)
    return a.size, out


# --------------------------------------------------------------------------------- quality, init, symmetries
def plot_pair_study(res: dict) -> None:
    """Save the figure of a :func:`~icml24.deep_align.experiments.pair_study`: losses along the path, barriers."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 3.8))
    ax = fig.subplots(1, 2)
    names = {
        "none": "no alignment",
        "da": "Deep-Align",
        "untrained": "Deep-Align untrained",
        "wm": "Weight Matching",
        "dawm": "Deep-Align + WM",
        "am": "Activation Matching",
        "sr": f"Sinkhorn re-basin ({res['k_sr']} pairs)",
    }
    for k, (alphas, losses) in res["curves"].items():
        ax[0].plot(alphas, losses.mean(0), label=names[k])
        bar = res["barrier"][k][0]
        ax[1].bar(names[k].split(" (")[0], float(bar.mean()), yerr=float(bar.std() / math.sqrt(len(bar))))
    ax[0].set(
        xlabel="alpha (1 = network a, 0 = aligned network b)",
        ylabel="test loss",
        title="interpolation of held-out pairs",
    )
    ax[0].legend(fontsize=7)
    ax[1].set(ylabel="barrier", title="loss barrier (mean +- s.e.)")
    ax[1].tick_params(axis="x", labelrotation=45, labelsize=7)
    fig.tight_layout()
    save_figure(fig, "deep_align-interpolation")


def quality_metrics(s: Setup, res: dict) -> dict[str, float]:
    """Test-loss barriers on held-out pairs after each method's alignment, with paired differences.

    Parameters
    ----------
    s : Setup
    res : dict
        :func:`~icml24.deep_align.experiments.pair_study` of the same setup.

    Returns
    -------
    dict of str to float
        ``<method>_barrier`` (mean), ``<method>_barrier_se``, ``<method>_auc`` for none, untrained (the best
        untrained control), da, wm, dawm, am and sr; ``none_minus_da``, ``untrained_minus_da`` and ``da_minus_wm``
        with their standard errors; times per pair.
    """
    out = base_metrics(s)
    for k, (bar, auc) in res["barrier"].items():
        out[f"{k}_barrier"], out[f"{k}_barrier_se"] = mean_se(bar)
        out[f"{k}_auc"] = float(auc.mean())
    bar = {k: v[0] for k, v in res["barrier"].items()}
    out["none_minus_da"], out["none_minus_da_se"] = mean_se(bar["none"] - bar["da"])
    out["da_minus_wm"], out["da_minus_wm_se"] = mean_se(bar["da"] - bar["wm"])
    out["untrained_minus_da"], out["untrained_minus_da_se"] = mean_se(bar["untrained"] - bar["da"])
    out["da_barrier_on_sr_pairs"] = float(bar["da"][: res["k_sr"]].mean())
    for k in ("da_ms_batched", "da_ms_single", "wm_ms", "dawm_ms", "am_ms", "sr_ms"):
        out[k.replace("_ms", "") + "_ms_per_pair"] = res[k]
    out["pairs"], out["sr_pairs"] = float(res["n"]), float(res["k_sr"])
    return out


def init_metrics(s: Setup, res: dict) -> dict[str, float]:
    """Weight Matching from Deep-Align's alignment against Weight Matching from the identity, on held-out pairs.

    Parameters
    ----------
    s : Setup
    res : dict
        :func:`~icml24.deep_align.experiments.pair_study` of the same setup.

    Returns
    -------
    dict of str to float
        ``wm_sweeps``, ``dawm_sweeps``, ``sweeps_saved`` (paired, with its standard error), the objectives
        reached (``objective_gain = dawm - wm``, paired) and the barriers of both.
    """
    out = base_metrics(s)
    out["wm_sweeps"], _ = mean_se(res["wm_sweeps"])
    out["dawm_sweeps"], _ = mean_se(res["dawm_sweeps"])
    out["sweeps_saved"], out["sweeps_saved_se"] = mean_se(res["wm_sweeps"] - res["dawm_sweeps"])
    out["wm_objective"], _ = mean_se(res["wm_obj"])
    out["dawm_objective"], _ = mean_se(res["dawm_obj"])
    out["da_objective"], _ = mean_se(res["da_obj"])
    out["none_objective"], _ = mean_se(res["none_obj"])
    out["objective_gain"], out["objective_gain_se"] = mean_se(res["dawm_obj"] - res["wm_obj"])
    out["dawm_barrier"], _ = mean_se(res["barrier"]["dawm"][0])
    out["wm_barrier"], _ = mean_se(res["barrier"]["wm"][0])
    out["pairs"] = float(res["n"])
    return out


# --------------------------------------------------------------------------------------------- symmetries
def symmetry_metrics(s: Setup, seed: int) -> dict[str, float]:
    """The two symmetries of the trained aligner's scores (paper Prop. 4) on held-out pairs.

    Parameters
    ----------
    s : Setup
    seed : int

    Returns
    -------
    dict of str to float
        ``equivariance_err``: max ``|S(g a, h b) - G S(a, b) H^T|``; ``swap_err``: max ``|S(b, a) - S(a, b)^T|``;
        ``tolerance``; the fractions of alignments that transform as predicted; ``symmetry_pairs`` checked.
    """
    A, B = held_out_pairs(s.zoo)
    n = min(A.size, 16)
    A, B = A[torch.arange(n)], B[torch.arange(n)]
    g = torch.Generator().manual_seed(20_000 + seed)
    G, H = random_perms(A.hidden, n, g), random_perms(A.hidden, n, g)
    al = s.aligner
    with single_thread():
        S = al.scores_batch(A, B)
        S_gh = al.scores_batch(permute_hard(A, G), permute_hard(B, H))
        S_swap = al.scores_batch(B, A)
    eq = max(
        float((sg - torch.stack([s_[i][G[l][i]][:, H[l][i]] for i in range(n)])).abs().max())
        for l, (s_, sg) in enumerate(zip(S, S_gh))
    )
    sw = max(float((s2 - s_.transpose(1, 2)).abs().max()) for s_, s2 in zip(S, S_swap))
    p, p_gh, p_swap = ([hungarian(x) for x in SS] for SS in (S, S_gh, S_swap))
    # predicted alignments: for (g a, h b) row i is matched to h^{-1}(p(g(i))); for (b, a) the inverse of p
    pred_gh = [torch.gather(invert([h])[0], 1, torch.gather(q, 1, gg)) for q, gg, h in zip(p, G, H)]
    return {
        "equivariance_err": eq,
        "swap_err": sw,
        "tolerance": SYM_TOL,
        "score_abs_max": max(float(x.abs().max()) for x in S),
        "equivariant_alignment_frac": permutation_accuracy(p_gh, pred_gh),
        "swap_alignment_frac": permutation_accuracy(p_swap, invert(p)),
        "symmetry_pairs": float(n),
    }
