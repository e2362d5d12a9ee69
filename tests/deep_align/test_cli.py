"""``icml24 deep-align cnn`` at its smallest size: a fresh run directory per run, with its files."""

import json

from icml24.cli import main
from tests.conftest import needs_fashion


def _snapshot(run):
    return {p.name: p.read_bytes() for p in run.iterdir()}


@needs_fashion
def test_cnn_writes_a_fresh_run_directory_each_time(tmp_path, capsys):
    args = ["deep-align", "cnn", "--scale", "smoke", "--nets", "6", "--test", "2", "--zoo-steps", "3"]
    args += ["--train-steps", "2", "--out", str(tmp_path)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    (run,) = tmp_path.iterdir()
    assert run.name.endswith("Z-deep-align-cnn")
    lines = printed.splitlines()
    assert lines[0].startswith("deep-align cnn (scale smoke): train 6 CNNs") and "align 1 held-out pairs" in lines[0]
    assert lines[1] == f"run directory: {run}"
    assert "Deep-Align + WM" in printed and "note: scale smoke only shows the verb runs" in printed
    names = {p.name for p in run.iterdir()}
    assert {"config.json", "env.json", "results.json", "report.md", "barriers.png"} <= names
    assert not any(n.endswith(".tmp") for n in names)
    res = json.loads((run / "results.json").read_text())
    assert res["scale"] == "smoke" and res["metrics"]["pairs"] == 1 and res["overrides"]["n_nets"] == 6
    report = (run / "report.md").read_text()
    assert report.startswith("CNN zoo: 6 CNNs") and "note: scale smoke" in report
    before = _snapshot(run)
    assert main(args) == 0
    capsys.readouterr()
    assert len(list(tmp_path.iterdir())) == 2 and _snapshot(run) == before
