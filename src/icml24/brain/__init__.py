"""BRAIn: Bayesian reward-conditioned amortized inference (Pandey et al., ICML 2024, arXiv 2402.02479).

Distils the reward-conditioned posterior ``p(y|x) exp(r(x, y) / beta) / Z(x)`` into a causal LM with the
self-normalised importance-sampling loss ``-sum_i stopgrad(alpha_i) log beta_hat_i`` (target weights with a
self-normalised baseline), on any Hugging Face causal LM; DPO is its special case (two SFT samples, argmax
targets). The un-normalised peers DPG and GDC++, the DPO loss and best-of-n distillation share the API.
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".losses": (
        "ESTIMATORS",
        "TARGETS",
        "brain_loss",
        "brain_dpo_loss",
        "estimator_loss",
        "estimator_weights",
        "target_weights",
        "policy_weights",
        "effective_sample_size",
    ),
    ".brain": (
        "BrainConfig",
        "BrainResult",
        "train_brain",
    ),
    "..nn.decoding": ("sample_responses",),
    ".baselines": (
        "dpg_weights",
        "gdcpp_weights",
        "dpo_loss",
        "best_of_n_loss",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
