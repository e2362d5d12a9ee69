"""Unit and property tests of icml24.tiny_lm on tiny models built in code (no download, no SmolLM2)."""

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from icml24.tiny_lm import (
    compact_tokenizer,
    embedding_share,
    hard_topk_mask,
    inherit,
    learn_masks,
    recipe,
    resample_batches,
    sampling_probabilities,
    select_layers,
    sheared_masks,
    token_frequencies,
    width_for_params,
    width_scores,
)
from icml24.tiny_lm.importance import unit_masks
from icml24.tiny_lm.slicing import plan_width, slice_llama

TEXT = (
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want "
    "of a wife. However little known the feelings or views of such a man may be on his first entering a "
    "neighbourhood, this truth is so well fixed in the minds of the surrounding families. First Citizen: Before "
    "we proceed any further, hear me speak. All: Speak, speak. You are all resolved rather to die than to famish?"
)


def bpe_tokenizer(vocab_size: int = 400) -> PreTrainedTokenizerFast:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>", "<|im_start|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tk.train_from_iterator([TEXT] * 3, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tk, eos_token="<|endoftext|>", bos_token="<|im_start|>")


def tiny_parent(vocab: int = 60, layers: int = 4, seed: int = 0) -> LlamaForCausalLM:
    cfg = LlamaConfig(
        num_hidden_layers=layers,
        hidden_size=64,
        intermediate_size=96,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        vocab_size=vocab,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        rms_norm_eps=1e-12,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(cfg).eval()
    with torch.no_grad():  # break the symmetric initialisation of the norms so that rescaling is exercised
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.3 * torch.randn_like(p))
    return model


# ---------------------------------------------------------------------------------------------- tokenizer
def test_compact_tokenizer_round_trips_and_keeps_covered_words():
    tok = bpe_tokenizer()
    counts = token_frequencies(tok, TEXT)
    ct = compact_tokenizer(tok, counts, 330)
    new = ct.tokenizer
    assert len(new) == ct.vocab_size == 330
    for text in (TEXT, "Zebras quizzically vex jumping 42 ducks! é ß"):  # unseen words: shorter pieces
        ids = new(text, add_special_tokens=False)["input_ids"]
        assert max(ids) < 330 and new.decode(ids) == text
    # specials survive with their new ids
    assert new.convert_tokens_to_ids("<|endoftext|>") == int(ct.old_to_new[tok.convert_tokens_to_ids("<|endoftext|>")])
    # a word whose parent pieces are all kept is tokenised exactly as by the parent
    for word in ("truth", " man", " speak"):
        old = tok(word, add_special_tokens=False)["input_ids"]
        if all(ct.old_to_new[i] >= 0 for i in old):
            assert new(word, add_special_tokens=False)["input_ids"] == ct.old_to_new[old].tolist()
    assert 0.5 < ct.coverage <= 1.0
    assert torch.equal(ct.old_to_new[ct.kept_ids], torch.arange(330))


def test_compact_tokenizer_keeps_the_most_frequent_pieces():
    tok = bpe_tokenizer()
    counts = token_frequencies(tok, TEXT)
    ct = compact_tokenizer(tok, counts, 300)
    top = np.argsort(-counts, kind="stable")[:20]
    assert all(ct.old_to_new[int(i)] >= 0 for i in top)
    assert ct.coverage == pytest.approx(counts[ct.kept_ids.numpy()].sum() / counts.sum())


def test_embedding_share_counts_tied_weights_once():
    m = tiny_parent()
    emb = 60 * 64
    total = sum(p.numel() for p in {id(p): p for p in m.parameters()}.values())
    assert embedding_share(m) == pytest.approx(emb / total)


# ------------------------------------------------------------------------------------------- inheritance
def test_full_keep_equals_parent_logits():
    p = tiny_parent()
    x = torch.randint(60, (2, 12), generator=torch.Generator().manual_seed(1))
    child = inherit(p, num_layers=4, hidden_size=64, num_heads=4, intermediate_size=96)
    assert type(child) is LlamaForCausalLM
    with torch.no_grad():
        assert torch.equal(child(x).logits, p(x).logits)


def test_vocab_rows_follow_the_id_map():
    p = tiny_parent()
    kept = torch.tensor([0, 3, 5, 7, 11, 20, 33, 59])
    x_old = kept[torch.randint(8, (2, 10), generator=torch.Generator().manual_seed(2))]
    x_new = torch.searchsorted(kept, x_old)
    child = inherit(p, num_layers=4, hidden_size=64, num_heads=4, intermediate_size=96, vocab=kept)
    with torch.no_grad():
        torch.testing.assert_close(child(x_new).logits, p(x_old).logits[..., kept], rtol=0, atol=1e-5)


def test_sliced_child_equals_the_masked_parent_with_rescaled_norms():
    # oracle: the parent with dropped channels, heads and neurons zeroed by hooks (no slicing involved)
    p = tiny_parent()
    x = torch.randint(60, (2, 12), generator=torch.Generator().manual_seed(3))
    sc = width_scores(p, "l2")
    plan = plan_width(sc, 40, 2, 2, 48)
    child = slice_llama(p, [0, 1, 2, 3], plan, rescale_norms=True)
    masks = {"hidden": torch.zeros(64), "heads": torch.zeros(4, 4), "neurons": torch.zeros(4, 96)}
    masks["hidden"][plan.hidden] = 1
    for i in range(4):
        masks["heads"][i, plan.q_heads[i]] = 1
        masks["neurons"][i, plan.neurons[i]] = 1
    with torch.no_grad(), unit_masks(p, masks):
        ref = p(x).logits
    with torch.no_grad():
        torch.testing.assert_close(child(x).logits, ref, rtol=1e-4, atol=1e-4)


def test_child_shape_and_gqa_groups():
    p = tiny_parent()
    child = inherit(p, num_layers=2, hidden_size=32, num_heads=2, intermediate_size=48, criterion="l1")
    c = child.config
    assert (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads) == (2, 32, 2, 2)
    assert child.model.layers[0].self_attn.q_proj.weight.shape == (2 * 16, 32)
    assert child(torch.zeros(1, 4, dtype=torch.long)).logits.shape == (1, 4, 60)


def test_l2_scores_match_a_float64_formula():
    p = tiny_parent()
    sc = width_scores(p, "l2")
    layer = p.model.layers[1].mlp
    w = [x.weight.detach().double() for x in (layer.gate_proj, layer.up_proj, layer.down_proj)]
    j = 7
    expected = math.sqrt(float((w[0][j] ** 2).sum() + (w[1][j] ** 2).sum() + (w[2][:, j] ** 2).sum()))
    assert float(sc.neurons[1, j]) == pytest.approx(expected, rel=1e-5)


def test_select_layers_strategies():
    fl = select_layers(30, 6)
    assert fl[0] == 0 and fl[-1] == 29 and len(fl) == 6 and fl == sorted(set(fl))
    assert select_layers(30, 6, "middle") == list(range(12, 18))
    assert select_layers(30, 30, "middle") == list(range(30))
    assert len(set(select_layers(30, 5, "random", seed=1))) == 5


def test_hard_topk_mask_keeps_exactly_k_with_gradients():
    s = torch.randn(3, 10, requires_grad=True)
    m = hard_topk_mask(s, 4)
    assert torch.equal(m.detach().sum(-1), torch.full((3,), 4.0))
    assert set(m.detach().unique().tolist()) == {0.0, 1.0}
    (m * torch.arange(10.0)).sum().backward()
    assert s.grad.abs().sum() > 0


def test_learned_and_sheared_masks_rank_every_unit_and_leave_the_model_alone():
    p = tiny_parent()
    before = {k: v.clone() for k, v in p.state_dict().items()}
    x = torch.randint(60, (8, 12), generator=torch.Generator().manual_seed(4))
    for fn in (learn_masks, sheared_masks):
        sc = fn(p, x, hidden_size=32, num_heads=2, intermediate_size=48, steps=3, batch_size=4)
        assert sc.hidden.shape == (64,) and sc.heads.shape == (4, 4) and sc.neurons.shape == (4, 96)
        child = inherit(p, num_layers=4, hidden_size=32, num_heads=2, intermediate_size=48, scores=sc)
        assert child.config.hidden_size == 32
    assert all(torch.equal(before[k], v) for k, v in p.state_dict().items())
    assert all(q.requires_grad for q in p.parameters())


def test_width_for_params():
    d = width_for_params(1_000_000, 4096, 2)
    params = lambda d: 4096 * d + 2 * 16 * d * d + 5 * d  # noqa: E731
    assert params(d) <= 1_000_000 < params(d + 1)


# ------------------------------------------------------------------------------------------------ rounds
def test_resampling_is_without_replacement_with_the_stated_probabilities():
    losses = torch.tensor([0.0, math.log(2.0), math.log(3.0), 1000.0 - 1000.0])
    p = sampling_probabilities(losses)
    torch.testing.assert_close(p, torch.tensor([1, 2, 3, 1], dtype=torch.float64) / 7)
    assert torch.isfinite(sampling_probabilities(torch.tensor([1000.0, 999.0]))).all()  # stabilised
    idx = resample_batches(torch.randn(20), 0.5, seed=0)
    assert idx.numel() == 10 and idx.unique().numel() == 10
    g = torch.Generator().manual_seed(0)
    first = torch.stack([resample_batches(losses, 0.25, seed=g) for _ in range(4000)]).view(-1)
    freq = torch.bincount(first, minlength=4).double() / 4000
    torch.testing.assert_close(freq, p, atol=0.03, rtol=0)
    uni = torch.stack([resample_batches(losses, 0.25, mode="uniform", seed=g) for _ in range(4000)]).view(-1)
    torch.testing.assert_close(
        torch.bincount(uni, minlength=4).double() / 4000, torch.full((4,), 0.25, dtype=torch.float64), atol=0.03, rtol=0
    )
    assert resample_batches(losses, 1.0).sort().values.tolist() == [0, 1, 2, 3]


def test_recipe_is_the_official_optimiser():
    cfg = recipe(100, lr=2e-4)
    assert (cfg.betas, cfg.weight_decay, cfg.grad_clip, cfg.warmup, cfg.min_lr) == ((0.9, 0.95), 0.1, 1.0, 3, 2e-5)
    assert cfg.lr_at(99) == pytest.approx(2e-5, rel=0.01)


def test_ddp_two_processes_equal_one_process(tmp_path):
    script = Path(__file__).with_name("ddp_script.py")
    spec = importlib.util.spec_from_file_location("tiny_lm_ddp_script", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    one = mod.run()
    out = tmp_path / "ddp.json"
    subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(script), str(out)],
        check=True,
        capture_output=True,
        timeout=120,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    two = json.loads(out.read_text())
    assert one["world"] == 1 and two["world"] == 2
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-5)
    assert two["checksum"] == pytest.approx(one["checksum"], rel=1e-5)
    assert one["losses"][-1] < one["losses"][0]


# ------------------------------------------------------------------------------------------------- CLI
@pytest.mark.parametrize(
    "args, word",
    [
        (["--layers", "0", "--hidden", "64", "--vocab", "500"], "--layers"),
        (["--layers", "2", "--hidden", "64", "--vocab", "500", "--criterion", "magic"], "--criterion"),
        (["--layers", "2", "--hidden", "64", "--vocab", "500", "--parent", "gpt2"], "--parent"),
        (["--layers", "2", "--hidden", "64", "--vocab", "500", "--corpus", "/nonexistent.txt"], "--corpus"),
    ],
)
def test_cli_derive_refuses_bad_arguments_before_loading(args, word, tmp_path, capsys):
    from icml24.cli import main

    assert main(["tiny-lm", "derive", *args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert word in err and len(err.strip().splitlines()) == 1
