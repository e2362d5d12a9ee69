"""Every public callable of icml24.kisa refuses bad input with a one-line InputError naming the argument, and
leaves the objects passed in (modules, tensors, arrays) unchanged."""

import os

import numpy as np
import pytest
import torch

import icml24.kisa as kisa
from icml24.kisa import (
    FrozenImageEncoder,
    HashedTextEncoder,
    KisaConfig,
    TemporalModule,
    changepoint_keyframes,
    contrastive_loss,
    decode_keyframes,
    decode_peaks,
    encode_skills,
    false_alarm_rate,
    fit_framewise,
    fit_kisa,
    framewise_scores,
    goal_similarity_keyframes,
    history_contrastive_loss,
    keyframe_f1,
    keyframe_mae,
    kisa_loss,
    monotonic_target,
    number_error,
    read_demos_hdf5,
    score_matrix,
    skill_iou,
    topk_accuracy,
    uvd_keyframes,
    write_demos_hdf5,
)
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN = float("nan")
G = torch.Generator().manual_seed(0)
U = torch.randn(2, 5, 8, generator=G)  # video features
S = torch.randn(3, 8, generator=G)  # skill embeddings
Y = torch.randint(0, 3, (2, 5), generator=G)
Y_OUT = Y.clone()
Y_OUT[0, 0] = 3  # a label outside the library
TGT = torch.rand(2, 5, generator=G)
U_NAN = U.clone()
U_NAN[0, 0, 0] = NAN
S_EMPTY = torch.zeros(0, 8)
X = torch.randn(6, 4, generator=G)  # one video of frame embeddings
X2 = torch.randn(9, 4, generator=G)  # another, longer
SC = np.random.default_rng(0).random((6, 3))
FR = np.zeros((3, 24, 24, 3), np.uint8)
ENC = FrozenImageEncoder(np.zeros((4, 24, 24, 3), np.uint8), dim=8)
MOD = TemporalModule(4, 8, d_model=8, nhead=2, dim_feedforward=16)
SK = torch.randn(3, 8, generator=G)
LAB = [np.array([0, 0, 1, 1, 2, 2])]
KEYS = [[1, 3, 5]]
W = torch.randn(5, 8, dtype=torch.float64, generator=G)
CFG = KisaConfig(d_model=8, nhead=2, dim_feedforward=16, steps=1, batch_size=1)
H5 = "/tmp/__kisa_bad_input__.h5"  # never written: every call below is refused first


def fit(**kw):
    args = dict(frames=[X], labels=LAB, keyframes=KEYS, skill_embeddings=SK, config=CFG)
    args.update(kw)
    return fit_kisa(args.pop("frames"), args.pop("labels"), args.pop("keyframes"), args.pop("skill_embeddings"), **args)


MODEL = fit()  # a trained KisaModel (one step)


CASES = [
    # ------------------------------------------------------------------------------------- TemporalModule
    bad("TemporalModule", "frame_dim", lambda: TemporalModule(0, 8), kind="range"),
    bad("TemporalModule", "d_model", lambda: TemporalModule(4, 8, d_model=6, nhead=4), kind="heads"),
    bad("TemporalModule", "causal", lambda: TemporalModule(4, 8, d_model=8, nhead=2, causal="future"), kind="name"),
    bad("TemporalModule", "dropout", lambda: TemporalModule(4, 8, d_model=8, nhead=2, dropout=1.5), kind="range"),
    bad("TemporalModule", "temporal", lambda: TemporalModule(4, 8, d_model=8, nhead=2, temporal="no"), kind="type"),
    bad("TemporalModule.forward", "frames", lambda: MOD(torch.randn(1, 5, 3)), MOD, kind="dim"),
    bad("TemporalModule.forward", "padding_mask", lambda: MOD(torch.randn(1, 5, 4), torch.zeros(1, 4).bool()), MOD),
    bad("TemporalModule.forward", "frames", lambda: MOD(torch.full((1, 5, 4), NAN)), MOD, kind="nan"),
    bad("TemporalModule.forward", "frames", lambda: MOD(torch.zeros(1, 0, 4)), MOD, kind="empty"),
    bad("TemporalModule.forward", "frames", lambda: MOD(None), MOD, kind="none"),
    # ------------------------------------------------------------------------------------------- fit_kisa
    bad("fit_kisa", "labels", lambda: fit(labels=[np.array([0, 0, 1])]), X, MOD, kind="length"),
    bad("fit_kisa", "labels", lambda: fit(labels=[np.array([0, 0, 1, 1, 2, 5])]), X, kind="outside"),
    bad("fit_kisa", "skill_embeddings", lambda: fit(skill_embeddings=torch.zeros(0, 8)), X, kind="empty"),
    bad("fit_kisa", "alpha", lambda: fit(config=KisaConfig(alpha=1.5)), X, kind="range"),
    bad("fit_kisa", "frames", lambda: fit(frames=[X, X2], labels=LAB * 2, keyframes=KEYS * 2), X, kind="mixed"),
    bad("fit_kisa", "keyframes", lambda: fit(keyframes=[[1, 3]]), X, kind="end"),
    bad("fit_kisa", "config", lambda: fit(config={"steps": 1}), X, kind="type"),
    bad("fit_kisa", "pad", lambda: fit(pad=1), X, kind="type"),
    bad("fit_kisa", "frames", lambda: fit(frames=None), kind="none"),
    # KisaConfig checks every field when it is made, not when it is first used
    bad("KisaConfig", "alpha", lambda: KisaConfig(alpha=-0.1), kind="range"),
    bad("KisaConfig", "negatives", lambda: KisaConfig(negatives="hard"), kind="name"),
    bad("KisaConfig.replace", "lr", lambda: CFG.replace(lr=0.0), CFG, kind="range"),
    bad("KisaConfig.replace", "foo", lambda: CFG.replace(foo=1), CFG, kind="unknown-field"),
    bad("KisaConfig", "steps", lambda: KisaConfig(steps=-1), kind="range"),
    bad("KisaConfig", "tau", lambda: KisaConfig(tau=NAN), kind="nan"),
    bad("KisaConfig", "nhead", lambda: KisaConfig(nhead=0), kind="zero"),
    bad("KisaConfig", "causal", lambda: KisaConfig(causal="future"), kind="name"),
    bad("KisaConfig", "d_model", lambda: KisaConfig(d_model=8, nhead=3), kind="heads"),
    bad("KisaConfig", "temporal", lambda: KisaConfig(temporal="no"), kind="type"),
    bad("KisaConfig", "seed", lambda: KisaConfig(seed=None), kind="none"),
    bad("KisaConfig", "lr", lambda: KisaConfig(lr=float("inf")), kind="inf"),
    # ------------------------------------------------------------------------------------------ KisaModel
    bad("KisaModel.scores", "pad", lambda: MODEL.scores([X], pad=1), MODEL, kind="type"),
    bad("KisaModel.scores", "frames", lambda: MODEL.scores([torch.randn(3, 5)]), MODEL, kind="dim"),
    bad("KisaModel.scores", "frames", lambda: MODEL.scores(None), MODEL, kind="none"),
    # ----------------------------------------------------------------------------------------- score_matrix
    bad("score_matrix", "video_features", lambda: score_matrix(U_NAN, S), U_NAN, kind="nan"),
    bad("score_matrix", "skill_embeddings", lambda: score_matrix(U, S_EMPTY), kind="empty"),
    bad("score_matrix", "video_features", lambda: score_matrix(torch.randn(2, 5, 7), S), kind="dim"),
    bad("score_matrix", "video_features", lambda: score_matrix(U.numpy(), S), kind="type"),
    bad("score_matrix", "video_features", lambda: score_matrix(torch.randn(8), S), kind="ndim"),
    bad("score_matrix", "skill_embeddings", lambda: score_matrix(U, None), kind="none"),
    # ------------------------------------------------------------------------------------ contrastive_loss
    bad("contrastive_loss", "labels", lambda: contrastive_loss(U, S, Y_OUT), Y_OUT, kind="outside"),
    bad("contrastive_loss", "labels", lambda: contrastive_loss(U, S, Y[:, :4]), kind="length"),
    bad("contrastive_loss", "skill_embeddings", lambda: contrastive_loss(U, S_EMPTY, Y), kind="empty"),
    bad("contrastive_loss", "tau", lambda: contrastive_loss(U, S, Y, tau=0.0), kind="range"),
    bad("contrastive_loss", "skill_embeddings", lambda: contrastive_loss(U, S[:1], Y * 0), kind="one"),
    bad("contrastive_loss", "labels", lambda: contrastive_loss(U, S, Y.float()), kind="dtype"),
    # ---------------------------------------------------------------------------- history_contrastive_loss
    bad("history_contrastive_loss", "labels", lambda: history_contrastive_loss(U, S, Y_OUT), kind="outside"),
    bad("history_contrastive_loss", "padding_mask", lambda: history_contrastive_loss(U, S, Y, Y), kind="dtype"),
    bad("history_contrastive_loss", "generator", lambda: history_contrastive_loss(U, S, Y, generator=0), kind="type"),
    bad("history_contrastive_loss", "video_features", lambda: history_contrastive_loss(U_NAN, S, Y), kind="nan"),
    bad("history_contrastive_loss", "tau", lambda: history_contrastive_loss(U, S, Y, tau=-1.0), kind="range"),
    # ------------------------------------------------------------------------------------------- kisa_loss
    bad("kisa_loss", "alpha", lambda: kisa_loss(U, S, Y, TGT, alpha=1.5), kind="range"),
    bad("kisa_loss", "alpha", lambda: kisa_loss(U, S, Y, TGT, alpha=-0.1), kind="negative"),
    bad("kisa_loss", "negatives", lambda: kisa_loss(U, S, Y, TGT, negatives="hard"), kind="name"),
    bad("kisa_loss", "target", lambda: kisa_loss(U, S, Y, TGT[:, :3]), kind="shape"),
    bad("kisa_loss", "labels", lambda: kisa_loss(U, S, Y_OUT, TGT), kind="outside"),
    bad("kisa_loss", "generator", lambda: kisa_loss(U, S, Y, TGT, generator=3), kind="type-simple"),
    bad("kisa_loss", "tau", lambda: kisa_loss(U, S, Y, TGT, tau=0.0), kind="range"),
    bad("kisa_loss", "target", lambda: kisa_loss(U, S, Y, None, alpha=0.0), kind="none-alpha0"),
    bad("kisa_loss", "target", lambda: kisa_loss(U, S, Y, torch.full((2, 5), NAN)), kind="nan"),
    # ------------------------------------------------------------------------------------ monotonic_target
    bad("monotonic_target", "keyframes", lambda: monotonic_target(X, [1, 3]), X, kind="end"),
    bad("monotonic_target", "keyframes", lambda: monotonic_target(X, [3, 1, 5]), kind="order"),
    bad("monotonic_target", "keyframes", lambda: monotonic_target(X, []), kind="empty"),
    bad("monotonic_target", "frame_embeddings", lambda: monotonic_target(X[0], [0]), kind="ndim"),
    bad("monotonic_target", "eps", lambda: monotonic_target(X, [5], eps=-1.0), kind="range"),
    bad("monotonic_target", "released_split", lambda: monotonic_target(X, [5], released_split=1), kind="type"),
    bad("monotonic_target", "keyframes", lambda: monotonic_target(X, None), kind="none"),
    # ------------------------------------------------------------------------------------ decode_keyframes
    bad("decode_keyframes", "scores", lambda: decode_keyframes(SC[0]), kind="ndim"),
    bad("decode_keyframes", "goal", lambda: decode_keyframes(SC, goal=6), kind="range"),
    bad("decode_keyframes", "goal_label", lambda: decode_keyframes(SC, goal_label=3), kind="range"),
    bad("decode_keyframes", "scores", lambda: decode_keyframes(np.full((3, 2), NAN)), kind="nan"),
    bad("decode_keyframes", "scores", lambda: decode_keyframes(np.zeros((0, 2))), kind="empty"),
    # ---------------------------------------------------------------------------------------- decode_peaks
    bad("decode_peaks", "min_distance", lambda: decode_peaks(SC, 0), kind="range"),
    bad("decode_peaks", "scores", lambda: decode_peaks(SC[0]), kind="ndim"),
    bad("decode_peaks", "goal", lambda: decode_peaks(SC, goal=-1), kind="range"),
    bad("decode_peaks", "goal_label", lambda: decode_peaks(SC, goal_label=-1), kind="range"),
    bad("decode_peaks", "scores", lambda: decode_peaks("scores"), kind="type"),
    # ------------------------------------------------------------------------------------------- metrics
    bad("keyframe_f1", "true", lambda: keyframe_f1([1], []), kind="empty"),
    bad("keyframe_f1", "tolerance", lambda: keyframe_f1([1], [1], tolerance=-1), kind="range"),
    bad("keyframe_f1", "predicted", lambda: keyframe_f1([1.5], [1]), kind="dtype"),
    bad("keyframe_f1", "predicted", lambda: keyframe_f1([[1]], [1]), kind="ndim"),
    bad("keyframe_f1", "true", lambda: keyframe_f1([1], "3"), kind="type"),
    bad("keyframe_f1", "predicted", lambda: keyframe_f1([-3], [1]), kind="negative"),
    bad("keyframe_f1", "predicted", lambda: keyframe_f1([5, 1], [1, 5]), kind="order"),
    bad("keyframe_f1", "true", lambda: keyframe_f1([1], [1, 1]), kind="dupes"),
    bad("keyframe_mae", "length", lambda: keyframe_mae([1], [1], 0), kind="range"),
    bad("keyframe_mae", "true", lambda: keyframe_mae([1], [], 5), kind="empty"),
    bad("keyframe_mae", "predicted", lambda: keyframe_mae([0.5], [1], 5), kind="dtype"),
    bad("keyframe_mae", "length", lambda: keyframe_mae([1], [1], 2.5), kind="type"),
    bad("keyframe_mae", "predicted", lambda: keyframe_mae([[1]], [1], 5), kind="ndim"),
    bad("keyframe_mae", "predicted", lambda: keyframe_mae([50], [1], 5), kind="beyond-length"),
    bad("keyframe_mae", "true", lambda: keyframe_mae([1], [50], 5), kind="beyond-length"),
    bad("keyframe_mae", "predicted", lambda: keyframe_mae([4, 1], [1, 4], 5), kind="order"),
    bad("false_alarm_rate", "length", lambda: false_alarm_rate([1], [1, 2], 2), kind="range"),
    bad("false_alarm_rate", "tolerance", lambda: false_alarm_rate([1], [1], 5, tolerance=-2), kind="range"),
    bad("false_alarm_rate", "true", lambda: false_alarm_rate([1], [], 5), kind="empty"),
    bad("false_alarm_rate", "predicted", lambda: false_alarm_rate([1.2], [1], 5), kind="dtype"),
    bad("false_alarm_rate", "length", lambda: false_alarm_rate([1], [1], None), kind="none"),
    bad("false_alarm_rate", "predicted", lambda: false_alarm_rate([50], [1], 5), kind="beyond-length"),
    bad("number_error", "true", lambda: number_error([1], []), kind="empty"),
    bad("number_error", "predicted", lambda: number_error([0.5], [1]), kind="dtype"),
    bad("number_error", "predicted", lambda: number_error([[1]], [1]), kind="ndim"),
    bad("number_error", "true", lambda: number_error([1], [[1]]), kind="ndim"),
    bad("number_error", "true", lambda: number_error([1], ["a"]), kind="type"),
    bad("skill_iou", "true_labels", lambda: skill_iou([0, 1], [0, 1, 1]), kind="length"),
    bad("skill_iou", "predicted_labels", lambda: skill_iou([], [0]), kind="empty"),
    bad("skill_iou", "predicted_labels", lambda: skill_iou([0.5], [0]), kind="dtype"),
    bad("skill_iou", "true_labels", lambda: skill_iou([0], [[0]]), kind="ndim"),
    bad("skill_iou", "true_labels", lambda: skill_iou([0], []), kind="empty"),
    bad("skill_iou", "predicted_labels", lambda: skill_iou([-1], [0]), kind="negative"),
    bad("topk_accuracy", "k", lambda: topk_accuracy(SC, [0] * 6, k=4), kind="range"),
    bad("topk_accuracy", "true_labels", lambda: topk_accuracy(SC, [0] * 5), kind="length"),
    bad("topk_accuracy", "scores", lambda: topk_accuracy(SC[0], [0]), kind="ndim"),
    bad("topk_accuracy", "k", lambda: topk_accuracy(SC, [0] * 6, k=0), kind="zero"),
    bad("topk_accuracy", "scores", lambda: topk_accuracy(np.full((6, 3), NAN), [0] * 6), kind="nan"),
    bad("topk_accuracy", "true_labels", lambda: topk_accuracy(SC, [3] * 6), kind="outside"),
    bad("topk_accuracy", "true_labels", lambda: topk_accuracy(SC, [-1] * 6), kind="negative"),
    # ------------------------------------------------------------------------------------------ encoders
    bad("FrozenImageEncoder", "fit_frames", lambda: FrozenImageEncoder(FR.astype(float)), FR, kind="dtype"),
    bad("FrozenImageEncoder", "fit_frames", lambda: FrozenImageEncoder(FR[..., :2]), kind="shape"),
    bad("FrozenImageEncoder", "dim", lambda: FrozenImageEncoder(FR, dim=0), kind="range"),
    bad("FrozenImageEncoder", "seed", lambda: FrozenImageEncoder(FR, seed=-1), kind="range"),
    bad("FrozenImageEncoder", "fit_frames", lambda: FrozenImageEncoder([1, 2]), kind="type"),
    bad("FrozenImageEncoder.encode", "frames", lambda: ENC.encode(np.zeros((0, 24, 24, 3), np.uint8)), kind="empty"),
    bad("FrozenImageEncoder", "fit_frames", lambda: FrozenImageEncoder(FR[:1]), FR, kind="one-frame"),
    bad("FrozenImageEncoder", "fit_frames", lambda: FrozenImageEncoder(np.zeros((2, 1, 1, 3), np.uint8)), kind="tiny"),
    bad("FrozenImageEncoder.encode", "frames", lambda: ENC.encode(np.zeros((2, 1, 1, 3), np.uint8)), ENC, kind="tiny"),
    bad("FrozenImageEncoder.encode", "frames", lambda: ENC.encode(np.zeros((2, 16, 16, 3), np.uint8)), kind="size"),
    bad("HashedTextEncoder", "dim", lambda: HashedTextEncoder(0), kind="range"),
    bad("HashedTextEncoder", "dim", lambda: HashedTextEncoder(2.5), kind="type"),
    bad("HashedTextEncoder", "dim", lambda: HashedTextEncoder(None), kind="none"),
    bad("HashedTextEncoder", "dim", lambda: HashedTextEncoder(-3), kind="negative"),
    bad("HashedTextEncoder", "dim", lambda: HashedTextEncoder("8"), kind="str"),
    bad("HashedTextEncoder.encode", "sentences", lambda: HashedTextEncoder().encode("open the drawer"), kind="str"),
    bad("HashedTextEncoder.encode", "sentences", lambda: HashedTextEncoder().encode(None), kind="none"),
    bad("HashedTextEncoder.encode", "sentences", lambda: HashedTextEncoder().encode([1, 2]), kind="type"),
    bad("HashedTextEncoder.encode", "sentences", lambda: HashedTextEncoder().encode(s for s in "ab"), kind="iterator"),
    bad("encode_skills", "skills", lambda: encode_skills([], HashedTextEncoder()), kind="empty"),
    bad("encode_skills", "skills", lambda: encode_skills("open the drawer", HashedTextEncoder()), kind="str"),
    bad("encode_skills", "skills", lambda: encode_skills(["a", "a"], HashedTextEncoder()), kind="dupes"),
    bad("encode_skills", "skills", lambda: encode_skills(["a", ""], HashedTextEncoder()), kind="blank"),
    bad("encode_skills", "encoder", lambda: encode_skills(["a", "b"], 3), kind="type"),
    bad("encode_skills", "skills", lambda: encode_skills([1, 2], HashedTextEncoder()), kind="entries"),
    bad("encode_skills", "encoder", lambda: encode_skills(["a", "b"], lambda s: np.ones((3, 4))), kind="shape"),
    bad("encode_skills", "encoder", lambda: encode_skills(["a", "b"], lambda s: np.full((2, 4), NAN)), kind="nan"),
    bad("encode_skills", "encoder", lambda: encode_skills(["a", "b"], lambda s: [[1, 2], [3]]), kind="ragged"),
    bad("encode_skills", "encoder", lambda: encode_skills(["a", "b"], lambda s: np.array(["x", "y"])), kind="dtype"),
    # ------------------------------------------------------------------------------------------------ io
    bad("read_demos_hdf5", "path", lambda: read_demos_hdf5("/nonexistent/demos.h5"), kind="missing"),
    bad("read_demos_hdf5", "path", lambda: read_demos_hdf5("/"), kind="folder"),
    bad("read_demos_hdf5", "path", lambda: read_demos_hdf5(""), kind="empty"),
    bad("read_demos_hdf5", "path", lambda: read_demos_hdf5("/nonexistent"), kind="nofile"),
    bad("read_demos_hdf5", "path", lambda: read_demos_hdf5("/tmp/__no_such_kisa_file__.h5"), kind="absent"),
    bad("read_demos_hdf5", "path", lambda: read_demos_hdf5(None), kind="none"),
    bad("read_demos_hdf5", "path", lambda: read_demos_hdf5(3), kind="type"),
    bad("write_demos_hdf5", "frames", lambda: write_demos_hdf5("/tmp/x.h5", [], [], []), kind="empty"),
    bad("write_demos_hdf5", "frames", lambda: write_demos_hdf5("/tmp/x.h5", [FR.astype(float)], [[0] * 3], [[2]])),
    bad("write_demos_hdf5", "labels", lambda: write_demos_hdf5("/tmp/x.h5", [FR], [[0, 0]], [[2]]), kind="length"),
    bad("write_demos_hdf5", "keyframes", lambda: write_demos_hdf5("/tmp/x.h5", [FR], [[0] * 3], [[7]]), kind="range"),
    bad("write_demos_hdf5", "captions", lambda: write_demos_hdf5("/tmp/x.h5", [FR], [[0] * 3], [[2]], [["a"]])),
    bad("write_demos_hdf5", "captions", lambda: write_demos_hdf5(H5, [FR], [[0] * 3], [[2]], ["abc"]), kind="str"),
    bad("write_demos_hdf5", "captions", lambda: write_demos_hdf5(H5, [FR], [[0] * 3], [[2]], [[1, 2, 3]]), kind="type"),
    bad("write_demos_hdf5", "captions", lambda: write_demos_hdf5(H5, [FR], [[0] * 3], [[2]], [None]), kind="none"),
    bad("write_demos_hdf5", "path", lambda: write_demos_hdf5(None, [FR], [[0] * 3], [[2]]), kind="none"),
    bad("write_demos_hdf5", "path", lambda: write_demos_hdf5("/tmp", [FR], [[0] * 3], [[2]]), kind="folder"),
    bad("write_demos_hdf5", "path", lambda: write_demos_hdf5(f"{__file__}/x.h5", [FR], [[0] * 3], [[2]]), kind="nodir"),
    bad("write_demos_hdf5", "labels", lambda: write_demos_hdf5(H5, [FR], None, [[2]]), kind="none"),
    bad("write_demos_hdf5", "keyframes", lambda: write_demos_hdf5(H5, [FR], [[0] * 3], None), kind="none"),
    bad("write_demos_hdf5", "labels", lambda: write_demos_hdf5(H5, [FR], [[-1] * 3], [[2]]), kind="negative"),
    bad("write_demos_hdf5", "keyframes", lambda: write_demos_hdf5(H5, [FR], [[0] * 3], [[2, 1]]), kind="order"),
    bad("write_demos_hdf5", "gtscores", lambda: write_demos_hdf5(H5, [FR], [[0] * 3], [[2]], None, [["a"] * 3])),
    bad("write_demos_hdf5", "frames", lambda: write_demos_hdf5(H5, "abc", [[0] * 3], [[2]]), kind="str"),
    # ----------------------------------------------------------------------------------------- baselines
    bad("fit_framewise", "ridge", lambda: fit_framewise([X], LAB, SK, ridge=0.0), kind="range"),
    bad("fit_framewise", "labels", lambda: fit_framewise([X], [np.array([0, 5, 0, 0, 0, 0])], SK), kind="outside"),
    bad("fit_framewise", "skill_embeddings", lambda: fit_framewise([X], LAB, torch.zeros(0, 8)), kind="empty"),
    bad("fit_framewise", "frames", lambda: fit_framewise([X, X2], LAB * 2, SK), kind="mixed"),
    bad("fit_framewise", "labels", lambda: fit_framewise([X], [np.array([0, 1])], SK), kind="length"),
    bad("fit_framewise", "pad", lambda: fit_framewise([X], LAB, SK, pad=1), X, kind="type"),
    bad("framewise_scores", "mapping", lambda: framewise_scores(X, SK, W[:3]), W, kind="shape"),
    bad("framewise_scores", "frames", lambda: framewise_scores(X.numpy(), SK, W), kind="type"),
    bad("framewise_scores", "frames", lambda: framewise_scores(torch.full((3, 4), NAN), SK, W), kind="nan"),
    bad("framewise_scores", "skill_embeddings", lambda: framewise_scores(X, SK[0], W), kind="ndim"),
    bad("framewise_scores", "mapping", lambda: framewise_scores(X, SK, None), kind="none"),
    bad("goal_similarity_keyframes", "min_distance", lambda: goal_similarity_keyframes(X, 0), kind="range"),
    bad("goal_similarity_keyframes", "frames", lambda: goal_similarity_keyframes(X[0]), kind="ndim"),
    bad("goal_similarity_keyframes", "frames", lambda: goal_similarity_keyframes(X.numpy()), kind="type"),
    bad("goal_similarity_keyframes", "frames", lambda: goal_similarity_keyframes(torch.full((3, 2), NAN)), kind="nan"),
    bad("goal_similarity_keyframes", "frames", lambda: goal_similarity_keyframes(torch.zeros(0, 2)), kind="empty"),
    bad("changepoint_keyframes", "n_segments", lambda: changepoint_keyframes(X, 0), kind="range"),
    bad("changepoint_keyframes", "n_segments", lambda: changepoint_keyframes(X, 9), kind="too-many"),
    bad("changepoint_keyframes", "kernel", lambda: changepoint_keyframes(X, 2, kernel="poly"), kind="name"),
    bad("changepoint_keyframes", "min_size", lambda: changepoint_keyframes(X, 2, min_size=0), kind="range"),
    bad("changepoint_keyframes", "frames", lambda: changepoint_keyframes(X.numpy(), 2), kind="type"),
    bad("uvd_keyframes", "min_interval", lambda: uvd_keyframes(X, 0), kind="range"),
    bad("uvd_keyframes", "tol", lambda: uvd_keyframes(X, tol=-1.0), kind="range"),
    bad("uvd_keyframes", "frames", lambda: uvd_keyframes(X[0]), kind="ndim"),
    bad("uvd_keyframes", "frames", lambda: uvd_keyframes([[0.0]]), kind="type"),
    bad("uvd_keyframes", "tol", lambda: uvd_keyframes(X, tol=NAN), kind="nan"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_refusals_write_nothing():
    assert not os.path.exists(H5) and not os.path.exists(H5 + ".tmp") and not os.path.exists("/tmp.tmp")


def test_every_public_callable_is_covered():
    assert coverage_gaps(kisa, CASES, exempt={"KisaModel": "plain record of a trained model and its losses"}) == {}
