"""The experiments behind the claims of ``paper.py`` and the curves of the ``ensemble-equivariance`` verb.

Everything drives the public API (:mod:`.groups`, :mod:`.ntk`, :mod:`.ensemble`, :mod:`.baselines`) on
scikit-learn's digits (the small arm, 8x8) and Fashion-MNIST from the data root (the paper's data set, 2x2
average-pooled to 14x14: block pooling commutes with quarter turns and flips, so the group still acts exactly);
each claim's controls are measured in the same call.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import torch

from ..claims import Scale
from ..errors import DataUnavailable, InputError
from ..runs import note_substitution, save_figure
from ..validation import check_choice, check_int, check_seed
from .baselines import GroupCNN, OrbitAveraged
from .ensemble import ensemble_metrics, orbit_outputs, orbit_same_prediction, train_ensemble
from .groups import Group, augment, check_images
from .ntk import NTKMLP, NTKEnsembleMean

__all__ = [
    "DATASETS",
    "FASHION_STAND_IN",
    "load_images",
    "osp_curve",
    "osp_figure",
    "run_exactness",
    "run_emergence",
    "run_accuracy",
    "run_training_time",
    "run_c4_ensembles",
    "run_width",
    "run_d4",
    "run_vector",
    "moment_target",
]

DATASETS = ("digits", "fashion-mnist")
FASHION_STAND_IN = "Fashion-MNIST is not under the data root: scikit-learn's 8x8 digits stand in"
TIMES = (0.0, 1.0, 10.0, math.inf)
_Q = {"test": "x_test", "noise": "noise"}


def load_images(name: str, n_train: int, n_test: int, seed: int = 0) -> dict:
    """Square images standardised by one scalar mean and standard deviation (a rotation-invariant map).

    Parameters
    ----------
    name : {"digits", "fashion-mnist"}
        Digits: scikit-learn's 8x8 digits. Fashion-MNIST: read from the data root, 2x2-pooled to 14x14.
    n_train, n_test : int
        Subset sizes, drawn uniformly at random (not class-stratified) (digits: at most 1347 and 450).
    seed : int, default 0

    Returns
    -------
    dict
        ``x_train, y_train, x_test, y_test`` (float32 images ``(N, 1, H, H)`` and int64 labels),
        ``classes`` (int) and ``noise`` (Gaussian images of the test set's size, the off-manifold inputs).
    """
    name = check_choice(name, "data", DATASETS)
    n_train = check_int(n_train, "n_train", min_val=1)
    n_test = check_int(n_test, "n_test", min_val=1)
    seed = check_seed(seed)
    if name == "digits":
        from ..data.tabular import digits

        sp = digits(flatten=False, seed=seed)
        rng = np.random.default_rng(seed)
        itr = rng.permutation(len(sp.y_train))[:n_train]
        ite = rng.permutation(len(sp.y_test))[:n_test]
        xtr, ytr, xte, yte = sp.x_train[itr], sp.y_train[itr], sp.x_test[ite], sp.y_test[ite]
    else:
        from ..data.tabular import fashion_mnist

        sp = fashion_mnist(n_train=n_train, n_test=n_test, seed=seed)
        pool = torch.nn.functional.avg_pool2d
        xtr, ytr, xte, yte = pool(sp.x_train, 2), sp.y_train, pool(sp.x_test, 2), sp.y_test
    mu, sd = xtr.mean(), xtr.std()
    gen = torch.Generator().manual_seed(seed + 7)
    return {
        "x_train": (xtr - mu) / sd,
        "y_train": ytr,
        "x_test": (xte - mu) / sd,
        "y_test": yte,
        "classes": 10,
        "noise": torch.randn(xte.shape, generator=gen),
    }


# ----------------------------------------------------------------------------------------- exactness
def run_exactness(scale: Scale, seed: int) -> dict[str, float]:
    """Closed-form NTK ensemble mean: invariance error at t in {0, 1, 10, inf} with full augmentation, one
    orbit element removed, and no augmentation, on test digits and Gaussian noise.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
    """
    n, nq = scale.pick((60, 60), (300, 200), (300, 450))
    d = load_images("digits", n, nq, seed)
    grp = Group("c4")
    y = torch.nn.functional.one_hot(d["y_train"], 10).double()
    xa, ya = augment(d["x_train"].double(), y, grp)
    keep = torch.ones(len(xa), dtype=torch.bool)
    keep[n + 0] = False  # drop the quarter turn of the first sample: no longer orbit-closed
    arms = {
        "aug": NTKEnsembleMean(2).fit(xa, ya, grp=grp),
        "broken": NTKEnsembleMean(2).fit(xa[keep], ya[keep]),
        "noaug": NTKEnsembleMean(2).fit(d["x_train"].double(), y),
    }
    m: dict[str, float] = {"n_train_aug": float(len(xa))}
    queries = {"test": d["x_test"].double(), "noise": d["noise"].double()}
    for arm, model in arms.items():
        for qn, q in queries.items():
            orbit = grp.orbit(q)
            for t in TIMES:
                outs = np.stack([model.predict(orbit[g], t) for g in range(grp.order)])
                tag = "inf" if t == math.inf else f"{t:g}"
                m[f"{arm}_err_t{tag}_{qn}"] = float(np.abs(outs - outs[0]).max())
                m[f"{arm}_absmax_t{tag}_{qn}"] = float(np.abs(outs).max())
    m["aug_err_max"] = max(v for k, v in m.items() if k.startswith("aug_err_"))
    for arm in ("broken", "noaug"):
        m[f"{arm}_err_min"] = min(v for k, v in m.items() if k.startswith(f"{arm}_err_") and "_t0_" not in k)
    m["aug_mean_t0_absmax"] = max(m["aug_absmax_t0_test"], m["aug_absmax_t0_noise"])
    fit = arms["aug"].predict(xa, math.inf)
    m["aug_train_residual_inf"] = float(np.abs(fit - ya.numpy()).max())
    pred = arms["aug"].predict(queries["test"], math.inf).argmax(1)
    m["aug_test_acc"] = float((pred == d["y_test"].numpy()).mean())
    return m


# ----------------------------------------------------------------------------------------- emergence
def _mlp_factory(d_in: int, width: int, classes: int):
    return lambda: NTKMLP(d_in, width, classes, 2)


def _slope(sizes: Sequence[int], errs: Sequence[float]) -> float:
    return float(np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(errs, float)), 1)[0])


CHECKPOINTS = (0, 3, 10, 30, 100)  # and the last step


def _train_emergence(scale: Scale, seed: int):
    """The augmented and un-augmented ensembles of the emergence experiment, with snapshots over training
    (deterministic given ``(scale, seed)``)."""
    cfg = scale.pick((40, 100, 32, 64, 150), (100, 200, 64, 64, 150), (300, 450, 512, 64, 300))
    n, nq, width, members, steps = cfg
    d = load_images("digits", n, nq, seed)
    grp = Group("c4")
    xa, ya = augment(d["x_train"], d["y_train"], grp)
    factory = _mlp_factory(64, width, 10)
    ckpt = tuple(c for c in CHECKPOINTS if c < steps) + (steps,)
    arms = {
        "aug": train_ensemble(
            factory, xa, _onehot(ya), members=members, steps=steps, lr=1.0, seed=seed, checkpoints=ckpt
        ),
        "noaug": train_ensemble(
            factory, d["x_train"], _onehot(d["y_train"]), members=members, steps=steps, seed=seed, checkpoints=ckpt
        ),
    }
    return d, grp, arms, cfg


def run_emergence(scale: Scale, seed: int) -> dict[str, float]:
    """Finite MLP ensembles (NTK parametrisation, full-batch GD on the MSE) with and without full C4
    augmentation: OSP and invariance error of sub-ensembles of size 1, 4, 16 and 64 on test digits and noise.

    Off the data manifold the emergence is a matter of ensemble size and training time, not of the noise
    draw alone. The exact (infinite-M) mean is invariant everywhere, but on Gaussian noise its top-two margin
    is small: in the closed-form NTK mean on 40 digits x 4 turns the median noise margin is 0.075 and 0.096 on
    seeds 1 and 2, against 0.18 on seed 0, whose subset lacks one class and over-represents two, so its mean
    predicts one class on 86% of the noise inputs (on test digits the margins are 0.19-0.39). The members'
    spread around the mean does not shrink with training, so the sub-ensemble of size M follows the exact mean's
    argmax only once spread / sqrt(M) falls below that margin, and the trained part of the mean grows with the
    steps. Smoke therefore keeps 64 members and 150 steps (as quick) at width 32 on 40 digits: with 16 members
    and 60 steps the noise OSP gain was 0.10-0.17 on seeds 1 and 2 (seed 0: 1.27).

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
    """
    return _emergence_metrics(*_train_emergence(scale, seed))


def _emergence_metrics(d: dict, grp: Group, arms: dict, cfg: tuple) -> dict[str, float]:
    n, nq, width, members, steps = cfg
    sizes = sorted({s for s in (1, 4, 16, 64) if s <= members} | {members})
    m: dict[str, float] = {"members": float(members), "width": float(width), "steps": float(steps)}
    for arm, ens in arms.items():
        m[f"{arm}_test_acc"] = float((ens(d["x_test"]).argmax(1) == d["y_test"]).float().mean())
        for qn in ("test", "noise"):
            r = ensemble_metrics(ens, d[_Q[qn]], grp, sizes=sizes)
            for s in sizes:
                m[f"{arm}_osp_m{s}_{qn}"] = r[f"osp_m{s}"]
                m[f"{arm}_err_m{s}_{qn}"] = r[f"err_m{s}"]
            m[f"{arm}_err_slope_{qn}"] = _slope(sizes, [r[f"err_m{s}"] for s in sizes])
    top = max(sizes)
    for qn in ("test", "noise"):
        osp = [m[f"aug_osp_m{s}_{qn}"] for s in sizes]
        m[f"aug_osp_gain_{qn}"] = osp[-1] - osp[0]
        m[f"aug_osp_min_step_{qn}"] = float(min(b - a for a, b in zip(osp[:-1], osp[1:])))
        m[f"aug_vs_noaug_osp_{qn}"] = m[f"aug_osp_m{top}_{qn}"] - m[f"noaug_osp_m{top}_{qn}"]
        m[f"noaug_over_aug_err_{qn}"] = m[f"noaug_err_m{top}_{qn}"] / m[f"aug_err_m{top}_{qn}"]
    _figure(m, sizes, "emergence")
    return m


def _figure(m: dict, sizes: Sequence[int], name: str) -> None:
    try:
        fig = osp_figure(
            {
                f"{arm} {qn}": [m[f"{arm}_osp_m{s}_{qn}"] for s in sizes]
                for arm in ("aug", "noaug")
                for qn in ("test", "noise")
            },
            sizes,
        )
    except ImportError:  # pragma: no cover - matplotlib is a core dependency
        return
    save_figure(fig, name)


def osp_figure(curves: dict, sizes: Sequence[int], *, order: int = 4, title: str = ""):
    """OSP against ensemble size on a log axis, one line per curve, the exact value |G| dashed.

    Parameters
    ----------
    curves : dict of str to sequence of float
        OSP per size, per label.
    sizes : sequence of int
        Ensemble sizes M.
    order : int, default 4
        |G|, drawn as the exact-invariance limit.
    title : str, default ""

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.subplots()
    for label, ys in curves.items():
        ax.plot(list(sizes), list(ys), marker="o", label=label)
    ax.axhline(order, ls="--", c="k", lw=1, label=f"exact (|G| = {order})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("ensemble size M")
    ax.set_ylabel("orbit same prediction (OSP)")
    ax.set_title(title or "emergent invariance of the ensemble mean")
    ax.legend(fontsize=7)
    return fig


# ----------------------------------------------------------------------------------------- accuracy
def _params(module: torch.nn.Module) -> int:
    return int(sum(p.numel() for p in module.parameters()))


def run_accuracy(scale: Scale, seed: int) -> dict[str, float]:
    """Accuracy and OSP of the augmented ensemble, a single augmented member, its test-time orbit average,
    a single model without augmentation and a C4 group-convolution CNN of about one member's parameter count.

    Parameters
    ----------
    scale : Scale
        SMOKE reads scikit-learn's digits; QUICK and PAPER read Fashion-MNIST from the data root. At QUICK scale
        without it, the digits stand in (announced with :func:`~icml24.runs.note_substitution`; the claim
        holds there too: ensemble / single member accuracy 0.64 / 0.23, 0.69 / 0.31, 0.67 / 0.34 on seeds 0-2).
    seed : int

    Returns
    -------
    dict of str to float

    Raises
    ------
    DataUnavailable
        At PAPER scale when Fashion-MNIST is not in the data root (before any training).
    """
    name = scale.pick("digits", "fashion-mnist", "fashion-mnist")
    n, nq, width, members, steps = scale.pick((60, 100, 16, 8, 60), (300, 300, 24, 16, 150), (2000, 2000, 64, 64, 300))
    chans = scale.pick((4, 8), (6, 12), (8, 24))
    try:
        d = load_images(name, n, nq, seed)
    except DataUnavailable:
        if scale is not Scale.QUICK:
            raise
        note_substitution(FASHION_STAND_IN)
        d = load_images("digits", n, nq, seed)
    grp = Group("c4")
    side = d["x_train"].shape[-1]
    xa, ya = augment(d["x_train"], d["y_train"], grp)
    factory = _mlp_factory(side * side, width, 10)
    ens = train_ensemble(factory, xa, _onehot(ya), members=members, steps=steps, lr=1.0, seed=seed)
    single = ens.subset([0])
    plain = train_ensemble(factory, d["x_train"], _onehot(d["y_train"]), members=1, steps=steps, lr=1.0, seed=seed)
    tta = OrbitAveraged(single, grp)
    gcnn = GroupCNN(1, chans, 10, grp, seed=seed)
    opt = torch.optim.Adam(gcnn.parameters(), lr=1e-2)
    yt = torch.nn.functional.one_hot(d["y_train"], 10).float()
    for _ in range(steps):
        opt.zero_grad()
        loss = 0.5 * ((gcnn(d["x_train"]) - yt) ** 2).sum(1).mean()
        loss.backward()
        opt.step()
    gcnn.eval()
    models = {"ensemble": ens, "single": single, "tta": tta, "noaug": plain, "gcnn": gcnn}
    m: dict[str, float] = {
        "member_params": float(_params(factory())),
        "gcnn_params": float(_params(gcnn)),
        "members": float(members),
    }
    for k, f in models.items():
        with torch.no_grad():
            m[f"{k}_acc"] = float((f(d["x_test"]).argmax(1) == d["y_test"]).float().mean())
            m[f"{k}_osp_noise"] = orbit_same_prediction(orbit_outputs(f, d["noise"], grp))
            m[f"{k}_osp_test"] = orbit_same_prediction(orbit_outputs(f, d["x_test"], grp))
    m["ensemble_minus_single_acc"] = m["ensemble_acc"] - m["single_acc"]
    return m


# ----------------------------------------------------------------------------------------- training time
def _onehot(y: torch.Tensor) -> torch.Tensor:
    """One-hot targets over the ten digit classes (a small subset may lack the largest label)."""
    return torch.nn.functional.one_hot(y, 10).float()


def _ntk_mean(x: torch.Tensor, y: torch.Tensor, classes: int | None = 10) -> NTKEnsembleMean:
    """The closed-form mean matched to :func:`train_ensemble`: the loss averages over the N rows, so gradient
    flow runs at eta = 1 / N, and step s of learning rate 1 is time t = s."""
    yy = torch.nn.functional.one_hot(y, classes).double() if classes else y.double()
    return NTKEnsembleMean(2, lr=1.0 / len(x)).fit(x.double(), yy)


def run_training_time(scale: Scale, seed: int) -> dict[str, float]:
    """OSP and invariance error of the members, the ensemble mean and the closed-form NTK mean over training
    time (the ensembles of :func:`run_emergence`, snapshots at steps 0, 3, 10, 30, 100 and the last), with the
    ensemble trained without augmentation as the control.

    The closed-form mean runs at eta = 1 / N (the loss averages over the N rows) and time t = step (learning
    rate 1), the gradient-flow limit of the members' full-batch steps. Two things are measured at every
    checkpoint: the ensemble's invariance error relative to the mean member's (an exactly invariant mean
    plus M independent fluctuations gives about 1/sqrt(M), at t = 0 too, where the finite mean is pure
    noise), and the OSP gain. On noise the OSP gain comes late: the exact mean's top-two margin there is
    small (see :func:`run_emergence`) and its trained part grows with t, so the finite ensemble follows
    its argmax only late. At step 10 the noise gain was 1.22, 0.03 and 0.14 on seeds 0-2 at smoke scale
    and 0.26, -0.03 and 0.06 at quick scale, where it passed 0.5 only by step 30 (seed 0) or 100 (seeds 1
    and 2: 0.64 and 1.16); on test digits it was >= 0.9 from step 10 on every seed at both scales.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
    """
    return _training_time_metrics(*_train_emergence(scale, seed), seed)


def _training_time_metrics(d: dict, grp: Group, arms: dict, cfg: tuple, seed: int) -> dict[str, float]:
    n, nq, width, members, steps = cfg
    ckpt = sorted(arms["aug"].snapshots)
    xa, ya = augment(d["x_train"], d["y_train"], grp)
    ntk = _ntk_mean(xa, ya)
    m: dict[str, float] = {"members": float(members), "steps": float(steps), "checkpoints": float(len(ckpt))}
    for qn in ("test", "noise"):
        q = d[_Q[qn]]
        orbit = grp.orbit(q.double())
        for c in ckpt:
            for arm, ens in arms.items():
                r = ensemble_metrics(ens.snapshots[c], q, grp)
                for k in ("member_osp", "ensemble_osp", "member_err", "ensemble_err"):
                    m[f"{arm}_{k}_s{c}_{qn}"] = r[k]
                m[f"{arm}_err_ratio_s{c}_{qn}"] = r["ensemble_err"] / r["member_err"]
                m[f"{arm}_osp_gain_s{c}_{qn}"] = r["ensemble_osp"] - r["member_osp"]
            outs = torch.from_numpy(np.stack([ntk.predict(orbit[g], float(c)) for g in range(grp.order)]))
            m[f"ntk_err_s{c}_{qn}"] = float((outs - outs[0]).abs().max())
            m[f"ntk_osp_s{c}_{qn}"] = orbit_same_prediction(outs)
            ens_pred = arms["aug"].snapshots[c](q).argmax(1)
            m[f"aug_ntk_agree_s{c}_{qn}"] = float((ens_pred == outs[0].argmax(1)).float().mean())
    late = [c for c in ckpt if c >= 10]
    for qn in ("test", "noise"):
        m[f"ntk_err_max_{qn}"] = max(m[f"ntk_err_s{c}_{qn}"] for c in ckpt)
        m[f"aug_err_ratio_max_{qn}"] = max(m[f"aug_err_ratio_s{c}_{qn}"] for c in ckpt)
        m[f"aug_osp_gain_min_late_{qn}"] = min(m[f"aug_osp_gain_s{c}_{qn}"] for c in late)
        m[f"noaug_err_ratio_last_{qn}"] = m[f"noaug_err_ratio_s{steps}_{qn}"]
        m[f"aug_err_ratio_last_{qn}"] = m[f"aug_err_ratio_s{steps}_{qn}"]
    m["ntk_err_max"] = max(m["ntk_err_max_test"], m["ntk_err_max_noise"])
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - matplotlib is a core dependency
        return m
    fig = Figure(figsize=(9, 3.6))
    axes = fig.subplots(1, 2)
    xs = [max(c, 0.5) for c in ckpt]
    for ax, qn in zip(axes, ("test", "noise")):
        for key, label, style in (
            ("aug_ensemble_osp", f"ensemble mean (M={members}, aug)", "o-"),
            ("aug_member_osp", "members (aug)", "s--"),
            ("noaug_ensemble_osp", f"ensemble mean (M={members}, no aug)", "^:"),
        ):
            ax.plot(xs, [m[f"{key}_s{c}_{qn}"] for c in ckpt], style, label=label)
        ax.plot(xs, [m[f"ntk_osp_s{c}_{qn}"] for c in ckpt], "k-", lw=2, label="NTK mean (exact)")
        ax.set_xscale("log")
        ax.set_xlabel("training step (step 0 drawn at 0.5)")
        ax.set_ylabel("OSP (1..4)")
        ax.set_title(f"{qn}, seed {seed}")
    axes[0].legend(fontsize=7)
    save_figure(fig, "training_time")
    return m


def run_c4_ensembles(scale: Scale, seed: int) -> dict[str, float]:
    """The experiment ``ensemble_equivariance/c4-ensembles``, judged by the claims emergence and training-time:
    the augmented and un-augmented ensembles trained once, the metrics of :func:`run_emergence` and of
    :func:`run_training_time` measured on them (their names do not clash; ``members`` and ``steps`` are the
    same in both).

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
    """
    trained = _train_emergence(scale, seed)
    out = _emergence_metrics(*trained)
    for k, v in _training_time_metrics(*trained, seed).items():
        if k in out and out[k] != v:  # pragma: no cover - a guard against a future clash of names
            raise AssertionError(f"metric {k} differs between the emergence and training-time measurements")
        out[k] = v
    return out


# ----------------------------------------------------------------------------------------- width
def run_width(scale: Scale, seed: int) -> dict[str, float]:
    """Finite-width ensembles trained with full C4 augmentation against the closed-form NTK mean at the same
    training time, for growing width: the squared distance of the ensemble mean to the NTK mean with its
    Monte-Carlo part removed (``|mean_M - f_NTK|^2 - s^2 / M``, s^2 the unbiased member variance: an unbiased
    estimate of the distance of the infinite ensemble at that width), against a single member's distance.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
    """
    n, nq, members, steps = scale.pick((20, 200, 32, 60), (40, 200, 32, 100), (300, 450, 64, 300))
    widths = scale.pick((16, 64, 256), (16, 64, 256), (32, 128, 512, 2048))
    d = load_images("digits", n, nq, seed)
    grp = Group("c4")
    xa, ya = augment(d["x_train"], d["y_train"], grp)
    ntk = _ntk_mean(xa, ya)
    m: dict[str, float] = {"members": float(members), "steps": float(steps), "n_train_aug": float(len(xa))}
    ref = {qn: torch.from_numpy(ntk.predict(d[_Q[qn]].double(), float(steps))).float() for qn in _Q}
    for w in widths:
        ens = train_ensemble(_mlp_factory(64, w, 10), xa, _onehot(ya), members=members, steps=steps, seed=seed)
        m[f"test_acc_w{w}"] = float((ens(d["x_test"]).argmax(1) == d["y_test"]).float().mean())
        for qn in _Q:
            mo = ens.member_outputs(d[_Q[qn]])  # (M, N, C)
            fn = ref[qn]
            raw = float(((mo.mean(0) - fn) ** 2).sum(-1).mean())
            mc = float(mo.var(0, unbiased=True).sum(-1).mean()) / members
            m[f"ens_ntk_raw_w{w}_{qn}"] = raw
            m[f"ens_ntk_mc_w{w}_{qn}"] = mc
            m[f"ens_ntk_w{w}_{qn}"] = raw - mc
            m[f"member_ntk_w{w}_{qn}"] = float(((mo - fn) ** 2).sum(-1).mean())
            m[f"ens_ntk_agree_w{w}_{qn}"] = float((mo.mean(0).argmax(1) == fn.argmax(1)).float().mean())
            r = ensemble_metrics(ens, d[_Q[qn]], grp)
            for k, v in r.items():
                m[f"{k}_w{w}_{qn}"] = v
    lo, hi = widths[0], widths[-1]
    m["ntk_test_acc"] = float((ref["test"].argmax(1) == d["y_test"]).float().mean())
    for qn in _Q:
        m[f"ntk_sq_norm_{qn}"] = float((ref[qn] ** 2).sum(-1).mean())
        m[f"ens_ntk_narrow_{qn}"] = m[f"ens_ntk_w{lo}_{qn}"]
        m[f"ens_ntk_wide_{qn}"] = m[f"ens_ntk_w{hi}_{qn}"]
        m[f"member_ntk_narrow_{qn}"] = m[f"member_ntk_w{lo}_{qn}"]
        m[f"member_ntk_wide_{qn}"] = m[f"member_ntk_w{hi}_{qn}"]
    m["test_acc_wide"] = m[f"test_acc_w{hi}"]
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - matplotlib is a core dependency
        return m
    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.subplots()
    for qn, c in (("test", "C0"), ("noise", "C1")):
        ax.plot(widths, [max(m[f"ens_ntk_w{w}_{qn}"], 1e-5) for w in widths], "o-", c=c, label=f"ensemble mean, {qn}")
        ax.plot(widths, [m[f"member_ntk_w{w}_{qn}"] for w in widths], "s--", c=c, label=f"one member, {qn}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("width")
    ax.set_ylabel("squared distance to the NTK mean\n(ensemble debiased; <= 0 drawn at 1e-5)", fontsize=8)
    ax.set_title(f"finite width vs the NTK limit (M={members}, debiased), seed {seed}", fontsize=9)
    ax.legend(fontsize=7)
    save_figure(fig, "width")
    return m


# ----------------------------------------------------------------------------------------- D4
def run_d4(scale: Scale, seed: int) -> dict[str, float]:
    """Rotations and flips (D4, |G| = 8): the closed-form NTK mean trained on the D4 orbit-closed set against
    the same mean trained on the C4-closed set (rotations only), and finite ensembles trained on either set,
    with OSP counted over D4 (1..8) on test digits and noise.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
    """
    # smoke is quick: with 20 digits at width 32 (100 noise images) the D4-vs-C4 OSP gap on noise was 0.74,
    # 1.37 and 0.59 on seeds 0-2 (the judged 0.6 missed on seed 2), with 40 digits at width 64 (100 noise
    # images) 1.24, 0.60 and 2.06, against 1.37, 0.86 and 2.15 at quick (200 noise images)
    # Smoke is quick. The judged D4-vs-C4 OSP gap on noise (>= 0.6) is the fragile part at smaller sizes:
    # it was 0.74, 1.37 and 0.59 on seeds 0-2 with 20 digits at width 32 (100 noise images), 1.24, 0.60 and
    # 2.06 with 40 digits at width 64 (100 noise images), 0.44, 0.37 and 1.83 with 40 digits at width 32 (200
    # noise images), against 1.37, 0.86 and 2.15 at quick (40 digits, width 64, 200 noise images).
    quick = (60, 40, 200, 64, 64, 150)
    n_ntk, n, nq, width, members, steps = scale.pick(quick, quick, (300, 300, 450, 512, 64, 300))
    sizes = (1, 4, 16, 64)
    d4, c4 = Group("d4"), Group("c4")
    d = load_images("digits", max(n_ntk, n), nq, seed)
    m: dict[str, float] = {"members": float(members), "width": float(width)}
    queries = {"test": d["x_test"].double(), "noise": d["noise"].double()}
    xs, ys = d["x_train"][:n_ntk], d["y_train"][:n_ntk]
    means = {arm: _ntk_mean(*augment(xs, ys, g)) for arm, g in (("d4", d4), ("c4", c4))}
    for arm, model in means.items():
        for qn, q in queries.items():
            orbit = d4.orbit(q)
            for t in TIMES:
                outs = np.stack([model.predict(orbit[g], t) for g in range(d4.order)])
                tag = "inf" if t == math.inf else f"{t:g}"
                m[f"ntk_{arm}_err_t{tag}_{qn}"] = float(np.abs(outs - outs[0]).max())
    m["ntk_d4_err_max"] = max(v for k, v in m.items() if k.startswith("ntk_d4_err_"))
    m["ntk_c4_err_min"] = min(v for k, v in m.items() if k.startswith("ntk_c4_err_") and "_t0_" not in k)
    xs, ys = d["x_train"][:n], d["y_train"][:n]
    factory = _mlp_factory(64, width, 10)
    for arm, g in (("d4", d4), ("c4", c4)):
        xa, ya = augment(xs, ys, g)
        ens = train_ensemble(factory, xa, _onehot(ya), members=members, steps=steps, lr=1.0, seed=seed)
        m[f"{arm}_test_acc"] = float((ens(d["x_test"]).argmax(1) == d["y_test"]).float().mean())
        for qn in _Q:
            r = ensemble_metrics(ens, d[_Q[qn]], d4, sizes=sizes)
            for s in sizes:
                m[f"{arm}_osp_m{s}_{qn}"] = r[f"osp_m{s}"]
                m[f"{arm}_err_m{s}_{qn}"] = r[f"err_m{s}"]
            m[f"{arm}_err_slope_{qn}"] = _slope(sizes, [r[f"err_m{s}"] for s in sizes])
    for qn in _Q:
        m[f"d4_osp_gain_{qn}"] = m[f"d4_osp_m64_{qn}"] - m[f"d4_osp_m1_{qn}"]
        m[f"d4_vs_c4_osp_{qn}"] = m[f"d4_osp_m64_{qn}"] - m[f"c4_osp_m64_{qn}"]
    try:
        fig = osp_figure(
            {f"{arm} aug, {qn}": [m[f"{arm}_osp_m{s}_{qn}"] for s in sizes] for arm in ("d4", "c4") for qn in _Q},
            sizes,
            order=8,
            title=f"OSP over D4 (rotations and flips), seed {seed}",
        )
    except ImportError:  # pragma: no cover - matplotlib is a core dependency
        return m
    save_figure(fig, "d4")
    return m


# ----------------------------------------------------------------------------------------- vector outputs
def moment_target(x: torch.Tensor) -> torch.Tensor:
    """An equivariant plane-vector target: the first moment of the squared intensities about the centre,
    ``sum_p x_p^2 v_p`` (``v_p`` the pixel's (row, column) offset), divided by the number of pixels.

    Squaring keeps it equivariant (a pointwise map commutes with pixel permutations) and makes it nonlinear
    in ``x``: ``moment_target(g x) = Group.vector_rep(g) @ moment_target(x)`` for every element of D4.

    Parameters
    ----------
    x : torch.Tensor
        Square images ``(N, ..., H, H)``.

    Returns
    -------
    torch.Tensor
        ``(N, 2)``.
    """
    x = check_images(x)
    if not isinstance(x, torch.Tensor) or x.ndim < 3:
        raise InputError("x must be a torch.Tensor of images (N, ..., H, H)")
    h = x.shape[-1]
    off = torch.arange(h, dtype=x.dtype) - (h - 1) / 2.0
    w = (x**2).reshape(len(x), -1, h, h).sum(1)
    return torch.stack([(w * off[:, None]).sum((1, 2)), (w * off[None, :]).sum((1, 2))], 1) / (h * h)


def run_vector(scale: Scale, seed: int) -> dict[str, float]:
    """Equivariant outputs: regress the plane vector :func:`moment_target` of digits under D4, where outputs
    rotate and reflect with the inputs (rho_Y = :meth:`~.groups.Group.vector_rep`). The closed-form NTK mean
    on the orbit-closed set with transformed targets, against the same inputs with untransformed targets and
    against no augmentation; finite ensembles with and without augmentation, equivariance error vs M.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict of str to float
    """
    n_ntk, n, nq, width, members, steps = scale.pick(
        (40, 20, 100, 32, 64, 150), (60, 40, 200, 64, 64, 150), (300, 300, 450, 512, 64, 300)
    )
    sizes = (1, 4, 16, 64)
    grp = Group("d4")
    d = load_images("digits", max(n_ntk, n), nq, seed)
    yall = moment_target(d["x_train"])
    sd = float(yall.std())
    y = yall / sd
    y_test = moment_target(d["x_test"]) / sd
    m: dict[str, float] = {"members": float(members), "width": float(width)}
    xs = d["x_train"][:n_ntk]
    arms = {
        "aug": augment(xs, y[:n_ntk], grp, output="vector"),
        "inv": augment(xs, y[:n_ntk], grp, output="invariant"),  # inputs moved, targets not: the wrong rho_Y
        "noaug": (xs, y[:n_ntk]),
    }
    queries = {"test": d["x_test"].double(), "noise": d["noise"].double()}
    for arm, (xa, ya) in arms.items():
        model = _ntk_mean(xa, ya, classes=None)
        for qn, q in queries.items():
            orbit = grp.orbit(q)
            for t in TIMES:
                outs = torch.from_numpy(np.stack([model.predict(orbit[g], t) for g in range(grp.order)]))
                ref = torch.stack([grp.act_output(outs[0], g, "vector") for g in range(grp.order)])
                tag = "inf" if t == math.inf else f"{t:g}"
                m[f"ntk_{arm}_err_t{tag}_{qn}"] = float((outs - ref).abs().max())
        pred = torch.from_numpy(model.predict(queries["test"], math.inf)).float()
        m[f"ntk_{arm}_test_r2"] = float(1.0 - ((pred - y_test) ** 2).sum() / ((y_test - y_test.mean(0)) ** 2).sum())
    m["ntk_aug_err_max"] = max(v for k, v in m.items() if k.startswith("ntk_aug_err_"))
    for arm in ("inv", "noaug"):
        m[f"ntk_{arm}_err_min"] = min(v for k, v in m.items() if k.startswith(f"ntk_{arm}_err_") and "_t0_" not in k)
    factory = _mlp_factory(64, width, 2)
    xs, ys = d["x_train"][:n], y[:n]
    fin = {
        "aug": train_ensemble(factory, *augment(xs, ys, grp, output="vector"), members=members, steps=steps, seed=seed),
        "noaug": train_ensemble(factory, xs, ys, members=members, steps=steps, seed=seed),
    }
    for arm, ens in fin.items():
        pred = ens(d["x_test"])
        m[f"{arm}_test_r2"] = float(1.0 - ((pred - y_test) ** 2).sum() / ((y_test - y_test.mean(0)) ** 2).sum())
        for qn in _Q:
            r = ensemble_metrics(ens, d[_Q[qn]], grp, sizes=sizes, output="vector")
            for s in sizes:
                m[f"{arm}_err_m{s}_{qn}"] = r[f"err_m{s}"]
            m[f"{arm}_err_slope_{qn}"] = _slope(sizes, [r[f"err_m{s}"] for s in sizes])
    for qn in _Q:
        m[f"noaug_over_aug_err_{qn}"] = m[f"noaug_err_m64_{qn}"] / m[f"aug_err_m64_{qn}"]
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - matplotlib is a core dependency
        return m
    fig = Figure(figsize=(5.5, 3.8))
    ax = fig.subplots()
    for arm in fin:
        for qn in _Q:
            ax.plot(sizes, [m[f"{arm}_err_m{s}_{qn}"] for s in sizes], "o-", label=f"{arm}, {qn}")
    ref = m["aug_err_m1_test"]
    ax.plot(sizes, [ref / math.sqrt(s) for s in sizes], "k--", lw=1, label="1/sqrt(M)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("ensemble size M")
    ax.set_ylabel("equivariance error |f(gx) - R_g f(x)|")
    ax.set_title(f"vector outputs under D4, seed {seed}", fontsize=9)
    ax.legend(fontsize=7)
    save_figure(fig, "vector")
    return m


# ----------------------------------------------------------------------------------------- the verb
def osp_curve(
    data: str = "fashion-mnist",
    *,
    members: int = 16,
    width: int = 64,
    steps: int = 150,
    n_train: int = 300,
    n_test: int = 300,
    seed: int = 0,
    group: str = "c4",
) -> dict:
    """OSP of members and sub-ensembles of size 1, 2, 4, ..., M on test images and on noise.

    Parameters
    ----------
    data : {"digits", "fashion-mnist"}, default "fashion-mnist"
    members : int, default 16
    width : int, default 64
    steps : int, default 150
    n_train, n_test : int, default 300
    seed : int, default 0
    group : {"c4", "d4"}, default "c4"
        The group of the augmentation and of the OSP count (1..4 or 1..8).

    Returns
    -------
    dict
        ``sizes`` (list of int), ``test`` and ``noise`` (OSP per size), ``acc`` (ensemble test accuracy),
        ``member_acc``, ``order`` (|G|).
    """
    members = check_int(members, "members", min_val=1)
    width = check_int(width, "width", min_val=1)
    steps = check_int(steps, "steps", min_val=0)
    d = load_images(data, n_train, n_test, seed)
    grp = Group(check_choice(group, "group", ("c4", "d4")))
    side = d["x_train"].shape[-1]
    xa, ya = augment(d["x_train"], d["y_train"], grp)
    ens = train_ensemble(_mlp_factory(side * side, width, 10), xa, _onehot(ya), members=members, steps=steps, seed=seed)
    sizes = [2**k for k in range(int(math.log2(members)) + 1)]
    out: dict = {"sizes": sizes, "order": grp.order}
    for qn in ("test", "noise"):
        r = ensemble_metrics(ens, d[_Q[qn]], grp, sizes=sizes)
        out[qn] = [r[f"osp_m{s}"] for s in sizes]
    out["acc"] = float((ens(d["x_test"]).argmax(1) == d["y_test"]).float().mean())
    out["member_acc"] = float((ens.member_outputs(d["x_test"]).argmax(-1) == d["y_test"]).float().mean())
    return out
