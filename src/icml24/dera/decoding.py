"""DeRa: decoding-time realignment (Liu et al., ICML 2024, arXiv 2402.02992).

An aligned model trained with KL strength ``beta`` and its reference (SFT) model define, for any
``lambda >= 0``, the per-token geometric mixture

    pi_hat(y_t | x, y_<t) = softmax( lambda * h_aligned + (1 - lambda) * h_ref ),

which approximates the model one would get by retraining at strength ``beta / lambda`` (the sequence-level
identity pi*(beta/lambda) ∝ pi*(beta)^lambda pi_ref^(1-lambda) is the paper's Proposition; DeRa applies it
token by token). ``lambda = 0`` is the reference, ``lambda = 1`` the aligned model, ``lambda > 1``
extrapolates. Mixing raw logits or log-probabilities gives the same distribution since the weights sum
to one; we mix log-probabilities, which makes ``lambda = 0`` and ``1`` reproduce the two models exactly.

The official code (a Colab notebook) is a Hugging Face ``LogitsProcessor`` that runs the reference model
with its own KV cache, unbatched. Ours also handles batches with left padding and attention masks, and
:func:`dera_generate` applies the mixture *before* temperature, top-k and top-p (the processor is first in
the list; Hugging Face's own warpers are switched off and re-added after it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import Tensor, nn

from ..errors import InputError
from ..nn.lm import vocab_size_of
from ..validation import check_bool, check_float, check_int, check_seed, check_tensor


def check_lambda(lam, name: str = "lambda") -> float:
    """A realignment strength: a finite number >= 0.

    Parameters
    ----------
    lam : float
        0 is the reference, 1 the aligned model, > 1 extrapolates.
    name : str, default "lambda"
        The argument's name in the message.

    Returns
    -------
    float
    """
    try:
        return check_float(lam, name, min_val=0.0)
    except InputError as exc:
        raise InputError(exc.message, "0 is the reference, 1 the aligned model, > 1 extrapolates") from None


def check_pair(aligned, ref) -> int:
    """Check that two causal LMs share one vocabulary (same output size).

    Parameters
    ----------
    aligned, ref : transformers.PreTrainedModel
        The aligned model and its reference.

    Returns
    -------
    int
        The vocabulary size.
    """
    for name, m in (("aligned", aligned), ("ref", ref)):
        if not isinstance(m, nn.Module) or not hasattr(m, "get_output_embeddings"):
            raise InputError(f"{name} must be a Hugging Face causal LM (transformers PreTrainedModel)")
    va, vr = vocab_size_of(aligned), vocab_size_of(ref)
    if va != vr:
        raise InputError(
            f"the models have different vocabularies ({va} vs {vr} tokens)",
            "DeRa needs an aligned model and its own reference, with one tokenizer",
        )
    return va


def mix_logprobs(aligned_logits: Tensor, ref_logits: Tensor, lam: float) -> Tensor:
    """DeRa's per-token mixture ``log_softmax(ref) + lam * (log_softmax(aligned) - log_softmax(ref))``.

    Exact at ``lam`` 0 and 1. ``-inf`` (a token banned by either model or an earlier processor) stays
    ``-inf``; NaN or ``+inf`` logits raise :class:`InputError`.

    Parameters
    ----------
    aligned_logits, ref_logits : torch.Tensor
        Next-token logits of the two models, same shape (..., vocabulary).
    lam : float
        The realignment strength, >= 0.

    Returns
    -------
    torch.Tensor
        Mixed log-probabilities (float32), normalised when ``lam`` is in [0, 1].

    References
    ----------
    T. Liu et al. Decoding-time Realignment of Language Models. ICML 2024.
    """
    lam = check_lambda(lam)
    for name, t in (("aligned", aligned_logits), ("reference", ref_logits)):
        if bool(torch.isnan(t).any()) or bool(torch.isposinf(t).any()):
            raise InputError(f"the {name} model produced non-finite logits (NaN or +inf)")
    a = torch.log_softmax(aligned_logits.float(), dim=-1)
    r = torch.log_softmax(ref_logits.float(), dim=-1)
    if lam == 0.0:
        return r
    if lam == 1.0:
        return a
    out = r + lam * (a - r)
    banned = torch.isneginf(a) | torch.isneginf(r)
    return out.masked_fill(banned, float("-inf"))


def _cache_arg(model: nn.Module) -> str:
    """The KV-cache keyword of a model's forward: ``cache`` (transformers >= 5.2x) or ``past_key_values``."""
    import inspect

    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _cache_of(out):
    return out["cache"] if "cache" in out else out.get("past_key_values")


def _positions(mask: Tensor) -> Tensor:
    """Position ids for left-padded rows (Hugging Face's convention: cumsum of the mask minus one)."""
    pos = mask.long().cumsum(-1) - 1
    return pos.masked_fill(mask == 0, 1)


class DeRaLogitsProcessor:
    """A ``transformers`` logits processor: the aligned model's scores in, DeRa's mixed log-probs out.

    It runs ``ref`` on the same tokens with its own KV cache (``use_cache=False`` recomputes the whole
    prefix every step, for checking). Give it the prompt's ``attention_mask`` for batches with left padding.
    One processor serves one ``generate`` call: it holds that call's reference cache.

    Parameters
    ----------
    ref : transformers.PreTrainedModel
        The reference (SFT) model.
    lam : float
        The realignment strength, >= 0.
    attention_mask : torch.Tensor, optional
        The prompt's mask (batch, length), for left-padded batches.
    use_cache : bool, default True
        Keep the reference's KV cache between steps.
    """

    def __init__(
        self, ref: nn.Module, lam: float, *, attention_mask: Tensor | None = None, use_cache: bool = True
    ) -> None:
        if attention_mask is not None:
            check_tensor(attention_mask, "attention_mask", ndim=2, dtype=None)
        self.ref, self.lam, self.use_cache = ref, check_lambda(lam), check_bool(use_cache, "use_cache")
        self.prompt_mask = attention_mask
        self._past = None
        self._mask = None
        self._len = 0

    @torch.no_grad()
    def _ref_logits(self, input_ids: Tensor) -> Tensor:
        b, t = input_ids.shape
        if self._mask is None:
            base = self.prompt_mask if self.prompt_mask is not None else torch.ones(b, t, dtype=torch.long)
            if base.shape != (b, t):
                raise InputError(f"attention_mask {tuple(base.shape)} does not match the prompt {(b, t)}")
            self._mask = base.long()
        else:
            self._mask = torch.cat([self._mask, torch.ones(b, t - self._mask.size(1), dtype=torch.long)], 1)
        if not self.use_cache or self._past is None:
            out = self.ref(
                input_ids=input_ids,
                attention_mask=self._mask,
                position_ids=_positions(self._mask),
                use_cache=self.use_cache,
            )
        else:
            new = input_ids[:, self._len :]
            pos = _positions(self._mask)[:, self._len :]
            out = self.ref(
                input_ids=new,
                attention_mask=self._mask,
                position_ids=pos,
                use_cache=True,
                **{_cache_arg(self.ref): self._past},
            )
        self._past = _cache_of(out) if self.use_cache else None
        self._len = t
        return out.logits[:, -1, :]

    def __call__(self, input_ids: Tensor, scores: Tensor) -> Tensor:
        """Mix the aligned model's scores with the reference's next-token logits.

        Parameters
        ----------
        input_ids : torch.Tensor
            The tokens so far, (batch, length).
        scores : torch.Tensor
            The aligned model's next-token scores, (batch, vocabulary).

        Returns
        -------
        torch.Tensor
            DeRa's mixed log-probabilities, in ``scores``' dtype.
        """
        ref_logits = self._ref_logits(input_ids)
        if ref_logits.size(-1) != scores.size(-1):
            raise InputError(f"the models have different vocabularies ({scores.size(-1)} vs {ref_logits.size(-1)})")
        return mix_logprobs(scores, ref_logits, self.lam).to(scores.dtype)


class AllowedTokens:
    """A logits processor that bans every token outside ``allowed_ids`` (sets it to ``-inf``).

    Parameters
    ----------
    allowed_ids : torch.Tensor or sequence of int
        The token ids that may be generated.
    """

    def __init__(self, allowed_ids: Tensor) -> None:
        self.allowed = torch.as_tensor(allowed_ids, dtype=torch.long)

    def __call__(self, input_ids: Tensor, scores: Tensor) -> Tensor:
        """Set the scores of the banned tokens to ``-inf``.

        Parameters
        ----------
        input_ids : torch.Tensor
        scores : torch.Tensor
            (batch, vocabulary).

        Returns
        -------
        torch.Tensor
        """
        mask = torch.ones(scores.size(-1), dtype=torch.bool)
        mask[self.allowed] = False
        return scores.masked_fill(mask, float("-inf"))


class DeRa(nn.Module):
    """The DeRa model as one causal LM: ``forward`` returns mixed next-token log-probs as ``.logits``.

    Use it wherever a model is scored (sequence log-likelihoods, exact distributions on an enumerable
    language, a lambda search); use :func:`dera_generate` to decode. Both models are put in eval mode.

    Parameters
    ----------
    aligned : transformers.PreTrainedModel
        The model aligned at KL strength ``beta``.
    ref : transformers.PreTrainedModel
        Its reference (SFT) model, with the same vocabulary.
    lam : float
        The realignment strength, >= 0: DeRa(``lam``) approximates the model aligned at ``beta / lam``.

    References
    ----------
    T. Liu et al. Decoding-time Realignment of Language Models. ICML 2024.
    """

    def __init__(self, aligned: nn.Module, ref: nn.Module, lam: float) -> None:
        super().__init__()
        self.vocab_size = check_pair(aligned, ref)
        self.aligned, self.ref, self.lam = aligned.eval(), ref.eval(), check_lambda(lam)

    def get_output_embeddings(self):
        """The aligned model's LM head (for vocabulary checks).

        Returns
        -------
        torch.nn.Module
        """
        return self.aligned.get_output_embeddings()

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, **kwargs):
        """Mixed next-token log-probabilities at every position.

        Parameters
        ----------
        input_ids : torch.Tensor
            (batch, length).
        attention_mask : torch.Tensor, optional
            (batch, length), for left-padded batches.
        **kwargs
            Ignored (accepted for compatibility with scoring code).

        Returns
        -------
        transformers.modeling_outputs.CausalLMOutput
            With ``logits`` the mixed log-probabilities, (batch, length, vocabulary).
        """
        from transformers.modeling_outputs import CausalLMOutput

        kw = {"attention_mask": attention_mask}
        if attention_mask is not None:
            kw["position_ids"] = _positions(attention_mask)
        a = self.aligned(input_ids=input_ids, **kw).logits
        r = self.ref(input_ids=input_ids, **kw).logits
        return CausalLMOutput(logits=mix_logprobs(a, r, self.lam))


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
    eos_token_id: int | None = None,
    allowed_ids: Tensor | None = None,
    **generate_kwargs,
) -> Tensor:
    """Decode from DeRa(``lam``): ``aligned.generate`` with the reference mixed in before the warpers.

    Batches must be left-padded (``tokenizer.padding_side = "left"``) with their ``attention_mask``.
    Sampling uses a private seeded RNG when ``seed`` is given (the global RNG state is restored).
    ``allowed_ids`` restricts every generated token to those ids (a grammar), applied after the mixture and
    before the warpers.

    Parameters
    ----------
    aligned, ref : transformers.PreTrainedModel
        The aligned model and its reference, with one vocabulary.
    input_ids : torch.Tensor
        Prompt token ids, (batch, length), left-padded.
    lam : float
        The realignment strength, >= 0 (0: the reference, 1: the aligned model).
    attention_mask : torch.Tensor, optional
        (batch, length); required for padded batches.
    max_new_tokens : int, default 32
    do_sample : bool, default False
        Sample instead of greedy decoding.
    temperature : float, default 1.0
        > 0; applied after the mixture.
    top_k : int, default 0
        >= 0 (0: off).
    top_p : float, default 1.0
        In (0, 1].
    seed : int, optional
        Seeds a private RNG for sampling.
    use_cache : bool, default True
        KV caches for both models.
    pad_token_id, eos_token_id : int, optional
        Default: the aligned model's config.
    allowed_ids : torch.Tensor, optional
        Restrict generation to these token ids.
    **generate_kwargs
        Further generation settings (into the ``GenerationConfig``) or ``generate`` arguments.

    Returns
    -------
    torch.Tensor
        The generated ids, prompt included, as ``generate`` returns them.

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

    check_pair(aligned, ref)
    lam = check_lambda(lam)
    check_tensor(input_ids, "input_ids", ndim=2, dtype="integer")
    if attention_mask is not None:
        check_tensor(attention_mask, "attention_mask", shape=tuple(input_ids.shape), dtype=None)
        if bool((attention_mask[:, -1] == 0).any()):
            raise InputError("the batch is right-padded", "pad on the left for generation (padding_side='left')")
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", min_val=1)
    do_sample = check_bool(do_sample, "do_sample")
    temperature = check_float(temperature, "temperature", min_val=0.0, include_boundaries="right")
    top_k = check_int(top_k, "top_k", min_val=0)
    top_p = check_float(top_p, "top_p", min_val=0.0, max_val=1.0, include_boundaries="right")
    if seed is not None:
        seed = check_seed(seed)
    procs = LogitsProcessorList([DeRaLogitsProcessor(ref, lam, attention_mask=attention_mask, use_cache=use_cache)])
    if allowed_ids is not None:
        procs.append(AllowedTokens(allowed_ids))
    if do_sample:
        if temperature != 1.0:
            procs.append(TemperatureLogitsWarper(temperature))
        if top_k:
            procs.append(TopKLogitsWarper(top_k))
        if top_p < 1.0:
            procs.append(TopPLogitsWarper(top_p))
    # Hugging Face's own warpers are switched off (they would run after the mixture); ours are in `procs`
    extra = {"temperature": 1.0, "top_k": 0, "top_p": 1.0} if do_sample else {}
    cfg = GenerationConfig(
        max_new_tokens=max_new_tokens,
        do_sample=do_sample,
        use_cache=use_cache,
        pad_token_id=pad_token_id if pad_token_id is not None else aligned.config.pad_token_id,
        eos_token_id=eos_token_id if eos_token_id is not None else aligned.config.eos_token_id,
        **extra,
    )
    rest = cfg.update(**generate_kwargs)  # generation settings go into the config, the rest to generate()
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    aligned.eval()
    ref.eval()
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        if seed is not None:
            torch.manual_seed(seed)
        return aligned.generate(
            input_ids=input_ids, attention_mask=attention_mask, generation_config=cfg, logits_processor=procs, **rest
        )


def dera_logprobs(
    aligned: nn.Module,
    ref: nn.Module,
    input_ids: Tensor,
    *,
    lam: float,
    start: int | Tensor = 1,
    attention_mask: Tensor | None = None,
) -> Tensor:
    """Log-likelihood of given sequences under DeRa(``lam``), summed over tokens ``t >= start``.

    Parameters
    ----------
    aligned, ref : transformers.PreTrainedModel
        The aligned model and its reference.
    input_ids : torch.Tensor
        (batch, length).
    lam : float
        The realignment strength, >= 0.
    start : int or torch.Tensor, default 1
        First scored position (per row when a tensor).
    attention_mask : torch.Tensor, optional
        (batch, length).

    Returns
    -------
    torch.Tensor
        One log-likelihood per sequence.
    """
    from ..nn.lm import sequence_logprobs

    with torch.no_grad():
        return sequence_logprobs(DeRa(aligned, ref, lam), input_ids, start=start, attention_mask=attention_mask)


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
        The candidates, each >= 0; at least one.
    metric : callable
        ``metric(DeRa) -> float`` on validation data; must be finite.
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
    if not lambdas:
        raise InputError("lambda_search needs at least one lambda")
    if not callable(metric):
        raise InputError(f"metric must be callable, got {type(metric).__name__}")
    maximize = check_bool(maximize, "maximize")
    scores = {}
    for lam in lambdas:
        v = float(metric(DeRa(aligned, ref, check_lambda(lam))))
        if not math.isfinite(v):
            raise InputError(f"the metric returned {v} at lambda={lam}")
        scores[float(lam)] = v
    pick = max if maximize else min
    return LambdaSearch(pick(scores, key=scores.get), scores)
