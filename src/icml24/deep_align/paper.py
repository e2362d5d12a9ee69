"""The claims of "Equivariant Deep Weight Space Alignment" (Deep-Align, Navon et al., ICML 2024).

Setting (``shared/specs/deep_align.md``, CPU reproduction plan): a zoo of MLPs ``64 -> 32 -> 32 -> 10`` trained
on scikit-learn's 8x8 digits from different seeds, split into train / val / test *networks*; Deep-Align trained
on the train networks with the official label-free objective and selected on the val networks; every claim is
measured on pairs of held-out test networks, against Weight Matching (and, for quality, Activation Matching and
Sinkhorn re-basin) run on the same pairs in the same call. The zoo and the trained aligner are built once per
``(scale, seed)`` and shared by the claims of one process (the first claim's time includes them).

Scales: SMOKE (tests, seconds): 24 networks, a small aligner trained for a few dozen steps. QUICK (``icml24
verify``): 80 networks (60 / 10 / 10), 45 test pairs. PAPER: the official encoder and training defaults on a zoo
of ``784 -> 128 -> 128 -> 128 -> 10`` MLPs (the official ``FCNet``) trained on Fashion-MNIST from the data root;
the paper's MNIST and CIFAR10 zoos cannot be obtained offline, so ``on_paper_data`` is 0 there.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from dataclasses import dataclass
from typing import Sequence

import torch

from ..claims import Claim, Scale
from ..registry import method
from ..runs import save_figure
from ..threads import single_thread
from .align import DeepAlign
from .baselines import activation_matching, sinkhorn_rebasin, weight_matching, wm_objective
from .sinkhorn import hungarian
from .training import augment, permutation_accuracy
from .weights import (WeightBatch, barrier_and_auc, interpolation_losses, invert, permute_hard, random_perms)
from .zoo import Zoo, train_zoo

log = logging.getLogger(__name__)

SLUG = "deep_align"
EXACT_MIN = 0.99      # "recovers the permutation (accuracy about 1)": the theory predicts exactly 1
SYM_TOL = 1e-5        # the symmetries hold by construction, up to float32 rounding


@dataclass(frozen=True)
class Settings:
    """Sizes of one scale."""

    n_nets: int
    n_val: int
    n_test: int
    zoo_steps: int
    widths: tuple[int, ...]
    encoder: dict
    train: dict
    copies_per_net: int     # random permuted copies per test network (exactness)
    sr_pairs: int           # pairs given to Sinkhorn re-basin (slow per pair)
    sr_steps: int
    am_images: int
    zoo_batch: int | None = None
    data: str = "digits"


# The encoder is the official DWS architecture (diagonal, hnp, per-layer input down-sampling to 8, BatchNorm)
# shrunk for CPU time: 16 channels instead of 64, 2 hidden DWS layers instead of 4, 32 output features instead
# of 128, DeepSets set layers instead of set attention, mean pooling instead of max (the official --reduction
# option "mean"; max plateaued at a 30-60 % higher barrier in our budget). Training uses lr 1e-2 instead of
# 5e-4 because it runs for 300 steps of 16 pairs instead of 100 epochs over thousands of networks.
# SMOKE halves the encoder again (8 channels, 16 output features) so that its training fits in a test; its
# 16 training networks and 120 steps leave the aligner under-trained, so the smoke-scale quality check is
# sensitive to the seed (it holds for seeds 0 and 1, not 2); QUICK is the scale the claims are judged at.
_ENC = dict(hidden=16, n_hidden=2, output_features=32, set_layer="ds", reduction="mean")
SETTINGS = {
    Scale.SMOKE: Settings(28, 4, 8, 100, (64, 32, 32, 10), {**_ENC, "hidden": 8, "output_features": 16},
                          dict(steps=120, batch_size=16, lr=1e-2, eval_every=40), 2, 2, 60, 128),
    Scale.QUICK: Settings(80, 10, 10, 150, (64, 32, 32, 10), _ENC,
                          dict(steps=300, batch_size=16, lr=1e-2, eval_every=50), 3, 8, 200, 256),
    Scale.PAPER: Settings(1000, 100, 100, 3000, (784, 128, 128, 128, 10), {},
                          dict(steps=100 * 800 // 32, batch_size=32, lr=5e-4, eval_every=5 * 800 // 32),
                          3, 45, 1000, 1000, zoo_batch=128, data="fashion_mnist"),
}


@dataclass
class Setup:
    zoo: Zoo
    aligner: DeepAlign
    zoo_seconds: float
    train_seconds: float
    settings: Settings


@functools.lru_cache(maxsize=2)
def setup(scale: Scale, seed: int) -> Setup:
    """Train the zoo and the aligner for ``(scale, seed)`` (memoised within the process)."""
    st = SETTINGS[scale]
    data = None
    if st.data == "fashion_mnist":
        from ..data import fashion_mnist

        log.warning("deep_align at paper scale: the paper's MNIST/CIFAR10 zoos are not available offline; "
                    "using MLPs trained on Fashion-MNIST from the data root instead")
        data = fashion_mnist(flatten=True, seed=seed)
    with single_thread():
        t0 = time.perf_counter()
        zoo = train_zoo(st.n_nets, widths=st.widths, val=st.n_val, test=st.n_test, steps=st.zoo_steps,
                        batch_size=st.zoo_batch, seed=seed, data=data)
        t1 = time.perf_counter()
        aligner = DeepAlign(st.widths, seed=seed, **st.encoder)
        aligner.fit(zoo.split("train"), zoo.data.x_train, zoo.data.y_train, val=zoo.split("val"), seed=seed,
                    **st.train)
        t2 = time.perf_counter()
    return Setup(zoo, aligner, t1 - t0, t2 - t1, st)


# ------------------------------------------------------------------------------------------------ helpers
def _mean_se(values: Sequence[float] | torch.Tensor) -> tuple[float, float]:
    v = torch.as_tensor(values, dtype=torch.float64).reshape(-1)
    if len(v) < 2:
        return float(v.mean()), float("inf")
    return float(v.mean()), float(v.std() / math.sqrt(len(v)))


def _test_pairs(zoo: Zoo) -> tuple[WeightBatch, WeightBatch]:
    te = zoo.split("test")
    pairs = [(i, j) for i in range(te.size) for j in range(i + 1, te.size)]
    return te[torch.tensor([p[0] for p in pairs])], te[torch.tensor([p[1] for p in pairs])]


def _stack(perm_lists: list[list[torch.Tensor]]) -> list[torch.Tensor]:
    return [torch.stack([p[l] for p in perm_lists]) for l in range(len(perm_lists[0]))]


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def _base_metrics(s: Setup) -> dict[str, float]:
    return {"zoo_seconds": s.zoo_seconds, "train_seconds": s.train_seconds,
            "train_steps": float(s.settings.train["steps"]), "best_step": float(s.aligner.history.best_step),
            "zoo_test_acc": float(s.zoo.test_acc.mean()), "n_test_nets": float(s.zoo.splits["test"].numel()),
            "on_paper_data": 0.0}


# ------------------------------------------------------------------------------------------- exactness
def _run_exactness(scale: Scale, seed: int) -> dict[str, float]:
    s = setup(scale, seed)
    st = s.settings
    te = s.zoo.split("test")
    g = torch.Generator().manual_seed(10_000 + seed)
    a = WeightBatch.cat([te] * st.copies_per_net)
    pi = random_perms(a.hidden, a.size, g)
    truth = invert(pi)  # permute(pa, inverse(pi)) == a
    copies = {"exact": permute_hard(a, pi),
              "noisy": permute_hard(augment(a, g, noise_scale=1e-2, drop_rate=0.0, pos_scale=0.0,
                                            quantile_dropout=0.0), pi)}
    out = _base_metrics(s)
    with single_thread():
        for kind, b in copies.items():
            da, t_da = _timed(lambda: s.aligner.align_batch(a, b))
            wm, t_wm = _timed(lambda: [weight_matching(a[k], b[k], seed=seed + k).perms for k in range(a.size)])
            pre = "" if kind == "exact" else "noisy_"
            out[f"{pre}da_perm_acc"] = permutation_accuracy(da, truth)
            out[f"{pre}wm_perm_acc"] = permutation_accuracy(_stack(wm), truth)
            if kind == "exact":
                out["da_ms_per_pair_batched"] = 1e3 * t_da / a.size
                out["wm_ms_per_pair"] = 1e3 * t_wm / a.size
        # the exactness is structural (Prop. 4): an untrained encoder of the same architecture also recovers it
        fresh = DeepAlign(st.widths, seed=seed + 1, **st.encoder)
        out["untrained_da_perm_acc"] = permutation_accuracy(fresh.align_batch(a, copies["exact"]), truth)
    out["pairs"] = float(a.size)
    return out


def _holds_exactness(m: dict[str, float]) -> bool:
    return m["da_perm_acc"] >= EXACT_MIN and m["wm_perm_acc"] >= EXACT_MIN


EXACTNESS = Claim(
    key=f"{SLUG}/exactness",
    statement=("On a held-out network and a randomly permuted copy of it, Deep-Align's one forward pass recovers "
               f"the permutation (accuracy >= {EXACT_MIN} of hidden neurons), as Weight Matching does."),
    run=_run_exactness, holds=_holds_exactness, headline="da_perm_acc", baseline="wm_perm_acc",
)


# --------------------------------------------------------------------------------------- quality & init
@functools.lru_cache(maxsize=2)
def _pair_study(scale: Scale, seed: int) -> dict:
    """Every method on every pair of test networks: permutations, times, barriers, AUCs, WM sweeps/objectives."""
    s = setup(scale, seed)
    st = s.settings
    A, B = _test_pairs(s.zoo)
    n = A.size
    x, y = s.zoo.data.x_test, s.zoo.data.y_test
    xtr, ytr = s.zoo.data.x_train, s.zoo.data.y_train
    res: dict = {"n": n}
    with single_thread():
        da, t = _timed(lambda: s.aligner.align_batch(A, B))
        res["da_ms_batched"] = 1e3 * t / n
        _, t = _timed(lambda: [s.aligner.align(A[k], B[k]) for k in range(min(n, 10))])
        res["da_ms_single"] = 1e3 * t / min(n, 10)
        wm, t = _timed(lambda: [weight_matching(A[k], B[k], seed=seed + k) for k in range(n)])
        res["wm_ms"] = 1e3 * t / n
        dawm, t = _timed(lambda: [weight_matching(A[k], B[k], init=[p[k] for p in da], seed=seed + k)
                                  for k in range(n)])
        res["dawm_ms"] = res["da_ms_batched"] + 1e3 * t / n
        am, t = _timed(lambda: [activation_matching(A[k], B[k], xtr[: st.am_images]) for k in range(n)])
        res["am_ms"] = 1e3 * t / n
        k_sr = min(st.sr_pairs, n)
        sr, t = _timed(lambda: [sinkhorn_rebasin(A[k], B[k], xtr, ytr, steps=st.sr_steps, seed=seed + k)
                                for k in range(k_sr)])
        res["sr_ms"] = 1e3 * t / max(k_sr, 1)
    perms = {"da": da, "wm": _stack([r.perms for r in wm]), "dawm": _stack([r.perms for r in dawm]),
             "am": _stack([r.perms for r in am])}
    curves = {"none": interpolation_losses(A, B, x, y)}
    for k, p in perms.items():
        curves[k] = interpolation_losses(A, permute_hard(B, p), x, y)
    idx = torch.arange(k_sr)
    curves["sr"] = interpolation_losses(A[idx], permute_hard(B[idx], _stack([r.perms for r in sr])), x, y)
    res["curves"] = curves
    res["barrier"] = {k: barrier_and_auc(*c) for k, c in curves.items()}
    res["k_sr"] = k_sr
    res["wm_sweeps"] = torch.tensor([float(r.sweeps) for r in wm])
    res["dawm_sweeps"] = torch.tensor([float(r.sweeps) for r in dawm])
    res["wm_obj"] = torch.tensor([r.objective for r in wm])
    res["dawm_obj"] = torch.tensor([r.objective for r in dawm])
    res["da_obj"] = torch.tensor([wm_objective(A[k], B[k], [p[k] for p in da]) for k in range(n)])
    res["none_obj"] = torch.tensor([wm_objective(A[k], B[k]) for k in range(n)])
    return res


def _plot(res: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    names = {"none": "no alignment", "da": "Deep-Align", "wm": "Weight Matching", "dawm": "Deep-Align + WM",
             "am": "Activation Matching", "sr": f"Sinkhorn re-basin ({res['k_sr']} pairs)"}
    for k, (alphas, losses) in res["curves"].items():
        ax[0].plot(alphas, losses.mean(0), label=names[k])
        bar = res["barrier"][k][0]
        ax[1].bar(names[k].split(" (")[0], float(bar.mean()), yerr=float(bar.std() / math.sqrt(len(bar))))
    ax[0].set(xlabel="alpha (1 = network a, 0 = aligned network b)", ylabel="test loss",
              title="interpolation of held-out pairs")
    ax[0].legend(fontsize=7)
    ax[1].set(ylabel="barrier", title="loss barrier (mean +- s.e.)")
    ax[1].tick_params(axis="x", labelrotation=45, labelsize=7)
    save_figure(fig, "deep_align-interpolation")


def _run_quality(scale: Scale, seed: int) -> dict[str, float]:
    s = setup(scale, seed)
    res = _pair_study(scale, seed)
    out = _base_metrics(s)
    for k, (bar, auc) in res["barrier"].items():
        out[f"{k}_barrier"], out[f"{k}_barrier_se"] = _mean_se(bar)
        out[f"{k}_auc"] = float(auc.mean())
    bar = {k: v[0] for k, v in res["barrier"].items()}
    out["none_minus_da"], out["none_minus_da_se"] = _mean_se(bar["none"] - bar["da"])
    out["da_minus_wm"], out["da_minus_wm_se"] = _mean_se(bar["da"] - bar["wm"])
    out["da_barrier_on_sr_pairs"] = float(bar["da"][: res["k_sr"]].mean())
    for k in ("da_ms_batched", "da_ms_single", "wm_ms", "dawm_ms", "am_ms", "sr_ms"):
        out[k.replace("_ms", "") + "_ms_per_pair"] = res[k]
    out["pairs"], out["sr_pairs"] = float(res["n"]), float(res["k_sr"])
    _plot(res)
    return out


def _holds_quality(m: dict[str, float]) -> bool:
    far_below = m["none_minus_da"] > 2 * m["none_minus_da_se"] and m["da_barrier"] <= 0.5 * m["none_barrier"]
    within_noise = m["da_minus_wm"] <= 2 * m["da_minus_wm_se"]
    return far_below and within_noise


QUALITY = Claim(
    key=f"{SLUG}/quality",
    statement=("On held-out pairs of independently trained networks, the test-loss barrier after Deep-Align's "
               "one-shot alignment is far below that of no alignment (less than half, and lower by more than 2 "
               "standard errors) and within noise of Weight Matching or better (mean excess at most 2 standard "
               "errors of the paired difference)."),
    run=_run_quality, holds=_holds_quality, headline="da_barrier", baseline="wm_barrier",
)


def _run_init(scale: Scale, seed: int) -> dict[str, float]:
    s = setup(scale, seed)
    res = _pair_study(scale, seed)
    out = _base_metrics(s)
    out["wm_sweeps"], _ = _mean_se(res["wm_sweeps"])
    out["dawm_sweeps"], _ = _mean_se(res["dawm_sweeps"])
    out["sweeps_saved"], out["sweeps_saved_se"] = _mean_se(res["wm_sweeps"] - res["dawm_sweeps"])
    out["wm_objective"], _ = _mean_se(res["wm_obj"])
    out["dawm_objective"], _ = _mean_se(res["dawm_obj"])
    out["da_objective"], _ = _mean_se(res["da_obj"])
    out["none_objective"], _ = _mean_se(res["none_obj"])
    out["objective_gain"], out["objective_gain_se"] = _mean_se(res["dawm_obj"] - res["wm_obj"])
    out["dawm_barrier"], _ = _mean_se(res["barrier"]["dawm"][0])
    out["wm_barrier"], _ = _mean_se(res["barrier"]["wm"][0])
    out["pairs"] = float(res["n"])
    return out


def _holds_init(m: dict[str, float]) -> bool:
    fewer = m["sweeps_saved"] > 2 * m["sweeps_saved_se"]
    as_good = m["objective_gain"] >= -2 * m["objective_gain_se"]
    return fewer and as_good


INIT = Claim(
    key=f"{SLUG}/init",
    statement=("Weight Matching started from Deep-Align's alignment needs fewer coordinate-descent sweeps than "
               "Weight Matching from the identity (by more than 2 standard errors) and ends at a weight-matching "
               "objective at least as good (within 2 standard errors or better)."),
    run=_run_init, holds=_holds_init, headline="dawm_sweeps", baseline="wm_sweeps",
)


# --------------------------------------------------------------------------------------------- symmetries
def _run_symmetries(scale: Scale, seed: int) -> dict[str, float]:
    s = setup(scale, seed)
    A, B = _test_pairs(s.zoo)
    n = min(A.size, 16)
    A, B = A[torch.arange(n)], B[torch.arange(n)]
    g = torch.Generator().manual_seed(20_000 + seed)
    G, H = random_perms(A.hidden, n, g), random_perms(A.hidden, n, g)
    al = s.aligner
    with single_thread():
        S = al.scores_batch(A, B)
        S_gh = al.scores_batch(permute_hard(A, G), permute_hard(B, H))
        S_swap = al.scores_batch(B, A)
    eq = max(float((sg - torch.stack([s_[i][G[l][i]][:, H[l][i]] for i in range(n)])).abs().max())
             for l, (s_, sg) in enumerate(zip(S, S_gh)))
    sw = max(float((s2 - s_.transpose(1, 2)).abs().max()) for s_, s2 in zip(S, S_swap))
    p, p_gh, p_swap = ([hungarian(x) for x in SS] for SS in (S, S_gh, S_swap))
    # predicted alignments: for (g a, h b) row i is matched to h^{-1}(p(g(i))); for (b, a) the inverse of p
    pred_gh = [torch.gather(invert([h])[0], 1, torch.gather(q, 1, gg)) for q, gg, h in zip(p, G, H)]
    return {"equivariance_err": eq, "swap_err": sw, "tolerance": SYM_TOL,
            "score_abs_max": max(float(x.abs().max()) for x in S),
            "equivariant_alignment_frac": permutation_accuracy(p_gh, pred_gh),
            "swap_alignment_frac": permutation_accuracy(p_swap, invert(p)), "pairs": float(n)}


def _holds_symmetries(m: dict[str, float]) -> bool:
    return (m["equivariance_err"] <= m["tolerance"] and m["swap_err"] <= m["tolerance"]
            and m["equivariant_alignment_frac"] == 1.0 and m["swap_alignment_frac"] == 1.0)


SYMMETRIES = Claim(
    key=f"{SLUG}/symmetries",
    statement=(f"Permuting the two input networks by (g, h) permutes Deep-Align's score matrices to g S h^T and "
               f"swapping the inputs transposes them, to within {SYM_TOL} (float32), so its alignments transform "
               "the same way (paper Prop. 4)."),
    run=_run_symmetries, holds=_holds_symmetries, headline="equivariance_err", baseline="tolerance",
)

METHOD = method(SLUG, (EXACTNESS, QUALITY, INIT, SYMMETRIES))
