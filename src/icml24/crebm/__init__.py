"""CREBM: conditional residual energy-based models for multi-step retrosynthesis (Liu et al., ICML 2024,
arXiv 2406.02066).

A planner's routes are reranked by ``base cost + alpha * E(starting materials | target)``, where ``E`` is a
char-level encoder-decoder Transformer pre-trained by MLE on ground-truth routes and fine-tuned with the
Bradley-Terry loss on pairs of the planner's own candidates ranked by a criterion (feasibility, price, steps,
yield). The base planner is Retro*-0 beam search over Neuralsym, as in the official code; the world of real
molecules and datamol templates lives in :mod:`icml24.crebm.world`.
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".world_routes": (
        "Route",
        "Stock",
    ),
    ".world_templates": ("Template",),
    ".baselines": (
        "HEURISTICS",
        "base_ranking",
        "heuristic_ranking",
    ),
    ".benchmark": (
        "BenchmarkTask",
        "load_route_benchmark",
        "to_route_benchmark",
    ),
    ".crebm": (
        "RankedRoute",
        "cost_criterion",
        "feasibility_criterion",
        "preference_pairs",
        "rerank",
        "steps_criterion",
        "tanimoto",
        "yield_criterion",
    ),
    ".energy": (
        "CHARS",
        "EnergyConfig",
        "EnergyTransformer",
        "TrainConfig",
        "bradley_terry_loss",
        "energies",
        "finetune_energy",
        "pretrain_energy",
        "sequence_scores",
    ),
    ".onestep": (
        "Neuralsym",
        "NeuralsymConfig",
        "train_neuralsym",
    ),
    ".search": (
        "PlannedRoute",
        "propose",
        "retro_star_0",
        "ValueMLP",
        "train_value_mlp",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
