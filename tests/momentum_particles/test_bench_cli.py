import importlib.util
import json
from pathlib import Path

from icml24.cli import main

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "momentum_particles.py"


def test_benchmark_runs_at_tiny_size(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_mp", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    argv = ["--replicates", "1", "--particles", "3", "--steps", "300", "--ppca-evals", "60", "--out", str(tmp_path)]
    assert mod.main(argv) == 0
    out = capsys.readouterr().out
    assert "threads: 1" in out and "sqrt(kappa)" in out
    (run,) = tmp_path.iterdir()
    rows = json.loads((run / "results.json").read_text())["rows"]
    methods = {(r["model"], r["method"]) for r in rows}
    assert {("toy", "pgd"), ("toy", "critical"), ("toy", "em"), ("ppca", "mpd"), ("ppca", "em")} <= methods
    crit = next(r for r in rows if r["method"] == "critical")
    assert crit["ratio_steps_vs_pgd"] > 1 and crit["ratio_time_vs_pgd"] > 0


def _files(run):
    return {p.name: p.read_bytes() for p in run.iterdir()}


def test_verb_prints_the_run_and_writes_a_run_directory(tmp_path, capsys):
    args = ["momentum-particles", "--model", "toy", "--method", "mpd", "--gamma", "0.1"]
    assert main(args + ["--steps", "300", "--particles", "5", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "theta_hat" in out and "first at step 73" in out and "settled at step" in out and "overshoot 24" in out
    (first,) = tmp_path.iterdir()
    assert f"run directory: {first}" in out
    files = _files(first)
    assert {"config.json", "env.json", "results.json", "report.md", "trace.png"} <= set(files)
    res = json.loads(files["results.json"])
    assert res["first_step"] == 73 and res["first_step"] < res["settle_step"] <= 300 and res["overshoot"] > 0.2
    assert res["peak_step"] > res["first_step"] and len(res["trace"]) == 11
    assert "settled at step" in files["report.md"].decode()
    assert main(["momentum-particles", "--model", "ppca", "--method", "em", "--out", str(tmp_path)]) == 0
    assert "gap" in capsys.readouterr().out
    runs = sorted(tmp_path.iterdir())
    assert len(runs) == 2 and first in runs and _files(first) == files
    second = next(r for r in runs if r != first)
    res = json.loads((second / "results.json").read_text())
    assert res["model"] == "ppca" and res["settle_evals"] >= res["first_evals"] and (second / "trace.png").is_file()


def test_settle_step_is_the_first_after_which_the_curve_stays_inside():
    from icml24.momentum_particles.cli import _crossings

    assert _crossings([False, True, False, True, True]) == (1, 3)
    assert _crossings([True, True]) == (0, 0)
    assert _crossings([False, True, False]) == (1, None)
    assert _crossings([False, False]) == (None, None)


def test_verb_refuses_bad_input(tmp_path, capsys):
    assert main(["momentum-particles", "--gamma", "-1", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: --gamma")
    assert main(["momentum-particles", "--particles", "0", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: --particles")
    assert not any(tmp_path.iterdir())
