"""RED XAI (Biecek & Samek, ICML 2024, arXiv 2402.13914): explanations that *question* a model, not justify it.

One loop on a torch classifier: explain (:mod:`.explain`: :func:`attribute`, Captum), cluster the heatmaps
(:func:`spray`), name the concept (:func:`concept_vector`, :func:`tcav`, scikit-learn probes), correct
(:mod:`.correct`: :func:`p_clarc`, :func:`rrr`, :func:`rr_clarc`, :func:`a_clarc`) and re-measure (:mod:`.measure`:
:func:`shortcut_reliance`, :func:`artifact_flips`, :func:`relevance_mass`, :func:`pixel_flipping`); explore the
Rashomon set of near-equal models (:func:`rashomon`). :func:`question` (:mod:`.loop`) runs every step and writes a
report. ``baselines`` holds accuracy-only validation, random-mask and whole-image RRR, and the clean-retrained
oracle; ``world`` the data with a planted shortcut.
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".nets": ("SmallNet",),
    ".explain": (
        "METHODS",
        "attribute",
        "SprayResult",
        "spray",
        "ConceptVector",
        "concept_vector",
        "tcav",
        "tcav_score",
    ),
    ".correct": (
        "p_clarc",
        "fit",
        "rrr",
        "rr_clarc",
        "a_clarc",
    ),
    ".measure": (
        "predict",
        "accuracy",
        "shortcut_reliance",
        "artifact_flips",
        "relevance_mass",
        "randomization_check",
        "pixel_flipping",
        "rashomon",
    ),
    ".loop": ("question",),
    ".baselines": (
        "accuracy_only",
        "random_mask",
        "random_mask_rrr",
        "whole_image_rrr",
        "clean_oracle",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
