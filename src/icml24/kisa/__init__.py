"""KISA: a unified keyframe identifier and skill annotator for long-horizon demonstrations (Kou et al., ICML 2024).

A temporal transformer on frozen per-frame image embeddings, trained with a per-frame contrastive loss over a
library of skill texts (with history-aware negatives) and a monotonic progress target, labels every frame
with its skill; keyframes are where the argmax skill changes. Works on any sequence of frame embeddings and any
list of skill strings (skill text embedded by the all-MiniLM-L6-v2 sentence encoder by default); the
frame-wise, goal-image, change-point and UVD baselines share the API.
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".temporal": ("TemporalModule",),
    ".kisa": (
        "KisaConfig",
        "KisaModel",
        "fit_kisa",
    ),
    ".losses": (
        "score_matrix",
        "contrastive_loss",
        "history_contrastive_loss",
        "monotonic_target",
        "kisa_loss",
    ),
    ".decoding": (
        "decode_keyframes",
        "decode_peaks",
        "keyframe_f1",
        "keyframe_mae",
        "false_alarm_rate",
        "number_error",
        "skill_iou",
        "topk_accuracy",
    ),
    ".encoders": (
        "FrozenImageEncoder",
        "HashedTextEncoder",
        "encode_skills",
    ),
    ".io": (
        "read_demos_hdf5",
        "write_demos_hdf5",
    ),
    ".baselines": (
        "fit_framewise",
        "framewise_scores",
        "goal_similarity_keyframes",
        "changepoint_keyframes",
        "uvd_keyframes",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
