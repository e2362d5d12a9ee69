import importlib.util
import json
from pathlib import Path

from icml24.cli import main

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "spurious_memorization.py"


def test_benchmark_runs_at_tiny_size(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_sm", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.main(["--ns", "20", "--d", "30", "--width", "5", "--repeats", "1", "--out", str(tmp_path)]) == 0
    assert "threads: 1" in capsys.readouterr().out
    (run,) = tmp_path.iterdir()
    (row,) = json.loads((run / "results.json").read_text())["rows"]
    assert row["max_abs_diff"] < 1e-8 and row["ratio"] > 0


def test_verb_prints_curves_and_saves_plot(tmp_path, capsys):
    plot = tmp_path / "c.png"
    args = ["spurious-memorization", "--data", "digits", "--features", "ntk", "--act", "phi4"]
    assert main(args + ["--ns", "10", "40", "--samples", "40", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "spurious" in out and "gamma" in out and plot.is_file()


def test_verb_refuses_bad_input(capsys):
    assert main(["spurious-memorization", "--ns", "1", "--plot", "/tmp/x.png"]) == 2
    assert capsys.readouterr().err.startswith("error: --ns")
