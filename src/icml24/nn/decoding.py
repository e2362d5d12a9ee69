"""Incremental decoding of Hugging Face causal LMs: the key/value-cache keyword of a model's ``forward``, the cache
in its output, and an ancestral sampler with an explicit ``torch.Generator`` that keeps the exact log-probabilities
of what it draws.
"""

from __future__ import annotations

import inspect

import torch
from torch import Tensor

from ..errors import InputError
from ..validation import check_bool, check_float, check_int, check_tensor, check_torch_generator
from .lm_models import vocab_size_of
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
    (float32), with ``generator`` as the only source of randomness (:func:`decode` with :func:`model_step`).

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
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "get_output_embeddings"):
        raise InputError(f"model must be a causal LM (a transformers PreTrainedModel), got {type(model).__name__}")
    vocab = vocab_size_of(model)
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        raise InputError(f"prompt_ids must lie in [0, {vocab - 1}] (the model's vocabulary)")
    if allowed_ids is not None and allowed_ids.numel() and int(allowed_ids.max()) >= vocab:
        raise InputError(f"allowed_ids must lie in [0, {vocab - 1}] (the model's vocabulary)")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = decode(
                model_step(model, use_cache=use_cache, positions=False),
                ids.repeat_interleave(n, dim=0),
                max_new_tokens=max_new_tokens,
                do_sample=True,
                generator=generator,
                allowed_ids=allowed_ids,
                eos_token_id=eos_token_id,
                pad_token_id=pad_token_id,
            )
    finally:
        model.train(was_training)
    out["prompt_index"] = torch.arange(ids.size(0)).repeat_interleave(n)
    return out


def model_step(forward, *, use_cache: bool = True, positions: bool = True, keyword: str | None = None):
    """The next-token logits of a causal LM as a step function for :func:`decode`, holding its own KV cache.

    Parameters
    ----------
    forward : callable
        A causal LM (``torch.nn.Module``) or any callable taking its keywords (``input_ids``, ``attention_mask``,
        ``position_ids``, ``use_cache`` and the cache keyword) and returning an output with ``.logits``.
    use_cache : bool, default True
        Prefill once, then feed one token per step with the cache; False recomputes the whole sequence.
    positions : bool, default True
        Pass ``position_ids`` counted over the attention mask (needed with left padding, as ``generate`` does);
        False lets the model number the positions itself.
    keyword : str, optional
        The cache keyword of ``forward``; by default :func:`cache_keyword` of the module (``past_key_values`` for
        a plain callable).

    Returns
    -------
    callable
        ``step(seq, mask, new) -> logits (B, V)`` of the last position, ``new`` the tokens added since the last
        call (all of ``seq`` on the first).
    """
    if not callable(forward):
        raise InputError(f"forward must be a causal LM or a callable, got {type(forward).__name__}")
    use_cache = check_bool(use_cache, "use_cache")
    positions = check_bool(positions, "positions")
    if keyword is not None and keyword not in ("cache", "past_key_values"):
        raise InputError(f"keyword must be 'cache' or 'past_key_values', got {keyword!r}")
    state = {"past": None, "keyword": keyword}

    def step(seq: Tensor, mask: Tensor, new: int) -> Tensor:
        kw = {"attention_mask": mask}
        if use_cache:
            if state["keyword"] is None:
                state["keyword"] = cache_keyword(forward) if isinstance(forward, torch.nn.Module) else "past_key_values"
            kw.update(input_ids=seq[:, -new:], use_cache=True)
            kw[state["keyword"]] = state["past"]
        else:
            kw["input_ids"] = seq
        if positions:
            pos = (mask.cumsum(-1) - 1).clamp(min=0)
            kw["position_ids"] = pos[:, -kw["input_ids"].size(1) :]
        out = forward(**kw)
        if use_cache:
            state["past"] = output_cache(out)
        return out.logits[:, -1]

    return step


def decode(
    step,
    input_ids: Tensor,
    attention_mask: Tensor | None = None,
    *,
    max_new_tokens: int,
    do_sample: bool = True,
    temperature: float = 1.0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    allowed_ids: Tensor | None = None,
    eos_token_id: int | None = None,
    pad_token_id: int | None = None,
) -> dict[str, Tensor]:
    """Decode token by token from any next-token distribution: the one loop behind :func:`sample_responses`
    and the logit mixtures of C3PO's composed adapters.

    At each step ``step(seq, mask, new)`` gives the next-token logits; temperature and top-p are applied with
    ``transformers``' warpers (as ``generate`` does); the token is the argmax (greedy) or a ``torch.multinomial``
    draw from ``exp`` of :func:`~icml24.nn.logprobs.next_token_logprobs` (float32), ``generator`` its only source
    of randomness (None: torch's global generator, as ``generate``). Rows that produced ``eos_token_id``
    continue with ``pad_token_id``, masked.

    Parameters
    ----------
    step : callable
        ``step(seq, mask, new) -> (B, V)`` logits of the last position (:func:`model_step` for one model).
    input_ids : torch.Tensor
        Prompts ``(B, T)``, left padded.
    attention_mask : torch.Tensor, optional
        ``(B, T)``; all ones by default.
    max_new_tokens : int
        Tokens to add at most (>= 1).
    do_sample : bool, default True
        Sample; False takes the argmax.
    temperature, top_p : float, default 1.0
        Sampling settings (ignored when greedy).
    generator : torch.Generator, optional
        Source of randomness when sampling.
    allowed_ids : torch.Tensor, optional
        Restrict every next-token distribution to these ids (a grammar), renormalised.
    eos_token_id : int, optional
        End of a response; None: every row runs to ``max_new_tokens``.
    pad_token_id : int, optional
        Id written after ``<eos>``; None: ``eos_token_id``.

    Returns
    -------
    dict of str to torch.Tensor
        ``input_ids`` ``(B, T + n)``, ``attention_mask`` (0 on padding after ``<eos>``) and ``logprob`` ``(B,)``
        (float32 sums over the new tokens of the distribution they were chosen from, ``<eos>`` included).
    """
    if not callable(step):
        raise InputError(f"step must be callable, got {type(step).__name__}")
    ids = check_tensor(input_ids, "input_ids", ndim=2, dtype="integer")
    if attention_mask is None:
        mask = torch.ones_like(ids)
    else:
        mask = check_tensor(attention_mask, "attention_mask", shape=tuple(ids.shape), dtype="any").to(ids.dtype)
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", min_val=1)
    do_sample = check_bool(do_sample, "do_sample")
    temperature = check_float(temperature, "temperature", min_val=0.0, include_boundaries="right")
    top_p = check_float(top_p, "top_p", min_val=0.0, max_val=1.0, include_boundaries="right")
    generator = check_torch_generator(generator)
    if allowed_ids is not None:
        allowed_ids = check_tensor(allowed_ids, "allowed_ids", ndim=1, dtype="integer")
        if int(allowed_ids.min()) < 0 or allowed_ids.unique().numel() != allowed_ids.numel():
            raise InputError("allowed_ids must hold distinct non-negative token ids")
    eos_token_id = check_int(eos_token_id, "eos_token_id", min_val=0, allow_none=True)
    pad_token_id = check_int(pad_token_id, "pad_token_id", min_val=0, allow_none=True)
    pad = eos_token_id if pad_token_id is None else pad_token_id
    warpers = _warpers(temperature, top_p) if do_sample else []
    seq, done = ids, torch.zeros(ids.size(0), dtype=torch.bool, device=ids.device)
    lp = torch.zeros(ids.size(0), device=ids.device)
    new = ids.size(1)
    for _ in range(max_new_tokens):
        logits = step(seq, mask, new).float()
        if not bool(torch.isfinite(logits).any(-1).all()) or bool(torch.isnan(logits).any()):
            raise InputError("step gave NaN logits or no finite logit for a row (a model with non-finite weights?)")
        for warp in warpers:
            logits = warp(seq, logits)
        sub = next_token_logprobs(logits, allowed_ids)
        if do_sample:
            j = torch.multinomial(sub.exp(), 1, generator=generator).squeeze(1)
        else:
            j = (logits if allowed_ids is None else logits[:, allowed_ids]).argmax(-1)
        tlp = sub.gather(1, j.unsqueeze(1)).squeeze(1)
        tok = j if allowed_ids is None else allowed_ids[j]
        lp = lp + torch.where(done, torch.zeros_like(tlp), tlp)
        if pad is not None:
            tok = torch.where(done, torch.full_like(tok, pad), tok)
        seq = torch.cat([seq, tok.unsqueeze(1)], dim=1)
        mask = torch.cat([mask, (~done).to(mask.dtype).unsqueeze(1)], dim=1)
        new = 1
        if eos_token_id is not None:
            done = done | (tok == eos_token_id)
            if bool(done.all()):
                break
    return {"input_ids": seq, "attention_mask": mask, "logprob": lp}


def _warpers(temperature: float, top_p: float) -> list:
    """``transformers``' temperature and top-p warpers, as ``generate`` builds them (none at 1.0)."""
    if temperature == 1.0 and top_p >= 1.0:
        return []
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper

    warpers = [TemperatureLogitsWarper(temperature)] if temperature != 1.0 else []
    if top_p < 1.0:
        warpers.append(TopPLogitsWarper(top_p))
    return warpers


__all__ = ["cache_keyword", "decode", "model_step", "output_cache", "sample_responses"]
