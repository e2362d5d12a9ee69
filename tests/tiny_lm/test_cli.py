"""``icml24 tiny-lm derive`` as a user meets it: a fresh run directory with the model in ``<run>/model/``
(a tiny BPE tokenizer and Llama stand in for SmolLM2, so the test takes seconds)."""

import json

from icml24.cli import main

from .test_core import TEXT, bpe_tokenizer, tiny_parent


def test_derive_writes_a_fresh_run_directory_each_time(tmp_path, monkeypatch, capsys):
    from transformers import AutoTokenizer, LlamaForCausalLM

    import icml24.tiny_lm.corpus as corpus

    tok = bpe_tokenizer(400)
    monkeypatch.setattr(corpus, "parent_tokenizer", lambda: tok)
    monkeypatch.setattr(corpus, "parent_model", lambda: tiny_parent(vocab=len(tok)))
    text = tmp_path / "corpus.txt"
    text.write_text(TEXT * 3, encoding="utf-8")
    args = ["tiny-lm", "derive", "--layers", "2", "--hidden", "64", "--heads", "4", "--ffn", "96", "--vocab", "300"]
    args += ["--corpus", str(text), "--out", str(tmp_path / "runs")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("tiny-lm derive: a 2-layer child of width 64") and "run directory:" in out
    (run,) = (tmp_path / "runs").iterdir()
    assert {"config.json", "env.json", "results.json", "report.md", "model"} <= {p.name for p in run.iterdir()}
    assert f"written to {run / 'model'}" in out
    results = json.loads((run / "results.json").read_text())
    assert results["layers"] == 2 and results["vocab"] == 300 and results["parameters"] > 0
    assert "tokens per byte" in (run / "report.md").read_text()
    model, ctok = LlamaForCausalLM.from_pretrained(run / "model"), AutoTokenizer.from_pretrained(run / "model")
    assert (model.config.num_hidden_layers, model.config.hidden_size, len(ctok)) == (2, 64, 300)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    assert main(args) == 0
    assert len(list((tmp_path / "runs").iterdir())) == 2
    assert before == {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
