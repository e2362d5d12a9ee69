import json
import subprocess
import sys

from icml24.cli import main


def test_seed_gnn_edit_verb(tmp_path, capsys):
    rc = main(
        [
            "seed-gnn",
            "edit",
            "--data",
            "csbm",
            "--model",
            "gcn",
            "--editor",
            "egnn",
            "--edits",
            "4",
            "--out",
            str(tmp_path),
            "--save-state",
            str(tmp_path / "state.pt"),
        ]
    )
    assert rc == 0
    out = capsys.readouterr().out
    assert "edit  node label steps" in out and "DD@1" in out and "mean SR" in out
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert (run / "drawdown-success.png").is_file() and (tmp_path / "state.pt").is_file()
    lines = (run / "edits.jsonl").read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["index"] == 0


def test_seed_gnn_bad_input(capsys):
    assert main(["seed-gnn", "edit", "--edits", "0"]) == 2
    assert main(["seed-gnn", "edit", "--editor", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert all(line.startswith("error: ") for line in err) and len(err) == 2
    assert main(["seed-gnn"]) == 2  # a verb is missing: usage, status 2
    cap = capsys.readouterr()
    assert "edit" in cap.out + cap.err


def test_help_does_not_import_torch():
    code = (
        "import sys\nfrom icml24.cli import main\ntry:\n    main(['seed-gnn', 'edit', '--help'])\n"
        "except SystemExit:\n    pass\nprint('torch' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "--editor" in run.stdout and run.stdout.split()[-1] == "False"
