"""Decoding a score matrix into skills and keyframes, and the official metrics (``test.py``, ``utils.py``).

Decoding: ``y_t = argmax_k S[t, k]``; keyframes are the frames t with ``y_t != y_{t+1}`` (the last frame of
a predicted segment), plus the goal (the last ground-truth keyframe) when the prediction there is correct,
as released. The peak variant (``test_peak.py``) takes the peaks of the confidence ``c_t = max_k S[t, k]``
(minimum peak distance 20) and keeps a peak where the argmax skill differs at the next peak.

Metrics: keyframe F1 / precision / recall within +-2 frames, MAE between predicted and true keyframe
indices (all pairs when the counts differ; the video length when nothing is predicted), false-alarm rate
``(FP + FN) / (T - #true)``, number error ``|#pred - #true| / #true``, skill IoU over the predicted
classes, top-k per-frame skill accuracy.
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_array, check_int


def _indices(value, name: str, *, allow_empty: bool = True, below: int | None = None) -> np.ndarray:
    """Non-negative int64 indices (1-D), each below ``below`` when given."""
    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().numpy()
    if isinstance(value, (list, tuple)) and len(value) == 0 or (isinstance(value, np.ndarray) and value.size == 0):
        if not allow_empty:
            raise InputError(f"{name} is empty", "give at least one frame index")
        return np.zeros(0, np.int64)
    out = check_array(value, name, ndim=1, dtype="integer").astype(np.int64)
    if out.min() < 0 or (below is not None and out.max() >= below):
        top = "" if below is None else f" and below {below}"
        raise InputError(f"{name} must hold indices from 0{top}, got {out.min()} to {out.max()}")
    return out


def _keyframes(value, name: str, *, allow_empty: bool = True, length: int | None = None) -> np.ndarray:
    """Strictly increasing keyframe indices, inside the video when its ``length`` is given."""
    out = _indices(value, name, allow_empty=allow_empty, below=length)
    if (np.diff(out) <= 0).any():
        raise InputError(f"{name} must be strictly increasing frame indices, got {out.tolist()[:8]}")
    return out


def _scores(scores, name: str = "scores") -> np.ndarray:
    if isinstance(scores, torch.Tensor):
        scores = scores.detach().cpu().numpy()
    return check_array(scores, name, ndim=2)


def argmax_keyframes(labels) -> np.ndarray:
    """Frames where the predicted skill changes: every t with ``y_t != y_{t+1}``.

    Parameters
    ----------
    labels : array-like
        ``(T,)`` integer per-frame skills.

    Returns
    -------
    numpy.ndarray
        Increasing int64 frame indices (the last frame of each predicted segment but the final one).
    """
    y = _indices(labels, "labels", allow_empty=False)
    return np.flatnonzero(y[:-1] != y[1:]).astype(np.int64)


def decode_keyframes(scores, goal: int | None = None, goal_label: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Skills and keyframes from a score matrix by argmax changes (official ``test.py``).

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``(T, K)`` score matrix.
    goal : int, optional
        The goal frame, the last true keyframe (default ``T - 1``).
    goal_label : int, optional
        The true skill at the goal. Given, the goal is appended only when the prediction there equals it
        (as released); None appends the goal whenever it is not already a keyframe (no labels needed).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``(T,)`` predicted skills and the increasing keyframes.
    """
    s = _scores(scores)
    t = s.shape[0]
    goal = t - 1 if goal is None else check_int(goal, "goal", min_val=0, max_val=t - 1)
    y = s.argmax(1).astype(np.int64)
    keys = argmax_keyframes(y)
    return y, _with_goal(keys, y, goal, goal_label, s.shape[1])


def _with_goal(keys, y, goal, goal_label, k):
    if goal_label is not None:
        goal_label = check_int(goal_label, "goal_label", min_val=0, max_val=k - 1)
    if goal not in keys and (goal_label is None or y[goal] == goal_label):
        keys = np.sort(np.append(keys, goal))
    return keys.astype(np.int64)


def detect_peaks(x, min_distance: int = 1) -> np.ndarray:
    """Local maxima of a 1-D signal (rising edge of flat peaks), at least ``min_distance`` apart.

    The rule of the ``detect_peaks`` helper in the official ``utils.py`` (M. Duarte's): the first and last
    samples are never peaks; among peaks closer than ``min_distance`` the highest is kept.

    Parameters
    ----------
    x : array-like
        ``(T,)`` finite signal.
    min_distance : int, default 1
        Minimum peak distance ``mpd``.

    Returns
    -------
    numpy.ndarray
        Increasing int64 indices.
    """
    x = check_array(x, "x", ndim=1, allow_empty=True)
    mpd = check_int(min_distance, "min_distance", min_val=1)
    if x.size < 3:
        return np.zeros(0, np.int64)
    dx = x[1:] - x[:-1]
    ind = np.flatnonzero((np.hstack((dx, 0)) <= 0) & (np.hstack((0, dx)) > 0))
    ind = ind[(ind > 0) & (ind < x.size - 1)]
    if ind.size and mpd > 1:
        ind = ind[np.argsort(x[ind], kind="stable")][::-1]
        drop = np.zeros(ind.size, bool)
        for i in range(ind.size):
            if not drop[i]:
                drop |= (ind >= ind[i] - mpd) & (ind <= ind[i] + mpd)
                drop[i] = False
        ind = np.sort(ind[~drop])
    return ind.astype(np.int64)


def decode_peaks(
    scores, min_distance: int = 20, goal: int | None = None, goal_label: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Skills and keyframes by the peak variant (official ``test_peak.py``, minimum peak distance 20).

    Peaks of the confidence ``c_t = max_k S[t, k]`` are kept where the argmax skill at the next peak
    differs (the last peak is kept); the goal is appended as in :func:`decode_keyframes`.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``(T, K)`` score matrix.
    min_distance : int, default 20
        Minimum distance between confidence peaks.
    goal : int, optional
        The goal frame (default ``T - 1``).
    goal_label : int, optional
        The true skill at the goal (see :func:`decode_keyframes`).

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``(T,)`` predicted skills and the increasing keyframes.
    """
    s = _scores(scores)
    t = s.shape[0]
    goal = t - 1 if goal is None else check_int(goal, "goal", min_val=0, max_val=t - 1)
    y = s.argmax(1).astype(np.int64)
    peaks = detect_peaks(s.max(1), min_distance)
    keep = [p for i, p in enumerate(peaks) if i == len(peaks) - 1 or y[p] != y[peaks[i + 1]]]
    return y, _with_goal(np.asarray(keep, np.int64), y, goal, goal_label, s.shape[1])


# ---------------------------------------------------------------------------------------------- metrics
def _hits(a: np.ndarray, b: np.ndarray, tol: int) -> np.ndarray:
    """For each entry of a, whether some entry of b lies within tol."""
    if a.size == 0 or b.size == 0:
        return np.zeros(a.size, bool)
    return (np.abs(a[:, None] - b[None, :]) <= tol).any(1)


def keyframe_f1(predicted, true, tolerance: int = 2) -> tuple[float, float, float]:
    """Keyframe F1, precision and recall within ``tolerance`` frames (official ``Calculate_F1_Score``).

    A prediction is a true positive when a true keyframe lies within ``tolerance`` of it (so duplicates near
    one true keyframe each count); a true keyframe with no prediction within ``tolerance`` is a false
    negative. Empty predictions give 0.

    Parameters
    ----------
    predicted : array-like
        Predicted keyframe indices (strictly increasing, non-negative).
    true : array-like
        True keyframe indices (non-empty, strictly increasing, non-negative).
    tolerance : int, default 2
        Frames of slack (official ``adjacent=2``).

    Returns
    -------
    (float, float, float)
        F1, precision, recall.
    """
    p = _keyframes(predicted, "predicted")
    g = _keyframes(true, "true", allow_empty=False)
    tol = check_int(tolerance, "tolerance", min_val=0)
    tp = int(_hits(p, g, tol).sum())
    fp = p.size - tp
    fn = int((~_hits(g, p, tol)).sum())
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return float(f1), float(prec), float(rec)


def keyframe_mae(predicted, true, length: int) -> float:
    """Mean absolute error between predicted and true keyframe indices (official ``Calculate_MAE``).

    Equal counts: element-wise. Different counts: the mean over all (prediction, truth) pairs. Nothing
    predicted: the video length (the released replacement of NaN).

    Parameters
    ----------
    predicted : array-like
        Predicted keyframe indices (strictly increasing, in ``[0, T)``).
    true : array-like
        True keyframe indices (non-empty, strictly increasing, in ``[0, T)``).
    length : int
        Video length T.

    Returns
    -------
    float
        MAE in frames.
    """
    length = check_int(length, "length", min_val=1)
    p = _keyframes(predicted, "predicted", length=length)
    g = _keyframes(true, "true", allow_empty=False, length=length)
    if p.size == 0:
        return float(length)
    if p.size == g.size:
        return float(np.abs(p - g).mean())
    return float(np.abs(p[:, None] - g[None, :]).mean())


def false_alarm_rate(predicted, true, length: int, tolerance: int = 2) -> float:
    """``(FP + FN) / (T - #true)`` (official ``Calculate_FAR``).

    Parameters
    ----------
    predicted : array-like
        Predicted keyframe indices (strictly increasing, in ``[0, T)``).
    true : array-like
        True keyframe indices (non-empty, strictly increasing, in ``[0, T)``).
    length : int
        Video length T (greater than the number of true keyframes).
    tolerance : int, default 2
        Frames of slack.

    Returns
    -------
    float
        The false-alarm rate.
    """
    g = _keyframes(true, "true", allow_empty=False)
    length = check_int(length, "length", min_val=g.size + 1)
    g = _keyframes(g, "true", length=length)
    p = _keyframes(predicted, "predicted", length=length)
    tol = check_int(tolerance, "tolerance", min_val=0)
    fp = p.size - int(_hits(p, g, tol).sum())
    fn = int((~_hits(g, p, tol)).sum())
    return float((fp + fn) / (length - g.size))


def number_error(predicted, true) -> float:
    """``|#pred - #true| / #true`` (official ``Calculate_NACC``).

    Parameters
    ----------
    predicted : array-like
        Predicted keyframe indices (strictly increasing, non-negative).
    true : array-like
        True keyframe indices (non-empty, strictly increasing, non-negative).

    Returns
    -------
    float
        The relative count error.
    """
    p = _keyframes(predicted, "predicted")
    g = _keyframes(true, "true", allow_empty=False)
    return float(abs(p.size - g.size) / g.size)


def skill_iou(predicted_labels, true_labels) -> float:
    """Mean per-class IoU of per-frame skills, over the classes predicted (official ``Calculate_Skill_IoU``).

    Parameters
    ----------
    predicted_labels : array-like
        ``(T,)`` predicted skills (non-negative indices).
    true_labels : array-like
        ``(T,)`` true skills (non-negative indices).

    Returns
    -------
    float
        Mean IoU in [0, 1].
    """
    p = _indices(predicted_labels, "predicted_labels", allow_empty=False)
    g = _indices(true_labels, "true_labels", allow_empty=False)
    if p.shape != g.shape:
        raise InputError(f"predicted_labels has {p.size} frames, true_labels {g.size}")
    ious = []
    for c in np.unique(p):
        inter = np.sum((p == c) & (g == c))
        union = np.sum((p == c) | (g == c))
        ious.append(inter / union if union else 0.0)
    return float(np.mean(ious))


def topk_accuracy(scores, true_labels, k: int = 1) -> float:
    """Share of frames whose true skill is among the k highest scores (official ``Calculate_Skill_TOPK``).

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``(T, K)`` score matrix.
    true_labels : array-like
        ``(T,)`` true skills, indices in ``[0, K)``.
    k : int, default 1
        How many top skills count.

    Returns
    -------
    float
        Accuracy in [0, 1].
    """
    s = _scores(scores)
    g = _indices(true_labels, "true_labels", allow_empty=False, below=s.shape[1])
    if g.size != s.shape[0]:
        raise InputError(f"true_labels has {g.size} frames, scores {s.shape[0]}")
    k = check_int(k, "k", min_val=1, max_val=s.shape[1])
    top = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return float((top == g[:, None]).any(1).mean())


def keyframe_metrics(predicted, true, length: int, tolerance: int = 2) -> dict[str, float]:
    """All keyframe metrics of one video.

    Parameters
    ----------
    predicted : array-like
        Predicted keyframe indices (strictly increasing, in ``[0, length)``).
    true : array-like
        True keyframe indices (non-empty, strictly increasing, in ``[0, length)``).
    length : int
        Video length.
    tolerance : int, default 2
        Frames of slack.

    Returns
    -------
    dict of str to float
        ``f1``, ``precision``, ``recall``, ``mae``, ``far``, ``number_error``.
    """
    f1, prec, rec = keyframe_f1(predicted, true, tolerance)
    return {
        "f1": f1,
        "precision": prec,
        "recall": rec,
        "mae": keyframe_mae(predicted, true, length),
        "far": false_alarm_rate(predicted, true, length, tolerance),
        "number_error": number_error(predicted, true),
    }


__all__ = [
    "argmax_keyframes",
    "decode_keyframes",
    "decode_peaks",
    "detect_peaks",
    "keyframe_f1",
    "keyframe_mae",
    "false_alarm_rate",
    "number_error",
    "skill_iou",
    "topk_accuracy",
    "keyframe_metrics",
]
