import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "deep_align.py"


def test_benchmark_runs_at_tiny_size(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_deep_align", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    args = [
        "--nets",
        "8",
        "--val",
        "2",
        "--test",
        "3",
        "--zoo-steps",
        "10",
        "--train-steps",
        "2",
        "--sr-steps",
        "3",
        "--sr-pairs",
        "1",
        "--repeats",
        "1",
        "--scan-widths",
        "6",
        "--scan-pairs",
        "2",
        "--out",
        str(tmp_path),
    ]
    assert mod.main(args) == 0
    out = capsys.readouterr().out
    assert "threads: 1" in out and "ratios (pairs per second)" in out and "barrier at equal time" in out
    assert "Deep-Align as Sinkhorn's initialisation" in out
    (run,) = tmp_path.iterdir()
    res = json.loads((run / "results.json").read_text())
    assert res["pairs"] == 3 and {"da_batched", "da_single", "wm", "sr", "am", "da+sr"} <= set(res["ms_per_pair"])
    assert "da_batched_over_wm" in res["ratios"] and "sr_at_da_batched_time" in res["barrier_auc"]
    assert (run / "deep_align-time-vs-barrier.png").is_file()
    assert res["width_scan"][0]["width"] == 6 and "time per pair vs hidden width" in out
