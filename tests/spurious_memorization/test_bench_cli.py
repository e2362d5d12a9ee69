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


def _files(run):
    return {p.name: p.read_bytes() for p in run.iterdir()}


def test_verb_prints_curves_and_writes_a_run_directory(tmp_path, capsys):
    args = ["spurious-memorization", "--data", "digits", "--features", "ntk", "--act", "phi4"]
    assert main(args + ["--ns", "10", "40", "--samples", "40", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "spurious" in out and "gamma" in out
    (first,) = tmp_path.iterdir()
    assert f"run directory: {first}" in out
    files = _files(first)
    assert {"config.json", "env.json", "results.json", "report.md", "curves.png"} <= set(files)
    res = json.loads(files["results.json"])
    assert [q["n"] for q in res["points"]] == [10, 40] and [q["replicates"] for q in res["points"]] == [4, 1]
    assert "spurious" in files["report.md"].decode() and json.loads(files["config.json"])["ns"] == [10, 40]
    assert main(args + ["--ns", "20", "--samples", "20", "--out", str(tmp_path)]) == 0
    runs = sorted(tmp_path.iterdir())
    assert len(runs) == 2 and first in runs and _files(first) == files
    second = next(r for r in runs if r != first)
    assert [q["n"] for q in json.loads((second / "results.json").read_text())["points"]] == [20]
    assert (second / "curves.png").is_file()


def test_verb_refuses_bad_input(tmp_path, capsys):
    assert main(["spurious-memorization", "--ns", "1", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: --ns")
    assert not any(tmp_path.iterdir())
