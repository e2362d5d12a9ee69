"""KISA: a unified keyframe identifier and skill annotator for long-horizon demonstrations (Kou et al., ICML 2024).

A temporal transformer on frozen per-frame image embeddings, trained with a per-frame contrastive loss over a
library of skill texts (with history-aware negatives) and a monotonic progress target, labels every frame
with its skill; keyframes are where the argmax skill changes. Works on any sequence of frame embeddings and any
list of skill strings (skill text embedded by the all-MiniLM-L6-v2 sentence encoder by default); the
frame-wise, goal-image, change-point and UVD baselines share the API.
"""

from typing import TYPE_CHECKING

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".kisa": (
        "TemporalModule",
        "KisaConfig",
        "KisaModel",
        "fit_kisa",
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
__getattr__, __dir__ = lazy_package(__name__, _EXPORTS)
__all__ = [
    "TemporalModule",
    "KisaConfig",
    "KisaModel",
    "fit_kisa",
    "score_matrix",
    "contrastive_loss",
    "history_contrastive_loss",
    "monotonic_target",
    "kisa_loss",
    "decode_keyframes",
    "decode_peaks",
    "keyframe_f1",
    "keyframe_mae",
    "false_alarm_rate",
    "number_error",
    "skill_iou",
    "topk_accuracy",
    "FrozenImageEncoder",
    "HashedTextEncoder",
    "encode_skills",
    "read_demos_hdf5",
    "write_demos_hdf5",
    "fit_framewise",
    "framewise_scores",
    "goal_similarity_keyframes",
    "changepoint_keyframes",
    "uvd_keyframes",
]

if TYPE_CHECKING:  # the same names, for readers, IDEs and type checkers
    from .baselines import (
        changepoint_keyframes,
        fit_framewise,
        framewise_scores,
        goal_similarity_keyframes,
        uvd_keyframes,
    )
    from .decoding import (
        decode_keyframes,
        decode_peaks,
        false_alarm_rate,
        keyframe_f1,
        keyframe_mae,
        number_error,
        skill_iou,
        topk_accuracy,
    )
    from .encoders import FrozenImageEncoder, HashedTextEncoder, encode_skills
    from .io import read_demos_hdf5, write_demos_hdf5
    from .kisa import (
        KisaConfig,
        KisaModel,
        TemporalModule,
        contrastive_loss,
        fit_kisa,
        history_contrastive_loss,
        kisa_loss,
        monotonic_target,
        score_matrix,
    )
