"""The experiments behind the claims of ``paper.py``: question a model with a planted shortcut, then fix it.

Everything drives the public API (:mod:`.explain`, :mod:`.correct`, :mod:`.measure`, :mod:`.baselines`) on
scikit-learn's digits (8x8, the small arm) and Fashion-MNIST from the data root (2x2-pooled to 14x14), with a bright
corner patch planted on 90 % of class 0's images (:mod:`.world`). Each claim's baselines (accuracy-only
validation, the clean-retrained oracle, random-mask RRR) are measured in the same call.

The three claims judge one experiment, :func:`run_shortcut` (``red_xai/shortcut``): per arm the shortcut model,
the oracle and their corrections are trained once and questioned, fixed and checked. :func:`run_questioning`,
:func:`run_fix` and :func:`run_checks` measure one claim's part alone (each training what it needs).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch

from ..claims import Scale
from ..runs import artifact_dir, save_figure
from ..validation import check_choice, check_seed
from .baselines import clean_oracle, random_mask, random_mask_rrr
from .correct import fit, p_clarc, rr_clarc, rrr
from .explain import attribute, concept_vector, spray, tcav
from .measure import (
    accuracy,
    pixel_flipping,
    randomization_check,
    rank_correlation,
    rashomon,
    relevance_mass,
    shortcut_reliance,
)
from .nets import SmallNet
from .world import DATASETS, ShortcutData, shortcut_data

__all__ = [
    "CONFIG",
    "Setup",
    "setup",
    "artifact_clusters",
    "question_metrics",
    "run_questioning",
    "run_fix",
    "run_checks",
    "run_shortcut",
]

LAYER = "net.1"  # the first hidden ReLU: where the CAV is fitted and P-ClArC projects
TARGET = 0
CONFIG = {
    Scale.SMOKE: {
        "arms": ("digits",),
        "epochs": 20,
        "hidden": 64,
        "n_train": 2000,
        "n_test": 1000,
        "runs": 5,
        "rashomon_widths": (32, 128),
    },
    Scale.QUICK: {
        "arms": ("digits", "fashion-mnist"),
        "epochs": 20,
        "hidden": 64,
        "n_train": 2000,
        "n_test": 1000,
        "runs": 10,
        "rashomon_widths": (32, 64, 128, 32, 128),
    },
    Scale.PAPER: {
        "arms": ("digits", "fashion-mnist"),
        "epochs": 20,
        "hidden": 128,
        "n_train": 10000,
        "n_test": 2000,
        "runs": 20,
        "rashomon_widths": (32, 64, 128, 256, 32, 64, 128, 256),
    },
}
RRR_LAM = 0.1  # Ross et al.'s penalty weight, picked on the grid (0.03, 0.1, 0.3): all three fix both arms


@dataclass(frozen=True)
class Setup:
    """The data, the initial weights, the shortcut model and the clean-retrained oracle of one arm.

    Parameters
    ----------
    data : ShortcutData
    init : torch.nn.Module
    model : torch.nn.Module
    oracle : torch.nn.Module
    config : dict
    """

    data: ShortcutData
    init: torch.nn.Module
    model: torch.nn.Module
    oracle: torch.nn.Module
    config: dict


def setup(name: str, scale: Scale, seed: int) -> Setup:
    """Plant the shortcut, train the model on it and the oracle on the clean images (same init, same steps).

    Parameters
    ----------
    name : {"digits", "fashion-mnist"}
    scale : Scale
    seed : int

    Returns
    -------
    Setup
    """
    name = check_choice(name, "data", DATASETS)
    seed = check_seed(seed)
    return _trained(_arm_data(name, Scale(scale), seed), Scale(scale), seed)


def _arm_data(name: str, scale: Scale, seed: int) -> ShortcutData:
    cfg = CONFIG[scale]
    return shortcut_data(name, target=TARGET, n_train=cfg["n_train"], n_test=cfg["n_test"], seed=seed)


def _trained(d: ShortcutData, scale: Scale, seed: int) -> Setup:
    cfg = CONFIG[scale]
    init = SmallNet(d.x_train[0].numel(), 10, cfg["hidden"], seed=seed)
    model = fit(init, d.x_train, d.y_train, epochs=cfg["epochs"], seed=seed)
    oracle = clean_oracle(init, d.x_clean_train, d.y_train, epochs=cfg["epochs"], seed=seed)
    return Setup(d, init, model, oracle, cfg)


def artifact_clusters(result, mask: torch.Tensor, share: float = 0.5) -> np.ndarray:
    """Flag each SpRAy cluster whose mean heatmap puts at least ``share`` of the largest cluster-mean relevance
    mass inside ``mask`` (what an analyst reads off the cluster means); returns a per-sample bool flag.

    Parameters
    ----------
    result : SprayResult
    mask : torch.Tensor
        Bool ``(C, H, W)`` or ``(H, W)``.
    share : float, default 0.5

    Returns
    -------
    numpy.ndarray
        Bool per heatmap: in an artifact cluster.
    """
    m = mask.reshape(-1).numpy()
    means = result.means.reshape(result.clusters, -1)
    pos = np.clip(means, 0, None)
    mass = (pos[:, m]).sum(1) / np.maximum(pos.sum(1), 1e-30)
    flagged = mass >= share * mass.max()
    return flagged[result.labels]


def _cluster_figure(s: Setup, model: torch.nn.Module, x: torch.Tensor, sp, flag: np.ndarray, name: str) -> None:
    """Save (in a run) the SpRAy clusters' mean heatmaps under gradient x input and both LRP rules."""
    if artifact_dir() is None:
        return
    from matplotlib.figure import Figure

    rows = {"input_x_gradient": None, "lrp_epsilon": None, "lrp_zplus": None}
    for meth in rows:
        h = attribute(model, x, TARGET, meth).double().sum(1).numpy()
        h = h / np.maximum(np.abs(h).reshape(len(h), -1).sum(1), 1e-12)[:, None, None]
        rows[meth] = [h[sp.labels == c].mean(0) for c in range(sp.clusters)]
    m = s.data.mask.reshape(-1).numpy()
    fig = Figure(figsize=(1.7 * sp.clusters + 0.4, 5.6))
    axes = np.array(fig.subplots(3, sp.clusters, squeeze=False))
    for r, (meth, means) in enumerate(rows.items()):
        for c, mean in enumerate(means):
            pos = np.clip(mean, 0, None).reshape(-1)
            lim = float(np.abs(mean).max()) or 1.0
            axes[r, c].imshow(mean, cmap="bwr", vmin=-lim, vmax=lim)
            axes[r, c].axis("off")
            patched = float(flag[sp.labels == c].mean())
            share = pos[m].sum() / max(pos.sum(), 1e-30)
            size = int((sp.labels == c).sum())
            axes[r, c].set_title(f"{meth}\nn={size}, patched {patched:.2f}\nmass {share:.2f}", fontsize=6)
    fig.suptitle(f"{s.data.name}: SpRAy clusters of class {TARGET} (gradient x input), mean heatmaps", fontsize=8)
    save_figure(fig, name)


def question_metrics(s: Setup, model: torch.nn.Module, seed: int, prefix: str) -> dict:
    """Question one model: accuracy, shortcut reliance, SpRAy against the true flag, artifact TCAV.

    Parameters
    ----------
    s : Setup
    model : torch.nn.Module
    seed : int
    prefix : str

    Returns
    -------
    dict
    """
    from sklearn.metrics import adjusted_rand_score

    d = s.data
    out = {
        f"{prefix}acc_test": accuracy(model, d.x_test, d.y_test),
        f"{prefix}acc_clean": accuracy(model, d.x_clean, d.y_test),
        f"{prefix}reliance": shortcut_reliance(model, d.x_swap, d.y_test, TARGET),
    }
    sel = d.y_train == TARGET
    idx = sel.nonzero().flatten()[:200]
    h = attribute(model, d.x_train[idx], TARGET, "input_x_gradient")
    sp = spray(h, seed=seed)
    flag = d.flag_train[idx].numpy()
    out[f"{prefix}spray_ari"] = float(adjusted_rand_score(flag, artifact_clusters(sp, d.mask)))
    out[f"{prefix}spray_clusters"] = float(sp.clusters)
    out[f"{prefix}rma_patched"] = float(relevance_mass(h[flag], d.mask).mean())
    if "oracle" not in prefix:
        _cluster_figure(s, model, d.x_train[idx], sp, flag, f"red_xai-{prefix}spray-clusters-seed{seed}")
    others = (d.y_train != TARGET).nonzero().flatten()
    gen = torch.Generator().manual_seed(seed + 5)
    others = others[torch.randperm(len(others), generator=gen)]
    concept = d.x_clean_train[others[:150]].clone()
    concept[:, d.mask] = 1.0
    pool = d.x_clean_train[others[150:450]]
    test0 = d.x_clean[d.y_test == TARGET]
    t = tcav(model, LAYER, test0, TARGET, concept, pool, runs=s.config["runs"], seed=seed)
    out[f"{prefix}tcav"] = t["score"]
    out[f"{prefix}tcav_p"] = t["p_value"]
    out[f"{prefix}cav_acc"] = t["accuracy"]
    return out


def _arm_prefix(name: str) -> str:
    return "digits_" if name == "digits" else "fmnist_"


def run_questioning(scale: Scale, seed: int) -> dict[str, float]:
    """Claim "questioning finds what accuracy hides": the shortcut model against the clean-retrained oracle.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        Per arm (``digits_``, ``fmnist_``): the shortcut model's accuracy, reliance, SpRAy ARI, TCAV and its
        p-value; the oracle's (``..._oracle_``) same numbers.
    """
    seed = check_seed(seed)
    m: dict[str, float] = {}
    for name, s in _setups(scale, seed):
        m.update(_questioning_metrics(s, seed, _arm_prefix(name)))
    m["arms"] = float(len(CONFIG[Scale(scale)]["arms"]))
    return m


def _setups(scale: Scale, seed: int):
    """``(name, Setup)`` of every arm of ``scale``, the data of every arm read first (a missing data set raises
    :class:`~icml24.errors.DataUnavailable` before any training)."""
    scale = Scale(scale)
    data = [(name, _arm_data(name, scale, seed)) for name in CONFIG[scale]["arms"]]
    for name, d in data:
        yield name, _trained(d, scale, seed)


def _questioning_metrics(s: Setup, seed: int, p: str) -> dict[str, float]:
    return {**question_metrics(s, s.model, seed, p), **question_metrics(s, s.oracle, seed, p + "oracle_")}


def _concept_sets(d: ShortcutData, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    others = (d.y_train != TARGET).nonzero().flatten()
    gen = torch.Generator().manual_seed(seed + 5)
    others = others[torch.randperm(len(others), generator=gen)]
    concept = d.x_clean_train[others[:150]].clone()
    concept[:, d.mask] = 1.0
    return concept, d.x_clean_train[others[150:450]]


def corrected(s: Setup, seed: int) -> dict:
    """The shortcut model, the oracle and their corrections of one arm.

    Parameters
    ----------
    s : Setup
        The arm's data and models (:func:`setup`).
    seed : int

    Returns
    -------
    dict
        ``model``, ``oracle``, ``pclarc``, ``rrclarc`` (RR-ClArC fine-tuned from the model, half the epochs),
        ``rrr``, ``rrr_random`` (eval-mode modules).
    """
    d, ep = s.data, s.config["epochs"]
    concept, pool = _concept_sets(d, seed)
    cav = concept_vector(s.model, LAYER, concept, pool, seed=seed)
    return {
        "model": s.model,
        "oracle": s.oracle,
        "pclarc": p_clarc(s.model, cav, pool),
        "rrclarc": rr_clarc(s.model, d.x_train, d.y_train, cav, epochs=ep // 2, seed=seed),  # reported, not judged
        "rrr": rrr(s.init, d.x_train, d.y_train, d.mask, lam=RRR_LAM, epochs=ep, seed=seed),
        "rrr_random": random_mask_rrr(
            s.init, d.x_train, d.y_train, random_mask(d.mask, seed=seed), lam=RRR_LAM, epochs=ep, seed=seed
        ),
    }


def run_fix(scale: Scale, seed: int) -> dict[str, float]:
    """Claim "the fix works": P-ClArC and RRR against random-mask RRR and the clean-retrained oracle.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        Per arm: reliance and clean accuracy of the shortcut model, the oracle, P-ClArC, RR-ClArC (reported),
        RRR (patch mask) and random-mask RRR.
    """
    seed = check_seed(seed)
    m: dict[str, float] = {}
    for name, s in _setups(scale, seed):
        m.update(_fix_metrics(s, corrected(s, seed), _arm_prefix(name)))
    m["arms"] = float(len(CONFIG[Scale(scale)]["arms"]))
    return m


def _fix_metrics(s: Setup, nets: dict, p: str) -> dict[str, float]:
    d, m = s.data, {}
    for k, net in nets.items():
        m[f"{p}{k}_reliance"] = shortcut_reliance(net, d.x_swap, d.y_test, TARGET)
        m[f"{p}{k}_acc"] = accuracy(net, d.x_clean, d.y_test)
    return m


def run_checks(scale: Scale, seed: int) -> dict[str, float]:
    """Claim "explanations are checked": relevance mass on the patch before and after the fix, and the
    model-randomisation sanity check of the heatmaps.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
        Per arm: ``rma_<model>`` (mean share of positive gradient x input relevance for class 0 inside the patch,
        on the patched class-0 training images) for the untrained init, the shortcut model, the oracle, P-ClArC,
        RRR and random-mask RRR; ``rand_corr`` (signed rank correlation with the fully randomised model's
        heatmaps), ``rand_corr_abs`` (of absolute relevance, reported), ``rand_corr_input`` (the input itself
        used as the explanation: the model-blind control) and ``rand_corr_init`` (the untrained model's);
        ``flip_aopc_{model,init}`` and ``flip_aopc_random_{model,init}`` (pixel flipping, heatmap order and random
        order); reported, the Rashomon set (the model and near-equal ones from other seeds and widths):
        ``rashomon_acc_spread``, ``rashomon_reliance_{min,max}``, ``rashomon_corr`` and ``rashomon_corr_min``.
    """
    seed = check_seed(seed)
    m: dict[str, float] = {}
    for name, s in _setups(scale, seed):
        m.update(_checks_metrics(s, corrected(s, seed), seed, _arm_prefix(name)))
    m["arms"] = float(len(CONFIG[Scale(scale)]["arms"]))
    return m


def _checks_metrics(s: Setup, corrections: dict, seed: int, p: str) -> dict[str, float]:
    d, m = s.data, {}
    idx = (d.flag_train & (d.y_train == TARGET)).nonzero().flatten()[:200]
    xs = d.x_train[idx]
    nets = {"init": copy.deepcopy(s.init).eval(), **corrections}
    for k, net in nets.items():
        h = attribute(net, xs, TARGET, "input_x_gradient")
        m[f"{p}rma_{k}"] = float(relevance_mass(h, d.mask).mean())
    xr = xs[:64]
    m[f"{p}rand_corr"] = randomization_check(s.model, xr, TARGET, seed=seed)["final"]
    m[f"{p}rand_corr_abs"] = randomization_check(s.model, xr, TARGET, absolute=True, seed=seed)["final"]
    m[f"{p}rand_corr_init"] = randomization_check(copy.deepcopy(s.init).eval(), xr, TARGET, seed=seed)["final"]
    h = attribute(s.model, xr, TARGET, "input_x_gradient")
    # the input as its own "explanation" is blind to the weights: randomising them leaves it unchanged
    m[f"{p}rand_corr_input"] = float(rank_correlation(xr, xr).mean())
    m[f"{p}heatmap_input_corr"] = float(rank_correlation(h, xr).mean())
    # pixel-flipping faithfulness of the shortcut model's heatmaps, and of the untrained model's (control)
    for k, net in (("model", s.model), ("init", nets["init"])):
        f = pixel_flipping(net, xs, TARGET, attribute(net, xs, TARGET, "input_x_gradient"), seed=seed)
        m[f"{p}flip_aopc_{k}"], m[f"{p}flip_aopc_random_{k}"] = f["aopc"], f["aopc_random"]
    # the Rashomon set (reported): near-equal models from other seeds and widths, trained on the same data
    cfg = s.config
    models = [s.model] + [
        fit(SmallNet(d.x_train[0].numel(), 10, w, seed=1000 + seed * 10 + i), d.x_train, d.y_train,
            epochs=cfg["epochs"], seed=1000 + seed * 10 + i)
        for i, w in enumerate(cfg["rashomon_widths"])
    ]  # fmt: skip
    r = rashomon(models, d.x_test, d.y_test, d.x_swap, d.y_test, TARGET, xr)
    m[f"{p}rashomon_models"] = float(len(models))
    m[f"{p}rashomon_acc_spread"] = r["accuracy_spread"]
    m[f"{p}rashomon_reliance_min"] = float(r["reliance"].min())
    m[f"{p}rashomon_reliance_max"] = float(r["reliance"].max())
    m[f"{p}rashomon_corr"] = r["rank_correlation"]
    m[f"{p}rashomon_corr_min"] = r["rank_correlation_min"]
    return m


def run_shortcut(scale: Scale, seed: int) -> dict[str, float]:
    """The experiment ``red_xai/shortcut``, judged by the claims questioning, fix and checks: per arm the shortcut
    model, the oracle and their corrections trained once, and the metrics of :func:`run_questioning`,
    :func:`run_fix` and :func:`run_checks` measured on them (their names do not clash: the one name two of them
    share, ``<arm>_oracle_reliance``, is the same measurement).

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float

    Raises
    ------
    DataUnavailable
        At QUICK and PAPER scale when Fashion-MNIST is not in the data root (before any training).
    """
    seed = check_seed(seed)
    m: dict[str, float] = {}
    for name, s in _setups(scale, seed):
        p = _arm_prefix(name)
        nets = corrected(s, seed)
        parts = (_questioning_metrics(s, seed, p), _fix_metrics(s, nets, p), _checks_metrics(s, nets, seed, p))
        for part in parts:
            for k, v in part.items():
                if k in m and m[k] != v:  # pragma: no cover - a guard against a future clash of names
                    raise AssertionError(f"metric {k} differs between two claims' measurements")
                m[k] = v
    m["arms"] = float(len(CONFIG[Scale(scale)]["arms"]))
    return m
