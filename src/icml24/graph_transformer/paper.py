"""The claims of "What Improves the Generalization of Graph Transformers? A Theoretical Dive into the
Self-attention and Positional Encoding" (Li, Wang, Ma, Liu, Zhang & Chen, ICML 2024, arXiv 2406.01977). The
experiments are in ``experiments.py``.

Experiments (each computed once per scale and seed by ``icml24 verify``): ``graph_transformer/attention`` (GT+PE
and GT without PE trained for each core distance, attention and PE recorded over training) is judged by the
pe-finds-core, sparse-attention and attention-mass-to-one claims; sample-complexity has an experiment of its own.
All run on the paper's synthetic data model (known core distance), so they need no data set.
"""

from __future__ import annotations

from typing import Mapping

from ..claims import Claim, Experiment
from ..registry import method

SLUG = "graph_transformer"
TARGET_ERROR = 0.05  # "zero generalization error" read as test error below 5% (experiments.TARGET_ERROR)
AREA_MARGIN = 0.1  # GT+PE's mean error over the label grid is at least 10 points below each peer's
MASS_GAIN = 1.5  # attention on core label-relevant nodes grows at least 1.5x during training ...
MASS_OVER_NOPE = 1.3  # ... and ends at least 1.3x the no-PE model's
ENTROPY_DROP = 0.2  # nats
B_GAP = 1.0  # b at the core distance exceeds every other hop's entry by at least 1
MASS_PAPER = 0.8  # "tends to 1": the level the paper's concentration would reach


# ------------------------------------------------------------------------------------- sample complexity
def _holds_sample(m: Mapping[str, float]) -> bool:
    peers = ("nope", "uniform", "gcn")
    gammas = sorted(k.split("_g")[1] for k in m if k.startswith("pe_area_g"))
    return bool(
        m["pe_err_max_labels"] < TARGET_ERROR
        and all(m["pe_labels_total"] < m[f"{p}_labels_total"] for p in peers)
        and all(m[f"pe_area_g{g}"] + AREA_MARGIN <= m[f"{p}_area_g{g}"] for p in peers for g in gammas)
    )


SAMPLE_COMPLEXITY = Claim(
    key=f"{SLUG}/sample-complexity",
    statement=(
        "On the paper's data model (orthonormal patterns, labels by the majority at core distance 2, Z = 3 hops), "
        f"the shallow GT with trainable relative PE reaches test error below {TARGET_ERROR:.0%} with the most labels "
        "at every gamma_d, needs fewer labelled nodes to get there (summed over gamma_d) than the same model "
        "without PE, than its uniform-attention (GCN-style) ablation and than PyG's GCN trained on the same labels, "
        f"and its error averaged over the label grid is at least {AREA_MARGIN:.0%} below each of theirs."
    ),
    run="experiments:run_sample_complexity",
    holds=_holds_sample,
    headline="pe_labels_total",
    baseline="gcn_labels_total",
    paper="Section 5 / Fig. 2-4: sample complexity GT+PE < GT without PE < GCN-style aggregation",
)


# --------------------------------------------------------------------------------------- attention and PE
ATTENTION = Experiment(f"{SLUG}/attention", "experiments:run_attention")


def _holds_pe(m: Mapping[str, float]) -> bool:
    zs = [int(k.split("_z")[1]) for k in m if k.startswith("argmax_b_z")]
    return bool(
        zs
        and all(m[f"argmax_b_z{z}"] == z and m[f"b_gap_z{z}"] >= B_GAP for z in zs)
        and m["pe_err_max"] < m["nope_err_min"]
    )


PE_CORE = Claim(
    key=f"{SLUG}/pe-finds-core",
    statement=(
        "After training, the largest entry of the learned relative PE b (over hops 1..Z) sits at the core "
        f"distance z_m, by at least {B_GAP:g} over every other hop, for every z_m tried; and the model with PE has "
        "lower test error than the same model without PE at every z_m."
    ),
    run=ATTENTION,
    holds=_holds_pe,
    headline="argmax_b_hits",
    baseline="n_core",
    paper="Theorem 4.3 / Fig. 5: b_{z_m} grows faster than other entries of b",
)


def _holds_sparse(m: Mapping[str, float]) -> bool:
    return bool(
        m["mass_gain_min"] >= MASS_GAIN
        and m["mass_over_nope_min"] >= MASS_OVER_NOPE
        and m["entropy_drop_min"] >= ENTROPY_DROP
    )


SPARSE = Claim(
    key=f"{SLUG}/sparse-attention",
    statement=(
        "During training of GT+PE the attention mass on the label-relevant discriminative nodes of the core "
        f"neighbourhood grows at least {MASS_GAIN:g}x, ends at least {MASS_OVER_NOPE:g}x the no-PE model's, and "
        f"the attention entropy falls by at least {ENTROPY_DROP:g} nats, for every core distance tried."
    ),
    run=ATTENTION,
    holds=_holds_sparse,
    headline="mass_gain_min",
    baseline="mass_over_nope_min",
    paper="Theorem 4.3 / Fig. 5: attention concentrates on core label-relevant nodes (sparse attention map)",
)


def _holds_mass_one(m: Mapping[str, float]) -> bool:
    return bool(m["core_mass_end_min"] >= MASS_PAPER)


MASS_TO_ONE = Claim(
    key=f"{SLUG}/attention-mass-to-one",
    statement=(
        f"The attention mass on core label-relevant nodes ends above {MASS_PAPER:g} (tends to 1) for every core "
        "distance tried."
    ),
    run=ATTENTION,
    holds=_holds_mass_one,
    headline="core_mass_end_min",
    baseline="n_core",
    paper="Theorem 4.3: the total attention on core label-relevant nodes tends to 1",
    expected=False,
    finding=(
        "Does not reproduce at our budget: with the hinge loss the training loss reaches 0 once b alone has "
        "moved the attention to the core hop (b gap 2.5-3.6 over the other hops), after which SGD no longer moves, "
        "so the content part of the attention does not concentrate further. At quick scale the end mass is "
        "0.34 / 0.24 / 0.24 (z_m = 1 / 2 / 3, seed 0), 0.31 / 0.21 / 0.21 (seed 1), 0.34 / 0.23 / 0.20 (seed 2), "
        "up from 0.03-0.11 at the start; the concentration is real (sparse-attention holds) but ends far from 1."
    ),
)

METHOD = method(SLUG, (SAMPLE_COMPLEXITY, PE_CORE, SPARSE, MASS_TO_ONE))
