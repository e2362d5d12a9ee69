import math

import pytest
import torch

from icml24.data.text import EnumerableLanguage, char_tokenizer
from icml24.dera import (
    DeRa,
    DeRaLogitsProcessor,
    dera_generate,
    dera_logprobs,
    interpolate_weights,
    lambda_search,
    mix_logprobs,
)
from icml24.errors import InputError
from icml24.nn.lm import response_logprobs, tiny_gpt2, tiny_llama

TEXT = "to be or not to be that is the question whether tis nobler in the mind to suffer"


@pytest.fixture(scope="module")
def pair():
    tok = char_tokenizer(TEXT)
    return tok, tiny_gpt2(len(tok), tokenizer=tok, seed=1), tiny_gpt2(len(tok), tokenizer=tok, seed=2)


def prompts(tok, texts):
    tok.padding_side = "left"
    return tok(texts, return_tensors="pt", padding=True)


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0, 2.5])
@pytest.mark.parametrize("sample", [False, True])
def test_kv_cached_generation_equals_uncached(pair, lam, sample):
    tok, aligned, ref = pair
    enc = prompts(tok, ["to be", "the question is"])
    kw = dict(
        lam=lam,
        attention_mask=enc["attention_mask"],
        max_new_tokens=12,
        do_sample=sample,
        seed=5,
        temperature=0.8,
        top_k=6,
        top_p=0.9,
    )
    cached = dera_generate(aligned, ref, enc["input_ids"], use_cache=True, **kw)
    uncached = dera_generate(aligned, ref, enc["input_ids"], use_cache=False, **kw)
    assert torch.equal(cached, uncached)


@pytest.mark.parametrize("lam", [0.5, 3.0])
def test_batched_generation_equals_unbatched(pair, lam):
    tok, aligned, ref = pair
    texts = ["to", "whether tis nobler", "in the mind"]
    enc = prompts(tok, texts)
    batched = dera_generate(
        aligned,
        ref,
        enc["input_ids"],
        attention_mask=enc["attention_mask"],
        lam=lam,
        max_new_tokens=10,
        pad_token_id=tok.pad_token_id,
    )
    width = enc["input_ids"].size(1)
    for i, t in enumerate(texts):
        one = prompts(tok, [t])
        alone = dera_generate(aligned, ref, one["input_ids"], lam=lam, max_new_tokens=10, pad_token_id=tok.pad_token_id)
        assert batched[i, width:].tolist() == alone[0, one["input_ids"].size(1) :].tolist()


def test_lambda_endpoints_reproduce_the_models(pair):
    """lambda = 0 is the reference and lambda = 1 the aligned model: identical greedy and seeded sampled
    generations, and exact response log-probabilities on an enumerable language, while the two models differ
    (a test, not a claim: it holds by construction)."""
    tok, aligned, ref = pair
    enc = prompts(tok, ["to be or", "whether"])
    for lam, model in ((0.0, ref), (1.0, aligned)):
        for sample in (False, True):
            got = dera_generate(
                aligned,
                ref,
                enc["input_ids"],
                attention_mask=enc["attention_mask"],
                lam=lam,
                max_new_tokens=15,
                do_sample=sample,
                seed=7,
                eos_token_id=None,
            )
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(7)
                want = model.generate(
                    input_ids=enc["input_ids"],
                    attention_mask=enc["attention_mask"],
                    max_new_tokens=15,
                    do_sample=sample,
                    top_k=0,
                    top_p=1.0,
                    temperature=1.0,
                    eos_token_id=None,
                    pad_token_id=tok.pad_token_id,
                )
            assert torch.equal(got, want)
    lang = EnumerableLanguage("abc", prompt_len=1, response_len=3)
    a, r = tiny_llama(lang.vocab_size, seed=1), tiny_llama(lang.vocab_size, seed=2)
    la, lr = response_logprobs(a, lang), response_logprobs(r, lang)
    assert float((la - lr).abs().max()) > 1e-3
    assert float((response_logprobs(DeRa(a, r, 0.0), lang) - lr).abs().max()) <= 1e-5
    assert float((response_logprobs(DeRa(a, r, 1.0), lang) - la).abs().max()) <= 1e-5
    assert float((response_logprobs(interpolate_weights(r, a, 1.0), lang) - la).abs().max()) <= 1e-5


def test_mixing_logits_equals_mixing_logprobs():
    g = torch.Generator().manual_seed(0)
    a, r = torch.randn(3, 11, generator=g) * 3, torch.randn(3, 11, generator=g) * 3
    for lam in (0.0, 0.25, 1.0, 4.0):
        via_logits = torch.softmax(r + lam * (a - r), -1)
        via_logprobs = torch.softmax(mix_logprobs(a, r, lam), -1)
        torch.testing.assert_close(via_logits, via_logprobs, rtol=1e-5, atol=1e-6)
    banned = a.clone()
    banned[:, 0] = float("-inf")
    assert bool(torch.isneginf(mix_logprobs(banned, r, 2.0)[:, 0]).all())
    assert bool(torch.isneginf(mix_logprobs(banned, r, 0.5)[:, 0]).all())
    assert bool(torch.isneginf(mix_logprobs(banned, r, 0.0)[:, 0]).all())  # bans hold at lambda 0 too
    torch.testing.assert_close(mix_logprobs(banned, r, 0.0)[:, 1:], torch.log_softmax(r[:, 1:], -1))
    assert torch.equal(mix_logprobs(a, r, 0.0), torch.log_softmax(r, -1))  # exact at the endpoints
    assert torch.equal(mix_logprobs(a, r, 1.0), torch.log_softmax(a, -1))


def test_sequence_scoring(pair):
    tok, aligned, ref = pair
    ids = tok(["to be or not"], return_tensors="pt")["input_ids"]
    lp = {lam: float(dera_logprobs(aligned, ref, ids, lam=lam)) for lam in (0.0, 0.5, 1.0)}
    with torch.no_grad():

        def plain(m):
            out = torch.log_softmax(m(input_ids=ids).logits[:, :-1], -1)
            return float(out.gather(-1, ids[:, 1:].unsqueeze(-1)).sum())

        assert abs(lp[0.0] - plain(ref)) < 1e-4 and abs(lp[1.0] - plain(aligned)) < 1e-4
    assert all(math.isfinite(v) and v < 0 for v in lp.values())


def test_dera_on_the_enumerable_language_is_a_distribution():
    lang = EnumerableLanguage("abc", prompt_len=1, response_len=3)
    a, r = tiny_llama(lang.vocab_size, seed=1), tiny_llama(lang.vocab_size, seed=2)
    for lam in (0.5, 2.0):
        lp = response_logprobs(DeRa(a, r, lam), lang).double()
        assert torch.allclose(lp.exp().sum(1), torch.ones(3, dtype=torch.float64), atol=1e-5)


def test_lambda_search(pair):
    tok, aligned, ref = pair
    ids = tok(["to be or not to be"], return_tensors="pt")["input_ids"]

    def metric(model):
        with torch.no_grad():
            out = torch.log_softmax(model(input_ids=ids).logits[:, :-1], -1)
        return float(out.gather(-1, ids[:, 1:].unsqueeze(-1)).sum())

    res = lambda_search(aligned, ref, [0.0, 0.5, 1.0, 2.0], metric)
    assert res.best in (0.0, 0.5, 1.0, 2.0) and res.scores[res.best] == max(res.scores.values())
    assert lambda_search(aligned, ref, [0.0, 1.0], metric, maximize=False).best in (0.0, 1.0)


def test_weight_interpolation_endpoints(pair):
    tok, aligned, ref = pair
    ids = tok(["to be"], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        for lam, model in ((0.0, ref), (1.0, aligned)):
            torch.testing.assert_close(
                interpolate_weights(ref, aligned, lam)(input_ids=ids).logits, model(input_ids=ids).logits
            )


def test_bad_input(pair):
    tok, aligned, ref = pair
    ids = tok(["to be"], return_tensors="pt")["input_ids"]
    other = tiny_gpt2(len(tok) + 3, seed=3)
    with pytest.raises(InputError, match="different vocabulary"):
        dera_generate(aligned, other, ids, lam=0.5)
    with pytest.raises(InputError, match="different vocabulary"):
        DeRa(aligned, other, 0.5)
    with pytest.raises(InputError, match="lam must be"):
        dera_generate(aligned, ref, ids, lam=-0.1)
    with pytest.raises(InputError, match="lam must be"):
        DeRaLogitsProcessor(ref, math.nan)
    with pytest.raises(InputError, match="non-finite logits"):
        mix_logprobs(torch.tensor([[0.0, float("nan")]]), torch.zeros(1, 2), 0.5)
    broken = tiny_gpt2(len(tok), seed=4)
    with torch.no_grad():
        broken.lm_head.weight[0, 0] = float("nan")
    with pytest.raises(InputError, match="non-finite"):
        dera_generate(aligned, broken, ids, lam=0.5, max_new_tokens=3)
    right_padded = torch.tensor([[1, 1, 0]])
    with pytest.raises(InputError, match="right-padded"):
        dera_generate(aligned, ref, torch.tensor([[5, 6, 0]]), attention_mask=right_padded, lam=0.5)
    with pytest.raises(InputError, match="Hugging Face causal LM"):
        DeRa(torch.nn.Linear(2, 2), ref, 0.5)
