"""The OSP curve of the ``ensemble-equivariance`` verb: OSP against ensemble size, and its figure."""

from __future__ import annotations

import math
from typing import Sequence

from ..validation import check_choice, check_int
from .ensemble import ensemble_metrics, train_ensemble
from .groups import Group, augment
from .harness import QUERIES, accuracy, mlp_factory, onehot
from .images import load_images

__all__ = ["osp_curve", "osp_figure"]


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
    ens = train_ensemble(mlp_factory(side * side, width, 10), xa, onehot(ya), members=members, steps=steps, seed=seed)
    sizes = [2**k for k in range(int(math.log2(members)) + 1)]
    out: dict = {"sizes": sizes, "order": grp.order}
    for qn in ("test", "noise"):
        r = ensemble_metrics(ens, d[QUERIES[qn]], grp, sizes=sizes)
        out[qn] = [r[f"osp_m{s}"] for s in sizes]
    out["acc"] = accuracy(ens, d)
    out["member_acc"] = float((ens.member_outputs(d["x_test"]).argmax(-1) == d["y_test"]).float().mean())
    return out


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
