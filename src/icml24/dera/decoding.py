"""DeRa: decoding-time realignment (Liu et al., ICML 2024, arXiv 2402.02992), decoded with ``generate``.

:func:`dera_generate` decodes from the per-token mixture of an aligned model and its reference
(:mod:`icml24.dera.mixture`) through the aligned model's own ``generate``, with a
:class:`~icml24.dera.processors.DeRaLogitsProcessor` that runs the reference beside it. It applies the
mixture *before* temperature, top-k and top-p (Hugging Face's own warpers are switched off and re-added
after it). The rest of DeRa: :mod:`~icml24.dera.checks` (input checks), :mod:`~icml24.dera.model` (the
:class:`~icml24.dera.model.DeRa` causal LM) and :mod:`~icml24.dera.scoring` (sequence log-likelihoods and the
lambda search); their public names are importable from here as before.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from typing import Callable, Sequence

import torch
from torch import Tensor, nn

from ..errors import InputError
from ..nn.lm_models import model_device
from ..validation import check_bool, check_float, check_int, check_seed, check_tensor
from .checks import (  # noqa: F401 - as before
    check_lambda,
    check_mask,
    check_model,
    check_pair,
    check_positions,
    check_token_ids,
)
from .mixture import mix_logprobs  # noqa: F401 - importable from here as before
from .model import DeRa, DeRaModel  # noqa: F401 - importable from here as before
from .processors import AllowedTokens, DeRaLogitsProcessor, eval_mode
from .scoring import LambdaSearch, dera_logprobs, lambda_search  # noqa: F401 - importable from here as before

MODEL_DEFAULT = "model"  # dera_generate's eos_token_id default: the aligned model's own EOS


@contextlib.contextmanager
def _no_model_eos(model: nn.Module, active: bool):
    """Hide the model's default EOS from ``generate`` (which fills a None ``eos_token_id`` from it); restored."""
    saved = getattr(model, "generation_config", None)
    if not active or saved is None or getattr(saved, "eos_token_id", None) is None:
        yield
        return
    quiet = copy.deepcopy(saved)
    quiet.eos_token_id = None
    model.generation_config = quiet
    try:
        yield
    finally:
        model.generation_config = saved


def _check_special_id(value, name: str, vocab: int, *, allow_list: bool):
    if value is None:
        return None
    if allow_list and isinstance(value, (list, tuple)):
        if not value:
            raise InputError(f"{name} is an empty list", "give a token id, a list of them, or None")
        return [check_int(v, name, min_val=0, max_val=vocab - 1) for v in value]
    return check_int(value, name, min_val=0, max_val=vocab - 1)


_INT_SETTINGS = {"num_beams": 1, "num_return_sequences": 1, "num_beam_groups": 1, "min_new_tokens": 0, "min_length": 0}
_INT_SETTINGS |= {"no_repeat_ngram_size": 0, "max_length": 1}  # integer generation settings and their minimum
_OWN = {"input_ids", "attention_mask", "generation_config", "logits_processor", "inputs"}


def dera_generate(
    aligned: nn.Module,
    ref: nn.Module,
    input_ids: Tensor,
    *,
    lam: float,
    attention_mask: Tensor | None = None,
    max_new_tokens: int = 32,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = None,
    use_cache: bool = True,
    pad_token_id: int | None = None,
    eos_token_id: int | Sequence[int] | str | None = MODEL_DEFAULT,
    allowed_ids: Tensor | None = None,
    logits_processor: Sequence[Callable] | None = None,
    **generate_kwargs,
):
    """Decode from DeRa(``lam``): ``aligned.generate`` with the reference mixed in before the warpers.

    Every Hugging Face decoding mode works: greedy, sampling, beam search (``num_beams``, the reference's
    cache follows the beams; beam scores and ``sequences_scores`` are sums of DeRa's normalised
    log-probabilities, with transformers' length penalty), ``num_return_sequences``. Batches must be
    left-padded (``tokenizer.padding_side = "left"``) with their ``attention_mask``. Processors that
    ``generate`` builds from the generation settings (``min_new_tokens``, ``suppress_tokens``,
    ``bad_words_ids``, ...) run on the aligned model's scores before the mixture; their bans (``-inf``) hold
    at every lambda. Settings that re-weight scores rather than ban (``repetition_penalty``) therefore act on
    the aligned model's share only; pass such processors in ``logits_processor`` to apply them to DeRa's
    distribution. Sampling uses a private seeded RNG when ``seed`` is given (the global RNG state is
    restored). Both models run in eval mode; their modes are restored afterwards.

    Parameters
    ----------
    aligned, ref : transformers.PreTrainedModel
        The aligned model and its reference, with one vocabulary.
    input_ids : torch.Tensor
        Prompt token ids, (batch, length), left-padded, each in ``[0, vocabulary)``.
    lam : float
        The realignment strength, >= 0 (0: the reference, 1: the aligned model, > 1 extrapolates).
    attention_mask : torch.Tensor, optional
        (batch, length) of 0/1; required for padded batches.
    max_new_tokens : int, default 32
    do_sample : bool, default False
        Sample instead of greedy (or beam) decoding.
    temperature : float, default 1.0
        >= 1e-6 (lower overflows; use greedy decoding); applied after the mixture.
    top_k : int, default 0
        >= 0 (0: off); applied after the mixture.
    top_p : float, default 1.0
        In (0, 1]; applied after the mixture.
    seed : int, optional
        Seeds a private RNG for sampling.
    use_cache : bool, default True
        KV caches for both models.
    pad_token_id : int, optional
        Default: the aligned model's.
    eos_token_id : int, list of int, None or "model", default "model"
        The end-of-sequence token(s); None means no EOS (as in transformers); "model": the aligned model's.
    allowed_ids : torch.Tensor, optional
        Restrict generation to these token ids (a grammar), applied after the mixture.
    logits_processor : sequence of callables, optional
        Further ``transformers`` logits processors, applied to DeRa's log-probabilities (after
        ``allowed_ids``, before temperature, top-k and top-p).
    **generate_kwargs
        Further generation settings (into the ``GenerationConfig``: ``num_beams``,
        ``num_return_sequences``, ``length_penalty``, ``return_dict_in_generate``, ``output_scores``, ...) or
        other ``generate`` arguments (``streamer``, ``stopping_criteria``).

    Returns
    -------
    torch.Tensor or transformers.generation.utils.GenerateOutput
        The generated ids, prompt included, as ``generate`` returns them (an output object with
        ``return_dict_in_generate=True``).

    References
    ----------
    T. Liu et al. Decoding-time Realignment of Language Models. ICML 2024.
    """
    from transformers import (
        GenerationConfig,
        LogitsProcessorList,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    lam = check_lambda(lam, "lam")
    vocab = check_pair(aligned, ref)
    check_token_ids(input_ids, "input_ids", vocab)
    mask = None
    if attention_mask is not None:
        mask = check_mask(attention_mask, "attention_mask", tuple(input_ids.shape))
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", min_val=1)
    for model in (aligned, ref):
        check_positions(model, input_ids.size(1) + max_new_tokens, "max_new_tokens (with the prompt)")
    do_sample = check_bool(do_sample, "do_sample")
    temperature = check_float(temperature, "temperature", min_val=1e-6)  # lower overflows the scaled scores
    top_k = check_int(top_k, "top_k", min_val=0)
    top_p = check_float(top_p, "top_p", min_val=0.0, max_val=1.0, include_boundaries="right")
    if seed is not None:
        seed = check_seed(seed)
    use_cache = check_bool(use_cache, "use_cache")
    pad_token_id = _check_special_id(pad_token_id, "pad_token_id", vocab, allow_list=False)
    eos_off = eos_token_id is None
    if isinstance(eos_token_id, str):
        if eos_token_id != MODEL_DEFAULT:
            raise InputError(f"unknown eos_token_id {eos_token_id!r}", f"give a token id, None or {MODEL_DEFAULT!r}")
        gc = getattr(aligned, "generation_config", None)
        eos_token_id = getattr(gc, "eos_token_id", None) if gc is not None else None
        if eos_token_id is None:
            eos_token_id = aligned.config.eos_token_id
    else:
        eos_token_id = _check_special_id(eos_token_id, "eos_token_id", vocab, allow_list=True)
    if allowed_ids is not None:
        if isinstance(allowed_ids, (list, tuple)):
            try:
                allowed_ids = torch.as_tensor(allowed_ids)
            except (TypeError, ValueError, RuntimeError):
                raise InputError(f"allowed_ids must hold token ids, got {allowed_ids!r:.60}") from None
        check_tensor(allowed_ids, "allowed_ids", ndim=1, dtype="integer")
        if int(allowed_ids.min()) < 0 or int(allowed_ids.max()) >= vocab:
            raise InputError(f"allowed_ids holds token ids outside the vocabulary [0, {vocab})")
    extra_procs = []
    if logits_processor is not None:
        if isinstance(logits_processor, (str, bytes)) or not isinstance(logits_processor, Sequence):
            raise InputError(
                f"logits_processor must be a list of logits processors, got {type(logits_processor).__name__}"
            )
        for p in logits_processor:
            if not callable(p):
                raise InputError(f"logits_processor holds a {type(p).__name__}, which is not callable")
            if isinstance(p, DeRaLogitsProcessor):
                raise InputError("logits_processor holds a DeRaLogitsProcessor", "dera_generate adds its own")
            extra_procs.append(p)
    if pad_token_id is None:
        pad_token_id = aligned.config.pad_token_id
    if pad_token_id is None:
        first = eos_token_id[0] if isinstance(eos_token_id, list) else eos_token_id
        pad_token_id = first if first is not None else 0
    # Hugging Face's own warpers are switched off (they would run before the mixture); ours follow it
    extra = {"temperature": 1.0, "top_k": 0, "top_p": 1.0} if do_sample else {}
    cfg = GenerationConfig(
        max_new_tokens=max_new_tokens,
        do_sample=do_sample,
        use_cache=use_cache,
        pad_token_id=pad_token_id,
        eos_token_id=eos_token_id,
        **extra,
    )
    for key in ("temperature", "top_k", "top_p", "do_sample", "use_cache", "max_new_tokens"):
        if key in generate_kwargs:
            raise InputError(f"{key} is an argument of dera_generate, not a generation setting here")
    for key, low in _INT_SETTINGS.items():
        if key in generate_kwargs:
            check_int(generate_kwargs[key], key, min_val=low)
    for key in ("length_penalty", "diversity_penalty"):
        if key in generate_kwargs:
            check_float(generate_kwargs[key], key)
    if "repetition_penalty" in generate_kwargs:
        check_float(
            generate_kwargs["repetition_penalty"], "repetition_penalty", min_val=0.0, include_boundaries="right"
        )
    n_return, beams = generate_kwargs.get("num_return_sequences", 1), generate_kwargs.get("num_beams", 1)
    if not do_sample and n_return > beams:
        raise InputError(f"num_return_sequences={n_return} exceeds num_beams={beams}", "sample, or use more beams")
    rest = cfg.update(**generate_kwargs)  # generation settings go into the config, the rest to generate()
    allowed = set(inspect.signature(aligned.generate).parameters) - _OWN - {"kwargs"}
    allowed |= {"stopping_criteria", "streamer", "prefix_allowed_tokens_fn"}
    unknown = sorted(set(rest) - allowed)
    if unknown:
        raise InputError(
            f"unknown generation setting {unknown[0]!r}",
            "give GenerationConfig fields (num_beams, num_return_sequences, ...) or generate arguments",
        )
    try:
        cfg.validate(strict=True)
    except ValueError as exc:
        raise InputError(f"generation settings: {str(exc).strip().splitlines()[0]}") from None
    procs = LogitsProcessorList([DeRaLogitsProcessor(ref, lam, attention_mask=mask, use_cache=use_cache)])
    if allowed_ids is not None:
        procs.append(AllowedTokens(allowed_ids))
    procs.extend(extra_procs)
    if do_sample:
        if temperature != 1.0:
            procs.append(TemperatureLogitsWarper(temperature))
        if top_k:
            procs.append(TopKLogitsWarper(top_k))
        if top_p < 1.0:
            procs.append(TopPLogitsWarper(top_p))
    dev = model_device(aligned)
    ids = input_ids.to(dev)
    am = mask.to(dev) if mask is not None else torch.ones_like(ids)
    rng_devices = [dev.index or 0] if dev.type == "cuda" else []
    with eval_mode(aligned, ref), _no_model_eos(aligned, eos_off), torch.random.fork_rng(devices=rng_devices):
        if seed is not None:
            torch.manual_seed(seed)
        with torch.no_grad():
            return aligned.generate(
                input_ids=ids, attention_mask=am, generation_config=cfg, logits_processor=procs, **rest
            )


__all__ = ["MODEL_DEFAULT", "dera_generate"]
