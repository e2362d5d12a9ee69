"""PanGu-pi Pro: the recipe for tiny language models (Tang et al., ICML 2024, arXiv 2402.02791).

From a larger trained Llama-family model a user already has: prune its tokenizer to the pieces the corpus
uses (:func:`compact_tokenizer`), derive a small child by inheriting its layers, channels, heads and FFN
neurons (:func:`inherit`, criteria L1 / L2 / Taylor / learnable mask), train it with the official optimiser
settings (:func:`train_on_batches`, DDP under ``torchrun``), and spend a second round on the batches the model
finds hardest (:func:`resample_batches`). The child is a plain ``transformers.LlamaForCausalLM``.
"""

from .baselines import random_init_like, sheared_masks, width_for_params
from .inherit import (
    CRITERIA,
    LAYER_STRATEGIES,
    WidthScores,
    count_parameters,
    hard_topk_mask,
    inherit,
    learn_masks,
    select_layers,
    width_scores,
)
from .tokenizer import (
    CompactTokenizer,
    compact_tokenizer,
    embedding_share,
    token_coverage,
    token_frequencies,
    tokens_per_byte,
)
from .train import (
    SAMPLING,
    RoundResult,
    batch_losses,
    evaluate,
    greedy_decode_speed,
    recipe,
    resample_batches,
    sampling_probabilities,
    train_on_batches,
)

__all__ = [
    "CRITERIA",
    "LAYER_STRATEGIES",
    "SAMPLING",
    "CompactTokenizer",
    "RoundResult",
    "WidthScores",
    "batch_losses",
    "compact_tokenizer",
    "count_parameters",
    "embedding_share",
    "evaluate",
    "greedy_decode_speed",
    "hard_topk_mask",
    "inherit",
    "learn_masks",
    "random_init_like",
    "recipe",
    "resample_batches",
    "sampling_probabilities",
    "select_layers",
    "sheared_masks",
    "token_coverage",
    "token_frequencies",
    "tokens_per_byte",
    "train_on_batches",
    "width_for_params",
    "width_scores",
]
