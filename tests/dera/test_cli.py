from icml24.cli import main


def test_generate_with_local_model_folders(tmp_path, capsys):
    from icml24.data.text import char_tokenizer
    from icml24.nn.lm import tiny_gpt2

    tok = char_tokenizer("abcdefgh ")
    for name, seed in (("aligned", 1), ("ref", 2)):
        m = tiny_gpt2(len(tok), tokenizer=tok, seed=seed)
        m.save_pretrained(tmp_path / name)
        tok.save_pretrained(tmp_path / name)
    rc = main(
        [
            "dera",
            "generate",
            "--lambda",
            "0.5",
            "--prompt",
            "abc",
            "--aligned",
            str(tmp_path / "aligned"),
            "--ref",
            str(tmp_path / "ref"),
            "--samples",
            "2",
            "--max-new-tokens",
            "5",
        ]
    )
    assert rc == 0 and capsys.readouterr().out.count("---") == 2


def test_generate_bad_input(capsys, tmp_path):
    assert main(["dera", "generate", "--lambda", "-1", "--prompt", "ab"]) == 2
    assert main(["dera", "generate", "--lambda", "1", "--prompt", "ab", "--aligned", str(tmp_path)]) == 2
    assert (
        main(
            ["dera", "generate", "--lambda", "1", "--prompt", "ab", "--aligned", str(tmp_path), "--ref", str(tmp_path)]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(e.startswith("error: ") for e in err)


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
    assert main([*args, "--num-beams", "4", "--samples", "2"]) == 0
    assert capsys.readouterr().out.count("---") == 2
    assert main([*args, "--num-beams", "2", "--samples", "3"]) == 2


def test_generate_refuses_tokenizers_that_differ(tmp_path, capsys):
    folders = _folders(tmp_path, second_text="abcdefgx ")  # same size, another vocabulary
    assert main(["dera", "generate", "--lambda", "1", "--prompt", "abc", *folders]) == 2
    assert "different tokenizer vocabulary" in capsys.readouterr().err
