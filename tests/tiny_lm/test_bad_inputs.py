"""Every public callable of icml24.tiny_lm refuses bad input with a one-line InputError naming the argument, and
leaves the objects passed in (models, tensors) unchanged."""

import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

import icml24.tiny_lm as tl
from icml24.nn.lm import tiny_gpt2
from icml24.testing import assert_refuses, bad, coverage_gaps
from icml24.tiny_lm import (
    batch_losses,
    compact_tokenizer,
    count_parameters,
    embedding_share,
    evaluate,
    greedy_decode_speed,
    hard_topk_mask,
    inherit,
    learn_masks,
    random_init_like,
    recipe,
    resample_batches,
    sampling_probabilities,
    select_layers,
    sheared_masks,
    token_coverage,
    token_frequencies,
    tokens_per_byte,
    train_on_batches,
    width_for_params,
    width_scores,
)

NAN = float("nan")


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = "the a cat dog sat on mat good bad is was very not".split()
    vocab = {"<pad>": 0, "<unk>": 1, "<s>": 2, "</s>": 3, **{w: i + 4 for i, w in enumerate(words)}}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )


TOK = _tokenizer()
TEXT = "the cat sat on the mat the dog was very good"
COUNTS = token_frequencies(TOK, TEXT)
CT = compact_tokenizer(TOK, COUNTS, 10)
P = LlamaForCausalLM(
    LlamaConfig(
        num_hidden_layers=2,
        hidden_size=32,
        intermediate_size=48,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        vocab_size=17,
        max_position_embeddings=32,
    )
).eval()
GPT = tiny_gpt2(17, n_positions=16, n_embd=8, n_layer=1, n_head=2)
X = torch.randint(17, (6, 8), generator=torch.Generator().manual_seed(0))
B = X.view(3, 2, 8)
L = torch.tensor([1.0, 2.0, 3.0, 0.5])


def small(**kw):
    return inherit(P, **{**dict(num_layers=1, hidden_size=16, num_heads=2, intermediate_size=24), **kw})


def masks(fn, **kw):
    return fn(P, kw.pop("batches", X), **{**dict(hidden_size=16, num_heads=2, intermediate_size=24, steps=1), **kw})


CASES = [
    # ----------------------------------------------------------------------------------- tokenizer
    bad("token_frequencies", "tokenizer", lambda: token_frequencies(object(), TEXT), kind="slow"),
    bad("token_frequencies", "texts", lambda: token_frequencies(TOK, 5), kind="type"),
    bad("token_frequencies", "texts", lambda: token_frequencies(TOK, []), kind="empty"),
    bad("token_frequencies", "texts", lambda: token_frequencies(TOK, ["a", 3]), kind="item"),
    bad("token_frequencies", "texts", lambda: token_frequencies(TOK, [""]), kind="blank"),
    bad("compact_tokenizer", "vocab_size", lambda: compact_tokenizer(TOK, COUNTS, 2), kind="below-specials"),
    bad("compact_tokenizer", "vocab_size", lambda: compact_tokenizer(TOK, COUNTS, 100), kind="grow"),
    bad("compact_tokenizer", "vocab_size", lambda: compact_tokenizer(TOK, COUNTS, 4.5), kind="float"),
    bad("compact_tokenizer", "corpus", lambda: compact_tokenizer(TOK, COUNTS[:5], 10), kind="shape"),
    bad("compact_tokenizer", "corpus", lambda: compact_tokenizer(TOK, -COUNTS, 10), kind="negative"),
    bad("compact_tokenizer", "corpus", lambda: compact_tokenizer(TOK, None, 10), kind="none"),
    bad("compact_tokenizer", "tokenizer", lambda: compact_tokenizer("gpt2", TEXT, 10), kind="name"),
    bad("tokens_per_byte", "tokenizer", lambda: tokens_per_byte(None, TEXT), kind="none"),
    bad("tokens_per_byte", "texts", lambda: tokens_per_byte(TOK, 5), kind="type"),
    bad("tokens_per_byte", "texts", lambda: tokens_per_byte(TOK, []), kind="empty"),
    bad("tokens_per_byte", "texts", lambda: tokens_per_byte(TOK, [""]), kind="blank"),
    bad("tokens_per_byte", "texts", lambda: tokens_per_byte(TOK, ["a", None]), kind="item"),
    bad("token_coverage", "compact", lambda: token_coverage(None, COUNTS), kind="none"),
    bad("token_coverage", "counts", lambda: token_coverage(CT, COUNTS[:3]), kind="shape"),
    bad("token_coverage", "counts", lambda: token_coverage(CT, list(COUNTS)), kind="list"),
    bad("token_coverage", "counts", lambda: token_coverage(CT, np.zeros_like(COUNTS)), kind="zero"),
    bad("token_coverage", "counts", lambda: token_coverage(CT, COUNTS[None]), kind="ndim"),
    bad("embedding_share", "model", lambda: embedding_share(None), kind="none"),
    bad("embedding_share", "model", lambda: embedding_share(torch.zeros(3)), kind="tensor"),
    bad("embedding_share", "model", lambda: embedding_share(torch.nn.Linear(2, 2)), kind="module"),
    bad("embedding_share", "model", lambda: embedding_share("gpt2"), kind="name"),
    bad("embedding_share", "model", lambda: embedding_share(3), kind="int"),
    # ---------------------------------------------------------------------------------- inheritance
    bad(
        "inherit",
        "parent",
        lambda: inherit(GPT, num_layers=1, hidden_size=4, num_heads=1, intermediate_size=4),
        GPT,
        kind="architecture",
    ),
    bad("inherit", "hidden_size", lambda: small(hidden_size=64), P, kind="wider"),
    bad("inherit", "num_heads", lambda: small(num_heads=3, num_kv_heads=2), P, kind="divide"),
    bad("inherit", "num_heads", lambda: small(num_heads=3), P, kind="groups"),
    bad("inherit", "num_layers", lambda: small(num_layers=3), P, kind="deeper"),
    bad("inherit", "intermediate_size", lambda: small(intermediate_size=96), P, kind="wider"),
    bad("inherit", "layers", lambda: small(layers="bottom"), P, kind="name"),
    bad("inherit", "layers", lambda: small(layers=[0, 1]), P, kind="count"),
    bad("inherit", "criterion", lambda: small(criterion="magic"), P, kind="name"),
    bad("inherit", "batches", lambda: small(criterion="taylor"), P, kind="missing"),
    bad("inherit", "vocab", lambda: small(vocab=torch.tensor([1, 1, 2])), P, kind="duplicate"),
    bad("inherit", "num_kv_heads", lambda: small(num_kv_heads=5), P, kind="range"),
    bad("inherit", "rescale_norms", lambda: small(rescale_norms="yes"), P, kind="type"),
    bad("inherit", "scores", lambda: small(scores="l2"), P, kind="type"),
    bad("select_layers", "num_layers", lambda: select_layers(4, 5), kind="deeper"),
    bad("select_layers", "num_layers", lambda: select_layers(4, 0), kind="zero"),
    bad("select_layers", "strategy", lambda: select_layers(4, 2, "edges"), kind="name"),
    bad("select_layers", "num_parent_layers", lambda: select_layers(0, 1), kind="zero"),
    bad("select_layers", "seed", lambda: select_layers(4, 2, "random", seed=-1), kind="range"),
    bad("width_scores", "model", lambda: width_scores(GPT), GPT, kind="architecture"),
    bad("width_scores", "criterion", lambda: width_scores(P, "l3"), P, kind="name"),
    bad("width_scores", "batches", lambda: width_scores(P, "taylor"), P, kind="missing"),
    bad("width_scores", "batches", lambda: width_scores(P, "taylor", batches=X.float()), P, kind="dtype"),
    bad("width_scores", "batches", lambda: width_scores(P, "taylor", batches=X + 100), P, kind="vocab"),
    bad("width_scores", "targets", lambda: width_scores(P, "mask", batches=X), P, kind="missing"),
    bad("width_scores", "batch_size", lambda: width_scores(P, "l2", batch_size=0), P, kind="range"),
    bad("hard_topk_mask", "k", lambda: hard_topk_mask(torch.randn(5), 0), kind="zero"),
    bad("hard_topk_mask", "k", lambda: hard_topk_mask(torch.randn(5), 6), kind="range"),
    bad("hard_topk_mask", "k", lambda: hard_topk_mask(torch.randn(5), 2.5), kind="float"),
    bad("hard_topk_mask", "scores", lambda: hard_topk_mask([0.1, 0.2], 1), kind="list"),
    bad("hard_topk_mask", "scores", lambda: hard_topk_mask(torch.tensor([NAN, 1.0]), 1), kind="nan"),
    bad("hard_topk_mask", "scores", lambda: hard_topk_mask(torch.randn(1, 1, 1, 3), 1), kind="ndim"),
    bad("learn_masks", "hidden_size", lambda: masks(learn_masks, hidden_size=64), P, kind="wider"),
    bad("learn_masks", "steps", lambda: masks(learn_masks, steps=-1), P, kind="range"),
    bad("learn_masks", "lr", lambda: masks(learn_masks, lr=0.0), P, kind="range"),
    bad("learn_masks", "batches", lambda: masks(learn_masks, batches=None), P, kind="none"),
    bad(
        "learn_masks",
        "model",
        lambda: learn_masks(GPT, X, hidden_size=4, num_heads=1, intermediate_size=4),
        GPT,
        kind="architecture",
    ),
    bad("sheared_masks", "hidden_size", lambda: masks(sheared_masks, hidden_size=64), P, kind="wider"),
    bad("sheared_masks", "steps", lambda: masks(sheared_masks, steps=-1), P, kind="range"),
    bad("sheared_masks", "lr", lambda: masks(sheared_masks, lr=NAN), P, kind="nan"),
    bad("sheared_masks", "batches", lambda: masks(sheared_masks, batches=X + 100), P, kind="vocab"),
    bad(
        "sheared_masks",
        "model",
        lambda: sheared_masks(GPT, X, hidden_size=4, num_heads=1, intermediate_size=4),
        GPT,
        kind="architecture",
    ),
    bad("random_init_like", "model", lambda: random_init_like(GPT), GPT, kind="architecture"),
    bad("random_init_like", "model", lambda: random_init_like(None), kind="none"),
    bad("random_init_like", "model", lambda: random_init_like(X), X, kind="tensor"),
    bad("random_init_like", "seed", lambda: random_init_like(P, seed=-1), P, kind="range"),
    bad("random_init_like", "seed", lambda: random_init_like(P, seed="a"), P, kind="type"),
    bad("width_for_params", "target_params", lambda: width_for_params(0, 100, 2), kind="zero"),
    bad("width_for_params", "target_params", lambda: width_for_params(50, 100, 2), kind="too-small"),
    bad("width_for_params", "vocab_size", lambda: width_for_params(10_000, 0, 2), kind="zero"),
    bad("width_for_params", "num_layers", lambda: width_for_params(10_000, 100, 0), kind="zero"),
    bad("width_for_params", "ffn_ratio", lambda: width_for_params(10_000, 100, 2, ffn_ratio=-1.0), kind="range"),
    bad("count_parameters", "model", lambda: count_parameters(None), kind="none"),
    bad("count_parameters", "model", lambda: count_parameters(3), kind="int"),
    bad("count_parameters", "model", lambda: count_parameters("gpt2"), kind="name"),
    bad("count_parameters", "model", lambda: count_parameters(X), X, kind="tensor"),
    bad("count_parameters", "model", lambda: count_parameters([P]), P, kind="list"),
    # ------------------------------------------------------------------------------------- training
    bad("recipe", "steps", lambda: recipe(-1), kind="range"),
    bad("recipe", "steps", lambda: recipe(1.5), kind="float"),
    bad("recipe", "lr", lambda: recipe(10, lr=0.0), kind="range"),
    bad("recipe", "lr", lambda: recipe(10, lr=NAN), kind="nan"),
    bad("recipe", "batch_size", lambda: recipe(10, batch_size=0), kind="range"),
    bad("train_on_batches", "batches", lambda: train_on_batches(P, X), P, kind="ndim"),
    bad("train_on_batches", "batches", lambda: train_on_batches(P, B.float()), P, kind="dtype"),
    bad("train_on_batches", "batches", lambda: train_on_batches(P, B + 100), P, kind="vocab"),
    bad("train_on_batches", "batches", lambda: train_on_batches(P, B[:, :, :1]), P, kind="short"),
    bad("train_on_batches", "config", lambda: train_on_batches(P, B, {"steps": 1}), P, kind="type"),
    bad("train_on_batches", "model", lambda: train_on_batches(None, B), B, kind="none"),
    bad("batch_losses", "batches", lambda: batch_losses(P, X), P, kind="ndim"),
    bad("batch_losses", "batches", lambda: batch_losses(P, B.float()), P, kind="dtype"),
    bad("batch_losses", "batches", lambda: batch_losses(P, B - 100), P, kind="negative"),
    bad("batch_losses", "batches", lambda: batch_losses(P, B[:0]), P, kind="empty"),
    bad("batch_losses", "model", lambda: batch_losses(None, B), B, kind="none"),
    bad("evaluate", "blocks", lambda: evaluate(P, B), P, kind="ndim"),
    bad("evaluate", "blocks", lambda: evaluate(P, X.float()), P, kind="dtype"),
    bad("evaluate", "blocks", lambda: evaluate(P, X + 100), P, kind="vocab"),
    bad("evaluate", "blocks", lambda: evaluate(P, X[:, :1]), P, kind="short"),
    bad("evaluate", "batch_size", lambda: evaluate(P, X, batch_size=0), P, kind="range"),
    bad("resample_batches", "rate", lambda: resample_batches(L, 0.0), kind="zero"),
    bad("resample_batches", "rate", lambda: resample_batches(L, 1.5), kind="range"),
    bad("resample_batches", "mode", lambda: resample_batches(L, 0.5, mode="hardest"), kind="name"),
    bad("resample_batches", "losses", lambda: resample_batches(L[None], 0.5), kind="ndim"),
    bad("resample_batches", "losses", lambda: resample_batches(torch.tensor([1.0, NAN]), 0.5), kind="nan"),
    bad("resample_batches", "seed", lambda: resample_batches(L, 0.5, seed=-1), kind="range"),
    bad("sampling_probabilities", "losses", lambda: sampling_probabilities(L[None]), kind="ndim"),
    bad("sampling_probabilities", "losses", lambda: sampling_probabilities(torch.tensor([NAN])), kind="nan"),
    bad("sampling_probabilities", "losses", lambda: sampling_probabilities([1.0, 2.0]), kind="list"),
    bad("sampling_probabilities", "losses", lambda: sampling_probabilities(torch.zeros(0)), kind="empty"),
    bad("sampling_probabilities", "losses", lambda: sampling_probabilities(torch.tensor([float("inf")])), kind="inf"),
    bad("greedy_decode_speed", "prompt", lambda: greedy_decode_speed(P, X[0]), P, kind="ndim"),
    bad("greedy_decode_speed", "prompt", lambda: greedy_decode_speed(P, X.float()), P, kind="dtype"),
    bad("greedy_decode_speed", "prompt", lambda: greedy_decode_speed(P, X + 100), P, kind="vocab"),
    bad("greedy_decode_speed", "new_tokens", lambda: greedy_decode_speed(P, X, new_tokens=0), P, kind="range"),
    bad("greedy_decode_speed", "prompt", lambda: greedy_decode_speed(P, X[:, :0]), P, kind="empty"),
]

# issue 47: raw errors, silent acceptances and a model changed by a failing call
PT = LlamaForCausalLM(P.config).train()  # a model in train mode: a refusal must leave its mode and weights
G2 = tiny_gpt2(17, n_positions=16, n_embd=8, n_layer=1, n_head=2).train()  # 16 positions at most
LONG = torch.randint(17, (2, 2, 40), generator=torch.Generator().manual_seed(1))
FULL = dict(num_layers=2, hidden_size=32, num_heads=4, intermediate_size=48)


def scores(**kw):
    base = dict(hidden=torch.ones(32), heads=torch.ones(1, 4), kv=torch.ones(1, 2), neurons=torch.ones(1, 48))
    return tl.WidthScores(**{**base, **kw})


CASES += [
    bad("token_frequencies", "texts", lambda: token_frequencies(TOK, {"the": 1}), TOK, kind="dict"),
    bad("compact_tokenizer", "corpus", lambda: compact_tokenizer(TOK, COUNTS * np.nan, 10), TOK, kind="nan"),
    bad("compact_tokenizer", "corpus", lambda: compact_tokenizer(TOK, COUNTS + 0.5, 10), TOK, kind="fraction"),
    bad(
        "compact_tokenizer",
        "corpus",
        lambda: compact_tokenizer(TOK, np.full(COUNTS.shape, np.inf), 10),
        TOK,
        kind="inf",
    ),
    bad("compact_tokenizer", "corpus", lambda: compact_tokenizer(TOK, COUNTS.astype(complex), 10), TOK, kind="complex"),
    bad("token_coverage", "counts", lambda: token_coverage(CT, COUNTS * np.nan), CT, kind="nan"),
    bad("token_coverage", "counts", lambda: token_coverage(CT, COUNTS.astype(str)), CT, kind="str"),
    bad("token_coverage", "counts", lambda: token_coverage(CT, COUNTS > 0), CT, kind="bool"),
    bad("token_coverage", "counts", lambda: token_coverage(CT, np.full(COUNTS.shape, np.inf)), CT, kind="inf"),
    bad("inherit", "hidden_size", lambda: small(hidden_size=15), P, kind="heads-divide"),
    bad("inherit", "scores", lambda: small(scores=scores(hidden=torch.ones(3))), P, kind="shape"),
    bad("inherit", "scores", lambda: small(scores=scores(neurons=torch.full((1, 48), NAN))), P, kind="nan"),
    bad("inherit", "criterion", lambda: inherit(P, **FULL, criterion="magic"), P, kind="name-at-full-size"),
    bad("inherit", "batches", lambda: inherit(P, **FULL, batches="x"), P, kind="type-at-full-size"),
    bad("inherit", "mask_steps", lambda: small(criterion="mask", batches=X, mask_steps=-1), P, kind="range"),
    bad("width_scores", "targets", lambda: width_scores(P, "mask", batches=X, targets=(1, 2)), P, kind="length"),
    bad("sheared_masks", "batches", lambda: masks(sheared_masks, batches=X[:0]), P, kind="empty"),
    bad("sheared_masks", "batches", lambda: masks(sheared_masks, batches=X > 3), P, kind="bool"),
    bad("sheared_masks", "lr", lambda: masks(sheared_masks, lr=1e30, steps=3), P, kind="diverges"),
    bad("width_for_params", "target_params", lambda: width_for_params(10**400, 100, 2), kind="overflow"),
    bad("train_on_batches", "config", lambda: train_on_batches(PT, B, recipe(3, lr=1e30)), PT, B, kind="diverges"),
    bad("train_on_batches", "batches", lambda: train_on_batches(G2, LONG), G2, kind="too-long"),
    bad("batch_losses", "batches", lambda: batch_losses(G2, LONG), G2, kind="too-long"),
    bad("evaluate", "blocks", lambda: evaluate(G2, LONG[0]), G2, kind="too-long"),
    bad("greedy_decode_speed", "prompt", lambda: greedy_decode_speed(G2, LONG[0, :1, :15], 4), G2, kind="too-long"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    exempt = {
        "CompactTokenizer": "plain record of a pruned tokenizer and its id maps",
        "WidthScores": "plain record of unit scores",
        "RoundResult": "plain record of a training round",
    }
    assert coverage_gaps(tl, CASES, exempt=exempt) == {}


def test_measurements_leave_every_module_mode_as_it_was():
    # greedy_decode_speed put the model in eval mode for good; batch_losses and evaluate restored the top flag only
    mixed = LlamaForCausalLM(P.config).train()
    mixed.model.layers[0].eval()
    want = [m.training for m in mixed.modules()]
    greedy_decode_speed(mixed, X[:1, :4], 2)
    batch_losses(mixed, B)
    evaluate(mixed, X)
    assert [m.training for m in mixed.modules()] == want
