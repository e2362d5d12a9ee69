"""The peers KISA is compared with, on the same frozen frame embeddings and skill-text embeddings.

- Frame-wise text similarity (the paper's LIV-L): each frame's embedding is mapped into the text space and
  scored against the skill library, frame by frame, then decoded like KISA. LIV's vision and text towers
  share a space; our stand-in image encoder has no text tower, so the map is fitted once by ridge
  regression from frame embeddings to their skill's text embedding (:func:`fit_framewise`): a frame-wise
  vision-language similarity aligned to the domain, with no temporal context.
- Goal-image similarity (LIV-I): similarity of each frame to the demonstration's last (goal) frame;
  keyframes at its peaks, plus the goal.
- Kernel change-point detection (KTS, here with ``ruptures``' ``KernelCPD``), given the true number of
  segments: keyframes at the last frame of each detected segment.
- UVD's goal-distance rule: from the goal backwards, the earliest frame from which the embedding distance to
  the current subgoal keeps decreasing becomes the next subgoal.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import InputError
from ..extras import require
from ..validation import check_choice, check_float, check_int, check_tensor
from .decoding import decode_keyframes, detect_peaks
from .temporal import stack_labels, stack_videos


def _video(frames, name: str = "frames") -> np.ndarray:
    if isinstance(frames, torch.Tensor):
        return check_tensor(frames, name, ndim=2).detach().double().numpy()
    raise InputError(f"{name} must be a (T, D) torch.Tensor of frame embeddings, got {type(frames).__name__}")


def fit_framewise(frames, labels, skill_embeddings: torch.Tensor, ridge: float = 1.0, *, pad: bool = False):
    """Fit the linear map of the frame-wise baseline: ridge regression from frames to their skill's text.

    Parameters
    ----------
    frames : torch.Tensor or sequence of torch.Tensor
        ``(B, T, D)`` or B tensors ``(T_i, D)`` of frozen frame embeddings.
    labels : torch.Tensor or sequence
        Per-frame skill indices.
    skill_embeddings : torch.Tensor
        ``(K, d)`` skill-text embeddings.
    ridge : float, default 1.0
        L2 penalty (> 0).
    pad : bool, default False
        Allow videos of different lengths.

    Returns
    -------
    torch.Tensor
        ``(D + 1, d)`` float64 map (the last row is the bias).
    """
    ridge = check_float(ridge, "ridge", min_val=0.0, include_boundaries="neither")
    s = check_tensor(skill_embeddings, "skill_embeddings", ndim=2, allow_empty=True)
    if s.numel() == 0:
        raise InputError("skill_embeddings is empty: the skill library needs at least one skill")
    x, mask = stack_videos(frames, pad=pad)
    y = stack_labels(labels, mask, s.shape[0])
    valid = ~mask
    xs = torch.cat([x[valid].double(), torch.ones(int(valid.sum()), 1, dtype=torch.float64)], 1)
    ys = s.double()[y[valid]]
    eye = torch.eye(xs.shape[1], dtype=torch.float64)
    return torch.linalg.solve(xs.T @ xs + ridge * eye, xs.T @ ys)


def framewise_scores(frames: torch.Tensor, skill_embeddings: torch.Tensor, mapping: torch.Tensor) -> np.ndarray:
    """The frame-wise text-similarity score matrix ``S[t, k] = cos(W^T [x_t; 1], l_k)``.

    Parameters
    ----------
    frames : torch.Tensor
        ``(T, D)`` frame embeddings of one video.
    skill_embeddings : torch.Tensor
        ``(K, d)``.
    mapping : torch.Tensor
        ``(D + 1, d)`` from :func:`fit_framewise`.

    Returns
    -------
    numpy.ndarray
        ``(T, K)``.
    """
    x = _video(frames)
    s = check_tensor(skill_embeddings, "skill_embeddings", ndim=2).double()
    w = check_tensor(mapping, "mapping", ndim=2).double()
    if w.shape != (x.shape[1] + 1, s.shape[1]):
        raise InputError(f"mapping must have shape ({x.shape[1] + 1}, {s.shape[1]}), got {tuple(w.shape)}")
    u = torch.cat([torch.from_numpy(x), torch.ones(x.shape[0], 1, dtype=torch.float64)], 1) @ w
    return (F.normalize(u, dim=1) @ F.normalize(s, dim=1).T).numpy()


def framewise_keyframes(
    frames: torch.Tensor, skill_embeddings: torch.Tensor, mapping: torch.Tensor, goal_label: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Skills and keyframes of the frame-wise baseline, decoded by argmax changes as KISA's.

    Parameters
    ----------
    frames : torch.Tensor
        ``(T, D)``.
    skill_embeddings : torch.Tensor
        ``(K, d)``.
    mapping : torch.Tensor
        From :func:`fit_framewise`.
    goal_label : int, optional
        True skill at the last frame (the released goal rule).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Predicted skills and keyframes.
    """
    return decode_keyframes(framewise_scores(frames, skill_embeddings, mapping), goal_label=goal_label)


def goal_similarity_keyframes(frames: torch.Tensor, min_distance: int = 3) -> np.ndarray:
    """Keyframes from the similarity of each frame to the goal (last) frame (LIV-I analogue).

    Parameters
    ----------
    frames : torch.Tensor
        ``(T, D)``.
    min_distance : int, default 3
        Minimum distance between similarity peaks.

    Returns
    -------
    numpy.ndarray
        Increasing keyframes (the goal included).
    """
    x = _video(frames)
    xn = x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-12)
    sim = xn @ xn[-1]
    peaks = detect_peaks(sim, check_int(min_distance, "min_distance", min_val=1))
    return np.unique(np.append(peaks, x.shape[0] - 1)).astype(np.int64)


def changepoint_keyframes(
    frames: torch.Tensor, n_segments: int, kernel: str = "linear", min_size: int = 2
) -> np.ndarray:
    """Kernel change-point detection with ``ruptures`` given the number of segments (KTS analogue).

    Parameters
    ----------
    frames : torch.Tensor
        ``(T, D)``.
    n_segments : int
        Number of segments (the true number of skills, as the paper gives KTS).
    kernel : {"linear", "rbf", "cosine"}, default "linear"
        KTS uses a linear kernel on the features.
    min_size : int, default 2
        Minimum segment length.

    Returns
    -------
    numpy.ndarray
        The last frame of each segment (the last one is ``T - 1``).
    """
    require("ruptures", extra="video", what="the change-point baseline")
    import ruptures

    x = _video(frames)
    kernel = check_choice(kernel, "kernel", ("linear", "rbf", "cosine"))
    min_size = check_int(min_size, "min_size", min_val=1)
    n = check_int(n_segments, "n_segments", min_val=1, max_val=max(1, x.shape[0] // min_size))
    if n == 1:
        return np.array([x.shape[0] - 1], np.int64)
    bkps = ruptures.KernelCPD(kernel=kernel, min_size=min_size).fit(x).predict(n_bkps=n - 1)
    return np.asarray(bkps, np.int64) - 1


def uvd_keyframes(frames: torch.Tensor, min_interval: int = 3, tol: float = 0.0) -> np.ndarray:
    """UVD's goal-distance decomposition: subgoals where the distance to the current goal stops decreasing.

    Starting from the goal (the last frame), walk backwards while the embedding distance to the current
    goal keeps increasing (it decreases forward in time); the frame where that monotone run starts becomes
    the next subgoal, if at least ``min_interval`` frames before the current one; repeat from it.

    Parameters
    ----------
    frames : torch.Tensor
        ``(T, D)``.
    min_interval : int, default 3
        Minimum frames between subgoals.
    tol : float, default 0.0
        Slack on "keeps increasing" (relative to the distance scale).

    Returns
    -------
    numpy.ndarray
        Increasing subgoal frames (the goal included).
    """
    x = _video(frames)
    min_interval = check_int(min_interval, "min_interval", min_val=1)
    tol = check_float(tol, "tol", min_val=0.0)
    goal = x.shape[0] - 1
    keys = [goal]
    while goal > 0:
        d = np.linalg.norm(x[: goal + 1] - x[goal], axis=1)
        scale = d.max() + 1e-12
        j = goal
        while j > 0 and d[j - 1] >= d[j] - tol * scale:
            j -= 1
        if j == 0:
            break
        j = min(j, goal - min_interval)
        if j <= 0:
            break
        keys.append(j)
        goal = j
    return np.asarray(sorted(keys), np.int64)


__all__ = [
    "fit_framewise",
    "framewise_scores",
    "framewise_keyframes",
    "goal_similarity_keyframes",
    "changepoint_keyframes",
    "uvd_keyframes",
]
