import json

import pytest

from icml24.cli import main

FILES = {"config.json", "env.json", "results.json", "report.md", "accuracy-vs-labels.png"}


def _runs(out):
    return sorted(p for p in out.iterdir() if p.is_dir())


def test_verb_writes_a_fresh_run_directory_each_time(tmp_path, capsys):
    args = ["graph-transformer", "--data", "pattern", "--labels", "16", "--steps", "20", "--peers", "gcn"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("graph-transformer: test accuracy of GT+PE, GT without PE, PyG GCN on pattern at 16 ")
    assert "GT+PE" in out and "paper appendix" in out
    (first,) = _runs(tmp_path)
    assert f"run directory: {first}" in out and FILES <= {p.name for p in first.iterdir()}
    res = json.loads((first / "results.json").read_text())
    assert set(res["test_accuracy"]) == {"pe", "nope", "gcn"} and 0 <= res["test_accuracy"]["pe"]["16"] <= 1
    assert res["label_counts"] == "labelled nodes"
    assert "GT without PE" in (first / "report.md").read_text()
    before = {p.name: p.read_bytes() for p in first.iterdir()}
    assert main([*args, "--out", str(tmp_path)]) == 0
    runs = _runs(tmp_path)
    assert len(runs) == 2 and {p.name: p.read_bytes() for p in first.iterdir()} == before


@pytest.mark.parametrize(
    "bad",
    [["--labels", "20,x"], ["--labels", "0"], ["--labels", ","], ["--steps", "0"], ["--data", "pubmed"]],
)
def test_verb_refuses_bad_input(bad, tmp_path):
    assert main(["graph-transformer", "--data", "pattern", *bad, "--out", str(tmp_path)]) == 2
    assert not tmp_path.exists() or not any(tmp_path.iterdir())  # refused before a run directory is made


def test_plot_option_is_gone(tmp_path):
    assert main(["graph-transformer", "--plot", str(tmp_path / "x.png")]) == 2
