"""C3PO: learning from one sentence of verbal feedback without overgeneralizing (Stephan et al., "RLVF: Learning
from Verbal Feedback without Overgeneralization", ICML 2024, arXiv 2402.10893).

A feedback object (domain, effect, programmatic metric and rewrite), the official data pipeline with every model
call a callable (categories, in-scope, near-scope and out-of-scope prompts, baseline and revised answers, the 90/10
split), the C3PO objective (DPO in scope + NLL anchors on the base model's own answers near and out of scope, LoRA
through PEFT, reference = the adapter disabled), per-feedback adapters and their composition, on any Hugging Face
causal LM; the peers (in-context, SCD, SCD + negatives, DPO) share the API.
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".feedback": (
        "Feedback",
        "FeedbackData",
        "build_feedback_data",
        "word_feedback",
    ),
    ".config": ("C3POConfig",),
    ".losses": (
        "anchor_loss",
        "c3po_loss",
        "completion_only_labels",
    ),
    ".adapters": (
        "COMPOSE_MODES",
        "ComposedFeedback",
        "add_lora",
        "save_adapter",
        "compose_adapters",
    ),
    ".c3po": (
        "FeedbackResult",
        "dpo_loss",
        "train_feedback",
        "train_c3po",
        "generate",
        "feedback_rates",
        "sequence_kl",
    ),
    ".baselines": (
        "in_context_prompt",
        "in_context_cot_prompts",
        "train_dpo",
        "train_scd",
        "train_scd_negatives",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
