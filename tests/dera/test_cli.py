import json

from icml24.cli import main


def test_generate_with_local_model_folders(tmp_path, capsys):
    """Lambda 0 (reference) and 1 (aligned) are decoded beside the chosen 0.5; each run gets its own directory."""
    from icml24.data.text import char_tokenizer
    from icml24.nn.lm import tiny_gpt2

    tok = char_tokenizer("abcdefgh ")
    for name, seed in (("aligned", 1), ("ref", 2)):
        m = tiny_gpt2(len(tok), tokenizer=tok, seed=seed)
        m.save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
    out = tmp_path / "runs"
    argv = ["dera", "generate", "--lambda", "0.5", "--prompt", "abc", "--samples", "2", "--max-new-tokens", "5"]
    argv += ["--aligned", str(tmp_path / "aligned"), "--ref", str(tmp_path / "ref"), "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith("decode 2 sampling outputs") and text.splitlines()[1].startswith("run directory: ")
    assert text.count("---") == 6
    for label in ("== lambda=0 (reference) ==", "== lambda=1 (aligned) ==", "== lambda=0.5 (DeRa) =="):
        assert label in text
    (first,) = out.iterdir()
    assert {p.name for p in first.iterdir()} >= {"config.json", "env.json", "results.json", "report.md"}
    res = json.loads((first / "results.json").read_text())
    assert res["lambda"] == 0.5 and all(len(v) == 2 for v in res["generations"].values())
    assert len(res["generations"]) == 3 and "== lambda=1 (aligned) ==" in (first / "report.md").read_text()
    assert json.loads((first / "config.json").read_text())["lam"] == 0.5
    before = {p.name: p.read_bytes() for p in first.iterdir()}
    assert main([*argv[:3], "1", *argv[4:]]) == 0  # lambda 1: only the reference beside it
    assert capsys.readouterr().out.count("---") == 4
    assert len(list(out.iterdir())) == 2 and {p.name: p.read_bytes() for p in first.iterdir()} == before


def test_generate_with_the_trained_pair(tmp_path, monkeypatch, capsys):
    """The enumerable pair's table: one column per lambda with rewards (a tiny pair stands in for the trained one)."""
    import icml24.dera.cli as cli
    from icml24.data.text import EnumerableLanguage
    from icml24.nn.lm import tiny_gpt2

    lang = EnumerableLanguage(symbols="abcd", prompt_len=2, response_len=4, seed=0)
    pair = [tiny_gpt2(len(lang.tokenizer), tokenizer=lang.tokenizer, seed=s).eval() for s in (1, 2)]
    monkeypatch.setattr(cli, "default_pair", lambda seed: (*pair, lang))
    assert main(["dera", "generate", "--lambda", "2", "--prompt", "ab", "--samples", "3", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("DeRa lambda=2"))
    assert lines[head + 1].split() == ["lambda=0", "(reference)", "lambda=1", "(aligned)", "lambda=2", "(DeRa)"]
    assert sum("reward" in line for line in lines) == 4 and "mean reward" in lines[head + 5]
    (run,) = tmp_path.iterdir()
    res = json.loads((run / "results.json").read_text())
    assert set(res["mean_reward"]) == {"lambda=0 (reference)", "lambda=1 (aligned)", "lambda=2 (DeRa)"}


def test_generate_bad_input(capsys, tmp_path):
    out = ["--out", str(tmp_path / "runs")]
    assert main(["dera", "generate", "--lambda", "-1", "--prompt", "ab", *out]) == 2
    assert main(["dera", "generate", "--lambda", "1", "--prompt", "ab", "--aligned", str(tmp_path), *out]) == 2
    folders = ["--aligned", str(tmp_path), "--ref", str(tmp_path)]
    assert main(["dera", "generate", "--lambda", "1", "--prompt", "ab", *folders, *out]) == 2
    assert main(["dera", "generate", "--lambda", "1", "--prompt", "abc", *out]) == 2  # not in the language
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and all(e.startswith("error: ") for e in err)
    assert not (tmp_path / "runs").exists()  # refused before any run directory is made


def test_help_does_not_import_torch():
    import subprocess
    import sys

    code = (
        "import sys\nfrom icml24.cli import main\ntry:\n    main(['dera', 'generate', '--help'])\n"
        "except SystemExit:\n    pass\nprint('torch' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "--lambda" in run.stdout and run.stdout.split()[-1] == "False"


def _folders(tmp_path, second_text="abcdefgh "):
    from icml24.data.text import char_tokenizer
    from icml24.nn.lm import tiny_gpt2

    for name, seed, text in (("aligned", 1, "abcdefgh "), ("ref", 2, second_text)):
        tok = char_tokenizer(text)
        m = tiny_gpt2(len(tok), tokenizer=tok, seed=seed)
        m.save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
    return ["--aligned", str(tmp_path / "aligned"), "--ref", str(tmp_path / "ref")]


def test_generate_beam_search(tmp_path, capsys):
    folders = _folders(tmp_path)
    args = ["dera", "generate", "--lambda", "2", "--prompt", "abc", *folders, "--max-new-tokens", "4"]
    args += ["--out", str(tmp_path / "runs")]
    assert main([*args, "--num-beams", "4", "--samples", "2"]) == 0
    assert capsys.readouterr().out.count("---") == 6  # two beams at each of lambda 0, 1 and 2
    assert main([*args, "--num-beams", "2", "--samples", "3"]) == 2


def test_generate_refuses_tokenizers_that_differ(tmp_path, capsys):
    folders = _folders(tmp_path, second_text="abcdefgx ")  # same size, another vocabulary
    assert main(["dera", "generate", "--lambda", "1", "--prompt", "abc", *folders, "--out", str(tmp_path / "r")]) == 2
    assert "different tokenizer vocabulary" in capsys.readouterr().err
