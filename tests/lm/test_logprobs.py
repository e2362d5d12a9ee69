"""The one token log-probability convention (icml24.nn.logprobs) and the key/value-cache helpers (nn.decoding)."""

import inspect

import pytest
import torch

from icml24.errors import InputError
from icml24.nn import cache_keyword, next_token_logprobs, output_cache, sequence_logprobs, token_logprobs
from icml24.nn.lm import tiny_gpt2, tiny_llama


def _logits_labels(seed=0, B=3, T=6, V=11):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, T, V, generator=g), torch.randint(0, V, (B, T), generator=g)


def test_token_logprobs_is_log_softmax_then_gather_shifted_by_one():
    logits, ids = _logits_labels()
    want = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    assert torch.equal(token_logprobs(logits, ids), want)  # bit for bit: the formula every caller used
    assert torch.equal(token_logprobs(logits.double(), ids), want.float())  # always float32
    assert torch.equal(token_logprobs(logits, ids, reduction="sum"), want.sum(1))


def test_mask_ignore_index_and_reductions():
    logits, ids = _logits_labels(1)
    labels = ids.clone()
    labels[0, :3] = -100  # a prompt that is not scored
    mask = torch.ones_like(ids)
    mask[1, -2:] = 0  # padding that is not scored
    mask[2, 0] = 0  # column 0 is never scored anyway
    full = token_logprobs(logits, ids)
    scored = (labels[:, 1:] != -100) & mask[:, 1:].bool()
    none = token_logprobs(logits, labels, mask=mask)
    assert torch.equal(none, torch.where(scored, full, torch.zeros_like(full)))
    assert torch.equal(token_logprobs(logits, labels, mask=mask, reduction="sum"), none.sum(1))
    mean = token_logprobs(logits, labels, mask=mask, reduction="mean")
    torch.testing.assert_close(mean, none.sum(1) / scored.sum(1))
    nothing = token_logprobs(logits, torch.full_like(ids, -100), reduction="mean")
    assert torch.equal(nothing, torch.zeros(3))
    with pytest.raises(InputError, match="reduction"):
        token_logprobs(logits, ids, reduction="average")


def test_allowed_ids_renormalise_and_mark_outside_tokens_nan():
    logits, ids = _logits_labels(2, V=6)
    allowed = torch.tensor([1, 3, 4])
    sub = next_token_logprobs(logits, allowed)
    torch.testing.assert_close(sub.exp().sum(-1), torch.ones(sub.shape[:-1]))
    ids = allowed[ids % 3]
    ids[0, 2] = 5
    lp = token_logprobs(logits, ids, allowed)
    assert bool(torch.isnan(lp[0, 1])) and int(torch.isnan(lp).sum()) == 1
    pos = torch.tensor([-1, 0, -1, 1, 2, -1])
    assert torch.equal(lp[1], sub[1, :-1].gather(-1, pos[ids[1, 1:]].unsqueeze(-1)).squeeze(-1))
    mask = torch.ones_like(ids)
    mask[0, 2] = 0  # the token outside allowed_ids is not scored: 0, not NaN
    assert not bool(torch.isnan(token_logprobs(logits, ids, allowed, mask=mask)).any())


def test_sequence_logprobs_scores_from_start_and_refuses_outside_tokens():
    model = tiny_gpt2(8, n_positions=16, n_embd=16, n_layer=1, n_head=2, seed=0)
    ids = torch.tensor([[1, 2, 3, 4, 5], [1, 5, 4, 3, 2]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    per_token = token_logprobs(logits, ids)
    got = sequence_logprobs(model, ids, start=torch.tensor([2, 3]))
    torch.testing.assert_close(got, torch.stack([per_token[0, 1:].sum(), per_token[1, 2:].sum()]))
    with pytest.raises(InputError, match="outside allowed_ids"):
        sequence_logprobs(model, ids, start=1, allowed_ids=torch.tensor([1, 2, 3, 4]))
    sequence_logprobs(model, ids[:1, :4], start=1, allowed_ids=torch.tensor([1, 2, 3, 4]))


@pytest.mark.parametrize("make", [tiny_gpt2, tiny_llama])
def test_cache_keyword_and_output_cache_drive_incremental_decoding(make):
    model = make(10, seed=0)
    kw = cache_keyword(model)
    assert kw in inspect.signature(model.forward).parameters
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        full = model(input_ids=ids).logits[:, -1]
        first = model(input_ids=ids[:, :3], use_cache=True)
        step = model(input_ids=ids[:, 3:], use_cache=True, **{kw: output_cache(first)}).logits[:, -1]
    torch.testing.assert_close(step, full, rtol=1e-5, atol=1e-5)


def test_cache_keyword_reads_a_peft_model_through_its_base():
    pytest.importorskip("peft")
    from peft import LoraConfig, get_peft_model

    model = tiny_gpt2(10, seed=0)
    wrapped = get_peft_model(tiny_gpt2(10, seed=0), LoraConfig(r=2, target_modules=["c_attn"], fan_in_fan_out=True))
    assert cache_keyword(wrapped) == cache_keyword(model)


@pytest.mark.parametrize(
    "call, arg",
    [
        (lambda L, Y: token_logprobs("x", Y), "logits"),
        (lambda L, Y: token_logprobs(L[0], Y), "logits"),
        (lambda L, Y: token_logprobs(L, Y.float()), "labels"),
        (lambda L, Y: token_logprobs(L, Y[:, :3]), "labels"),
        (lambda L, Y: token_logprobs(L, Y, mask=torch.ones(3)), "mask"),
        (lambda L, Y: token_logprobs(L, Y, allowed_ids=torch.tensor([99])), "allowed_ids"),
        (lambda L, Y: next_token_logprobs("x"), "logits"),
        (lambda L, Y: next_token_logprobs(L, allowed_ids=torch.tensor([[1]])), "allowed_ids"),
    ],
)
def test_bad_input_is_one_line_naming_the_argument(call, arg):
    L, Y = torch.randn(2, 5, 7), torch.randint(0, 7, (2, 5))
    with pytest.raises(InputError, match=rf"^{arg} must be"):
        call(L, Y)


def test_cache_keyword_refuses_what_is_not_a_model():
    with pytest.raises(InputError, match="^model must be a torch.nn.Module"):
        cache_keyword("gpt2")
