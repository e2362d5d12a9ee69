"""KISA: the temporal enhancement module, its losses and its training loop (Kou et al., ICML 2024).

Only the temporal module is trained; the per-frame image embeddings and the skill-text embeddings come from
frozen encoders. The module follows the official ``Models/net/attention.py`` and ``model_videoliv.py``:
sinusoidal position embeddings (sines then cosines, ``Models/utils/position_embedding.py``) are added to the
frame embeddings, and a standard ``nn.Transformer`` is run with ``src = tgt =`` that sequence, a causal mask on
the decoder's self-attention and no memory mask, so the cross-attention still sees future frames (as
released; ``causal="strict"`` masks the encoder and the cross-attention too). The losses follow the
official ``utils.py``:

- coarse contrastive loss (``Calculate_Constrastive_Loss``), per frame an InfoNCE over the skill library
  with cosine similarity and temperature tau, the positive removed from the denominator:
  ``-log exp(s_y / tau) / sum_{k != y} exp(s_k / tau)``;
- the extended, history-aware version (``Calculate_Contrastive_Loss_Extended``): negatives are all skill
  texts, the frame features of another video of the batch at the same t (a disjoint history) and the
  time-reversed video with the true skill text, loss ``-log pos / (pos + negs)``;
- the fine-grained monotonic encouragement: ``MSE(cos(u_t, l_{y_t}), g_t)`` with ``g_t`` the frozen
  backbone's similarity between frame t and the keyframe that ends t's segment, min-max normalised inside
  each segment (``gtscore_calvin.py``);
- ``L = (1 - alpha) L_con + alpha L_mono`` with alpha = 0.1 (``config.py``).

Optimiser as released: AdamW (lr 1e-4, weight decay 1e-2), cosine annealing with warm restarts
(T_0 = 200,000 steps, eta_min = lr / 100), batches of 16 videos.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed, check_tensor

CAUSAL = ("released", "strict", "none")
NEGATIVES = ("simple", "history")


def position_embedding(length: int, dim: int) -> torch.Tensor:
    """Sinusoidal position embeddings as released: ``[sin(t / 10000^(2i/d)), cos(t / 10000^(2i/d))]``.

    Sines fill the first half of the dimensions and cosines the second (the official layout, not interleaved).

    Parameters
    ----------
    length : int
        Sequence length T.
    dim : int
        Embedding dimension (even).

    Returns
    -------
    torch.Tensor
        ``(T, dim)`` float32.
    """
    length = check_int(length, "length", min_val=1)
    dim = check_int(dim, "dim", min_val=2)
    if dim % 2:
        raise InputError(f"dim must be even, got {dim}")
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    div = torch.pow(10000.0, torch.arange(0, dim, 2, dtype=torch.float32) / dim).view(1, -1)
    return torch.cat([torch.sin(pos / div), torch.cos(pos / div)], dim=1)


class TemporalModule(nn.Module):
    """The temporal enhancement module: frame embeddings -> video-level frame embeddings ``u_t``.

    Parameters
    ----------
    frame_dim : int
        Dimension of the frozen per-frame embeddings.
    text_dim : int
        Dimension of the frozen skill-text embeddings (``u_t`` is compared with them by cosine).
    d_model : int, optional
        Transformer width. None (the official setting) uses ``frame_dim`` with no input projection; the
        official code also has ``frame_dim == text_dim`` (LIV, 1024) and so no output projection. Linear maps
        are added only where the dimensions differ.
    nhead : int, default 8
        Attention heads (official ``tfm_heads``).
    num_layers : int, default 2
        Encoder layers and decoder layers each (official ``tfm_layers``).
    dim_feedforward : int, default 2048
        Feed-forward width (``nn.Transformer``'s default, as released).
    dropout : float, default 0.0
        As released.
    causal : {"released", "strict", "none"}, default "released"
        ``"released"``: causal mask on the decoder's self-attention only; ``"strict"``: also on the
        encoder and the cross-attention (no future frame reaches ``u_t``); ``"none"``: no mask at all.
    temporal : bool, default True
        False replaces the transformer by the identity (the "w/o temporal module" ablation: a per-frame map
        made of the same projections).
    seed : int, default 0
        Seed of the initial weights.
    """

    def __init__(
        self,
        frame_dim: int,
        text_dim: int,
        d_model: int | None = None,
        nhead: int = 8,
        num_layers: int = 2,
        dim_feedforward: int = 2048,
        dropout: float = 0.0,
        causal: str = "released",
        temporal: bool = True,
        seed: int = 0,
    ):
        super().__init__()
        frame_dim = check_int(frame_dim, "frame_dim", min_val=1)
        text_dim = check_int(text_dim, "text_dim", min_val=1)
        d = frame_dim if d_model is None else check_int(d_model, "d_model", min_val=2)
        nhead = check_int(nhead, "nhead", min_val=1)
        if d % nhead or d % 2:
            raise InputError(f"d_model must be even and divisible by nhead, got d_model={d}, nhead={nhead}")
        self.causal = check_choice(causal, "causal", CAUSAL)
        self.temporal = check_bool(temporal, "temporal")
        check_float(dropout, "dropout", min_val=0.0, max_val=1.0, include_boundaries="left")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(check_seed(seed))
            self.inp = nn.Identity() if d == frame_dim else nn.Linear(frame_dim, d)
            self.transformer = nn.Transformer(
                d_model=d,
                nhead=nhead,
                num_encoder_layers=check_int(num_layers, "num_layers", min_val=1),
                num_decoder_layers=num_layers,
                dim_feedforward=check_int(dim_feedforward, "dim_feedforward", min_val=1),
                dropout=float(dropout),
                batch_first=True,
            )
            self.out = nn.Identity() if d == text_dim else nn.Linear(d, text_dim)
            if not self.temporal and d == frame_dim and d == text_dim:
                self.out = nn.Linear(d, text_dim)  # a trainable per-frame map, else nothing would be trained
        self.frame_dim, self.text_dim, self.d_model = frame_dim, text_dim, d

    def forward(self, frames: torch.Tensor, padding_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Video-level frame embeddings.

        Parameters
        ----------
        frames : torch.Tensor
            ``(B, T, frame_dim)`` frozen frame embeddings.
        padding_mask : torch.Tensor, optional
            ``(B, T)`` bool, True at padded frames.

        Returns
        -------
        torch.Tensor
            ``(B, T, text_dim)``.
        """
        frames = check_tensor(frames, "frames", ndim=3)
        if frames.shape[-1] != self.frame_dim:
            raise InputError(f"frames must have {self.frame_dim} features, got {frames.shape[-1]}")
        b, t, _ = frames.shape
        if padding_mask is not None:
            padding_mask = check_tensor(padding_mask, "padding_mask", shape=(b, t), dtype="bool")
        return self._encode(frames, padding_mask)

    def _encode(self, frames: torch.Tensor, padding_mask: torch.Tensor | None) -> torch.Tensor:
        # the forward pass on checked inputs (the training loop checks its data once, not at every step)
        t = frames.shape[1]
        x = self.inp(frames)
        if self.temporal:
            x = x + position_embedding(t, self.d_model).to(x.dtype).unsqueeze(0)
            square = nn.Transformer.generate_square_subsequent_mask(t, dtype=x.dtype)
            tgt_mask = None if self.causal == "none" else square
            other = square if self.causal == "strict" else None
            # The released code passes no memory padding mask (its videos are resampled to one length);
            # a padded frame is not a frame, so it is masked from the cross-attention here.
            x = self.transformer(
                x,
                x,
                src_mask=other,
                tgt_mask=tgt_mask,
                memory_mask=other,
                src_key_padding_mask=padding_mask,
                tgt_key_padding_mask=padding_mask,
                memory_key_padding_mask=padding_mask,
                src_is_causal=False,
                tgt_is_causal=False,
            )
        return self.out(x)


# ----------------------------------------------------------------------------------------------- inputs
def stack_videos(videos, name: str = "frames", *, pad: bool = False, dim: int | None = None):
    """A batch of frame embeddings and its padding mask from a tensor or a list of per-video tensors.

    Parameters
    ----------
    videos : torch.Tensor or sequence of torch.Tensor
        ``(B, T, D)``, or B tensors ``(T_i, D)``.
    name : str, default "frames"
        Argument name for messages.
    pad : bool, default False
        Allow videos of different lengths, padded at the end with a padding mask. The official code instead
        resamples every video to one length; without ``pad`` mixed lengths are refused.
    dim : int, optional
        Expected feature dimension.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        ``(B, T, D)`` float32 batch and ``(B, T)`` bool padding mask (True at padded frames).
    """
    if isinstance(videos, torch.Tensor):
        x = check_tensor(videos, name, ndim=3).float()
        mask = torch.zeros(x.shape[:2], dtype=torch.bool)
    else:
        if isinstance(videos, (str, bytes)) or not isinstance(videos, Sequence) or not len(videos):
            raise InputError(f"{name} must be a (B, T, D) tensor or a non-empty list of (T, D) tensors")
        vids = [check_tensor(v, f"{name}[{i}]", ndim=2).float() for i, v in enumerate(videos)]
        dims = {v.shape[1] for v in vids}
        if len(dims) > 1:
            raise InputError(f"{name} have different feature dimensions {sorted(dims)}")
        lengths = [v.shape[0] for v in vids]
        if len(set(lengths)) > 1 and not pad:
            raise InputError(
                f"{name} have mixed lengths ({min(lengths)} to {max(lengths)} frames) and no padding mask",
                "pass pad=True to pad them with a mask, or resample them to one length",
            )
        t = max(lengths)
        x = torch.zeros(len(vids), t, vids[0].shape[1])
        mask = torch.ones(len(vids), t, dtype=torch.bool)
        for i, v in enumerate(vids):
            x[i, : len(v)] = v
            mask[i, : len(v)] = False
    if dim is not None and x.shape[-1] != dim:
        raise InputError(f"{name} must have {dim} features, got {x.shape[-1]}")
    return x, mask


def stack_labels(labels, mask: torch.Tensor, n_skills: int, name: str = "labels") -> torch.Tensor:
    """Per-frame skill labels as a ``(B, T)`` long tensor aligned with a padded batch (-1 at padding).

    Parameters
    ----------
    labels : torch.Tensor or sequence
        ``(B, T)`` tensor or B per-video integer sequences, one label per frame.
    mask : torch.Tensor
        ``(B, T)`` padding mask of the frames.
    n_skills : int
        Size of the skill library; labels must lie in ``[0, n_skills)``.
    name : str, default "labels"
        Argument name for messages.

    Returns
    -------
    torch.Tensor
        ``(B, T)`` int64.
    """
    b, t = mask.shape
    if isinstance(labels, torch.Tensor) and labels.ndim == 2:
        rows = list(labels)
    elif isinstance(labels, (str, bytes)) or not isinstance(labels, Sequence):
        raise InputError(f"{name} must be a (B, T) tensor or a list of per-video label sequences")
    else:
        rows = list(labels)
    if len(rows) != b:
        raise InputError(f"{name} has {len(rows)} videos, frames have {b}")
    out = torch.full((b, t), -1, dtype=torch.long)
    for i, row in enumerate(rows):
        arr = np.asarray(row.detach().cpu() if isinstance(row, torch.Tensor) else row)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise InputError(f"{name}[{i}] must be a 1-D sequence of integer skill indices")
        n_valid = int((~mask[i]).sum())
        if len(arr) != n_valid:
            raise InputError(f"{name}[{i}] has {len(arr)} labels for {n_valid} frames", "give one label per frame")
        if len(arr) and (arr.min() < 0 or arr.max() >= n_skills):
            raise InputError(
                f"{name}[{i}] holds a label outside the skill library of {n_skills} skills",
                f"labels index the library: 0 to {n_skills - 1}",
            )
        out[i, : len(arr)] = torch.as_tensor(arr, dtype=torch.long)
    return out


def _skills(skill_embeddings, name: str = "skill_embeddings") -> torch.Tensor:
    s = check_tensor(skill_embeddings, name, ndim=2, allow_empty=True).float()
    if s.shape[0] == 0 or s.shape[1] == 0:
        raise InputError(f"{name} is empty: the skill library needs at least one skill")
    return s


# ----------------------------------------------------------------------------------------------- losses
def score_matrix(video_features: torch.Tensor, skill_embeddings: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of every frame with every skill: ``S[..., t, k] = cos(u_t, l_k)``.

    Parameters
    ----------
    video_features : torch.Tensor
        ``(..., T, d)`` video-level frame embeddings.
    skill_embeddings : torch.Tensor
        ``(K, d)`` skill-text embeddings.

    Returns
    -------
    torch.Tensor
        ``(..., T, K)``.
    """
    u = check_tensor(video_features, "video_features", ndim=(2, 3))
    s = _skills(skill_embeddings)
    if u.shape[-1] != s.shape[-1]:
        raise InputError(f"video_features have {u.shape[-1]} features, skill_embeddings {s.shape[-1]}")
    return _cosine(u, s)


def _valid(mask: torch.Tensor | None, shape) -> torch.Tensor:
    return torch.ones(shape, dtype=torch.bool) if mask is None else ~mask


def _per_video_mean(loss: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    # mean over each video's frames, then over videos (the official mean(mean(loss, t), b))
    v = valid.float()
    return ((loss * v).sum(1) / v.sum(1).clamp_min(1.0)).mean()


def _check_batch(u, skill_embeddings, labels, padding_mask):
    u = check_tensor(u, "video_features", ndim=3)
    s = _skills(skill_embeddings)
    if u.shape[-1] != s.shape[-1]:
        raise InputError(f"video_features have {u.shape[-1]} features, skill_embeddings {s.shape[-1]}")
    labels = check_tensor(labels, "labels", shape=u.shape[:2], dtype="integer")
    if padding_mask is not None:
        padding_mask = check_tensor(padding_mask, "padding_mask", shape=u.shape[:2], dtype="bool")
    valid = _valid(padding_mask, u.shape[:2])
    lab = labels[valid]
    if lab.numel() and (int(lab.min()) < 0 or int(lab.max()) >= s.shape[0]):
        raise InputError(f"labels must index the skill library (0 to {s.shape[0] - 1}) at every unpadded frame")
    return u, s, labels.clamp(0, s.shape[0] - 1), valid


def contrastive_loss(
    video_features: torch.Tensor,
    skill_embeddings: torch.Tensor,
    labels: torch.Tensor,
    padding_mask: torch.Tensor | None = None,
    tau: float = 1.0,
) -> torch.Tensor:
    """The coarse contrastive loss as released, the positive removed from the denominator.

    ``L_con = -mean_{b,t} log[exp(cos(u_t, l_y) / tau) / sum_{k != y} exp(cos(u_t, l_k) / tau)]``. It is not
    bounded below by 0 (the released form), and needs at least two skills.

    Parameters
    ----------
    video_features : torch.Tensor
        ``(B, T, d)`` output of the temporal module.
    skill_embeddings : torch.Tensor
        ``(K, d)`` frozen skill-text embeddings, K >= 2.
    labels : torch.Tensor
        ``(B, T)`` integer skill index of each frame.
    padding_mask : torch.Tensor, optional
        ``(B, T)`` bool, True at padded frames (left out of the mean).
    tau : float, default 1.0
        Temperature (official 1).

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    tau = check_float(tau, "tau", min_val=0.0, include_boundaries="neither")
    u, s, labels, valid = _check_batch(video_features, skill_embeddings, labels, padding_mask)
    if s.shape[0] < 2:
        raise InputError("skill_embeddings needs at least two skills: the positive is removed from the denominator")
    return _contrastive(u, s, labels, valid, tau)


def _cosine(u: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    return F.normalize(u, dim=-1) @ F.normalize(s, dim=-1).T


def _contrastive(u, s, labels, valid, tau: float) -> torch.Tensor:
    logits = _cosine(u, s) / tau
    pos = logits.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    neg = logits.masked_fill(F.one_hot(labels, s.shape[0]).bool(), float("-inf")).logsumexp(-1)
    return _per_video_mean(neg - pos, valid)


def history_contrastive_loss(
    video_features: torch.Tensor,
    skill_embeddings: torch.Tensor,
    labels: torch.Tensor,
    padding_mask: torch.Tensor | None = None,
    tau: float = 1.0,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The extended, history-aware contrastive loss (official ``Calculate_Contrastive_Loss_Extended``).

    ``-log pos / (pos + sum_k exp(cos(u_t, l_k)/tau) + exp(cos(u_t, u'_t)/tau) + exp(cos(rev(u)_t, l_y)/tau))``
    with ``u'`` the features of another video of the batch at the same t (a disjoint history; the released
    code draws a random permutation, which may pair a video with itself: here every video is paired with a
    different one, by a random cyclic shift) and ``rev(u)`` the time-reversed video (within its unpadded
    length). The skill sum includes the positive, as released. With one video the disjoint-history term is
    left out.

    Parameters
    ----------
    video_features : torch.Tensor
        ``(B, T, d)``.
    skill_embeddings : torch.Tensor
        ``(K, d)``.
    labels : torch.Tensor
        ``(B, T)`` integer skill indices.
    padding_mask : torch.Tensor, optional
        ``(B, T)`` bool, True at padded frames.
    tau : float, default 1.0
        Temperature.
    generator : torch.Generator, optional
        Draws the pairing of videos.

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    tau = check_float(tau, "tau", min_val=0.0, include_boundaries="neither")
    if generator is not None and not isinstance(generator, torch.Generator):
        raise InputError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    u, s, labels, valid = _check_batch(video_features, skill_embeddings, labels, padding_mask)
    return _history(u, s, labels, valid, tau, generator)


def _history(u, s, labels, valid, tau: float, generator) -> torch.Tensor:
    b, t, _ = u.shape
    un = F.normalize(u, dim=-1)
    logits = un @ F.normalize(s, dim=-1).T / tau
    pos = logits.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    negs = [logits.logsumexp(-1)]
    if b > 1:
        shift = int(torch.randint(1, b, (1,), generator=generator))
        other = torch.roll(un, shift, 0)
        other_valid = torch.roll(valid, shift, 0)
        sim = (un * other).sum(-1) / tau
        negs.append(sim.masked_fill(~other_valid, float("-inf")))
    lengths = valid.sum(1)
    idx = (lengths.view(-1, 1) - 1 - torch.arange(t).view(1, -1)).clamp_min(0)  # reversal within each video
    rev = un.gather(1, idx.unsqueeze(-1).expand_as(un))
    text_pos = F.normalize(s, dim=-1)[labels]
    negs.append((rev * text_pos).sum(-1) / tau)
    neg = torch.stack(negs, -1).logsumexp(-1)
    loss = torch.logaddexp(pos, neg) - pos
    return _per_video_mean(loss, valid)


def monotonic_target(
    frame_embeddings: torch.Tensor, keyframes, *, released_split: bool = False, eps: float = 1e-6
) -> torch.Tensor:
    """The fine-grained monotonic target g_t of one video (official ``gtscore_calvin.py``).

    ``r_t = cos(phi(x_t), phi(x_{k(t)}))`` with ``k(t)`` the keyframe that ends t's segment, computed with the
    frozen backbone, then min-max normalised inside each segment: ``(r - min) / (max - min + eps)``. The
    keyframe itself has the segment's largest similarity (1), so g rises to 1 at the end of each skill.

    Parameters
    ----------
    frame_embeddings : torch.Tensor
        ``(T, D)`` frozen frame embeddings of one video.
    keyframes : sequence of int
        Increasing last frames of the segments; the last must be ``T - 1``.
    released_split : bool, default False
        Reproduce the released normalisation exactly: it splits the rewards with ``np.split`` at the
        keyframe indices, which puts each keyframe at the *start* of the next segment's normalisation (and
        the last frame alone, so 0).
    eps : float, default 1e-6
        As released.

    Returns
    -------
    torch.Tensor
        ``(T,)`` in ``[0, 1]``.
    """
    x = check_tensor(frame_embeddings, "frame_embeddings", ndim=2).float()
    t = x.shape[0]
    k = _check_keyframes(keyframes, t, "keyframes")
    eps = check_float(eps, "eps", min_val=0.0)
    labels = torch.as_tensor(np.searchsorted(k, np.arange(t), side="left"))
    xn = F.normalize(x, dim=-1)
    reward = (xn * xn[torch.as_tensor(k)[labels]]).sum(-1)
    bounds = list(k) if released_split else [int(v) + 1 for v in k[:-1]]
    out = torch.empty(t)
    start = 0
    for end in [*bounds, t]:
        seg = reward[start:end]
        if len(seg):
            out[start:end] = (seg - seg.min()) / (seg.max() - seg.min() + eps)
        start = end
    return out


def _check_keyframes(keyframes, length: int, name: str) -> np.ndarray:
    k = np.asarray(keyframes.detach().cpu() if isinstance(keyframes, torch.Tensor) else keyframes)
    if k.ndim != 1 or k.size == 0 or k.dtype.kind not in "iu":
        raise InputError(f"{name} must be a non-empty 1-D sequence of integer frame indices")
    if (np.diff(k) <= 0).any() or k[0] < 0 or k[-1] != length - 1:
        raise InputError(f"{name} must increase strictly and end at the last frame ({length - 1}), got {k.tolist()}")
    return k.astype(np.int64)


def monotonic_loss(
    video_features: torch.Tensor,
    skill_embeddings: torch.Tensor,
    labels: torch.Tensor,
    target: torch.Tensor,
    padding_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """``L_mono = MSE(cos(u_t, l_{y_t}), g_t)`` over unpadded frames (official ``Calculate_gtscore_Loss``).

    Parameters
    ----------
    video_features : torch.Tensor
        ``(B, T, d)``.
    skill_embeddings : torch.Tensor
        ``(K, d)``.
    labels : torch.Tensor
        ``(B, T)`` integer skill indices.
    target : torch.Tensor
        ``(B, T)`` monotonic targets (:func:`monotonic_target`).
    padding_mask : torch.Tensor, optional
        ``(B, T)`` bool, True at padded frames.

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    u, s, labels, valid = _check_batch(video_features, skill_embeddings, labels, padding_mask)
    target = check_tensor(target, "target", shape=u.shape[:2])
    return _monotonic(u, s, labels, target, valid)


def _monotonic(u, s, labels, target, valid) -> torch.Tensor:
    sim = _cosine(u, s).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    return ((sim - target) ** 2)[valid].mean()


def kisa_loss(
    video_features: torch.Tensor,
    skill_embeddings: torch.Tensor,
    labels: torch.Tensor,
    target: torch.Tensor,
    padding_mask: torch.Tensor | None = None,
    *,
    alpha: float = 0.1,
    tau: float = 1.0,
    negatives: str = "simple",
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The total loss ``L = (1 - alpha) L_con + alpha L_mono`` (official ``train.py``, alpha = 0.1).

    Parameters
    ----------
    video_features : torch.Tensor
        ``(B, T, d)``.
    skill_embeddings : torch.Tensor
        ``(K, d)``.
    labels : torch.Tensor
        ``(B, T)`` integer skill indices.
    target : torch.Tensor
        ``(B, T)`` monotonic targets.
    padding_mask : torch.Tensor, optional
        ``(B, T)`` bool.
    alpha : float, default 0.1
        Weight of the monotonic term, in [0, 1].
    tau : float, default 1.0
        Contrastive temperature.
    negatives : {"simple", "history"}, default "simple"
        :func:`contrastive_loss` (the released training default) or :func:`history_contrastive_loss`.
    generator : torch.Generator, optional
        For the history negatives' pairing of videos.

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    alpha = check_float(alpha, "alpha", min_val=0.0, max_val=1.0)
    negatives = check_choice(negatives, "negatives", NEGATIVES)
    if negatives == "history":
        con = history_contrastive_loss(video_features, skill_embeddings, labels, padding_mask, tau, generator)
    else:
        con = contrastive_loss(video_features, skill_embeddings, labels, padding_mask, tau)
    if alpha == 0.0:
        return con
    return (1 - alpha) * con + alpha * monotonic_loss(video_features, skill_embeddings, labels, target, padding_mask)


def _training_loss(u, s, labels, target, valid, cfg: "KisaConfig", generator) -> torch.Tensor:
    # kisa_loss on inputs fit_kisa has checked once (labels clamped at padding, valid = ~padding_mask)
    if cfg.negatives == "history":
        con = _history(u, s, labels, valid, cfg.tau, generator)
    else:
        con = _contrastive(u, s, labels, valid, cfg.tau)
    if cfg.alpha == 0.0:
        return con
    return (1 - cfg.alpha) * con + cfg.alpha * _monotonic(u, s, labels, target, valid)


# --------------------------------------------------------------------------------------------- training
@dataclass(frozen=True)
class KisaConfig:
    """Hyperparameters of KISA; defaults mirror the official ``config.py`` unless said otherwise.

    Parameters
    ----------
    d_model : int, optional
        Transformer width; None uses the frame dimension (the official setting, 1024 with LIV).
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

    def validated(self) -> "KisaConfig":
        """Check every field.

        Returns
        -------
        KisaConfig
            ``self``.
        """
        if self.d_model is not None:
            check_int(self.d_model, "d_model", min_val=2)
        check_int(self.nhead, "nhead", min_val=1)
        check_int(self.num_layers, "num_layers", min_val=1)
        check_int(self.dim_feedforward, "dim_feedforward", min_val=1)
        check_choice(self.causal, "causal", CAUSAL)
        check_bool(self.temporal, "temporal")
        check_float(self.alpha, "alpha", min_val=0.0, max_val=1.0)
        check_float(self.tau, "tau", min_val=0.0, include_boundaries="neither")
        check_choice(self.negatives, "negatives", NEGATIVES)
        check_bool(self.released_split, "released_split")
        check_float(self.lr, "lr", min_val=0.0, include_boundaries="neither")
        check_float(self.weight_decay, "weight_decay", min_val=0.0)
        check_int(self.t0, "t0", min_val=1)
        check_int(self.batch_size, "batch_size", min_val=1)
        check_int(self.steps, "steps", min_val=0)
        check_seed(self.seed)
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
            The new configuration (validated).
        """
        return replace(self, **changes).validated()


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
    cfg = (config or KisaConfig()).validated() if isinstance(config, (KisaConfig, type(None))) else None
    if cfg is None:
        raise InputError(f"config must be a KisaConfig, got {type(config).__name__}")
    s = _skills(skill_embeddings).clone()
    if s.shape[0] < 2:
        raise InputError("skill_embeddings needs at least two skills")
    x, mask = stack_videos(frames, pad=pad)
    y = stack_labels(labels, mask, s.shape[0])
    if isinstance(keyframes, (str, bytes)) or not isinstance(keyframes, Sequence) or len(keyframes) != x.shape[0]:
        raise InputError(f"keyframes must give one keyframe list per video ({x.shape[0]})")
    targets = torch.zeros(x.shape[:2])
    for i, k in enumerate(keyframes):
        n = int((~mask[i]).sum())
        kk = _check_keyframes(k, n, f"keyframes[{i}]")
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
        loss = _training_loss(u, s, y[idx, :t], targets[idx, :t], ~m, cfg, gen)
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
