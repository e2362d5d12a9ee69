"""KISA: the training of the temporal enhancement module (Kou et al., ICML 2024).

The temporal module is in :mod:`icml24.kisa.temporal`, its losses in :mod:`icml24.kisa.losses` (their names are
importable from here as before); this module holds the configuration, the trained model and the training loop.

Optimiser as released: AdamW (lr 1e-4, weight decay 1e-2), cosine annealing with warm restarts
(T_0 = 200,000 steps, eta_min = lr / 100), batches of 16 videos.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Sequence

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed
from .losses import (  # noqa: F401 - importable from here as before
    NEGATIVES,
    check_keyframes,
    check_skills,
    contrastive_loss,
    history_contrastive_loss,
    kisa_loss,
    monotonic_loss,
    monotonic_target,
    score_matrix,
    total_loss,
)
from .temporal import (  # noqa: F401 - importable from here as before
    CAUSAL,
    TemporalModule,
    position_embedding,
    stack_labels,
    stack_videos,
)


# --------------------------------------------------------------------------------------------- training
@dataclass(frozen=True)
class KisaConfig:
    """Hyperparameters of KISA; defaults mirror the official ``config.py`` unless said otherwise.

    Every field is checked when the configuration is made (a bad value raises InputError naming it); option
    names are stored in their canonical spelling (``"History"`` becomes ``"history"``) and numbers as Python
    ``int`` / ``float``.

    Parameters
    ----------
    d_model : int, optional
        Transformer width, even and divisible by ``nhead``; None uses the frame dimension (the official
        setting, 1024 with LIV).
    nhead : int, default 8
    num_layers : int, default 2
    dim_feedforward : int, default 2048
    causal : {"released", "strict", "none"}, default "released"
    temporal : bool, default True
        False: the "w/o temporal module" ablation.
    alpha : float, default 0.1
        Weight of the monotonic term (0: the "w/o monotonic" ablation).
    tau : float, default 1.0
    negatives : {"simple", "history"}, default "simple"
        The released training default is the simple loss; "history" adds the history-aware negatives.
    released_split : bool, default False
        Monotonic target normalised with the released ``np.split`` off-by-one.
    lr : float, default 1e-4
    weight_decay : float, default 1e-2
    t0 : int, default 200000
        Cosine warm-restart period in steps; ``eta_min = lr * 0.01``.
    batch_size : int, default 16
    steps : int, default 100000
        Optimiser steps (the official run: 400 epochs).
    seed : int, default 0
    """

    d_model: int | None = None
    nhead: int = 8
    num_layers: int = 2
    dim_feedforward: int = 2048
    causal: str = "released"
    temporal: bool = True
    alpha: float = 0.1
    tau: float = 1.0
    negatives: str = "simple"
    released_split: bool = False
    lr: float = 1e-4
    weight_decay: float = 1e-2
    t0: int = 200_000
    batch_size: int = 16
    steps: int = 100_000
    seed: int = 0

    def __post_init__(self) -> None:
        positive = dict(min_val=0.0, include_boundaries="neither")
        checked = {
            "d_model": check_int(self.d_model, "d_model", min_val=2, allow_none=True),
            "nhead": check_int(self.nhead, "nhead", min_val=1),
            "num_layers": check_int(self.num_layers, "num_layers", min_val=1),
            "dim_feedforward": check_int(self.dim_feedforward, "dim_feedforward", min_val=1),
            "causal": check_choice(self.causal, "causal", CAUSAL),
            "temporal": check_bool(self.temporal, "temporal"),
            "alpha": check_float(self.alpha, "alpha", min_val=0.0, max_val=1.0),
            "tau": check_float(self.tau, "tau", **positive),
            "negatives": check_choice(self.negatives, "negatives", NEGATIVES),
            "released_split": check_bool(self.released_split, "released_split"),
            "lr": check_float(self.lr, "lr", **positive),
            "weight_decay": check_float(self.weight_decay, "weight_decay", min_val=0.0),
            "t0": check_int(self.t0, "t0", min_val=1),
            "batch_size": check_int(self.batch_size, "batch_size", min_val=1),
            "steps": check_int(self.steps, "steps", min_val=0),
            "seed": check_seed(self.seed),
        }
        d, h = checked["d_model"], checked["nhead"]
        if d is not None and (d % h or d % 2):
            raise InputError(f"d_model must be even and divisible by nhead, got d_model={d}, nhead={h}")
        for name, value in checked.items():
            object.__setattr__(self, name, value)

    def validated(self) -> "KisaConfig":
        """Return ``self``: every field was checked when the configuration was made.

        Returns
        -------
        KisaConfig
            ``self``.
        """
        return self

    def replace(self, **changes) -> "KisaConfig":
        """A copy with some fields changed.

        Parameters
        ----------
        **changes
            Field values.

        Returns
        -------
        KisaConfig
            The new configuration (checked).
        """
        names = [f.name for f in fields(self)]
        unknown = sorted(set(changes) - set(names))
        if unknown:
            raise InputError(f"KisaConfig has no field {unknown[0]!r}", f"fields: {', '.join(names)}")
        return replace(self, **changes)


@dataclass
class KisaModel:
    """A trained KISA: the temporal module, the skill library's embeddings and the training record.

    Attributes
    ----------
    module : TemporalModule
        The trained temporal module (eval mode).
    skill_embeddings : torch.Tensor
        ``(K, d)`` frozen skill-text embeddings it was trained against.
    config : KisaConfig
        Its hyperparameters.
    losses : list of float
        Training loss per step.
    """

    module: TemporalModule
    skill_embeddings: torch.Tensor
    config: KisaConfig
    losses: list[float] = field(default_factory=list)

    @torch.no_grad()
    def scores(self, frames, *, pad: bool = False) -> list[torch.Tensor]:
        """Score matrices ``S[t, k] = cos(u_t, l_k)`` of videos.

        Parameters
        ----------
        frames : torch.Tensor or sequence of torch.Tensor
            ``(B, T, D)`` or B tensors ``(T_i, D)`` of frozen frame embeddings.
        pad : bool, default False
            Allow mixed lengths (padded with a mask).

        Returns
        -------
        list of torch.Tensor
            One ``(T_i, K)`` matrix per video.
        """
        x, mask = stack_videos(frames, pad=pad, dim=self.module.frame_dim)
        self.module.eval()
        out = []
        for i in range(0, x.shape[0], 64):
            s = score_matrix(self.module(x[i : i + 64], mask[i : i + 64]), self.skill_embeddings)
            out += [si[~mi] for si, mi in zip(s, mask[i : i + 64])]
        return out


def fit_kisa(
    frames,
    labels,
    keyframes,
    skill_embeddings: torch.Tensor,
    config: KisaConfig | None = None,
    *,
    pad: bool = False,
) -> KisaModel:
    """Train KISA's temporal module on demonstrations (frozen embeddings in, a trained model out).

    Parameters
    ----------
    frames : torch.Tensor or sequence of torch.Tensor
        ``(B, T, D)`` or B tensors ``(T_i, D)``: frozen per-frame embeddings of each demonstration. They are
        also the backbone used for the monotonic target.
    labels : torch.Tensor or sequence
        Per-frame skill indices into the library, one per frame.
    keyframes : sequence of sequences of int
        Each video's keyframes (last frame of each skill; the last is the video's last frame).
    skill_embeddings : torch.Tensor
        ``(K, d)`` frozen skill-text embeddings (e.g. :func:`encode_skills`), K >= 2.
    config : KisaConfig, optional
        Hyperparameters (defaults: the official ones).
    pad : bool, default False
        Allow videos of different lengths (padded, with a mask).

    Returns
    -------
    KisaModel
        The trained model; the inputs are not modified.
    """
    if not isinstance(config, (KisaConfig, type(None))):
        raise InputError(f"config must be a KisaConfig, got {type(config).__name__}")
    cfg = config or KisaConfig()
    s = check_skills(skill_embeddings).clone()
    if s.shape[0] < 2:
        raise InputError("skill_embeddings needs at least two skills")
    x, mask = stack_videos(frames, pad=pad)
    y = stack_labels(labels, mask, s.shape[0])
    if isinstance(keyframes, (str, bytes)) or not isinstance(keyframes, Sequence) or len(keyframes) != x.shape[0]:
        raise InputError(f"keyframes must give one keyframe list per video ({x.shape[0]})")
    targets = torch.zeros(x.shape[:2])
    for i, k in enumerate(keyframes):
        n = int((~mask[i]).sum())
        kk = check_keyframes(k, n, f"keyframes[{i}]")
        yi = y[i, :n].numpy()
        if (np.diff(yi) != 0).any() and not set(np.flatnonzero(np.diff(yi) != 0)) <= set(kk.tolist()):
            raise InputError(f"keyframes[{i}] miss a change of label in labels[{i}]")
        targets[i, :n] = monotonic_target(x[i, :n], kk, released_split=cfg.released_split)
    module = TemporalModule(
        x.shape[-1],
        s.shape[-1],
        d_model=cfg.d_model,
        nhead=cfg.nhead,
        num_layers=cfg.num_layers,
        dim_feedforward=cfg.dim_feedforward,
        causal=cfg.causal,
        temporal=cfg.temporal,
        seed=cfg.seed,
    )
    # foreach: the same arithmetic as the per-tensor loop (bit-identical weights), in fewer, larger kernels
    opt = torch.optim.AdamW(module.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, foreach=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=cfg.t0, eta_min=cfg.lr * 0.01)
    gen = torch.Generator().manual_seed(cfg.seed)
    losses: list[float] = []
    n = x.shape[0]
    order = torch.randperm(n, generator=gen)
    pos = 0
    y = y.clamp(0, s.shape[0] - 1)  # -1 at padding, left out of every loss by the mask
    module.train()
    for _ in range(cfg.steps):
        if pos >= n:
            order, pos = torch.randperm(n, generator=gen), 0
        idx = order[pos : pos + cfg.batch_size]
        pos += cfg.batch_size
        m = mask[idx]
        t = int((~m).sum(1).max())  # trim common padding
        m = m[:, :t]
        # the data were checked once above; the forward's and kisa_loss's checks at every step cost ~5 % of it
        u = module._encode(x[idx, :t], m)
        loss = total_loss(u, s, y[idx, :t], targets[idx, :t], ~m, cfg.alpha, cfg.tau, cfg.negatives, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        if not math.isfinite(losses[-1]):
            raise InputError("the training loss became non-finite", "lower lr")
    module.eval()
    return KisaModel(module, s, cfg, losses)


__all__ = [
    "CAUSAL",
    "NEGATIVES",
    "position_embedding",
    "TemporalModule",
    "stack_videos",
    "stack_labels",
    "score_matrix",
    "contrastive_loss",
    "history_contrastive_loss",
    "monotonic_target",
    "monotonic_loss",
    "kisa_loss",
    "KisaConfig",
    "KisaModel",
    "fit_kisa",
]
