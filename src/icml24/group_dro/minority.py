"""The worked example of the torch losses: Fashion-MNIST with a planted minority group (claim ``minority-group``).

A small MLP (:func:`minority_mlp`) is trained on :func:`icml24.data.grouped.fashion_mnist_inverted` by plain ERM,
with :class:`~icml24.group_dro.loss.GroupDROLoss` and with :class:`~icml24.group_dro.loss.VRGroupDROLoss`
(:func:`train_group_robust`, the same initialisation and batches for all three), and scored by its accuracy on
every group (:func:`group_accuracies`); :func:`run_minority` is the claim's run.
"""

from __future__ import annotations

import math
import time

from ..claims import Scale
from ..threads import single_thread
from ..validation import check_float, check_int

#: Training methods of :func:`train_group_robust`: plain ERM (mean loss), :class:`~icml24.group_dro.loss.
#: GroupDROLoss` and :class:`~icml24.group_dro.loss.VRGroupDROLoss`.
ROBUST_METHODS = ("erm", "gdro", "vr")


def minority_mlp(seed: int, *, in_features: int = 784, hidden: int = 128, classes: int = 10):
    """The small MLP of the worked example (``Linear - ReLU - Linear``), initialised from ``seed`` alone.

    Weights and biases are drawn uniformly in ``+-1/sqrt(fan_in)`` (the scale of torch's default ``Linear``
    initialisation) from a private generator, so the same seed gives the same model whatever global state.

    Parameters
    ----------
    seed : int
    in_features, hidden, classes : int, default 784, 128, 10

    Returns
    -------
    torch.nn.Sequential
    """
    import torch
    from torch import nn

    from ..validation import check_generator

    g = check_generator(seed)
    net = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, classes))
    with torch.no_grad():
        for layer in (net[0], net[2]):
            b = layer.in_features**-0.5
            layer.weight.uniform_(-b, b, generator=g)
            layer.bias.uniform_(-b, b, generator=g)
    return net


def group_accuracies(model, x, y, groups, n_groups: int) -> list[float]:
    """Accuracy of ``model`` on every group (NaN for a group without examples).

    Parameters
    ----------
    model : torch.nn.Module
        Maps ``x`` to logits ``(N, classes)``.
    x, y, groups : torch.Tensor
        Inputs, labels ``(N,)`` and group ids ``(N,)``.
    n_groups : int

    Returns
    -------
    list of float
    """
    import torch

    with torch.no_grad():
        correct = (model(x).argmax(1) == y).double()
    return [float(correct[groups == k].mean()) if bool((groups == k).any()) else math.nan for k in range(n_groups)]


def train_group_robust(
    model,
    split,
    method: str,
    *,
    steps: int,
    batch_size: int = 128,
    lr: float = 1e-3,
    eta: float = 0.01,
    refresh_every: int | None = None,
    seed: int = 0,
) -> dict[str, object]:
    """Train ``model`` in place on a grouped split with Adam, by ERM or through the group DRO losses.

    Minibatches are drawn without replacement (reshuffled every epoch) from a generator seeded with ``seed``,
    so two methods given the same seed see the same batches (as long as neither stops early).

    Parameters
    ----------
    model : torch.nn.Module
        Any classifier: inputs ``split.x_train`` to logits; trained with ``F.cross_entropy``.
    split : icml24.data.grouped.GroupedSplit
        ``x_train``, ``y_train``, ``g_train`` and ``num_groups`` are used.
    method : {"erm", "gdro", "vr"}
        ``"erm"``: the mean loss; ``"gdro"``: :class:`~icml24.group_dro.loss.GroupDROLoss`; ``"vr"``:
        :class:`~icml24.group_dro.loss.VRGroupDROLoss` with a snapshot copy of the model refreshed every
        ``refresh_every`` steps on the whole training set.
    steps : int
        Optimiser steps (>= 1).
    batch_size : int, default 128
    lr : float, default 1e-3
        Adam's learning rate.
    eta : float, default 0.01
        The q-step of the group DRO losses (the reference code's default).
    refresh_every : int, optional
        Snapshot period of ``"vr"``; one epoch (``ceil(N / batch_size)`` steps) by default.
    seed : int, default 0
        Seed of the batch order.

    Returns
    -------
    dict
        ``"model"`` (the same object, trained), ``"loss"`` (the loss object, or None for ERM) and ``"q"``
        (its final group weights as a list, or None).
    """
    import copy

    import torch
    import torch.nn.functional as F

    from ..validation import check_choice, check_generator
    from .loss import GroupDROLoss, VRGroupDROLoss

    method = check_choice(method, "method", ROBUST_METHODS)
    steps = check_int(steps, "steps", min_val=1)
    batch_size = check_int(batch_size, "batch_size", min_val=1)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="neither")
    X, Y, G = split.x_train, split.y_train, split.g_train
    n, m = len(Y), split.num_groups
    batch_size = min(batch_size, n)
    gen = check_generator(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    robust = None
    if method == "gdro":
        robust = GroupDROLoss(m, eta=eta)
    elif method == "vr":
        robust = VRGroupDROLoss(m, eta=eta, refresh_every=refresh_every or math.ceil(n / batch_size))
        snapshot = copy.deepcopy(model).requires_grad_(False)
    perm, pos = torch.randperm(n, generator=gen), 0
    model.train()
    for _ in range(steps):
        if pos + batch_size > n:
            perm, pos = torch.randperm(n, generator=gen), 0
        idx = perm[pos : pos + batch_size]
        pos += batch_size
        x, y, g = X[idx], Y[idx], G[idx]
        losses = F.cross_entropy(model(x), y, reduction="none")
        if method == "erm":
            loss = losses.mean()
        elif method == "gdro":
            loss = robust(losses, g)
        else:
            if robust.needs_refresh:
                snapshot.load_state_dict(model.state_dict())
                with torch.no_grad():
                    robust.refresh(F.cross_entropy(snapshot(X), Y, reduction="none"), G)
            with torch.no_grad():
                snap_losses = F.cross_entropy(snapshot(x), y, reduction="none")
            loss = robust(losses, g, snap_losses)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    return {"model": model, "loss": robust, "q": None if robust is None else robust.q.tolist()}


def run_minority(scale: Scale, seed: int) -> dict[str, float]:
    """Claim ``minority-group``: worst-group and average test accuracy of a small MLP on Fashion-MNIST with a
    planted minority group, trained by ERM, with :class:`~icml24.group_dro.loss.GroupDROLoss` and with
    :class:`~icml24.group_dro.loss.VRGroupDROLoss`: same initialisation, same batches, same number of steps.

    The minority: 5 % of every class's images inverted (``1 - x``), in the training and the test set
    (:func:`icml24.data.grouped.fashion_mnist_inverted`); two groups, as recorded and inverted. Model
    ``784-128-10`` (ReLU), Adam (lr 1e-3), batch 128, q-step ``eta = 0.01`` (the reference code's default), the
    VR snapshot refreshed once an epoch. Accuracies are measured on the whole 10,000-image test set (500
    inverted images).

    Without regularisation or early stopping, ERM can catch up at paper scale: the robust losses push ``q``
    onto the few inverted training images, which the model then overfits (Sagawa et al.'s point that group DRO
    needs strong regularisation or early stopping to help the worst group).

    Parameters
    ----------
    scale : Scale
        SMOKE: 4,000 training images, 200 steps; QUICK: 20,000 images, 600 steps; PAPER: all 60,000, 2,000
        steps. Fashion-MNIST must be under the data root at every scale (:class:`~icml24.errors.DataUnavailable`
        otherwise).
    seed : int
        Seed of the training subset, of the planted group, of the model's initialisation and of the batch
        order (``seed + 1``).

    Returns
    -------
    dict of str to float
        For each method ``<k>`` in ``erm``, ``gdro``, ``vr``: ``<k>_worst_acc``, ``<k>_avg_acc``,
        ``<k>_acc_recorded``, ``<k>_acc_inverted`` and, for the robust ones, ``<k>_q_inverted`` (final weight
        of the minority); ``<k>_seconds``; ``n_train`` and ``steps``.
    """
    from ..data.grouped import fashion_mnist_inverted

    seed = check_int(seed, "seed", min_val=0)
    n_train, steps = scale.pick(4000, 20000, None), scale.pick(200, 600, 2000)
    out: dict[str, float] = {}
    with single_thread():
        data = fashion_mnist_inverted(fraction=0.05, n_train=n_train, seed=seed)
        for method in ROBUST_METHODS:
            t0 = time.perf_counter()
            res = train_group_robust(minority_mlp(seed), data, method, steps=steps, seed=seed + 1)
            accs = group_accuracies(res["model"], data.x_test, data.y_test, data.g_test, data.num_groups)
            out[f"{method}_seconds"] = time.perf_counter() - t0
            out[f"{method}_worst_acc"] = min(accs)
            out[f"{method}_acc_recorded"], out[f"{method}_acc_inverted"] = accs
            out[f"{method}_avg_acc"] = _accuracy(res["model"], data.x_test, data.y_test)
            if res["q"] is not None:
                out[f"{method}_q_inverted"] = res["q"][1]
    out["n_train"] = float(len(data.y_train))
    out["steps"] = float(steps)
    return out


def _accuracy(model, x, y) -> float:
    import torch

    with torch.no_grad():
        return float((model(x).argmax(1) == y).double().mean())


__all__ = ["ROBUST_METHODS", "minority_mlp", "group_accuracies", "train_group_robust", "run_minority"]
