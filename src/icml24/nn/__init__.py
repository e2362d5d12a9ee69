"""Building blocks shared by several methods: GNN backbones and MLPs (``gnn``, needs the ``graphs`` extra) and the
language-model toolkit (``lm`` and its modules, needs the ``lm`` extra): tiny causal LMs, the one token
log-probability convention, key/value-cache decoding and sampling, a trainer, exact alignment."""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package costs no torch, PyG or transformers.
_EXPORTS = {
    ".gnn": (
        "GCN",
        "SAGE",
        "GIN",
        "MLP",
        "build_backbone",
        "pretrain_inductive",
        "to_inductive",
    ),
    ".lm_models": (
        "tiny_gpt2",
        "tiny_llama",
        "vocab_size_of",
        "model_device",
        "batch_to",
    ),
    ".logprobs": (
        "next_token_logprobs",
        "token_logprobs",
        "sequence_logprobs",
        "response_logprobs",
    ),
    ".decoding": (
        "cache_keyword",
        "output_cache",
        "decode",
        "model_step",
        "sample_responses",
    ),
    ".lm_train": (
        "TrainConfig",
        "TrainResult",
        "train_lm",
        "corpus_batches",
        "language_batches",
        "sft_on_language",
    ),
    ".alignment": (
        "dpo_loss",
        "kl_divergence",
        "optimal_policy",
        "AlignResult",
        "align_exact",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
