"""Token log-probabilities of causal LMs: the one convention every method uses.

:func:`token_logprobs` is the single place where next-token logits become ``log p(label | prefix)``:
float32 ``log_softmax`` then ``gather`` (never ``cross_entropy``), the logits shifted by one (position ``t``
predicts token ``t + 1``), a token scored where its label is not ``ignore_index`` and the mask is 1, and the
reduction over a sequence (``"none"``, ``"sum"`` or ``"mean"``) named by the caller. :func:`next_token_logprobs`
is the normalised next-token distribution it reads from (also what the samplers draw from),
:func:`sequence_logprobs` runs a model and sums, :func:`response_logprobs` scores every response of an
enumerable language exactly.
"""

from __future__ import annotations

import itertools
from typing import Sequence

import torch
from torch import Tensor

from ..errors import InputError
from ..validation import check_choice

REDUCTIONS = ("none", "sum", "mean")


def _check_logits(logits, allowed_ids, ndim: int | None = None) -> None:
    """Types and shapes only (no pass over the values: this runs inside training loops)."""
    if not isinstance(logits, Tensor) or not logits.is_floating_point() or logits.dim() < 1:
        raise InputError(f"logits must be a floating-point torch.Tensor (..., V), got {_what(logits)}")
    if ndim is not None and logits.dim() != ndim:
        raise InputError(f"logits must be (B, T, V), got shape {tuple(logits.shape)}")
    if allowed_ids is not None:
        if not isinstance(allowed_ids, Tensor) or allowed_ids.dim() != 1 or allowed_ids.is_floating_point():
            raise InputError(f"allowed_ids must be a 1-d integer torch.Tensor, got {_what(allowed_ids)}")
        if allowed_ids.numel() == 0 or int(allowed_ids.min()) < 0 or int(allowed_ids.max()) >= logits.size(-1):
            raise InputError(f"allowed_ids must be non-empty token ids in [0, {logits.size(-1)})")


def _what(x) -> str:
    if isinstance(x, Tensor):
        return f"a {x.dtype} tensor of shape {tuple(x.shape)}"
    return type(x).__name__


def next_token_logprobs(logits: Tensor, allowed_ids: Tensor | None = None) -> Tensor:
    """Normalise next-token logits into log-probabilities, in float32, optionally over a subset of tokens.

    Parameters
    ----------
    logits : torch.Tensor
        Logits ``(..., V)``; cast to float32 first.
    allowed_ids : torch.Tensor, optional
        Token ids to which the distribution is restricted and renormalised (a grammar, see
        :class:`icml24.data.text.EnumerableLanguage`); the last dimension then indexes ``allowed_ids``.

    Returns
    -------
    torch.Tensor
        ``log_softmax`` over the last dimension: ``(..., V)``, or ``(..., len(allowed_ids))``.
    """
    _check_logits(logits, allowed_ids)
    logits = logits.float()
    if allowed_ids is not None:
        return torch.log_softmax(logits[..., allowed_ids], dim=-1)
    return torch.log_softmax(logits, dim=-1)


def token_logprobs(
    logits: Tensor,
    labels: Tensor,
    allowed_ids: Tensor | None = None,
    *,
    mask: Tensor | None = None,
    ignore_index: int = -100,
    reduction: str = "none",
) -> Tensor:
    """Compute ``log p(labels[:, t] | labels[:, :t])`` for ``t >= 1`` from next-token logits (teacher forcing).

    The convention shared by every method: ``logits[:, t]`` predicts ``labels[:, t + 1]`` (shifted, as Hugging
    Face causal LMs); the log-probability is ``log_softmax`` in float32 then ``gather`` (:func:`next_token_logprobs`);
    token ``t`` is scored when ``labels[:, t] != ignore_index`` and ``mask[:, t]`` is nonzero; unscored tokens
    count 0. Differentiable.

    Parameters
    ----------
    logits : torch.Tensor
        Next-token logits ``(B, T, V)``.
    labels : torch.Tensor
        Token ids ``(B, T)`` (the input ids, or labels with ``ignore_index`` on tokens not to score).
    allowed_ids : torch.Tensor, optional
        Restrict every next-token distribution to these tokens (renormalised); a scored token outside them gets
        NaN.
    mask : torch.Tensor, optional
        ``(B, T)`` (or broadcastable), aligned with ``labels``: token ``t`` is scored only where ``mask[:, t]``
        is nonzero (an attention mask, a first-scored-position mask). Column 0 is never scored.
    ignore_index : int, default -100
        Label of tokens not to score (Hugging Face's convention).
    reduction : {"none", "sum", "mean"}, default "none"
        ``"none"``: one value per token, ``(B, T - 1)``, column ``j`` for token ``j + 1``, 0 where not scored;
        ``"sum"``: the sum over each row's scored tokens, ``(B,)``; ``"mean"``: that sum over the number of
        scored tokens (at least 1), ``(B,)``.

    Returns
    -------
    torch.Tensor
        Float32 log-probabilities, shaped by ``reduction``.
    """
    reduction = check_choice(reduction, "reduction", REDUCTIONS)
    _check_logits(logits, allowed_ids, ndim=3)
    if not isinstance(labels, Tensor) or labels.is_floating_point() or labels.shape != logits.shape[:2]:
        raise InputError(
            f"labels must be an integer torch.Tensor of shape {tuple(logits.shape[:2])}, got {_what(labels)}"
        )
    if mask is not None and not (
        isinstance(mask, Tensor)
        and mask.dim() == 2
        and mask.shape[1] == labels.shape[1]
        and mask.shape[0] in (1, len(labels))
    ):
        raise InputError(f"mask must be a torch.Tensor broadcasting to {tuple(labels.shape)}, got {_what(mask)}")
    target = labels[:, 1:]
    scored = target != ignore_index
    if mask is not None:
        scored = scored & mask[:, 1:].bool()
    index = target.clamp(min=0)
    if allowed_ids is not None:
        sub = next_token_logprobs(logits[:, :-1], allowed_ids)
        pos = torch.full((logits.size(-1),), -1, dtype=torch.long)
        pos[allowed_ids] = torch.arange(allowed_ids.numel())
        idx = pos[index]
        val = sub.gather(-1, idx.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        lp = torch.where(idx >= 0, val, torch.full_like(val, float("nan")))
    else:
        lp = next_token_logprobs(logits[:, :-1]).gather(-1, index.unsqueeze(-1)).squeeze(-1)
    lp = torch.where(scored, lp, torch.zeros_like(lp))
    if reduction == "none":
        return lp
    total = lp.sum(1)
    if reduction == "sum":
        return total
    return total / scored.sum(1).clamp(min=1)


def sequence_logprobs(
    model,
    input_ids: Tensor,
    *,
    start: int | Tensor = 1,
    attention_mask: Tensor | None = None,
    allowed_ids: Tensor | None = None,
    end: int | None = None,
    batch_size: int = 4096,
) -> Tensor:
    """Sum ``log p(x_t | x_<t)`` over ``start <= t < end`` for each row (teacher forcing), in batches.

    :func:`token_logprobs` with the first-scored-position and attention masks, summed. Differentiable when grad
    is enabled.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM called as ``model(input_ids=..., attention_mask=...)``.
    input_ids : torch.Tensor
        Token ids ``(B, T)``.
    start : int or torch.Tensor, default 1
        First scored position; may be a per-row tensor ``(B,)`` (e.g. prompt lengths).
    attention_mask : torch.Tensor, optional
        ``(B, T)``; positions where it is 0 are not scored.
    allowed_ids : torch.Tensor, optional
        Restrict every next-token distribution to these tokens (see :func:`token_logprobs`).
    end : int, optional
        One past the last scored position; ``T`` by default.
    batch_size : int, default 4096
        Rows per forward pass.

    Returns
    -------
    torch.Tensor
        Shape ``(B,)``.

    Raises
    ------
    InputError
        If a scored token is outside ``allowed_ids``.
    """
    end = input_ids.size(1) if end is None else end
    outs = []
    for lo in range(0, input_ids.size(0), batch_size):
        ids = input_ids[lo : lo + batch_size]
        am = attention_mask[lo : lo + batch_size] if attention_mask is not None else None
        logits = model(input_ids=ids, attention_mask=am).logits
        st = start[lo : lo + batch_size].unsqueeze(1) if isinstance(start, Tensor) else start
        mask = torch.arange(end).unsqueeze(0) >= st  # token t is scored from t = start on
        if am is not None:
            mask = mask & am[:, :end].bool()
        lp = token_logprobs(logits[:, :end], ids[:, :end], allowed_ids, mask=mask)  # tokens 1..end-1
        if bool(torch.isnan(lp).any()):
            raise InputError("a scored token is outside allowed_ids")
        outs.append(lp.sum(1))
    return torch.cat(outs)


def response_logprobs(model, lang, *, prompts: Sequence[str] | None = None, grad: bool = False) -> Tensor:
    """Compute the exact log-probabilities of every response of an enumerable language.

    Only the response tokens count, restricted to the language's symbols; ``<eos>`` is implied by the
    grammar (fixed length), so each row sums to one in probability. The responses form a prefix tree, so the
    model runs once on each of the ``k^(L-1)`` length-``L-1`` prefixes, which exposes every node's next-token
    distribution (:func:`next_token_logprobs` over the symbols); full-response log-probabilities are sums along
    the tree (``k`` times fewer rows than scoring every response).

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM over the language's tokenizer.
    lang : icml24.data.text.EnumerableLanguage
        The language.
    prompts : sequence of str, optional
        The prompts to score (rows, in this order); all of ``lang.prompts()`` by default.
    grad : bool, default False
        Record gradients (for training); otherwise runs under ``torch.no_grad()``.

    Returns
    -------
    torch.Tensor
        Float tensor ``(P, R)``, columns in the order of ``lang.responses()``.
    """
    prompts = lang.prompts() if prompts is None else list(prompts)
    k, L, s0 = len(lang.symbols), lang.response_len, lang.response_start
    rows = []
    for p in prompts:
        seqs = lang.sequences(p)[::k, : s0 + L - 1]  # every prefix of length L-1 once (last symbol varies fastest)
        rows.append(seqs)
    ids = torch.cat(rows)
    ctx = torch.enable_grad() if grad else torch.no_grad()
    with ctx:
        logits = model(input_ids=ids).logits[:, s0 - 1 : s0 + L - 1, :]  # predicts response tokens 0..L-1
        node = next_token_logprobs(logits, lang.symbol_ids)  # (P * k^(L-1), L, k)
        node = node.view(len(prompts), k ** (L - 1), L, k)
        grid = torch.tensor(list(itertools.product(range(k), repeat=L)))  # (k^L, L), order of lang.responses()
        row = torch.arange(k**L) // k
        lp = node[:, row.unsqueeze(1), torch.arange(L).unsqueeze(0), grid]  # (P, k^L, L)
        return lp.sum(-1)


__all__ = ["REDUCTIONS", "next_token_logprobs", "token_logprobs", "sequence_logprobs", "response_logprobs"]
