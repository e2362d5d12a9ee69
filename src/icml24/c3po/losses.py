"""The C3PO objective's terms: completion-only labels, the anchor loss on near- and out-of-scope answers (NLL plus
optional distillation), the combined C3PO loss, and the completion log-probabilities DPO compares.

The objective of one training row (official ``compute_loss``)::

    L = L_DPO(x_in, y+ > y0) + sigma_hard * L_anchor(x_near, y0) + sigma_soft * L_anchor(x_out, y0)

with TRL's sigmoid DPO (``beta = 0.1``, the reference being the base model with the LoRA adapter disabled) and
``L_anchor = (1 - kd_lambda) * NLL + kd_lambda * T^2 * KL(teacher || student)`` over the completion tokens
(``kd_lambda = 0`` in the paper's main configuration: pure NLL of the base model's answers, a sample estimate of
the forward KL to it). ``sigma_hard`` weighs near-scope (``lambda_near``) and ``sigma_soft`` out-of-scope
(``lambda_out``) data. Token log-probabilities follow :func:`icml24.nn.logprobs.token_logprobs`.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from ..errors import InputError
from ..nn.alignment import dpo_loss
from ..nn.logprobs import token_logprobs
from ..validation import check_bool, check_choice, check_float, check_tensor

SFT_REDUCTIONS = ("token_mean", "sum")
IGNORE = -100


def completion_only_labels(input_ids: Sequence[int], response_template_ids: Sequence[int]) -> list[int]:
    """Mask every token up to and including the last occurrence of the response template (official
    ``get_completion_only_labels``, TRL's completion-only collator): only the answer is learned.

    Parameters
    ----------
    input_ids : sequence of int
        One tokenised prompt-and-answer.
    response_template_ids : sequence of int
        The tokens that end the prompt (e.g. ``[/INST]``, or ``<sep>`` in the assistant world).

    Returns
    -------
    list of int
        Labels: ``-100`` through the template's end, the token ids after it; all ``-100`` when the template is
        absent (the official code then ignores the row).
    """

    def ints(x, name: str) -> list[int]:
        if isinstance(x, Tensor):
            x = x.tolist()
        if isinstance(x, (str, bytes)) or not isinstance(x, Sequence) or not x:
            raise InputError(f"{name} must be a non-empty sequence of token ids, got {x!r}")
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in x):
            raise InputError(f"{name} must hold non-negative int token ids")
        return list(x)

    ids = ints(input_ids, "input_ids")
    tmpl = ints(response_template_ids, "response_template_ids")
    end = None
    for i in range(len(ids) - len(tmpl) + 1):
        if ids[i : i + len(tmpl)] == tmpl:
            end = i + len(tmpl)
    if end is None:
        return [IGNORE] * len(ids)
    return [IGNORE] * end + ids[end:]


def _logits_and_labels(logits, labels) -> tuple[Tensor, Tensor]:
    """Checked ``(B, T, V)`` logits and ``(B, T)`` labels: token ids below ``V``, or ``-100``."""
    logits = check_tensor(logits, "logits", ndim=3)
    labels = check_tensor(labels, "labels", shape=tuple(logits.shape[:2]), dtype="integer")
    ok = (labels == IGNORE) | ((labels >= 0) & (labels < logits.size(-1)))
    if not bool(ok.all()):
        raise InputError(f"labels must be token ids in [0, {logits.size(-1)}) or {IGNORE}, got {int(labels[~ok][0])}")
    return logits, labels


def anchor_loss(
    logits: Tensor,
    labels: Tensor,
    *,
    teacher_logits: Tensor | None = None,
    kd_lambda: float = 0.0,
    kd_temperature: float = 5.0,
    use_avg_kl: bool = False,
    reduction: str = "token_mean",
) -> Tensor:
    """The anchor term of C3PO on near- or out-of-scope data (official ``compute_knowledge_distillation_loss``).

    ``(1 - kd_lambda) * NLL(labels) + kd_lambda * T^2 * KL(teacher_T || student_T)``, the KL summed over the
    completion positions of each sequence (averaged over them when ``use_avg_kl``) and averaged over the batch,
    at temperature ``T``. As in the official code, the KL mask is the attention mask times ``labels != -100``
    at the logits' own positions.

    Parameters
    ----------
    logits : torch.Tensor
        Student logits ``(B, T, V)``.
    labels : torch.Tensor
        ``(B, T)`` token ids with ``-100`` on ignored positions (prompt and padding).
    teacher_logits : torch.Tensor, optional
        Reference logits ``(B, T, V)``; required when ``kd_lambda > 0``.
    kd_lambda : float, default 0.0
        Weight of the distillation term in [0, 1] (official main configuration: 0; ``config_lcdpo_kl``: 1).
    kd_temperature : float, default 5.0
        Distillation temperature (official code default 5).
    use_avg_kl : bool, default False
        Average the KL over a sequence's positions instead of summing (official ``use_avg_kl``).
    reduction : {"token_mean", "sum"}, default "token_mean"
        NLL per sequence as the mean over its completion tokens (Hugging Face's loss with the official batch
        size 1) or their sum (official ``custom_sft_loss``), then averaged over the batch.

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    logits, labels = _logits_and_labels(logits, labels)
    if teacher_logits is not None:
        teacher_logits = check_tensor(teacher_logits, "teacher_logits", shape=tuple(logits.shape))
    kd_lambda = check_float(kd_lambda, "kd_lambda", min_val=0.0, max_val=1.0)
    kd_temperature = check_float(kd_temperature, "kd_temperature", min_val=0.0, include_boundaries="right")
    reduction = check_choice(reduction, "reduction", SFT_REDUCTIONS)
    use_avg_kl = check_bool(use_avg_kl, "use_avg_kl")
    mask = labels[:, 1:] != IGNORE
    lp = token_logprobs(logits, labels, ignore_index=IGNORE)  # (B, T - 1), 0 where not scored
    nll_tok = torch.where(mask, -lp, torch.zeros_like(lp))
    count = mask.sum(1)
    per_seq = nll_tok.sum(1)
    if reduction == "token_mean":
        per_seq = per_seq / count.clamp(min=1)
    nll = per_seq[count > 0].mean() if bool((count > 0).any()) else per_seq.sum() * 0.0
    if kd_lambda == 0.0:
        return nll
    if teacher_logits is None:
        raise InputError("teacher_logits is None but kd_lambda > 0", "pass the reference logits or kd_lambda=0")
    t = kd_temperature
    s_lp = torch.log_softmax(logits.float() / t, -1)
    t_lp = torch.log_softmax(teacher_logits.float() / t, -1)
    kl_tok = (t_lp.exp() * (t_lp - s_lp)).sum(-1) * (labels != IGNORE)
    kl = kl_tok.sum(-1)
    if use_avg_kl:
        kl = kl / (labels != IGNORE).sum(-1).clamp(min=1)
    return (1.0 - kd_lambda) * nll + kd_lambda * kl.mean() * t**2


def c3po_loss(
    policy_chosen_logp: Tensor,
    policy_rejected_logp: Tensor,
    ref_chosen_logp: Tensor,
    ref_rejected_logp: Tensor,
    near_loss: Tensor,
    out_loss: Tensor,
    *,
    beta: float = 0.1,
    lambda_near: float = 0.1,
    lambda_out: float = 0.2,
) -> Tensor:
    """The C3PO objective: ``L_DPO + lambda_near * L_near + lambda_out * L_out`` (official ``compute_loss``:
    ``dpo_loss + sigma_soft * kd_soft_loss + sigma_hard * kd_hard_loss``).

    Parameters
    ----------
    policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp : torch.Tensor
        As for :func:`dpo_loss`.
    near_loss, out_loss : torch.Tensor
        Scalar anchor losses (:func:`anchor_loss`) on near-scope and out-of-scope baseline answers.
    beta : float, default 0.1
        DPO's temperature.
    lambda_near : float, default 0.1
        Weight of the near-scope anchor (official ``sigma_hard``, main configuration 0.1).
    lambda_out : float, default 0.2
        Weight of the out-of-scope anchor (official ``sigma_soft``, main configuration 0.2).

    Returns
    -------
    torch.Tensor
        Scalar loss.
    """
    lambda_near = check_float(lambda_near, "lambda_near", min_val=0.0)
    lambda_out = check_float(lambda_out, "lambda_out", min_val=0.0)
    near_loss = check_tensor(near_loss, "near_loss", ndim=0)
    out_loss = check_tensor(out_loss, "out_loss", ndim=0)
    dpo = dpo_loss(policy_chosen_logp, policy_rejected_logp, ref_chosen_logp, ref_rejected_logp, beta=beta)
    return dpo + lambda_near * near_loss + lambda_out * out_loss


def completion_logprobs(logits: Tensor, labels: Tensor) -> Tensor:
    """Sum of the log-probabilities of the labelled tokens per sequence (TRL's ``get_batch_logps``;
    :func:`icml24.nn.logprobs.token_logprobs` with ``reduction="sum"``).

    Parameters
    ----------
    logits : torch.Tensor
        ``(B, T, V)``; position ``t`` predicts token ``t + 1``.
    labels : torch.Tensor
        ``(B, T)`` with ``-100`` where not scored.

    Returns
    -------
    torch.Tensor
        ``(B,)``.
    """
    logits, labels = _logits_and_labels(logits, labels)
    return token_logprobs(logits, labels, ignore_index=IGNORE, reduction="sum")


__all__ = ["SFT_REDUCTIONS", "completion_only_labels", "anchor_loss", "c3po_loss", "completion_logprobs"]
