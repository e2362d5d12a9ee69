"""DeSA's client losses on the anchors: knowledge distillation (KD) and the supervised-contrastive REG term.

Eq. (4)-(6) of the paper; the forms and defaults are those of the official ``iterative_desa.py``
(``calculate_kd_loss``, ``nn.KLDivLoss()``) and ``loss_fn.py`` (``Distance_loss("SupCon")``, ``SupConLoss``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..errors import InputError
from ..validation import check_choice, check_float, check_tensor

__all__ = ["kd_loss", "supcon_loss"]


def kd_loss(
    student_logits: torch.Tensor,
    teacher_logits: torch.Tensor,
    labels: torch.Tensor,
    *,
    temperature: float = 20.0,
    distil_weight: float = 0.9,
    reduction: str = "mean",
) -> torch.Tensor:
    """``(1 - w) CE(f(a), y) + w T^2 KL(softmax(z / T) || softmax(f(a) / T))`` (official ``calculate_kd_loss``).

    Parameters
    ----------
    student_logits : torch.Tensor
        ``(B, C)``, the client's logits on an anchor batch.
    teacher_logits : torch.Tensor
        ``(B, C)``, the mean of the other clients' logits on the same anchors (raw logits averaged).
    labels : torch.Tensor
        ``(B,)`` anchor labels.
    temperature : float, default 20.0
        ``T`` (official ``temp=20.``).
    distil_weight : float, default 0.9
        ``w`` (official ``distil_weight=0.9``).
    reduction : {"mean", "batchmean"}, default "mean"
        ``"mean"`` is the official ``nn.KLDivLoss()`` default, an element-wise mean that divides the KL by
        ``B * C`` instead of ``B``: kept for fidelity; ``"batchmean"`` is the KL per sample.

    Returns
    -------
    torch.Tensor
        A scalar.
    """
    s = check_tensor(student_logits, "student_logits", ndim=2)
    t = check_tensor(teacher_logits, "teacher_logits", ndim=2)
    y = check_tensor(labels, "labels", ndim=1, dtype="integer")
    if t.shape != s.shape:
        raise InputError(f"teacher_logits has shape {tuple(t.shape)}, student_logits {tuple(s.shape)}")
    if len(y) != len(s):
        raise InputError(f"labels has {len(y)} entries for {len(s)} logits")
    if int(y.min()) < 0 or int(y.max()) >= s.shape[1]:
        raise InputError(f"labels must lie in [0, {s.shape[1]})")
    temperature = check_float(temperature, "temperature", min_val=0.0, include_boundaries="neither")
    distil_weight = check_float(distil_weight, "distil_weight", min_val=0.0, max_val=1.0)
    reduction = check_choice(reduction, "reduction", ("mean", "batchmean"))
    soft_t = F.softmax(t.detach() / temperature, dim=1)
    log_s = F.log_softmax(s / temperature, dim=1)
    elem = torch.xlogy(soft_t, soft_t) - soft_t * log_s  # what nn.KLDivLoss sums, element by element
    kl = elem.mean() if reduction == "mean" else elem.sum() / len(s)
    return (1.0 - distil_weight) * F.cross_entropy(s, y) + distil_weight * temperature**2 * kl


def supcon_loss(
    features: torch.Tensor,
    anchor_features: torch.Tensor,
    labels: torch.Tensor,
    anchor_labels: torch.Tensor,
    *,
    temperature: float = 0.07,
    base_temperature: float = 0.07,
) -> torch.Tensor:
    """REG: supervised contrastive loss (Khosla et al. 2020) over local and anchor features, ``Distance_loss``.

    The two sets are concatenated and L2-normalised; every sample is an anchor of the contrast, positives are
    the other samples with its label (one view, ``contrast_mode='all'``); a sample with no positive counts 0,
    as the official ``mask_sum[mask_sum == 0] += 1``. The official call passes anchor features detached.

    Parameters
    ----------
    features : torch.Tensor
        ``(B, D)`` features ``embed(x)`` of a local batch.
    anchor_features : torch.Tensor
        ``(A, D)`` features of an anchor batch (detach them to follow the code).
    labels, anchor_labels : torch.Tensor
        ``(B,)`` and ``(A,)`` integer labels.
    temperature : float, default 0.07
    base_temperature : float, default 0.07

    Returns
    -------
    torch.Tensor
        A scalar.
    """
    f = check_tensor(features, "features", ndim=2)
    a = check_tensor(anchor_features, "anchor_features", ndim=2)
    y = check_tensor(labels, "labels", ndim=1, dtype="integer")
    ya = check_tensor(anchor_labels, "anchor_labels", ndim=1, dtype="integer")
    if a.shape[1] != f.shape[1]:
        raise InputError(f"anchor_features has {a.shape[1]} dimensions, features {f.shape[1]}")
    if len(y) != len(f) or len(ya) != len(a):
        raise InputError("labels and anchor_labels must have one entry per row of features and anchor_features")
    temperature = check_float(temperature, "temperature", min_val=0.0, include_boundaries="neither")
    base_temperature = check_float(base_temperature, "base_temperature", min_val=0.0, include_boundaries="neither")
    z = F.normalize(torch.cat([f, a]), dim=1)
    lab = torch.cat([y, ya]).view(-1, 1)
    n = len(z)
    mask = torch.eq(lab, lab.T).to(z.dtype)
    logits = z @ z.T / temperature
    logits = logits - logits.max(dim=1, keepdim=True).values.detach()
    not_self = 1.0 - torch.eye(n, dtype=z.dtype)
    mask = mask * not_self
    log_prob = logits - torch.log((torch.exp(logits) * not_self).sum(1, keepdim=True))
    denom = mask.sum(1)
    denom = torch.where(denom == 0, torch.ones_like(denom), denom)
    mean_log_prob_pos = (mask * log_prob).sum(1) / denom
    return (-(temperature / base_temperature) * mean_log_prob_pos).mean()
