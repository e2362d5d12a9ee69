import importlib.util
import json
from pathlib import Path

from icml24.cli import main

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "ensemble_equivariance.py"


def test_benchmark_runs_at_tiny_size(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_ee", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    args = ["--members", "2", "--width", "8", "--steps", "2", "--n", "10", "--repeats", "1", "--out", str(tmp_path)]
    assert mod.main(args) == 0
    assert "threads: 1" in capsys.readouterr().out
    (run,) = tmp_path.iterdir()
    (row,) = json.loads((run / "results.json").read_text())["rows"]
    assert row["max_abs_diff"] < 1e-4 and row["train_ratio"] > 0 and row["infer_ratio"] > 0


def test_verb_prints_osp_and_saves_plot(tmp_path, capsys):
    plot = tmp_path / "osp.png"
    args = ["ensemble-equivariance", "--data", "digits", "--members", "4", "--width", "8", "--steps", "5"]
    assert main(args + ["--n-train", "20", "--n-test", "20", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "OSP test" in out and "members" in out and plot.is_file()
    args[1:1] = ["--group", "d4"]
    assert main(args + ["--n-train", "10", "--n-test", "10", "--plot", str(plot)]) == 0
    assert "D4" in capsys.readouterr().out


def test_verb_refuses_bad_input(capsys):
    assert main(["ensemble-equivariance", "--members", "0", "--plot", "/tmp/x.png"]) == 2
    assert capsys.readouterr().err.startswith("error: --members")
