import json
import subprocess
import sys

from icml24.cli import main

FILES = {"config.json", "env.json", "results.json", "report.md", "drawdown-success.png", "edits.jsonl"}


def test_seed_gnn_edit_verb(tmp_path, capsys):
    args = ["seed-gnn", "edit", "--data", "csbm", "--model", "gcn", "--editor", "egnn", "--edits", "4"]
    rc = main([*args, "--out", str(tmp_path), "--save-state"])
    assert rc == 0
    out = capsys.readouterr().out
    assert out.startswith("seed-gnn edit: pretrain gcn on csbm (seed 0), then make 4 sequential edits with egnn\n")
    assert "edit  node label steps" in out and "DD@1" in out and "mean SR" in out
    (run,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert f"run directory: {run}" in out and f"editor state: {run / 'editor-state.pt'}" in out
    assert FILES | {"editor-state.pt"} <= {p.name for p in run.iterdir()}
    lines = (run / "edits.jsonl").read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["index"] == 0
    res = json.loads((run / "results.json").read_text())
    assert res["edits"] == 4 and 0 <= res["mean_sr"] <= 1 and res["data"] == "csbm"
    report = (run / "report.md").read_text()
    assert "edit  node label steps" in report and "mean SR" in report and len(report.splitlines()) == 9
    assert json.loads((run / "config.json").read_text())["editor"] == "egnn"
    # a second run: a second directory, the first unchanged
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    assert main([*args[:-1], "1", "--out", str(tmp_path)]) == 0
    runs = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(runs) == 2 and {p.name: p.read_bytes() for p in run.iterdir()} == before
    (second,) = [p for p in runs if p != run]
    assert FILES <= {p.name for p in second.iterdir()} and not (second / "editor-state.pt").exists()


def test_seed_gnn_bad_input(capsys, tmp_path):
    assert main(["seed-gnn", "edit", "--edits", "0", "--out", str(tmp_path)]) == 2
    assert main(["seed-gnn", "edit", "--editor", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert all(line.startswith("error: ") for line in err) and len(err) == 2
    assert not tmp_path.exists() or not any(tmp_path.iterdir())  # refused before a run directory is made
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
