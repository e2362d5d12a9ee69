"""Incremental decoding of Hugging Face causal LMs: the key/value-cache keyword of a model's ``forward``, the cache
in its output, and an ancestral sampler with an explicit ``torch.Generator`` that keeps the exact log-probabilities
of what it draws.
"""

from __future__ import annotations

import inspect

import torch
from torch import Tensor

from ..errors import InputError
from ..validation import check_int, check_tensor, check_torch_generator
from .logprobs import next_token_logprobs

_CACHE_KEYWORDS: dict = {}


def cache_keyword(model) -> str:
    """Return the keyword under which a model's ``forward`` takes its key/value cache.

    ``cache`` in newer ``transformers`` (5.2x), ``past_key_values`` before. A PEFT model is read through its base
    model (``get_base_model()``), whose ``forward`` receives the cache. Memoised per model class.

    Parameters
    ----------
    model : torch.nn.Module
        A causal LM (or a PEFT model wrapping one).

    Returns
    -------
    str
        ``"cache"`` or ``"past_key_values"``.
    """
    if not isinstance(model, torch.nn.Module):
        raise InputError(f"model must be a torch.nn.Module (a causal LM), got {type(model).__name__}")
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    key = type(base)
    if key not in _CACHE_KEYWORDS:
        params = inspect.signature(base.forward).parameters
        _CACHE_KEYWORDS[key] = "cache" if "cache" in params else "past_key_values"
    return _CACHE_KEYWORDS[key]


def output_cache(out):
    """Return the key/value cache of a forward's output (``cache`` in newer ``transformers``, else
    ``past_key_values``).

    Parameters
    ----------
    out : transformers.utils.ModelOutput
        What ``model(..., use_cache=True)`` returned (any object with these attributes).

    Returns
    -------
    object or None
        The cache to pass back under :func:`cache_keyword`; None when the output holds none.
    """
    cache = getattr(out, "cache", None)
    return cache if cache is not None else getattr(out, "past_key_values", None)


def sample_responses(
    model,
    prompt_ids: Tensor,
    n: int,
    max_new_tokens: int,
    *,
    generator: torch.Generator,
    allowed_ids: Tensor | None = None,
    eos_token_id: int | None = None,
    pad_token_id: int = 0,
    use_cache: bool = True,
) -> dict[str, Tensor]:
    """Draw ``n`` responses per prompt by ancestral sampling (temperature 1, no top-k/top-p) and keep their
    exact log-probabilities under the sampling model.

    Each token is drawn with ``torch.multinomial`` from ``exp`` of :func:`~icml24.nn.logprobs.next_token_logprobs`
    (float32), with ``generator`` as the only source of randomness.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The sampling model; its mode is restored afterwards.
    prompt_ids : torch.Tensor
        Prompts of equal length, long ``(P, T_p)``.
    n : int
        Responses per prompt (>= 1).
    max_new_tokens : int
        Response length limit (>= 1).
    generator : torch.Generator
        Source of randomness.
    allowed_ids : torch.Tensor, optional
        Restrict every next-token distribution to these ids (a grammar), renormalised.
    eos_token_id : int, optional
        End of a response; later positions are padding (masked). None: responses run to ``max_new_tokens``.
    pad_token_id : int, default 0
        Id written after ``<eos>``.
    use_cache : bool, default True
        Reuse the model's key/value cache between tokens (one prefill, then one token per step), as
        ``generate`` does; False recomputes the whole sequence at each token (same draws, slower).

    Returns
    -------
    dict of str to torch.Tensor
        ``input_ids`` ``(P n, T_p + T)`` (prompt ``i`` repeated in rows ``i n .. i n + n - 1``),
        ``attention_mask``, ``prompt_index`` ``(P n,)`` and ``logprob`` ``(P n,)`` (float32 sums over
        response tokens, ``<eos>`` included).
    """
    ids = check_tensor(prompt_ids, "prompt_ids", ndim=2, dtype="integer")
    n = check_int(n, "n", min_val=1)
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", min_val=1)
    generator = check_torch_generator(generator, optional=False)
    if allowed_ids is not None:
        allowed_ids = check_tensor(allowed_ids, "allowed_ids", ndim=1, dtype="integer")
    eos_token_id = check_int(eos_token_id, "eos_token_id", min_val=0, allow_none=True)
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return _ancestral(
                model, ids, n, max_new_tokens, generator, allowed_ids, eos_token_id, pad_token_id, use_cache
            )
    finally:
        model.train(was_training)


def _ancestral(model, ids, n, max_new_tokens, generator, allowed_ids, eos_token_id, pad_token_id, use_cache):
    seq = ids.repeat_interleave(n, dim=0)
    B = seq.size(0)
    mask = torch.ones_like(seq)
    done = torch.zeros(B, dtype=torch.bool)
    lp = torch.zeros(B)
    past = None
    cache_arg = cache_keyword(model)
    for _ in range(max_new_tokens):
        if use_cache:
            step_ids = seq if past is None else seq[:, -1:]
            out = model(input_ids=step_ids, attention_mask=mask, use_cache=True, **{cache_arg: past})
            past = output_cache(out)
        else:
            out = model(input_ids=seq, attention_mask=mask)
        if allowed_ids is not None:
            sub = next_token_logprobs(out.logits[:, -1], allowed_ids)
            j = torch.multinomial(sub.exp(), 1, generator=generator).squeeze(1)
            tok, tlp = allowed_ids[j], sub.gather(1, j.unsqueeze(1)).squeeze(1)
        else:
            full = next_token_logprobs(out.logits[:, -1])
            tok = torch.multinomial(full.exp(), 1, generator=generator).squeeze(1)
            tlp = full.gather(1, tok.unsqueeze(1)).squeeze(1)
        lp = lp + torch.where(done, torch.zeros_like(tlp), tlp)
        tok = torch.where(done, torch.full_like(tok, pad_token_id), tok)
        seq = torch.cat([seq, tok.unsqueeze(1)], dim=1)
        mask = torch.cat([mask, (~done).long().unsqueeze(1)], dim=1)
        if eos_token_id is not None:
            done = done | (tok == eos_token_id)
            if bool(done.all()):
                break
    return {
        "input_ids": seq,
        "attention_mask": mask,
        "prompt_index": torch.arange(ids.size(0)).repeat_interleave(n),
        "logprob": lp,
    }


__all__ = ["cache_keyword", "output_cache", "sample_responses"]
