"""CREBM: conditional residual energy-based models for multi-step retrosynthesis (Liu et al., ICML 2024,
arXiv 2406.02066).

A planner's routes are reranked by ``base cost + alpha * E(starting materials | target)``, where ``E`` is a
char-level encoder-decoder Transformer pre-trained by MLE on ground-truth routes and fine-tuned with the
Bradley-Terry loss on pairs of the planner's own candidates ranked by a criterion (feasibility, price, steps,
yield). The base planner is Retro*-0 beam search over Neuralsym, as in the official code; the world of real
molecules and datamol templates lives in :mod:`icml24.data.retro_world`.
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    "..data.retro_world": (
        "Route",
        "Stock",
        "Template",
    ),
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
__getattr__, __dir__ = lazy_package(__name__, _EXPORTS)
__all__ = [
    "Route",
    "Stock",
    "Template",
    "HEURISTICS",
    "base_ranking",
    "heuristic_ranking",
    "BenchmarkTask",
    "load_route_benchmark",
    "to_route_benchmark",
    "RankedRoute",
    "cost_criterion",
    "feasibility_criterion",
    "preference_pairs",
    "rerank",
    "steps_criterion",
    "tanimoto",
    "yield_criterion",
    "CHARS",
    "EnergyConfig",
    "EnergyTransformer",
    "TrainConfig",
    "bradley_terry_loss",
    "energies",
    "finetune_energy",
    "pretrain_energy",
    "sequence_scores",
    "Neuralsym",
    "NeuralsymConfig",
    "train_neuralsym",
    "PlannedRoute",
    "propose",
    "retro_star_0",
    "ValueMLP",
    "train_value_mlp",
]

if TYPE_CHECKING:  # the same names, for readers, IDEs and type checkers
    from ..data.retro_world import Route, Stock, Template
    from .baselines import HEURISTICS, base_ranking, heuristic_ranking
    from .benchmark import BenchmarkTask, load_route_benchmark, to_route_benchmark
    from .crebm import (
        RankedRoute,
        cost_criterion,
        feasibility_criterion,
        preference_pairs,
        rerank,
        steps_criterion,
        tanimoto,
        yield_criterion,
    )
    from .energy import (
        CHARS,
        EnergyConfig,
        EnergyTransformer,
        TrainConfig,
        bradley_terry_loss,
        energies,
        finetune_energy,
        pretrain_energy,
        sequence_scores,
    )
    from .onestep import Neuralsym, NeuralsymConfig, train_neuralsym
    from .search import PlannedRoute, ValueMLP, propose, retro_star_0, train_value_mlp
