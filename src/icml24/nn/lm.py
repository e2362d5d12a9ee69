"""Tiny Hugging Face causal LMs, exact sequence log-probabilities, a compact trainer, and exact
KL-regularised alignment on an enumerable language: the language-model toolkit, importable from here.

One job a module: :mod:`~icml24.nn.lm_models` (tiny GPT-2 / Llama models, devices), :mod:`~icml24.nn.logprobs`
(the one token log-probability convention), :mod:`~icml24.nn.decoding` (key/value caches, an ancestral sampler),
:mod:`~icml24.nn.lm_train` (trainer, batches, SFT), :mod:`~icml24.nn.alignment` (DPO loss, exact KL-regularised
alignment). Models are ordinary ``transformers`` models (GPT-2 or Llama architecture) built from small configs,
so every method that uses them works unchanged on a user's real Hugging Face model. Nothing is downloaded.
"""

from __future__ import annotations

from .alignment import AlignResult, align_exact, dpo_loss, kl_divergence, optimal_policy
from .decoding import cache_keyword, decode, model_step, output_cache, sample_responses
from .lm_models import batch_to, model_device, tiny_gpt2, tiny_llama, vocab_size_of
from .lm_train import TrainConfig, TrainResult, corpus_batches, language_batches, sft_on_language, train_lm
from .logprobs import next_token_logprobs, response_logprobs, sequence_logprobs, token_logprobs

__all__ = [
    "tiny_gpt2",
    "tiny_llama",
    "vocab_size_of",
    "model_device",
    "batch_to",
    "next_token_logprobs",
    "token_logprobs",
    "sequence_logprobs",
    "response_logprobs",
    "cache_keyword",
    "output_cache",
    "sample_responses",
    "decode",
    "model_step",
    "dpo_loss",
    "kl_divergence",
    "optimal_policy",
    "TrainConfig",
    "TrainResult",
    "train_lm",
    "corpus_batches",
    "language_batches",
    "sft_on_language",
    "align_exact",
    "AlignResult",
]
