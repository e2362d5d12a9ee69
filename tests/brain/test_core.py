import copy

import pytest
import torch

from icml24.brain import (
    BrainConfig,
    brain_dpo_loss,
    brain_loss,
    dpo_loss,
    effective_sample_size,
    estimator_weights,
    policy_weights,
    sample_responses,
    target_weights,
    train_brain,
)
from icml24.data.text import EnumerableLanguage
from icml24.nn.lm import response_logprobs, sequence_logprobs, tiny_gpt2

F64 = torch.float64


def _tables(P=3, n=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(P, n, generator=g, dtype=F64) * 4 - 8 for _ in range(3)] + [
        torch.randn(P, n, generator=g, dtype=F64) * 2
    ]


def test_estimated_z_turns_dpg_into_alpha_and_gdcpp_into_an_unnormalised_baseline():
    pol, prop, prior, r = _tables(P=4, n=6, seed=3)
    alpha = target_weights(prior, r, prop, 0.7)
    dpg = estimator_weights("dpg", pol, prop, prior, r, beta=0.7, log_z="estimate")
    gdc = estimator_weights("gdcpp", pol, prop, prior, r, beta=0.7, log_z="estimate")
    assert torch.allclose(dpg, alpha, atol=1e-12)
    assert torch.allclose(gdc, alpha - torch.exp(pol - prop) / 6, atol=1e-12)
    # the exact Z gives other weights: the estimate is what changed them
    exact = torch.logsumexp(prior + r / 0.7 - prop, -1) + 1.0
    assert not torch.allclose(estimator_weights("dpg", pol, prop, prior, r, beta=0.7, log_z=exact), alpha)


def test_gradient_is_the_brain_estimator_float64():
    # a tiny linear-softmax "policy" so grad log q is explicit: log q(y_i) = theta[y_i] - logsumexp(theta)
    g = torch.Generator().manual_seed(1)
    theta = torch.randn(7, generator=g, dtype=F64, requires_grad=True)
    ys = torch.randint(7, (4, 6), generator=g)
    prop = torch.randn(4, 6, generator=g, dtype=F64) - 2
    prior = torch.randn(4, 6, generator=g, dtype=F64) - 2
    r = torch.randn(4, 6, generator=g, dtype=F64)
    logq = theta[ys] - torch.logsumexp(theta, 0)
    (auto,) = torch.autograd.grad(brain_loss(logq, prop, prior, r, beta=0.7), theta)
    # manual: -mean_x sum_i (alpha_i - beta_hat_i) grad log q(y_i), with an independent formula for each piece
    a = prior + r / 0.7 - prop
    alpha = torch.exp(a - torch.logsumexp(a, 1, keepdim=True))
    b = logq.detach() - prop
    bhat = torch.exp(b - torch.logsumexp(b, 1, keepdim=True))
    soft = torch.softmax(theta.detach(), 0)
    manual = torch.zeros(7, dtype=F64)
    for x in range(4):
        for i in range(6):
            grad_logq = torch.nn.functional.one_hot(ys[x, i], 7).to(F64) - soft
            manual -= (alpha[x, i] - bhat[x, i]) * grad_logq / 4
    torch.testing.assert_close(auto, manual, rtol=1e-12, atol=1e-12)
    w = estimator_weights("brain", logq.detach(), prop, prior, r, beta=0.7)
    torch.testing.assert_close(w, alpha - bhat, rtol=1e-12, atol=1e-12)


def test_weights_invariant_to_per_prompt_constants():
    pol, prop, prior, r = _tables()
    shift = torch.tensor([[3.0], [-50.0], [400.0]], dtype=F64)
    torch.testing.assert_close(target_weights(prior, r + shift, prop), target_weights(prior, r, prop))
    l1 = brain_loss(pol, prop, prior, r)
    l2 = brain_loss(pol, prop, prior, r + shift)
    torch.testing.assert_close(l1, l2)
    # but not to a per-sample change
    assert not torch.allclose(
        target_weights(prior, r + torch.arange(5.0, dtype=F64), prop), target_weights(prior, r, prop)
    )


def test_policy_as_proposal_gives_uniform_policy_weights():
    pol, _, prior, r = _tables()
    w = policy_weights(pol, pol.clone())
    torch.testing.assert_close(w, torch.full_like(w, 0.2))
    e = effective_sample_size(target_weights(prior, r, pol))
    assert bool(((e >= 1) & (e <= 5)).all())


def test_dpo_option_equals_dpo_formula_and_normalisation_is_per_prompt():
    pol, _, ref, r = _tables(P=6, n=2)
    pol.requires_grad_(True)
    lb = brain_dpo_loss(pol, ref, r, dpo_beta=0.3)
    w = r.argmax(1)
    rows = torch.arange(6)
    ld = dpo_loss(pol[rows, w], pol[rows, 1 - w], ref[rows, w], ref[rows, 1 - w], beta=0.3)
    torch.testing.assert_close(lb, ld, rtol=0, atol=1e-12)
    # per-prompt: the loss of a batch is the mean of the single-prompt losses
    singles = torch.stack([brain_dpo_loss(pol[i : i + 1], ref[i : i + 1], r[i : i + 1], dpo_beta=0.3) for i in rows])
    torch.testing.assert_close(lb, singles.mean())


def test_no_baseline_option_drops_the_policy_term():
    pol, prop, prior, r = _tables()
    pol.requires_grad_(True)
    loss = brain_loss(pol, prop, prior, r, baseline=False)
    (g,) = torch.autograd.grad(loss, pol)
    torch.testing.assert_close(g, -target_weights(prior, r, prop) / 3)


@pytest.fixture(scope="module")
def world():
    lang = EnumerableLanguage(symbols="abc", prompt_len=1, response_len=3, seed=0)
    model = tiny_gpt2(lang.vocab_size, n_positions=12, n_embd=16, n_layer=1, n_head=2, tokenizer=lang.tokenizer)
    return lang, model


def test_sampler_stores_true_logprobs_and_matches_the_distribution(world):
    lang, model = world
    prompts = torch.tensor([lang.encode(p) for p in lang.prompts()])
    s = sample_responses(
        model, prompts, 400, 3, generator=torch.Generator().manual_seed(0), allowed_ids=lang.symbol_ids
    )
    Tp = prompts.size(1)
    again = sequence_logprobs(model, s["input_ids"], start=Tp, allowed_ids=lang.symbol_ids)
    torch.testing.assert_close(s["logprob"], again, rtol=1e-5, atol=1e-5)
    exact = response_logprobs(model, lang).exp()[0]  # prompt "a"
    resp = [lang.decode_response(row[Tp:]) for row in s["input_ids"][:400]]
    freq = torch.tensor([resp.count(x) / 400 for x in lang.responses()])
    assert float((freq - exact).abs().max()) < 0.08


def test_sampler_masks_after_eos(world):
    lang, model = world
    prompts = torch.tensor([lang.encode("a")])
    s = sample_responses(model, prompts, 50, 5, generator=torch.Generator().manual_seed(1), eos_token_id=lang.eos_id)
    again = sequence_logprobs(model, s["input_ids"], start=prompts.size(1), attention_mask=s["attention_mask"])
    torch.testing.assert_close(s["logprob"], again, rtol=1e-5, atol=1e-5)


def test_sampler_with_kv_cache_draws_what_the_full_recompute_draws(world):
    lang, model = world
    prompts = torch.tensor([lang.encode(p) for p in lang.prompts()])
    kw = dict(generator=None, eos_token_id=lang.eos_id)
    runs = [
        sample_responses(model, prompts, 20, 5, **{**kw, "generator": torch.Generator().manual_seed(3)}, use_cache=c)
        for c in (True, False)
    ]
    assert torch.equal(runs[0]["input_ids"], runs[1]["input_ids"])
    assert torch.equal(runs[0]["attention_mask"], runs[1]["attention_mask"])
    torch.testing.assert_close(runs[0]["logprob"], runs[1]["logprob"], rtol=1e-5, atol=1e-5)


def test_trainer_moves_toward_the_posterior_and_resumes(world, tmp_path):
    lang, prior = world
    prompts = torch.tensor([lang.encode(p) for p in lang.prompts()])
    k = len(lang.symbols)
    pos = torch.full((lang.vocab_size,), -1)
    pos[lang.symbol_ids] = torch.arange(k)

    def reward_fn(p, resp):
        return (pos[resp] == 0).sum(1).float() * 2.0  # two nats per "a"

    before = float(response_logprobs(prior, lang).exp()[:, 0].mean())  # P("aaa")
    pol = copy.deepcopy(prior)
    cfg = BrainConfig(n=4, steps=30, prompts_per_step=3, max_new_tokens=3, refresh_every=5, lr=1e-2, seed=0)
    res = train_brain(pol, prior, prompts, reward_fn, cfg, allowed_ids=lang.symbol_ids)
    assert res.steps == 30 and res.samples == 30 * 3 * 4 and len(res.ess) == 30 and not pol.training
    assert float(response_logprobs(pol, lang).exp()[:, 0].mean()) > 2 * before
    # resume: a run stopped at 30 steps and continued to 40 equals the continued checkpointed run's step count
    ck = tmp_path / "ck.pt"
    p2 = copy.deepcopy(prior)
    train_brain(
        p2,
        prior,
        prompts,
        reward_fn,
        BrainConfig(**{**cfg.__dict__, "steps": 8}),
        allowed_ids=lang.symbol_ids,
        checkpoint=ck,
    )
    r2 = train_brain(
        p2,
        prior,
        prompts,
        reward_fn,
        BrainConfig(**{**cfg.__dict__, "steps": 8}),
        allowed_ids=lang.symbol_ids,
        checkpoint=ck,
    )
    assert r2.steps == 8 and r2.samples == 0


def test_trainer_with_lora_on_a_llama_moves_only_the_adapter():
    peft = pytest.importorskip("peft")
    from icml24.nn.lm import tiny_llama

    lang = EnumerableLanguage(symbols="abc", prompt_len=1, response_len=3, seed=0)
    prior = tiny_llama(lang.vocab_size, max_position_embeddings=16, hidden_size=32, num_hidden_layers=1, seed=0)
    base = {k: v.clone() for k, v in prior.state_dict().items()}
    policy = peft.get_peft_model(
        copy.deepcopy(prior), peft.LoraConfig(r=2, lora_alpha=4, lora_dropout=0.0, target_modules=["q_proj", "v_proj"])
    )
    prompts = torch.tensor([lang.encode(p) for p in lang.prompts()])
    lora0 = {k: v.clone() for k, v in policy.named_parameters() if "lora_B" in k}

    def reward_fn(p, resp):
        return (resp == lang.symbol_ids[0]).sum(1).float()

    cfg = BrainConfig(n=3, steps=3, prompts_per_step=2, max_new_tokens=3, lr=1e-2, seed=0)
    res = train_brain(policy, prior, prompts, reward_fn, cfg, eos_token_id=lang.eos_id)
    assert res.steps == 3 and all(torch.isfinite(torch.tensor(res.losses)))
    assert any(not torch.equal(v, lora0[k]) for k, v in policy.named_parameters() if "lora_B" in k)
    assert all(torch.equal(v, base[k]) for k, v in prior.state_dict().items())
    with policy.disable_adapter():
        ids = prompts[:2]
        torch.testing.assert_close(policy(input_ids=ids).logits, prior(input_ids=ids).logits)


def test_config_is_checked_and_normalised_at_construction():
    cfg = BrainConfig(estimator="BRAIN", n=torch.tensor(3), beta=2)
    assert (cfg.estimator, cfg.n, cfg.beta) == ("brain", 3, 2.0) and type(cfg.n) is int
    cfg.n = 1  # a field set after construction is checked again when the run starts
    with pytest.raises(ValueError, match="n must be"):
        cfg.validated()


def test_checkpoint_in_a_new_folder_is_written(world, tmp_path):
    lang, prior = world
    prompts = torch.tensor([lang.encode(p) for p in lang.prompts()])
    ck = tmp_path / "new" / "sub" / "ck.pt"
    cfg = BrainConfig(n=2, steps=2, prompts_per_step=2, max_new_tokens=3, seed=0)

    def reward_fn(p, resp):
        return torch.zeros(resp.size(0))

    res = train_brain(copy.deepcopy(prior), prior, prompts, reward_fn, cfg, allowed_ids=lang.symbol_ids, checkpoint=ck)
    assert res.steps == 2 and ck.is_file()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_effective_sample_size_of_weights_on_the_gpu():
    w = torch.full((3, 4), 0.25, device="cuda")
    assert torch.allclose(effective_sample_size(w).cpu(), torch.full((3,), 4.0))
