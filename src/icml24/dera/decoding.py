"""DeRa: decoding-time realignment (Liu et al., ICML 2024, arXiv 2402.02992).

An aligned model trained with KL strength ``beta`` and its reference (SFT) model define, for any
``lambda >= 0``, the per-token geometric mixture

    pi_hat(y_t | x, y_<t) = softmax( lambda * h_aligned + (1 - lambda) * h_ref ),

which approximates the model one would get by retraining at strength ``beta / lambda`` (the sequence-level
identity pi*(beta/lambda) ∝ pi*(beta)^lambda pi_ref^(1-lambda) is the paper's Proposition; DeRa applies it
token by token). ``lambda = 0`` is the reference, ``lambda = 1`` the aligned model, ``lambda > 1``
extrapolates. Every value this module calls a log-probability is the normalised ``log_softmax`` of that
mixture (its logsumexp over the vocabulary is 0), at every lambda; a token banned (``-inf``) in either
input stays banned.

The official code (a Colab notebook) is a Hugging Face ``LogitsProcessor`` that runs the reference model
with its own KV cache, unbatched. Ours also handles batches with left padding and attention masks, beam
search (the reference's cache follows the beams), ``num_return_sequences``, and reuse for a new prompt;
:func:`dera_generate` applies the mixture *before* temperature, top-k and top-p (Hugging Face's own
warpers are switched off and re-added after it).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import math
import numbers
from dataclasses import dataclass
from typing import Callable, Sequence

import torch
from torch import Tensor, nn
from transformers import LogitsProcessor

from ..errors import InputError
from ..nn.decoding import cache_keyword, output_cache
from ..nn.lm import model_device, vocab_size_of
from ..validation import check_bool, check_float, check_int, check_seed, check_tensor

MODEL_DEFAULT = "model"  # dera_generate's eos_token_id default: the aligned model's own EOS


def check_lambda(lam, name: str = "lam") -> float:
    """A realignment strength: a finite real number >= 0 (Python, numpy or 0-d torch scalar).

    Parameters
    ----------
    lam : float
        0 is the reference, 1 the aligned model, > 1 extrapolates.
    name : str, default "lam"
        The argument's name in the message.

    Returns
    -------
    float
    """
    try:
        return check_float(lam, name, min_val=0.0)
    except InputError as exc:
        raise InputError(exc.message, "0 is the reference, 1 the aligned model, > 1 extrapolates") from None


def check_model(model, name: str) -> int:
    """Check that ``model`` is a Hugging Face causal LM and return its vocabulary size.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        The model.
    name : str
        The argument's name in the message.

    Returns
    -------
    int
    """
    if not isinstance(model, nn.Module) or not hasattr(model, "get_output_embeddings"):
        raise InputError(
            f"{name} must be a Hugging Face causal LM (transformers PreTrainedModel), got {type(model).__name__}"
        )
    return vocab_size_of(model)


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
    va, vr = check_model(aligned, "aligned"), check_model(ref, "ref")
    if va != vr:
        raise InputError(
            f"ref has a different vocabulary from aligned ({vr} vs {va} tokens)",
            "DeRa needs an aligned model and its own reference, with one tokenizer",
        )
    return va


def check_token_ids(ids, name: str, vocab_size: int) -> Tensor:
    """Token ids: a non-empty 2-d integer tensor with every id in ``[0, vocab_size)``.

    Parameters
    ----------
    ids : torch.Tensor
        (batch, length).
    name : str
        The argument's name in the message.
    vocab_size : int
        The models' vocabulary size.

    Returns
    -------
    torch.Tensor
        ``ids`` itself.
    """
    check_tensor(ids, name, ndim=2, dtype="integer")
    lo, hi = int(ids.min()), int(ids.max())
    if lo < 0 or hi >= vocab_size:
        raise InputError(
            f"{name} holds token ids outside the vocabulary [0, {vocab_size}) (min {lo}, max {hi})",
            "encode with the models' own tokenizer",
        )
    return ids


def _check_mask(mask, name: str, shape: tuple | None = None, *, left_padded: bool = True) -> Tensor:
    """An attention mask of 0/1 entries (integer or bool), each row attending to something; a long copy."""
    check_tensor(mask, name, ndim=2, shape=shape, dtype=None)
    if mask.is_floating_point() or mask.is_complex():
        raise InputError(f"{name} must hold integer or bool entries (0/1), got dtype {mask.dtype}")
    m = mask.detach().long().clone()
    if bool(((m != 0) & (m != 1)).any()):
        raise InputError(f"{name} must hold only 0 and 1")
    if bool((m.sum(1) == 0).any()):
        raise InputError(f"{name} has a row with no token to attend to")
    if left_padded and bool((m[:, -1] == 0).any()):
        raise InputError(f"{name} is right-padded", "pad on the left for generation (padding_side='left')")
    return m


def _check_logits(t, name: str) -> Tensor:
    check_tensor(t, name, dtype="float", finite=False)
    if t.ndim == 0:
        raise InputError(f"{name} must have a vocabulary dimension, got a 0-d tensor")
    if bool(torch.isnan(t).any()) or bool(torch.isposinf(t).any()):
        raise InputError(f"{name} holds non-finite logits (NaN or +inf)")
    return t


def _mix(aligned_logits: Tensor, ref_logits: Tensor, lam: float) -> Tensor:
    """``log_softmax(lam * a + (1 - lam) * r)``, computed from the two log-softmaxes; ``-inf`` stays ``-inf``."""
    dtype = torch.promote_types(aligned_logits.dtype, ref_logits.dtype)
    if dtype not in (torch.float32, torch.float64):
        dtype = torch.float32
    a = aligned_logits.to(dtype)
    r = ref_logits.to(device=a.device, dtype=dtype)
    banned = torch.isneginf(a) | torch.isneginf(r)
    la, lr = torch.log_softmax(a, dim=-1), torch.log_softmax(r, dim=-1)
    if lam in (0.0, 1.0) and not bool(banned.any()):
        return lr if lam == 0.0 else la  # exact: the reference, the aligned model
    if lam == 0.0:
        z = lr
    elif lam == 1.0:
        z = la
    else:  # per-row constants cancel in the final log_softmax, as the weights sum to one
        z = lam * la.masked_fill(banned, 0.0) + (1.0 - lam) * lr.masked_fill(banned, 0.0)
    out = torch.log_softmax(z.masked_fill(banned, float("-inf")), dim=-1)
    return out.masked_fill(banned.all(-1, keepdim=True), float("-inf"))  # a row with every token banned


def mix_logprobs(aligned_logits: Tensor, ref_logits: Tensor, lam: float) -> Tensor:
    """DeRa's per-token mixture, normalised: ``log_softmax(lam * aligned_logits + (1 - lam) * ref_logits)``.

    Raw logits or log-probabilities give the same result (the weights sum to one). Normalised at every
    ``lam`` (its logsumexp over the last dimension is 0), exact at ``lam`` 0 and 1. A token that is
    ``-inf`` in either input (banned by an earlier processor) stays ``-inf``; NaN or ``+inf`` logits are
    refused. Computed in float32 (float64 when an input is float64).

    Parameters
    ----------
    aligned_logits, ref_logits : torch.Tensor
        Next-token logits of the two models, same shape (..., vocabulary).
    lam : float
        The realignment strength, >= 0.

    Returns
    -------
    torch.Tensor
        Mixed next-token log-probabilities, same shape.

    References
    ----------
    T. Liu et al. Decoding-time Realignment of Language Models. ICML 2024 (the per-token approximation of
    the geometric mixture, Section 3).
    """
    lam = check_lambda(lam, "lam")
    _check_logits(aligned_logits, "aligned_logits")
    _check_logits(ref_logits, "ref_logits")
    if aligned_logits.shape != ref_logits.shape:
        raise InputError(
            f"ref_logits {tuple(ref_logits.shape)} and aligned_logits {tuple(aligned_logits.shape)} differ in shape"
        )
    return _mix(aligned_logits, ref_logits, lam)


def _reorder_cache(past, index: Tensor):
    """Rows of a KV cache gathered by ``index`` (beam search moves rows between steps)."""
    if hasattr(past, "reorder_cache"):
        past.reorder_cache(index)
        return past
    return tuple(tuple(t.index_select(0, index.to(t.device)) for t in layer) for layer in past)


def _positions(mask: Tensor) -> Tensor:
    """Position ids for left-padded rows (Hugging Face's convention: cumsum of the mask minus one)."""
    pos = mask.long().cumsum(-1) - 1
    return pos.masked_fill(mask == 0, 1)


@contextlib.contextmanager
def _eval_mode(*models: nn.Module):
    """Run with every module in eval mode, then restore the modules that were training (also on error)."""
    training = [m for model in models for m in model.modules() if m.training]
    try:
        for m in training:
            m.training = False
        yield
    finally:
        for m in training:
            m.training = True


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


_HASH = None


def _match_rows(new: Tensor, old: Tensor) -> Tensor | None:
    """For each row of ``new``, the index of an equal row of ``old`` (same width), or None if one has none."""
    if new.shape == old.shape and torch.equal(new, old):
        return torch.arange(new.size(0), device=new.device)
    global _HASH
    k = new.size(1)
    if _HASH is None or _HASH.numel() < k:
        _HASH = torch.randint(1, 2**61, (max(k, 256),), generator=torch.Generator().manual_seed(0))
    w = _HASH[:k].to(new.device)
    hn, ho = (new.long() * w).sum(1), (old.long() * w).sum(1)  # int64 wraps around: a hash, checked below
    eq = hn[:, None] == ho[None, :]
    if not bool(eq.any(1).all()):
        return None
    src = eq.int().argmax(1)
    if torch.equal(old[src], new):
        return src
    eq = (new[:, None, :] == old[None, :, :]).all(-1)  # a hash collision: compare in full
    return eq.int().argmax(1) if bool(eq.any(1).all()) else None


class DeRaLogitsProcessor(LogitsProcessor):
    """A ``transformers`` logits processor: the aligned model's scores in, DeRa's mixed log-probs out.

    It runs ``ref`` on the same tokens with its own KV cache (``use_cache=False`` recomputes the whole
    prefix every step, for checking) and returns ``log_softmax(lam * scores + (1 - lam) * ref_logits)``,
    normalised at every ``lam``, with tokens banned by earlier processors (``-inf`` in ``scores``) kept
    banned. Works under greedy decoding, sampling and beam search: the reference's cache rows follow the
    rows of ``input_ids`` from step to step (beams reordered, ``num_return_sequences`` copies), matched by
    their tokens. Give it the prompt's ``attention_mask`` for batches with left padding; rows expanded by
    ``generate`` (beams, returned sequences) get their prompt row's mask.

    Reusable: a call whose rows do not continue the previous call's starts afresh. With an
    ``attention_mask`` it serves only the prompt it was made for (any number of ``generate`` calls on it);
    another prompt raises :class:`InputError` (make a new processor per prompt, or call :meth:`reset`).

    Parameters
    ----------
    ref : transformers.PreTrainedModel
        The reference (SFT) model.
    lam : float
        The realignment strength, >= 0 (any real scalar type).
    attention_mask : torch.Tensor, optional
        The prompt's mask (batch, length) of 0/1, left-padded.
    use_cache : bool, default True
        Keep the reference's KV cache between steps.
    """

    def __init__(
        self, ref: nn.Module, lam: float, *, attention_mask: Tensor | None = None, use_cache: bool = True
    ) -> None:
        vocab = check_model(ref, "ref")
        lam = check_lambda(lam, "lam")
        use_cache = check_bool(use_cache, "use_cache")
        mask = None if attention_mask is None else _check_mask(attention_mask, "attention_mask")
        self.ref, self.lam, self.use_cache, self.vocab_size = ref, lam, use_cache, vocab
        self.prompt_mask = mask
        self.reset()

    def reset(self, attention_mask: Tensor | None = None) -> None:
        """Forget every prompt and cache; optionally set the mask of the next prompt.

        Parameters
        ----------
        attention_mask : torch.Tensor, optional
            The next prompt's mask (batch, length); None keeps the mask given so far.
        """
        if attention_mask is not None:
            self.prompt_mask = _check_mask(attention_mask, "attention_mask")
        self._ids = self._mask = self._past = None  # the rows the reference has seen, their mask, its cache
        self._prompt_ids = self._prompt_rows_mask = None  # the prompt (as expanded by generate) and its mask

    def _new_prompt_mask(self, input_ids: Tensor) -> Tensor:
        n, t = input_ids.shape
        dev = input_ids.device
        if self.prompt_mask is None:
            return torch.ones(n, t, dtype=torch.long, device=dev)
        if self._prompt_ids is not None:
            src = _match_rows(input_ids, self._prompt_ids) if self._prompt_ids.size(1) == t else None
            if src is None:
                raise InputError(
                    "input_ids is a new prompt, and this DeRaLogitsProcessor's attention_mask belongs to another",
                    "make a new DeRaLogitsProcessor for each prompt, or call reset(attention_mask=...)",
                )
            return self._prompt_rows_mask[src]
        b, tp = self.prompt_mask.shape
        if tp != t or n % b:
            raise InputError(
                f"the processor's attention_mask {(b, tp)} does not match the prompt in input_ids {(n, t)}",
                "give the mask of the prompt passed to generate (make a new DeRaLogitsProcessor per prompt)",
            )
        mask = self.prompt_mask.to(dev).repeat_interleave(n // b, dim=0)  # as generate expands its inputs
        self._prompt_ids, self._prompt_rows_mask = input_ids.clone(), mask
        return mask

    @torch.no_grad()
    def _ref_logits(self, input_ids: Tensor) -> Tensor:
        n, t = input_ids.shape
        dev = input_ids.device
        feed_from, past, mask = 0, None, None
        if self._ids is not None:
            seen = self._ids.size(1)
            k = min(seen, t)
            src = _match_rows(input_ids[:, :k], self._ids[:, :k])
            if src is not None:
                ones = torch.ones(n, t - k, dtype=torch.long, device=dev)
                mask = torch.cat([self._mask[src, :k], ones], 1)
                if t > seen and self.use_cache and self._past is not None:
                    identity = src.numel() == self._ids.size(0) and torch.equal(src, torch.arange(n, device=dev))
                    past = self._past if identity else _reorder_cache(self._past, src)
                    feed_from = seen
        if mask is None:
            mask = self._new_prompt_mask(input_ids)
        rdev = model_device(self.ref)
        kw = {
            "input_ids": input_ids[:, feed_from:].to(rdev),
            "attention_mask": mask.to(rdev),
            "position_ids": _positions(mask)[:, feed_from:].to(rdev),
            "use_cache": self.use_cache,
        }
        if past is not None:
            kw[cache_keyword(self.ref)] = past
        with _eval_mode(self.ref):
            out = self.ref(**kw)
        self._past = output_cache(out) if self.use_cache else None
        self._ids, self._mask = input_ids.clone(), mask
        return out.logits[:, -1, :]

    def __call__(self, input_ids: Tensor, scores: Tensor) -> Tensor:
        """Mix the aligned model's scores with the reference's next-token logits.

        Parameters
        ----------
        input_ids : torch.Tensor
            The tokens so far, (batch, length).
        scores : torch.Tensor
            The aligned model's next-token scores (logits or log-probs), (batch, vocabulary).

        Returns
        -------
        torch.Tensor
            DeRa's mixed log-probabilities (normalised), in ``scores``' dtype.
        """
        check_token_ids(input_ids, "input_ids", self.vocab_size)
        check_tensor(scores, "scores", ndim=2, dtype="float", finite=False)
        if scores.shape != (input_ids.size(0), self.vocab_size):
            raise InputError(
                f"scores {tuple(scores.shape)} must be (batch, vocabulary) = {(input_ids.size(0), self.vocab_size)}",
                "the aligned model and the reference must share one vocabulary",
            )
        if bool(torch.isnan(scores).any()) or bool(torch.isposinf(scores).any()):
            raise InputError("scores holds non-finite logits (NaN or +inf) from the aligned model")
        ref_logits = self._ref_logits(input_ids).to(scores.device)
        if bool(torch.isnan(ref_logits).any()) or bool(torch.isposinf(ref_logits).any()):
            raise InputError("ref produced non-finite logits (NaN or +inf)")
        return _mix(scores, ref_logits, self.lam).to(scores.dtype)


class AllowedTokens(LogitsProcessor):
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
        mask = torch.ones(scores.size(-1), dtype=torch.bool, device=scores.device)
        mask[self.allowed.to(scores.device)] = False
        return scores.masked_fill(mask, float("-inf"))


class DeRa(nn.Module):
    """The DeRa model as one causal LM: ``forward`` returns mixed next-token log-probs as ``.logits``, and
    :meth:`generate` decodes like a Hugging Face model's ``generate``.

    Use it wherever a model is scored (sequence log-likelihoods, exact distributions on an enumerable
    language, a lambda search) or decoded (a drop-in for TRL's ``GeometricMixtureWrapper``, whose
    ``mixture_coef`` is ``1 - lam``). Also exported as ``DeRaModel``. ``forward`` runs both models in eval
    mode and restores the modes they had; the models themselves are never modified.

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
        lam = check_lambda(lam, "lam")
        vocab = check_pair(aligned, ref)
        super().__init__()
        self.vocab_size, self.lam = vocab, lam
        self.aligned, self.ref = aligned, ref

    def get_output_embeddings(self):
        """The aligned model's LM head (for vocabulary checks).

        Returns
        -------
        torch.nn.Module
        """
        return self.aligned.get_output_embeddings()

    @property
    def device(self) -> torch.device:
        """The aligned model's device.

        Returns
        -------
        torch.device
        """
        return model_device(self.aligned)

    @property
    def generation_config(self):
        """The aligned model's generation settings (defaults of :meth:`generate`).

        Returns
        -------
        transformers.GenerationConfig
        """
        return self.aligned.generation_config

    def generate(self, input_ids: Tensor | None = None, attention_mask: Tensor | None = None, **kwargs):
        """Decode from DeRa(``lam``) as from a causal LM: greedy, sampling, beam search, streaming.

        A drop-in for ``model.generate`` (and for TRL's ``GeometricMixtureWrapper.generate``): takes a
        ``generation_config`` and the usual settings, with transformers' defaults where a setting is not given
        (the aligned model's ``generation_config``, then ``do_sample=False``, ``temperature=1``, ``top_k=50``,
        ``top_p=1``, ``max_length=20``); ``streamer`` (e.g. a ``TextStreamer``), ``logits_processor`` and
        ``stopping_criteria`` pass through. ``eos_token_id=None`` given explicitly means no EOS. Decoding is
        :func:`dera_generate` (the mixture before temperature, top-k and top-p; the reference's cache follows
        the beams).

        Parameters
        ----------
        input_ids : torch.Tensor
            Prompt ids, (batch, length), left-padded (``inputs`` is accepted as its other name).
        attention_mask : torch.Tensor, optional
            (batch, length) of 0/1.
        **kwargs
            ``generation_config``, generation settings, ``seed`` and the other arguments of
            :func:`dera_generate`.

        Returns
        -------
        torch.Tensor or transformers.generation.utils.GenerateOutput
            As :func:`dera_generate`.
        """
        from transformers import GenerationConfig

        if input_ids is None:
            input_ids = kwargs.pop("inputs", None)
        check_token_ids(input_ids, "input_ids", self.vocab_size)
        cfg = kwargs.pop("generation_config", None)
        if cfg is not None and not isinstance(cfg, GenerationConfig):
            raise InputError(f"generation_config must be a transformers.GenerationConfig, got {type(cfg).__name__}")
        settings = {}
        if cfg is not None:
            settings = {k: v for k, v in cfg.to_diff_dict().items() if not k.startswith("_")}
            settings.pop("transformers_version", None)
            if "eos_token_id" not in settings:
                settings["eos_token_id"] = MODEL_DEFAULT
        settings.update(kwargs)
        model_cfg = getattr(self.aligned, "generation_config", None)
        defaults = {"do_sample": False, "temperature": 1.0, "top_k": 50, "top_p": 1.0, "max_length": 20}
        for key, value in defaults.items():
            if settings.get(key) is None:
                own = getattr(model_cfg, key, None) if model_cfg is not None else None
                settings[key] = own if own is not None else value
        max_length = settings.pop("max_length")
        if settings.get("max_new_tokens") is None:
            settings["max_new_tokens"] = max(1, int(max_length) - input_ids.size(1))
        if not settings["do_sample"]:
            for key in ("temperature", "top_k", "top_p"):
                settings.pop(key)
        return dera_generate(self.aligned, self.ref, input_ids, lam=self.lam, attention_mask=attention_mask, **settings)

    def forward(self, input_ids: Tensor, attention_mask: Tensor | None = None, **kwargs):
        """Mixed next-token log-probabilities at every position.

        Parameters
        ----------
        input_ids : torch.Tensor
            (batch, length).
        attention_mask : torch.Tensor, optional
            (batch, length) of 0/1, for left-padded batches.
        **kwargs
            Ignored (accepted for compatibility with scoring code).

        Returns
        -------
        transformers.modeling_outputs.CausalLMOutput
            With ``logits`` the mixed log-probabilities (normalised), (batch, length, vocabulary).
        """
        from transformers.modeling_outputs import CausalLMOutput

        check_token_ids(input_ids, "input_ids", self.vocab_size)
        kw = {}
        if attention_mask is not None:
            mask = _check_mask(attention_mask, "attention_mask", tuple(input_ids.shape), left_padded=False)
            kw = {"attention_mask": mask.to(input_ids.device), "position_ids": _positions(mask).to(input_ids.device)}
        with _eval_mode(self.aligned, self.ref):
            a = self.aligned(input_ids=input_ids, **kw).logits
            rdev = model_device(self.ref)
            r = self.ref(input_ids=input_ids.to(rdev), **{k: v.to(rdev) for k, v in kw.items()}).logits
        for name, t in (("aligned", a), ("ref", r)):
            if bool(torch.isnan(t).any()) or bool(torch.isposinf(t).any()):
                raise InputError(f"{name} produced non-finite logits (NaN or +inf)")
        return CausalLMOutput(logits=_mix(a, r.to(a.device), self.lam))


def _check_special_id(value, name: str, vocab: int, *, allow_list: bool):
    if value is None:
        return None
    if allow_list and isinstance(value, (list, tuple)):
        if not value:
            raise InputError(f"{name} is an empty list", "give a token id, a list of them, or None")
        return [check_int(v, name, min_val=0, max_val=vocab - 1) for v in value]
    return check_int(value, name, min_val=0, max_val=vocab - 1)


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
        > 0; applied after the mixture.
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
        mask = _check_mask(attention_mask, "attention_mask", tuple(input_ids.shape))
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", min_val=1)
    do_sample = check_bool(do_sample, "do_sample")
    temperature = check_float(temperature, "temperature", min_val=0.0, include_boundaries="right")
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
        allowed_ids = torch.as_tensor(allowed_ids) if isinstance(allowed_ids, (list, tuple)) else allowed_ids
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
    with _eval_mode(aligned, ref), _no_model_eos(aligned, eos_off), torch.random.fork_rng(devices=rng_devices):
        if seed is not None:
            torch.manual_seed(seed)
        with torch.no_grad():
            return aligned.generate(
                input_ids=ids, attention_mask=am, generation_config=cfg, logits_processor=procs, **rest
            )


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
        mask = _check_mask(attention_mask, "attention_mask", (b, t), left_padded=False)
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


DeRaModel = DeRa  # the name of the drop-in wrapper


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
        isinstance(lambdas, (str, bytes))
        or not isinstance(lambdas, (Sequence, Tensor))
        and not hasattr(lambdas, "__len__")
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
