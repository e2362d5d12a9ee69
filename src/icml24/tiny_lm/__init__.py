"""PanGu-pi Pro: the recipe for tiny language models (Tang et al., ICML 2024, arXiv 2402.02791).

From a larger trained Llama-family model a user already has: prune its tokenizer to the pieces the corpus
uses (:func:`compact_tokenizer`), derive a small child by inheriting its layers, channels, heads and FFN
neurons (:func:`inherit`, criteria L1 / L2 / Taylor / learnable mask), train it with the official optimiser
settings (:func:`train_on_batches`, DDP under ``torchrun``), and spend a second round on the batches the model
finds hardest (:func:`resample_batches`). The child is a plain ``transformers.LlamaForCausalLM``.
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".inherit": (
        "LAYER_STRATEGIES",
        "count_parameters",
        "inherit",
        "select_layers",
    ),
    ".importance": (
        "CRITERIA",
        "WidthScores",
        "hard_topk_mask",
        "learn_masks",
        "width_scores",
    ),
    ".train": (
        "SAMPLING",
        "RoundResult",
        "batch_losses",
        "evaluate",
        "greedy_decode_speed",
        "recipe",
        "resample_batches",
        "sampling_probabilities",
        "train_on_batches",
    ),
    ".tokenizer": (
        "CompactTokenizer",
        "compact_tokenizer",
        "embedding_share",
        "token_coverage",
        "token_frequencies",
        "tokens_per_byte",
    ),
    ".baselines": (
        "random_init_like",
        "sheared_masks",
        "width_for_params",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
