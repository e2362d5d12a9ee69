"""DeRa as ``transformers`` logits processors: the reference run step by step beside the aligned model.

The official code (a Colab notebook) is a Hugging Face ``LogitsProcessor`` that runs the reference model
with its own KV cache, unbatched. :class:`DeRaLogitsProcessor` also handles batches with left padding and
attention masks, beam search (the reference's cache follows the beams), ``num_return_sequences``, and reuse
for a new prompt. :class:`AllowedTokens` restricts decoding to a grammar. The helpers that run a model
(:func:`eval_mode`, :func:`positions`) are shared with :mod:`icml24.dera.model` and
:mod:`icml24.dera.decoding`.
"""

from __future__ import annotations

import contextlib

import torch
from torch import Tensor, nn

from ..extras import require

require("transformers", extra="lm", what="dera")  # one line naming the extra, not a raw ImportError

from transformers import LogitsProcessor

from ..errors import InputError
from ..nn.decoding import cache_keyword, output_cache
from ..nn.lm_models import model_device
from ..validation import check_bool, check_tensor
from .checks import check_lambda, check_mask, check_model, check_token_ids
from .mixture import mix


def _reorder_cache(past, index: Tensor):
    """Rows of a KV cache gathered by ``index`` (beam search moves rows between steps)."""
    if hasattr(past, "reorder_cache"):
        past.reorder_cache(index)
        return past
    return tuple(tuple(t.index_select(0, index.to(t.device)) for t in layer) for layer in past)


def positions(mask: Tensor) -> Tensor:
    """Position ids for left-padded rows (Hugging Face's convention: cumsum of the mask minus one)."""
    pos = mask.long().cumsum(-1) - 1
    return pos.masked_fill(mask == 0, 1)


@contextlib.contextmanager
def eval_mode(*models: nn.Module):
    """Run with every module in eval mode, then restore the modules that were training (also on error)."""
    training = [m for model in models for m in model.modules() if m.training]
    try:
        for m in training:
            m.training = False
        yield
    finally:
        for m in training:
            m.training = True


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
        mask = None if attention_mask is None else check_mask(attention_mask, "attention_mask")
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
            self.prompt_mask = check_mask(attention_mask, "attention_mask")
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
            "position_ids": positions(mask)[:, feed_from:].to(rdev),
            "use_cache": self.use_cache,
        }
        if past is not None:
            kw[cache_keyword(self.ref)] = past
        with eval_mode(self.ref):
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
        return mix(scores, ref_logits, self.lam).to(scores.dtype)


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


__all__ = ["DeRaLogitsProcessor", "AllowedTokens"]
