"""The claims of "KISA: A Unified Keyframe Identifier and Skill Annotator for Long-Horizon Robotics
Demonstrations" (Kou et al., ICML 2024). The experiments are in ``experiments.py``.

The three claims judge one experiment, ``kisa/tabletop``: one procedural tabletop world per (scale, seed), KISA
and its three ablations trained on it once, the baselines and the unseen compositions measured on the same
models. PAPER scale needs the paper's benchmarks and its LIV backbone, not available offline.
"""

from __future__ import annotations

from typing import Mapping

from ..claims import Claim, Experiment
from ..registry import method

SLUG = "kisa"
F1_MIN = 0.7  # KISA's keyframe F1 (+-2 frames) on held-in test demonstrations is at least this
MARGIN = 0.2  # ... and at least this far above the best baseline
COLLAPSE = 0.15  # removing the temporal module costs at least this much F1
ORDER = 0.1  # ... and at least this much more than removing history negatives or the monotonic term

TABLETOP = Experiment(
    f"{SLUG}/tabletop",
    "experiments:run_tabletop",
    paper_needs=(
        "never:the paper's ManiSkill2 / CALVIN / FrankaKitchen demonstrations (not released) and its LIV backbone "
        "(downloads its weights) are not available offline",
    ),
)


def _holds_keyframes(m: Mapping[str, float]) -> bool:
    return bool(m["kisa_f1"] >= F1_MIN and m["kisa_f1"] - m["best_baseline_f1"] >= MARGIN)


KEYFRAMES = Claim(
    key=f"{SLUG}/keyframes",
    statement=(
        "On held-out demonstrations of the procedural tabletop world (chains of 3-5 of 8 skills with look-alike "
        "reach phases; frozen stand-in image encoder, frozen all-MiniLM-L6-v2 skill text), KISA's keyframe F1 "
        f"within +-2 frames is at least {F1_MIN:g} and at least {MARGIN:g} above the best of four baselines on "
        "the same frame embeddings: frame-wise text similarity (LIV-L analogue, a ridge map into the text "
        "space), goal-image similarity (LIV-I), kernel change points with ruptures given the true number of "
        "segments (KTS) and UVD's goal-distance rule. MAE, number error and skill accuracy are reported."
    ),
    run=TABLETOP,
    holds=_holds_keyframes,
    headline="kisa_f1",
    baseline="best_baseline_f1",
    paper=(
        "main table, keyframe F1 %: KISA 99.7 / 85.2 / 98.7 (ManiSkill2 / CALVIN / Kitchen) vs UVD 40.2 / 36.9 / "
        "64.8, LIV 30.3 / 25.9 / 64.2, KTS 15.7 / 20.2 / 13.8; MAE 0.2 / 11.2 / 0.4 vs UVD 20.3 / 40.6 / 31.1"
    ),
)


def _holds_ablation(m: Mapping[str, float]) -> bool:
    return bool(m["drop_no_temporal"] >= COLLAPSE and m["drop_temporal_minus_others"] >= ORDER)


ABLATION = Claim(
    key=f"{SLUG}/ablation-temporal",
    statement=(
        "The temporal module matters most: on the same test demonstrations, replacing it by a per-frame map "
        f"(same losses, same training) lowers keyframe F1 by at least {COLLAPSE:g}, and by at least {ORDER:g} "
        "more than removing the history negatives (simple contrastive loss) or the monotonic term (alpha = 0). "
        "The costs of those two are reported, not judged: they are within seed noise and far below the "
        "paper's (the figures are in the README)."
    ),
    run=TABLETOP,
    holds=_holds_ablation,
    headline="full_f1",
    baseline="no_temporal_f1",
    paper=(
        "ablation (LIV backbone, ManiSkill2 / CALVIN / Kitchen): full 99.2 / 94.7 / 96.1, "
        "w/o temporal 22.0 / 25.0 / 19.0"
    ),
)


def _holds_unseen(m: Mapping[str, float]) -> bool:
    return bool(m["unseen_f1"] >= m["seen_f1"] and m["unseen_f1"] - m["framewise_unseen_f1"] >= MARGIN)


UNSEEN = Claim(
    key=f"{SLUG}/unseen-compositions",
    statement=(
        "On test chains that each contain an ordered skill transition held out of training (8 of the 56, "
        "compositions never seen in training; training layout), KISA's keyframe F1 stays as high as on held-in "
        f"chains (no lower than its F1 on the held-in test demonstrations of the same run) and at least {MARGIN:g} "
        'above the frame-wise baseline\'s on the same unseen chains. F1 in the shifted layout "b" is reported.'
    ),
    run=TABLETOP,
    holds=_holds_unseen,
    headline="unseen_f1",
    baseline="seen_f1",
    paper="zero-shot L2, unseen compositions (CALVIN): keyframe F1 89.4, against 85.2 on CALVIN's own test split",
    expected=False,
    finding=(
        "Quick scale, seeds 0 / 1 / 2: KISA's keyframe F1 on unseen compositions 0.786 / 0.724 / 0.738 against "
        "0.830 / 0.852 / 0.826 on held-in chains of the same run (a drop of 0.04-0.13) and 0.548 / 0.543 / 0.546 "
        "for the frame-wise baseline on the unseen chains; smoke scale 0.801 / 0.654 / 0.711 against 0.875 / "
        "0.831 / 0.820, frame-wise 0.545 / 0.534 / 0.540. Skill top-1 stays high on them (0.88-0.89 at smoke): "
        "the skills are recognised, but the keyframes at the never-seen transitions are placed less well. F1 "
        "stays above the frame-wise baseline (by 0.12-0.26) but below held-in chains, where the paper's unseen "
        "compositions score above its held-in CALVIN F1; plausibly because our 200 training demonstrations "
        "cover only 48 transitions, far fewer than CALVIN's data. In layout 'b' F1 collapses (quick 0.139 / "
        "0.040 / 0.323): the frozen stand-in image "
        "encoder keeps pixel positions, so a one- or two-pixel shift of the objects moves every embedding "
        "(see experiments.unseen_metrics)."
    ),
)


METHOD = method(SLUG, (KEYFRAMES, ABLATION, UNSEEN))
