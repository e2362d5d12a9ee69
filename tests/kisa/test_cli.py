"""``icml24 kisa annotate`` at its smallest size: a fresh run directory per run, with its files."""

import json

from icml24.cli import main


def _snapshot(run):
    return {p.name: p.read_bytes() for p in run.iterdir()}


def test_annotate_writes_a_fresh_run_directory_each_time(tmp_path, capsys):
    args = ["kisa", "annotate", "--demos", "1", "--train", "2", "--steps", "1", "--out", str(tmp_path)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    (run,) = tmp_path.iterdir()
    assert run.name.endswith("Z-kisa-annotate")
    first = printed.splitlines()
    assert first[0].startswith("kisa annotate: train KISA on 2 tabletop demonstrations (1 step,")
    assert first[1] == f"run directory: {run}"
    assert "predicted:" in printed and "true:" in printed
    assert {"config.json", "env.json", "results.json", "report.md", "demo-0.png"} <= {p.name for p in run.iterdir()}
    assert not any(p.name.endswith(".tmp") for p in run.iterdir())
    res = json.loads((run / "results.json").read_text())
    assert len(res["demos"]) == 1 and 0.0 <= res["mean_f1"] <= 1.0 and res["demos"][0]["true"]
    assert (run / "report.md").read_text().startswith("demo 0 (")
    assert json.loads((run / "config.json").read_text())["steps"] == 1
    before = _snapshot(run)
    assert main(args) == 0
    capsys.readouterr()
    assert len(list(tmp_path.iterdir())) == 2 and _snapshot(run) == before
