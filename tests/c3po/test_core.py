"""Unit and property tests of icml24.c3po: the adapter disabled is the reference, the loss with both lambdas 0 is
DPO (TRL's sigmoid formula in float64, and TRL itself when installed), completion-only labels, the anchor term,
a deterministic data pipeline, adapter composition and saving."""

import math
import random

import pytest
import torch

from icml24.c3po import (
    C3POConfig,
    Feedback,
    add_lora,
    anchor_loss,
    build_feedback_data,
    c3po_loss,
    completion_only_labels,
    compose_adapters,
    dpo_loss,
    feedback_rates,
    generate,
    in_context_cot_prompts,
    in_context_prompt,
    save_adapter,
    sequence_kl,
    train_feedback,
    word_feedback,
)
from icml24.c3po.encoding import encode
from icml24.c3po.world import AssistantWorld, instruction, rewrite_words
from icml24.errors import InputError
from icml24.nn.lm import tiny_llama

WORLD = AssistantWorld()
TOK = WORLD.tokenizer()
FB = word_feedback("and", "&", "dms to my colleagues")
CFG = C3POConfig(lora_r=4, lora_alpha=8, lr=1e-2, batch_size=4, max_length=64, max_prompt_length=48)


def tiny(seed=0):
    return tiny_llama(
        len(TOK),
        max_position_embeddings=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        tokenizer=TOK,
        seed=seed,
    )


def world_data(seed=0, respond=None):
    rng0 = random.Random(0)
    return build_feedback_data(
        FB,
        categories=lambda fb: WORLD.categories("colleague_dm")[:3],
        in_scope=lambda fb, c, n, rng: [WORLD.prompt("colleague_dm", rng, topic=c) for _ in range(n)],
        near_scope=lambda fb, c, n, rng: [WORLD.prompt("other_dm", rng, topic=c) for _ in range(n)],
        out_of_scope=lambda n, rng: [WORLD.prompt(rng.choice(["recipe", "trivia"]), rng) for _ in range(n)],
        respond=respond or (lambda ps: [WORLD.respond(p, rng0) for p in ps]),
        prompts_per_category=4,
        seed=seed,
    )


def perturbed(model):
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.5, generator=torch.Generator().manual_seed(1))
    return model


def test_adapter_disabled_is_the_reference_exactly():
    base = tiny()
    before = {k: v.clone() for k, v in base.state_dict().items()}
    peft_model = perturbed(add_lora(base, CFG))
    ids = torch.tensor([encode(TOK, "give me a recipe for soup", "you chop the onion and the rice", CFG)[0]])
    with torch.no_grad():
        ref = base(input_ids=ids).logits
        on = peft_model(input_ids=ids).logits
        with peft_model.disable_adapter():
            off = peft_model(input_ids=ids).logits
    assert torch.equal(off, ref)
    assert not torch.allclose(on, ref)
    assert all(torch.equal(before[k], v) for k, v in base.state_dict().items())  # the user's model is untouched
    names = {n.split(".")[-1] for n, _ in peft_model.named_modules() if "lora_A" in n}
    assert names and not any("lm_head" in n for n, _ in peft_model.named_modules() if n.endswith("lora_A"))


def trl_dpo64(pc, pr, rc, rr, beta):
    logits = (pc.double() - pr.double()) - (rc.double() - rr.double())
    return (-torch.log(torch.sigmoid(beta * logits))).mean()


@pytest.mark.parametrize("seed", range(5))
def test_loss_with_both_lambdas_zero_is_trl_dpo(seed):
    g = torch.Generator().manual_seed(seed)
    pc, pr, rc, rr = (torch.randn(6, generator=g, dtype=torch.float64) * 20 for _ in range(4))
    near, out = torch.rand((), generator=g) * 5, torch.rand((), generator=g) * 5
    beta = 0.1 + seed * 0.2
    ours = c3po_loss(pc, pr, rc, rr, near, out, beta=beta, lambda_near=0.0, lambda_out=0.0)
    assert torch.allclose(ours.double(), trl_dpo64(pc, pr, rc, rr, beta), atol=1e-12, rtol=0)
    assert torch.allclose(dpo_loss(pc, pr, rc, rr, beta=beta).double(), trl_dpo64(pc, pr, rc, rr, beta), atol=1e-12)
    full = c3po_loss(pc, pr, rc, rr, near, out, beta=beta, lambda_near=0.1, lambda_out=0.2)
    assert torch.allclose(full, ours + 0.1 * near + 0.2 * out, atol=1e-12)


def test_train_with_lambdas_zero_takes_dpo_steps():
    """C3PO steps with both lambdas 0 equal DPO steps (same rows, seed and adapter; no dropout, whose masks
    depend on the batch size)."""
    data = world_data()
    cfg = C3POConfig(**{**CFG.__dict__, "lambda_near": 0.0, "lambda_out": 0.0, "lora_dropout": 0.0})
    a = train_feedback(tiny(), TOK, data, method="c3po", config=cfg, steps=2)
    b = train_feedback(tiny(), TOK, data, method="dpo", config=cfg, steps=2)
    assert a.losses == pytest.approx(b.losses, abs=1e-6)
    assert a.losses[0] == pytest.approx(math.log(2), abs=1e-6)  # the adapter starts at the reference


def test_completion_only_labels_mask_the_prompt():
    ids, labels = encode(TOK, "write a dm to my colleague ravi about the budget", "hi ravi , thanks and bye", CFG)
    sep = TOK.convert_tokens_to_ids("<sep>")
    k = ids.index(sep) + 1
    assert labels[:k] == [-100] * k
    assert labels[k:] == ids[k:] and ids[-1] == TOK.eos_token_id
    assert completion_only_labels(ids, [sep]) == labels  # the official template search agrees
    assert completion_only_labels(ids, [TOK.convert_tokens_to_ids("&")]) == [-100] * len(ids)  # absent: ignored


def test_anchor_loss_against_float64_formula():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 7, 11, generator=g)
    teacher = torch.randn(3, 7, 11, generator=g)
    labels = torch.randint(0, 11, (3, 7), generator=g)
    labels[:, :3] = -100
    labels[2, 5:] = -100
    lp = torch.log_softmax(logits.double(), -1)
    nll_tok = -lp[:, :-1].gather(-1, labels[:, 1:].clamp(min=0).unsqueeze(-1)).squeeze(-1)
    m = labels[:, 1:] != -100
    per_mean = (nll_tok * m).sum(1) / m.sum(1)
    assert float(anchor_loss(logits, labels)) == pytest.approx(float(per_mean.mean()), abs=1e-6)
    assert float(anchor_loss(logits, labels, reduction="sum")) == pytest.approx(
        float((nll_tok * m).sum(1).mean()), abs=1e-5
    )
    T, lam = 2.0, 0.5
    s, t = torch.log_softmax(logits.double() / T, -1), torch.log_softmax(teacher.double() / T, -1)
    kl = ((t.exp() * (t - s)).sum(-1) * (labels != -100)).sum(-1).mean() * T**2
    want = (1 - lam) * per_mean.mean() + lam * kl
    got = anchor_loss(logits, labels, teacher_logits=teacher, kd_lambda=lam, kd_temperature=T)
    assert float(got) == pytest.approx(float(want), abs=1e-5)


def test_pipeline_is_deterministic_from_its_seed():
    a, b, c = world_data(seed=3), world_data(seed=3), world_data(seed=4)
    assert a.rows("train") == b.rows("train") and a.rows("test") == b.rows("test")
    assert a.rows("train") != c.rows("train")
    n_in = len(a.in_scope["train"]) + len(a.in_scope["test"])
    assert n_in == 12 and len(a.in_scope["test"]) == 2  # 3 categories x 4 prompts, ceil(10 %) held out
    for _p, y0, y1 in a.in_scope["train"]:
        assert y1 == rewrite_words(y0, "and", "&") and FB.improves(y1, y0)


def test_pipeline_drops_failed_calls_and_accepts_a_model():
    model = tiny()

    def respond(ps):  # a local model in place of the API, failing on every third prompt
        ys = generate(model, TOK, list(ps), max_new_tokens=4)
        return [None if i % 3 == 0 else y or "x" for i, y in enumerate(ys)]

    d = world_data(respond=respond)
    assert d.dropped > 0 and d.rows("train")


def test_feedback_rates_and_in_context_prompts():
    y0 = ["hi and bye", "hi and bye"]
    assert feedback_rates(FB, ["hi & bye", "hi and & bye"], y0) == 0.5
    p = in_context_prompt(FB, "write a dm", "feedback : {feedback} ; {prompt}")
    assert p == f"feedback : {FB.content} ; write a dm"
    out = in_context_cot_prompts(FB, ["a", "b"], lambda fb, ps: [True, False])
    assert out[1] == "b" and FB.content in out[0]
    assert instruction("ampersand", "colleague_dm") == "use & instead of and in dms to my colleagues"


def test_sequence_kl_is_zero_at_start_and_positive_after_training():
    data = world_data()
    res = train_feedback(tiny(), TOK, data, method="scd", config=CFG, steps=3)
    ps = [r[0] for r in data.out_of_scope["train"][:4]]
    ys = [r[1] for r in data.out_of_scope["train"][:4]]
    kl = sequence_kl(res.model, None, TOK, ps, ys)
    assert kl.dtype == torch.float64 and bool((kl > 0).all())
    fresh = add_lora(tiny(), CFG)
    assert float(sequence_kl(fresh, None, TOK, ps, ys).abs().max()) == 0.0


@pytest.mark.parametrize("mode", ["weights", "logits"])
def test_composition_sums_the_adapters_and_saved_adapters_load(tmp_path, mode):
    base = tiny()
    a = perturbed(add_lora(base, CFG))
    b = add_lora(base, C3POConfig(**{**CFG.__dict__, "seed": 1}))  # B = 0: adds nothing
    ids = torch.tensor([encode(TOK, "trivia : tell me about peru", "peru has great food", CFG)[0]])
    with torch.no_grad():
        want = a(input_ids=ids).logits
        both = compose_adapters(base, [a, b], mode=mode)(input_ids=ids).logits
    assert torch.allclose(both, want, atol=1e-5)
    save_adapter(a, tmp_path / "a")
    save_adapter(b, tmp_path / "b")
    with torch.no_grad():
        loaded = compose_adapters(base, [tmp_path / "a", tmp_path / "b"], mode=mode)(input_ids=ids).logits
    assert torch.allclose(loaded, want, atol=1e-5)
    a2 = perturbed(add_lora(base, C3POConfig(**{**CFG.__dict__, "seed": 2})))
    with torch.no_grad():
        delta_a = a(input_ids=ids).logits - base(input_ids=ids).logits
        two = compose_adapters(base, [a, a2], weights=[1.0, 0.0], mode=mode)(input_ids=ids).logits
    assert torch.allclose(two - base(input_ids=ids).logits, delta_a, atol=1e-4)


def test_logit_composition_adds_each_adapters_logit_shift_and_decodes_from_it():
    base = tiny()
    a = perturbed(add_lora(base, CFG))
    a2 = perturbed(add_lora(base, C3POConfig(**{**CFG.__dict__, "seed": 2})))
    ids = torch.tensor([encode(TOK, "trivia : tell me about peru", "peru has great food", CFG)[0]])
    both = compose_adapters(base, [a, a2], weights=[1.0, 0.5], mode="logits")
    with torch.no_grad():
        b0 = base(input_ids=ids).logits
        want = b0 + (a(input_ids=ids).logits - b0) + 0.5 * (a2(input_ids=ids).logits - b0)
        assert torch.allclose(both(input_ids=ids).logits, want, atol=1e-5)
        with both.disable_adapter():
            assert torch.allclose(both(input_ids=ids).logits, b0, atol=1e-6)
    prompts = ["give me a recipe for soup", "write a dm to my colleague ana about the budget"]
    # one adapter at weight 1 decodes exactly as the adapted model (the KV caches and left padding included)
    assert generate(compose_adapters(base, [a], mode="logits"), TOK, prompts, max_new_tokens=8) == generate(
        a, TOK, prompts, max_new_tokens=8
    )
    # with two adapters, every greedy token is the argmax of the composed logits of the sequence before it
    pad = TOK.pad_token_id if TOK.pad_token_id is not None else TOK.eos_token_id
    enc = [TOK(p, add_special_tokens=False)["input_ids"] for p in prompts]
    n = max(map(len, enc))
    x = torch.tensor([[pad] * (n - len(e)) + e for e in enc])
    m = torch.tensor([[0] * (n - len(e)) + [1] * len(e) for e in enc])
    out = both.generate(x, m, max_new_tokens=6, pad_token_id=pad)
    full_m = torch.cat([m, torch.ones(2, out.shape[1] - n, dtype=m.dtype)], 1)
    with torch.no_grad():
        lg = both(input_ids=out, attention_mask=full_m, position_ids=(full_m.cumsum(-1) - 1).clamp(min=0)).logits
    assert torch.equal(lg[:, n - 1 : -1].argmax(-1), out[:, n:])
    sampled = generate(both, TOK, prompts, max_new_tokens=6, do_sample=True, temperature=0.7, top_p=0.7, seed=3)
    assert sampled == generate(both, TOK, prompts, max_new_tokens=6, do_sample=True, temperature=0.7, top_p=0.7, seed=3)
    # an explicit generator is the only source of randomness: same seed, same tokens; torch's global RNG untouched
    state = torch.get_rng_state()
    draws = [
        both.generate(
            x, m, max_new_tokens=6, pad_token_id=pad, do_sample=True, generator=torch.Generator().manual_seed(s)
        )
        for s in (5, 5, 6)
    ]
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(draws[0], draws[1]) and draws[0].shape[0] == 2
    with pytest.raises(InputError, match="generator must be a torch.Generator"):
        both.generate(x, m, max_new_tokens=2, do_sample=True, generator=5)


def test_smollm2_arm_runs_end_to_end_on_any_loaded_model(monkeypatch):
    # the real SmolLM2 takes ~30 s to load: the arm's pipeline is checked on a tiny model put in its place
    import icml24.nn.pretrained as pretrained
    from icml24.c3po.smollm2 import smollm2_arm

    monkeypatch.setattr(pretrained, "load_smollm2", lambda: (tiny(), TOK))
    m = smollm2_arm(2, per_category=1, n_eval=3, max_new_tokens=6, batch=2, seed=0)
    for name in ("base", "in_context", "c3po"):
        assert all(0.0 <= m[f"{name}_{k}"] <= 1.0 for k in ("adherence", "near", "out", "overgen"))
    assert m["rows"] >= 1 and m["c3po_kl_out"] >= 0.0 and m["seconds_per_step"] > 0


def test_cli_smollm2_refuses_zero_steps(capsys):
    from icml24.cli import main

    assert main(["c3po", "learn", "--model", "smollm2", "--steps", "0"]) != 0
    assert capsys.readouterr().err.strip().splitlines()[0].startswith("error: --steps")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_trains_generates_and_composes_on_cuda():
    base = tiny().cuda()
    data = world_data()
    res = train_feedback(base, TOK, data, method="c3po", config=CFG, steps=3)
    assert next(res.model.parameters()).is_cuda and all(math.isfinite(v) for v in res.losses)
    ps = [r[0] for r in data.out_of_scope["train"][:3]]
    ys = generate(res.model, TOK, ps, max_new_tokens=5, do_sample=True, seed=1)
    assert float(sequence_kl(res.model, None, TOK, ps, ys).min()) >= 0.0
    other = train_feedback(base, TOK, data, method="scd", config=CFG, steps=2).model
    both = compose_adapters(base, [res.model, other], mode="logits")
    assert generate(both, TOK, ps, max_new_tokens=5) == generate(both.cpu(), TOK, ps, max_new_tokens=5)


def test_composed_feedback_leaves_its_adapters_state_alone(monkeypatch):
    """Forward and generate switch adapters (PEFT's set_adapter turns requires_grad on); they give the active adapter
    and every requires_grad back, after a failure inside decoding too."""
    import icml24.c3po.adapters as adapters

    base = tiny()
    both = compose_adapters(base, [perturbed(add_lora(base, CFG)), add_lora(base, CFG)], mode="logits")

    def state():
        return both.peft_model.active_adapter, [p.requires_grad for p in both.parameters()]

    before = state()
    ids = torch.tensor([encode(TOK, "trivia : tell me about peru", "peru", CFG)[0]])
    with torch.no_grad():
        both(input_ids=ids)
    both.generate(ids, max_new_tokens=3)
    sequence_kl(both, None, TOK, ["give me a recipe for soup"], ["you chop the onion"])  # through disable_adapter
    assert state() == before
    frozen = add_lora(base, CFG).requires_grad_(False)  # PEFT's disable_adapter turns the adapter's grads back on
    sequence_kl(frozen, None, TOK, ["give me a recipe for soup"], ["you chop the onion"])
    assert not any(p.requires_grad for p in frozen.parameters())

    def failing(step, input_ids, attention_mask, **kw):
        step(input_ids, torch.ones_like(input_ids), input_ids.size(1))
        raise RuntimeError("interrupted")

    monkeypatch.setattr(adapters, "decode", failing)
    with pytest.raises(RuntimeError, match="interrupted"):
        both.generate(ids, max_new_tokens=3)
    sequence_kl(both, None, TOK, ["give me a recipe for soup"], ["you chop the onion"])  # through disable_adapter
    assert state() == before
    frozen = add_lora(base, CFG).requires_grad_(False)  # PEFT's disable_adapter turns the adapter's grads back on
    sequence_kl(frozen, None, TOK, ["give me a recipe for soup"], ["you chop the onion"])
    assert not any(p.requires_grad for p in frozen.parameters())


def test_sequence_kl_scores_in_eval_mode_and_gives_the_modes_back():
    """A policy left in training mode was scored with dropout on (noise in an exact KL); now as in eval mode."""
    adapted = perturbed(add_lora(tiny(), C3POConfig(**{**CFG.__dict__, "lora_dropout": 0.5})))
    args = (TOK, ["give me a recipe for soup"] * 3, ["you chop the onion and the rice"] * 3)
    want = sequence_kl(adapted.eval(), None, *args)
    assert torch.equal(sequence_kl(adapted.train(), None, *args), want) and float(want.min()) > 0
    assert all(m.training for m in adapted.modules())


def test_names_are_stored_as_spelled_in_their_lists():
    """'Quantitative' and 'GT' were accepted but stored as given: the metric check and improves() missed them."""
    fb = Feedback("a", "b", "c", kind="Quantitative", comparison="GT", metric=len)
    assert (fb.kind, fb.comparison) == ("quantitative", "gt") and fb.improves("long", "s")
    with pytest.raises(InputError, match="metric"):
        Feedback("a", "b", "c", kind="Quantitative")
    cfg = C3POConfig(sft_reduction="SUM", target_modules=["q_proj", "v_proj"])
    assert cfg.sft_reduction == "sum" and cfg.target_modules == ("q_proj", "v_proj") and hash(cfg)
