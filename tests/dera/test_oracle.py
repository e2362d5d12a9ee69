"""DeRa against an oracle the package does not compute: full forward passes of both models without any
cache, and ``log_softmax(lam * logits_aligned + (1 - lam) * logits_ref)`` in float64, written here; for greedy
decoding, seeded sampling and beam search (4 beams, 2 returned, with and without an attention mask), at
lambda 0, 0.5, 1 and 2."""

import pytest
import torch

from icml24.data.text import char_tokenizer
from icml24.dera import DeRaLogitsProcessor, DeRaModel, dera_generate, dera_logprobs, mix_logprobs
from icml24.errors import InputError
from icml24.nn.lm import tiny_gpt2, tiny_llama

TEXT = "to be or not to be that is the question whether tis nobler in the mind to suffer"
LAMBDAS = [0.0, 0.5, 1.0, 2.0]
NEW = 6


@pytest.fixture(scope="module")
def pair():
    tok = char_tokenizer(TEXT)
    tok.padding_side = "left"
    aligned, ref = tiny_gpt2(len(tok), tokenizer=tok, seed=1), tiny_gpt2(len(tok), tokenizer=tok, seed=2)
    with torch.no_grad():  # sharper next-token distributions than at initialisation: no near-ties
        for m in (aligned, ref):
            m.lm_head.weight.mul_(8.0)
    return tok, aligned, ref


@pytest.fixture(scope="module")
def llama_pair():
    tok = char_tokenizer(TEXT)
    tok.padding_side = "left"
    return tok, tiny_llama(len(tok), tokenizer=tok, seed=3), tiny_llama(len(tok), tokenizer=tok, seed=4)


def batch(tok, texts):
    enc = tok(texts, return_tensors="pt", padding=True)
    return enc["input_ids"], enc["attention_mask"]


@torch.no_grad()
def oracle_logprobs(aligned, ref, ids, mask, lam):
    """Next-token log-probs of the mixture, float64, from full uncached forwards."""
    pos = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
    kw = dict(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False)
    la = aligned(**kw).logits[:, -1].double()
    lr = ref(**kw).logits[:, -1].double()
    return torch.log_softmax(lam * la + (1 - lam) * lr, -1)


def oracle_decode(aligned, ref, ids, mask, lam, steps, sample_seed=None):
    if sample_seed is not None:
        torch.manual_seed(sample_seed)
    scores = []
    for _ in range(steps):
        lp = oracle_logprobs(aligned, ref, ids, mask, lam)
        scores.append(lp)
        if sample_seed is None:
            nxt = lp.argmax(-1)
        else:
            nxt = torch.multinomial(torch.softmax(lp.float(), -1), 1).squeeze(1)
        ids = torch.cat([ids, nxt[:, None]], 1)
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], 1)
    return ids, scores


def oracle_beam(aligned, ref, ids, mask, lam, beams, steps, keep, length_penalty=1.0):
    """Plain beam search over the oracle mixture for one prompt row (no EOS): sequences and final scores."""
    seqs, score = ids, torch.zeros(1, dtype=torch.float64)
    for _ in range(steps):
        m = torch.cat([mask.expand(seqs.size(0), -1), torch.ones(seqs.size(0), seqs.size(1) - ids.size(1))], 1)
        lp = oracle_logprobs(aligned, ref, seqs, m.long(), lam)
        total = (score[:, None] + lp).flatten()
        top = total.topk(beams)
        row, tok = top.indices // lp.size(1), top.indices % lp.size(1)
        seqs = torch.cat([seqs[row], tok[:, None]], 1)
        score = top.values
    return seqs[:keep], score[:keep] / steps**length_penalty


def test_mixture_is_normalised_and_equals_the_formula():
    g = torch.Generator().manual_seed(0)
    a, r = torch.randn(5, 13, generator=g, dtype=torch.float64) * 4, torch.randn(5, 13, generator=g) * 4
    for lam in (0.0, 0.25, 0.5, 1.0, 2.0, 3.5):
        got = mix_logprobs(a.float(), r, lam)
        want = torch.log_softmax(lam * a + (1 - lam) * r.double(), -1)
        torch.testing.assert_close(got.double(), want, rtol=0, atol=2e-5)
        assert float(torch.logsumexp(got.double(), -1).abs().max()) < 1e-5
    banned = a.clone()
    banned[:, 0] = float("-inf")
    for lam in LAMBDAS:
        out = mix_logprobs(banned, r.double(), lam)
        assert bool(torch.isneginf(out[:, 0]).all())
        assert float(torch.logsumexp(out, -1).abs().max()) < 1e-10
        want = torch.log_softmax((lam * a + (1 - lam) * r.double())[:, 1:], -1)
        torch.testing.assert_close(out[:, 1:], want)


@pytest.mark.parametrize("lam", LAMBDAS)
def test_greedy_and_sampling_equal_the_oracle(pair, lam):
    tok, aligned, ref = pair
    ids, mask = batch(tok, ["to be", "whether tis nobler", "in the"])
    out = dera_generate(
        aligned,
        ref,
        ids,
        attention_mask=mask,
        lam=lam,
        max_new_tokens=NEW,
        eos_token_id=None,
        return_dict_in_generate=True,
        output_scores=True,
    )
    want, scores = oracle_decode(aligned, ref, ids, mask, lam, NEW)
    assert torch.equal(out.sequences, want)
    for got, exp in zip(out.scores, scores):
        torch.testing.assert_close(got.double(), exp, rtol=0, atol=1e-4)
    for seed in (0, 1):
        got = dera_generate(
            aligned,
            ref,
            ids,
            attention_mask=mask,
            lam=lam,
            max_new_tokens=NEW,
            eos_token_id=None,
            do_sample=True,
            seed=seed,
        )
        with torch.random.fork_rng(devices=[]):
            want, _ = oracle_decode(aligned, ref, ids, mask, lam, NEW, sample_seed=seed)
        assert torch.equal(got, want)


@pytest.mark.parametrize("lam", LAMBDAS)
@pytest.mark.parametrize("with_mask", [True, False])
def test_beam_search_equals_the_oracle_cached_and_uncached(pair, lam, with_mask):
    tok, aligned, ref = pair
    texts = ["to be", "whether tis"] if with_mask else ["the mind"]
    ids, mask = batch(tok, texts)
    kw = dict(lam=lam, max_new_tokens=NEW, eos_token_id=None, num_beams=4, num_return_sequences=2)
    kw.update(return_dict_in_generate=True, output_scores=True)
    runs = [
        dera_generate(aligned, ref, ids, attention_mask=mask if with_mask else None, use_cache=c, **kw)
        for c in (True, False)
    ]
    assert torch.equal(runs[0].sequences, runs[1].sequences)
    torch.testing.assert_close(runs[0].sequences_scores, runs[1].sequences_scores, rtol=0, atol=1e-5)
    for i in range(len(texts)):
        seqs, scores = oracle_beam(aligned, ref, ids[i : i + 1], mask[i : i + 1], lam, 4, NEW, 2)
        assert torch.equal(runs[0].sequences[2 * i : 2 * i + 2], seqs)
        torch.testing.assert_close(runs[0].sequences_scores[2 * i : 2 * i + 2].double(), scores, rtol=0, atol=1e-4)
        # the scores are the mixture's sequence log-probabilities, as a user recomputes them
        start = ids.size(1)
        full_mask = torch.cat([mask[i : i + 1].expand(2, -1), torch.ones(2, NEW, dtype=torch.long)], 1)
        lp = dera_logprobs(aligned, ref, seqs, lam=lam, start=start, attention_mask=full_mask)
        torch.testing.assert_close(lp.double() / NEW, scores, rtol=0, atol=1e-4)


def test_processor_in_users_own_beam_search(llama_pair):
    tok, aligned, ref = llama_pair
    ids, mask = batch(tok, ["to be or", "the"])
    lam = 2.0
    out = aligned.generate(
        input_ids=ids,
        attention_mask=mask,
        logits_processor=[DeRaLogitsProcessor(ref, lam, attention_mask=mask)],
        num_beams=4,
        num_return_sequences=2,
        max_new_tokens=NEW,
        do_sample=False,
        eos_token_id=None,
        pad_token_id=tok.pad_token_id,
        return_dict_in_generate=True,
        output_scores=True,
        length_penalty=0.0,
    )
    for i in range(2):
        seqs, scores = oracle_beam(aligned, ref, ids[i : i + 1], mask[i : i + 1], lam, 4, NEW, 2, length_penalty=0.0)
        assert torch.equal(out.sequences[2 * i : 2 * i + 2], seqs)
        torch.testing.assert_close(out.sequences_scores[2 * i : 2 * i + 2].double(), scores, rtol=0, atol=1e-4)


@pytest.mark.parametrize("lam", LAMBDAS)
def test_bans_survive_at_every_lambda(pair, lam):
    tok, aligned, ref = pair
    ids, mask = batch(tok, ["to be", "the question"])
    banned = tok.convert_tokens_to_ids(["e", " "])
    eos = tok.eos_token_id
    out = dera_generate(
        aligned,
        ref,
        ids,
        attention_mask=mask,
        lam=lam,
        max_new_tokens=NEW,
        suppress_tokens=banned,
        min_new_tokens=NEW,
        eos_token_id=eos,
        num_beams=2,
        return_dict_in_generate=True,
        output_scores=True,
    )
    new = out.sequences[:, ids.size(1) :]
    assert not bool(torch.isin(new, torch.tensor(banned + [eos])).any())
    for s in out.scores:
        assert bool(torch.isneginf(s[:, banned + [eos]]).all())
        assert float(torch.logsumexp(s, -1).abs().max()) < 1e-4  # still normalised


def test_processor_type_lambda_types_and_user_processors(pair):
    import numpy as np
    from transformers import LogitsProcessor, SuppressTokensLogitsProcessor

    tok, aligned, ref = pair
    assert isinstance(DeRaLogitsProcessor(ref, 0.5), LogitsProcessor)
    ids, mask = batch(tok, ["to be", "the question"])
    want, _ = oracle_decode(aligned, ref, ids, mask, 0.5, NEW)
    for lam in (np.float32(0.5), torch.tensor(0.5), np.float64(0.5), 1 / 2):
        got = dera_generate(aligned, ref, ids, attention_mask=mask, lam=lam, max_new_tokens=NEW, eos_token_id=None)
        assert torch.equal(got, want)
    # a user's processor runs on DeRa's log-probabilities: here it bans the token the mixture picks first
    first = int(want[0, ids.size(1)])
    out = dera_generate(
        aligned,
        ref,
        ids,
        attention_mask=mask,
        lam=0.5,
        max_new_tokens=NEW,
        eos_token_id=None,
        logits_processor=[SuppressTokensLogitsProcessor([first])],
        return_dict_in_generate=True,
        output_scores=True,
    )
    assert first not in out.sequences[:, ids.size(1) :].tolist()[0]
    assert bool(torch.isneginf(out.scores[0][:, first]).all())


def test_processor_reuse_new_prompt_shorter_equal_longer(pair):
    tok, aligned, ref = pair
    lam = 0.5

    def gen(proc, texts):
        ids, mask = batch(tok, texts)
        return aligned.generate(
            input_ids=ids,
            attention_mask=mask,
            logits_processor=[proc],
            max_new_tokens=NEW,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=tok.pad_token_id,
        )

    proc = DeRaLogitsProcessor(ref, lam)
    first = ["whether tis", "nobler in th"]  # equal lengths: no padding, no mask needed
    gen(proc, first)
    for texts in (["to be"], ["the question"], ["to be or not to be that"], first):
        ids, mask = batch(tok, texts)
        want, _ = oracle_decode(aligned, ref, ids, mask, lam, NEW)
        assert torch.equal(gen(proc, texts), want)
    # with an attention mask the processor serves its own prompt only, and says so otherwise
    ids, mask = batch(tok, ["to be", "the mind"])
    proc = DeRaLogitsProcessor(ref, lam, attention_mask=mask)
    want, _ = oracle_decode(aligned, ref, ids, mask, lam, NEW)
    for _ in range(2):
        got = aligned.generate(
            input_ids=ids,
            attention_mask=mask,
            logits_processor=[proc],
            max_new_tokens=NEW,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=tok.pad_token_id,
        )
        assert torch.equal(got, want)
    for texts in (["to"], ["to be", "the mund"], ["to be or not", "whether tis nobler"]):
        with pytest.raises(InputError, match="new DeRaLogitsProcessor"):
            gen(proc, texts)


def test_eos_none_means_no_eos_and_per_token_scores(pair):
    tok, aligned, ref = pair
    ids, mask = batch(tok, ["to be"])
    want, _ = oracle_decode(aligned, ref, ids, mask, 1.0, NEW)
    first = int(want[0, ids.size(1)])  # the first token the mixture picks becomes the model's EOS
    stopper = tiny_gpt2(len(tok), tokenizer=tok, seed=1)
    stopper.load_state_dict(aligned.state_dict())
    stopper.generation_config.eos_token_id = first
    stop = dera_generate(stopper, ref, ids, lam=1.0, max_new_tokens=NEW)
    assert stop.size(1) == ids.size(1) + 1 and int(stop[0, -1]) == first
    run = dera_generate(stopper, ref, ids, lam=1.0, max_new_tokens=NEW, eos_token_id=None, num_beams=2)
    assert run.size(1) == ids.size(1) + NEW and stopper.generation_config.eos_token_id == first
    per = dera_logprobs(aligned, ref, run, lam=0.5, start=ids.size(1), per_token=True)
    assert per.shape == (1, NEW)
    torch.testing.assert_close(per.sum(1), dera_logprobs(aligned, ref, run, lam=0.5, start=ids.size(1)))
    for j in range(NEW):
        t = ids.size(1) + j
        lp = oracle_logprobs(aligned, ref, run[:, :t], torch.ones_like(run[:, :t]), 0.5)
        assert abs(float(per[0, j]) - float(lp[0, run[0, t]])) < 1e-4


def test_dera_model_is_a_drop_in_causal_lm(pair):
    from transformers import GenerationConfig, TextStreamer

    tok, aligned, ref = pair
    ids, mask = batch(tok, ["to be", "whether tis nobler"])
    model = DeRaModel(aligned, ref, 2.0)
    # scoring: normalised mixed log-probabilities at every position, as the oracle computes them
    with torch.no_grad():
        lp = model(ids, attention_mask=mask).logits
    assert float(torch.logsumexp(lp, -1).abs().max()) < 1e-5
    want = oracle_logprobs(aligned, ref, ids, mask, 2.0)
    torch.testing.assert_close(lp[:, -1].double(), want, rtol=0, atol=1e-4)
    # greedy, a GenerationConfig with beams, and sampling with transformers' defaults (top_k=50)
    greedy = model.generate(ids, attention_mask=mask, max_new_tokens=NEW, eos_token_id=None)
    assert torch.equal(greedy, oracle_decode(aligned, ref, ids, mask, 2.0, NEW)[0])
    cfg = GenerationConfig(num_beams=4, num_return_sequences=2, max_new_tokens=NEW, eos_token_id=None)
    beams = model.generate(input_ids=ids, attention_mask=mask, generation_config=cfg)
    ref_beams = dera_generate(
        aligned,
        ref,
        ids,
        attention_mask=mask,
        lam=2.0,
        max_new_tokens=NEW,
        num_beams=4,
        num_return_sequences=2,
        eos_token_id=None,
    )
    assert torch.equal(beams, ref_beams)
    sampled = model.generate(ids, attention_mask=mask, do_sample=True, seed=3, max_new_tokens=NEW)
    ref_sampled = dera_generate(
        aligned, ref, ids, attention_mask=mask, lam=2.0, max_new_tokens=NEW, do_sample=True, seed=3, top_k=50
    )
    assert torch.equal(sampled, ref_sampled)

    # streaming through a TextStreamer prints what generate returns
    class Collect(TextStreamer):
        text = ""

        def on_finalized_text(self, text, stream_end=False):
            Collect.text += text

    one, one_mask = batch(tok, ["to be"])
    out = model.generate(one, attention_mask=one_mask, max_new_tokens=NEW, streamer=Collect(tok, skip_prompt=True))
    assert Collect.text.strip() == tok.decode(out[0, one.size(1) :], skip_special_tokens=True).strip()


def test_geometric_mixture_wrapper_of_trl_agrees(pair):
    nash = pytest.importorskip("trl.experimental.nash_md.nash_md_trainer", reason="TRL with GeometricMixtureWrapper")
    wrapper_cls = getattr(nash, "GeometricMixtureWrapper", None)
    if wrapper_cls is None:
        pytest.skip("this TRL has no GeometricMixtureWrapper (removed in 1.14)")
    from transformers import GenerationConfig

    tok, aligned, ref = pair
    ids, mask = batch(tok, ["to be", "whether tis nobler"])
    for lam in (0.25, 0.5, 0.8):
        cfg = GenerationConfig(max_new_tokens=NEW, do_sample=False, use_cache=False, pad_token_id=tok.pad_token_id)
        wrapper = wrapper_cls(aligned, ref, cfg, mixture_coef=1 - lam, device=torch.device("cpu"))
        theirs = wrapper.generate(input_ids=ids, attention_mask=mask, generation_config=cfg)
        ours = dera_generate(aligned, ref, ids, attention_mask=mask, lam=lam, max_new_tokens=NEW, eos_token_id=None)
        assert torch.equal(ours, theirs)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_placement(pair):
    tok, aligned, ref = pair
    ids, mask = batch(tok, ["to be", "whether tis nobler"])
    want = dera_generate(aligned, ref, ids, attention_mask=mask, lam=2.0, max_new_tokens=NEW, num_beams=4)
    a, r = tiny_gpt2(len(tok), tokenizer=tok, seed=1), tiny_gpt2(len(tok), tokenizer=tok, seed=2)
    a.load_state_dict(aligned.state_dict())
    r.load_state_dict(ref.state_dict())
    a, r = a.cuda(), r.cuda()
    got = dera_generate(a, r, ids.cuda(), attention_mask=mask.cuda(), lam=2.0, max_new_tokens=NEW, num_beams=4)
    assert torch.equal(got.cpu(), want)
    lp = dera_logprobs(a, r, got, lam=2.0, start=ids.size(1), attention_mask=torch.ones_like(got))
    assert lp.device.type == "cuda" and bool(torch.isfinite(lp).all())
