"""The experiments behind the claims of Deep-Align (``paper.py``), built on the public API.

Setting (CPU reproduction plan): a zoo of MLPs ``64 -> 32 -> 32 -> 10`` trained on scikit-learn's 8x8 digits from
different seeds (:func:`icml24.deep_align.world.mlp_zoo`), split into train / val / test *networks*; Deep-Align
trained on the train networks with the official label-free objective and selected on the val networks; every claim is
measured on pairs of held-out test networks, against Weight Matching (and, for quality, Activation Matching and
Sinkhorn re-basin) run on the same pairs in the same call. The zoo and the trained aligner are built once per
``(scale, seed)`` by the experiment ``deep_align/zoo`` (:func:`run_zoo`), which every claim judges.

The claims test learning: each is measured against untrained aligners of the same architecture
(:func:`untrained_aligners`, the best of ``N_UNTRAINED`` initialisations on the very pairs or copies judged) in the
same call. On exact permuted copies an untrained aligner already recovers the permutation (the exactness is
structural, paper Prop. 4), so exactness is judged on copies perturbed by Gaussian noise of ``NOISE_LEVEL``
times each tensor's std, where the untrained aligners fail.

Scales: SMOKE (tests, seconds): 56 networks (32 / 8 / 16), a small aligner, 120 test pairs. QUICK (``icml24
verify``): 90 networks (60 / 10 / 20), 190 test pairs. PAPER: the official encoder and training defaults on a zoo
of ``784 -> 128 -> 128 -> 128 -> 10`` MLPs (the official ``FCNet``) trained on Fashion-MNIST from the data root;
the paper's MNIST and CIFAR10 zoos cannot be obtained offline, so ``on_paper_data`` is 0 there.

The paper's CNN experiments (CIFAR-10 CNNs; CIFAR-10 is not available offline) are :func:`run_cnn`: a zoo of
small CNNs trained on Fashion-MNIST from the data root, Deep-Align over their channels against an untrained
aligner, Weight Matching and no alignment (``icml24 deep-align cnn``). It is an experiment, not a claim: its
quick scale takes minutes, beyond the budget of ``icml24 verify``.

The types of the settings and of a setup, the statistics, the permuted-copy recovery and the metrics read from a
pair study are in ``measurements.py``; this module holds the sizes of each scale and the experiments.
"""

from __future__ import annotations

import logging
import time

import torch

from ..claims import Scale
from ..errors import InputError
from ..threads import single_thread
from .align import DeepAlign
from .baselines import activation_matching, sinkhorn_rebasin, weight_matching, wm_objective
from .evaluation import barrier_and_auc, interpolation_losses
from .measurements import (
    CNNSettings,
    Settings,
    Setup,
    base_metrics,
    copy_recovery,
    held_out_pairs,
    init_metrics,
    mean_se,
    plot_pair_study,
    quality_metrics,
    stack_perms,
    symmetry_metrics,
    timed,
    untrained_controls,
)
from .paper import NOISE_LEVEL
from .permutations import permute_hard
from .zoo import train_zoo

log = logging.getLogger(__name__)

__all__ = [
    "CNN_SETTINGS",
    "run_cnn",
    "SETTINGS",
    "setup",
    "pair_study",
    "untrained_aligners",
    "exactness_metrics",
    "zoo_metrics",
    "run_zoo",
]


# The encoder is the official DWS architecture (diagonal, hnp, per-layer input down-sampling to 8, BatchNorm)
# shrunk for CPU time: 16 channels instead of 64, 2 hidden DWS layers instead of 4, 32 output features instead
# of 128, DeepSets set layers instead of set attention, mean pooling instead of max (the official --reduction
# option "mean"; max plateaued at a 30-60 % higher barrier in our budget). Training uses lr 1e-2 instead of
# 5e-4 because it runs for 300 steps of 16 pairs instead of 100 epochs over thousands of networks.
# SMOKE shrinks the encoder further (8 channels, 1 hidden DWS layer, 16 output features: a training step costs
# a third of the 2-layer encoder's) so that it can be trained for 400 steps on 32 networks, selected on 8
# validation networks, within a test. With the 2-layer encoder trained for 120 steps on 16 networks (4 for
# validation) the aligner was under-trained: the quality check held or failed with the seed and the CPU's
# float rounding (DA - WM barrier +3.9 standard errors at seed 0; 240 steps still failed 2 of 6 seeds).
# Test pairs are cheap to evaluate (all methods on 120 smoke pairs: ~6 s, against ~50 s for the zoo and the
# aligner), so both scales hold out more test networks than validation ones: with 8 (28 pairs) the init claim
# failed at smoke seed 2 (sweeps saved 0.29 +- 0.38), with 16 it holds (0.57 +- 0.14), and with 10 at quick (45
# pairs) DA - WM flipped sign with the seed (+0.032 +- 0.022, +0.030 +- 0.021, -0.021 +- 0.023); with 20
# (190 pairs) it reads -0.001, -0.007, +0.015 (+- 0.012), see the beats-wm finding.
# QUICK is the scale the claims are judged at.
_ENC = dict(hidden=16, n_hidden=2, output_features=32, set_layer="ds", reduction="mean")
SETTINGS = {
    Scale.SMOKE: Settings(
        56,
        8,
        16,
        100,
        (64, 32, 32, 10),
        {**_ENC, "hidden": 8, "n_hidden": 1, "output_features": 16},
        dict(steps=400, batch_size=16, lr=1e-2, eval_every=50),
        2,
        2,
        60,
        128,
    ),
    Scale.QUICK: Settings(
        90, 10, 20, 150, (64, 32, 32, 10), _ENC, dict(steps=300, batch_size=16, lr=1e-2, eval_every=50), 3, 8, 200, 256
    ),
    Scale.PAPER: Settings(
        1000,
        100,
        100,
        3000,
        (784, 128, 128, 128, 10),
        {},
        dict(steps=100 * 800 // 32, batch_size=32, lr=5e-4, eval_every=5 * 800 // 32),
        3,
        45,
        1000,
        1000,
        zoo_batch=128,
        data="fashion_mnist",
    ),
}


def setup(scale: Scale, seed: int) -> Setup:
    """Train the zoo and the aligner of ``(scale, seed)`` on one thread.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    Setup
    """
    st = SETTINGS[scale]
    data = None
    if st.data == "fashion_mnist":
        from ..data import fashion_mnist

        log.warning(
            "deep_align at paper scale: the paper's MNIST/CIFAR10 zoos are not available offline; "
            "using MLPs trained on Fashion-MNIST from the data root instead"
        )
        data = fashion_mnist(flatten=True, seed=seed)
    with single_thread():
        t0 = time.perf_counter()
        zoo = train_zoo(
            st.n_nets,
            widths=st.widths,
            val=st.n_val,
            test=st.n_test,
            steps=st.zoo_steps,
            batch_size=st.zoo_batch,
            seed=seed,
            data=data,
        )
        t1 = time.perf_counter()
        aligner = DeepAlign(st.widths, seed=seed, **st.encoder)
        aligner.fit(zoo.split("train"), zoo.data.x_train, zoo.data.y_train, val=zoo.split("val"), seed=seed, **st.train)
        t2 = time.perf_counter()
    return Setup(zoo, aligner, t1 - t0, t2 - t1, st)


# ------------------------------------------------------------------------------------------- exactness
def untrained_aligners(scale: Scale, seed: int) -> list[DeepAlign]:
    """The untrained controls: ``N_UNTRAINED`` randomly initialised aligners of the trained one's architecture.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    list of DeepAlign
        Initialised from seeds ``100 * (seed + 1) + k`` (never the trained aligner's seed).
    """
    st = SETTINGS[scale]
    return untrained_controls(st.widths, st.encoder, seed)


def exactness_metrics(s: Setup, scale: Scale, seed: int) -> dict[str, float]:
    """Permutation recovery on randomly permuted copies of held-out networks, exact and noisy.

    Deep-Align trained, the untrained controls (:func:`untrained_aligners`, the best of them reported) and
    Weight Matching recover the permutation of the same copies.

    Parameters
    ----------
    s : Setup
        The zoo and aligner of ``(scale, seed)``.
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        ``da_perm_acc``, ``wm_perm_acc`` and ``untrained_da_perm_acc`` on exact copies; ``noisy_da_perm_acc``,
        ``noisy_untrained_perm_acc``, ``noisy_wm_perm_acc`` on copies with Gaussian noise of ``NOISE_LEVEL``
        times each tensor's std; ``noisy_da_minus_untrained`` (paired over copies) with its standard error;
        times per copy (``*_ms_per_copy*``) and the number of ``copies``.
    """
    st = s.settings
    out = base_metrics(s)
    controls = untrained_aligners(scale, seed)
    copies, recovery = copy_recovery(s.aligner, controls, s.zoo.split("test"), st.copies_per_net, seed)
    for kind, r in recovery.items():
        pre = "" if kind == "exact" else "noisy_"
        out[f"{pre}da_perm_acc"] = float(r.da.mean())
        out[f"{pre}wm_perm_acc"] = r.wm
        out[f"{pre}untrained_{'' if pre else 'da_'}perm_acc"] = float(r.untrained.mean())
        out[f"{pre}da_minus_untrained"], out[f"{pre}da_minus_untrained_se"] = mean_se(r.da - r.untrained)
        if kind == "exact":
            out["da_ms_per_copy_batched"] = 1e3 * r.da_seconds / copies
            out["wm_ms_per_copy"] = 1e3 * r.wm_seconds / copies
    out["noise_level"] = NOISE_LEVEL
    out["copies"] = float(copies)
    return out


# --------------------------------------------------------------------------------------- quality & init
def pair_study(s: Setup, scale: Scale, seed: int) -> dict:
    """Every method on every pair of held-out networks (read by the quality and init measurements).

    Parameters
    ----------
    s : Setup
        The zoo and aligner of ``(scale, seed)``.
    scale : Scale
    seed : int

    Returns
    -------
    dict
        ``"curves"``: per method the interpolation losses; ``"barrier"``: per method ``(barrier, auc)`` per pair;
        Weight Matching's sweeps and objectives with and without Deep-Align's initialisation; times per pair
        (``*_ms``); ``"n"`` pairs, ``"k_sr"`` of them given to Sinkhorn re-basin.
    """
    st = s.settings
    A, B = held_out_pairs(s.zoo)
    n = A.size
    x, y = s.zoo.data.x_test, s.zoo.data.y_test
    xtr, ytr = s.zoo.data.x_train, s.zoo.data.y_train
    res: dict = {"n": n}
    with single_thread():
        da, t = timed(lambda: s.aligner.align_batch(A, B))
        res["da_ms_batched"] = 1e3 * t / n
        untrained = [c.align_batch(A, B) for c in untrained_aligners(scale, seed)]
        _, t = timed(lambda: [s.aligner.align(A[k], B[k]) for k in range(min(n, 10))])
        res["da_ms_single"] = 1e3 * t / min(n, 10)
        wm, t = timed(lambda: [weight_matching(A[k], B[k], seed=seed + k) for k in range(n)])
        res["wm_ms"] = 1e3 * t / n
        dawm, t = timed(lambda: [weight_matching(A[k], B[k], init=[p[k] for p in da], seed=seed + k) for k in range(n)])
        res["dawm_ms"] = res["da_ms_batched"] + 1e3 * t / n
        am, t = timed(lambda: [activation_matching(A[k], B[k], xtr[: st.am_images]) for k in range(n)])
        res["am_ms"] = 1e3 * t / n
        k_sr = min(st.sr_pairs, n)
        sr, t = timed(
            lambda: [sinkhorn_rebasin(A[k], B[k], xtr, ytr, steps=st.sr_steps, seed=seed + k) for k in range(k_sr)]
        )
        res["sr_ms"] = 1e3 * t / max(k_sr, 1)
    perms = {
        "da": da,
        "wm": stack_perms([r.perms for r in wm]),
        "dawm": stack_perms([r.perms for r in dawm]),
        "am": stack_perms([r.perms for r in am]),
    }
    curves = {"none": interpolation_losses(A, B, x, y)}
    for k, p in perms.items():
        curves[k] = interpolation_losses(A, permute_hard(B, p), x, y)
    idx = torch.arange(k_sr)
    curves["sr"] = interpolation_losses(A[idx], permute_hard(B[idx], stack_perms([r.perms for r in sr])), x, y)
    # the untrained control: of the untrained initialisations, the one with the lowest mean barrier here
    uc = [interpolation_losses(A, permute_hard(B, p), x, y) for p in untrained]
    curves["untrained"] = min(uc, key=lambda c: float(barrier_and_auc(*c)[0].mean()))
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


def zoo_metrics(s: Setup, scale: Scale, seed: int) -> dict[str, float]:
    """Every claim's metrics on one trained zoo and aligner: exactness, the pair study (quality, init), symmetries.

    Parameters
    ----------
    s : Setup
        The zoo and aligner of ``(scale, seed)``.
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        The union of :func:`exactness_metrics`, :func:`quality_metrics`, :func:`init_metrics` and
        :func:`symmetry_metrics` (the metrics they share, the setup's and the pair count, are equal).
    """
    out = exactness_metrics(s, scale, seed)
    res = pair_study(s, scale, seed)
    out.update(quality_metrics(s, res))
    plot_pair_study(res)
    out.update(init_metrics(s, res))
    out.update(symmetry_metrics(s, seed))
    return out


def run_zoo(scale: Scale, seed: int) -> dict[str, float]:
    """The experiment ``deep_align/zoo``: train the zoo and the aligner once, measure every claim on them.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        :func:`zoo_metrics` of :func:`setup`.
    """
    return zoo_metrics(setup(scale, seed), scale, seed)


# The CNN setting of the paper (CIFAR-10 CNNs) on Fashion-MNIST: CIFAR-10 is not available offline. SMOKE is a
# seconds-long check that the pipeline runs (not a claim); PAPER is the largest run we could afford, far from the
# paper's zoos of thousands of CIFAR-10 CNNs (the measured barriers are in the README's "Measured" section).
CNN_SETTINGS = {
    Scale.SMOKE: CNNSettings(
        12,
        2,
        4,
        60,
        1e-2,
        32,
        (1, 4, 8),
        {**_ENC, "hidden": 8, "n_hidden": 1},
        dict(steps=20, batch_size=8, lr=1e-2, eval_every=10),
        200,
        1,
    ),
    Scale.QUICK: CNNSettings(
        48, 6, 12, 400, 1e-2, 64, (1, 8, 16, 16), _ENC, dict(steps=300, batch_size=16, lr=1e-2, eval_every=50), 1000, 3
    ),
    Scale.PAPER: CNNSettings(
        80, 8, 16, 500, 1e-2, 64, (1, 8, 16, 16), _ENC, dict(steps=400, batch_size=16, lr=1e-2, eval_every=50), 500, 3
    ),
}


def run_cnn(scale: Scale = Scale.QUICK, seed: int = 0, **overrides) -> dict[str, float]:
    """Deep-Align on a zoo of CNNs (the paper's CNN experiments, on Fashion-MNIST: CIFAR-10 is not available
    offline), against an untrained aligner, Weight Matching and no alignment, on held-out pairs.

    A zoo of :class:`~icml24.deep_align.cnn.CNNSpec` networks is trained from different seeds
    (:func:`~icml24.deep_align.cnn.train_cnn_zoo`); Deep-Align is trained on its train networks with the
    supervised and weight (L2) losses (``recon="l2"``: our interpolation loss evaluates MLPs) and selected on
    its val networks; every pair of test networks is then aligned by each method and merged along the linear
    path. Permuted copies of the test networks, exact and with Gaussian noise of ``NOISE_LEVEL`` times each
    tensor's std, measure permutation recovery.

    Parameters
    ----------
    scale : Scale, default Scale.QUICK
        The sizes (:data:`CNN_SETTINGS`).
    seed : int, default 0
    **overrides
        Fields of :class:`CNNSettings` to replace (e.g. ``n_nets=60``).

    Returns
    -------
    dict of str to float
        ``<method>_barrier`` (mean over pairs) and ``_se`` for none, untrained (best of ``N_UNTRAINED``), da,
        wm and dawm; ``none_minus_da``, ``untrained_minus_da``, ``da_minus_wm`` (paired, with ``_se``);
        ``da_perm_acc``, ``untrained_perm_acc``, ``wm_perm_acc`` on exact copies and ``noisy_*`` on noisy ones;
        times, zoo accuracy and sizes.
    """
    import dataclasses

    from ..data import fashion_mnist
    from ..validation import check_seed
    from .cnn import CNNSpec, cnn_interpolation_losses, train_cnn_zoo

    seed = check_seed(seed)
    try:
        st = dataclasses.replace(CNN_SETTINGS[Scale(scale)], **overrides)
    except TypeError as exc:
        raise InputError(
            f"overrides: {exc}", f"choose from {[f.name for f in dataclasses.fields(CNNSettings)]}"
        ) from None
    spec = CNNSpec(channels=tuple(st.channels))
    out: dict[str, float] = {}
    with single_thread():
        data = fashion_mnist(seed=seed)
        zoo, t_zoo = timed(
            lambda: train_cnn_zoo(
                st.n_nets,
                spec=spec,
                val=st.n_val,
                test=st.n_test,
                steps=st.zoo_steps,
                lr=st.zoo_lr,
                batch_size=st.zoo_batch,
                seed=seed,
                data=data,
                eval_images=st.eval_images,
            )
        )
        enc = dict(st.encoder)
        aligner = DeepAlign(spec.widths, features=spec.features, seed=seed, **enc)
        train = {**st.train, "recon": "l2"}
        _, t_fit = timed(
            lambda: aligner.fit(
                zoo.split("train"), data.x_train, data.y_train, val=zoo.split("val"), seed=seed, **train
            )
        )
        log.info("CNN zoo trained in %.1f s, aligner in %.1f s", t_zoo, t_fit)
        controls = untrained_controls(spec.widths, enc, seed, features=spec.features)
        x, y = data.x_test[: st.eval_images], data.y_test[: st.eval_images]
        A, B = held_out_pairs(zoo)
        n = A.size
        da, t_da = timed(lambda: aligner.align_batch(A, B))
        untrained = [c.align_batch(A, B) for c in controls]
        wm, t_wm = timed(lambda: [weight_matching(A[k], B[k], seed=seed + k) for k in range(n)])
        dawm = [weight_matching(A[k], B[k], init=[p[k] for p in da], seed=seed + k) for k in range(n)]
        perms = {"da": da, "wm": stack_perms([r.perms for r in wm]), "dawm": stack_perms([r.perms for r in dawm])}
        bar = {"none": barrier_and_auc(*cnn_interpolation_losses(A, B, x, y, spec))[0]}
        for k, p in perms.items():
            bar[k] = barrier_and_auc(*cnn_interpolation_losses(A, permute_hard(B, p), x, y, spec))[0]
        un = [barrier_and_auc(*cnn_interpolation_losses(A, permute_hard(B, p), x, y, spec))[0] for p in untrained]
        bar["untrained"] = min(un, key=lambda v: float(v.mean()))
        log.info("CNN pairs aligned and interpolated")
        # permutation recovery on exact and noisy permuted copies of the test networks
        copies, recovery = copy_recovery(aligner, controls, zoo.split("test"), st.copies_per_net, seed)
        for kind, r in recovery.items():
            pre = "" if kind == "exact" else "noisy_"
            out[f"{pre}da_perm_acc"] = float(r.da.mean())
            out[f"{pre}untrained_perm_acc"] = float(r.untrained.mean())
            out[f"{pre}wm_perm_acc"] = r.wm
            out[f"{pre}da_minus_untrained"], out[f"{pre}da_minus_untrained_se"] = mean_se(r.da - r.untrained)
    for k, v in bar.items():
        out[f"{k}_barrier"], out[f"{k}_barrier_se"] = mean_se(v)
    out["none_minus_da"], out["none_minus_da_se"] = mean_se(bar["none"] - bar["da"])
    out["untrained_minus_da"], out["untrained_minus_da_se"] = mean_se(bar["untrained"] - bar["da"])
    out["da_minus_wm"], out["da_minus_wm_se"] = mean_se(bar["da"] - bar["wm"])
    out["wm_sweeps"], _ = mean_se([float(r.sweeps) for r in wm])
    out["dawm_sweeps"], _ = mean_se([float(r.sweeps) for r in dawm])
    out.update(
        {
            "zoo_seconds": t_zoo,
            "train_seconds": t_fit,
            "train_steps": float(st.train["steps"]),
            "best_step": float(aligner.history.best_step),
            "zoo_test_acc": float(zoo.test_acc.mean()),
            "zoo_test_loss": float(zoo.test_loss.mean()),
            "n_nets": float(st.n_nets),
            "n_test_nets": float(st.n_test),
            "pairs": float(n),
            "copies": float(copies),
            "eval_images": float(len(x)),
            "noise_level": NOISE_LEVEL,
            "da_ms_per_pair_batched": 1e3 * t_da / n,
            "wm_ms_per_pair": 1e3 * t_wm / n,
            "on_paper_data": 0.0,
        }
    )
    return out
