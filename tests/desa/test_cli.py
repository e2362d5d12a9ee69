"""``icml24 desa run`` writes its table into a fresh run directory under --out."""

import json

from icml24.cli import main

TINY = ["desa", "run", "--clients", "2", "--rounds", "1", "--n-train", "20", "--dm-iterations", "0", "--ipc", "1"]


def test_run_writes_a_fresh_run_directory_each_time(tmp_path, capsys):
    out = tmp_path / "runs"
    assert main([*TINY, "--inprocess", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith("run DeSA on 2 digits clients (ring, 1 rounds") and lines[1].startswith("run directory:")
    (first,) = out.iterdir()
    assert {p.name for p in first.iterdir()} >= {"config.json", "env.json", "results.json", "report.md"}
    res = json.loads((first / "results.json").read_text())
    assert res["domains"] == ["mnist", "digits"] and res["finished"] == [0, 1]
    assert set(res["desa"]) >= {"intra", "inter", "worst_intra", "worst_inter"} and len(res["bytes_sent"]) == 2
    report = (first / "report.md").read_text()
    assert "DeSA intra" in report and report.count("\n") == 6 and "anchors once:" in report
    assert json.loads((first / "config.json").read_text())["rounds"] == 1
    before = {p.name: p.read_bytes() for p in first.iterdir()}
    assert main([*TINY, "--inprocess", "--seed", "1", "--out", str(out)]) == 0
    assert len(list(out.iterdir())) == 2 and {p.name: p.read_bytes() for p in first.iterdir()} == before


def test_bad_input_makes_no_run_directory(tmp_path, capsys):
    assert main([*TINY, "--topology", "star", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: ") and not list(tmp_path.iterdir())
