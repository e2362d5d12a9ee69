"""Deep-Align's label-free training objective and loop (Navon et al., ICML 2024, Sec. 5.2; official
``experiments/mlp_image_classifier/trainer.py`` and ``deepalign/losses/mlp_losses.py``).

Each batch element is a pair of networks from the training zoo: ``a`` (view 0), ``b`` a random network
(view 1), and ``pa``, a randomly augmented copy of ``a`` with hidden neurons permuted by a known random ``pi``.

* Supervised loss on the known permutation: ``L_sup = mean_l CE(S_l(a, pa), pi_l)``, the scores of every
  column ``j`` of ``S_l`` (neuron ``j`` of ``pa``) as logits over the rows, target the row ``pi_l[j]`` it came
  from (official ``calc_gt_perm_loss``).
* Reconstruction loss on ``(a, b)`` through the soft alignment ``Pi_l = Sinkhorn(S_l(a, b))`` (20 iterations,
  ``tau`` 1): ``L_lmc`` = cross-entropy on an image batch of ``alpha a + (1 - alpha) Pi(b)``, ``alpha ~ U(0, 1)``
  per pair, and ``L_l2 = sum_k MSE(W_k^a, Pi(b)_k) + MSE(b_k^a, Pi(b)_k)`` (official ``calc_recon_loss``).
* ``L = w_sup L_sup + w_rec (L_lmc + L_l2)``, AdamW (amsgrad), gradient norm clipped at 1.

Augmentation of ``pa`` (official ``MatchingModelsDataset`` defaults): Gaussian noise with 1e-2 times each
tensor's std, weight dropout 5e-2 (inverted-dropout scaling), positive per-neuron rescaling in ``[0.9, 1.1]``
(a ReLU symmetry), and zeroing of the entries whose magnitude is below a random quantile in ``[0, 0.1]``.

Model selection as in the official trainer: every ``eval_every`` steps the reconstruction loss of validation
pairs is computed with hard (Hungarian) permutations at ``alpha = 0.5``; the best state is kept. Deviation: the
official pairs each validation network with one random other and one image batch of 32 per evaluation; with our
10 validation networks that choice is too noisy to select by, so we use every pair of validation networks (at
most ``max_val_pairs``) and 512 images (``max(16 * image_batch_size, 512)``), fixed for the whole run.
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed
from .encoder import DeepAlignNet
from .evaluation import forward, lerp
from .permutations import invert, permute_hard, permute_soft, random_perms
from .sinkhorn import hungarian, sinkhorn
from .weights import WeightBatch
from .world import LR_MAX, TAU_MIN

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters of Deep-Align.

    Defaults are the official MLP trainer's (``lr 5e-4``, ``batch 32``, ``image batch 32``, ``AdamW amsgrad
    weight decay 5e-4``, ``clip 1.0``, ``--recon-loss both``, ``--supervised-loss-weight 1 --recon-loss-weight
    1``, ``--n-sink 20``, ``--loss ce``), except ``steps``: the official trains 100 epochs over thousands of
    networks; the claims give their own step count and lr.

    Parameters
    ----------
    steps : int, default 1000
        Optimiser steps.
    batch_size : int, default 32
        Pairs of networks per step.
    image_batch_size : int, default 32
        Images of the interpolation (LMC) loss per step.
    lr, weight_decay : float, default 5e-4
        AdamW's.
    amsgrad : bool, default True
    clip : float, default 1.0
        Gradient-norm clipping.
    sup_weight, rec_weight : float, default 1.0
        Weights of the supervised and the reconstruction losses.
    recon : {"both", "lmc", "l2"}, default "both"
        Which reconstruction losses.
    n_sink : int, default 20
        Sinkhorn iterations.
    tau : float, default 1.0
        Sinkhorn's entropy weight.
    noise_scale, drop_rate, pos_scale, quantile_dropout : float
        The augmentation of the permuted copies (official defaults 1e-2, 5e-2, 0.1, 0.1).
    eval_every : int, default 50
        Steps between validation evaluations.
    schedule : {"constant", "cosine"}, default "constant"
        Learning-rate schedule (official constant).
    max_val_pairs : int, default 64
        Most validation pairs evaluated.
    """

    steps: int = 1000
    batch_size: int = 32
    image_batch_size: int = 32
    lr: float = 5e-4
    weight_decay: float = 5e-4
    amsgrad: bool = True
    clip: float = 1.0
    sup_weight: float = 1.0
    rec_weight: float = 1.0
    recon: str = "both"
    n_sink: int = 20
    tau: float = 1.0
    noise_scale: float = 1e-2
    drop_rate: float = 5e-2
    pos_scale: float = 0.1
    quantile_dropout: float = 0.1
    eval_every: int = 50
    schedule: str = "constant"
    max_val_pairs: int = 64

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "image_batch_size", "n_sink", "eval_every", "max_val_pairs"):
            check_int(getattr(self, name), name, min_val=1)
        check_float(self.lr, "lr", min_val=0.0, max_val=LR_MAX, include_boundaries="right")
        check_float(self.tau, "tau", min_val=TAU_MIN)
        check_float(self.clip, "clip", min_val=0.0, include_boundaries="neither")
        for name in ("weight_decay", "sup_weight", "rec_weight", "noise_scale", "pos_scale"):
            check_float(getattr(self, name), name, min_val=0.0)
        if self.sup_weight == 0 and self.rec_weight == 0:
            raise InputError("sup_weight and rec_weight are both 0: nothing to train", "give one a positive weight")
        check_bool(self.amsgrad, "amsgrad")
        check_choice(self.schedule, "schedule", ("constant", "cosine"), normalise=False)
        check_choice(self.recon, "recon", ("l2", "lmc", "both"), normalise=False)
        for name in ("drop_rate", "quantile_dropout"):
            check_float(getattr(self, name), name, min_val=0.0, max_val=1.0, include_boundaries="left")


@dataclass
class History:
    """What training did.

    Parameters
    ----------
    config : dict
        The :class:`TrainConfig` as a dict.
    steps : list of dict
        One record per step: ``step``, ``loss``, ``sup``, ``lmc``, ``l2``.
    evals : list of dict
        One record per validation evaluation (see :func:`evaluate`) with its ``step``.
    best_step : int
        The step whose state was kept.
    seconds : float
        Training time.
    """

    config: dict
    steps: list[dict] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)
    best_step: int = 0
    seconds: float = 0.0


# -------------------------------------------------------------------------------------------- augmentation
def row_quantile(values: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """Per-row quantile with linear interpolation (``torch.quantile``'s default) at a per-row level ``q``.

    Parameters
    ----------
    values : torch.Tensor
        ``(B, n)``.
    q : torch.Tensor
        ``(B,)`` levels in ``[0, 1]``.

    Returns
    -------
    torch.Tensor
        ``(B,)``.
    """
    v = values.sort(dim=1).values
    pos = q * (v.shape[1] - 1)
    lo = pos.floor().long().clamp(0, v.shape[1] - 1)
    hi = pos.ceil().long().clamp(0, v.shape[1] - 1)
    vlo, vhi = v.gather(1, lo[:, None])[:, 0], v.gather(1, hi[:, None])[:, 0]
    return vlo + (pos - lo.float()) * (vhi - vlo)


def augment(
    wb: WeightBatch,
    generator: torch.Generator,
    *,
    noise_scale: float = 1e-2,
    drop_rate: float = 5e-2,
    pos_scale: float = 0.1,
    quantile_dropout: float = 0.1,
) -> WeightBatch:
    """Random augmentation of each network, in the official order.

    Noise, dropout, positive rescaling, quantile dropout (official ``MatchingModelsDataset`` defaults). The
    permutation is applied separately.

    Parameters
    ----------
    wb : WeightBatch
        The ``B`` networks to augment.
    generator : torch.Generator
        Source of all randomness.
    noise_scale : float, default 1e-2
        Gaussian noise added to each tensor, times that tensor's standard deviation (per network); 0 disables.
    drop_rate : float, default 5e-2
        Probability of zeroing each weight and bias (inverted-dropout scaling by ``1 / (1 - drop_rate)``);
        0 disables.
    pos_scale : float, default 0.1
        Each hidden neuron is rescaled by a factor uniform in ``[1 - pos_scale, 1 + pos_scale]`` (its incoming
        weights and bias multiplied, its outgoing weights divided: a ReLU symmetry); 0 disables.
    quantile_dropout : float, default 0.1
        Entries whose magnitude is below a random quantile, uniform in ``[0, quantile_dropout]``, of each
        network's parameters are zeroed; 0 disables.

    Returns
    -------
    WeightBatch
        The augmented networks, same architecture and batch size.
    """
    B = wb.size
    g = generator

    def noise(t: torch.Tensor) -> torch.Tensor:
        if noise_scale <= 0:
            return t
        std = torch.nan_to_num(t.flatten(1).std(dim=1)) + 1e-8
        return t + torch.randn(t.shape, generator=g) * (noise_scale * std).reshape(-1, *[1] * (t.dim() - 1))

    def dropout(t: torch.Tensor) -> torch.Tensor:
        if drop_rate <= 0:
            return t
        keep = (torch.rand(t.shape, generator=g) >= drop_rate).float()
        return t * keep / (1 - drop_rate)

    ws = [dropout(noise(w)) for w in wb.weights]
    bs = [dropout(noise(b)) for b in wb.biases]
    extra = (1,) * (ws[0].dim() - 3)  # the feature axis of a CNN's weights
    if pos_scale > 0:
        for k in range(len(ws) - 1):
            s = 1 + (torch.rand(B, ws[k].shape[2], generator=g) * 2 - 1) * pos_scale
            ws[k] = ws[k] * s.reshape(B, 1, -1, *extra)
            bs[k] = bs[k] * s
            ws[k + 1] = ws[k + 1] / s.reshape(B, -1, 1, *extra)
    if quantile_dropout > 0:
        q = torch.rand(B, generator=g) * quantile_dropout
        thr = row_quantile(WeightBatch(tuple(ws), tuple(bs)).flat().abs(), q)
        ws = [torch.where(w.abs() < thr.reshape(-1, 1, 1, *extra), torch.zeros_like(w), w) for w in ws]
        bs = [torch.where(b.abs() < thr.reshape(-1, 1), torch.zeros_like(b), b) for b in bs]
    return WeightBatch(tuple(ws), tuple(bs))


# --------------------------------------------------------------------------------------------------- losses
def supervised_loss(scores: list[torch.Tensor], pi: list[torch.Tensor]) -> torch.Tensor:
    """Supervised loss on the known permutation, ``mean_l CE(S_l, pi_l)``, with the rows of ``S_l`` as classes.

    ``pa = permute(a, pi)`` has neuron ``j`` equal to neuron ``pi[j]`` of ``a``, so column ``j`` of
    ``S_l(a, pa)`` should peak at row ``pi[j]`` (official ``calc_gt_perm_loss``).

    Parameters
    ----------
    scores : list of torch.Tensor
        ``scores[l]`` of shape ``(B, d_l, d_l)``: the scores ``S_l(a, pa)`` of hidden layer ``l``.
    pi : list of torch.Tensor
        ``pi[l]`` of shape ``(B, d_l)``: the index permutations that made ``pa`` from ``a``.

    Returns
    -------
    torch.Tensor
        Scalar: the cross-entropy averaged over layers.
    """
    return sum(F.cross_entropy(s, p) for s, p in zip(scores, pi)) / len(scores)


def reconstruction_loss(
    a: WeightBatch,
    b: WeightBatch,
    mats: list[torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    alpha: torch.Tensor,
    recon: str = "both",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Reconstruction losses ``(L_lmc, L_l2)`` of ``b`` aligned to ``a`` by permutation matrices ``mats``.

    ``L_lmc`` is the cross-entropy on ``(x, y)`` of ``alpha a + (1 - alpha) Pi(b)``, ``L_l2`` the sum over
    layers of the mean squared differences of the weights and biases of ``a`` and ``Pi(b)`` (official
    ``calc_recon_loss``).

    Parameters
    ----------
    a, b : WeightBatch
        ``B`` pairs of networks of one architecture.
    mats : list of torch.Tensor
        ``mats[l]`` of shape ``(B, d_l, d_l)``: soft (Sinkhorn) or hard (0/1) permutation matrices applied
        to ``b`` (see :func:`permute_soft`).
    x : torch.Tensor
        ``(N, d_0)`` images shared by all pairs.
    y : torch.Tensor
        ``(N,)`` labels.
    alpha : torch.Tensor
        ``(B,)`` interpolation weights, one per pair.
    recon : {"both", "lmc", "l2"}, default "both"
        Which losses to compute; the other is returned as zero.

    Returns
    -------
    tuple of torch.Tensor
        The scalars ``(L_lmc, L_l2)``.
    """
    pb = permute_soft(b, mats)
    zero = torch.zeros(())
    lmc = l2 = zero
    if recon in ("lmc", "both"):
        logits = forward(lerp(a, pb, alpha), x)  # (pairs, images, classes)
        lmc = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.repeat(len(alpha)))
    if recon in ("l2", "both"):
        l2 = sum(F.mse_loss(p, q) for p, q in zip(pb.weights + pb.biases, a.weights + a.biases))
    return lmc, l2


def permutation_accuracy(pred: list[torch.Tensor], truth: list[torch.Tensor]) -> float:
    """Fraction of hidden neurons (over layers and networks) whose predicted partner is the true one.

    Parameters
    ----------
    pred : list of torch.Tensor
        ``pred[l]`` of shape ``(B, d_l)``: predicted index permutations.
    truth : list of torch.Tensor
        The true index permutations, same shapes.

    Returns
    -------
    float
        In ``[0, 1]``.
    """
    hits = sum(float((p == t).sum()) for p, t in zip(pred, truth))
    return hits / sum(t.numel() for t in truth)


# ---------------------------------------------------------------------------------------------------- loop
def _embed_views(model: DeepAlignNet, views: list[WeightBatch]) -> list[list[torch.Tensor]]:
    """One encoder pass over several views stacked along the batch; split the embeddings back.

    Deviation: the official trainer calls the encoder once per view, so in training mode each view gets its own
    BatchNorm statistics; one pass (3x fewer kernel launches on CPU) shares them across the three views. In
    evaluation mode (running statistics) the two are identical."""
    emb = model.embed(WeightBatch.cat(views))
    sizes = [v.size for v in views]
    parts = [torch.split(e, sizes) for e in emb]
    return [[p[i] for p in parts] for i in range(len(views))]


@torch.no_grad()
def evaluate(
    model: DeepAlignNet,
    a: WeightBatch,
    b: WeightBatch,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainConfig,
    generator: torch.Generator,
) -> dict[str, float]:
    """Validation metrics of the official ``evaluate``.

    The reconstruction loss with Hungarian permutations (of the Sinkhorn output) at ``alpha = 0.5``, and the
    permutation accuracy on augmented, permuted copies of ``a``. The model is evaluated in evaluation mode and
    its training mode restored afterwards.

    Parameters
    ----------
    model : DeepAlignNet
        The alignment model.
    a, b : WeightBatch
        Validation pairs: ``b`` is aligned to ``a``.
    x : torch.Tensor
        ``(N, d_0)`` images of the interpolation loss.
    y : torch.Tensor
        ``(N,)`` labels.
    cfg : TrainConfig
        Sinkhorn settings, augmentation and which reconstruction losses.
    generator : torch.Generator
        Draws the permutations and augmentations of the copies of ``a``.

    Returns
    -------
    dict of str to float
        ``recon`` (``lmc + l2``), ``lmc``, ``l2``, ``sup`` (the supervised loss on the permuted copies) and
        ``perm_acc`` (the permutation accuracy).
    """
    was = model.training
    model.eval()
    try:
        pi = random_perms(a.hidden, a.size, generator)
        pa = permute_hard(
            augment(
                a,
                generator,
                noise_scale=cfg.noise_scale,
                drop_rate=cfg.drop_rate,
                pos_scale=cfg.pos_scale,
                quantile_dropout=cfg.quantile_dropout,
            ),
            pi,
        )
        ea, eb, epa = _embed_views(model, [a, b, pa])
        scores = model.scores_from(ea, eb)
        hard = [F.one_hot(hungarian(sinkhorn(s, cfg.n_sink, cfg.tau)), s.shape[-1]).float() for s in scores]
        lmc, l2 = reconstruction_loss(a, b, hard, x, y, torch.full((a.size,), 0.5), cfg.recon)
        pred = [hungarian(s) for s in model.scores_from(ea, epa)]
        acc = permutation_accuracy(pred, invert(pi))
        sup = float(supervised_loss(model.scores_from(ea, epa), pi))
    finally:
        model.train(was)
    return {"recon": float(lmc + l2), "lmc": float(lmc), "l2": float(l2), "sup": sup, "perm_acc": acc}


def fit(
    model: DeepAlignNet,
    train: WeightBatch,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainConfig,
    *,
    val: WeightBatch | None = None,
    x_val: torch.Tensor | None = None,
    y_val: torch.Tensor | None = None,
    seed: int = 0,
    callback: Callable[[int, DeepAlignNet], None] | None = None,
) -> History:
    """Train ``model`` on the networks ``train`` with images ``(x, y)`` for the LMC loss.

    When ``val`` is given, the state with the lowest validation reconstruction loss on ``val`` (with
    ``x_val, y_val`` or ``x, y``) is selected; otherwise the final state is kept. The model is left in
    evaluation mode.

    Parameters
    ----------
    model : DeepAlignNet
        The alignment model, trained in place.
    train : WeightBatch
        The training networks, at least two, of the architecture ``model`` aligns.
    x : torch.Tensor
        ``(N, d_0)`` training images of the interpolation loss.
    y : torch.Tensor
        ``(N,)`` labels.
    cfg : TrainConfig
        Training hyper-parameters.
    val : WeightBatch, optional
        Validation networks, at least two, for model selection (see :func:`evaluate`).
    x_val, y_val : torch.Tensor, optional
        Validation images and labels; ``x, y`` when not given.
    seed : int, default 0
        Seed of the batches, permutations, augmentations and validation pairs.
    callback : callable, optional
        ``callback(step, model)``, called every ``eval_every`` steps and at the last step (after the
        evaluation).

    Returns
    -------
    History
        Per-step losses, validation evaluations, the step kept and the training time.

    Raises
    ------
    InputError
        When ``train`` or ``val`` has other widths than the model, or fewer than two networks, or ``seed`` is
        not a non-negative integer.
    """
    if train.widths != model.widths:
        raise InputError(f"the training networks have widths {train.widths}, the model aligns {model.widths}")
    if (train.features if train.convolutional else None) != model.features:
        raise InputError(f"the training networks have kernel features {train.features}, unlike the model's")
    if train.size < 2:
        raise InputError("training needs at least two networks")
    seed = check_seed(seed)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, amsgrad=cfg.amsgrad, foreach=True
    )
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.steps) if cfg.schedule == "cosine" else None
    hist = History(config=asdict(cfg))
    N, B = train.size, min(cfg.batch_size, train.size)
    vg = torch.Generator().manual_seed(seed + 1)
    if val is not None:
        if val.widths != model.widths:
            raise InputError(f"the validation networks have widths {val.widths}, the model aligns {model.widths}")
        xv, yv = (x_val, y_val) if x_val is not None else (x, y)
        if val.size < 2:
            raise InputError("validation needs at least two networks")
        # fixed validation pairs: every pair of validation networks, at most max_val_pairs of them at random
        pairs = torch.combinations(torch.arange(val.size), 2)
        pairs = pairs[torch.randperm(len(pairs), generator=vg)[: cfg.max_val_pairs]]
        va, vb = val[pairs[:, 0]], val[pairs[:, 1]]
        vx_idx = torch.randperm(len(xv), generator=vg)[: max(16 * cfg.image_batch_size, 512)]
    best, best_state = float("inf"), copy.deepcopy(model.state_dict())
    order = torch.randperm(N, generator=g)
    cursor = 0
    t0 = time.perf_counter()
    model.train()
    for step in range(1, cfg.steps + 1):
        if cursor + B > N:
            order, cursor = torch.randperm(N, generator=g), 0
        ia = order[cursor : cursor + B]
        cursor += B
        ib = torch.randint(N, (B,), generator=g)
        a, b = train[ia], train[ib]
        pi = random_perms(a.hidden, B, g)
        pa = permute_hard(
            augment(
                a,
                g,
                noise_scale=cfg.noise_scale,
                drop_rate=cfg.drop_rate,
                pos_scale=cfg.pos_scale,
                quantile_dropout=cfg.quantile_dropout,
            ),
            pi,
        )
        img = torch.randint(len(x), (cfg.image_batch_size,), generator=g)
        alpha = torch.rand(B, generator=g)

        ea, eb, epa = _embed_views(model, [a, b, pa])
        sup = supervised_loss(model.scores_from(ea, epa), pi)
        soft = [sinkhorn(s, cfg.n_sink, cfg.tau) for s in model.scores_from(ea, eb)]
        lmc, l2 = reconstruction_loss(a, b, soft, x[img], y[img], alpha, cfg.recon)
        loss = cfg.sup_weight * sup + cfg.rec_weight * (lmc + l2)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip, foreach=True)
        opt.step()
        if sched is not None:
            sched.step()
        hist.steps.append(
            {
                "step": step,
                "loss": float(loss.detach()),
                "sup": float(sup.detach()),
                "lmc": float(lmc.detach()),
                "l2": float(l2.detach()),
            }
        )
        if val is not None and (step % cfg.eval_every == 0 or step == cfg.steps):
            ev = evaluate(model, va, vb, xv[vx_idx], yv[vx_idx], cfg, torch.Generator().manual_seed(seed + 2))
            ev["step"] = step
            hist.evals.append(ev)
            if ev["recon"] <= best:
                best, hist.best_step = ev["recon"], step
                best_state = copy.deepcopy(model.state_dict())
        if callback is not None and (step % cfg.eval_every == 0 or step == cfg.steps):
            callback(step, model)
            model.train()
    if val is not None:
        model.load_state_dict(best_state)
    else:
        hist.best_step = cfg.steps
    model.eval()
    hist.seconds = time.perf_counter() - t0
    return hist


__all__ = [
    "TrainConfig",
    "History",
    "augment",
    "row_quantile",
    "supervised_loss",
    "reconstruction_loss",
    "permutation_accuracy",
    "evaluate",
    "fit",
]
