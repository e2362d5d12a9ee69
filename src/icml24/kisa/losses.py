"""KISA's losses (Kou et al., ICML 2024), following the official ``utils.py``:

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

Padding: a padded frame is left out of every loss; a video with no unpadded frame is left out of the mean over
videos, and a batch with no unpadded frame at all gives a loss of 0 (with a zero gradient) from every function
here, :func:`kisa_loss` included.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_tensor, check_torch_generator

NEGATIVES = ("simple", "history")


def check_skills(skill_embeddings, name: str = "skill_embeddings") -> torch.Tensor:
    """A non-empty ``(K, d)`` skill library as float32, or a one-line InputError."""
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
        ``(..., T, K)`` float32 (every floating input is computed in float32).
    """
    u = check_tensor(video_features, "video_features", ndim=(2, 3)).float()
    s = check_skills(skill_embeddings)
    if u.shape[-1] != s.shape[-1]:
        raise InputError(f"video_features have {u.shape[-1]} features, skill_embeddings {s.shape[-1]}")
    return _cosine(u, s)


def _valid(mask: torch.Tensor | None, shape) -> torch.Tensor:
    return torch.ones(shape, dtype=torch.bool) if mask is None else ~mask


def _per_video_mean(loss: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    # mean over each video's frames, then over videos (the official mean(mean(loss, t), b)); a video with no
    # unpadded frame has no mean and is left out, and a batch without any unpadded frame gives 0
    v = valid.float()
    n = v.sum(1)
    per = (loss * v).sum(1) / n.clamp_min(1.0)
    return per.mean() if bool(n.all()) else per.sum() / n.gt(0).sum().clamp_min(1)


def _check_batch(u, skill_embeddings, labels, padding_mask):
    u = check_tensor(u, "video_features", ndim=3).float()
    s = check_skills(skill_embeddings)
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
        ``(B, T)`` bool, True at padded frames (left out of the mean; every frame padded: the loss is 0).
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
        ``(B, T)`` bool, True at padded frames (every frame padded: the loss is 0).
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
    generator = check_torch_generator(generator)
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
    k = check_keyframes(keyframes, t, "keyframes")
    released_split = check_bool(released_split, "released_split")
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


def check_keyframes(keyframes, length: int, name: str) -> np.ndarray:
    """Strictly increasing int64 keyframes of a video of ``length`` frames that end at its last frame."""
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
        ``(B, T)`` bool, True at padded frames (every frame padded: the loss is 0).

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
    err = ((sim - target) ** 2)[valid]
    return err.mean() if err.numel() else err.sum()  # no unpadded frame: 0, as the contrastive losses


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
        ``(B, T)`` bool, True at padded frames (every frame padded: the loss is 0, as each term's).
    alpha : float, default 0.1
        Weight of the monotonic term, in [0, 1].
    tau : float, default 1.0
        Contrastive temperature.
    negatives : {"simple", "history"}, default "simple"
        :func:`contrastive_loss` (the released training default; it needs K >= 2) or
        :func:`history_contrastive_loss`.
    generator : torch.Generator, optional
        For the history negatives' pairing of videos.

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    alpha = check_float(alpha, "alpha", min_val=0.0, max_val=1.0)
    tau = check_float(tau, "tau", min_val=0.0, include_boundaries="neither")
    negatives = check_choice(negatives, "negatives", NEGATIVES)
    generator = check_torch_generator(generator)
    u, s, labels, valid = _check_batch(video_features, skill_embeddings, labels, padding_mask)
    target = check_tensor(target, "target", shape=u.shape[:2])
    if negatives == "simple" and s.shape[0] < 2:
        raise InputError("skill_embeddings needs at least two skills for negatives='simple'")
    return total_loss(u, s, labels, target, valid, alpha, tau, negatives, generator)


def total_loss(u, s, labels, target, valid, alpha: float, tau: float, negatives: str, generator) -> torch.Tensor:
    """:func:`kisa_loss` on checked inputs (labels clamped at padding, ``valid = ~padding_mask``): the loss of one
    training step of :func:`~icml24.kisa.kisa.fit_kisa`, whose data are checked once before the loop."""
    if negatives == "history":
        con = _history(u, s, labels, valid, tau, generator)
    else:
        con = _contrastive(u, s, labels, valid, tau)
    if alpha == 0.0:
        return con
    return (1 - alpha) * con + alpha * _monotonic(u, s, labels, target, valid)


__all__ = [
    "NEGATIVES",
    "score_matrix",
    "contrastive_loss",
    "history_contrastive_loss",
    "monotonic_target",
    "monotonic_loss",
    "kisa_loss",
]
