import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "dynamic_attention.py"


def test_benchmark_runs_at_tiny_size(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_da", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert (
        mod.main(
            [
                "--ns",
                "32",
                "64",
                "--taus",
                "0.5",
                "--repeats",
                "1",
                "--out",
                str(tmp_path),
                "--mix-n",
                "128",
                "--memory-docs",
                "64",
                "--resize-ns",
                "64",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "threads: 1" in out
        and "fitted log-log slopes" in out
        and "crossover against eager" in out
        and "retrieval memory" in out
        and "append/delete" in out
    )
    (run,) = tmp_path.iterdir()
    res = json.loads((run / "results.json").read_text())
    assert len(res["rows"]) == 2 and "0.5" in res["slopes"]
    assert (run / "dynamic_attention-times.png").is_file()
