"""Every public callable of icml24.brain refuses bad input with a one-line InputError naming the argument, and
leaves the objects passed in (models, tensors) unchanged."""

import copy
import tempfile
from pathlib import Path

import pytest
import torch

import icml24.brain as brain
from icml24.brain import (
    BrainConfig,
    best_of_n_loss,
    brain_dpo_loss,
    brain_loss,
    dpg_weights,
    dpo_loss,
    effective_sample_size,
    estimator_loss,
    estimator_weights,
    gdcpp_weights,
    policy_weights,
    sample_responses,
    target_weights,
    train_brain,
)
from icml24.data.text import EnumerableLanguage
from icml24.nn.lm import tiny_gpt2
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN = float("nan")
T = torch.randn(3, 4)
T_NAN = T.clone()
T_NAN[1, 2] = NAN
T_SHORT = torch.randn(3, 3)  # 3 samples where 4 are expected
T_ONE = torch.randn(3, 1)  # n = 1: nothing to self-normalise
T_EMPTY = torch.zeros(0, 4)
T2 = torch.randn(3, 2)
LZ = torch.zeros(3)
W = torch.softmax(torch.randn(3, 4), -1)
V = torch.randn(5)
LANG = EnumerableLanguage(symbols="abc", prompt_len=1, response_len=2, seed=0)
MODEL = tiny_gpt2(LANG.vocab_size, n_positions=8, n_embd=8, n_layer=1, n_head=2, tokenizer=LANG.tokenizer)
POLICY = tiny_gpt2(LANG.vocab_size, n_positions=8, n_embd=8, n_layer=1, n_head=2, tokenizer=LANG.tokenizer, seed=1)
PROMPTS = torch.tensor([LANG.encode(p) for p in LANG.prompts()])
GEN = torch.Generator().manual_seed(0)
OTHER_VOCAB = tiny_gpt2(LANG.vocab_size + 3, n_positions=8, n_embd=8, n_layer=1, n_head=2, seed=1)
NAN_POLICY = copy.deepcopy(POLICY)
with torch.no_grad():
    NAN_POLICY.transformer.wte.weight[0, 0] = NAN
FROZEN = copy.deepcopy(POLICY).requires_grad_(False)
SHARING = copy.deepcopy(POLICY)
SHARING.transformer.h = MODEL.transformer.h  # trains the prior's blocks too
BIG = 1e300
TMP = tempfile.TemporaryDirectory()


def tmp_file(name: str, content=None) -> str:
    """A file in TMP: plain text, or ``content`` saved with torch.save."""
    path = Path(TMP.name) / name
    if content is None:
        path.write_text("not a checkpoint")
    else:
        torch.save(content, path)
    return str(path)


def other_models_checkpoint() -> str:
    """A checkpoint of the same settings as ``train``'s, written by a wider model (it would not load into POLICY)."""
    path = str(Path(TMP.name) / "wide.pt")
    wide = tiny_gpt2(LANG.vocab_size, n_positions=8, n_embd=16, n_layer=1, n_head=2, seed=1)
    train_brain(wide, copy.deepcopy(wide), PROMPTS, ok_reward, cfg(), allowed_ids=LANG.symbol_ids, checkpoint=path)
    return path


def ok_reward(p, r):
    return torch.zeros(r.size(0))


def nan_reward(p, r):
    return torch.full((r.size(0),), NAN)


def short_reward(p, r):
    return torch.zeros(1)


def cfg(**kw):
    return BrainConfig(**{**dict(n=2, steps=1, prompts_per_step=1, max_new_tokens=2), **kw})


def train(*, policy=POLICY, prior=MODEL, prompts=PROMPTS, reward_fn=ok_reward, config=None, **kw):
    return train_brain(policy, prior, prompts, reward_fn, config or cfg(), **{"allowed_ids": LANG.symbol_ids, **kw})


CASES = [
    # ---------------------------------------------------------------------------------------- brain_loss
    bad("brain_loss", "beta", lambda: brain_loss(T, T, T, T, beta=0.0), T, kind="range"),
    bad("brain_loss", "beta", lambda: brain_loss(T, T, T, T, beta=-1.0), kind="range"),
    bad("brain_loss", "policy_logp", lambda: brain_loss(T_ONE, T_ONE, T_ONE, T_ONE), kind="n<2"),
    bad("brain_loss", "proposal_logp", lambda: brain_loss(T, T_SHORT, T, T), T, kind="missing"),
    bad("brain_loss", "reward", lambda: brain_loss(T, T, T, T_NAN), T_NAN, kind="nan"),
    bad("brain_loss", "targets", lambda: brain_loss(T, T, T, T, targets="hard"), kind="name"),
    bad("brain_loss", "policy_scale", lambda: brain_loss(T, T, T, T, policy_scale=float("inf")), kind="inf"),
    bad("brain_loss", "policy_logp", lambda: brain_loss(None, T, T, T), kind="none"),
    bad("brain_loss", "prior_logp", lambda: brain_loss(T, T, T_EMPTY, T), kind="empty"),
    bad("brain_loss", "baseline", lambda: brain_loss(T, T, T, T, baseline="yes"), kind="type"),
    bad("brain_loss", "beta", lambda: brain_loss(T, T, T, T, beta=1e-320), kind="overflow"),
    bad("brain_loss", "policy_scale", lambda: brain_loss(T, T * 2, T, T, policy_scale=BIG), kind="overflow"),
    # ------------------------------------------------------------------------------------ brain_dpo_loss
    bad("brain_dpo_loss", "policy_logp", lambda: brain_dpo_loss(T, T, T), kind="n!=2"),
    bad("brain_dpo_loss", "dpo_beta", lambda: brain_dpo_loss(T2, T2, T2, dpo_beta=0.0), kind="range"),
    bad("brain_dpo_loss", "reward", lambda: brain_dpo_loss(T2, T2, T), kind="shape"),
    bad("brain_dpo_loss", "prior_logp", lambda: brain_dpo_loss(T2, torch.full((3, 2), NAN), T2), kind="nan"),
    bad("brain_dpo_loss", "policy_logp", lambda: brain_dpo_loss([[0.0, 1.0]], T2, T2), kind="type"),
    # ----------------------------------------------------------------------------------- estimator_loss
    bad("estimator_loss", "estimator", lambda: estimator_loss("ppo", T, T, T, T), kind="name"),
    bad("estimator_loss", "log_z", lambda: estimator_loss("dpg", T, T, T, T), kind="none"),
    bad("estimator_loss", "log_z", lambda: estimator_loss("gdcpp", T, T, T, T, log_z=torch.zeros(2)), kind="shape"),
    bad("estimator_loss", "beta", lambda: estimator_loss("gdcpp", T, T, T, T, log_z=LZ, beta=-2.0), kind="range"),
    bad("estimator_loss", "reward", lambda: estimator_loss("dpg", T, T, T, T_NAN, log_z=LZ), kind="nan"),
    bad("estimator_loss", "log_z", lambda: estimator_loss("gdcpp", T, T, T, T, log_z="exact"), kind="name"),
    bad("estimator_loss", "log_z", lambda: estimator_loss("brain", T, T, T, T, log_z="exact"), kind="name-unused"),
    bad("estimator_loss", "dpo_beta", lambda: estimator_loss("brain", T, T, T, T, dpo_beta="x"), kind="type-unused"),
    bad("estimator_loss", "beta", lambda: estimator_loss("dpo", T2, T2, T2, T2, beta=-1.0), kind="range-unused"),
    bad(
        "estimator_loss",
        "proposal_logp",
        lambda: estimator_loss("dpo", T2, torch.full((3, 2), NAN), T2, T2),
        kind="nan-unused",
    ),
    # -------------------------------------------------------------------------------- estimator_weights
    bad("estimator_weights", "estimator", lambda: estimator_weights("dpo", T, T, T, T), kind="name"),
    bad("estimator_weights", "log_z", lambda: estimator_weights("dpg", T, T, T, T), kind="none"),
    bad("estimator_weights", "log_z", lambda: estimator_weights("dpg", T, T, T, T, log_z="guess"), kind="name"),
    bad("estimator_weights", "policy_logp", lambda: estimator_weights("brain", T_ONE, T_ONE, T_ONE, T_ONE), kind="n<2"),
    bad("estimator_weights", "reward", lambda: estimator_weights("brain", T, T, T, T_SHORT), kind="shape"),
    bad("estimator_weights", "beta", lambda: estimator_weights("brain", T, T, T, T, beta=NAN), kind="nan"),
    bad("estimator_weights", "log_z", lambda: estimator_weights("brain", T, T, T, T, log_z="x"), kind="name-unused"),
    bad(
        "estimator_weights",
        "beta",
        lambda: estimator_weights("dpg", T, T, T, T, log_z="estimate", beta=1e-320),
        kind="overflow",
    ),
    # ----------------------------------------------------------------------------------- target_weights
    bad("target_weights", "beta", lambda: target_weights(T, T, T, beta=0.0), kind="range"),
    bad("target_weights", "reward", lambda: target_weights(T, T_NAN, T), kind="nan"),
    bad("target_weights", "proposal_logp", lambda: target_weights(T, T, T_SHORT), kind="missing"),
    bad("target_weights", "prior_logp", lambda: target_weights(T_ONE, T_ONE, T_ONE), kind="n<2"),
    bad("target_weights", "prior_logp", lambda: target_weights(V, V, V), kind="ndim"),
    bad("target_weights", "beta", lambda: target_weights(T, T, T, beta=1e-320), kind="overflow"),
    # ----------------------------------------------------------------------------------- policy_weights
    bad("policy_weights", "scale", lambda: policy_weights(T, T, scale=0.0), kind="range"),
    bad("policy_weights", "policy_logp", lambda: policy_weights(T_NAN, T), kind="nan"),
    bad("policy_weights", "proposal_logp", lambda: policy_weights(T, T_SHORT), kind="shape"),
    bad("policy_weights", "policy_logp", lambda: policy_weights(None, T), kind="none"),
    bad("policy_weights", "scale", lambda: policy_weights(T, T, scale="1"), kind="type"),
    bad("policy_weights", "scale", lambda: policy_weights(T, T * 2, scale=BIG), kind="overflow"),
    # ---------------------------------------------------------------------------- effective_sample_size
    bad("effective_sample_size", "weights", lambda: effective_sample_size(T), kind="unnormalised"),
    bad("effective_sample_size", "weights", lambda: effective_sample_size(-W), kind="negative"),
    bad("effective_sample_size", "weights", lambda: effective_sample_size(V), kind="ndim"),
    bad("effective_sample_size", "weights", lambda: effective_sample_size(T_EMPTY), kind="empty"),
    bad("effective_sample_size", "weights", lambda: effective_sample_size(T_NAN), kind="nan"),
    # -------------------------------------------------------------------------------- sample_responses
    bad("sample_responses", "n", lambda: sample_responses(MODEL, PROMPTS, 0, 2, generator=GEN), MODEL, kind="range"),
    bad(
        "sample_responses",
        "max_new_tokens",
        lambda: sample_responses(MODEL, PROMPTS, 2, 0, generator=GEN),
        kind="range",
    ),
    bad(
        "sample_responses",
        "prompt_ids",
        lambda: sample_responses(MODEL, PROMPTS.float(), 2, 2, generator=GEN),
        kind="dtype",
    ),
    bad(
        "sample_responses", "prompt_ids", lambda: sample_responses(MODEL, PROMPTS[0], 2, 2, generator=GEN), kind="ndim"
    ),
    bad("sample_responses", "generator", lambda: sample_responses(MODEL, PROMPTS, 2, 2, generator=0), kind="type"),
    bad(
        "sample_responses",
        "eos_token_id",
        lambda: sample_responses(MODEL, PROMPTS, 2, 2, generator=GEN, eos_token_id=-1),
        kind="range",
    ),
    # ------------------------------------------------------------------------------------- train_brain
    bad("train_brain", "n", lambda: train(config=cfg(n=1)), POLICY, MODEL, kind="n<2"),
    bad("train_brain", "beta", lambda: train(config=cfg(beta=0.0)), POLICY, MODEL, kind="range"),
    bad("train_brain", "reward_fn", lambda: train(reward_fn=nan_reward), POLICY, MODEL, kind="nonfinite"),
    bad("train_brain", "reward_fn", lambda: train(reward_fn=short_reward), POLICY, MODEL, kind="count"),
    bad("train_brain", "log_z", lambda: train(config=cfg(estimator="dpg")), POLICY, MODEL, kind="missing"),
    bad("train_brain", "log_z", lambda: train(config=cfg(estimator="gdcpp"), log_z="mean"), POLICY, MODEL, kind="name"),
    bad("train_brain", "estimator", lambda: train(config=cfg(estimator="ppo")), POLICY, kind="name"),
    bad("train_brain", "prompts_per_step", lambda: train(config=cfg(prompts_per_step=9)), POLICY, kind="range"),
    bad("train_brain", "policy", lambda: train(policy=MODEL), MODEL, kind="same"),
    bad("train_brain", "prompts", lambda: train(prompts=PROMPTS.float()), POLICY, kind="dtype"),
    bad("train_brain", "reward_fn", lambda: train(reward_fn=3), POLICY, kind="type"),
    bad("train_brain", "checkpoint", lambda: train(checkpoint=tmp_file("f") + "/ck.pt"), POLICY, MODEL, kind="parent"),
    bad("train_brain", "checkpoint", lambda: train(checkpoint=TMP.name), POLICY, MODEL, kind="folder"),
    bad("train_brain", "checkpoint", lambda: train(checkpoint=5), POLICY, kind="type"),
    bad("train_brain", "checkpoint", lambda: train(checkpoint=tmp_file("junk.pt")), POLICY, kind="unreadable"),
    bad("train_brain", "checkpoint", lambda: train(checkpoint=other_models_checkpoint()), POLICY, kind="other-model"),
    bad("train_brain", "policy", lambda: train(policy=NAN_POLICY), NAN_POLICY, MODEL, kind="nan"),
    bad("train_brain", "prior", lambda: train(prior=NAN_POLICY), POLICY, NAN_POLICY, kind="nan"),
    bad("train_brain", "prior", lambda: train(prior=OTHER_VOCAB), POLICY, OTHER_VOCAB, kind="vocabulary"),
    bad("train_brain", "policy", lambda: train(policy=FROZEN), FROZEN, MODEL, kind="frozen"),
    bad("train_brain", "policy", lambda: train(policy=SHARING), SHARING, MODEL, kind="shared"),
    bad("train_brain", "policy", lambda: train(policy=torch.nn.Linear(2, 2)), MODEL, kind="not-lm"),
    bad("train_brain", "prior", lambda: train(prior=None), POLICY, kind="none"),
    bad("train_brain", "config", lambda: train(config={"n": 2}), POLICY, kind="type"),
    bad("train_brain", "prompts", lambda: train(prompts=PROMPTS + 100), POLICY, kind="vocabulary"),
    bad("train_brain", "prompts", lambda: train(prompts=PROMPTS - 100), POLICY, kind="negative"),
    bad("train_brain", "max_new_tokens", lambda: train(config=cfg(max_new_tokens=20)), POLICY, kind="positions"),
    bad("train_brain", "allowed_ids", lambda: train(allowed_ids=torch.tensor([4, 100])), POLICY, kind="vocabulary"),
    bad("train_brain", "allowed_ids", lambda: train(allowed_ids=torch.tensor([4, 4, 5])), POLICY, kind="repeated"),
    bad("train_brain", "eos_token_id", lambda: train(eos_token_id=100), POLICY, kind="vocabulary"),
    bad("train_brain", "eos_token_id", lambda: train(eos_token_id=LANG.eos_id), POLICY, kind="not-allowed"),
    bad("train_brain", "pad_token_id", lambda: train(pad_token_id=100), POLICY, kind="vocabulary"),
    bad("train_brain", "log_z", lambda: train(log_z="nonsense"), POLICY, kind="name-unused"),
    bad("train_brain", "log_z", lambda: train(log_z=torch.full((PROMPTS.size(0),), NAN)), POLICY, kind="nan-unused"),
    bad("train_brain", "reward_fn", lambda: train(reward_fn=lambda p, r: "good"), POLICY, MODEL, kind="str"),
    bad(
        "train_brain",
        "reward_fn",
        lambda: train(reward_fn=lambda p, r: torch.zeros(r.size(0), dtype=torch.complex64)),
        POLICY,
        kind="complex",
    ),
    # -------------------------------------------------------------------------------------- BrainConfig
    bad("BrainConfig", "n", lambda: BrainConfig(n=2.5), kind="type"),
    bad("BrainConfig", "n", lambda: BrainConfig(n=True), kind="bool"),
    bad("BrainConfig", "estimator", lambda: BrainConfig(estimator="ppo"), kind="name"),
    bad("BrainConfig", "grad_clip", lambda: BrainConfig(grad_clip=NAN), kind="nan"),
    bad("BrainConfig", "seed", lambda: BrainConfig(seed=-1), kind="range"),
    bad("BrainConfig", "n", lambda: BrainConfig(estimator="dpo"), kind="dpo-default-n"),
    bad("BrainConfig", "beta", lambda: BrainConfig(beta=None), kind="none"),
    bad("BrainConfig", "max_new_tokens", lambda: BrainConfig(max_new_tokens=0), kind="range"),
    bad("BrainConfig.validated", "n", lambda: BrainConfig(n=3, estimator="dpo").validated(), kind="dpo-n"),
    bad(
        "BrainConfig.validated",
        "refresh_every",
        lambda: BrainConfig(n=2, estimator="dpo", refresh_every=5).validated(),
        kind="dpo",
    ),
    bad("BrainConfig.validated", "lr", lambda: BrainConfig(lr=NAN).validated(), kind="nan"),
    bad("BrainConfig.validated", "steps", lambda: BrainConfig(steps=-1).validated(), kind="range"),
    bad("BrainConfig.validated", "seed", lambda: BrainConfig(seed=None).validated(), kind="none"),
    # ------------------------------------------------------------------------------------- dpg_weights
    bad("dpg_weights", "log_z", lambda: dpg_weights(T, T, T, torch.zeros(4)), kind="shape"),
    bad("dpg_weights", "log_z", lambda: dpg_weights(T, T, T, None), kind="none"),
    bad("dpg_weights", "beta", lambda: dpg_weights(T, T, T, LZ, beta=0.0), kind="range"),
    bad("dpg_weights", "reward", lambda: dpg_weights(T, T_NAN, T, LZ), kind="nan"),
    bad("dpg_weights", "proposal_logp", lambda: dpg_weights(T, T, T_SHORT, LZ), kind="missing"),
    bad("dpg_weights", "log_z", lambda: dpg_weights(T, T, T, torch.full((3,), -1e4)), kind="overflow"),
    # ----------------------------------------------------------------------------------- gdcpp_weights
    bad("gdcpp_weights", "policy_logp", lambda: gdcpp_weights(T, T, T, T_SHORT, LZ), kind="shape"),
    bad("gdcpp_weights", "policy_logp", lambda: gdcpp_weights(T, T, T, T_NAN, LZ), kind="nan"),
    bad("gdcpp_weights", "log_z", lambda: gdcpp_weights(T, T, T, T, torch.full((3,), NAN)), kind="nan"),
    bad("gdcpp_weights", "beta", lambda: gdcpp_weights(T, T, T, T, LZ, beta=-1.0), kind="range"),
    bad("gdcpp_weights", "prior_logp", lambda: gdcpp_weights(T_EMPTY, T, T, T, LZ), kind="empty"),
    bad("gdcpp_weights", "policy_logp", lambda: gdcpp_weights(T, T, T, T + 1e4, LZ), kind="overflow"),
    # ----------------------------------------------------------------------------------------- dpo_loss
    bad("dpo_loss", "beta", lambda: dpo_loss(V, V, V, V, beta=0.0), kind="range"),
    bad("dpo_loss", "policy_rejected_logp", lambda: dpo_loss(V, V[:3], V, V), kind="shape"),
    bad("dpo_loss", "ref_chosen_logp", lambda: dpo_loss(V, V, torch.full((5,), NAN), V), kind="nan"),
    bad("dpo_loss", "policy_chosen_logp", lambda: dpo_loss(T, V, V, V), kind="ndim"),
    bad("dpo_loss", "ref_rejected_logp", lambda: dpo_loss(V, V, V, None), kind="none"),
    # ----------------------------------------------------------------------------------- best_of_n_loss
    bad("best_of_n_loss", "reward", lambda: best_of_n_loss(T, T_SHORT), kind="shape"),
    bad("best_of_n_loss", "reward", lambda: best_of_n_loss(T, T_NAN), kind="nan"),
    bad("best_of_n_loss", "policy_logp", lambda: best_of_n_loss(V, V), kind="ndim"),
    bad("best_of_n_loss", "policy_logp", lambda: best_of_n_loss(T_EMPTY, T_EMPTY), kind="empty"),
    bad("best_of_n_loss", "policy_logp", lambda: best_of_n_loss("x", T), kind="type"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    assert coverage_gaps(brain, CASES, exempt={"BrainResult": "plain record of a training run's outcome"}) == {}
