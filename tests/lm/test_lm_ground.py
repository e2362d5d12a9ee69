"""The language-model ground: tokenizers, corpora, the enumerable language, models, trainer, exact alignment."""

import copy

import pytest
import torch

from icml24.data import data_root
from icml24.data.text import (
    EnumerableLanguage,
    LexiconReward,
    SymbolReward,
    austen,
    bpe_tokenizer,
    char_tokenizer,
    count_reward,
    split_text,
    tiny_shakespeare,
)
from icml24.errors import DataUnavailable, InputError
from icml24.nn.lm import (
    TrainConfig,
    align_exact,
    corpus_batches,
    kl_divergence,
    language_batches,
    optimal_policy,
    response_logprobs,
    sequence_logprobs,
    tiny_gpt2,
    tiny_llama,
    train_lm,
)

HAS_SHAKESPEARE = (data_root() / "tinyshakespeare" / "input.txt").is_file()


def test_char_tokenizer_roundtrip_and_specials():
    tok = char_tokenizer("hello world\n")
    ids = tok("hello\nworld")["input_ids"]
    assert tok.decode(ids) == "hello\nworld" and len(ids) == 11
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.sep_token_id) == (0, 1, 2, 3)
    assert tok.decode(tok("xyz")["input_ids"]) == "<unk><unk><unk>"
    with pytest.raises(InputError):
        char_tokenizer("")


def test_bpe_tokenizer_trains_locally():
    text = ["the quick brown fox jumps over the lazy dog " * 50, "pack my box with five dozen liquor jugs " * 50]
    tok = bpe_tokenizer(text, vocab_size=300)
    assert 260 <= len(tok) <= 300 and tok.decode(tok("the lazy fox")["input_ids"]) == "the lazy fox"
    with pytest.raises(InputError, match="vocab_size"):
        bpe_tokenizer(text, vocab_size=100)


@pytest.mark.skipif(not HAS_SHAKESPEARE, reason="tiny Shakespeare is not in the data root")
def test_real_corpora():
    text = tiny_shakespeare()
    assert len(text) > 1_000_000 and text.startswith("First Citizen")
    train, val = split_text(text)
    assert len(val) == len(text) - len(train) and abs(len(val) / len(text) - 0.1) < 1e-3
    assert "Elizabeth" in austen(["prideprejudice"])


def test_missing_corpora(tmp_path):
    with pytest.raises(DataUnavailable, match="input.txt"):
        tiny_shakespeare(root=tmp_path)
    with pytest.raises(InputError, match="unknown novels"):
        austen(["ulysses"])


def test_enumerable_language():
    lang = EnumerableLanguage("abc", prompt_len=1, response_len=3, seed=1)
    assert lang.prompts() == ["a", "b", "c"] and len(lang.responses()) == 27
    seqs = lang.sequences("b")
    assert seqs.shape == (27, lang.seq_len) and seqs[5].tolist() == lang.encode("b", lang.responses()[5])
    for p in lang.prompts():
        assert torch.isclose(lang.true_logprobs(p).exp().sum(), torch.tensor(1.0, dtype=torch.float64))
    s = lang.sample(200, torch.Generator().manual_seed(0))
    assert s.shape == (200, lang.seq_len) and bool((s[:, 0] == lang.bos_id).all())
    with pytest.raises(InputError):
        EnumerableLanguage("aa")
    with pytest.raises(InputError, match="not in the language"):
        lang.encode("ab")


def test_rewards():
    assert SymbolReward("a", bonus=1.0)("ab", "aaca") == 4.0
    lang = EnumerableLanguage("ab", prompt_len=1, response_len=2)
    assert SymbolReward().table(lang).tolist() == [[3.0, 2.0, 1.0, 0.0], [2.0, 1.0, 2.0, 1.0]]
    assert LexiconReward({"good": 1.0, "bad": -1.0})("Good good bad day.") == 25.0
    assert count_reward(["!", "?"])("hey! you? !") == 3.0


@pytest.mark.parametrize("build", [tiny_gpt2, tiny_llama])
def test_tree_logprobs_equal_direct_scoring_and_sum_to_one(build):
    lang = EnumerableLanguage("abc", prompt_len=1, response_len=3)
    model = build(lang.vocab_size, tokenizer=lang.tokenizer, seed=3)
    tree = response_logprobs(model, lang)
    assert torch.allclose(tree.double().exp().sum(1), torch.ones(3, dtype=torch.float64), atol=1e-5)
    seqs = torch.cat([lang.sequences(p) for p in lang.prompts()])
    with torch.no_grad():
        direct = sequence_logprobs(
            model,
            seqs,
            start=lang.response_start,
            end=lang.response_start + lang.response_len,
            allowed_ids=lang.symbol_ids,
        )
    torch.testing.assert_close(direct.view(3, -1), tree, rtol=0, atol=1e-5)


def test_exact_kl_matches_brute_force():
    lang = EnumerableLanguage("ab", prompt_len=1, response_len=3)
    p, q = tiny_gpt2(lang.vocab_size, seed=1), tiny_gpt2(lang.vocab_size, seed=2)
    lp, lq = response_logprobs(p, lang).double(), response_logprobs(q, lang).double()
    brute = 0.0
    for _pi, prompt in enumerate(lang.prompts()):
        for _ri, resp in enumerate(lang.responses()):
            ids = torch.tensor([lang.encode(prompt, resp)])
            with torch.no_grad():
                a = float(
                    sequence_logprobs(
                        p, ids, start=lang.response_start, end=ids.size(1) - 1, allowed_ids=lang.symbol_ids
                    )
                )
                b = float(
                    sequence_logprobs(
                        q, ids, start=lang.response_start, end=ids.size(1) - 1, allowed_ids=lang.symbol_ids
                    )
                )
            brute += torch.tensor(a).exp().item() * (a - b)
    assert abs(float(kl_divergence(lp, lq).sum()) - brute) < 1e-4
    assert float(kl_divergence(lp, lp).abs().max()) < 1e-12


def test_optimal_policy_is_the_kl_regularised_optimum():
    ref = torch.log_softmax(torch.randn(2, 8, dtype=torch.float64), -1)
    r = torch.randn(2, 8, dtype=torch.float64)
    beta = 0.7
    opt = optimal_policy(ref, r, beta)

    def objective(lp):
        return ((lp.exp() * r).sum(-1) - beta * kl_divergence(lp, ref)).sum()

    best = objective(opt)
    for _ in range(20):
        other = torch.log_softmax(opt + 0.3 * torch.randn_like(opt), -1)
        assert objective(other) <= best + 1e-12
    with pytest.raises(InputError, match="beta"):
        optimal_policy(ref, r, 0.0)


def test_trainer_learns_and_resumes_exactly(tmp_path):
    lang = EnumerableLanguage("abc", prompt_len=1, response_len=3)
    cfg = TrainConfig(steps=12, batch_size=16, checkpoint_every=4, log_every=0, lr=1e-2)
    full = tiny_gpt2(lang.vocab_size, seed=0)
    res = train_lm(full, language_batches(lang), cfg)
    assert res.losses[-1] < res.losses[0]

    calls = {"n": 0}
    inner = language_batches(lang)

    def flaky(gen, bs):
        calls["n"] += 1
        if calls["n"] == 7:
            raise KeyboardInterrupt  # killed during step 7
        return inner(gen, bs)

    part = tiny_gpt2(lang.vocab_size, seed=0)
    ckpt = tmp_path / "ckpt.pt"
    with pytest.raises(KeyboardInterrupt):
        train_lm(part, flaky, cfg, checkpoint=ckpt)
    assert torch.load(ckpt, weights_only=True)["step"] == 4
    resumed = tiny_gpt2(lang.vocab_size, seed=0)
    r2 = train_lm(resumed, inner, cfg, checkpoint=ckpt)
    assert r2.resumed_from == 4 and r2.steps == 12
    for a, b in zip(full.parameters(), resumed.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert train_lm(resumed, inner, cfg, checkpoint=ckpt).resumed_from == 12  # already complete
    with pytest.raises(InputError, match="another TrainConfig"):
        train_lm(resumed, inner, TrainConfig(steps=20), checkpoint=ckpt)


def test_corpus_batches():
    ids = torch.arange(100)
    b = corpus_batches(ids, 8)(torch.Generator().manual_seed(0), 4)
    assert b["input_ids"].shape == (4, 8) and bool((b["input_ids"][:, 1:] - b["input_ids"][:, :-1] == 1).all())
    with pytest.raises(InputError):
        corpus_batches(torch.arange(5), 8)


def test_exact_alignment_approaches_the_optimum():
    lang = EnumerableLanguage("ab", prompt_len=1, response_len=3, seed=2)
    ref = tiny_gpt2(lang.vocab_size, seed=0)
    train_lm(ref, language_batches(lang), TrainConfig(steps=60, batch_size=32, log_every=0))  # an SFT reference
    ref_lp = response_logprobs(ref, lang).double()
    R = SymbolReward().table(lang)
    start = float(kl_divergence(ref_lp, optimal_policy(ref_lp, R, 0.5)).mean())
    pol = copy.deepcopy(ref)
    res = align_exact(pol, lang, ref_lp, R, 0.5, steps=60, lr=1e-2)
    assert res.kl_to_optimum < 0.05 * start
    with pytest.raises(InputError, match="differ in shape"):
        align_exact(pol, lang, ref_lp, R[:1], 0.5, steps=1)


def test_model_device_and_batch_to():
    from icml24.errors import InputError
    from icml24.nn.lm import batch_to, model_device

    assert model_device(torch.nn.Linear(2, 2)) == torch.device("cpu")
    assert model_device(torch.nn.ReLU()) == torch.device("cpu")  # no parameters
    batch = {"input_ids": torch.zeros(2, 3, dtype=torch.long), "n": 3}
    assert batch_to(batch, torch.device("cpu")) is batch and batch_to(batch, "cpu") is batch
    with pytest.raises(InputError, match="model"):
        model_device("gpt2")
    with pytest.raises(InputError, match="device"):
        batch_to(batch, "tpu")
