"""DeRa as a scorer: the log-likelihood of given sequences under DeRa(lambda), and the choice of lambda on
validation data (the paper's recipe: choose the regularisation at decoding time, then optionally retrain once
at beta / lambda)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import torch
from torch import Tensor, nn

from ..errors import InputError
from ..validation import check_bool, check_int, check_tensor
from .checks import check_lambda, check_mask, check_pair, check_token_ids
from .model import DeRa


def dera_logprobs(
    aligned: nn.Module,
    ref: nn.Module,
    input_ids: Tensor,
    *,
    lam: float,
    start: int | Tensor = 1,
    attention_mask: Tensor | None = None,
    per_token: bool = False,
) -> Tensor:
    """Log-likelihood of given sequences under DeRa(``lam``): tokens ``t >= start`` scored by the normalised
    mixture ``log_softmax(lam * logits_aligned + (1 - lam) * logits_ref)`` given ``x_<t``.

    Parameters
    ----------
    aligned, ref : transformers.PreTrainedModel
        The aligned model and its reference.
    input_ids : torch.Tensor
        (batch, length), length >= 2.
    lam : float
        The realignment strength, >= 0.
    start : int or torch.Tensor, default 1
        First scored position, in ``[1, length)`` (per row when a 1-d integer tensor).
    attention_mask : torch.Tensor, optional
        (batch, length) of 0/1; positions where it is 0 are not scored.
    per_token : bool, default False
        Return one value per scored token instead of the sums.

    Returns
    -------
    torch.Tensor
        ``per_token=False``: one log-likelihood per sequence, (batch,). ``per_token=True``: the log-probability
        of each token, (batch, length - start) for an int ``start`` (column ``j`` is token ``start + j``), or
        (batch, length - 1) for a tensor ``start`` (column ``j`` is token ``j + 1``); tokens that are not
        scored are 0, so the rows sum to the per-sequence values.
    """
    lam = check_lambda(lam, "lam")
    vocab = check_pair(aligned, ref)
    check_token_ids(input_ids, "input_ids", vocab)
    b, t = input_ids.shape
    if t < 2:
        raise InputError(f"input_ids must have at least 2 tokens per row to score one, got length {t}")
    if isinstance(start, Tensor):
        check_tensor(start, "start", shape=(b,), dtype="integer")
        if int(start.min()) < 1 or int(start.max()) >= t:
            raise InputError(f"start must be in [1, {t - 1}] for sequences of length {t}")
    else:
        start = check_int(start, "start", min_val=1, max_val=t - 1)
    mask = None
    if attention_mask is not None:
        mask = check_mask(attention_mask, "attention_mask", (b, t), left_padded=False)
    per_token = check_bool(per_token, "per_token")
    with torch.no_grad():
        lp = DeRa(aligned, ref, lam)(input_ids, attention_mask=mask).logits[:, :-1]
        tok = lp.gather(-1, input_ids[:, 1:].to(lp.device).unsqueeze(-1)).squeeze(-1)  # (b, t-1), token j+1
        pos = torch.arange(1, t, device=tok.device).unsqueeze(0)
        st = start.to(tok.device).unsqueeze(1) if isinstance(start, Tensor) else start
        keep = (pos >= st).expand_as(tok)
        if mask is not None:
            keep = keep & mask[:, 1:].to(tok.device).bool()
        tok = torch.where(keep, tok, torch.zeros_like(tok))
    if not per_token:
        return tok.sum(1)
    return tok if isinstance(start, Tensor) else tok[:, start - 1 :]


@dataclass
class LambdaSearch:
    """The result of :func:`lambda_search`.

    Parameters
    ----------
    best : float
        The lambda with the best score.
    scores : dict of float to float
        The metric at every candidate lambda.
    """

    best: float
    scores: dict[float, float]


def lambda_search(
    aligned: nn.Module,
    ref: nn.Module,
    lambdas: Sequence[float],
    metric: Callable[[DeRa], float],
    *,
    maximize: bool = True,
) -> LambdaSearch:
    """Pick lambda on validation data: ``metric(DeRa(aligned, ref, lam))`` for each candidate (the paper's
    recipe: choose the regularisation at decoding time, then optionally retrain once at beta / lambda).

    Parameters
    ----------
    aligned, ref : transformers.PreTrainedModel
        The aligned model and its reference.
    lambdas : sequence of float
        The candidates, each >= 0; at least one (a list, tuple or 1-d array; not a mapping or an iterator).
    metric : callable
        ``metric(DeRa) -> float`` on validation data; must return a finite real number.
    maximize : bool, default True
        Pick the largest score (else the smallest).

    Returns
    -------
    LambdaSearch

    References
    ----------
    T. Liu et al. Decoding-time Realignment of Language Models. ICML 2024 (choosing lambda on
    validation data).
    """
    check_pair(aligned, ref)
    if (
        isinstance(lambdas, (str, bytes, Mapping))
        or not hasattr(lambdas, "__len__")
        or getattr(lambdas, "ndim", 1) != 1
    ):
        raise InputError(f"lambdas must be a sequence of numbers, got {type(lambdas).__name__}")
    lams = [check_lambda(lam, f"lambdas[{i}]") for i, lam in enumerate(list(lambdas))]
    if not lams:
        raise InputError("lambdas is empty", "give at least one lambda")
    if not callable(metric):
        raise InputError(f"metric must be callable, got {type(metric).__name__}")
    maximize = check_bool(maximize, "maximize")
    scores = {}
    for lam in lams:
        v = metric(DeRa(aligned, ref, lam))
        v = v.item() if isinstance(v, Tensor) and v.numel() == 1 else v
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)):
            raise InputError(f"metric returned {v!r} at lambda={lam:g}", "it must return a finite number")
        scores[lam] = float(v)
    pick = max if maximize else min
    return LambdaSearch(pick(scores, key=scores.get), scores)


__all__ = ["dera_logprobs", "LambdaSearch", "lambda_search"]
