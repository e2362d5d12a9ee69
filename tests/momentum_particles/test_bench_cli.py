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


def test_verb_prints_the_run_and_saves_the_plot(tmp_path, capsys):
    plot = tmp_path / "toy.png"
    args = ["momentum-particles", "--model", "toy", "--method", "mpd", "--gamma", "0.1"]
    assert main(args + ["--steps", "300", "--particles", "5", "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "theta_hat" in out and "first at step" in out and plot.is_file()
    plot2 = tmp_path / "ppca.png"
    assert main(["momentum-particles", "--model", "ppca", "--method", "em", "--plot", str(plot2)]) == 0
    assert "gap" in capsys.readouterr().out and plot2.is_file()


def test_verb_refuses_bad_input(capsys):
    assert main(["momentum-particles", "--gamma", "-1", "--plot", "/tmp/x.png"]) == 2
    assert capsys.readouterr().err.startswith("error: --gamma")
    assert main(["momentum-particles", "--particles", "0", "--plot", "/tmp/x.png"]) == 2
    assert capsys.readouterr().err.startswith("error: --particles")
