"""benchmarks/group_dro.py at a tiny size: tuned and fixed-step modes, imbalanced groups, the files it writes."""

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "group_dro.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_gdro", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_benchmark_fixed_steps_on_imbalanced_groups(tmp_path, capsys):
    args = [
        "--ms",
        "2,4",
        "--n",
        "10-20",
        "--d",
        "3",
        "--radius",
        "1",
        "--cap",
        "60",
        "--targets",
        "1e-1",
        "--methods",
        "aleg,one_level_vr",
        "--gamma",
        "0.99",
        "--out",
        str(tmp_path),
    ]
    assert _bench().main(args) == 0
    out = capsys.readouterr().out
    assert "one-level VR / ALEG vs m" in out and "entropy's local norm" in out
    (run,) = tmp_path.iterdir()
    res = json.loads((run / "results.json").read_text())
    assert {r["gamma"] for r in res["rows"]} == {0.99}
    assert {r["method"] for r in res["rows"]} == {"aleg", "one_level_vr"}
    sizes = {r["m"]: r["N"] for r in res["rows"]}
    assert 20 <= sizes[2] <= 40 and 40 <= sizes[4] <= 80  # group sizes drawn in 10..20
    assert "moments_slope_local" in res and "moments_slope_inf" in res
    assert (run / "group_dro-bench.png").is_file()


def test_benchmark_refuses_a_run_without_aleg(tmp_path, capsys):
    assert _bench().main(["--methods", "smd", "--out", str(tmp_path)]) == 2
    assert "must include aleg" in capsys.readouterr().err
    assert _bench().main(["--n", "ten", "--out", str(tmp_path)]) == 2
    assert "--n must be a number of samples per group or LOW-HIGH" in capsys.readouterr().err
    assert _bench().main(["--n", "5-2", "--ms", "2", "--out", str(tmp_path)]) == 2
    assert "n range must satisfy 1 <= low <= high" in capsys.readouterr().err
