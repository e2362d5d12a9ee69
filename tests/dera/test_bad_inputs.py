"""Every public callable of icml24.dera refuses bad input with a one-line InputError naming the argument, and
leaves the objects passed in (models and their train/eval modes, tensors, processors) as they were."""

import math

import pytest
import torch

import icml24.dera
from icml24.data.text import EnumerableLanguage, SymbolReward, char_tokenizer
from icml24.dera import (
    DeRa,
    DeRaLogitsProcessor,
    DeRaModel,
    dera_generate,
    dera_logprobs,
    interpolate_weights,
    lambda_search,
    mix_logprobs,
    retrain,
)
from icml24.nn.lm import response_logprobs, tiny_gpt2
from icml24.testing import assert_refuses, bad, coverage_gaps

TOK = char_tokenizer("abcdefgh ")
V = len(TOK)
A = tiny_gpt2(V, tokenizer=TOK, seed=1).train()  # in train mode: a call that switches modes is caught
R = tiny_gpt2(V, tokenizer=TOK, seed=2).train()
OTHER_VOCAB = tiny_gpt2(V + 3, seed=3)
OTHER_ARCH = tiny_gpt2(V, tokenizer=TOK, seed=4, n_layer=1)
NAN_WEIGHTS = tiny_gpt2(V, tokenizer=TOK, seed=5)
with torch.no_grad():
    NAN_WEIGHTS.lm_head.weight[0, 0] = math.nan
IDS = torch.tensor([[3, 4, 5], [6, 7, 3]])
MASK = torch.ones_like(IDS)
OOV = torch.tensor([[3, 4, V + 7]])
LOGITS = torch.randn(2, V, generator=torch.Generator().manual_seed(0))
NAN_LOGITS = LOGITS.clone()
NAN_LOGITS[0, 1] = math.nan
INF_LOGITS = LOGITS.clone()
INF_LOGITS[1, 2] = math.inf

LANG = EnumerableLanguage("ab", prompt_len=1, response_len=2)
LM = tiny_gpt2(LANG.vocab_size, n_positions=8, n_embd=16, n_layer=1, n_head=2, tokenizer=LANG.tokenizer, seed=0)
REF_LP = response_logprobs(LM, LANG).double()
REWARD = SymbolReward().table(LANG)
NAN_REWARD = REWARD.clone()
NAN_REWARD[0, 0] = math.nan

PROC = DeRaLogitsProcessor(R, 0.5)
PADDED = torch.tensor([[0, 1, 1], [1, 1, 1]])
USED = DeRaLogitsProcessor(R, 0.5, attention_mask=PADDED)  # serves its own prompt only
USED(IDS, LOGITS)


def metric(model):
    return 0.0


def gen(**kw):
    args = dict(lam=0.5, max_new_tokens=2)
    args.update(kw)
    return lambda: dera_generate(A, R, args.pop("input_ids", IDS), **args)


def logprobs(**kw):
    args = dict(lam=0.5)
    args.update(kw)
    return lambda: dera_logprobs(A, R, args.pop("input_ids", IDS), **args)


def realign(**kw):
    args = dict(ref=LM, lang=LANG, ref_logp=REF_LP, reward=REWARD, beta=1.0, steps=1)
    args.update(kw)
    return lambda: retrain(args.pop("ref"), args.pop("lang"), args.pop("ref_logp"), args.pop("reward"), **args)


W = (A, R, IDS)
CASES = [
    # mix_logprobs
    bad("mix_logprobs", "lam", lambda: mix_logprobs(LOGITS, LOGITS, -1.0), LOGITS, kind="range"),
    bad("mix_logprobs", "lam", lambda: mix_logprobs(LOGITS, LOGITS, math.nan), LOGITS, kind="nan"),
    bad("mix_logprobs", "lam", lambda: mix_logprobs(LOGITS, LOGITS, "0.5"), LOGITS, kind="type"),
    bad("mix_logprobs", "lam", lambda: mix_logprobs(LOGITS, LOGITS, None), LOGITS, kind="none"),
    bad("mix_logprobs", "ref_logits", lambda: mix_logprobs(LOGITS, LOGITS[:, :3], 0.5), LOGITS, kind="shape"),
    bad("mix_logprobs", "aligned_logits", lambda: mix_logprobs(NAN_LOGITS, LOGITS, 0.5), NAN_LOGITS, kind="nan"),
    bad("mix_logprobs", "ref_logits", lambda: mix_logprobs(LOGITS, INF_LOGITS, 0.5), INF_LOGITS, kind="inf"),
    bad("mix_logprobs", "aligned_logits", lambda: mix_logprobs(IDS, IDS, 0.5), IDS, kind="dtype"),
    bad(
        "mix_logprobs", "aligned_logits", lambda: mix_logprobs(torch.zeros(2, 0), torch.zeros(2, 0), 0.5), kind="empty"
    ),
    bad("mix_logprobs", "aligned_logits", lambda: mix_logprobs([[0.0, 1.0]], LOGITS, 0.5), kind="type"),
    # DeRa
    bad("DeRa", "lam", lambda: DeRa(A, R, -1.0), A, R, kind="range"),
    bad("DeRa", "lam", lambda: DeRa(A, R, math.nan), A, R, kind="nan"),
    bad("DeRa", "lam", lambda: DeRa(A, R, None), A, R, kind="none"),
    bad("DeRa", "aligned", lambda: DeRa(torch.nn.Linear(2, 2), R, 0.5), R, kind="type"),
    bad("DeRa", "ref", lambda: DeRa(A, OTHER_VOCAB, 0.5), A, OTHER_VOCAB, kind="size"),
    bad("DeRa.forward", "input_ids", lambda: DeRa(A, R, 0.5)(OOV), A, R, kind="range"),
    bad("DeRa.forward", "input_ids", lambda: DeRa(A, R, 0.5)(IDS.float()), A, R, kind="dtype"),
    bad("DeRa.forward", "attention_mask", lambda: DeRa(A, R, 0.5)(IDS, attention_mask=MASK[:1]), *W, kind="shape"),
    # DeRaModel (the drop-in wrapper: DeRa with generate)
    bad("DeRaModel", "lam", lambda: DeRaModel(A, R, math.inf), A, R, kind="inf"),
    bad("DeRaModel", "ref", lambda: DeRaModel(A, None, 0.5), A, kind="none"),
    bad("DeRaModel.generate", "input_ids", lambda: DeRaModel(A, R, 0.5).generate(OOV), *W, kind="range"),
    bad("DeRaModel.generate", "input_ids", lambda: DeRaModel(A, R, 0.5).generate(None), *W, kind="none"),
    bad(
        "DeRaModel.generate",
        "generation_config",
        lambda: DeRaModel(A, R, 0.5).generate(IDS, generation_config={"num_beams": 2}),
        *W,
        kind="type",
    ),
    bad("DeRaModel.generate", "max_new_tokens", lambda: DeRaModel(A, R, 0.5).generate(IDS, max_new_tokens=0), *W),
    bad("DeRaModel.generate", "top_p", lambda: DeRaModel(A, R, 0.5).generate(IDS, do_sample=True, top_p=0.0), *W),
    # DeRaLogitsProcessor
    bad("DeRaLogitsProcessor", "ref", lambda: DeRaLogitsProcessor("gpt2", 0.5), kind="type"),
    bad("DeRaLogitsProcessor", "lam", lambda: DeRaLogitsProcessor(R, math.nan), R, kind="nan"),
    bad("DeRaLogitsProcessor", "lam", lambda: DeRaLogitsProcessor(R, -2), R, kind="range"),
    bad("DeRaLogitsProcessor", "use_cache", lambda: DeRaLogitsProcessor(R, 0.5, use_cache="yes"), R, kind="type"),
    bad(
        "DeRaLogitsProcessor",
        "attention_mask",
        lambda: DeRaLogitsProcessor(R, 0.5, attention_mask=MASK.float()),
        R,
        MASK,
        kind="dtype",
    ),
    bad(
        "DeRaLogitsProcessor",
        "attention_mask",
        lambda: DeRaLogitsProcessor(R, 0.5, attention_mask=torch.tensor([[1, 1, 0]])),
        R,
        kind="right-padded",
    ),
    bad(
        "DeRaLogitsProcessor",
        "attention_mask",
        lambda: DeRaLogitsProcessor(R, 0.5, attention_mask=MASK[0]),
        kind="ndim",
    ),
    bad("DeRaLogitsProcessor.__call__", "input_ids", lambda: PROC(OOV, LOGITS[:1]), PROC, R, kind="range"),
    bad("DeRaLogitsProcessor.__call__", "input_ids", lambda: PROC(IDS.float(), LOGITS), PROC, kind="dtype"),
    bad("DeRaLogitsProcessor.__call__", "scores", lambda: PROC(IDS, LOGITS[:, :3]), PROC, kind="shape"),
    bad("DeRaLogitsProcessor.__call__", "scores", lambda: PROC(IDS, NAN_LOGITS), PROC, kind="nan"),
    bad(
        "DeRaLogitsProcessor.__call__",
        "input_ids",
        lambda: USED(torch.tensor([[5, 5, 5], [6, 6, 6]]), LOGITS),
        USED,
        R,
        kind="reuse",
    ),
    # dera_generate
    bad("dera_generate", "lam", gen(lam=-1.0), *W, kind="range"),
    bad("dera_generate", "lam", gen(lam=math.nan), *W, kind="nan"),
    bad("dera_generate", "input_ids", gen(input_ids=OOV), *W, kind="range"),
    bad("dera_generate", "input_ids", gen(input_ids=IDS.float()), *W, kind="dtype"),
    bad("dera_generate", "input_ids", gen(input_ids=torch.zeros(1, 0, dtype=torch.long)), *W, kind="empty"),
    bad("dera_generate", "input_ids", gen(input_ids=IDS[0]), *W, kind="ndim"),
    bad("dera_generate", "attention_mask", gen(attention_mask=MASK[:, :2]), *W, kind="shape"),
    bad("dera_generate", "attention_mask", gen(attention_mask=torch.tensor([[1, 1, 0], [1, 1, 1]])), *W, kind="pad"),
    bad("dera_generate", "max_new_tokens", gen(max_new_tokens=0), *W, kind="range"),
    bad("dera_generate", "temperature", gen(temperature=0.0, do_sample=True), *W, kind="range"),
    bad("dera_generate", "top_p", gen(top_p=1.5), *W, kind="range"),
    bad("dera_generate", "top_k", gen(top_k=-1), *W, kind="range"),
    bad("dera_generate", "seed", gen(seed=-1), *W, kind="range"),
    bad("dera_generate", "do_sample", gen(do_sample=1), *W, kind="type"),
    bad("dera_generate", "eos_token_id", gen(eos_token_id=V + 10), *W, kind="range"),
    bad("dera_generate", "eos_token_id", gen(eos_token_id="none"), *W, kind="name"),
    bad("dera_generate", "pad_token_id", gen(pad_token_id=-1), *W, kind="range"),
    bad("dera_generate", "allowed_ids", gen(allowed_ids=torch.tensor([1, V])), *W, kind="range"),
    bad("dera_generate", "logits_processor", gen(logits_processor="topk"), *W, kind="type"),
    bad("dera_generate", "no_such_setting", gen(no_such_setting=3), *W, kind="name"),
    bad("dera_generate", "ref", lambda: dera_generate(A, OTHER_VOCAB, IDS, lam=0.5), *W, kind="size"),
    # dera_logprobs
    bad("dera_logprobs", "lam", logprobs(lam=math.nan), *W, kind="nan"),
    bad("dera_logprobs", "input_ids", logprobs(input_ids=OOV), *W, kind="range"),
    bad("dera_logprobs", "input_ids", logprobs(input_ids=IDS[:, :1]), *W, kind="size"),
    bad("dera_logprobs", "start", logprobs(start=0), *W, kind="range"),
    bad("dera_logprobs", "start", logprobs(start=torch.tensor([1, 2, 1])), *W, kind="shape"),
    bad("dera_logprobs", "attention_mask", logprobs(attention_mask=MASK.float()), *W, kind="dtype"),
    bad("dera_logprobs", "per_token", logprobs(per_token="yes"), *W, kind="type"),
    bad("dera_logprobs", "ref", lambda: dera_logprobs(A, None, IDS, lam=0.5), *W, kind="none"),
    # lambda_search
    bad("lambda_search", "lambdas", lambda: lambda_search(A, R, [], metric), A, R, kind="empty"),
    bad("lambda_search", "lambdas", lambda: lambda_search(A, R, [0.5, -1.0], metric), A, R, kind="range"),
    bad("lambda_search", "lambdas", lambda: lambda_search(A, R, [math.nan], metric), A, R, kind="nan"),
    bad("lambda_search", "lambdas", lambda: lambda_search(A, R, "0.5", metric), A, R, kind="type"),
    bad("lambda_search", "metric", lambda: lambda_search(A, R, [0.5], None), A, R, kind="none"),
    bad("lambda_search", "metric", lambda: lambda_search(A, R, [0.5], lambda m: math.nan), A, R, kind="nan"),
    bad("lambda_search", "maximize", lambda: lambda_search(A, R, [0.5], metric, maximize=1), A, R, kind="type"),
    bad("lambda_search", "ref", lambda: lambda_search(A, OTHER_VOCAB, [0.5], metric), A, kind="size"),
    # retrain
    bad("retrain", "steps", realign(steps=-1), LM, REF_LP, REWARD, kind="range"),
    bad("retrain", "steps", realign(steps=0), LM, kind="range"),
    bad("retrain", "lr", realign(lr=math.nan), LM, kind="nan"),
    bad("retrain", "reward", realign(reward=NAN_REWARD), LM, NAN_REWARD, kind="nan"),
    bad("retrain", "reward", realign(reward=REWARD[:, :2]), LM, kind="shape"),
    bad("retrain", "ref_logp", realign(ref_logp=REF_LP.T), LM, kind="shape"),
    bad("retrain", "ref_logp", realign(ref_logp=-REF_LP), LM, kind="sign"),
    bad("retrain", "beta", realign(beta=0.0), LM, kind="range"),
    bad("retrain", "beta", realign(beta=1e-300), LM, kind="overflow"),
    bad("retrain", "lang", realign(lang=None), LM, kind="none"),
    bad("retrain", "prompts_per_step", realign(prompts_per_step=0), LM, kind="range"),
    bad("retrain", "seed", realign(seed=-3), LM, kind="range"),
    bad("retrain", "ref", realign(ref=torch.nn.Linear(2, 2)), kind="type"),
    # interpolate_weights
    bad("interpolate_weights", "lam", lambda: interpolate_weights(R, A, -1.0), A, R, kind="range"),
    bad("interpolate_weights", "lam", lambda: interpolate_weights(R, A, math.inf), A, R, kind="inf"),
    bad("interpolate_weights", "aligned", lambda: interpolate_weights(R, OTHER_ARCH, 0.5), R, kind="architecture"),
    bad("interpolate_weights", "aligned", lambda: interpolate_weights(R, None, 0.5), R, kind="none"),
    bad("interpolate_weights", "aligned", lambda: interpolate_weights(R, NAN_WEIGHTS, 0.5), R, kind="nan"),
    bad("interpolate_weights", "ref", lambda: interpolate_weights(OTHER_VOCAB, A, 0.5), A, kind="size"),
    # issue 47 probe: overflowing lambdas, positions past the model's, generation settings, retrain's tables
    bad("mix_logprobs", "lam", lambda: mix_logprobs(LOGITS, 2 * LOGITS, 1e200), LOGITS, kind="overflow"),
    bad("DeRa", "lam", lambda: DeRa(A, R, 1e308), A, R, kind="overflow"),
    bad("DeRa.forward", "input_ids", lambda: DeRa(A, R, 0.5)(torch.ones(1, 500, dtype=torch.long)), A, R, kind="long"),
    bad("DeRaModel.generate", "max_length", lambda: DeRaModel(A, R, 0.5).generate(IDS, max_length="x"), *W),
    bad("DeRaModel.generate", "max_length", lambda: DeRaModel(A, R, 0.5).generate(IDS, max_length=math.nan), *W),
    bad("dera_generate", "temperature", gen(temperature=1e-300, do_sample=True), *W, kind="underflow"),
    bad("dera_generate", "max_new_tokens", gen(max_new_tokens=10**6), *W, kind="positions"),
    bad("dera_generate", "allowed_ids", gen(allowed_ids=["a"]), *W, kind="type"),
    bad("dera_generate", "num_beams", gen(num_beams=0), *W, kind="range"),
    bad("dera_generate", "num_beams", gen(num_beams="2"), *W, kind="type"),
    bad("dera_generate", "num_return_sequences", gen(num_return_sequences=0), *W, kind="range"),
    bad("dera_generate", "num_return_sequences", gen(num_return_sequences=3), *W, kind="greedy"),
    bad("dera_generate", "length_penalty", gen(num_beams=2, length_penalty=math.nan), *W, kind="nan"),
    bad("dera_generate", "repetition_penalty", gen(repetition_penalty=0.0), *W, kind="range"),
    bad("dera_generate", "min_new_tokens", gen(min_new_tokens=-1), *W, kind="range"),
    bad("dera_logprobs", "lam", logprobs(lam=1e308), *W, kind="overflow"),
    bad("lambda_search", "lambdas", lambda: lambda_search(A, R, torch.tensor(0.5), metric), A, R, kind="0-d"),
    bad("lambda_search", "lambdas", lambda: lambda_search(A, R, {0.5: 1.0}, metric), A, R, kind="mapping"),
    bad("retrain", "reward", realign(reward=None), LM, REF_LP, kind="none"),
    bad("retrain", "lr", realign(lr=1e300), LM, kind="range"),
    bad("retrain", "ref", realign(ref=tiny_gpt2(2, seed=0)), LM, kind="vocab"),
    bad("retrain", "ref", realign(ref=NAN_WEIGHTS), NAN_WEIGHTS, kind="nan"),
    bad("retrain", "ref_logp", realign(ref=OTHER_VOCAB), OTHER_VOCAB, REF_LP, kind="other-model"),
    bad("retrain", "ref_logp", realign(ref_logp=REF_LP - 5.0), LM, kind="unnormalised"),
    bad("interpolate_weights", "lam", lambda: interpolate_weights(R, A, 1e308), A, R, kind="overflow"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input_is_refused(case):
    assert_refuses(case)


def test_every_public_callable_has_bad_input_cases():
    exempt = {"LambdaSearch": "a plain record of a search's result"}
    assert coverage_gaps(icml24.dera, CASES, exempt=exempt) == {}


def test_models_keep_their_modes_on_success():
    before = [(m, m.training) for m in (A, R)]
    dera_generate(A, R, IDS, lam=2.0, max_new_tokens=2, num_beams=2)
    dera_logprobs(A, R, IDS, lam=0.5)
    lambda_search(A, R, [0.0, 1.0], metric)
    assert [(m, m.training) for m in (A, R)] == before
