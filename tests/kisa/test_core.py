"""Unit and property tests of icml24.kisa: metrics on hand-worked sequences, decoding, the monotonic target,
the losses against from-scratch formulas, the temporal module's masks, the world, the HDF5 round trip."""

import gc
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from icml24.kisa import (
    HashedTextEncoder,
    KisaConfig,
    TemporalModule,
    contrastive_loss,
    decode_keyframes,
    decode_peaks,
    encode_skills,
    false_alarm_rate,
    fit_kisa,
    history_contrastive_loss,
    keyframe_f1,
    keyframe_mae,
    kisa_loss,
    monotonic_target,
    number_error,
    read_demos_hdf5,
    skill_iou,
    topk_accuracy,
    write_demos_hdf5,
)
from icml24.kisa.baselines import changepoint_keyframes, uvd_keyframes
from icml24.kisa.temporal import position_embedding
from icml24.kisa.world import SKILLS, make_demos, transitions


# ------------------------------------------------------------------------------------------------- metrics
def test_f1_tolerance_edges():
    assert keyframe_f1([12], [10]) == (1.0, 1.0, 1.0)  # 2 frames off: inside
    assert keyframe_f1([13], [10]) == (0.0, 0.0, 0.0)  # 3 frames off: outside
    assert keyframe_f1([8, 13], [10]) == pytest.approx((2 * 0.5 / 1.5, 0.5, 1.0))
    assert keyframe_f1([13], [10], tolerance=3)[0] == 1.0
    # two predictions near one keyframe are both true positives, and recall is TP / (TP + FN), as released
    assert keyframe_f1([9, 10], [10, 30]) == pytest.approx((0.8, 1.0, 2 / 3))


def test_no_predicted_change_and_nan_mae():
    assert keyframe_f1([], [5, 9]) == (0.0, 0.0, 0.0)
    assert keyframe_mae([], [5, 9], length=10) == 10.0  # the released NaN -> T replacement
    assert number_error([], [5, 9]) == 1.0
    assert false_alarm_rate([], [5, 9], length=10) == pytest.approx(2 / 8)


def test_mae_pairs_and_counts():
    assert keyframe_mae([4, 9], [5, 9], 10) == 0.5
    assert keyframe_mae([9], [5, 9], 10) == 2.0  # all pairs when the counts differ
    assert keyframe_mae([1, 5, 9], [5, 9], 10) == pytest.approx((4 + 8 + 0 + 4 + 4 + 0) / 6)
    assert number_error([1, 5, 9], [5, 9]) == 0.5
    assert false_alarm_rate([1, 5, 9], [5, 9], 10) == pytest.approx(1 / 8)


def test_skill_iou_and_topk():
    assert skill_iou([0, 0, 1, 1], [0, 0, 1, 1]) == 1.0
    assert skill_iou([0, 0, 0, 1], [0, 0, 1, 1]) == pytest.approx((2 / 3 + 1 / 2) / 2)
    s = np.array([[0.9, 0.1, 0.0], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6]])
    assert topk_accuracy(s, [0, 2, 2], 1) == pytest.approx(2 / 3)
    assert topk_accuracy(s, [0, 2, 2], 2) == 1.0


# ------------------------------------------------------------------------------------------------- decoding
@given(st.lists(st.integers(2, 12), min_size=1, max_size=6), st.integers(2, 6))
def test_decoder_with_perfect_scores_recovers_keyframes(lengths, k):
    labels = np.concatenate([np.full(n, i % k) for i, n in enumerate(lengths)])
    scores = np.eye(k)[labels]
    true = np.cumsum(lengths) - 1
    if k == 2 or len(lengths) == 1:
        pass
    y, keys = decode_keyframes(scores, goal_label=int(labels[-1]))
    assert (y == labels).all()
    assert keys.tolist() == true.tolist()
    assert keyframe_f1(keys, true) == (1.0, 1.0, 1.0)


def test_goal_rule_as_released():
    scores = np.eye(2)[[0, 0, 1, 1]]
    assert decode_keyframes(scores, goal_label=1)[1].tolist() == [1, 3]
    assert decode_keyframes(scores, goal_label=0)[1].tolist() == [1]  # wrong at the goal: not appended
    assert decode_keyframes(np.eye(2)[[0, 0, 0]])[1].tolist() == [2]  # no change: only the goal


def test_peak_decoder():
    t = np.arange(60)
    conf = np.cos(2 * np.pi * t / 30)  # peaks at 30 (the endpoints are never peaks)
    scores = np.stack([conf * (t < 40), conf * (t >= 40)], 1) + 1.0
    y, keys = decode_peaks(scores, min_distance=5)
    assert 59 in keys.tolist()


# ------------------------------------------------------------------------------------------------- targets
@given(st.lists(st.integers(2, 10), min_size=1, max_size=5), st.integers(0, 10_000))
def test_monotonic_target_rises_to_one_in_each_segment(lengths, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(sum(lengths), 6, generator=g)
    keys = np.cumsum(lengths) - 1
    target = monotonic_target(x, keys)
    start = 0
    for k in keys:
        seg = target[start : k + 1]
        assert float(seg.min()) == pytest.approx(0.0, abs=1e-6)
        assert float(seg[-1]) == pytest.approx(1.0, abs=1e-5)  # the keyframe is its own best match
        assert ((seg >= 0) & (seg <= 1 + 1e-6)).all()
        start = k + 1


def test_monotonic_target_released_split_off_by_one():
    x = torch.randn(10, 4, generator=torch.Generator().manual_seed(0))
    t = monotonic_target(x, [4, 9], released_split=True)
    assert float(t[-1]) == 0.0  # the last frame normalised alone, as released
    assert not torch.allclose(t, monotonic_target(x, [4, 9]))  # the keyframe opens the next segment's


# --------------------------------------------------------------------------------------------------- losses
def test_contrastive_loss_matches_formula():
    g = torch.Generator().manual_seed(1)
    u, s, y = (
        torch.randn(2, 5, 8, generator=g),
        torch.randn(4, 8, generator=g),
        torch.randint(0, 4, (2, 5), generator=g),
    )
    ref = 0.0
    for b in range(2):
        for t in range(5):
            sims = [float(torch.cosine_similarity(u[b, t].double(), s[k].double(), 0)) for k in range(4)]
            pos = math.exp(sims[y[b, t]] / 0.5)
            ref += -math.log(pos / (sum(math.exp(v / 0.5) for v in sims) - pos))
    assert float(contrastive_loss(u, s, y, tau=0.5)) == pytest.approx(ref / 10, rel=1e-5)


def test_history_loss_matches_formula_one_video_and_padding():
    g = torch.Generator().manual_seed(2)
    u, s, y = (
        torch.randn(1, 4, 8, generator=g),
        torch.randn(3, 8, generator=g),
        torch.randint(0, 3, (1, 4), generator=g),
    )
    cos = torch.nn.functional.cosine_similarity
    ref = 0.0
    for t in range(4):
        pos = math.exp(float(cos(u[0, t], s[y[0, t]], 0)))
        neg = sum(math.exp(float(cos(u[0, t], s[k], 0))) for k in range(3))
        neg += math.exp(float(cos(u[0, 3 - t], s[y[0, t]], 0)))
        ref += -math.log(pos / (pos + neg))
    assert float(history_contrastive_loss(u, s, y)) == pytest.approx(ref / 4, rel=1e-5)
    # padding: a padded copy gives the same loss
    up = torch.cat([u, torch.randn(1, 3, 8, generator=g)], 1)
    yp = torch.cat([y, torch.zeros(1, 3, dtype=torch.long)], 1)
    mask = torch.tensor([[False] * 4 + [True] * 3])
    assert float(history_contrastive_loss(up, s, yp, mask)) == pytest.approx(ref / 4, rel=1e-5)


# ------------------------------------------------------------------------------------------ temporal module
def test_position_embedding_as_released():
    pe = position_embedding(5, 4)
    assert torch.allclose(pe[:, 0], torch.sin(torch.arange(5.0)))
    assert torch.allclose(pe[:, 2], torch.cos(torch.arange(5.0)))
    assert torch.allclose(pe[:, 1], torch.sin(torch.arange(5.0) / 100.0))


def test_released_mask_sees_the_future_strict_does_not():
    x = torch.randn(1, 6, 8, generator=torch.Generator().manual_seed(0))
    x2 = x.clone()
    x2[0, 4:] += 5.0  # change the future of frame 2
    for causal, leaks in (("released", True), ("strict", False)):
        m = TemporalModule(8, 5, d_model=8, nhead=2, dim_feedforward=16, causal=causal).eval()
        with torch.no_grad():
            moved = not torch.allclose(m(x)[0, :3], m(x2)[0, :3], atol=1e-5)
        assert moved is leaks, causal


def test_padding_does_not_change_the_output():
    m = TemporalModule(8, 5, d_model=8, nhead=2, dim_feedforward=16).eval()
    x = torch.randn(1, 6, 8, generator=torch.Generator().manual_seed(0))
    xp = torch.cat([x, torch.randn(1, 3, 8)], 1)
    mask = torch.tensor([[False] * 6 + [True] * 3])
    with torch.no_grad():
        assert torch.allclose(m(x)[0], m(xp, mask)[0, :6], atol=1e-5)


def test_fit_kisa_learns_and_leaves_inputs_alone():
    demos = make_demos(12, 0, min_skills=3, max_skills=3)
    g = torch.Generator().manual_seed(0)
    proj = torch.randn(24 * 24 * 3, 16, generator=g) / 40
    xs = [torch.from_numpy(d.frames.reshape(len(d.frames), -1).astype(np.float32) / 255) @ proj for d in demos]
    before = [x.clone() for x in xs]
    skills = encode_skills(SKILLS, HashedTextEncoder(16))
    cfg = KisaConfig(d_model=16, nhead=2, dim_feedforward=32, lr=3e-3, steps=30, batch_size=4, negatives="history")
    model = fit_kisa(xs, [d.labels for d in demos], [d.keyframes for d in demos], skills, cfg, pad=True)
    assert np.mean(model.losses[-5:]) < np.mean(model.losses[:5])
    assert all(torch.equal(a, b) for a, b in zip(xs, before))
    assert [s.shape for s in model.scores(xs[:2], pad=True)] == [(len(demos[0].labels), 8), (len(demos[1].labels), 8)]


def test_encode_skills_is_cached_and_copied():
    enc = HashedTextEncoder(8)
    a = encode_skills(["open", "close"], enc)
    a += 1.0
    assert torch.allclose(encode_skills(["open", "close"], enc).norm(dim=1), torch.ones(2))


def test_minilm_skill_tower():
    pytest.importorskip("sentence_transformers")
    emb = encode_skills(SKILLS)
    assert emb.shape == (8, 384)
    n = torch.nn.functional.normalize(emb, dim=1)
    sim = n @ n.T
    assert sim[3, 4] > sim[3, 0]  # two block skills are closer than a block skill and the drawer


# ---------------------------------------------------------------------------------------- world, baselines
def test_world_is_deterministic_and_consistent():
    a, b = make_demos(3, 5), make_demos(3, 5)
    for d, e in zip(a, b):
        assert np.array_equal(d.frames, e.frames) and d.chain == e.chain
        assert d.keyframes[-1] == len(d.labels) - 1
        assert np.flatnonzero(np.diff(d.labels)).tolist() == d.keyframes[:-1].tolist()
        assert 3 <= len(d.chain) <= 5 and len(set(d.chain)) == len(d.chain)
    assert not np.array_equal(make_demos(1, 6)[0].frames[:5], a[0].frames[:5])


def test_layout_b_moves_the_objects_only():
    # the same seed in layout "b": the same chain, skills and keyframes, other pixels
    for a, b in zip(make_demos(2, 3), make_demos(2, 3, layout="b")):
        assert a.chain == b.chain and np.array_equal(a.labels, b.labels) and np.array_equal(a.keyframes, b.keyframes)
        assert not np.array_equal(a.frames[0], b.frames[0])


def test_world_holds_out_transitions():
    held = [(0, 1), (2, 3), (4, 5)]
    train = make_demos(30, 0, exclude_transitions=held)
    assert not transitions(train) & set(held)
    test = make_demos(10, 1, require_transitions=held)
    assert all(set(zip(d.chain[:-1], d.chain[1:])) & set(held) for d in test)


def test_changepoint_and_uvd_on_a_step_signal():
    x = torch.cat([torch.zeros(10, 3), torch.ones(10, 3) * 5, torch.zeros(10, 3) - 5])
    x = x + 0.01 * torch.randn(30, 3, generator=torch.Generator().manual_seed(0))
    pytest.importorskip("ruptures")
    assert changepoint_keyframes(x, 3).tolist() == [9, 19, 29]
    assert uvd_keyframes(x)[-1] == 29


def test_hdf5_round_trip(tmp_path):
    pytest.importorskip("h5py")
    demos = make_demos(2, 0)
    gts = [np.linspace(0, 1, len(d.labels)) for d in demos]
    path = write_demos_hdf5(
        tmp_path / "d.h5",
        [d.frames for d in demos],
        [d.labels for d in demos],
        [d.keyframes for d in demos],
        [d.captions for d in demos],
        gts,
    )
    back = read_demos_hdf5(path)
    for i, d in enumerate(demos):
        assert np.array_equal(back["video_frame"][i], d.frames)
        assert back["label"][i].tolist() == d.labels.tolist()
        assert back["key_frame"][i].tolist() == d.keyframes.tolist()
        assert back["caption"][i] == d.captions
        assert np.allclose(back["gtscore"][i], gts[i])


# ------------------------------------------------------------------------------------ edge answers (issue 47)
def _batch(seed=3):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(2, 5, 8, generator=g), torch.randn(3, 8, generator=g), torch.randint(0, 3, (2, 5), generator=g)


def test_every_loss_gives_zero_on_an_all_padded_batch():
    u, s, y = _batch()
    u.requires_grad_(True)
    mask = torch.ones(2, 5, dtype=torch.bool)
    target = torch.rand(2, 5)
    losses = [
        contrastive_loss(u, s, y, mask),
        history_contrastive_loss(u, s, y, mask),
        kisa_loss(u, s, y, target, mask),
        kisa_loss(u, s, y, target, mask, negatives="history"),
    ]
    assert [float(v) for v in losses] == [0.0] * 4
    losses[2].backward()
    assert torch.equal(u.grad, torch.zeros_like(u))


def test_a_fully_padded_video_is_left_out_of_the_mean():
    u, s, y = _batch()
    mask = torch.tensor([[False] * 5, [True] * 5])
    target = torch.rand(2, 5)
    for loss in (contrastive_loss, history_contrastive_loss):
        assert float(loss(u, s, y, mask)) == pytest.approx(float(loss(u[:1], s, y[:1])), rel=1e-6)
    assert float(kisa_loss(u, s, y, target, mask)) == pytest.approx(float(kisa_loss(u[:1], s, y[:1], target[:1])))


def test_double_inputs_give_the_float_answer():
    u, s, y = _batch()
    assert float(contrastive_loss(u.double(), s.double(), y)) == pytest.approx(float(contrastive_loss(u, s, y)))
    m = TemporalModule(8, 5, d_model=8, nhead=2, dim_feedforward=16).eval()
    with torch.no_grad():
        assert torch.allclose(m(u.double()), m(u), atol=1e-6)


def test_kisa_config_checks_and_normalises_at_construction():
    cfg = KisaConfig(negatives="History", causal="STRICT", alpha=1, seed=np.int64(3))
    assert (cfg.negatives, cfg.causal, cfg.alpha, cfg.seed) == ("history", "strict", 1.0, 3)
    assert type(cfg.alpha) is float and type(cfg.seed) is int
    assert cfg.validated() is cfg and cfg.replace(steps=5).negatives == "history"


def test_skill_cache_never_serves_another_encoder():
    # fresh lambdas are freed at once, so their ids are reused: each must still get its own embeddings
    for d in range(1, 12):
        out = encode_skills(["open", "close"], lambda skills, d=d: np.full((2, d), float(d)))
        assert out.shape == (2, d) and float(out[0, 0]) == d
    # a stale entry under a live encoder's id (as after id reuse) is not served
    from icml24.kisa import encoders

    enc = HashedTextEncoder(4)
    encoders._SKILL_CACHE[(id(enc), ("open", "close"))] = (lambda: None, torch.zeros(2, 4))
    assert torch.allclose(encode_skills(["open", "close"], enc).norm(dim=1), torch.ones(2))
    # an entry leaves the cache with its encoder
    key = (id(enc), ("open", "close"))
    del enc
    gc.collect()
    assert key not in encoders._SKILL_CACHE


def test_text_arguments_take_lists_or_tuples_of_strings():
    enc = HashedTextEncoder(8)
    assert np.array_equal(enc.encode(("open the drawer",)), enc.encode(["open the drawer"]))
    assert enc.encode(["open the drawer"]).shape == (1, 8)  # a single text is wrapped in a list, never split
    assert enc.encode([]).shape == (0, 8)


def test_frozen_image_encoder_on_two_fit_frames_is_finite():
    from icml24.kisa import FrozenImageEncoder

    frames = make_demos(1, 0)[0].frames
    emb = FrozenImageEncoder(frames[:2], dim=8).encode(frames[:1])
    assert emb.shape == (1, 8) and bool(torch.isfinite(emb).all())
