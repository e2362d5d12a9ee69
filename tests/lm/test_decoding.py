"""The one decoding loop (icml24.nn.decoding.decode with model_step): greedy decoding equals transformers'
``generate`` on left-padded prompts, sampled tokens carry their exact log-probabilities, bad input is refused."""

import pytest
import torch

from icml24.errors import InputError
from icml24.nn import decode, model_step, sample_responses, token_logprobs
from icml24.nn.lm import tiny_llama


def _model():
    torch.manual_seed(0)
    return tiny_llama(40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2).eval()


def _left_padded():
    ids = torch.tensor([[0, 0, 5, 6, 7], [9, 3, 4, 8, 2], [0, 0, 0, 11, 12]])
    mask = (torch.arange(5) >= torch.tensor([[2], [0], [3]])).long()
    return ids, mask


@pytest.mark.parametrize("use_cache", [True, False])
def test_greedy_decode_equals_generate_with_left_padding(use_cache):
    model = _model()
    ids, mask = _left_padded()
    with torch.no_grad():
        want = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=6, do_sample=False, pad_token_id=0)
        got = decode(model_step(model, use_cache=use_cache), ids, mask, max_new_tokens=6, do_sample=False)
    assert torch.equal(got["input_ids"], want)


def test_sampled_tokens_carry_their_exact_logprob_and_the_generator_decides():
    model = _model()
    ids, mask = _left_padded()
    with torch.no_grad():
        a = decode(model_step(model), ids, mask, max_new_tokens=5, generator=torch.Generator().manual_seed(4))
        b = decode(model_step(model), ids, mask, max_new_tokens=5, generator=torch.Generator().manual_seed(4))
        c = decode(model_step(model), ids, mask, max_new_tokens=5, generator=torch.Generator().manual_seed(5))
        pos = (a["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        logits = model(input_ids=a["input_ids"], attention_mask=a["attention_mask"], position_ids=pos).logits
    assert torch.equal(a["input_ids"], b["input_ids"]) and not torch.equal(a["input_ids"], c["input_ids"])
    scored = torch.zeros_like(a["attention_mask"])
    scored[:, ids.size(1) :] = 1
    rescored = token_logprobs(logits, a["input_ids"], mask=scored, reduction="sum")
    torch.testing.assert_close(a["logprob"], rescored, atol=1e-4, rtol=1e-4)


def test_eos_pads_and_masks_the_rest_and_allowed_ids_restrict_the_draws():
    model = _model()
    ids = torch.tensor([[5, 6], [7, 8]])
    allowed = torch.tensor([3, 4, 5])
    out = sample_responses(model, ids, 4, 12, generator=torch.Generator().manual_seed(0), allowed_ids=allowed,
                           eos_token_id=3, pad_token_id=0)  # fmt: skip
    new, m = out["input_ids"][:, 2:], out["attention_mask"][:, 2:]
    for row, mrow in zip(new.tolist(), m.tolist()):
        if 3 in row:
            k = row.index(3)
            assert all(t == 0 for t in row[k + 1 :]) and all(v == 0 for v in mrow[k + 1 :])
            row = row[: k + 1]
        assert set(row) <= {3, 4, 5}
    assert out["prompt_index"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]


def test_decode_and_model_step_refuse_bad_input():
    model = _model()
    ids = torch.tensor([[5, 6]])
    step = model_step(model)
    for call, name in [
        (lambda: decode(None, ids, max_new_tokens=2), "step"),
        (lambda: decode(step, ids.float(), max_new_tokens=2), "input_ids"),
        (lambda: decode(step, ids, torch.ones(1, 3), max_new_tokens=2), "attention_mask"),
        (lambda: decode(step, ids, max_new_tokens=0), "max_new_tokens"),
        (lambda: decode(step, ids, max_new_tokens=2, temperature=0.0), "temperature"),
        (lambda: decode(step, ids, max_new_tokens=2, top_p=1.5), "top_p"),
        (lambda: decode(step, ids, max_new_tokens=2, generator=3), "generator"),
        (lambda: decode(step, ids, max_new_tokens=2, eos_token_id=-1), "eos_token_id"),
        (lambda: model_step(3), "forward"),
        (lambda: model_step(model, keyword="kv"), "keyword"),
        (lambda: sample_responses("gpt2", ids, 2, 2, generator=torch.Generator()), "model"),
        (lambda: sample_responses(torch.nn.Linear(2, 2), ids, 2, 2, generator=torch.Generator()), "model"),
        (lambda: sample_responses(model, ids + 40, 2, 2, generator=torch.Generator()), "prompt_ids"),
        (
            lambda: sample_responses(model, ids, 2, 2, generator=torch.Generator(), allowed_ids=torch.tensor([3, 40])),
            "allowed_ids",
        ),
        (lambda: decode(step, ids, max_new_tokens=2, allowed_ids=torch.tensor([3, 4, 3])), "allowed_ids"),
        (lambda: decode(lambda s, m, n: torch.full((1, 40), float("nan")), ids, max_new_tokens=2), "step"),
    ]:
        with pytest.raises(InputError, match=name):
            call()
