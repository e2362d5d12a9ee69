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


def _files(run):
    return {p.name: p.read_bytes() for p in run.iterdir()}


def test_verb_prints_osp_and_writes_a_run_directory(tmp_path, capsys):
    args = ["ensemble-equivariance", "--data", "digits", "--members", "4", "--width", "8", "--steps", "5"]
    assert main(args + ["--n-train", "20", "--n-test", "20", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "OSP test" in out and "members" in out and out.count("orbit same prediction") == 1
    (first,) = tmp_path.iterdir()
    assert f"run directory: {first}" in out
    files = _files(first)
    assert {"config.json", "env.json", "results.json", "report.md", "osp.png"} <= set(files)
    res = json.loads(files["results.json"])
    assert res["sizes"] == [1, 2, 4] and len(res["osp_test"]) == 3 and res["order"] == 4
    assert "OSP test" in files["report.md"].decode()
    assert json.loads(files["config.json"])["members"] == 4
    args[1:1] = ["--group", "d4"]
    assert main(args + ["--n-train", "10", "--n-test", "10", "--out", str(tmp_path)]) == 0
    assert "D4" in capsys.readouterr().out
    runs = sorted(tmp_path.iterdir())
    assert len(runs) == 2 and first in runs and _files(first) == files
    second = next(r for r in runs if r != first)
    assert json.loads((second / "results.json").read_text())["order"] == 8 and (second / "osp.png").is_file()


def test_verb_refuses_bad_input(tmp_path, capsys):
    assert main(["ensemble-equivariance", "--members", "0", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: --members")
    assert not any(tmp_path.iterdir())
